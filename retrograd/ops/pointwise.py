"""Rule table: pointwise ops (OPS.md sections A and B), comparisons and logic.

Each row: `@defop(name, node=..., promote=..., <input>="VJP formula", jvp="JVP formula")` over
the NumPy forward. Formulas read `grad`, `result`, the inputs and parameters by name and are
written with `conj` so complex inputs follow torch's convention (conjugate Wirtinger, see
complex.py). The special functions NumPy lacks (erf, erfinv, lgamma, digamma, polygamma) are
computed here in NumPy (Note [special functions without SciPy]).

Where torch reaches one function through overloads with different node names (a tensor or a
Python number as `other`: RemainderBackward1 / RemainderBackward0), each overload has its row
and the public function picks one.
"""

from __future__ import annotations

import builtins
import cmath
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import full, tensor, zeros_like
from .._tensor import Tensor, argument_type_name
from .._warn import warn_once_at_user
from . import arrays as A
from .complex import conj, conj_physical, imag, real  # noqa: F401 - conj for the helpers; real/imag: Tensor.real
from .registry import Op, _broadcast_error, apply, defop, keep_index_versions, linear_backward_op, namespace

_ZERO_VJP = "zeros_like(grad)"  # step functions (floor, sign, ...): the gradient is zero, not undefined
_ZERO_JVP = "zeros_like(self_t)"
_NOT_IMPLEMENTED = "NotImplemented"  # torch's node for derivatives it does not define

# ============================================================================================
# A. Unary: sign and rounding (gradient zero)
# ============================================================================================


@defop("neg", self="-grad", jvp="-self_t")
def neg(xp, x):
    return xp.negative(x)


@defop("abs", self="grad * sgn(self)", jvp="handle_r_to_c(result, self_t * conj(sgn(self)))")
def abs(xp, x):  # noqa: A001 - torch's name
    return xp.abs(x)


@defop("sgn", self="sgn_backward(grad, self, result)", jvp="sgn_backward(self_t, self, result)")
def sgn(xp, x):
    if D.kind(x) == "c":
        mag = xp.abs(x)
        return A.astype(xp, xp.where(mag == 0, 0, x / xp.where(mag == 0, 1, mag)), x.dtype, copy=False)
    return xp.sign(x) if x.dtype != bool else A.copy(xp, x)


@defop("sign", self=_ZERO_VJP, jvp=_ZERO_JVP)
def sign(xp, x):
    if D.kind(x) == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")
    return xp.sign(x) if x.dtype != bool else A.copy(xp, x)


def _rounding(ufunc: str) -> Callable:
    """The forward of floor/ceil/trunc/round: integers pass unchanged (a copy), as in torch."""

    def forward(xp, x):
        return A.copy(xp, x) if D.kind(x) in "iub" else getattr(xp, ufunc)(x)

    return forward


floor = defop("floor", self=_ZERO_VJP, jvp=_ZERO_JVP)(_rounding("floor"))
ceil = defop("ceil", self=_ZERO_VJP, jvp=_ZERO_JVP)(_rounding("ceil"))
trunc = defop("trunc", self=_ZERO_VJP, jvp=_ZERO_JVP)(_rounding("trunc"))
fix = trunc
round_half_even = defop("round", self=_ZERO_VJP, jvp=_ZERO_JVP)(_rounding("round"))


@defop("round_decimals", node="RoundBackward1", params=("decimals",), self=_ZERO_VJP, jvp=_ZERO_JVP)
def round_decimals(xp, x, decimals):  # floats only (ops/unsigned.py refuses the others, as torch)
    if hasattr(x, "strides"):
        return xp.round(x, decimals)
    scale = 10.0 ** builtins.abs(decimals)  # as NumPy: round x * 10^d (or x / 10^-d), then scale back
    return xp.round(x * scale) / scale if decimals >= 0 else xp.round(x / scale) * scale


@defop("frac", self="grad", jvp="self_t")
def frac(xp, x):
    return x - xp.trunc(x)


# ============================================================================================
# A. Unary: exponentials, logarithms, powers
# ============================================================================================


@defop("exp", promote="float", self="grad * conj(result)", jvp="self_t * result")
def exp(xp, x):
    return xp.exp(x)


@defop("exp2", promote="float", self="grad * conj(result) * math.log(2)", jvp="self_t * result * math.log(2)")
def exp2(xp, x):
    return xp.exp2(x) if hasattr(x, "strides") else xp.pow(2.0, x)  # the standard has no exp2


@defop("deg2rad", node="Deg2RadBackward0", promote="float", self="grad * (math.pi / 180)",
       jvp="self_t * (math.pi / 180)")
def deg2rad(xp, x):
    return x * (math.pi / 180)


@defop("rad2deg", node="Rad2DegBackward0", promote="float", self="grad * (180 / math.pi)",
       jvp="self_t * (180 / math.pi)")
def rad2deg(xp, x):
    return x * (180 / math.pi)


@defop("expm1", promote="float", self="grad * conj(result + 1)", jvp="self_t * (result + 1)")
def expm1(xp, x):
    return xp.expm1(x)


@defop("log", promote="float", self="grad / conj(self)", jvp="self_t / self")
def log(xp, x):
    return xp.log(x)


# Note [float32 log2 and log10]
# torch's float32 log2 and log10 give the exact value rounded once, nearly always; NumPy's float32 loops are an ulp
# off on about half of log10's inputs and a tenth of log2's (log10(float32(1e-10)) is -10.000001, torch's -10, which
# moves it out of a histc bin starting at -10). Computed in float64 and rounded, they differ from torch's on about
# one input in ten thousand.


@defop("log2", promote="float", self="grad / conj(self * math.log(2))", jvp="self_t / (self * math.log(2))")
def log2(xp, x):
    if type(x) is np.ndarray and x.dtype == np.float32:  # Note [float32 log2 and log10]
        return np.log2(x, dtype=np.float64).astype(np.float32)
    return xp.log2(x)


@defop("log10", promote="float", self="grad / conj(self * math.log(10))", jvp="self_t / (self * math.log(10))")
def log10(xp, x):
    if type(x) is np.ndarray and x.dtype == np.float32:  # Note [float32 log2 and log10]
        return np.log10(x, dtype=np.float64).astype(np.float32)
    return xp.log10(x)


@defop("log1p", node="Log1PBackward0", promote="float", self="grad / conj(self + 1)", jvp="self_t / (self + 1)")
def log1p(xp, x):
    return xp.log1p(x)


@defop("sqrt", promote="float", self="grad / (2 * conj(result))", jvp="self_t / (2 * result)")
def sqrt(xp, x):
    return xp.sqrt(x)


@defop("rsqrt", promote="float", self="-0.5 * grad * conj(result.pow(3))", jvp="-0.5 * self_t * result.pow(3)")
def rsqrt(xp, x):
    return 1 / xp.sqrt(x)


@defop("reciprocal", promote="float", self="-grad * conj(result * result)", jvp="-self_t * result * result")
def reciprocal(xp, x):
    return xp.reciprocal(x)


# ============================================================================================
# A. Unary: trigonometric and hyperbolic
# ============================================================================================


@defop("sin", promote="float", self="grad * conj(cos(self))", jvp="self_t * cos(self)")
def sin(xp, x):
    return xp.sin(x)


@defop("cos", promote="float", self="grad * -conj(sin(self))", jvp="self_t * -sin(self)")
def cos(xp, x):
    return xp.cos(x)


@defop("tan", promote="float", self="grad * conj(1 + result.pow(2))", jvp="self_t * (1 + result.pow(2))")
def tan(xp, x):
    return xp.tan(x)


@defop("asin", promote="float", self="grad * conj(rsqrt(-self * self + 1))", jvp="self_t * rsqrt(-self * self + 1)")
def asin(xp, x):
    return xp.asin(x)


@defop("acos", promote="float", self="grad * -conj(rsqrt(-self * self + 1))", jvp="self_t * -rsqrt(-self * self + 1)")
def acos(xp, x):
    return xp.acos(x)


@defop("atan", promote="float", self="grad / conj(1 + self * self)", jvp="self_t / (1 + self * self)")
def atan(xp, x):
    return xp.atan(x)


@defop("sinh", promote="float", self="grad * conj(cosh(self))", jvp="self_t * cosh(self)")
def sinh(xp, x):
    return xp.sinh(x)


@defop("cosh", promote="float", self="grad * conj(sinh(self))", jvp="self_t * sinh(self)")
def cosh(xp, x):
    return xp.cosh(x)


@defop("tanh", promote="float", self="tanh_backward(grad, result)", jvp="self_t * (1 - result * result)")
def tanh(xp, x):
    return xp.tanh(x)


@defop("asinh", promote="float", self="grad * conj(rsqrt(self.pow(2) + 1))", jvp="self_t * rsqrt(self.pow(2) + 1)")
def asinh(xp, x):
    return xp.asinh(x)


@defop("acosh", promote="float",  # complex: the principal branch, as torch (sqrt(a b) is not sqrt(a) sqrt(b) there)
       self="grad * conj(rsqrt(self + 1) * rsqrt(self - 1)) if self.is_complex() else grad * rsqrt(self * self - 1)",
       jvp="self_t * (rsqrt(self + 1) * rsqrt(self - 1) if self.is_complex() else rsqrt(self * self - 1))")
def acosh(xp, x):
    return xp.acosh(x)


@defop("atanh", promote="float", self="grad / conj(1 - self.pow(2))", jvp="self_t / (1 - self.pow(2))")
def atanh(xp, x):
    return xp.atanh(x)


arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


# tanh_backward(g, r) = g * conj(1 - r^2): linear in g, a function of conj(r), so the gradient for r
# is conj(grad) times d/d conj(r) (real inputs: the conjugates drop out)
@defop("tanh_backward", inputs=("grad_output", "output"),
       grad_output="tanh_backward(grad, conj(output))",
       output="-2 * conj(grad) * grad_output * conj(output)",
       jvp="tanh_backward(grad_output_t, output) - 2 * grad_output * conj(output * output_t)")
def tanh_backward(xp, g, r):
    if D.kind(r) == "c":
        return g * xp.conj(1 - r * r)
    if r.size <= A.BLOCKWISE_MIN_ELEMENTS:  # spares blockwise's call on small arrays (a quarter of a 0-d node)
        return _times_tanh_slope(g, r, None)
    return A.blockwise(_times_tanh_slope, g, r)  # Note [blockwise passes]


def _times_tanh_slope(g, r, out):
    """g (1 - r^2) for a real r, in three passes; into out when given (A.blockwise)."""
    if out is None:
        return g * (1 - r * r)
    np.multiply(r, r, out=out)
    np.subtract(1, out, out=out)
    return np.multiply(g, out, out=out)


# ============================================================================================
# A. Unary: sigmoid, logit, relu
# ============================================================================================


@defop("sigmoid", promote="float", self="sigmoid_backward(grad, result)", jvp="self_t * result * (1 - result)")
def sigmoid(xp, x):
    if D.kind(x) == "c":
        return 1 / (1 + xp.exp(-x))
    if type(x) is np.ndarray and x.ndim and x.dtype in (np.float32, np.float64):
        # torch's formula, in one array: 1 / (1 + exp(-x)), exp's overflow giving 0 as in torch (four passes;
        # the split by sign below takes nine with five temporaries)
        out = np.negative(x)
        with np.errstate(over="ignore"):
            np.exp(out, out=out)
        out += 1
        return np.divide(1, out, out=out)
    # split by sign so that exp never overflows
    e = xp.exp(-xp.abs(x))
    return A.astype(xp, xp.where(x >= 0, 1 / (1 + e), e / (1 + e)), x.dtype, copy=False)


