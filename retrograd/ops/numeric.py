"""Rule table: ops on the representation of numbers (OPS.md section B): integer arithmetic (gcd, lcm, bit
shifts), the float's parts (frexp, ldexp, nextafter), the step function heaviside, and the class tests
isposinf / isneginf / isreal.

Integer-only and float-only kernels refuse the other kinds with torch's `"<kernel>" not implemented for
'<Type>'`. torch differentiates frexp (the mantissa), ldexp and nextafter; heaviside records its
NotImplemented node, whose backward raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from . import arrays as A
from .pointwise import _refuse_kinds, _tensor_pair, exp2
from .reduction import return_type
from .registry import Op, apply, defop

return_types_frexp = return_type("frexp", ("mantissa", "exponent"))

# ============================================================================================
# Integers: gcd, lcm and the bit shifts (no gradient)
# ============================================================================================


def _integer_row(name: str, kernel: str, compute: Callable) -> Op:
    """A row over two integer operands (promoted alike) that refuses bool, float and complex as torch does."""
    def forward(xp, a, b):
        if not hasattr(a, "dtype") or not hasattr(b, "dtype"):  # a Python number: an array like the other operand's
            a, b = _with_number(xp, a, b)
        _refuse_kinds(a.dtype, kernel, kinds="bfc")
        return compute(xp, a, b)

    return defop(name, inputs=("self", "other"), promote="binary")(forward)


def _with_number(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands as arrays when one is a Python number: of the array's dtype, or of the number's when its
    category is higher (a bool array with an int is int64, an int array with a float is float), as torch promotes."""
    array, number = (a, b) if hasattr(a, "dtype") else (b, a)
    dt, number_dt = D.of_array(array), D.scalar_dtype(number)
    if number_dt.category > dt.category:
        array, dt = A.astype(xp, array, D.native(xp, number_dt)), number_dt
    filled = xp.full_like(array, number)  # on the array's device
    return (array, filled) if hasattr(a, "dtype") else (filled, array)


def _shift(xp, a, b, left: bool):
    """a << b or a >> b, by torch's rule where C leaves it undefined (a shift that is negative or reaches the
    width): left, zero; right, only the sign (0 or -1)."""
    inside = (b >= 0) & (b < D.of_array(a).itemsize * 8)
    b = xp.where(inside, b, xp.zeros_like(b))
    if left:
        return xp.where(inside, xp.bitwise_left_shift(a, b), xp.zeros_like(a))
    return xp.where(inside, xp.bitwise_right_shift(a, b), xp.where(a < 0, -xp.ones_like(a), xp.zeros_like(a)))


def _gcd(xp, a, b):
    """The greatest common divisor, non-negative (NumPy's gcd; the standard has none: Euclid's steps on every
    element until each remainder is 0)."""
    if xp is np:
        return np.gcd(a, b)
    a, b = xp.broadcast_arrays(xp.abs(a), xp.abs(b))
    while A.reduce(xp, "any", b != 0):
        going = b != 0
        a, b = xp.where(going, b, a), xp.where(going, xp.remainder(a, xp.where(going, b, xp.ones_like(b))), b)
    return a


def _lcm(xp, a, b):
    """|a / gcd(a, b) * b|, 0 where gcd is 0, as torch and NumPy compute it."""
    if xp is np:
        return np.lcm(a, b)
    g = _gcd(xp, a, b)
    none = g == 0
    return xp.where(none, g, xp.abs(xp.floor_divide(a, xp.where(none, xp.ones_like(g), g)) * b))


gcd_op = _integer_row("gcd", "gcd_cpu", _gcd)
lcm_op = _integer_row("lcm", "lcm_cpu", _lcm)
bitwise_left_shift = _integer_row("bitwise_left_shift", "lshift_cpu", lambda xp, a, b: _shift(xp, a, b, True))
bitwise_right_shift = _integer_row("bitwise_right_shift", "rshift_cpu", lambda xp, a, b: _shift(xp, a, b, False))

# ============================================================================================
# Floats: mantissa and exponent, the next representable number
# ============================================================================================


@defop("frexp", outputs=("mantissa", "exponent"), differentiable_outputs=(0,), self="grads[0] / exp2(exponent)",
       jvp="(self_t / exp2(exponent), None)")
