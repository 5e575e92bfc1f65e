"""Rule table: random sampling (OPS.md section K).

The draws come from retrograd's generator (`manual_seed` seeds it), which is torch's CPU mt19937 with
torch's arithmetic (Note [torch's CPU random streams]): normal_, uniform_, random_, bernoulli, exponential_,
cauchy_, log_normal_, geometric_, multinomial, _standard_gamma, poisson and binomial give torch's numbers for the
same seed.
A sample has no gradient, but torch records the samplers on tensors that require grad, with zero
gradients, under their own nodes (`NormalBackward0` for `x.normal_()`, `BernoulliBackward1` for
`x.bernoulli_(p_tensor)`, ...). Every row here is one mechanism, `_sampler_row`: its forward runs the `draw` it is given
(a closure over the arguments and the generator) and every input's gradient is zeros.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _xp
from .._creation import Generator, _per_example, _torch_rng, empty
from .._memory_format import memory_order
from .._tensor import Tensor, _wrap
from ..autograd.forward_ad import transforms
from . import arrays as A
from .pointwise import _polygamma, _special
from .registry import Op, apply, defop, namespace


def _sampler_row(name: str, node: str, inputs: tuple = ("self",)) -> Op:
    """A row whose forward is `draw(xp, *arrays)` and whose gradients (and tangent) are zeros."""
    formulas = {i: "zeros_like(grad)" for i in inputs}

    def forward(xp, *arrays_then_draw):
        *arrays, draw = arrays_then_draw
        return draw(xp, *arrays)

    return defop(name, node=node, inputs=inputs, params=("draw",), jvp="zeros_like(result)", **formulas)(forward)


def _one_draw(xp, x, draw):
    """The forward of a row of one input whose values are `draw(xp, x)`."""
    return draw(xp, x)


# ============================================================================================
# Rows
# ============================================================================================

normal_in_place = _sampler_row("normal_", "NormalBackward0")
uniform_in_place = _sampler_row("uniform_", "UniformBackward0")
exponential_in_place = _sampler_row("exponential_", "ExponentialBackward0")
cauchy_in_place = _sampler_row("cauchy_", "CauchyBackward0")
geometric_in_place = _sampler_row("geometric_", "GeometricBackward0")
log_normal_in_place = _sampler_row("log_normal_", "LogNormalBackward0")
random_in_place = (_sampler_row("random_from_to_", "RandomBackward0"), _sampler_row("random_to_", "RandomBackward1"),
                   _sampler_row("random_", "RandomBackward2"))
bernoulli_in_place_tensor = _sampler_row("bernoulli_tensor_", "BernoulliBackward1", ("self", "p"))
bernoulli_in_place_number = _sampler_row("bernoulli_", "BernoulliBackward2")
bernoulli_op = _sampler_row("bernoulli", "BernoulliBackward0")
bernoulli_p_op = defop("bernoulli_p", node="NotImplemented", params=("draw",),
                       self="derivative_not_implemented('aten::bernoulli')")(_one_draw)
normal_ops = {(True, False): _sampler_row("normal_tensor_float", "NormalBackward1", ("mean",)),
              (False, True): _sampler_row("normal_float_tensor", "NormalBackward2", ("std",)),
              (True, True): _sampler_row("normal_tensor_tensor", "NormalBackward3", ("mean", "std"))}
poisson_op = _sampler_row("poisson", "PoissonBackward0")
binomial_op = defop("binomial", node="NotImplemented", inputs=("count", "prob"), params=("draw",),
                    count="derivative_not_implemented('aten::binomial')",
                    prob="derivative_not_implemented('aten::binomial')")(lambda xp, n, p, draw: draw(xp, n, p))
sample_dirichlet_op = defop("_sample_dirichlet", node="NotImplemented", params=("draw",),
                            self="derivative_not_implemented('aten::_sample_dirichlet')")(_one_draw)
standard_gamma_op = defop("_standard_gamma", node="StandardGammaBackward0", params=("draw",),
                          self="grad * _standard_gamma_grad(self, result)",
                          jvp="self_t * _standard_gamma_grad(self, result)")(_one_draw)


# Note [implicit gamma gradient]
# A Gamma(alpha) draw x has no noise to hold fixed, but its cdf F(x; alpha) is a uniform variate that can
# be: moving alpha with F fixed moves x by dx/dalpha = -(dF/dalpha) / f(x; alpha), the implicit
# reparameterisation gradient (Figurnov et al. 2018) torch gives `_standard_gamma`. torch evaluates it
# (aten/src/ATen/native/Distributions.h) with three approximations, and so does `_standard_gamma_grad`, to give
# torch's numbers: the series of the incomplete gamma function for x < 0.8; for alpha > 8, Rice's saddle-point
# expansion (a polynomial within 10% of alpha, where the expansion is singular); else a rational function of
# log(x / alpha) and log(alpha) fitted to the exact gradient (Jankowiak and Obermeyer 2018). The result is
# accurate to a few parts in 1e4 or better against the exact gradient (tests/test_distributions.py), not to
# float64 rounding; like torch's, its own derivative is not implemented.

_GAMMA_GRAD_COEFFICIENTS = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07]])


def _gamma_grad_small_x(xp, alpha, x):
    """-(dF/dalpha) / f from six terms of F's series in x (for x < 0.8); 0 where it is nan, as torch."""
    numer, denom = xp.ones_like(x), alpha.copy()
    series1, series2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x ** alpha
    gamma_pdf = x ** (alpha - 1) * xp.exp(-x)
    gamma_cdf_alpha = (xp.log(x) - _special(xp, _polygamma, alpha, 0)) * pow_x_alpha * series1 - pow_x_alpha * series2
    result = -gamma_cdf_alpha / gamma_pdf
    return xp.where(xp.isnan(result), 0.0, result)