# sigmoid_backward(g, r) = g * conj(r (1 - r)): the same structure as tanh_backward
@defop("sigmoid_backward", inputs=("grad_output", "output"),
       grad_output="sigmoid_backward(grad, conj(output))",
       output="conj(grad) * grad_output * conj(1 - 2 * output)",
       jvp="sigmoid_backward(grad_output_t, output) + grad_output * conj((1 - 2 * output) * output_t)")
def sigmoid_backward(xp, g, r):
    if D.kind(r) != "c":  # NumPy's conj of a real array is a copy
        if r.size <= A.BLOCKWISE_MIN_ELEMENTS:  # as tanh_backward
            return _times_sigmoid_slope(g, r, None)
        return A.blockwise(_times_sigmoid_slope, g, r)  # Note [blockwise passes]
    rc = xp.conj(r)
    return g * rc * (1 - rc)


def _times_sigmoid_slope(g, r, out):
    """g (1 - r) r for a real r, in three passes; into out when given (A.blockwise)."""
    local = 1 - r if out is None else np.subtract(1, r, out=out)
    local *= r
    return A.product(g, local, out)


@defop("logit", params=("eps",), promote="float", self="logit_backward(grad, self, eps)",
       jvp="logit_backward(self_t, self, eps)")
def logit_op(xp, x, eps):
    _refuse_kinds(x, "logit_cpu")
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    return xp.log(x / (1 - x))


@defop("relu", node="ReluBackward0", self="threshold_backward(grad, result, 0)",
       jvp="threshold_backward(self_t, result, 0)")
def relu(xp, x):
    refuse_unordered(x, "Boolean inputs not supported for relu")  # torch's relu is clamp_min(self, 0)
    return A.astype(xp, A.with_scalar(xp.maximum, x, 0), x.dtype, copy=False)


@linear_backward_op("threshold_backward", ("threshold",))
def threshold_backward(xp, g, x, threshold):
    return zero_where(xp, x <= threshold, g)


_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def zero_where(xp, mask, values):
    """where(mask, 0, values), bit for bit (NaN and inf in `values` kept, +0.0 written), by masking the
    values' bits: branch-free, several times faster than xp.where on a random mask (ReLU's backward). The
    bit mask is built in the result's own memory, so the only temporary is the bool mask."""
    word = _UNSIGNED.get(values.dtype.itemsize) if hasattr(values, "view") else None
    if word is None or D.kind(values) not in "fc" or mask.shape != values.shape:
        return xp.where(mask, xp.zeros((), dtype=values.dtype, device=values.device), values)
    out = xp.empty(values.shape, dtype=values.dtype, device=values.device)
    keep = out.view(word)
    keep[...] = mask
    keep -= 1  # True -> 0, False -> all ones
    xp.bitwise_and(values.view(word), keep, out=keep)
    return out


# ============================================================================================
# A. Unary: special functions
# ============================================================================================


@defop("erf", promote="float", self="2 / math.sqrt(math.pi) * exp(-self.pow(2)) * grad",
       jvp="2 / math.sqrt(math.pi) * exp(-self.pow(2)) * self_t")
def erf(xp, x):
    if x.dtype == np.float32:  # in float32, as torch computes it (Note [erf, erfc, erfinv in a few NumPy passes])
        return A.blockwise(lambda v, out: _erf_float32(xp, v), x)
    return _special(xp, _erf, x, blocks=True)


@defop("erfc", promote="float", self="-2 / math.sqrt(math.pi) * exp(-self.pow(2)) * grad",
       jvp="-2 / math.sqrt(math.pi) * exp(-self.pow(2)) * self_t")
def erfc(xp, x):
    return _special(xp, _erfc, x, blocks=True)


@defop("erfinv", promote="float", self="0.5 * math.sqrt(math.pi) * exp(result.pow(2)) * grad",
       jvp="0.5 * math.sqrt(math.pi) * exp(result.pow(2)) * self_t")
def erfinv(xp, x):
    return _special(xp, _erfinv, x, blocks=True)


@defop("lgamma", promote="float", self="grad * digamma(self)", jvp="self_t * digamma(self)")
def lgamma(xp, x):
    return _special(xp, _lgamma, x)


@defop("digamma", promote="float", self="grad * polygamma(1, self)", jvp="self_t * polygamma(1, self)")
def digamma(xp, x):
    return _special(xp, _polygamma, x, 0)


@defop("polygamma", params=("n",), promote="float", self="grad * polygamma(n + 1, self)",
       jvp="self_t * polygamma(n + 1, self)")
def polygamma_op(xp, x, n):
    return _special(xp, _polygamma, x, n)


@defop("nan_to_num", params=("nan", "posinf", "neginf"), self="where(isfinite(self), grad, 0)",
       jvp="where(isfinite(self), self_t, 0)")
def nan_to_num_op(xp, x, nan, posinf, neginf):
    if D.kind(x) in "iub":
        return A.copy(xp, x)
    if xp is np:
        return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)
    if D.kind(x) == "c":  # the standard builds complex numbers by arithmetic only: exact once both parts are finite
        parts = [nan_to_num_op.forward(xp, part(x), nan, posinf, neginf) for part in (xp.real, xp.imag)]
        rebuilt = A.astype(xp, parts[0], x.dtype) + A.astype(xp, parts[1], x.dtype) * 1j
        return xp.where(xp.isfinite(x), x, rebuilt)
    top = xp.finfo(x.dtype).max
    fixed = xp.where(xp.isnan(x), 0.0 if nan is None else nan, x)
    fixed = xp.where(fixed == math.inf, top if posinf is None else posinf, fixed)
    return xp.where(fixed == -math.inf, -top if neginf is None else neginf, fixed)


# ============================================================================================
# A. Unary: clamp (boundaries pass the gradient)
# ============================================================================================


@defop("clamp", node="ClampBackward1", params=("min", "max"),
       self="where(clamp_mask(self, min, max), grad, 0)",
       jvp="where(clamp_mask(self, min, max), self_t, 0)")
def clamp_op(xp, x, lo, hi):
    return _clip(xp, x, lo, hi)


@defop("clamp_tensor", node="ClampBackward0", inputs=("self", "min", "max"), promote="binary",
       self="where(clamp_mask(self, min, max), grad, 0)",
       min="clamp_bound_grad(grad, self, min, max, True)",
       max="clamp_bound_grad(grad, self, min, max, False)",
       jvp="clamp_jvp(self, self_t, min, min_t, max, max_t)")
def clamp_tensor(xp, x, lo, hi):
    _refuse_kinds(x, "clamp_cpu" if hi is not None and lo is not None else
                  "maximum_cpu" if lo is not None else "minimum_cpu")  # a complex bound: self was refused before
    return _clip(xp, x, lo, hi)


@defop("clamp_min", params=("min",), self="where(self >= min, grad, 0)", jvp="where(self >= min, self_t, 0)")
def clamp_min_op(xp, x, lo):
    return _clip(xp, x, lo, None)


@defop("clamp_min_tensor", node="ClampMinBackward1", inputs=("self", "min"), promote="binary",
       self="where(self >= min, grad, 0)", min="where(self < min, grad, 0)", jvp="where(self >= min, self_t, min_t)")
def clamp_min_tensor(xp, x, lo):
    _refuse_kinds(x, "maximum_cpu")
    return _clip(xp, x, lo, None)


@defop("clamp_max", params=("max",), self="where(self <= max, grad, 0)", jvp="where(self <= max, self_t, 0)")
def clamp_max_op(xp, x, hi):
    return _clip(xp, x, None, hi)


@defop("clamp_max_tensor", node="ClampMaxBackward1", inputs=("self", "max"), promote="binary",
       self="where(self <= max, grad, 0)", max="where(self > max, grad, 0)", jvp="where(self <= max, self_t, max_t)")
def clamp_max_tensor(xp, x, hi):
    _refuse_kinds(x, "minimum_cpu")
    return _clip(xp, x, None, hi)


def refuse_unordered(array: Any, refused_bool: str | None = None) -> None:
    """clamp's check, which the clamps in other names (relu, hardtanh) run on their kernels' arrays too; those
    refuse bool in their own words, `refused_bool`."""
    kind = D.kind(array)
    if kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if kind == "b" and refused_bool:
        raise RuntimeError(refused_bool)


def _refuse_complex_clamp(input: Tensor, *bounds: object) -> None:
    """Complex numbers have no order: torch's clamp checks refuse a complex self (or a complex number bound of
    clamp_min and clamp_max, whose result would be complex) before any kernel, complex32 included."""
    if input.is_complex() or builtins.any(isinstance(b, complex) for b in bounds):
        raise NotImplementedError("clamp is not supported for complex types")


def _clip(xp, x, lo, hi):
    """max(x, lo) then min(., hi), as torch applies them (so hi wins when lo > hi); NaN stays."""
    out = x
    if lo is not None:
        out = xp.maximum(out, xp.asarray(lo, dtype=x.dtype, device=x.device))
    if hi is not None:
        out = xp.minimum(out, xp.asarray(hi, dtype=x.dtype, device=x.device))
    return out if out is not x else A.copy(xp, x)


# Note [special functions without SciPy]
# The runtime depends on NumPy only, so the functions NumPy lacks are computed here, in float64
# whatever the input dtype (float32 results are rounded from it), on a flat copy:
#   erf, erfc, erfinv: Note [erf, erfc, erfinv in a few NumPy passes].
#   digamma, polygamma(n): for x > 0 the recurrence psi(x) = psi(x + 1) - 1/x moves x to >= 10
#            (polygamma: the Hurwitz zeta psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x), summed
#            directly up to x + k >= n + 11), then the asymptotic series with Bernoulli numbers;
#            x < 0 by the reflection formula, psi^(n)(1 - x) + (-1)^(n+1) psi^(n)(x) = (-1)^n pi
#            d^n/dx^n cot(pi x), the derivatives of cot as polynomials in cot.
#   lgamma:  Taylor series about 1 and 2 for 0.5 <= x < 2.5 (exact zeros at 1 and 2; the series
#            coefficients are zeta(k) and zeta(k) - 1, from the same Hurwitz zeta), Stirling's
#            series after the recurrence for x >= 2.5, lgamma(x + 1) - log(x) below 0.5, and the
#            reflection formula for x < 0.
#   igamma, igammac: P(a, x) by its power series where x < a + 1, Q(a, x) by Legendre's continued
#            fraction (Lentz's method) elsewhere, both times e^-x x^a / Gamma(a). Against mpmath at
#            40 digits, relative error below 1e-13 on the points tried (a up to 1000, x near a),
#            where torch's Cephes asymptotic expansion is off by up to 1e-10.
# Against torch in float64 (the `wide` samples of tests/opdb/pointwise.py, and denser sweeps while
# writing this): for lgamma and digamma relative error below 1e-13 away from their zeros (absolute there).
# Poles: lgamma = inf, digamma(0) = -inf (+inf for -0.0) and NaN at negative integers as torch;
# polygamma(n >= 1) = +-inf at every pole (torch returns huge finite values at some of them).

_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)  # B2..B18
_EULER_GAMMA = 0.57721566490153286061


