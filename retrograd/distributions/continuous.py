"""Continuous univariate, circular and simplex distributions (torch's normal.py, uniform.py, laplace.py, cauchy.py,
exponential.py, gamma.py, chi2.py, studentT.py, beta.py, dirichlet.py, generalized_pareto.py, von_mises.py): the
same parameters, constraints and formulas, so log_prob, entropy, moments, cdf and icdf and their gradients are
torch's numbers.

rsample is reparameterised: location-scale families transform standard noise; Gamma (and through it Chi2 and
StudentT) draws with `_standard_gamma`, whose gradient is the implicit one torch uses (Note [implicit gamma gradient]
in ops/random.py). Dirichlet (and through it Beta) draws by `_sample_dirichlet` (normalised float64 Gamma draws,
torch's samples) under torch's `_Dirichlet` function, whose backward is `_dirichlet_grad` of each coordinate's Beta
marginal (Note [Dirichlet reparameterised gradient]), not the Gamma draws' gradient carried through the
normalisation: torch's estimator, so torch's gradients. VonMises has no rsample (nor has torch's): its rejection
sampler draws in float64 until every draw is accepted.
"""

from __future__ import annotations

import math
from numbers import Number

import retrograd

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx, once_differentiable
from . import constraints
from .distribution import (
    Distribution,
    ExponentialFamily,
    _batch_shape_of,
    _size,
    _standard_normal,
    at_loc,
    broadcast_all,
)

