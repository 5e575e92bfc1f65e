"""Rule table: the functions of torch.special that other families do not already hold.

The rows here are the Bessel-type functions (i0, i0e, i1, i1e, J, Y, K, the spherical j0), the
normal distribution's ndtri, log_ndtr and erfcx, entr, xlog1py, the Hurwitz zeta, sinc and the
multivariate log-gamma; torch.special's other names are aliases of rows elsewhere (gammaln is
lgamma, psi digamma, expit sigmoid, gammainc igamma, ...: SPECIAL_ALIASES). Functions torch does
not differentiate (bessel_j0, ..., the orthogonal polynomials) have rows without a VJP: their
results never require grad, as torch's.

Kernels run in float64 on NumPy (pointwise._special), in the way Note [special functions without
SciPy] describes for the erf family; Note [Bessel kernels] and Note [normal kernels] say how.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from .. import _dtype as D
from .._creation import arange, tensor
from .._tensor import Tensor
from . import arrays as A
from .complex import conj
from .pointwise import _EULER_GAMMA, _erfcx, _special, _special_pair, add_scalar, digamma, erfc, lgamma, mul_by_number
from .registry import apply, defop

_SQRT_2PI = math.sqrt(2 * math.pi)
_MACHEP = 2.0 ** -53


def _real_kernel(xp, name: str, fn: Callable, *arrays, **kwargs):
    """Run a float64 kernel of one or two arrays; complex inputs get torch's error for a real-only kernel (half
    precision where torch's kernel has no loop for it: ops/unsigned.py)."""
    for a in arrays:
        if getattr(a, "dtype", None) is not None and D.kind(a) == "c":
            raise NotImplementedError(f"\"{name}\" not implemented for '{D.scalar_type_name(a.dtype)}'")
    if len(arrays) == 1:
        return _special(xp, functools.partial(fn, **kwargs), arrays[0])
    return _special_pair(xp, fn, *_float_arrays(xp, *arrays), **kwargs)


def _float_arrays(xp, a, b):
    """Two operands as arrays of their promoted floating dtype (a Python number takes the other's)."""
    if not hasattr(a, "dtype"):
        a = xp.asarray(a, dtype=b.dtype, device=b.device)
    if not hasattr(b, "dtype"):
        b = xp.asarray(b, dtype=a.dtype, device=a.device)
    return a, b

# ============================================================================================
# Rows: modified Bessel functions of the first kind
# ============================================================================================


@defop("i0", promote="float", self="grad * special_i1(self)", jvp="self_t * special_i1(self)")
def i0_op(xp, x):
    return _real_kernel(xp, "i0_vml_cpu", _bessel_i, x, order=0, scaled=False)


@defop("special_i0e", node="SpecialI0EBackward0", promote="float",
       self="grad * (special_i1e(self) - sgn(self) * result)", jvp="self_t * (special_i1e(self) - sgn(self) * result)")
def i0e_op(xp, x):
    return _real_kernel(xp, "i0e_cpu", _bessel_i, x, order=0, scaled=True)


@defop("special_i1", promote="float", self="bessel_i1_backward(grad, self, result, False)",
       jvp="bessel_i1_backward(self_t, self, result, False)")
def i1_op(xp, x):
    return _real_kernel(xp, "i1_cpu", _bessel_i, x, order=1, scaled=False)


@defop("special_i1e", node="SpecialI1EBackward0", promote="float", self="bessel_i1_backward(grad, self, result, True)",
       jvp="bessel_i1_backward(self_t, self, result, True)")
def i1e_op(xp, x):
    return _real_kernel(xp, "i1e_cpu", _bessel_i, x, order=1, scaled=True)


def bessel_i1_backward(grad: Tensor, self: Tensor, result: Tensor, scaled: bool) -> Tensor:
    """d i1 = i0(x) - i1(x) / x, d i1e = i0e(x) - i1e(x) (sgn(x) + 1 / x), and 1/2 at x = 0; as torch, x
    is replaced by eps where |x| <= eps before dividing, so that no NaN reaches a second derivative."""
    from .pointwise import where

    eps = D.finfo(self.dtype).eps
    not_tiny = self.abs() > eps
    safe = where(not_tiny, self, eps)
    if scaled:
        slope = apply(i0e_op, (safe,)) - result * (safe.sgn() + safe.reciprocal())
    else:
        slope = apply(i0_op, (safe,)) - result * safe.reciprocal()
    return grad * where(not_tiny, slope, 0.5)


# ============================================================================================
# Rows: the normal distribution, entropy, xlog1py, zeta, sinc, mvlgamma
# ============================================================================================


@defop("special_ndtri", promote="float", self="grad * math.sqrt(2 * math.pi) * exp(result * result / 2)",
       jvp="self_t * math.sqrt(2 * math.pi) * exp(result * result / 2)")
def ndtri_op(xp, x):
    return _real_kernel(xp, "ndtri_cpu", _ndtri, x)


@defop("special_log_ndtr", promote="float",
       self="grad / math.sqrt(2 * math.pi) * exp(-(result + self * self / 2))",
       jvp="self_t / math.sqrt(2 * math.pi) * exp(-(result + self * self / 2))")
def log_ndtr_op(xp, x):
    return _real_kernel(xp, "log_ndtr_cpu", _log_ndtr, x)