def _special(xp, fn: Callable, x, *args, blocks: bool = False):
    """Run a special function on a flat float64 copy of x; the result has x's shape and dtype. `blocks`: fn is
    elementwise in a fixed sequence of passes (no loop until all elements converge), so it runs by blocks (Note
    [blockwise passes]; Note [erf, erfc, erfinv in a few NumPy passes])."""
    flat = A.reshape(xp, A.astype(xp, x, np.float64), -1)
    with np.errstate(all="ignore"):
        out = A.blockwise(lambda v, _: fn(xp, v, *args), flat) if blocks else fn(xp, flat, *args)
    return A.astype(xp, A.reshape(xp, out, x.shape), x.dtype, copy=False)


# Note [erf, erfc, erfinv in a few NumPy passes]
# float64 (and float16, and erfc and erfinv in float32, which round the float64 result): the
# rational approximations of Sun's fdlibm s_erf.c (W. J. Cody's scheme) with its coefficients,
# each on its interval of a = |x|; against mpmath on the whole line erf is within 1 ulp, erfc and
# erfcx within 3 (math.erfc: 2), torch's float64 erf within 1 and erfc within 4 of ours:
#   a < 0.84375:          erf = x + x R(a^2)/S(a^2)
#   0.84375 <= a < 1.25:  erf = erx + P(a - 1)/Q(a - 1), erx = erf(1) rounded to 24 bits
#   a >= 1.25:            erfc = exp(-a^2 - 0.5625 + R(1/a^2)/S(1/a^2)) / a, two fits split at
#                         1/0.35, a^2 split as z^2 + (a - z)(a + z) with z = a cut to 21 bits (z^2
#                         exact), so that exp keeps erfc's relative accuracy into the far tail (by
#                         masking the bits on NumPy; on the standard's arrays, which have no bit
#                         views, Veltkamp's split to 26 bits: as accurate, a pass slower, `_split_square`);
#   erf = +-1 from a = 6, erfc(x) = 2 - erfc(-x) for x < 0, and near 0 erfc = 1 - erf written so
#   that nothing cancels (0.5 - (a - 0.5 + a R/S) from a = 1/4).
# `_piecewise` gathers each interval's elements (two comparisons and an index per interval), so an
# element costs one rational function, not one per interval, and never a branch on random data.
# exp(x^2) erfc(x) (`_erfcx`) drops the exp(-a^2) factor from the tail (no underflow) and is
# 2 exp(x^2) - erfcx(-x) for x < 0 (exp(x^2) by the same exact split).
# float32 erf (GELU's hot path) computes in float32, as torch does, in one formula on the whole
# line: erf(x) = tanh(x + x q(x^2)), q of degree 9: a Lawson (weighted minimax) Chebyshev fit of
# atanh(erf(x))/x - 1 in x^2 on [0, 4.5^2], weighted by x (1 - erf^2) / erf so that its error is
# erf's relative error (at most 1.1e-8), q(0) = 2/sqrt(pi) - 1 pinned; x + x q keeps the rounding
# of q small beside x. From |x| = 4.05 to float32's largest (where it overflows to inf) the
# argument stays above 10, where NumPy's float32 tanh is 1 exactly (erf rounds to 1 from 3.92), so
# nothing is clamped. Against math.erf on every 7th float32 of [1e-38, 5]: at most 2.2 ulp, mean
# 0.27 ulp (NumPy's float32 tanh itself is within 1.4 ulp); torch's float32 erf is within 1 ulp.
# erfinv: Winitzki's closed form (relative error below 2e-3; its difference of square roots
# rationalised so that small |y| does not cancel), then Halley steps on erf(x) = |y|, written
# with erfc from |y| = 0.5 so that nothing cancels near |y| = 1. Three steps: within 1 ulp of
# mpmath on [-1, 1] (two leave up to 12 ulp next to |y| = 1, where the guess is poorest).
# All three are a fixed sequence of elementwise passes, so they run by blocks of the flat array (Note
# [blockwise passes]; the same bits): float64 erf of 2^20 elements 38 -> 22 ms (torch's 1.1: its
# kernel evaluates one polynomial per element, where this pays for the gathers of `_piecewise`).

# fdlibm s_erf.c's coefficients, lowest degree first (R, S; P, Q; R, S of the two tail fits)
_ERX = 8.45062911510467529297e-01
_ERF_SMALL_R = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
                -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_ERF_SMALL_S = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                1.32494738004321644526e-04, -3.96022827877536812320e-06)
_ERF_MID_P = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
              3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
              -2.16637559486879084300e-03)
_ERF_MID_Q = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
              1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_ERFC_NEAR_R = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
                -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
                -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_ERFC_NEAR_S = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
                6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
                6.57024977031928170135e+00, -6.04244152148580987438e-02)
_ERFC_FAR_R = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
               -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
               -4.83519191608651397019e+02)
_ERFC_FAR_S = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
               3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
               -2.24409524465858183362e+01)
_ERFC_SPLIT = 1 / 0.35
# float32: erf(x) = tanh(x + x q(x^2)), q lowest degree first
_ERF_TANH_Q = (0.12837916709551256, 0.10277229613033033, -0.00020703683144888962, -0.0005948550544272874,
               6.906184331749486e-05, 1.4037803736348256e-06, -1.3009882115435906e-06, 1.5704323921721681e-07,
               -8.488876575199826e-09, 1.7835392315532568e-10)
_WINITZKI = 0.147
_ERFINV_HALLEY_STEPS = 3


def _horner(z, coefficients):
    """c0 + c1 z + ... + cn z^n (lowest degree first) in z's dtype, in place on one buffer."""
    acc = z * coefficients[-1]
    for c in coefficients[-2:0:-1]:
        acc += c
        acc *= z
    acc += coefficients[0]
    return acc


def _piecewise(xp, key, out, pieces):
    """out[i] = fn(key[i]) for each (lo, hi, fn) in pieces with lo <= key[i] < hi, fn run on the gathered
    elements; a piece that holds every element runs on key whole, and its result is returned."""
    for lo, hi, fn in pieces:
        mask = (key >= lo) & (key < hi)
        index = xp.nonzero(mask)[0]
        if index.size == key.size:
            return fn(key)
        if index.size:  # the standard writes through boolean masks only
            out[index if hasattr(out, "strides") else mask] = fn(key[index])
    return out


def _erf_small_ratio(a):
    z = a * a
    return _horner(z, _ERF_SMALL_R) / _horner(z, _ERF_SMALL_S)


def _erf_mid_ratio(a):
    s = a - 1
    return _horner(s, _ERF_MID_P) / _horner(s, _ERF_MID_Q)