def _gamma_grad_large_alpha(xp, alpha, x):
    """Rice's saddle-point expansion for alpha > 8 (a polynomial within 10% of alpha)."""
    near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = 1440 * alpha ** 2 + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    polynomial = numer_1 * numer_2 / (1244160 * alpha ** 4)
    far_x = xp.where(near, 0.5 * alpha, x)  # keeps the expansion's pole at x = alpha out of the unused branch
    denom = xp.sqrt(8 * alpha)
    term2 = denom / (alpha - far_x)
    term3 = (far_x - alpha - alpha * xp.log(far_x / alpha)) ** -1.5
    term23 = xp.where(far_x < alpha, term2 - term3, term2 + term3)
    term1 = xp.log(far_x / alpha) * term23 - xp.sqrt(2 / alpha) * (alpha + far_x) / (alpha - far_x) ** 2
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    return xp.where(near, polynomial, -stirling * far_x * term1 / denom)


def _gamma_grad_rational(xp, alpha, x):
    """The rational approximation in u = log(x / alpha) and v = log(alpha)."""
    u, v = xp.log(x / alpha), xp.log(alpha)
    c = [_GAMMA_GRAD_COEFFICIENTS[0, i] + u * (_GAMMA_GRAD_COEFFICIENTS[1, i] + u * _GAMMA_GRAD_COEFFICIENTS[2, i])
         for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return xp.exp(p / q)


@defop("_standard_gamma_grad", inputs=("self", "output"), node="StandardGammaGradBackward0",
       self="not_implemented_error('_standard_gamma_grad')", output="not_implemented_error('_standard_gamma_grad')")
def standard_gamma_grad_op(xp, alpha, x):
    a, v = alpha.astype(np.float64), x.astype(np.float64)
    small = v < 0.8
    large = ~small & (a > 8.0)
    safe = lambda mask, value, fill: xp.where(mask, value, fill)  # noqa: E731 - each branch sees valid inputs
    result = xp.where(small, _gamma_grad_small_x(xp, a, safe(small, v, 0.5)),
                      xp.where(large, _gamma_grad_large_alpha(xp, safe(large, a, 9.0), safe(large, v, 1.0)),
                               _gamma_grad_rational(xp, a, safe(~small, v, 1.0))))
    return result.astype(np.result_type(alpha, x))


# Note [Dirichlet reparameterised gradient]
# torch differentiates a Dirichlet draw x (normalised Gamma draws) not through its Gamma draws but coordinate by
# coordinate through its Beta(alpha, total - alpha) marginal: `_dirichlet_grad(x, alpha, total)` is the implicit
# gradient -(dF/dalpha) / f / (1 - x) of the Beta cdf F, which the backward of `Dirichlet.rsample` combines as
# grad * (grad_output - (x * grad_output).sum(-1)). It is evaluated (aten/src/ATen/native/Distributions.h) by four
# approximations chosen by x and boundary = total x (1 - x): ten terms of the cdf's series in x for x <= 0.5 and
# boundary < 2.5, eight terms of its series in 1 - x for x >= 0.5 and boundary < 0.75 (both in x's own dtype, as
# torch, so float32 rounds as it does), Rice's saddle-point expansion for alpha and beta both above 6, else a
# rational correction to x (digamma(total) - digamma(alpha)) / beta; the last two in float64. The digammas are
# rounded to x's dtype, as torch's digamma_one returns them. Like torch's, its own derivative is not implemented.

_DIRICHLET_GRAD_P = np.array([
    [[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
     [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
     [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
    [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
     [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
     [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
    [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
     [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
     [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]])
_DIRICHLET_GRAD_Q = np.array([
    [[1, -0.02924021934, -0.04438342661, 0.007285809825],
     [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
     [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
    [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
     [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
     [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
    [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
     [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
     [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]])


_DIGAMMA_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                       -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                       8.33333333333333333333E-2)


def _libm(xp, fn, *args):
    """fn in float64, rounded once to the first argument's dtype: C's logf and powf are (nearly always) correctly
    rounded, NumPy's float32 loops can be an ulp off, which the Beta series amplify."""
    return fn(*(a.astype(np.float64) for a in args)).astype(args[0].dtype)


def _digamma_one(xp, x):
    """ATen's digamma_one (Cephes) as the Beta gradients call it: x and its recurrence in x's dtype, the sum in
    float64, the result rounded to x's dtype; torch's float32 digamma differences differ from the exact ones."""
    pole = (x == 0) | ((x < 0) & (x == xp.floor(x)))
    reflected = x < 0
    pi = x.dtype.type(np.pi)
    additional = xp.where(reflected, -pi / _libm(xp, xp.tan, pi * x), 0.0)
    x = xp.where(reflected, 1 - x, x)
    result = xp.zeros(x.shape, dtype=np.float64)
    while True:
        below = x < 10
        if not A.reduce(xp, "any", below):
            break
        result = xp.where(below, result - 1 / x, result)
        x = xp.where(below, x + 1, x)
    z = 1.0 / (x * x).astype(np.float64)
    polynomial = xp.zeros_like(z)
    for coefficient in _DIGAMMA_ASYMPTOTIC:
        polynomial = polynomial * z + coefficient
    asymptotic = xp.where(x < 1e17, z * polynomial, 0.0)
    out = xp.where(x == 10, result + 2.25175258906672110764, result + _libm(xp, xp.log, x) - 0.5 / x - asymptotic)
    out = xp.where(pole, xp.inf, out + additional)
    return out.astype(x.dtype)


def _beta_grad_alpha_small(xp, x, alpha, beta):
    """d x / d alpha scaled by 1 / (1 - x), x ~ Beta(alpha, beta) near 0: ten terms of the cdf's series in x."""
    factor = _digamma_one(xp, alpha) - _digamma_one(xp, alpha + beta) - _libm(xp, xp.log, x)
    numer = xp.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * _libm(xp, xp.pow, 1 - x, -beta) * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_beta_small(xp, x, alpha, beta):
    """The same with respect to beta, x near 0: eight terms of the series (torch's sign)."""
    factor = _digamma_one(xp, alpha + beta) - _digamma_one(xp, beta)
    numer, betas, dbetas, series = xp.ones_like(x), xp.ones_like(x), xp.zeros_like(x), factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -_libm(xp, xp.pow, 1 - x, 1 - beta) * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(xp, x, alpha, beta):
    """Rice's saddle-point expansion for alpha and beta both large (a polynomial within 0.1 std of the mean)."""
    total = alpha + beta
    mean = alpha / total
    std = xp.sqrt(alpha * beta / (total + 1)) / total
    near = (mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    polynomial = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / xp.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (xp.sqrt(2 * alpha / beta) * total ** 1.5 * axbx * axbx)
    term2 = 0.5 * xp.log(alpha / (total * x))
    term3 = xp.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * xp.log(beta / (total * (1 - x))) + alpha * xp.log(alpha / (total * x))) ** -1.5
    term1234 = term1 + term2 * (term3 + xp.where(x < mean, term4, -term4))
    return xp.where(near, polynomial, stirling * prefactor * term1234)


def _beta_grad_rational(xp, x, alpha, total, digamma_difference):
    """The rational correction to x (digamma(total) - digamma(alpha)) / beta, fitted to the exact gradient."""
    u = xp.log(x)
    a = xp.log(alpha) - u
    b = xp.log(total) - a
    p, q = xp.zeros_like(x), xp.zeros_like(x)
    for i, pow_u in enumerate((1.0, u, u * u)):
        for j, pow_a in enumerate((1.0, a, a * a)):
            ua = pow_u * pow_a
            cp, cq = _DIRICHLET_GRAD_P[i, j], _DIRICHLET_GRAD_Q[i, j]
            p = p + ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
            q = q + ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
    return p / q * (x * digamma_difference / (total - alpha))


@defop("_dirichlet_grad", inputs=("x", "alpha", "total"), node="NotImplemented",
       x="derivative_not_implemented('aten::_dirichlet_grad')",
       alpha="derivative_not_implemented('aten::_dirichlet_grad')",
       total="derivative_not_implemented('aten::_dirichlet_grad')")
def dirichlet_grad_op(xp, x, alpha, total):
    x, alpha, total = xp.broadcast_arrays(x, alpha, total)
    beta = total - alpha
    boundary = total * x * (1 - x)
    near_zero = (x <= 0.5) & (boundary < 2.5)
    near_one = ~near_zero & (x >= 0.5) & (boundary < 0.75)
    large = ~near_zero & ~near_one & (alpha > 6) & (beta > 6)
    rest = ~(near_zero | near_one | large)
    out = xp.zeros_like(x)
    wide = [a.astype(np.float64) for a in (x, alpha, total)]
    with np.errstate(all="ignore"):
        out[near_zero] = _beta_grad_alpha_small(xp, x[near_zero], alpha[near_zero], beta[near_zero])
        out[near_one] = -_beta_grad_beta_small(xp, 1 - x[near_one], beta[near_one], alpha[near_one])
        x64, alpha64, total64 = (a[large] for a in wide)
        out[large] = _beta_grad_alpha_mid(xp, x64, alpha64, total64 - alpha64)
        difference = (_digamma_one(xp, total[rest]) - _digamma_one(xp, alpha[rest])).astype(np.float64)
        out[rest] = _beta_grad_rational(xp, *(a[rest] for a in wide), difference)
    return out


# ============================================================================================
# Draws and argument checks
# ============================================================================================


# Note [random samplers under vmap]
# torch's batching rules for the samplers look at the innermost running vmap level's randomness. An in-place
# sampler (normal_, uniform_, bernoulli_, ...) under 'different' fills each example of a batched self with its own
# numbers (here by the per-example loop, other numbers than torch's) and refuses an unbatched self, which would look
# like 'same'; under 'same' it draws one sample of an example's shape and writes it into every example. A sampler of
# tensor parameters (bernoulli(p), normal(mean, std), multinomial, poisson, ...) refuses 'same' at any level where a
# parameter is batched. 'error' refuses every draw (_creation._torch_rng). The factories: Note [random factories
# under vmap]. multinomial, whose output shape is not its input's, has torch's own rule: under 'different' levels the
# probabilities get one leading dim per such level (expanded where they are not batched), the rows of every example
# are drawn by one multinomial of them all flattened to 2-d, outermost level first, as torch's rule folds each level
# into the rows in turn: torch's numbers for the same seed.
SAME_WITH_BATCHED_INPUT = ("Vmap does not currently support same randomness with a batched tensor input. Please file "
                           "an issue with functorch")
DIFFERENT_ON_UNBATCHED = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear "
                          "like same randomness. If this is necessary for your usage, please file an issue with "
                          "functorch.")


def _generator(generator: Generator | None, *parameters: Any) -> Generator:
    """The generator a draw uses, with vmap's rules for a sampler of tensor `parameters` (Note [random samplers
    under vmap])."""
    rng = _torch_rng(generator)  # torch's error under randomness='error'
    if any(level.randomness == "same" and level in getattr(t, "_levels", ()) for level in transforms.vmap
           for t in parameters):
        raise RuntimeError(SAME_WITH_BATCHED_INPUT)
    return rng


def _sampler_in_place(fill: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """An in-place sampler following vmap's randomness for self (Note [random samplers under vmap])."""

    @functools.wraps(fill)
    def sampler(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if transforms.vmap:
            level = transforms.vmap[-1]
            batched = level in getattr(self, "_levels", ())
            if level.randomness == "different" and not batched:
                raise RuntimeError(DIFFERENT_ON_UNBATCHED)
            if level.randomness == "same" and batched:
                return self.copy_(sampler(empty(self.shape, dtype=self.dtype, device=self.device), *args, **kwargs))
        return fill(self, *args, **kwargs)

    return sampler


def _number(value: float) -> str:
    return f"{float(value):g}"


def _require_float(self: Tensor, kernel: str) -> None:
    if self.dtype.category < 2:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(self.dtype)}\'')


def _in_place(self: Tensor, row: Op, draw: Callable, others: tuple = ()) -> Tensor:
    """Write a draw into self, recorded under `row` when autograd is watching. torch fills a strided tensor
    in memory order, so on a permuted view (a transposed weight) the draw runs with self's dims in that order."""
    self._check_inplace()
    if not _xp.has_data(self._data):  # a meta tensor: nothing to draw, and the generator stays as it was (as torch's)
        return self._become(apply(row, (self, *others), (lambda xp, x, *rest: x,)))
    order = memory_order(self._data)
    if order != tuple(range(self.ndim)):
        inverse, draw_in_order = tuple(int(d) for d in np.argsort(order)), draw

        def draw(xp: Any, x: Any, *rest: Any) -> Any:
            rest = tuple(xp.permute_dims(xp.broadcast_to(r, x.shape), order) for r in rest)
            return xp.permute_dims(draw_in_order(xp, xp.permute_dims(x, order), *rest), inverse)

    return self._become(apply(row, (self, *others), (draw,)))


# ============================================================================================
# Public functions and Tensor methods
# ============================================================================================


@_sampler_in_place
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill self with samples of N(mean, std^2)."""
    _require_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
    rng = _generator(generator)
    contiguous = self._data.flags.c_contiguous if isinstance(self._data, np.ndarray) else True
    return _in_place(self, normal_in_place,
                     lambda xp, x: _drawn(xp, rng.normal(x.shape, _host_dtype(x), mean, std, contiguous), x))


@_sampler_in_place
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None, **bounds: float
             ) -> Tensor:
    """Fill self with samples of U[a, b) (torch's keywords `from` and `to` are accepted too)."""
    a, b = bounds.get("from", a), bounds.get("to", b)
    _require_float(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_number(a)} > "
                           f"to={_number(b)}")
    rng = _generator(generator)
    return _in_place(self, uniform_in_place, lambda xp, x: _drawn(xp, rng.uniform(x.shape, _host_dtype(x), a, b), x))


@_sampler_in_place
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill self with samples of Exp(lambd)."""
    if self.dtype.category < 2:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {D.scalar_type_name(self.dtype)}")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_number(lambd)}")
    rng = _generator(generator)
    return _in_place(self, exponential_in_place, lambda xp, x: _drawn(xp, rng.exponential(x.shape, lambd), x))


@_sampler_in_place
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill self with samples of the Cauchy distribution about median, of scale sigma."""
    if D.kind(self._data) != "f":
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {D.CPP_TYPE_NAMES[self.dtype.name]}")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_number(sigma)}")
    rng = _generator(generator)
    return _in_place(self, cauchy_in_place,
                     lambda xp, x: _drawn(xp, rng.cauchy(x.shape, median, sigma), x))


@_sampler_in_place
def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill self with the number of Bernoulli(p) trials up to the first success (1, 2, ...): any real dtype."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_number(p)}")
    rng = _generator(generator)
    return _in_place(self, geometric_in_place, lambda xp, x: _drawn(xp, rng.geometric(x.shape, p), x))


@_sampler_in_place
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Tensor:
    """Fill self with exp of samples of N(mean, std^2)."""
    _require_float(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_number(std)}")
    rng = _generator(generator)
    return _in_place(self, log_normal_in_place, lambda xp, x: _drawn(xp, rng.log_normal(x.shape, mean, std), x))


@_sampler_in_place
def random_(self: Tensor, *bounds: int, generator: Generator | None = None, **named: int) -> Tensor:
    """Fill self with integers: random_(from, to) in [from, to), random_(to) in [0, to), random_() in
    [0, 2**mantissa] for floats and [0, max] for integers."""
    bounds = bounds + tuple(named[k] for k in ("from", "to") if k in named)
    rng = _generator(generator)
    if not bounds:
        D.refuse_unsigned("random_kernel_cpu", self.dtype)
        return _in_place(self, random_in_place[2], lambda xp, x: _drawn(xp, rng.bits(x.shape, _host_dtype(x)), x))
    low, high = bounds if len(bounds) == 2 else (0, bounds[0])
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _in_place(self, random_in_place[2 - len(bounds)],
                     lambda xp, x: _drawn(xp, rng.integers(int(low), int(high), x.shape), x))


def _on_host(p: Any, shape: tuple) -> np.ndarray:
    """A distribution's parameters (bernoulli's probabilities, poisson's rates) as a NumPy array of `shape`: the
    generator draws on the host."""
    return np.broadcast_to(_xp.transfer(p, "cpu", None), shape)


def _host_dtype(like: Any) -> np.dtype:
    """The NumPy dtype of like (an array on any device) that the generator draws: complex64 for complex32, whose
    values _drawn rounds (Note [complex32])."""
    dtype = D.of_array(like)
    return np.dtype(np.complex64 if dtype is D.complex32 else dtype.np)


def _drawn(xp: Any, values: Any, like: Any) -> Any:
    """Values drawn on the host (retrograd's generator is NumPy's) as an array of like's dtype on like's device."""
    return A.astype(xp, xp.asarray(values, device=like.device), like.dtype)


@_sampler_in_place
def bernoulli_(self: Tensor, p: float | Tensor = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill self with 1 (probability p) or 0; p a number or a tensor broadcastable to self."""
    rng = _generator(generator)
    if isinstance(p, Tensor):
        return _in_place(self, bernoulli_in_place_tensor,
                         lambda xp, x, q: _drawn(xp, rng.bernoulli(_on_host(q, x.shape), x.shape), x), (p,))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_number(p)}")
    return _in_place(self, bernoulli_in_place_number, lambda xp, x: _drawn(xp, rng.bernoulli(p, x.shape), x))


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
    """1 with probability input (elementwise), else 0; with a number p, every element uses p."""
    rng = _generator(generator, input)
    if p is not None:
        return apply(bernoulli_p_op, (input,), (lambda xp, x: _drawn(xp, rng.bernoulli(p, x.shape), x),))
    data = input._data
    if A.reduce(namespace(data), "any", (data < 0) | (data > 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
                           "be improved?  If so, please report an enhancement request to PyTorch.)")
    return apply(bernoulli_op, (input,),
                 (lambda xp, x: _drawn(xp, rng.bernoulli(_on_host(x, x.shape), x.shape), x),))


def normal(mean: Tensor | float, std: Tensor | float = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: D.dtype | None = None, device: Any = None, layout: Any = None, pin_memory: bool = False,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std^2): mean and std tensors broadcast; with two numbers, `size` gives the shape."""
    tensors = (isinstance(mean, Tensor), isinstance(std, Tensor))
    if not any(tensors):  # a factory (Note [random factories under vmap])
        rng, dt = _torch_rng(generator), (dtype or D.get_default_dtype()).np
        return _per_example(tuple(size) if size is not None else (),
                            lambda shape: _wrap(rng.normal(shape, dt, mean, std)).requires_grad_(requires_grad))
    rng = _generator(generator, mean, std)
    if tensors[1] and A.reduce(namespace(std._data), "any", std._data < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not tensors[1] and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
    inputs = tuple(t for t in (mean, std) if isinstance(t, Tensor))

    def draw(xp: Any, *arrays: np.ndarray) -> np.ndarray:
        m = arrays[0] if tensors[0] else mean
        s = arrays[-1] if tensors[1] else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))  # a ValueError becomes torch's error in apply
        out = xp.asarray(rng.normal(shape, _host_dtype(arrays[0]), 0.0, 1.0 if tensors[1] else s),
                         device=arrays[0].device)
        return _drawn(xp, out * s + m if tensors[1] else out + m, arrays[0])

    return apply(normal_ops[tensors], inputs, (draw,))


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Poisson(input) (elementwise rates): torch's numbers for the same seed."""
    _require_float(input, "poisson_cpu")
    rng = _generator(generator, input)
    return apply(poisson_op, (input,), (lambda xp, x: _drawn(xp, rng.poisson(_on_host(x, x.shape)), x),))


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Binomial(count, prob): successes in `count` trials (elementwise, broadcast), torch's numbers for
    the same seed."""
    for name, tensor in (("count", count), ("prob", prob)):
        if tensor.dtype.category < 2:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{D.scalar_type_name(tensor.dtype)}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {D.scalar_type_name(prob.dtype)} but expected "
                           f"{D.scalar_type_name(count.dtype)}")
    if count.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"binomial_cpu" not implemented for \'{D.scalar_type_name(count.dtype)}\'')
    rng = _generator(generator, count, prob)

    def draw(xp: Any, n: Any, p: Any) -> Any:
        count, probability = _xp.transfer(n, "cpu", None), _xp.transfer(p, "cpu", None)
        drawn = rng.binomial(count, probability, count.dtype == np.float64)
        return xp.asarray(drawn.astype(np.result_type(count, probability)), device=n.device)

    return apply(binomial_op, (count, prob), (draw,))


def _standard_gamma(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Gamma(input, 1), kept at least the dtype's tiny; differentiable by the implicit gradient
    (Note [implicit gamma gradient])."""
    _require_float(input, "gamma_cpu")
    rng = _generator(generator, input)

    def draw(xp: Any, alpha: Any) -> Any:
        host = _on_host(alpha, alpha.shape)
        return _drawn(xp, rng.gamma(host, host.dtype == np.float64), alpha)

    return apply(standard_gamma_op, (input,), (draw,))


def _sample_dirichlet(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Dirichlet(input) along the last dim, as torch's: Gamma draws in float64 (the same stream as
    _standard_gamma's in double), each normalised by its row's sum, rounded to input's dtype and kept within
    [tiny, the float below 1] so that log_prob stays finite for small concentrations (a NaN gives tiny, as C's
    std::max does). No gradient (torch's derivative is not implemented: backward raises)."""
    if input.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"dirichlet" not implemented for \'{D.scalar_type_name(input.dtype)}\'')
    rng = _generator(generator, input)

    def draw(xp: Any, alpha: Any) -> Any:
        host = _on_host(alpha, alpha.shape)
        gammas = rng.gamma(host, True)
        rounded = (gammas / gammas.sum(-1, keepdims=True)).astype(host.dtype)
        tiny, below_one = np.finfo(host.dtype).tiny, np.nextafter(host.dtype.type(1), host.dtype.type(0))
        at_least_tiny = np.where(tiny < rounded, rounded, tiny)
        return _drawn(xp, np.where(at_least_tiny < below_one, at_least_tiny, below_one), alpha)

    return apply(sample_dirichlet_op, (input,), (draw,))


def _standard_gamma_grad(self: Tensor, output: Tensor) -> Tensor:
    """d output / d self for output ~ Gamma(self, 1), by the implicit gradient (Note [implicit gamma gradient])."""
    return apply(standard_gamma_grad_op, (self, output))


def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """d x / d alpha for a Dirichlet draw x through its Beta(alpha, total - alpha) marginal, scaled by 1 / (1 - x):
    what Dirichlet.rsample's backward uses (Note [Dirichlet reparameterised gradient])."""
    if x.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"_dirichlet_grad_cpu" not implemented for \'{D.scalar_type_name(x.dtype)}\'')
    for other in (alpha, total):
        if other.dtype != x.dtype:
            raise RuntimeError(f"Found dtype {D.scalar_type_name(other.dtype)} but expected "
                               f"{D.scalar_type_name(x.dtype)}")
    return apply(dirichlet_grad_op, (x, alpha, total))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn from the categories of each row of probabilities (int64, no gradient), on the host (the generator
    is NumPy's), then moved to input's device."""
    rng = _generator(generator, input)
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if any(level.randomness == "different" for level in transforms.vmap):
        def draw(probabilities: Tensor) -> Tensor:
            rows = probabilities.reshape(-1, probabilities.shape[-1])
            picks = _multinomial_draw(rows, num_samples, replacement, rng)
            return picks.reshape(probabilities.shape[:-1] + (num_samples,))

        return transforms.vmap[-1].draw_per_example_from(draw, input)
    return _multinomial_draw(input, num_samples, replacement, rng)


def _multinomial_draw(input: Tensor, num_samples: int, replacement: bool, rng: Generator) -> Tensor:
    """multinomial of plain (not batched) probabilities, with torch's checks of them."""
    data = _xp.transfer(input._data, "cpu", None)
    if D.kind(data) != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.scalar_type_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > data.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not np.isfinite(data).all() or (data < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = data.reshape(-1, data.shape[-1]).astype(np.float64)
    totals = rows.sum(axis=1)
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    probabilities = data.reshape(-1, data.shape[-1])
    if replacement and num_samples > 1:  # torch: a float64 uniform per sample, searched in the row's cumulative sums
        cumulative = np.cumsum(probabilities.astype(np.promote_types(data.dtype, np.float32)), axis=1)
        cumulative = cumulative / cumulative[:, -1:]
        cumulative[:, -1] = 1
        uniforms = rng._unit(probabilities.size // probabilities.shape[1] * num_samples, True)
        picks = [np.searchsorted(row.astype(np.float64), u) for row, u in
                 zip(cumulative, uniforms.reshape(-1, num_samples))]
    else:  # torch: the largest p / q for q ~ Exp(1) drawn in p's dtype (the Gumbel-max trick, exponentiated), q
        # filled in p's memory order (torch's empty_like(p).exponential_())
        order = memory_order(probabilities)
        noise = rng.exponential(tuple(probabilities.shape[d] for d in order), 1.0).transpose(np.argsort(order))
        ratios = probabilities / noise.astype(data.dtype)
        picks = np.argsort(-ratios, axis=1, kind="stable")[:, :num_samples]
    picks = np.asarray(picks, dtype=np.int64).reshape(*data.shape[:-1], num_samples)
    return _wrap(_xp.transfer(picks, *_xp.locate(input._data)))


__all__ = ["_dirichlet_grad", "_standard_gamma", "_standard_gamma_grad", "bernoulli", "binomial", "multinomial",
           "normal", "poisson"]
METHODS = ["bernoulli", "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_", "multinomial", "normal_",
           "random_", "uniform_"]