@defop("special_erfcx", promote="float", self="grad * (2 * self * result - 2 / math.sqrt(math.pi))",
       jvp="self_t * (2 * self * result - 2 / math.sqrt(math.pi))")
def erfcx_op(xp, x):
    return _real_kernel(xp, "erfcx_cpu", _erfcx, x)


@defop("special_entr", promote="float", self="grad * -(1 + log(self))", jvp="self_t * -(1 + log(self))")
def entr_op(xp, x):
    return _real_kernel(xp, "entr_cpu", _entr, x)


@defop("special_xlog1py", node="SpecialXlog1PyBackward0", inputs=("self", "other"), promote="float",
       self="where((self == 0) & (other <= -1), 0, special_xlog1py(grad, other))", other="grad * self / (other + 1)",
       jvp="where((self == 0) & (other <= -1), 0, special_xlog1py(self_t, other)) + other_t * self / (other + 1)")
def xlog1py_op(xp, x, y):
    return _real_kernel(xp, "xlog1py_cpu", _xlog1py, x, y)


xlog1py_scalar_self = xlog1py_op.alias("special_xlog1py_scalar_self", "SpecialXlog1PyBackward1")
xlog1py_scalar_other = xlog1py_op.alias("special_xlog1py_scalar_other", "SpecialXlog1PyBackward2")


@defop("special_zeta", inputs=("self", "other"), promote="float", self="not_implemented_error('zeta')",
       other="grad * -self * special_zeta(self + 1, other)", jvp="other_t * -self * special_zeta(self + 1, other)")
def zeta_op(xp, x, q):
    return _real_kernel(xp, "zeta_cpu", _hurwitz_zeta, x, q)


zeta_scalar_self = zeta_op.alias("special_zeta_scalar_self", "SpecialZetaBackward1")
zeta_scalar_other = zeta_op.alias("special_zeta_scalar_other", "SpecialZetaBackward2")


@defop("sinc", promote="float", self="sinc_backward(grad, self)", jvp="conj(sinc_backward(conj(self_t), self))")
def sinc_op(xp, x):
    with np.errstate(all="ignore"):
        pix = x * math.pi
        one = xp.ones((), dtype=x.dtype, device=x.device)
        return A.astype(xp, xp.where(x == 0, one, xp.sin(pix) / pix), x.dtype, copy=False)


@defop("mvlgamma", params=("p",), promote="float", self="grad * mvlgamma_digamma(self, p)",
       jvp="self_t * mvlgamma_digamma(self, p)")
def mvlgamma_op(xp, x, p):
    shifts = xp.arange(p, dtype=x.dtype, device=x.device) / 2
    terms = lgamma.forward(xp, x[..., None] - shifts)
    return A.astype(xp, A.reduce(xp, "sum", terms, -1) + p * (p - 1) / 4 * math.log(math.pi), x.dtype, copy=False)


def sinc_backward(grad: Tensor, self: Tensor) -> Tensor:
    """d sinc(x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2), and 0 at x = 0 (torch's formula)."""
    from .pointwise import cos, sin, where

    pix = self * math.pi
    square = self * self * math.pi
    return where(square == 0, 0, grad * conj((pix * cos(pix) - sin(pix)) / square))


def mvlgamma_digamma(self: Tensor, p: int) -> Tensor:
    """sum_j digamma(self - j / 2) over j < p: the derivative of mvlgamma."""
    shifts = arange(p, dtype=self.dtype, device=self.device) / 2
    return digamma(self.unsqueeze(-1) - shifts).sum(-1)


# ============================================================================================
# Rows without derivatives (torch marks them non-differentiable)
# ============================================================================================


def _forward_only(name: str, kernel: Callable, **kwargs) -> Callable:
    """A row with no VJP: float promotion, torch's error for complex inputs, the kernel in float64."""
    def forward(xp, x):
        return _real_kernel(xp, name + "_cpu", kernel, x, **kwargs)

    forward.__name__ = name
    return defop("special_" + name, promote="float")(forward)


# Note [Bessel kernels]
# I0, I1 (and the scaled e^-|x| forms): the power series sum (x^2/4)^k / (k! (k+v)!) (x/2)^v for
# |x| <= 25 (positive terms, no cancellation), Hankel's asymptotic series e^x / sqrt(2 pi x)
# sum (-1)^k a_k(v) / x^k beyond (its smallest term, near k = 2x, is below 1e-19 there).
# J0, J1, Y0, Y1: for |x| < 25 Miller's backward recurrence J_{k-1} = (2k / x) J_k - J_{k+1} from
# k = 80, normalised by J0 + 2 (J2 + J4 + ...) = 1 and rescaled against overflow; Y0 from Neumann's
# series (pi/2) Y0 = (ln(x/2) + gamma) J0 - 2 sum_k (-1)^k J_2k / k and Y1 = -Y0' from the same
# J_k. Beyond, Hankel's expansions J = sqrt(2/(pi x)) (P cos chi - Q sin chi), Y = ... (P sin chi
# + Q cos chi), with cos chi and sin chi from cos x and sin x (NumPy reduces large x exactly).
# K0, K1: the series K0 = -(ln(x/2) + gamma) I0 + sum H_k (x^2/4)^k / k!^2 and its K1 form for
# x <= 2; Steed's continued fraction (CF2, Thompson and Barnett) beyond.
# Against torch in float64 on [-50, 50] (and up to 1e10 for the asymptotic forms) the relative
# error is below 1e-13 away from zeros (absolute below 1e-15 near the zeros of J and Y).