def _split_square(xp, a):
    """(z^2, a^2 - z^2) for float64 a >= 0, z = a's leading bits: z^2 is exact and the rest small, so exp(+-a^2)
    taken as the product of their exps keeps its relative accuracy where a^2 is large. NumPy cuts a to 21 bits by
    masking its bits; the standard has no bit views, so there Veltkamp's split (a * (2^27 + 1), two subtractions)
    keeps 26 bits, a pass slower (Note [erf, erfc, erfinv in a few NumPy passes]). Its z may round above a, so that
    a^2 - z^2 is negative, and for a huge a outside exp's range: there a past 28 is taken as 28 (exp(-a^2) is 0 from
    27.3 on)."""
    if xp is np:
        z = (a.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
    else:
        a = xp.minimum(a, 28.0)
        scaled = a * 134217729.0
        z = scaled - (scaled - a)
    return z * z, (a - z) * (a + z)


def _erfc_tail(xp, a, r, s, scaled):
    """erfc(a) for a >= 1.25 (exp(a^2) erfc(a) if scaled) from the tail fit (r, s)."""
    inv = 1 / (a * a)
    exponent = _horner(inv, r) / _horner(inv, s) - 0.5625
    if scaled:
        return xp.exp(exponent) / a
    high, low = _split_square(xp, a)
    return xp.exp(-high) * xp.exp(exponent - low) / a


def _erfc_positive(xp, a, scaled=False):
    """erfc(a) for a >= 0 (or NaN), or exp(a^2) erfc(a) if scaled."""
    def near(fn):  # erfc below a = 1.25, where exp(a^2) < 5 scales it without loss
        return (lambda v: xp.exp(v * v) * fn(v)) if scaled else fn
    return _piecewise(xp, a, xp.minimum(a, 0.0), (  # 0 for a = inf, NaN stays
        (0.0, 0.25, near(lambda v: 1 - (v + v * _erf_small_ratio(v)))),
        (0.25, 0.84375, near(lambda v: 0.5 - ((v - 0.5) + v * _erf_small_ratio(v)))),
        (0.84375, 1.25, near(lambda v: (1 - _ERX) - _erf_mid_ratio(v))),
        (1.25, _ERFC_SPLIT, lambda v: _erfc_tail(xp, v, _ERFC_NEAR_R, _ERFC_NEAR_S, scaled)),
        (_ERFC_SPLIT, xp.inf, lambda v: _erfc_tail(xp, v, _ERFC_FAR_R, _ERFC_FAR_S, scaled))))


def _erf(xp, x):
    a = xp.abs(x)
    out = _piecewise(xp, a, xp.minimum(a, 1.0), (  # 1 from a = 6 (and for inf), NaN stays
        (0.0, 0.84375, lambda v: v + v * _erf_small_ratio(v)),
        (0.84375, 1.25, lambda v: _ERX + _erf_mid_ratio(v)),
        (1.25, _ERFC_SPLIT, lambda v: 1 - _erfc_tail(xp, v, _ERFC_NEAR_R, _ERFC_NEAR_S, False)),
        (_ERFC_SPLIT, 6.0, lambda v: 1 - _erfc_tail(xp, v, _ERFC_FAR_R, _ERFC_FAR_S, False))))
    return xp.copysign(out, x)


def _erfc(xp, x):
    out = _erfc_positive(xp, xp.abs(x))
    negative = x < 0
    out[negative] = 2 - out[negative]
    return out


def _erfcx(xp, x):
    """exp(x^2) erfc(x) (torch.special.erfcx) in float64: no underflow for large x, inf below about -26.6."""
    out = _erfc_positive(xp, xp.abs(x), scaled=True)
    negative = x < 0
    high, low = _split_square(xp, xp.minimum(-x[negative], 27.0))  # exp(27^2) overflows already
    out[negative] = 2 * xp.exp(high) * xp.exp(low) - out[negative]
    return out


def _erf_float32(xp, x):
    """erf of a float32 array in float32 (Note [erf, erfc, erfinv in a few NumPy passes])."""
    with np.errstate(over="ignore"):  # |x| > 510: q(x^2) overflows to +inf, and tanh(+-inf) = +-1
        u = _horner(x * x, _ERF_TANH_Q)
        u *= x
        u += x
    return xp.tanh(u)


def _erfinv_positive(xp, a, complement: bool):
    """x >= 0 with erf(x) = a, by Halley's method on erf(x) - a, written (1 - a) - erfc(x) if complement."""
    ln = xp.log((1 - a) * (1 + a))
    b = 2 / (math.pi * _WINITZKI) + ln / 2
    root = xp.sqrt(b * b - ln / _WINITZKI)
    # x = sqrt(root - b), root - b written as (-ln/k) / (root + b) for small a, where b > 0 and it would cancel
    x = xp.sqrt(root - b if complement else (-ln / _WINITZKI) / (root + b))
    for _ in range(_ERFINV_HALLEY_STEPS):
        residual = (1 - a) - _erfc_positive(xp, x) if complement else _erf(xp, x) - a
        step = residual / (2 / math.sqrt(math.pi) * xp.exp(-x * x))
        x = x - step / (1 + x * step)
    return x


def _erfinv(xp, y):
    a = xp.abs(y)
    out = _piecewise(xp, a, xp.where(a == 1, xp.inf, xp.full_like(a, xp.nan)), (
        (0.0, 0.5, lambda v: _erfinv_positive(xp, v, False)),
        (0.5, 1.0, lambda v: _erfinv_positive(xp, v, True))))
    return xp.copysign(out, y)


def _hurwitz_zeta(xp, s: int, q):
    """zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2 and q > 0 (Euler-Maclaurin)."""
    cutoff = s + 11.0
    a = q
    total = xp.zeros_like(q)
    while True:
        low = a < cutoff
        if not A.reduce(xp, "any", low):
            break
        total = total + xp.where(low, a ** -float(s), 0)
        a = xp.where(low, a + 1, a)
    tail = a ** (1.0 - s) / (s - 1) + a ** -float(s) / 2
    rising, factorial, power, inv2 = float(s), 2.0, a ** (-s - 1.0), 1 / (a * a)
    for j, b in enumerate(_BERNOULLI, start=1):  # B_2j / (2j)! * s (s+1) ... (s+2j-2) * a^(-s-2j+1)
        tail = tail + b / factorial * rising * power
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        factorial *= (2 * j + 1) * (2 * j + 2)
        power = power * inv2
    return total + tail


def _digamma_positive(xp, x):
    a = x
    total = xp.zeros_like(x)
    while True:
        low = a < 10
        if not A.reduce(xp, "any", low):
            break
        total = total - xp.where(low, 1 / a, 0)
        a = xp.where(low, a + 1, a)
    inv2 = 1 / (a * a)
    series = xp.zeros_like(a)
    for j in range(len(_BERNOULLI), 0, -1):
        series = series * inv2 + _BERNOULLI[j - 1] / (2 * j)
    return total + xp.log(a) - 0.5 / a - series * inv2


def _polygamma_positive(xp, x, n: int):
    if n == 0:
        return _digamma_positive(xp, x)
    return (-1) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(xp, n + 1, x)


def _cot_derivative_coefficients(n: int) -> list[float]:
    """Coefficients (lowest first) of P_n with d^n/dx^n cot(x) = P_n(cot x): P_0 = c, P_k+1 = -(1 + c^2) P_k'."""
    p = [0.0, 1.0]
    for _ in range(n):
        d = [k * c for k, c in enumerate(p)][1:] or [0.0]
        p = [0.0] * (len(d) + 2)
        for k, c in enumerate(d):
            p[k] -= c
            p[k + 2] -= c
    return p


def _polygamma(xp, x, n: int):
    out = xp.full_like(x, xp.nan)
    pos = x > 0
    out[pos] = _polygamma_positive(xp, x[pos], n)
    neg = (x < 0) & (x != xp.floor(x))
    if A.reduce(xp, "any", neg):
        xn = x[neg]
        cot = 1 / xp.tan(math.pi * (xn - xp.round(xn)))
        poly = xp.zeros_like(xn)
        for c in reversed(_cot_derivative_coefficients(n)):
            poly = poly * cot + c
        out[neg] = (-1) ** n * _polygamma_positive(xp, 1 - xn, n) - math.pi ** (n + 1) * poly
    poles = (x <= 0) & (x == xp.floor(x))
    if n == 0:
        out[x == 0] = xp.copysign(xp.inf, -x[x == 0])
    else:
        out[poles] = (-1) ** (n + 1) * xp.inf
    out[x == xp.inf] = xp.inf if n == 0 else 0.0
    return out


def _special_pair(xp, fn: Callable, a, x, **kwargs):
    """_special for a function of two broadcast arrays."""
    a, x = xp.broadcast_arrays(a, x)
    dtype = xp.result_type(a, x)
    with np.errstate(all="ignore"):
        out = fn(xp, A.reshape(xp, A.astype(xp, a, np.float64), -1), A.reshape(xp, A.astype(xp, x, np.float64), -1),
                 **kwargs)
    return A.astype(xp, A.reshape(xp, out, a.shape), dtype, copy=False)


_IGAMMA_MAX_TERMS = 2000
_IGAMMA_TINY = 1e-300


def _igamma(xp, a, x, lower: bool):
    """P(a, x) (lower) or Q(a, x): the series of P where x < a + 1, Legendre's continued fraction of Q
    (evaluated by Lentz's method) elsewhere, each run until every element has converged; the edge
    values (a or x zero, infinite or negative) are torch's."""
    out = xp.full_like(a, xp.nan)
    ok = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    prefix = xp.exp(a * xp.log(xp.where(ok, x, 1.0)) - x - _lgamma(xp, xp.where(ok, a, 1.0)))
    series = ok & (x < a + 1)
    aa, xs = a[series], x[series]
    term = 1 / aa
    total = A.copy(xp, term)
    for n in range(1, _IGAMMA_MAX_TERMS):
        term = term * xs / (aa + n)
        total = total + term
        if A.reduce(xp, "all", xp.abs(term) <= xp.abs(total) * 1e-17):
            break
    p = total * prefix[series]
    out[series] = p if lower else 1 - p
    frac = ok & ~series
    aa, xs = a[frac], x[frac]
    b = xs + 1 - aa
    c = xp.full_like(xs, 1 / _IGAMMA_TINY)
    d = 1 / b
    h = A.copy(xp, d)
    for i in range(1, _IGAMMA_MAX_TERMS):
        an = -i * (i - aa)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < _IGAMMA_TINY, _IGAMMA_TINY, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < _IGAMMA_TINY, _IGAMMA_TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if A.reduce(xp, "all", xp.abs(delta - 1) <= 1e-16):
            break
    q = prefix[frac] * h
    out[frac] = 1 - q if lower else q
    low, high = (0.0, 1.0) if lower else (1.0, 0.0)
    nonneg = (a >= 0) & (x >= 0)
    out[nonneg & (a == 0) & (x > 0)] = high
    out[nonneg & (a > 0) & (x == 0)] = low
    out[nonneg & (a > 0) & xp.isinf(a) & xp.isfinite(x)] = low
    out[nonneg & (a > 0) & xp.isfinite(a) & xp.isinf(x)] = high
    return out


_LGAMMA_SERIES_TERMS = 55
_ZETA_SERIES: list[float] = []  # zeta(k) for k = 2, 3, ... (filled on first use)


def _lgamma_series(xp, t, about: int):
    """lgamma(about + t) for |t| <= 0.5 about 1 or 2: -gamma t + sum_k (-1)^k (zeta(k) - [about = 2]) t^k / k."""
    if not _ZETA_SERIES:
        ks = range(2, 2 + _LGAMMA_SERIES_TERMS)
        _ZETA_SERIES.extend(float(_hurwitz_zeta(np, k, np.ones(1))[0]) for k in ks)
    acc = xp.zeros_like(t)
    for k in range(len(_ZETA_SERIES) + 1, 1, -1):
        acc = (acc + (-1) ** k * (_ZETA_SERIES[k - 2] - (about - 1)) / k) * t
    return (acc + (about - 1 - _EULER_GAMMA)) * t + 0.0  # + 0.0: lgamma(1) is +0, not -0


def _lgamma_stirling(xp, x):
    """lgamma for x >= 2.5: Stirling's series at x + k >= 10, less log(x (x+1) ... (x+k-1))."""
    a = x
    product = xp.ones_like(x)
    while True:
        low = a < 10
        if not A.reduce(xp, "any", low):
            break
        product = xp.where(low, product * a, product)
        a = xp.where(low, a + 1, a)
    inv2 = 1 / (a * a)
    series = xp.zeros_like(a)
    for j in range(len(_BERNOULLI), 0, -1):
        series = series * inv2 + _BERNOULLI[j - 1] / (2 * j * (2 * j - 1))
    out = (a - 0.5) * xp.log(a) - a + 0.5 * math.log(2 * math.pi) + series / a - xp.log(product)
    return xp.where(xp.isinf(x), xp.inf, out)


def _lgamma_positive(xp, x):
    out = xp.empty_like(x)
    for lo, hi, value in ((0.0, 0.5, lambda v: _lgamma_series(xp, v, 1) - xp.log(v)),
                          (0.5, 1.5, lambda v: _lgamma_series(xp, v - 1, 1)),
                          (1.5, 2.5, lambda v: _lgamma_series(xp, v - 2, 2)),
                          (2.5, xp.inf, lambda v: _lgamma_stirling(xp, v))):
        part = (x >= lo) & (x < hi) if hi != xp.inf else x >= lo
        out[part] = value(x[part])
    return out


def _lgamma(xp, x):
    out = xp.full_like(x, xp.inf)
    pos = x > 0
    out[pos] = _lgamma_positive(xp, x[pos])
    neg = (x < 0) & (x != xp.floor(x))
    xn = x[neg]
    out[neg] = xp.log(math.pi / xp.abs(xp.sin(math.pi * (xn - xp.round(xn))))) - _lgamma_positive(xp, 1 - xn)
    out[xp.isnan(x)] = xp.nan
    return out


# ============================================================================================
# B. Binary: arithmetic
# ============================================================================================


@defop("add", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="grad", other="grad if alpha == 1 else grad * conj(alpha)",
       jvp="self_t + other_t * alpha")
def add_op(xp, a, b, alpha):
    return xp.add(a, b) if alpha == 1 else xp.add(a, _scaled(xp, b, alpha))


@defop("sub", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="grad", other="-grad if alpha == 1 else -grad * conj(alpha)",
       jvp="self_t - other_t * alpha")
def sub_op(xp, a, b, alpha):
    return xp.subtract(a, b) if alpha == 1 else xp.subtract(a, _scaled(xp, b, alpha))


@defop("rsub", node="RsubBackward0", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="-grad if alpha == 1 else -grad * conj(alpha)", other="grad",
       jvp="other_t - self_t * alpha")
def rsub_op(xp, a, b, alpha):
    return xp.subtract(b, a) if alpha == 1 else xp.subtract(b, _scaled(xp, a, alpha))


def _scaled(xp, value, alpha):
    """alpha * value; a Python number stays one, so it does not promote the other operand."""
    if hasattr(value, "dtype") and value.dtype == xp.bool:  # in bool, alpha * value is value unless alpha is 0
        return xp.logical_and(value, bool(alpha))
    return xp.multiply(value, alpha) if hasattr(value, "dtype") else value * alpha


@defop("rsub_scalar", node="RsubBackward1", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="-grad if alpha == 1 else -grad * conj(alpha)", jvp="-self_t * alpha")
def rsub_scalar(xp, a, b, alpha):
    return rsub_op.forward(xp, a, b, alpha)


@defop("mul", inputs=("self", "other"), promote="binary",
       self="grad * conj(other)", other="grad * conj(self)",
       jvp="self_t * other + other_t * self")
def mul(xp, a, b):
    return xp.multiply(a, b)


@defop("div", inputs=("self", "other"), promote="float",
       self="grad / conj(other)", other="-grad * conj(self / other / other)",
       jvp="(self_t - other_t * result) / other")
def div_op(xp, a, b):
    return xp.divide(a, b)


# The Scalar overloads: what torch's C++ records for `tensor op number` (Note [scalar overloads])
@defop("add_scalar", node="AddBackward1", params=("other", "alpha"), promote="binary", self="grad", jvp="self_t")
def add_scalar(xp, a, other, alpha):
    return add_op.forward(xp, a, other, alpha)


@defop("sub_scalar", node="SubBackward1", params=("other", "alpha"), promote="binary", self="grad", jvp="self_t")
def sub_scalar(xp, a, other, alpha):
    return sub_op.forward(xp, a, other, alpha)


@defop("mul_scalar", node="MulBackward1", params=("other",), promote="binary",
       self="grad * conj(other)", jvp="self_t * other")
def mul_scalar(xp, a, other):
    return xp.multiply(a, other)


@defop("div_scalar", node="DivBackward1", params=("other",), promote="float",
       self="grad / conj(other)", jvp="self_t / other")
def div_scalar(xp, a, other):
    return xp.divide(a, other)


add_op.scalar_overload, sub_op.scalar_overload, mul.scalar_overload, div_op.scalar_overload = (
    add_scalar, sub_scalar, mul_scalar, div_scalar)


@defop("div_rounding", node="DivBackward2", inputs=("self", "other"), params=("rounding_mode",), promote="binary",
       self=_ZERO_VJP, other=_ZERO_VJP, jvp="zeros_like(result)")
def div_rounding(xp, a, b, rounding_mode):
    return _divide_rounded(xp, a, b, rounding_mode)


@defop("floor_divide", node=_NOT_IMPLEMENTED, inputs=("self", "other"), promote="binary",
       self="not_implemented('floor_divide')", other="not_implemented('floor_divide')",
       jvp="not_implemented('floor_divide')")
def floor_divide_op(xp, a, b):
    _refuse_kinds(xp.result_type(a, b), "div_floor_cpu", "cb")
    return _divide_rounded(xp, a, b, "floor")


def _refuse_integer_zero(xp, a, b) -> None:
    """torch's error for an integer division by zero (NumPy's answer would be 0, with a warning)."""
    if all(isinstance(v, int) or hasattr(v, "dtype") and D.kind(v) in "iub" for v in (a, b)) and (
            b == 0 if isinstance(b, int) else bool(xp.any(b == 0))):
        raise RuntimeError("ZeroDivisionError")


def _divide_rounded(xp, a, b, rounding_mode):
    """a / b rounded toward zero ('trunc') or down ('floor'); integer inputs give integers."""
    _refuse_integer_zero(xp, a, b)
    if rounding_mode == "floor":
        return xp.floor_divide(a, b)
    if D.kind(a) in "iub":  # promotion made both integral
        q = xp.floor_divide(a, b)
        return q + A.astype(xp, (q < 0) & (q * b != a), q.dtype)  # floor -> trunc: negative quotients with a remainder
    return xp.trunc(xp.divide(a, b))


@defop("pow", node="PowBackward0", params=("exponent",), promote="binary",
       self="pow_backward(grad, self, exponent)",
       jvp="conj(pow_backward(conj(self_t), self, exponent))")  # auto_element_wise: holomorphic
def pow_scalar(xp, x, exponent):
    kernel = _EXPONENT_KERNELS.get(exponent)  # the table first: most exponents have no kernel, and need no test
    if kernel is not None and type(exponent) is not bool and D.kind(x) in "fc":
        return kernel(xp, x)
    return xp.pow(x, exponent)


# Note [scalar exponents]: as torch's pow kernel does, the exponents that models use (x ** 2, the x ** 3 of
# tanh-GELU, square roots and reciprocals) are computed with multiplies, sqrt and division instead of a general
# power: 3 to 50 times faster in NumPy, and rounded as torch rounds them (a general power is not). x ** 1, which
# the derivative of x ** 2 computes, is a copy, as torch's is.
_EXPONENT_KERNELS = {
    1: lambda xp, x: A.copy(xp, x),
    2: lambda xp, x: x * x,
    3: lambda xp, x: x * x * x,
    0.5: lambda xp, x: xp.sqrt(x),
    -0.5: lambda xp, x: 1 / xp.sqrt(x),
    -1: lambda xp, x: 1 / x,
    -2: lambda xp, x: 1 / (x * x),
}


@defop("pow_tensor", node="PowBackward1", inputs=("self", "exponent"), promote="binary",
       self="pow_backward(grad, self, exponent)",
       exponent="pow_exponent_backward(grad, self, exponent, result)",
       jvp="conj(pow_backward(conj(self_t), self, exponent) + "
           "pow_exponent_backward(conj(exponent_t), self, exponent, result))")
def pow_tensor(xp, x, e):
    return _power(xp, x, e)


@defop("pow_scalar_base", node="PowBackward2", inputs=("exponent",), params=("self",), promote="binary",
       exponent="pow_exponent_backward(grad, self, exponent, result)",
       jvp="conj(pow_exponent_backward(conj(exponent_t), self, exponent, result))")
def pow_scalar_base(xp, e, base):
    return _power(xp, xp.asarray(base, dtype=e.dtype, device=e.device), e)


def _power(xp, x, e):
    """x ** e elementwise. An integer one with negative exponents is torch's kernel's, where NumPy refuses it:
    0, but 1 for a base of 1 and -1 or 1 by the exponent's parity for a base of -1."""
    if D.kind(e) != "i" or not xp.any(negative := e < 0):
        return xp.pow(x, e)
    odd = A.astype(xp, e % 2, x.dtype)
    reciprocal = xp.where(x == 1, 1, 0) + xp.where(x == -1, 1 - 2 * odd, 0)
    return xp.where(negative, A.astype(xp, reciprocal, x.dtype), xp.pow(x, xp.where(negative, 0, e)))


@defop("remainder", node="RemainderBackward1", inputs=("self", "other"), promote="binary",
       self="grad", other="-grad * div(self, other, rounding_mode='floor')",
       jvp="self_t - other_t * div(self, other, rounding_mode='floor')")
def remainder_op(xp, a, b):
    return _remainder(xp, a, b)


@defop("remainder_scalar", node="RemainderBackward0", inputs=("self", "other"), promote="binary",
       self="grad", jvp="self_t")
def remainder_scalar(xp, a, b):
    return _remainder(xp, a, b)


@defop("remainder_scalar_self", node=_NOT_IMPLEMENTED, inputs=("self", "other"), promote="binary",
       other="not_implemented('remainder')", jvp="not_implemented('remainder')")
def remainder_scalar_self(xp, a, b):
    return _remainder(xp, a, b)


def _remainder(xp, a, b):
    """a mod b with the sign of b. torch's kernel is fmod, plus b where a non-zero result has the other sign, as
    the standard's remainder, except that a zero result keeps fmod's sign, a's (-6.0 % 3 is -0.0), where the
    standard's gives it b's."""
    _refuse_integer_zero(xp, a, b)
    result = xp.remainder(a, b)
    if not any(hasattr(v, "dtype") and D.kind(v) == "f" for v in (a, b)):
        return result
    if not hasattr(a, "dtype"):  # a number (remainder_scalar_self): its sign as an array the standard takes
        a = xp.asarray(a, dtype=result.dtype, device=result.device)
    return xp.where(result == 0, xp.copysign(result, a), result)


@defop("fmod", node="FmodBackward1", inputs=("self", "other"), promote="binary",
       self="grad", other="-grad * div(self, other, rounding_mode='trunc')",
       jvp="self_t - other_t * div(self, other, rounding_mode='trunc')")
def fmod_op(xp, a, b):
    return _fmod(xp, a, b)


@defop("fmod_scalar", node="FmodBackward0", inputs=("self", "other"), promote="binary", self="grad", jvp="self_t")
def fmod_scalar(xp, a, b):
    return _fmod(xp, a, b)


def _fmod(xp, a, b):
    """C's fmod: the remainder of truncated division, with a's sign (NumPy's fmod; the standard has Python's
    remainder only, with b's sign: floats take it of |a| and |b|, exactly, and a's sign; integers step back by b
    where the signs differ)."""
    _refuse_integer_zero(xp, a, b)
    if xp is np:
        return np.fmod(a, b)
    if D.kind(a) == "f":
        return xp.copysign(xp.remainder(xp.abs(a), math.fabs(b) if isinstance(b, (int, float)) else xp.abs(b)), a)
    r = xp.remainder(a, b)
    return xp.where((r != 0) & ((r < 0) != (a < 0)), r - b, r)


# ============================================================================================
# B. Binary: maxima, angles, signs, logarithms
# ============================================================================================


@defop("maximum", inputs=("self", "other"), promote="binary",
       self="grad * tie_weight(self, other)", other="grad * tie_weight(other, self)",
       jvp="self_t * tie_weight(self, other) + other_t * tie_weight(other, self)")
def maximum_op(xp, a, b):
    return xp.maximum(a, b)


@defop("minimum", inputs=("self", "other"), promote="binary",
       self="grad * tie_weight(other, self)", other="grad * tie_weight(self, other)",
       jvp="self_t * tie_weight(other, self) + other_t * tie_weight(self, other)")
def minimum_op(xp, a, b):
    return xp.minimum(a, b)


@defop("fmax", inputs=("self", "other"), promote="binary",
       self="where(fmax_keeps_self(self, other), grad, 0)", other="where(fmax_keeps_self(self, other), 0, grad)",
       jvp="where((self > other) | isnan(other), self_t, other_t)")  # torch: ties take other's tangent here
def fmax_op(xp, a, b):
    if hasattr(a, "strides"):
        return xp.fmax(a, b)
    return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, xp.maximum(a, b)))  # a number wins over NaN


