"""Discrete distributions (torch's bernoulli.py, categorical.py, one_hot_categorical.py, binomial.py,
geometric.py, poisson.py, multinomial.py, negative_binomial.py), and ContinuousBernoulli, Bernoulli's continuous
counterpart on [0, 1] (continuous_bernoulli.py): given by `probs` or by `logits` (the other is computed on first
use), with torch's formulas, so log_prob, entropy and moments and their gradients are torch's numbers. Samples
come from retrograd's generator and carry no gradient (no rsample), as in torch; OneHotCategoricalStraightThrough
passes the gradient of `probs` straight through its sample, and ContinuousBernoulli's rsample inverts its cdf.
"""

from __future__ import annotations

import math
from numbers import Number

import retrograd

from .. import _dtype as D
from .._tensor import Tensor
from ..nn import functional as F
from . import constraints
from .continuous import Gamma
from .distribution import (
    Distribution,
    ExponentialFamily,
    _size,
    broadcast_all,
    clamp_probs,
    forwarded,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Bernoulli", "Binomial", "Categorical", "ContinuousBernoulli", "Geometric", "Multinomial",
           "NegativeBinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson"]


def _one_of_probs_or_logits(probs: object, logits: object) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class _BinaryParameter(Distribution):
    """A distribution of a success probability, given as `probs` or `logits` (log-odds)."""

    _params = ("probs", "logits")

    @property
    def _param(self) -> Tensor:
        """The parameter the distribution was made with."""
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    def _set_probs_or_logits(self, probs: Tensor | Number | None, logits: Tensor | Number | None) -> bool:
        """Store the parameter given; True when it was a Python number (the batch shape is then ())."""
        _one_of_probs_or_logits(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            return isinstance(probs, Number)
        (self.logits,) = broadcast_all(logits)
        return isinstance(logits, Number)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> retrograd.Size:
        return self._param.size()

    def _enumerate_counts(self, count: int, expand: bool) -> Tensor:
        """The values 0..count along a new leading dim, broadcastable against (or expanded to) the batch."""
        values = retrograd.arange(count + 1, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Bernoulli(_BinaryParameter, ExponentialFamily):
    """The Bernoulli distribution: 1 with probability `probs`, else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | Number | None = None, logits: Tensor | Number | None = None,
                 validate_args: bool | None = None) -> None:
        is_scalar = self._set_probs_or_logits(probs, logits)
        super().__init__(retrograd.Size() if is_scalar else self._param.size(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs)
        return retrograd.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():
            return retrograd.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return self._enumerate_counts(1, expand)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (retrograd.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return retrograd.log1p(retrograd.exp(x))


class Binomial(_BinaryParameter):
    """The number of successes in `total_count` independent Bernoulli(`probs`) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True
    _params = ("total_count", "probs", "logits")

    def __init__(self, total_count: Tensor | int = 1, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_of_probs_or_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
        self.total_count = self.total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with retrograd.no_grad():
            return retrograd.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = retrograd.lgamma(self.total_count + 1)
        log_factorial_k = retrograd.lgamma(value + 1)
        log_factorial_nmk = retrograd.lgamma(self.total_count - value + 1)
        # log(1 + exp(logits)) written so that it neither overflows nor loses digits
        clamped_by_zero = (self.logits.clamp(min=0) + self.logits - self.logits.clamp(max=0)) / 2
        normalize_term = (self.total_count * clamped_by_zero
                          + self.total_count * retrograd.log1p(retrograd.exp(-retrograd.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, method: str) -> int:
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{method}`.")
        return total_count

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(retrograd.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return self._enumerate_counts(self._homogeneous_count("enumerate_support"), expand)


class ContinuousBernoulli(_BinaryParameter, ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1]: density proportional to probs^x (1 - probs)^(1 - x). Near
    probs = 1/2 (inside `lims`) the normaliser and moments use Taylor expansions, as torch's do."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Tensor | Number | None = None, logits: Tensor | Number | None = None,
                 lims: tuple[float, float] = (0.499, 0.501), validate_args: bool | None = None) -> None:
        is_scalar = self._set_probs_or_logits(probs, logits)
        if probs is not None:
            if validate_args is not None and not self.arg_constraints["probs"].check(self.probs).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(retrograd.Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> ContinuousBernoulli:
        new = super().expand(batch_shape, _instance)
        new._lims = self._lims
        return new

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return retrograd.le(self.probs, self._lims[0]) | retrograd.gt(self.probs, self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs away from 1/2 (where the closed forms divide by zero); the Taylor branch is used there."""
        return retrograd.where(self._outside_unstable_region(), self.probs,
                               self._lims[0] * retrograd.ones_like(self.probs))

    def _cont_bern_log_norm(self) -> Tensor:
        """The log of the normalising constant."""
        cut_probs = self._cut_probs()
        below_half = retrograd.where(retrograd.le(cut_probs, 0.5), cut_probs, retrograd.zeros_like(cut_probs))
        above_half = retrograd.where(retrograd.ge(cut_probs, 0.5), cut_probs, retrograd.ones_like(cut_probs))
        log_norm = (retrograd.log(retrograd.abs(retrograd.log1p(-cut_probs) - retrograd.log(cut_probs)))
                    - retrograd.where(retrograd.le(cut_probs, 0.5), retrograd.log1p(-2.0 * below_half),
                                      retrograd.log(2.0 * above_half - 1.0)))
        x = retrograd.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return retrograd.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (retrograd.log1p(-cut_probs) - retrograd.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * retrograd.pow(x, 2)) * x
        return retrograd.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return retrograd.sqrt(self.variance)

    @property
    def variance(self) -> Tensor:
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / retrograd.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / retrograd.pow(retrograd.log1p(-cut_probs) - retrograd.log(cut_probs), 2))
        x = retrograd.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return retrograd.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        u = retrograd.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        with retrograd.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        return self.icdf(retrograd.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((retrograd.pow(cut_probs, value) * retrograd.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = retrograd.where(self._outside_unstable_region(), cdfs, value)
        return retrograd.where(retrograd.le(value, 0.0), retrograd.zeros_like(value),
                               retrograd.where(retrograd.ge(value, 1.0), retrograd.ones_like(value), unbounded_cdfs))

    def icdf(self, value: Tensor) -> Tensor:
        cut_probs = self._cut_probs()
        inverted = ((retrograd.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - retrograd.log1p(-cut_probs))
                    / (retrograd.log(cut_probs) - retrograd.log1p(-cut_probs)))
        return retrograd.where(self._outside_unstable_region(), inverted, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = retrograd.log1p(-self.probs), retrograd.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        outside = retrograd.le(x, self._lims[0] - 0.5) | retrograd.gt(x, self._lims[1] - 0.5)
        cut_nat_params = retrograd.where(outside, x, (self._lims[0] - 0.5) * retrograd.ones_like(x))
        log_norm = (retrograd.log(retrograd.abs(retrograd.special.expm1(cut_nat_params)))
                    - retrograd.log(retrograd.abs(cut_nat_params)))
        taylor = 0.5 * x + retrograd.pow(x, 2) / 24.0 - retrograd.pow(x, 4) / 2880.0
        return retrograd.where(outside, log_norm, taylor)


class NegativeBinomial(_BinaryParameter):
    """The number of successes before `total_count` failures in Bernoulli(`probs`) trials."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer
    _params = ("total_count", "probs", "logits")

    def __init__(self, total_count: Tensor | float, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_of_probs_or_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
        self.total_count = self.total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * retrograd.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / retrograd.sigmoid(-self.logits)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():  # a Poisson draw at a Gamma-distributed rate
            rate = Gamma(concentration=self.total_count, rate=retrograd.exp(-self.logits)).sample(sample_shape)
            return retrograd.poisson(rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-retrograd.lgamma(self.total_count + value) + retrograd.lgamma(1.0 + value)
                             + retrograd.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization


class Geometric(_BinaryParameter):
    """The number of failures before the first success in Bernoulli(`probs`) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | Number | None = None, logits: Tensor | Number | None = None,
                 validate_args: bool | None = None) -> None:
        is_scalar = self._set_probs_or_logits(probs, logits)
        super().__init__(retrograd.Size() if is_scalar else self._param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not valid.all():
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value.data[~valid]}")

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return retrograd.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: _size = ()) -> Tensor:
        tiny = D.finfo(self.probs.dtype).tiny
        with retrograd.no_grad():
            u = retrograd.empty(self._extended_shape(sample_shape), dtype=self.probs.dtype).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = retrograd.where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) is 0 here
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class Poisson(ExponentialFamily):
    """The Poisson distribution with `rate`."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _params = ("rate",)

    def __init__(self, rate: Tensor | Number, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(retrograd.Size() if isinstance(rate, Number) else self.rate.size(),
                         validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():
            return retrograd.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (retrograd.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return retrograd.exp(x)


class Categorical(Distribution):
    """A distribution over {0, ..., K-1} given by the last dim of `probs` (normalised) or `logits`."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _params = ("probs", "logits")

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_of_probs_or_logits(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndimension() > 1 else retrograd.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> Categorical:
        new = super().expand(batch_shape, _instance)
        new._num_events = self._num_events
        return new

    @property
    def _param(self) -> Tensor:
        return self.__dict__["probs"] if "probs" in self.__dict__ else self.__dict__["logits"]

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> retrograd.Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return retrograd.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return retrograd.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        sample_shape = retrograd.Size(sample_shape)
        with retrograd.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = retrograd.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = retrograd.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = retrograd.clamp(self.logits, min=D.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = retrograd.arange(self._num_events).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """Categorical with one-hot vectors for values."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    _param = forwarded("_categorical", "_param")

    probs = forwarded("_categorical", "probs")

    logits = forwarded("_categorical", "logits")

    param_shape = forwarded("_categorical", "param_shape")

    mean = forwarded("_categorical", "probs")

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        indices = self._categorical.sample(retrograd.Size(sample_shape))
        return F.one_hot(indices, self._categorical._num_events).to(self._categorical.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = retrograd.eye(n, dtype=self._param.dtype).view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + self.batch_shape + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample passes the gradient of `probs` straight through the one-hot sample."""

    has_rsample = True

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class Multinomial(Distribution):
    """Counts of each category in `total_count` independent Categorical(`probs`) draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    logits = forwarded("_categorical", "logits")

    probs = forwarded("_categorical", "probs")

    param_shape = forwarded("_categorical", "param_shape")

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        sample_shape = retrograd.Size(sample_shape)
        with retrograd.no_grad():
            draws = self._categorical.sample(retrograd.Size((self.total_count,)) + sample_shape)
            draws = draws.permute(*range(1, draws.dim()), 0)  # the draws last
            counts = retrograd.zeros(self._extended_shape(sample_shape), dtype=draws.dtype)
            counts.scatter_add_(-1, draws, retrograd.ones_like(draws))
            return counts.type_as(self.probs)

    def entropy(self) -> Tensor:
        n = retrograd.tensor(self.total_count)
        term1 = n * self._categorical.entropy() - retrograd.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = retrograd.exp(self._binomial.log_prob(support))
        return term1 + (binomial_probs * retrograd.lgamma(support + 1)).sum([0, -1])

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = retrograd.where((value == 0) & (logits == -math.inf), 0.0, logits)  # 0 * log(0) is 0 here
        log_factorial_n = retrograd.lgamma(value.sum(-1) + 1)
        log_factorial_xs = retrograd.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