def frexp_op(xp, x):
    if xp is np:
        mantissa, exponent = np.frexp(x)
        return mantissa, exponent.astype("int32")
    # the standard has no frexp: the exponent from log2, put right by one where rounding moved it; the scaling
    # by 2^-e in two halves, so that neither power overflows, is exact
    regular = xp.isfinite(x) & (x != 0)
    size = xp.where(regular, xp.abs(x), xp.ones_like(x))
    exponent = xp.floor(xp.log2(size)) + 1
    half = xp.floor(exponent / 2)
    mantissa = size / xp.pow(2.0, half) / xp.pow(2.0, exponent - half)
    exponent = xp.where(mantissa >= 1, exponent + 1, xp.where(mantissa < 0.5, exponent - 1, exponent))
    mantissa = xp.where(mantissa >= 1, mantissa / 2, xp.where(mantissa < 0.5, mantissa * 2, mantissa))
    return (xp.where(regular, xp.copysign(mantissa, x), x),
            A.astype(xp, xp.where(regular, exponent, xp.zeros_like(exponent)), xp.int32))


# torch's self formula, grad * pow(2, other), is 0 at a negative integer exponent (an integer power); exp2 is not
@defop("ldexp", inputs=("self", "other"), promote="float", self="grad * conj(exp2(other))",
       other="grad * conj(result) * math.log(2)", jvp="self_t * exp2(other) + other_t * result * math.log(2)")
def ldexp_op(xp, x, e):
    return x * exp2.forward(xp, e) if D.kind(x) != "c" else x * 2 ** e  # NumPy's exp2 takes no complex exponent


@defop("nextafter", inputs=("self", "other"), promote="binary", self="where(self != other, grad, 0)",
       other="zeros_like(other)", jvp="where(self != other, self_t, 0)")
def nextafter_op(xp, a, b):
    _refuse_kinds(a.dtype, "nextafter_cpu", kinds="buic")
    return xp.nextafter(a, b)


@defop("heaviside", node="NotImplemented", inputs=("self", "values"),
       self="not_implemented('heaviside')", values="not_implemented('heaviside')")
def heaviside_op(xp, x, values):
    return xp.where(x == 0, values, A.astype(xp, x > 0, D.of_array(x)))


gcd = _tensor_pair(gcd_op, "gcd")
lcm = _tensor_pair(lcm_op, "lcm")
ldexp = _tensor_pair(ldexp_op, "ldexp")
nextafter = _tensor_pair(nextafter_op, "nextafter")


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """input = mantissa * 2 ** exponent with abs(mantissa) in [0.5, 1) (int32 exponents); floats only."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return return_types_frexp(*apply(frexp_op, (input,)))


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, 1 where input > 0, `values` where input is 0 (one real dtype for both)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.is_complex() or values.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return apply(heaviside_op, (input, values))


# ============================================================================================
# Class tests (bool results, no gradient)
# ============================================================================================


@defop("isposinf")
def isposinf_op(xp, x):
    return x == float("inf") if D.kind(x) == "f" else xp.zeros_like(x, dtype=xp.bool)


@defop("isneginf")
def isneginf_op(xp, x):
    return x == -float("inf") if D.kind(x) == "f" else xp.zeros_like(x, dtype=xp.bool)


@defop("isreal")
def isreal_op(xp, x):
    return xp.imag(x) == 0 if D.kind(x) == "c" else xp.ones_like(x, dtype=xp.bool)


def _real_only(op: Op) -> Callable[[Tensor], Tensor]:
    """The public function of a class test torch defines for real inputs only."""
    def public(input: Tensor) -> Tensor:
        if input.is_complex():
            raise RuntimeError(f"{op.name} does not support complex inputs.")
        return apply(op, (input,))

    public.__name__ = public.__qualname__ = op.name
    public.__doc__ = f"torch.{op.name}: elementwise test of a real tensor."
    return public


isposinf = _real_only(isposinf_op)
isneginf = _real_only(isneginf_op)


def isreal(input: Tensor) -> Tensor:
    """True where input has no imaginary part (everywhere for a real tensor)."""
    return apply(isreal_op, (input,))


__all__ = ["bitwise_left_shift", "bitwise_right_shift", "frexp", "gcd", "heaviside", "isneginf", "isposinf", "isreal",
           "lcm", "ldexp", "nextafter"]
METHODS = __all__
INPLACE = ["bitwise_left_shift", "bitwise_right_shift", "gcd", "heaviside", "lcm", "ldexp", "nextafter"]