_SERIES_TERMS = 90
_ASYMPTOTIC_TERMS = 30
_I_SPLIT = 25.0
_J_SPLIT = 25.0
_MILLER_START = 80
_J_TINY = 1e-6


def _hankel_coefficients(order: int, count: int) -> list[float]:
    """a_k(v) = prod_{j <= k} (4 v^2 - (2j - 1)^2) / (k! 8^k), k = 0 .. count - 1."""
    out, a = [], 1.0
    for k in range(count):
        out.append(a)
        a *= (4 * order * order - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return out


def _bessel_i(xp, x, order: int, scaled: bool):
    a = xp.abs(x)
    out = xp.empty_like(a)
    near = a <= _I_SPLIT
    v = a[near]
    t = v * v / 4
    term = xp.ones_like(v) if order == 0 else v / 2
    total = A.copy(xp, term)
    for k in range(1, _SERIES_TERMS):
        term = term * t / (k * (k + order))
        total = total + term
    out[near] = total * xp.exp(-v) if scaled else total
    v = a[~near]
    series = xp.zeros_like(v)
    for k, c in reversed(list(enumerate(_hankel_coefficients(order, _ASYMPTOTIC_TERMS)))):
        series = series * (1 / v) + (-1) ** k * c
    lead = -0.5 * xp.log(2 * math.pi * v)
    out[~near] = xp.exp(lead) * series if scaled else xp.exp(v + lead) * series
    return xp.copysign(out, x) if order == 1 else out


def _bessel_jy(xp, x, order: int, second_kind: bool):
    """J_order (second_kind False) or Y_order of x (Note [Bessel kernels])."""
    a = xp.abs(x)
    out = xp.empty_like(a)
    tiny = a < _J_TINY
    v = a[tiny]
    log_term = xp.log(v / 2) + _EULER_GAMMA
    j0, j1 = 1 - v * v / 4, v / 2 - v ** 3 / 16
    if second_kind:  # the leading terms of the series of Y0 and Y1 (A&S 9.1.13, 9.1.11)
        out[tiny] = 2 / math.pi * (log_term * j0 + v * v / 4) if order == 0 else \
            -2 / (math.pi * v) + v / math.pi * (log_term - 0.5)
    else:
        out[tiny] = j0 if order == 0 else j1
    near = ~tiny & (a < _J_SPLIT)
    out[near] = _miller(xp, a[near], order, second_kind)
    far = a >= _J_SPLIT
    out[far] = _hankel(xp, a[far], order, second_kind)
    if second_kind:
        out[a == 0] = -xp.inf
        out[x < 0] = xp.nan
    elif order == 1:
        out = xp.where(xp.signbit(x), -out, out)
    out[~xp.isfinite(x)] = xp.nan  # torch's value at +-inf
    return out


def _miller(xp, a, order: int, second_kind: bool):
    j_next = xp.zeros_like(a)
    j = xp.full_like(a, 1e-30)
    norm = xp.zeros_like(a)        # J0 + 2 (J2 + J4 + ...), unnormalised
    even = xp.zeros_like(a)        # sum_k (-1)^k J_2k / k (Y0)
    odd = xp.zeros_like(a)         # sum_k (-1)^k (J_2k-1 - J_2k+1) / k (Y1)
    j1 = None
    for k in range(_MILLER_START, 0, -1):
        j_prev = (2 * k / a) * j - j_next  # J_{k-1}
        j_next, j = j, j_prev
        m = k - 1  # j is now J_m, j_next J_{m+1}
        if m > 0 and m % 2 == 0:
            norm = norm + 2 * j
            even = even + (-1) ** (m // 2) * j / (m // 2)
        if m % 2 == 1:  # J_m with m = 2k - 1 enters term k = (m + 1) / 2 with +, term k - 1 with -
            kk = (m + 1) // 2
            odd = odd + (-1) ** kk * j / kk
            if kk > 1:
                odd = odd - (-1) ** (kk - 1) * j / (kk - 1)
        if m == 1:
            j1 = j
        big = xp.abs(j) > 1e200
        if A.reduce(xp, "any", big):
            scale = xp.where(big, 1e-200, 1.0)
            j, j_next, norm, even, odd = j * scale, j_next * scale, norm * scale, even * scale, odd * scale
            if j1 is not None:
                j1 = j1 * scale
    j0 = j
    norm = norm + j0
    j0, j1, even, odd = j0 / norm, j1 / norm, even / norm, odd / norm
    if not second_kind:
        return j0 if order == 0 else j1
    log_term = xp.log(a / 2) + _EULER_GAMMA
    if order == 0:
        return 2 / math.pi * (log_term * j0 - 2 * even)
    return 2 / math.pi * (-j0 / a + log_term * j1 + odd)


def _hankel(xp, a, order: int, second_kind: bool):
    coefficients = _hankel_coefficients(order, _ASYMPTOTIC_TERMS)
    inv = 1 / a
    p = xp.zeros_like(a)
    q = xp.zeros_like(a)
    for k in range(_ASYMPTOTIC_TERMS - 1, -1, -1):
        sign = (-1) ** (k // 2)
        if k % 2 == 0:
            p = p * inv * inv + sign * coefficients[k]
        else:
            q = q * inv * inv + sign * coefficients[k]
    q = q * inv
    c, s = xp.cos(a), xp.sin(a)
    root = math.sqrt(0.5)
    if order == 0:  # chi = x - pi/4
        cos_chi, sin_chi = (c + s) * root, (s - c) * root
    else:           # chi = x - 3 pi/4
        cos_chi, sin_chi = (s - c) * root, -(s + c) * root
    scale = xp.sqrt(2 / (math.pi * a))
    if second_kind:
        return scale * (p * sin_chi + q * cos_chi)
    return scale * (p * cos_chi - q * sin_chi)


_K_SPLIT = 2.0
_K_SERIES_TERMS = 30
_K_FRACTION_STEPS = 200


def _bessel_k(xp, x, order: int, scaled: bool):
    out = xp.full_like(x, xp.nan)
    out[x == 0] = xp.inf
    near = (x > 0) & (x <= _K_SPLIT)
    v = x[near]
    t = v * v / 4
    log_half = xp.log(v / 2)
    if order == 0:
        term = xp.ones_like(v)
        harmonic, total = 0.0, xp.zeros_like(v)
        for k in range(1, _K_SERIES_TERMS):
            term = term * t / (k * k)
            harmonic += 1 / k
            total = total + harmonic * term
        k_near = -(log_half + _EULER_GAMMA) * _bessel_i(xp, v, 0, False) + total
    else:
        term = xp.ones_like(v)
        psi_sum = -2 * _EULER_GAMMA + 1.0  # psi(k + 1) + psi(k + 2) at k = 0
        total = psi_sum * term
        harmonic = 1.0  # H_{k+1}
        for k in range(1, _K_SERIES_TERMS):
            term = term * t / (k * (k + 1))
            previous = harmonic
            harmonic += 1 / (k + 1)
            total = total + (-2 * _EULER_GAMMA + previous + harmonic) * term
        k_near = 1 / v + log_half * _bessel_i(xp, v, 1, False) - v / 4 * total
    out[near] = k_near * xp.exp(v) if scaled else k_near
    far = (x > _K_SPLIT) & (x < xp.inf)
    k_mu, k_next = _steed_k(xp, x[far], 0.0, scaled)
    out[far] = k_mu if order == 0 else k_next
    out[x == xp.inf] = 0.0
    return out


def _steed_k(xp, x, mu: float, scaled: bool):
    """K_mu and K_mu+1 for x > 2 and |mu| <= 1/2 by Steed's continued fraction CF2 (Thompson and Barnett's
    form, as Numerical Recipes' bessik writes it)."""
    b = 2 * (1 + x)
    d = 1 / b
    h = delh = d
    q1, q2 = xp.zeros_like(x), xp.ones_like(x)
    a1 = 0.25 - mu * mu
    q = xp.full_like(x, a1)
    c = a1
    a = -a1
    s = 1 + q * delh
    active = xp.full(x.shape, True, device=x.device)  # each element stops once its terms are below its sum's rounding
    for i in range(1, _K_FRACTION_STEPS):
        a -= 2 * i
        c = -a * c / (i + 1.0)
        q_new = (q1 - b * q2) / a
        q1, q2 = q2, q_new
        q = q + c * q_new
        b = b + 2
        d = 1 / (b + a * d)
        delh = (b * d - 1) * delh
        step = q * delh
        h = xp.where(active, h + delh, h)
        s = xp.where(active, s + step, s)
        active &= ~(xp.abs(step) <= _MACHEP * xp.abs(s))
        if not A.reduce(xp, "any", active):
            break
    k_mu = xp.sqrt(math.pi / (2 * x)) / s
    if not scaled:
        k_mu = k_mu * xp.exp(-x)
    return k_mu, k_mu * (mu + x + 0.5 - a1 * h) / x


def _spherical_j0(xp, x):
    """sin(x) / x; its Taylor series sum (-x^2)^k / (2k + 1)! for |x| < 1/2."""
    small = xp.abs(x) < 0.5
    x2 = x * x
    term = total = xp.ones_like(x)
    for k in range(1, 10):
        term = term * -x2 / ((2 * k) * (2 * k + 1))
        total = total + term
    out = xp.where(small, total, xp.sin(x) / xp.where(small, 1.0, x))
    return xp.where(xp.isinf(x), 0.0, out)


# Note [Airy kernel]
# Ai(x) = Ai(0) f(x) + Ai'(0) g(x) by its Maclaurin series (f, g the solutions of y'' = x y with f(0) = 1,
# g'(0) = 1) for -5 <= x < 3^(2/3); (1/pi) sqrt(x/3) K_1/3(zeta), zeta = 2/3 x^(3/2), by Steed's continued
# fraction beyond (zeta >= 2); for x <= -10 the asymptotic expansions of Ai(-z) and Ai'(-z) (DLMF 9.7.9,
# 9.7.10), whose smallest term is below 1e-17 there; between -10 and -5, ten Taylor steps of y'' = x y
# from Ai(-10) and Ai'(-10). Against mpmath the absolute error is below 1e-13 (torch's own kernel is off
# by up to 3e-6 on [-5, -2]).

_AI_0 = 0.355028053887817239260
_AI_PRIME_0 = -0.258819403792806798405
_AIRY_SERIES_TERMS = 40
_AIRY_ASYMPTOTIC_TERMS = 30
_AIRY_TAYLOR_TERMS = 40
_AIRY_TAYLOR_STEPS = 10
_AIRY_FAR = -10.0
_AIRY_SERIES_LOW = -5.0


def _airy_asymptotic(xp, z):
    """Ai(-z) and Ai'(-z) for large z (DLMF 9.7.9, 9.7.10)."""
    zeta = 2 / 3 * z ** 1.5
    u = _airy_coefficients(_AIRY_ASYMPTOTIC_TERMS)
    v = [-(6 * k + 1) / (6 * k - 1) * c for k, c in enumerate(u)]
    inv = 1 / zeta
    sums = []
    for coefficients in (u, v):
        even = xp.zeros_like(z)
        odd = xp.zeros_like(z)
        for k in range(len(coefficients) - 1, -1, -1):
            sign = (-1) ** (k // 2)
            if k % 2 == 0:
                even = even * inv * inv + sign * coefficients[k]
            else:
                odd = odd * inv * inv + sign * coefficients[k]
        sums.append((even, odd * inv))
    (u_even, u_odd), (v_even, v_odd) = sums
    phase = zeta - math.pi / 4
    c, s = xp.cos(phase), xp.sin(phase)
    ai = (c * u_even + s * u_odd) / (math.sqrt(math.pi) * z ** 0.25)
    ai_prime = z ** 0.25 / math.sqrt(math.pi) * (s * v_even - c * v_odd)
    return ai, ai_prime


def _airy_coefficients(count: int) -> list[float]:
    """u_k = Gamma(3k + 1/2) / (54^k k! Gamma(k + 1/2)), by the ratio u_k / u_{k-1} =
    (3k - 1/2)(3k - 3/2)(3k - 5/2) / (54 k (k - 1/2))."""
    out = [1.0]
    for k in range(1, count):
        out.append(out[-1] * (3 * k - 0.5) * (3 * k - 1.5) * (3 * k - 2.5) / (54 * k * (k - 0.5)))
    return out


def _airy_series(xp, x):
    cube = x * x * x
    f_term = xp.ones_like(x)
    g_term = A.copy(xp, x)
    f, g = A.copy(xp, f_term), A.copy(xp, g_term)
    for k in range(1, _AIRY_SERIES_TERMS):
        f_term = f_term * cube / ((3 * k) * (3 * k - 1))
        g_term = g_term * cube / ((3 * k + 1) * (3 * k))
        f, g = f + f_term, g + g_term
    return _AI_0 * f + _AI_PRIME_0 * g


def _airy_taylor(xp, x0, y, dy, h):
    """y(x0 + h) for y'' = x y from y(x0), y'(x0): the Taylor series a_{k+2} = (x0 a_k + a_{k-1}) / ((k+2)(k+1))."""
    coefficients = [y, dy, x0 * y / 2]
    for k in range(1, _AIRY_TAYLOR_TERMS):
        coefficients.append((x0 * coefficients[k] + coefficients[k - 1]) / ((k + 2) * (k + 1)))
    value = xp.zeros_like(h)
    slope = xp.zeros_like(h)
    for k in range(len(coefficients) - 1, -1, -1):
        value = value * h + coefficients[k]
        if k:
            slope = slope * h + k * coefficients[k]
    return value, slope


def _airy_ai(xp, x):
    out = xp.full_like(x, xp.nan)
    split = 3 ** (2 / 3)
    series = (x >= _AIRY_SERIES_LOW) & (x < split)
    out[series] = _airy_series(xp, x[series])
    right = (x >= split) & xp.isfinite(x)
    v = x[right]
    out[right] = xp.sqrt(v / 3) / math.pi * _steed_k(xp, 2 / 3 * v ** 1.5, 1 / 3, False)[0]
    far = (x <= _AIRY_FAR) & xp.isfinite(x)
    out[far] = _airy_asymptotic(xp, -x[far])[0]
    middle = (x > _AIRY_FAR) & (x < _AIRY_SERIES_LOW)
    if A.reduce(xp, "any", middle):
        target = x[middle]
        start_value, start_slope = _airy_asymptotic(xp, xp.asarray([-_AIRY_FAR], device=x.device))
        y = xp.full_like(target, float(start_value[0]))
        dy = xp.full_like(target, float(start_slope[0]))
        h = (target - _AIRY_FAR) / _AIRY_TAYLOR_STEPS
        position = xp.full_like(target, _AIRY_FAR)
        for _ in range(_AIRY_TAYLOR_STEPS):
            y, dy = _airy_taylor(xp, position, y, dy, h)
            position = position + h
        out[middle] = y
    return out


airy_ai_op = _forward_only("airy_ai", _airy_ai)
bessel_j0_op = _forward_only("bessel_j0", _bessel_jy, order=0, second_kind=False)
bessel_j1_op = _forward_only("bessel_j1", _bessel_jy, order=1, second_kind=False)
bessel_y0_op = _forward_only("bessel_y0", _bessel_jy, order=0, second_kind=True)
bessel_y1_op = _forward_only("bessel_y1", _bessel_jy, order=1, second_kind=True)
modified_bessel_i0_op = _forward_only("modified_bessel_i0", _bessel_i, order=0, scaled=False)
modified_bessel_i1_op = _forward_only("modified_bessel_i1", _bessel_i, order=1, scaled=False)
modified_bessel_k0_op = _forward_only("modified_bessel_k0", _bessel_k, order=0, scaled=False)
modified_bessel_k1_op = _forward_only("modified_bessel_k1", _bessel_k, order=1, scaled=False)
scaled_modified_bessel_k0_op = _forward_only("scaled_modified_bessel_k0", _bessel_k, order=0, scaled=True)
scaled_modified_bessel_k1_op = _forward_only("scaled_modified_bessel_k1", _bessel_k, order=1, scaled=True)
spherical_bessel_j0_op = _forward_only("spherical_bessel_j0", _spherical_j0)


# Note [normal kernels]
# erfcx(x) = exp(x^2) erfc(x) is pointwise's `_erfcx` (fdlibm's erfc without its exp(-x^2) factor).
# log_ndtr as torch computes it: log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 for x < -1, else
# log1p(-erfc(x / sqrt 2) / 2). ndtri: Abramowitz and Stegun's 26.2.23 guess (error < 4.5e-4) in
# the lower tail q = min(p, 1 - p), then Newton steps on log_ndtr(x) = log(q), which keep their
# relative accuracy down to q = 5e-324; the sign is flipped for p > 1/2.

_NDTRI_NEWTON_STEPS = 4


def _log_ndtr(xp, x):
    t = x / math.sqrt(2)
    low = x < -1
    out = xp.empty_like(x)
    tl = t[low]
    out[low] = xp.log(_erfcx(xp, -tl) / 2) - tl * tl
    out[~low] = xp.log1p(-erfc.forward(xp, t[~low]) / 2)
    return out


def _ndtri(xp, p):
    q = xp.minimum(p, 1 - p)
    inside = (q > 0) & (p == p)
    qi = q[inside]
    t = xp.sqrt(-2 * xp.log(qi))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))
    target = xp.log(qi)
    for _ in range(_NDTRI_NEWTON_STEPS):
        log_cdf = _log_ndtr(xp, x)
        slope = xp.exp(-x * x / 2 - log_cdf) / _SQRT_2PI  # d log ndtr / dx
        x = x - (log_cdf - target) / slope
    out = xp.full_like(p, xp.nan)
    out[inside] = xp.where(p[inside] > 0.5, -x, x)
    out[p == 0] = -xp.inf
    out[p == 1] = xp.inf
    return out


def _entr(xp, x):
    safe = xp.where(x > 0, x, 1.0)
    return xp.where(x > 0, -x * xp.log(safe), xp.where(x == 0, 0.0, xp.where(x < 0, -xp.inf, x)))


def _xlog1py(xp, x, y):
    return xp.where(y != y, y, xp.where(x == 0, 0.0, x * xp.log1p(y)))


# The Hurwitz zeta (Cephes's algorithm, written vectorised): Euler-Maclaurin summation after at
# least 9 direct terms and q + n > 9, with the coefficients (2j)! / B_2j, each element stopping when
# its next term is below the rounding of its sum (torch's kernel, without Cephes's q > 1e8 shortcut).
_BERNOULLI_2J = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
                 -174611 / 330, 854513 / 138, -236364091 / 2730)
_ZETA_COEFFICIENTS = tuple(math.factorial(2 * j) / b for j, b in enumerate(_BERNOULLI_2J, start=1))


def _hurwitz_zeta(xp, x, q):
    out = xp.full_like(x, xp.nan)
    done = (x < 1) | ((q <= 0) & (q != xp.floor(q)) & (x != xp.floor(x)))
    poles = (x == 1) | ((q <= 0) & (q == xp.floor(q)))
    out[poles & ~(x < 1)] = xp.inf
    done |= poles
    work = ~done
    x, q = x[work], q[work]
    s = q ** -x
    a = A.copy(xp, q)
    b = xp.zeros_like(q)
    finished = xp.full(q.shape, False, device=q.device)
    i = 0
    while True:
        more = ~finished & ((i < 9) | (a <= 9))
        if not A.reduce(xp, "any", more):
            break
        i += 1
        a = xp.where(more, a + 1, a)
        b = xp.where(more, a ** -x, b)
        s = xp.where(more, s + b, s)
        finished |= more & (xp.abs(b / s) < _MACHEP)
    tail = ~finished
    w = a
    s = xp.where(tail, s + b * w / (x - 1) - 0.5 * b, s)
    rising = xp.ones_like(x)
    k = 0.0
    for coefficient in _ZETA_COEFFICIENTS:
        rising = rising * (x + k)
        b = b / w
        term = rising * b / coefficient
        s = xp.where(tail, s + term, s)
        tail = tail & ~(xp.abs(term / s) < _MACHEP)
        k += 1
        rising = rising * (x + k)
        b = b / w
        k += 1
    out[work] = s
    return out


# ============================================================================================
# Rows without derivatives: the orthogonal polynomials
# ============================================================================================
# Note [orthogonal polynomials]
# torch evaluates each polynomial at degree n = int(n) (n < 0 gives 0) by its three-term recurrence,
# with closed forms at x = +-1 and, for |x| < 1 past a degree (6 for T, 8 for U, V, W), the
# trigonometric form (T_n = cos(n acos x), ...). The same here, vectorised: the recurrence runs to
# the largest degree present, each element keeping the value at its own n. The shifted Chebyshev
# polynomials are the plain ones at 2x - 1.


def _recurrence(xp, x, n, first, step):
    """p_n(x) for p_0 = 1, p_1 = first(x), p_{k+1} = step(k, x, p_k, p_{k-1}); n an integer array."""
    previous, current = xp.ones_like(x), first(x)
    out = xp.where(n == 0, previous, current)
    top = int(A.reduce(xp, "max", n)) if math.prod(n.shape) else 0
    for k in range(1, top):
        previous, current = current, step(k, x, current, previous)
        out = xp.where(n == k + 1, current, out)
    return out


def _chebyshev(xp, x, n, kind: str):
    """T, U, V or W of the first to fourth kinds, with torch's special cases (Note [orthogonal polynomials])."""
    twice = {"t": 1.0, "u": 2.0, "v": 2.0, "w": 2.0}[kind]
    offset = {"t": 0.0, "u": 0.0, "v": -1.0, "w": 1.0}[kind]
    n = xp.trunc(xp.where(xp.isfinite(n), n, -1))
    out = _recurrence(xp, x, n, lambda v: twice * v + offset, lambda k, v, p, q: (v + v) * p - q)
    odd = n % 2 == 1
    if kind == "t":
        at_one, at_minus_one, trig_from = xp.ones_like(x), xp.where(odd, -1.0, xp.ones_like(x)), 6
    elif kind == "u":
        at_one, at_minus_one, trig_from = n + 1.0, xp.where(odd, -(n + 1.0), n + 1.0), 8
    elif kind == "v":
        at_one, at_minus_one, trig_from = xp.ones_like(x), xp.where(odd, -(2 * n + 1.0), 2 * n + 1.0), 8
    else:
        at_one, at_minus_one, trig_from = 2 * n + 1.0, xp.where(odd, -1.0, xp.ones_like(x)), 8
    inside = (n > trig_from) & (xp.abs(x) < 1)
    theta = xp.acos(xp.where(inside, x, 0.0))
    if kind == "t":
        trig = xp.cos(n * theta)
    elif kind == "u":
        trig = xp.where(xp.sin(theta) != 0, xp.sin((n + 1) * theta) / xp.sin(theta),
                        (n + 1) * xp.cos((n + 1) * theta) / x)
    elif kind == "v":
        trig = xp.where(xp.sin(theta / 2) != 1, xp.cos((n + 0.5) * theta) / xp.cos(theta / 2), at_minus_one)
    else:
        trig = xp.where(xp.cos(theta / 2) != 1, xp.sin((n + 0.5) * theta) / xp.sin(theta / 2),
                        xp.where(x > 0, at_one, at_minus_one))
    out = xp.where(inside, trig, out)
    out = xp.where(x == 1, at_one, xp.where(x == -1, at_minus_one, out))
    return xp.where(n < 0, 0.0, out)


def _shifted_chebyshev(xp, x, n, kind: str):
    return _chebyshev(xp, x + x - 1, n, kind)


def _hermite(xp, x, n, physicists: bool):
    n = xp.trunc(xp.where(xp.isfinite(n), n, -1))
    if physicists:  # H_{k+1} = 2x H_k - 2k H_{k-1}
        out = _recurrence(xp, x, n, lambda v: v + v, lambda k, v, p, q: (v + v) * p - 2 * k * q)
    else:           # He_{k+1} = x He_k - k He_{k-1}
        out = _recurrence(xp, x, n, lambda v: v, lambda k, v, p, q: v * p - k * q)
    return xp.where(n < 0, 0.0, out)


def _laguerre(xp, x, n):
    n = xp.trunc(xp.where(xp.isfinite(n), n, -1))
    out = _recurrence(xp, x, n, lambda v: 1 - v, lambda k, v, p, q: ((2 * k + 1 - v) * p - k * q) / (k + 1))
    return xp.where(n < 0, 0.0, xp.where(x == 0, 1.0, out))


def _legendre(xp, x, n):
    n = xp.trunc(xp.where(xp.isfinite(n), n, -1))
    out = _recurrence(xp, x, n, lambda v: v, lambda k, v, p, q: ((2 * k + 1) * v * p - k * q) / (k + 1))
    at_minus_one = xp.where(n % 2 == 1, -1.0, xp.ones_like(x))
    out = xp.where(x == 1, 1.0, xp.where(x == -1, at_minus_one, out))
    return xp.where(n < 0, 0.0, out)


def _polynomial_row(name: str, kernel: Callable, **kwargs):
    """A row (x, n) with no VJP for one polynomial family (torch marks both inputs non-differentiable)."""
    def forward(xp, x, n):
        return _real_kernel(xp, name + "_cpu", kernel, x, n, **kwargs)

    forward.__name__ = name
    return defop("special_" + name, inputs=("x", "n"), promote="float")(forward)


_POLYNOMIALS = {
    **{f"chebyshev_polynomial_{k}": _polynomial_row(f"chebyshev_polynomial_{k}", _chebyshev, kind=k) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _polynomial_row(f"shifted_chebyshev_polynomial_{k}", _shifted_chebyshev,
                                                             kind=k) for k in "tuvw"},
    "hermite_polynomial_h": _polynomial_row("hermite_polynomial_h", _hermite, physicists=True),
    "hermite_polynomial_he": _polynomial_row("hermite_polynomial_he", _hermite, physicists=False),
    "laguerre_polynomial_l": _polynomial_row("laguerre_polynomial_l", _laguerre),
    "legendre_polynomial_p": _polynomial_row("legendre_polynomial_p", _legendre),
}


# ============================================================================================
# Public functions
# ============================================================================================


def _operand_pair(input: Tensor | float, other: Tensor | float, both, scalar_self, scalar_other) -> Tensor:
    """The overload torch picks for a binary function of tensors or Python numbers."""
    if not isinstance(input, Tensor):
        return apply(scalar_self, (input, other))
    return apply(both if isinstance(other, Tensor) else scalar_other, (input, other))


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return apply(i0_op, (input,))


def special_i0e(input: Tensor) -> Tensor:
    """i0(x) * exp(-|x|), the exponentially scaled i0."""
    return apply(i0e_op, (input,))


def special_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return apply(i1_op, (input,))


def special_i1e(input: Tensor) -> Tensor:
    """i1(x) * exp(-|x|)."""
    return apply(i1e_op, (input,))


def special_ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, composed as torch composes it (its Scalar
    overloads of mul and add: MulBackward1, AddBackward1)."""
    from .pointwise import erf

    scaled = mul_by_number(input, 1 / math.sqrt(2))
    return mul_by_number(apply(add_scalar, (erf(scaled),), (1, 1)), 0.5)


def special_ndtri(input: Tensor) -> Tensor:
    """The inverse of ndtr: the x with ndtr(x) = p."""
    return apply(ndtri_op, (input,))


def special_log_ndtr(input: Tensor) -> Tensor:
    """log(ndtr(x)), accurate far into the lower tail."""
    return apply(log_ndtr_op, (input,))


def special_erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return apply(erfcx_op, (input,))


def special_entr(input: Tensor) -> Tensor:
    """Elementwise entropy -x log x (0 at 0, -inf below)."""
    return apply(entr_op, (input,))


def special_xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log1p(other), and 0 where input == 0 (unless other is NaN)."""
    return _operand_pair(input, other, xlog1py_op, xlog1py_scalar_self, xlog1py_scalar_other)


def special_zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function sum_k (other + k)^-input."""
    return _operand_pair(input, other, zeta_op, zeta_scalar_self, zeta_scalar_other)


def sinc(input: Tensor) -> Tensor:
    """The normalised sinc, sin(pi x) / (pi x), and 1 at 0."""
    return apply(sinc_op, (input,))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) + p (p - 1) / 4 log pi."""
    if input.dtype is D.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return apply(mvlgamma_op, (input,), (int(p),))


def special_multigammaln(input: Tensor, p: int) -> Tensor:
    """torch.special's name for mvlgamma."""
    return mvlgamma(input, p)


def special_round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """torch.special.round: round with decimals always given (RoundBackward1)."""
    from . import pointwise

    return pointwise.round(input, decimals=decimals)


def _unary(op, doc: str) -> Callable:
    def function(input: Tensor) -> Tensor:
        return apply(op, (input,))

    function.__name__ = function.__qualname__ = op.name
    function.__doc__ = doc
    return function


def _binary(op, doc: str) -> Callable:
    def function(input: Tensor | float, n: Tensor | float) -> Tensor:
        x, degree = (t if isinstance(t, Tensor) else tensor(t) for t in (input, n))
        return apply(op, (x, degree))

    function.__name__ = function.__qualname__ = op.name
    function.__doc__ = doc
    return function


for _op in (airy_ai_op, bessel_j0_op, bessel_j1_op, bessel_y0_op, bessel_y1_op, modified_bessel_i0_op,
            modified_bessel_i1_op,
            modified_bessel_k0_op, modified_bessel_k1_op, scaled_modified_bessel_k0_op, scaled_modified_bessel_k1_op,
            spherical_bessel_j0_op):
    globals()[_op.name] = _unary(_op, f"torch.special.{_op.name[len('special_'):]} (no derivative, as in torch).")
for _name, _op in _POLYNOMIALS.items():
    globals()["special_" + _name] = _binary(_op, f"torch.special.{_name}(input, n) (no derivative, as in torch).")
del _name, _op

# torch.special's names of functions whose rows live in other families
SPECIAL_ALIASES = {"digamma": "digamma", "psi": "digamma", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv",
                   "exp2": "exp2", "expm1": "expm1", "log1p": "log1p", "expit": "sigmoid", "gammaln": "lgamma",
                   "gammainc": "igamma", "gammaincc": "igammac", "logit": "logit", "logsumexp": "logsumexp",
                   "polygamma": "polygamma", "softmax": "softmax", "log_softmax": "log_softmax",
                   "xlogy": "xlogy", "i0": "i0", "sinc": "sinc", "multigammaln": "mvlgamma"}
SPECIAL = sorted(set(SPECIAL_ALIASES) | {n[len("special_"):] for n in list(globals()) if n.startswith("special_")
                                         and callable(globals()[n])})

__all__ = ["i0", "mvlgamma", "sinc"]
METHODS = ["i0", "mvlgamma", "sinc"]
INPLACE = ["i0", "mvlgamma", "sinc"]
