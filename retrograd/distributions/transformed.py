"""TransformedDistribution and the distributions torch defines through it (transformed_distribution.py,
log_normal.py, gumbel.py, relaxed_bernoulli.py, relaxed_categorical.py): a base distribution pushed through a
list of transforms, log_prob by the change-of-variables formula."""

from __future__ import annotations

import math
from numbers import Number

import retrograd

from .. import _dtype as D
from .._tensor import Tensor
from . import constraints
from .compound import Independent
from .continuous import Cauchy, Exponential, Gamma, Normal, Uniform
from .discrete import Categorical, _BinaryParameter
from .distribution import Distribution, _size, _sum_rightmost, at_loc, broadcast_all, clamp_probs, forwarded
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    StickBreakingTransform,
    Transform,
)

__all__ = ["ExpRelaxedCategorical", "Gumbel", "HalfCauchy", "HalfNormal", "InverseGamma", "Kumaraswamy",
           "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli", "Pareto", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "TransformedDistribution", "Weibull"]

_EULER_CONSTANT = 0.57721566490153286060


class TransformedDistribution(Distribution):
    """`base_distribution` pushed through `transforms` in order."""

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, transforms: Transform | list[Transform],
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if base_shape != expanded_base_shape:  # the transforms' parameters broadcast the base distribution
            base_distribution = base_distribution.expand(expanded_base_shape[:len(expanded_base_shape)
                                                                             - base_event_dim])
        reinterpreted_batch_ndims = transform.domain.event_dim - base_event_dim
        if reinterpreted_batch_ndims > 0:
            base_distribution = Independent(base_distribution, reinterpreted_batch_ndims)
        self.base_dist = base_distribution
        event_dim = max(transform.codomain.event_dim,
                        base_event_dim + transform.codomain.event_dim - transform.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> TransformedDistribution:
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = retrograd.Size(batch_shape)
        shape = batch_shape + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    has_rsample = forwarded("base_dist", "has_rsample")

    def sample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob: Tensor | float = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                 event_dim - transform.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """The cdf of the base taken to the cdf of the result: flipped where the transforms decrease."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for transform in self.transforms[::-1]:
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


class _SameParameters(TransformedDistribution):
    """A transformed distribution made by its own __init__ from its parameters: `expand` keeps its class and
    expands the parameters it holds itself (`_params`)."""

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> TransformedDistribution:
        new = self._get_checked_instance(type(self), _instance)
        for name in self._params:
            setattr(new, name, self.__dict__[name].expand(batch_shape))
        return super().expand(batch_shape, _instance=new)


class LogNormal(_SameParameters):
    """exp of Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = forwarded("base_dist", "loc")

    scale = forwarded("base_dist", "scale")

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class LogisticNormal(_SameParameters):
    """The stick-breaking image on the simplex of Normal(loc, scale) vectors (one dim shorter)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale


class Kumaraswamy(_SameParameters):
    """The Kumaraswamy distribution on [0, 1]: (1 - U ** (1 / concentration0)) ** (1 / concentration1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _params = ("concentration1", "concentration0")

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(retrograd.full_like(self.concentration0, 0), retrograd.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def _moment(self, n: int) -> Tensor:
        """E[X ** n] = b B(1 + n / a, b)."""
        a, b = self.concentration1, self.concentration0
        return b * retrograd.exp(retrograd.lgamma(1 + n / a) + retrograd.lgamma(b) - retrograd.lgamma(1 + n / a + b))

    @property
    def mean(self) -> Tensor:
        return self._moment(1)

    @property
    def mode(self) -> Tensor:
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        return retrograd.where((self.concentration0 < 1) | (self.concentration1 < 1), math.nan, log_mode).exp()

    @property
    def variance(self) -> Tensor:
        return self._moment(2) - retrograd.pow(self.mean, 2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = retrograd.digamma(self.concentration0 + 1) + _EULER_CONSTANT
        return t0 + t1 * h0 - retrograd.log(self.concentration1) - retrograd.log(self.concentration0)


class Gumbel(_SameParameters):
    """The Gumbel (type-I extreme value) distribution: loc - scale * log(-log(U))."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _params = ("loc", "scale")

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = D.finfo(self.loc.dtype)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(retrograd.full_like(self.loc, finfo.tiny), retrograd.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-retrograd.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER_CONSTANT

    mode = at_loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER_CONSTANT)


class _Folded(_SameParameters):
    """|X| for X symmetric about 0 with `scale` (HalfNormal, HalfCauchy): density doubled on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    scale = forwarded("base_dist", "scale")

    @property
    def mode(self) -> Tensor:
        return retrograd.zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        value = retrograd.as_tensor(value, dtype=self.base_dist.scale.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return retrograd.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """|X| for X ~ Normal(0, scale)."""

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """|X| for X ~ Cauchy(0, scale)."""

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return retrograd.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    variance = forwarded("base_dist", "variance")


class Pareto(_SameParameters):
    """The Pareto type-I distribution: scale * exp(Exponential(alpha))."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _params = ("scale", "alpha")

    def __init__(self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(_SameParameters):
    """The Weibull distribution: scale * Exponential(1) ** (1 / concentration)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _params = ("scale", "concentration", "concentration_reciprocal")

    def __init__(self, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(Exponential(retrograd.ones_like(self.scale), validate_args=validate_args), transforms,
                         validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * retrograd.exp(retrograd.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (retrograd.exp(retrograd.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - retrograd.exp(2 * retrograd.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self) -> Tensor:
        return (_EULER_CONSTANT * (1 - self.concentration_reciprocal)
                + retrograd.log(self.scale * self.concentration_reciprocal) + 1)


class InverseGamma(_SameParameters):
    """1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
                 ) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base_dist, PowerTransform(-base_dist.rate.new_ones(())), validate_args=validate_args)

    concentration = forwarded("base_dist", "concentration")

    rate = forwarded("base_dist", "rate")

    @property
    def mean(self) -> Tensor:
        return retrograd.where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return retrograd.where(self.concentration > 2, result, math.inf)

    def entropy(self) -> Tensor:
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())


class LogitRelaxedBernoulli(_BinaryParameter):
    """The logit of a RelaxedBernoulli sample (the binary Concrete distribution), at `temperature`."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | Number | None = None,
                 logits: Tensor | Number | None = None, validate_args: bool | None = None) -> None:
        self.temperature = temperature
        is_scalar = self._set_probs_or_logits(probs, logits)
        super().__init__(retrograd.Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> LogitRelaxedBernoulli:
        new = super().expand(batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(retrograd.rand(shape, dtype=probs.dtype))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_SameParameters):
    """A continuous relaxation of Bernoulli on (0, 1), at `temperature`; reparameterised."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | Number | None = None,
                 logits: Tensor | Number | None = None, validate_args: bool | None = None) -> None:
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    temperature = forwarded("base_dist", "temperature")

    logits = forwarded("base_dist", "logits")

    probs = forwarded("base_dist", "probs")


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (the Concrete distribution), at `temperature`."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of this
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> ExpRelaxedCategorical:
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    param_shape = forwarded("_categorical", "param_shape")

    logits = forwarded("_categorical", "logits")

    probs = forwarded("_categorical", "probs")

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        uniforms = clamp_probs(retrograd.rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        log_scale = retrograd.full_like(self.temperature, float(k)).lgamma() - self.temperature.log().mul(-(k - 1))
        score = logits - value.mul(self.temperature)
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(_SameParameters):
    """A continuous relaxation of OneHotCategorical on the simplex, at `temperature`; reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    temperature = forwarded("base_dist", "temperature")

    logits = forwarded("base_dist", "logits")

    probs = forwarded("base_dist", "probs")