__all__ = ["Beta", "Cauchy", "Chi2", "Dirichlet", "Exponential", "FisherSnedecor", "Gamma", "GeneralizedPareto",
           "Laplace", "Normal", "StudentT", "Uniform", "VonMises"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class _LocScale(Distribution):
    """A distribution given by `loc` and a positive `scale`, broadcast together."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    mode = at_loc


class Normal(_LocScale, ExponentialFamily):
    """The normal distribution N(loc, scale^2)."""

    mean = at_loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def sample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with retrograd.no_grad():
            return retrograd.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + retrograd.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * retrograd.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + retrograd.log(self.scale)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * retrograd.log(-math.pi / y)


class Laplace(_LocScale):
    """The Laplace distribution: density exp(-|x - loc| / scale) / (2 scale)."""

    mean = at_loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        finfo = D.finfo(self.loc.dtype)
        with retrograd.no_grad():
            u = retrograd.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype).uniform_(finfo.eps - 1, 1)
        return self.loc - self.scale * u.sign() * retrograd.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -retrograd.log(2 * self.scale) - retrograd.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * retrograd.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * retrograd.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + retrograd.log(2 * self.scale)


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution: no mean (nan) and infinite variance."""

    @property
    def mean(self) -> Tensor:
        return retrograd.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self) -> Tensor:
        return retrograd.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        # cauchy_ as torch: tan(pi (u - 1/2)) of a float64 uniform whatever the dtype (rand's float32 takes 24 bits)
        eps = self.loc.new_empty(self._extended_shape(sample_shape)).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return retrograd.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return retrograd.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """The uniform distribution on the half-open interval [low, high)."""

    has_rsample = True
    _params = ("low", "high")

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch_shape_of(self.low, low, high), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        rand = retrograd.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return retrograd.log(lb.mul(ub)) - retrograd.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return retrograd.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """The exponential distribution with `rate`."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("rate",)

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape_of(self.rate, rate), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return retrograd.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():
            draws = retrograd.empty(self._extended_shape(sample_shape), dtype=self.rate.dtype).exponential_()
        return draws / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - retrograd.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -retrograd.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - retrograd.log(self.rate)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -retrograd.log(-x)


class Gamma(ExponentialFamily):
    """The Gamma distribution with shape `concentration` and inverse scale `rate`."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("concentration", "rate")

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None
                 ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(_batch_shape_of(self.concentration, concentration, rate), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = retrograd._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=D.finfo(value.dtype).tiny)  # keeps draws positive, outside the graph
        return value

    def log_prob(self, value: Tensor) -> Tensor:
        value = retrograd.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (retrograd.xlogy(self.concentration, self.rate) + retrograd.xlogy(self.concentration - 1, value)
                - self.rate * value - retrograd.lgamma(self.concentration))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return retrograd.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        return (self.concentration - retrograd.log(self.rate) + retrograd.lgamma(self.concentration)
                + (1.0 - self.concentration) * retrograd.digamma(self.concentration))

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return retrograd.lgamma(x + 1) + (x + 1) * retrograd.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class StudentT(Distribution):
    """Student's t-distribution with `df` degrees of freedom, location `loc` and scale `scale`."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("df", "loc", "scale")

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0, scale: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> StudentT:
        new = super().expand(batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return retrograd.where(self.df > 1, self.loc, math.nan)

    mode = at_loc

    @property
    def variance(self) -> Tensor:
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        return retrograd.where(self.df > 2, finite, retrograd.where(self.df > 1, math.inf, math.nan))

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        x = _standard_normal(self._extended_shape(sample_shape), dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * retrograd.rsqrt(z / self.df))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + retrograd.lgamma(0.5 * self.df)
             - retrograd.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * retrograd.log1p(y ** 2.0 / self.df) - z

    def entropy(self) -> Tensor:
        lbeta = retrograd.lgamma(0.5 * self.df) + math.lgamma(0.5) - retrograd.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (retrograd.digamma(0.5 * (self.df + 1))
                                                          - retrograd.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)


class FisherSnedecor(Distribution):
    """The F-distribution with `df1` and `df2` degrees of freedom: a ratio of scaled chi-squared draws."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _params = ("df1", "df2")

    def __init__(self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(_batch_shape_of(self.df1, df1, df2), validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> FisherSnedecor:
        new = super().expand(batch_shape, _instance)
        new._gamma1, new._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        df2 = retrograd.where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return retrograd.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        df2 = retrograd.where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = D.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * retrograd.log(value)
        t3 = (ct1 + ct2) * retrograd.log1p(ct3 * value)
        return t1 + t2 - t3


def _Dirichlet_backward(x: Tensor, concentration: Tensor, grad_output: Tensor) -> Tensor:  # noqa: N802 - torch's name
    """The gradient of a Dirichlet draw x with respect to its concentration, by the Beta marginals."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = retrograd._dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


class _Dirichlet(Function):
    """Dirichlet.rsample's draw as torch's: `_sample_dirichlet` forward, `_dirichlet_backward` once-differentiable."""

    @staticmethod
    def forward(ctx: FunctionCtx, concentration: Tensor) -> Tensor:
        x = retrograd._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_output: Tensor) -> Tensor:
        x, concentration = ctx.saved_tensors
        return _Dirichlet_backward(x, concentration, grad_output)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, with a positive `concentration` vector."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _params = ("concentration",)

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        return _Dirichlet.apply(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (retrograd.xlogy(self.concentration - 1.0, value).sum(-1)
                + retrograd.lgamma(self.concentration.sum(-1)) - retrograd.lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        corner = retrograd.nn.functional.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode)
        return retrograd.where((self.concentration < 1).all(dim=-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (retrograd.lgamma(self.concentration).sum(-1) - retrograd.lgamma(a0)
                - (k - a0) * retrograd.digamma(a0)
                - ((self.concentration - 1.0) * retrograd.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.lgamma().sum(-1) - retrograd.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The Beta distribution on [0, 1]: the first coordinate of Dirichlet([concentration1, concentration0])."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = retrograd.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = retrograd.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(retrograd.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return retrograd.lgamma(x) + retrograd.lgamma(y) - retrograd.lgamma(x + y)


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution of `loc`, `scale` and `concentration` (xi): Exponential at xi = 0,
    Pareto for xi > 0, bounded above by loc - scale / xi for xi < 0 (Uniform at xi = -1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True
    _params = ("loc", "scale", "concentration")

    def __init__(self, loc: Tensor | float, scale: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(_batch_shape_of(self.loc, loc, scale, concentration), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = retrograd.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """Where the concentration is (close to) zero, and the concentration with those entries set to one, so that
        the branch for xi != 0 stays finite where the xi = 0 branch is taken."""
        eq_zero = retrograd.isclose(self.concentration, retrograd.zeros_like(self.concentration))
        return eq_zero, retrograd.where(eq_zero, retrograd.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        u = retrograd.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + retrograd.ones_like(z)
        where_nonzero = retrograd.where(y == 0, y, y * retrograd.log1p(safe_conc * z))
        return -self.scale.log() - retrograd.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_concentration()
        return retrograd.where(eq_zero, -z, -retrograd.log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value: Tensor) -> Tensor:
        """log P(X <= value)."""
        return retrograd.log1p(-retrograd.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return retrograd.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, safe_conc = self._safe_concentration()
        logu = retrograd.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * retrograd.expm1(-safe_conc * logu)
        return retrograd.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        safe_conc = retrograd.where(valid, self.concentration, 0.5)
        return retrograd.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    mode = at_loc

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        safe_conc = retrograd.where(valid, self.concentration, 0.25)
        return retrograd.where(valid, self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), math.nan)

    def entropy(self) -> Tensor:
        return retrograd.broadcast_to(retrograd.log(self.scale) + self.concentration + 1, self._batch_shape)


# Note [von Mises Bessel functions]
# The von Mises normaliser is 2 pi I0(kappa) and its circular variance 1 - I1(kappa) / I0(kappa). torch evaluates
# log I0 and log I1 with the polynomial approximations of Abramowitz and Stegun 9.8.1-9.8.4 (relative error about
# 1e-7), not with the exact i0e/i1e; the same polynomials are used here, so log_prob and variance are torch's
# numbers (and are differentiable, being built of retrograd ops).
_BESSEL_COEFFICIENTS_SMALL = ([1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
                              [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3])
_BESSEL_COEFFICIENTS_LARGE = ([0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
                               0.2635537e-1, -0.1647633e-1, 0.392377e-2],
                              [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                               -0.2895312e-1, 0.1787654e-1, -0.420059e-2])


def _eval_poly(y: Tensor, coefficients: list[float]) -> Tensor:
    """sum_k coefficients[k] y^k by Horner's rule."""
    result = coefficients[-1]
    for coefficient in reversed(coefficients[:-1]):
        result = coefficient + y * result
    return result


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1 (Note [von Mises Bessel functions])."""
    small = _eval_poly((x / 3.75) ** 2, _BESSEL_COEFFICIENTS_SMALL[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _BESSEL_COEFFICIENTS_LARGE[order]).log()
    return retrograd.where(x < 3.75, small.log(), large)


class VonMises(Distribution):
    """The circular von Mises distribution of angles around `loc` with `concentration` kappa; values and `loc`
    are any reals, read modulo 2 pi. Samples come from Best and Fisher's rejection sampler, in float64."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    _params = ("loc", "concentration")

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None
                 ) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * retrograd.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    def sample(self, sample_shape: _size = ()) -> Tensor:
        """Best and Fisher (1979): a wrapped Cauchy proposal with parameter r, accepted by a squeeze test or the
        exact test, rounds of proposals for every element until each has been accepted once; as torch's, a later
        round's accepted proposal replaces an earlier one (so the draws are torch's)."""
        shape = self._extended_shape(sample_shape)
        with retrograd.no_grad():
            kappa = self.concentration.detach().double()
            tau = 1 + (1 + 4 * kappa ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
            proposal_r = retrograd.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
            x = retrograd.zeros(shape, dtype=retrograd.float64)
            done = retrograd.zeros(shape, dtype=retrograd.bool)
            while not bool(done.all()):
                u1, u2, u3 = retrograd.rand((3, *shape), dtype=retrograd.float64).unbind()
                z = retrograd.cos(math.pi * u1)
                f = (1 + proposal_r * z) / (proposal_r + z)
                c = kappa * (proposal_r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = retrograd.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            angle = (x + math.pi + self.loc.detach().double()) % (2 * math.pi) - math.pi
            return angle.to(self.loc.dtype)

    mean = mode = at_loc  # the circular mean

    @property
    def variance(self) -> Tensor:
        """The circular variance 1 - E[cos(X - loc)]."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