@defop("fmin", inputs=("self", "other"), promote="binary",
       self="where(fmin_keeps_self(self, other), grad, 0)", other="where(fmin_keeps_self(self, other), 0, grad)",
       jvp="where(fmin_keeps_self(self, other), self_t, other_t)")
def fmin_op(xp, a, b):
    if hasattr(a, "strides"):
        return xp.fmin(a, b)
    return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, xp.minimum(a, b)))  # a number wins over NaN


@defop("atan2", inputs=("self", "other"), promote="float",
       self="grad * other * atan2_recip_norm(self, other)", other="grad * -self * atan2_recip_norm(self, other)",
       jvp="(self_t * other - other_t * self) / (self * self + other * other)")
def atan2_op(xp, a, b):
    _refuse_kinds(a, "atan2_cpu")  # both promoted alike
    return xp.atan2(a, b)


@defop("hypot", inputs=("self", "other"), promote="float",
       self="grad * self / result", other="grad * other / result",
       jvp="(self_t * self + other_t * other) / result")
def hypot_op(xp, a, b):
    return xp.hypot(a, b)


@defop("copysign", node="CopysignBackward0", inputs=("self", "other"), promote="float",
       self="grad * sgn(result) * sgn(self)", other="zeros_like(other)", jvp="self_t * sgn(result) * sgn(self)")
def copysign_op(xp, a, b):
    _refuse_kinds(a, "copysign_cpu")  # both promoted alike
    return xp.copysign(a, b)


@defop("copysign_scalar", node="CopysignBackward1", inputs=("self", "other"), promote="float",
       self="grad * sgn(result) * sgn(self)", jvp="self_t * sgn(result) * sgn(self)")
def copysign_scalar(xp, a, b):
    return copysign_op.forward(xp, a, b)


# The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac), with a
# the input and x the other. torch differentiates them in x only; for a it raises on use.
@defop("igamma", inputs=("self", "other"), promote="float", self="not_implemented_error('igamma: input')",
       other="grad * exp((self - 1) * log(other) - other - lgamma(self))")
def igamma(xp, a, x):
    a, x = _arrays(xp, a, x)
    return _special_pair(xp, _igamma, a, x, lower=True)


@defop("igammac", inputs=("self", "other"), promote="float", self="not_implemented_error('igammac: input')",
       other="-grad * exp((self - 1) * log(other) - other - lgamma(self))")
def igammac(xp, a, x):
    a, x = _arrays(xp, a, x)
    return _special_pair(xp, _igamma, a, x, lower=False)


@defop("xlogy", inputs=("self", "other"), promote="float",
       self="where((self == 0) & (other <= 0), 0, xlogy(grad, other))", other="grad * self / other",
       jvp="where((self == 0) & (other <= 0), 0, xlogy(self_t, other)) + other_t * self / other")
def xlogy_op(xp, x, y):
    x, y = _arrays(xp, x, y)
    _refuse_kinds(x, "xlogy_cpu")  # (its rows with a number are aliases: refused here, not by the table)
    safe = xp.where(x == 0, 1, y)  # 0 * log(0) is 0; NaN in y still gives NaN below
    return xp.where(y != y, y, xp.where(x == 0, 0, x * xp.log(safe)))


xlogy_scalar_self = xlogy_op.alias("xlogy_scalar_self", "XlogyBackward1")
xlogy_scalar_other = xlogy_op.alias("xlogy_scalar_other", "XlogyBackward2")


# torch's formulas, not sigmoid's: where one input is -inf their second derivatives are NaN (inf / inf) as torch's
@defop("logaddexp", inputs=("self", "other"), promote="float",
       self="grad / conj(1 + exp(other - self))", other="grad / conj(1 + exp(self - other))",
       jvp="self_t / (1 + exp(other - self)) + other_t / (1 + exp(self - other))")
def logaddexp_op(xp, a, b):
    if D.kind(a) != "c":  # both promoted alike
        return xp.logaddexp(a, b)
    # NumPy has no complex logaddexp: torch's, larger real part first, max + log1p(exp(min - max)); two infinite
    # real parts of one sign give the smaller at -inf and log(exp(min) + exp(max)) at +inf (NaN stays NaN)
    first = xp.real(a) >= xp.real(b)
    high, low = xp.where(first, a, b), xp.where(first, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        out = high + xp.log1p(xp.exp(low - high))
        both = ~xp.isfinite(xp.real(low)) & (xp.real(low) == xp.real(high))
        if A.reduce(xp, "any", both):
            out = xp.where(both, xp.where(xp.real(low) < 0, low, xp.log(xp.exp(low) + xp.exp(high))), out)
    return out


@defop("logaddexp2", inputs=("self", "other"), promote="float",
       self="grad / (1 + pow(2, other - self))", other="grad / (1 + pow(2, self - other))",
       jvp="self_t / (1 + pow(2, other - self)) + other_t / (1 + pow(2, self - other))")
def logaddexp2_op(xp, a, b):
    if xp is np:
        return np.logaddexp2(a, b)
    # the standard has no logaddexp2: NumPy's formula, max + log2(1 + 2^-|a - b|), and a + 1 where a == b (infinities)
    spread = xp.log1p(xp.pow(2.0, -xp.abs(a - b))) * (1 / math.log(2))
    return xp.where(a == b, a + 1, xp.maximum(a, b) + spread)


# ============================================================================================
# B. Ternary: lerp, addcmul, addcdiv, where
# ============================================================================================


@defop("lerp", node="LerpBackward0", inputs=("self", "end"), params=("weight",), promote="binary",
       self="grad * conj(1 - weight)", end="grad * conj(weight)", jvp="self_t * (1 - weight) + end_t * weight")
def lerp_scalar(xp, start, end, weight):
    return _lerp(xp, start, end, weight)


@defop("lerp_tensor", node="LerpBackward1", inputs=("self", "end", "weight"), promote="binary",
       self="grad * conj(1 - weight)", end="grad * conj(weight)", weight="grad * conj(end - self)",
       jvp="self_t * (1 - weight) + end_t * weight + weight_t * (end - self)")
def lerp_tensor(xp, start, end, weight):
    return _lerp(xp, start, end, weight)


def _lerp(xp, start, end, weight):
    """start + weight (end - start), computed from whichever end is nearer (torch's rounding)."""
    diff = end - start
    near_start = xp.asarray(builtins.abs(weight) < 0.5, device=diff.device)
    return A.astype(xp, xp.where(near_start, start + weight * diff, end - diff * (1 - weight)), diff.dtype, copy=False)


@defop("addcmul", inputs=("self", "tensor1", "tensor2"), params=("value",), promote="binary",
       self="grad", tensor1="grad * conj(tensor2 * value)", tensor2="grad * conj(tensor1 * value)",
       jvp="self_t + value * (tensor1_t * tensor2 + tensor1 * tensor2_t)")
def addcmul_op(xp, x, t1, t2, value):
    return x + value * (t1 * t2)


@defop("addcdiv", inputs=("self", "tensor1", "tensor2"), params=("value",), promote="binary",
       self="grad", tensor1="grad * conj(value / tensor2)",
       tensor2="-grad * conj(value * tensor1 / (tensor2 * tensor2))",
       jvp="self_t + value * (tensor1_t / tensor2 - tensor1 * tensor2_t / (tensor2 * tensor2))")
def addcdiv_op(xp, x, t1, t2, value):
    return x + value * (t1 / t2)


@defop("where", node="WhereBackward0", inputs=("self", "other"), params=("condition",), promote="binary",
       self="where(_wrap(condition), grad, 0)", other="where(_wrap(condition), 0, grad)",
       jvp="where(_wrap(condition), self_t, other_t)")  # condition is a param: the kernel's bool array
def where_op(xp, a, b, condition):
    if hasattr(a, "dtype") != hasattr(b, "dtype"):  # a number beside a tensor: torch's Scalar overload checks it
        D.check_fits(b, a.dtype, halves=False) if hasattr(a, "dtype") else D.check_fits(a, b.dtype, halves=False)
    return xp.where(condition, a, b)


# ============================================================================================
# Comparisons and logic: no gradient (no formula, so no node is ever recorded)
# ============================================================================================


def _no_grad_binary(name: str, ufunc: str, ordered: bool = False, logical: bool = False) -> Op:
    """A comparison or logical op; an `ordered` comparison refuses complex numbers as torch does; a `logical`
    op reads nonzero numbers as true (the standard's logical functions take booleans only)."""
    def forward(xp, a, b):
        if ordered:
            _refuse_kinds(a.dtype, f"{name}_cpu")  # both promoted alike
        if logical and D.kind(a) != "b":  # both promoted alike
            a, b = a != 0, b != 0
        return getattr(xp, ufunc)(a, b)

    return defop(name, inputs=("self", "other"), promote="binary")(forward)


def _refuse_kinds(dtype: np.dtype | Any, kernel: str, kinds: str = "c") -> None:
    """torch's kernels with no version for these kinds of result (complex ordering, floor division of
    complex or bool) raise this; NumPy would compute. A kernel passes its array itself (D.kind's quick case)."""
    if D.kind(dtype) in kinds:
        dtype = getattr(dtype, "dtype", dtype)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(D.from_native(dtype))}\'')


eq = _no_grad_binary("eq", "equal")
ne = _no_grad_binary("ne", "not_equal")
lt = _no_grad_binary("lt", "less", ordered=True)
le = _no_grad_binary("le", "less_equal", ordered=True)
gt = _no_grad_binary("gt", "greater", ordered=True)
ge = _no_grad_binary("ge", "greater_equal", ordered=True)
logical_and = _no_grad_binary("logical_and", "logical_and", logical=True)
logical_or = _no_grad_binary("logical_or", "logical_or", logical=True)
logical_xor = _no_grad_binary("logical_xor", "logical_xor", logical=True)
bitwise_and = _no_grad_binary("bitwise_and", "bitwise_and")
bitwise_or = _no_grad_binary("bitwise_or", "bitwise_or")
bitwise_xor = _no_grad_binary("bitwise_xor", "bitwise_xor")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


@defop("logical_not")
def logical_not(xp, x):
    return xp.logical_not(x)


@defop("bitwise_not")
def bitwise_not(xp, x):
    return xp.logical_not(x) if D.kind(x) == "b" else xp.bitwise_invert(x)


@defop("isnan")
def isnan(xp, x):
    return xp.isnan(x)


@defop("isinf")
def isinf(xp, x):
    return xp.isinf(x)


@defop("isfinite")
def isfinite(xp, x):
    return xp.isfinite(x)


@defop("signbit")
def signbit(xp, x):
    return xp.signbit(x)


@defop("isclose", inputs=("self", "other"), params=("rtol", "atol", "equal_nan"), promote="binary")
def isclose_op(xp, a, b, rtol, atol, equal_nan):
    if hasattr(a, "strides"):
        return xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if D.kind(a) in "iub":  # NumPy's way: integers compare as floats
        a, b = xp.astype(a, xp.float64), xp.astype(b, xp.float64)
    finite = xp.isfinite(a) & xp.isfinite(b)
    close = (a == b) | finite & (xp.abs(a - b) <= atol + rtol * xp.abs(b))  # |a - b| <= atol + rtol |b|, as NumPy
    return close | xp.isnan(a) & xp.isnan(b) if equal_nan else close


# ============================================================================================
# Public functions whose torch signature differs from their row
# ============================================================================================


def round(input: Tensor, *, decimals: int | None = None) -> Tensor:  # noqa: A001 - torch's name
    """Round half to even, to `decimals` places (RoundBackward1 when decimals is given, 0 included)."""
    if decimals is None:
        return apply(round_half_even, (input,))
    return apply(round_decimals, (input,), (decimals,))


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(p / (1 - p)); with eps, p is first clamped to [eps, 1 - eps]."""
    if eps is not None and not isinstance(eps, (int, float)):
        raise TypeError(f"logit(): argument 'eps' (position 2) must be float, not {type(eps).__name__}")
    return apply(logit_op, (input,), (D.number(eps),))


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma; `x.polygamma(n)` is accepted too (torch's method order)."""
    if isinstance(n, Tensor) and not isinstance(input, Tensor):
        n, input = input, n
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return apply(polygamma_op, (input,), (int(n),))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest / lowest values)."""
    return apply(nan_to_num_op, (input,), (nan, posinf, neginf))


def clamp(input: Tensor, min: Tensor | float | None = None, max: Tensor | float | None = None) -> Tensor:
    """Limit values to [min, max]; the gradient passes where min <= x <= max (boundaries included).

    Number bounds (0-d tensors count as numbers next to a number) record ClampBackward1; tensor
    bounds ClampBackward0, whose bounds receive the gradient where they are the result."""
    bounds = [b for b in (min, max) if b is not None]
    if not bounds:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if builtins.all(isinstance(b, Tensor) for b in bounds):
        _refuse_complex_clamp(input)
        return apply(clamp_tensor, (input, min, max))
    if not builtins.all(_is_number(b) or isinstance(b, Tensor) and b.ndim == 0 for b in bounds):
        got = ", ".join(["Tensor"] + [type(b).__name__ for b in (min, max) if b is not None])
        raise TypeError(f"clamp() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                        " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
    lo, hi = (b.item() if isinstance(b, Tensor) else b for b in (min, max))
    _refuse_complex_clamp(input)
    if builtins.any(isinstance(b, complex) for b in (lo, hi)):
        raise RuntimeError("value cannot be converted to type double without overflow")  # clamp's double bounds
    return apply(clamp_op, (_promoted(input, lo, hi),), (lo, hi))


clip = clamp


def clamp_min(input: Tensor, min: Tensor | float) -> Tensor:
    """max(input, min): ClampMinBackward1 for a tensor bound, ClampMinBackward0 for a number."""
    if isinstance(min, Tensor):
        return apply(clamp_min_tensor, (input, min))
    _refuse_complex_clamp(input, min)
    return apply(clamp_min_op, (_promoted(input, min),), (min,))


def clamp_max(input: Tensor, max: Tensor | float) -> Tensor:
    """min(input, max): ClampMaxBackward1 for a tensor bound, ClampMaxBackward0 for a number."""
    if isinstance(max, Tensor):
        return apply(clamp_max_tensor, (input, max))
    _refuse_complex_clamp(input, max)
    return apply(clamp_max_op, (_promoted(input, max),), (max,))


_ALPHA_ONE = (1,)  # the params of a plain + or -, shared by their nodes: one tracked object less per op


def add(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """input + alpha * other, broadcasting."""
    _check_alpha(input, other, alpha)
    return apply(add_op, (input, other), _ALPHA_ONE if type(alpha) is int and alpha == 1 else (D.number(alpha),))


def sub(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """input - alpha * other, broadcasting."""
    _refuse_bool_subtraction(input, other)
    _check_alpha(input, other, alpha)
    return apply(sub_op, (input, other), _ALPHA_ONE if type(alpha) is int and alpha == 1 else (D.number(alpha),))


def _check_alpha(input: Tensor, other: object, alpha: object) -> None:
    """torch's alpha_check against the result's dtype: a bool alpha only for a bool result, a float one only for a
    floating or complex result, a complex one only for a complex result (NumPy would promote instead)."""
    if type(alpha) is int:
        return
    category = D.result_type(input, other).category  # bool < int < float < complex
    if type(alpha) is bool and category != 0:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if category < 2 and not isinstance(alpha, (bool, int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if category < 3 and isinstance(alpha, complex):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


def _refuse_bool_subtraction(input: Tensor, other: object) -> None:
    """torch refuses `-` on booleans, tensors or Python bools (NumPy would compute it after promotion);
    an operand of another type is left to the op's own TypeError."""
    if not isinstance(other, (Tensor, int, float, complex)):
        return
    left = isinstance(input, Tensor) and input.dtype.category == 0 or type(input) is bool
    right = isinstance(other, Tensor) and other.dtype.category == 0 or type(other) is bool
    if left and right:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if left or right:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


subtract = sub


def rsub(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """other - alpha * input."""
    _refuse_bool_subtraction(input, other)
    _check_alpha(input, other, alpha)
    return apply(rsub_op if isinstance(other, Tensor) else rsub_scalar, (input, other), (D.number(alpha),))


def div(input: Tensor | complex, other: Tensor | complex, *, rounding_mode: str | None = None) -> Tensor:
    """True division (ints give floats); rounding_mode 'trunc' or 'floor' gives a zero gradient."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    if not isinstance(input, Tensor):
        return mul(reciprocal(other), input) if rounding_mode is None else div(_like(other, input), other,
                                                                               rounding_mode=rounding_mode)
    if rounding_mode is None:
        return apply(div_op, (input, other))
    return apply(div_rounding, (input, other), (rounding_mode,))


divide = true_divide = div


def mul_by_number(input: Tensor, number: complex) -> Tensor:
    """input * number recorded as torch's C++ composites record it (MulBackward1, Note [scalar overloads])."""
    return apply(mul_scalar, (_promoted(input, number),), (number,))


def div_by_number(input: Tensor, number: complex) -> Tensor:
    """input / number recorded as torch's C++ composites record it (DivBackward1, Note [scalar overloads])."""
    return apply(div_scalar, (_promoted(input, number),), (number,))


def floor_divide(input: Tensor, other: Tensor | float) -> Tensor:
    """input / other rounded down; torch defines no derivative (backward raises)."""
    return apply(floor_divide_op, (input, other))


def float_power(input: Tensor | complex, exponent: Tensor | complex) -> Tensor:
    """input ** exponent in double precision: float64, or complex128 when either side is complex."""
    complex_ = any(isinstance(v, complex) or isinstance(v, Tensor) and v.is_complex() for v in (input, exponent))
    dtype = D.complex128 if complex_ else D.float64
    base, power = (v.to(dtype) if isinstance(v, Tensor) else v for v in (input, exponent))
    return pow(base, power)


def pow(input: Tensor | complex, exponent: Tensor | complex) -> Tensor:  # noqa: A001 - torch's name
    """input ** exponent; the node names torch's three overloads (PowBackward0/1/2)."""
    if isinstance(input, Tensor):
        if isinstance(exponent, Tensor):
            return apply(pow_tensor, (input, exponent))
        if type(exponent) is not int and type(exponent) is not float:
            exponent = D.number(exponent)  # a NumPy scalar as the number it holds (Note [operands])
        data = input._data  # a NumPy float or complex tensor needs no promotion: no dtype lookup
        if not (type(data) is np.ndarray and data.dtype.kind in "fc") and input.dtype.category < 2:
            # int_tensor ** 2.5 is float32, as the exponent were promoted with it
            if type(exponent) is int and exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            input = _promoted(input, exponent)
        return apply(pow_scalar, (input,), (exponent,))
    input = D.number(input)
    exponent = _promoted(exponent, input)  # 2.5 ** int_tensor is float32, 2j ** float_tensor complex64
    return apply(pow_scalar_base, (exponent,), (input,))


def remainder(input: Tensor | float, other: Tensor | float) -> Tensor:
    """Python's modulus (the sign of the divisor): input - floor(input / other) * other."""
    if not isinstance(input, Tensor):
        return apply(remainder_scalar_self, (input, other))
    return apply(remainder_op if isinstance(other, Tensor) else remainder_scalar, (input, other))


def fmod(input: Tensor, other: Tensor | float) -> Tensor:
    """C's fmod (the sign of the dividend): input - trunc(input / other) * other."""
    return apply(fmod_op if isinstance(other, Tensor) else fmod_scalar, (input, other))


def copysign(input: Tensor, other: Tensor | float) -> Tensor:
    """``|input|`` with the sign of other (the gradient flows to input only)."""
    return apply(copysign_op if isinstance(other, Tensor) else copysign_scalar, (input, other))


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other), and 0 where input == 0 (unless other is NaN)."""
    if not isinstance(input, Tensor):
        return apply(xlogy_scalar_self, (input, other))
    return apply(xlogy_op if isinstance(other, Tensor) else xlogy_scalar_other, (input, other))


def lerp(input: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
    """input + weight * (end - input)."""
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_legacy_name(input)} for `{name}` but got dtype {_legacy_name(t)}")
    if isinstance(weight, Tensor):
        return apply(lerp_tensor, (input, end, weight))
    return apply(lerp_scalar, (input, end), (weight,))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: complex = 1) -> Tensor:
    """input + value * tensor1 * tensor2."""
    return apply(addcmul_op, (input, tensor1, tensor2), (D.number(value),))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: complex = 1) -> Tensor:
    """input + value * tensor1 / tensor2 (floating point only)."""
    if tensor1.dtype.category < 2 and tensor2.dtype.category < 2:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return apply(addcdiv_op, (input, tensor1, tensor2), (D.number(value),))


def _tensor_pair(op: Op, name: str) -> Callable[[Tensor, Tensor], Tensor]:
    """The public function of a binary op that torch accepts with two tensors only."""

    def public(input: Tensor, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        return apply(op, (input, other))

    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"torch.{name}: elementwise over two broadcast tensors."
    return public


maximum = _tensor_pair(maximum_op, "maximum")
minimum = _tensor_pair(minimum_op, "minimum")
fmax = _tensor_pair(fmax_op, "fmax")
fmin = _tensor_pair(fmin_op, "fmin")
atan2 = arctan2 = _tensor_pair(atan2_op, "atan2")
hypot = _tensor_pair(hypot_op, "hypot")
logaddexp = _tensor_pair(logaddexp_op, "logaddexp")
logaddexp2 = _tensor_pair(logaddexp2_op, "logaddexp2")


def where(condition: Tensor, input: Tensor | complex | None = None, other: Tensor | complex | None = None) -> Tensor:
    """Elements of input where condition holds, else of other; condition gets no gradient."""
    if input is None and other is None:
        from .indexing import nonzero  # indexing imports this family at its top

        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):  # a list, a bool, a NumPy array: refused by torch's parser
        got = ", ".join(argument_type_name(a) for a in (condition, input, other) if a is not None)
        raise TypeError(f"where() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor condition)\n"
                        " * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)\n"
                        " * (Tensor condition, Number self, Tensor other)\n"
                        " * (Tensor condition, Tensor input, Number other)\n"
                        " * (Tensor condition, Number self, Number other)\n")
    cond = condition._data
    if condition.dtype is D.uint8:  # the byte masks of older code (pytorch-crf's default mask): nonzero is true
        warn_once_at_user("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                          "in a future version of PyTorch. Use a boolean condition instead. (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/TensorCompare.cpp:621.)")
        cond = cond != 0
    elif D.kind(cond) != "b":
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{D.scalar_type_name(condition.dtype)}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # a NumPy scalar gets a number's dtype (Note [operands])
        input = tensor(D.number(input), device=getattr(condition, "device", None))
    operands = [cond] + [x._data for x in (input, other) if isinstance(x, Tensor)]
    if len({x.shape for x in operands}) > 1 and (error := _broadcast_error(operands)):  # the condition broadcasts too
        raise error
    return keep_index_versions(apply(where_op, (input, other), (cond,)), condition)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|``, elementwise (tensors of one dtype, as torch's)."""
    if isinstance(other, Tensor) and isinstance(input, Tensor) and other.dtype is not input.dtype:
        raise RuntimeError(f"{D.scalar_type_name(input.dtype)} did not match {D.scalar_type_name(other.dtype)}")
    return apply(isclose_op, (input, other), (rtol, atol, equal_nan))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element is close (see isclose)."""
    close = isclose(input, other, rtol, atol, equal_nan)._data
    return bool(A.reduce(namespace(close), "all", close))


def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape and the same values (torch has no kernel for two complex32)."""
    if (D.is_complex32(input._data) or D.is_complex32(other._data)) and input.shape == other.shape:
        if input.dtype is other.dtype:  # the same view of the same memory: torch checks it holds no NaN
            same = input._data.__array_interface__ == other._data.__array_interface__
            raise NotImplementedError(f"\"{'equal_notnan_cpu' if same else 'equal_cpu'}\" not implemented for "
                                      "'ComplexHalf'")
        input, other = (t.cfloat() if t.dtype is D.complex32 else t for t in (input, other))
    return input.shape == other.shape and bool(A.reduce(namespace(input._data), "all", input._data == other._data))


multiply = mul
negative = neg
absolute = abs


def _in_place_as(row: Op) -> Callable:
    """Tensor.<op>_ for the ops whose in-place form torch records under its own node (AsinhBackward1)."""

    def method(self: Tensor, *params: object) -> Tensor:
        self._check_inplace()
        return self._become(apply(row, (self,), params))

    method.__name__ = row.name
    method.__doc__ = f"In-place {row.name[:-1]} ({row.node_name})."
    return method


def _underivable_in_place(op: Op, node: str) -> Op:
    """torch's in-place inverse hyperbolics: a node whose backward raises, and no forward AD."""
    return defop(op.name + "_", node=node, self=f"inplace_not_implemented('{op.name}')")(op.forward)


asinh_ = arcsinh_ = _in_place_as(_underivable_in_place(asinh, "AsinhBackward1"))
acosh_ = arccosh_ = _in_place_as(_underivable_in_place(acosh, "AcoshBackward1"))
atanh_ = arctanh_ = _in_place_as(_underivable_in_place(atanh, "AtanhBackward1"))
polygamma_ = _in_place_as(polygamma_op.alias("polygamma_", "PolygammaBackward1"))


def _comparison_in_place(name: str, ufunc: str) -> Callable:
    """Tensor.eq_ and its kin: the comparison written into self in self's dtype. torch records it with zero
    gradients, under <Name>Backward0 when `other` is a number and <Name>Backward1 when it is a tensor."""
    node = f"{name.capitalize()}Backward"

    def forward(xp, a, b):
        return getattr(xp, ufunc)(a, b).astype(a.dtype)

    with_tensor = defop(f"{name}_", node=node + "1", inputs=("self", "other"), self="zeros_like(grad)",
                        other="zeros_like(grad)", jvp="zeros_like(self_t)")(forward)
    with_number = with_tensor.alias(f"{name}_scalar_", node + "0")

    def method(self: Tensor, other: Tensor | complex) -> Tensor:
        self._check_inplace((other,))
        return self._become(apply(with_tensor if isinstance(other, Tensor) else with_number, (self, other)))

    method.__name__ = f"{name}_"
    method.__doc__ = f"In-place {name}: self = ({name}(self, other)) as self's dtype, with zero gradients."
    return method


eq_ = _comparison_in_place("eq", "equal")
ne_ = not_equal_ = _comparison_in_place("ne", "not_equal")
lt_ = less_ = _comparison_in_place("lt", "less")
le_ = less_equal_ = _comparison_in_place("le", "less_equal")
gt_ = greater_ = _comparison_in_place("gt", "greater")
ge_ = greater_equal_ = _comparison_in_place("ge", "greater_equal")


# ============================================================================================
# Formula helpers: differentiable pieces the rules above share
# ============================================================================================


def handle_r_to_c(result: Tensor, value: Tensor) -> Tensor:
    """The real part of `value` when the op's result is real (abs of a complex input)."""
    return real(value) if value.is_complex() and not result.is_complex() else value


def sgn_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """For complex z: (g - Re(g conj(s)) s) / |z| with s = z / |z|, 0 at z = 0; zero for real z."""
    if not self.is_complex():
        return zeros_like(grad)
    magnitude = self.abs()
    return where(magnitude == 0, 0, (grad - real(grad * conj(result)) * result) / magnitude)


def logit_backward(grad: Tensor, self: Tensor, eps: float | None) -> Tensor:
    """g / (x (1 - x)); NaN outside [0, 1] without eps, 0 outside [eps, 1 - eps] with it."""
    local = grad / (self * (1 - self))
    if eps is None:
        return where((self >= 0) & (self <= 1), local, math.nan)
    return where((self >= eps) & (self <= 1 - eps), local, 0)


def pow_backward(grad: Tensor, self: Tensor, exponent: Tensor | complex) -> Tensor:
    """d(x ** n) = n * x ** (n - 1), and exactly 0 where n == 0 (torch's convention)."""
    if isinstance(exponent, Tensor):
        return where(exponent == 0, 0.0, grad * conj(exponent * pow(self, exponent - 1)))
    if exponent == 0:
        return grad * 0
    return grad * conj(exponent * pow(self, exponent - 1))


def pow_exponent_backward(grad: Tensor, self: Tensor | complex, exponent: Tensor, result: Tensor) -> Tensor:
    """d(b ** e)/de = b ** e * log(b), and 0 where b == 0 and e is real and >= 0 (torch's convention:
    0 ** e is constant there; at e < 0 it stays log(0) * inf = -inf). grad multiplies the masked
    derivative, as in torch, so a NaN gradient stays NaN."""
    nonnegative = (imag(exponent) == 0) & (real(exponent) >= 0) if exponent.is_complex() else exponent >= 0
    if isinstance(self, Tensor):  # a real base under a complex power: its log is complex (log(-1) = i pi)
        base = self.to(result.dtype) if result.is_complex() and not self.is_complex() else self
        return grad * where((self == 0) & nonnegative, 0.0, conj(result * log(base)))
    if self == 0:
        log_zero = builtins.complex(-math.inf, 0) if exponent.is_complex() else -math.inf
        return grad * where(nonnegative, 0.0, conj(result * log_zero))
    complex_log = isinstance(self, builtins.complex) or result.is_complex()
    return grad * conj(result * (cmath.log(self) if complex_log else math.log(self)))


def atan2_recip_norm(self: Tensor, other: Tensor) -> Tensor:
    """1 / (self**2 + other**2) for atan2's gradient, 0 where that is inf (at the origin), as torch's
    atan2_backward masks it: the gradient there is 0 rather than NaN."""
    recip = reciprocal(self * self + other * other)
    return where(isinf(recip), 0, recip)


def tie_weight(mine: Tensor, theirs: Tensor | complex) -> Tensor:
    """For maximum/minimum: 1 where mine wins, 1/2 on ties, 0 where it loses."""
    return (mine > theirs) + 0.5 * (mine == theirs)


def fmax_keeps_self(self: Tensor, other: Tensor) -> Tensor:
    """Where fmax's result is self: self >= other, or other is NaN (ties go to self)."""
    return (self >= other) | isnan(other)


def fmin_keeps_self(self: Tensor, other: Tensor) -> Tensor:
    """Where fmin's result is self: self <= other, or other is NaN (ties go to self)."""
    return (self <= other) | isnan(other)


def clamp_mask(x: Tensor, lo: Tensor | float | None, hi: Tensor | float | None) -> Tensor:
    """Where clamp passes the gradient: lo <= x <= hi (boundaries pass, as in torch)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        mask = (x <= hi) if mask is None else mask & (x <= hi)
    return mask


def clamp_bound_grad(grad: Tensor, self: Tensor, lo: Tensor | None, hi: Tensor | None, for_min: bool) -> Tensor:
    """The gradient of a tensor bound: where that bound is the result (with both bounds, max wins
    where lo > hi)."""
    if for_min:
        taken = self < lo if hi is None else (self < lo) & (lo < hi)
    else:
        taken = self > hi if lo is None else (self > hi) | (hi < lo)
    return where(taken, grad, 0)


def clamp_jvp(self: Tensor, self_t: Tensor, lo: Tensor | None, lo_t: Tensor, hi: Tensor | None,
              hi_t: Tensor) -> Tensor:
    """The tangent of clamp with tensor bounds: that of whichever of self, min, max is the result."""
    out = self_t
    if lo is not None:
        out = where(self < lo, lo_t, out)
    if hi is not None:
        out = where(self > hi, hi_t, out)
        if lo is not None:
            out = where(lo > hi, hi_t, out)
    return out


def not_implemented(name: str) -> None:
    """torch's NotImplemented node: its backward raises."""
    raise RuntimeError(f"derivative for aten::{name} is not implemented")


def not_implemented_error(what: str) -> None:
    """torch's not_implemented(): a derivative it declares and does not provide raises on use."""
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


def inplace_not_implemented(name: str) -> None:
    not_implemented_error(f"inplace version of {name}")


# ============================================================================================
# Dtype helpers
# ============================================================================================


def _arrays(xp, *values):
    """Python numbers among a forward's operands as 0-d arrays of the (promoted) array dtype."""
    array = next(v for v in values if hasattr(v, "dtype"))
    return tuple(v if hasattr(v, "dtype") else xp.asarray(v, dtype=array.dtype, device=array.device) for v in values)


def _is_number(value: object) -> bool:
    return isinstance(value, (bool, int, float, builtins.complex, np.generic))


def _promoted(input: Tensor, *bounds: float | None) -> Tensor:
    """input cast to the dtype number bounds promote it to (clamp(int_tensor, 0.5) is float)."""
    dtype = D.result_type(input, *bounds)
    return input if dtype is input.dtype else input.to(dtype)


def _like(t: Tensor, value: complex) -> Tensor:
    return full((), value, dtype=D.result_type(t, value))


def _legacy_name(t: Tensor) -> str:
    """How torch's dtype checks name a tensor's element type: its C++ type (float, c10::complex<c10::Half>)."""
    return D.CPP_TYPE_NAMES.get(t.dtype.name, t.dtype.name)


__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "addcdiv", "addcmul", "allclose", "arccos", "arccosh", "arcsin",
    "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "copysign", "cos", "cosh",
    "deg2rad", "digamma", "div", "divide", "eq", "equal", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fix",
    "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "frac", "ge", "greater", "greater_equal", "gt",
    "hypot", "igamma", "igammac", "isclose", "isfinite", "isinf", "isnan", "le", "lerp", "less", "less_equal", "lgamma",
    "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logit", "lt", "maximum", "minimum", "mul", "multiply", "nan_to_num", "ne", "neg", "negative",
    "not_equal", "polygamma", "pow", "rad2deg", "reciprocal", "relu", "remainder", "round", "rsqrt", "rsub", "sgn",
    "sigmoid", "sign", "signbit", "sin", "sinh", "sqrt", "sub", "subtract", "tan", "tanh", "true_divide",
    "trunc", "where", "xlogy",
]
FUNCTIONAL = ["sigmoid", "tanh"]
METHODS = [
    "acosh_", "arccosh_", "arcsinh_", "arctanh_", "asinh_", "atanh_", "polygamma_",  # own in-place nodes
    "eq_", "ge_", "greater_", "greater_equal_", "gt_", "le_", "less_", "less_equal_", "lt_", "ne_", "not_equal_",
    "acos", "acosh", "addcdiv", "addcmul", "allclose", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "ceil", "copysign", "cosh", "deg2rad", "digamma", "equal", "erf", "erfc", "erfinv", "exp2", "expm1", "fix", "floor",
    "floor_divide", "fmax", "fmin", "fmod", "frac", "greater", "greater_equal", "hypot", "isclose", "lerp", "less",
    "igamma", "igammac", "less_equal", "lgamma", "log10", "log1p", "log2", "logaddexp", "logaddexp2", "logit",
    "nan_to_num", "not_equal", "polygamma", "rad2deg", "remainder", "round", "rsqrt", "signbit", "sinh", "tan",
    "trunc", "xlogy",
]
INPLACE = [
    "acos", "addcdiv", "addcmul", "arccos", "arcsin", "arctan", "arctan2", "asin", "atan", "atan2", "ceil", "copysign",
    "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp2", "expm1", "fix", "floor", "floor_divide", "fmod",
    "frac", "hypot", "igamma", "igammac", "lerp", "lgamma", "log10", "log1p", "log2", "logit", "nan_to_num", "rad2deg",
    "remainder", "round", "rsqrt", "sinh", "tan", "trunc", "xlogy",
]
