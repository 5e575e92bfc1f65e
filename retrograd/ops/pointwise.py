"""Rule table: pointwise ops (OPS.md sections A, B and C).

Each row: `@defop(name, node=..., promote=..., <input>="VJP formula", jvp="JVP formula")` over
the NumPy forward. Formulas read `grad`, `result`, the inputs and parameters by name and are
written with `conj` so complex inputs follow torch's convention (conjugate Wirtinger).
"""

from __future__ import annotations

from .._tensor import Tensor
from .registry import Op, apply, defop

# ============================================================================================
# A. Unary
# ============================================================================================


@defop("neg", self="-grad", jvp="-self_t")
def neg(xp, x):
    return xp.negative(x)


@defop("exp", promote="float", self="grad * conj(result)", jvp="self_t * result")
def exp(xp, x):
    return xp.exp(x)


@defop("log", promote="float", self="grad / conj(self)", jvp="self_t / self")
def log(xp, x):
    return xp.log(x)


@defop("sin", promote="float", self="grad * conj(cos(self))", jvp="self_t * cos(self)")
def sin(xp, x):
    return xp.sin(x)


@defop("cos", promote="float", self="-grad * conj(sin(self))", jvp="-self_t * sin(self)")
def cos(xp, x):
    return xp.cos(x)


@defop("tanh", promote="float", self="tanh_backward(grad, result)", jvp="self_t * (1 - result * result)")
def tanh(xp, x):
    return xp.tanh(x)


@defop("tanh_backward", inputs=("grad_output", "output"),
       grad_output="tanh_backward(grad, output)",
       output="-2 * grad * grad_output * conj(output)",
       jvp="tanh_backward(grad_output_t, output) - 2 * grad_output * output * output_t")
def tanh_backward(xp, g, r):
    return g * (1 - r * xp.conj(r))


@defop("sigmoid", promote="float", self="sigmoid_backward(grad, result)", jvp="self_t * result * (1 - result)")
def sigmoid(xp, x):
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    # split by sign so that exp never overflows
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


@defop("sigmoid_backward", inputs=("grad_output", "output"),
       grad_output="sigmoid_backward(grad, output)",
       output="grad * grad_output * conj(1 - 2 * output)",
       jvp="sigmoid_backward(grad_output_t, output) + grad_output * (1 - 2 * output) * output_t")
def sigmoid_backward(xp, g, r):
    rc = xp.conj(r)
    return g * rc * (1 - rc)


@defop("relu", node="ReluBackward0", self="threshold_backward(grad, result, 0)", jvp="threshold_backward(self_t, result, 0)")
def relu(xp, x):
    return xp.maximum(x, 0).astype(x.dtype, copy=False)


@defop("threshold_backward", inputs=("grad_output", "self"), params=("threshold",),
       grad_output="threshold_backward(grad, self, threshold)",
       jvp="threshold_backward(grad_output_t, self, threshold)")
def threshold_backward(xp, g, x, threshold):
    return xp.where(x <= threshold, xp.zeros((), g.dtype), g)


@defop("abs", self="grad * sgn(self)", jvp="self_t * sgn(self)")
def abs(xp, x):  # noqa: A001 - torch's name
    return xp.abs(x)


@defop("sgn", self="zeros_like(grad)", jvp="zeros_like(self_t)")
def sgn(xp, x):
    if x.dtype.kind == "c":
        mag = xp.abs(x)
        return xp.where(mag == 0, 0, x / xp.where(mag == 0, 1, mag)).astype(x.dtype)
    return xp.sign(x)


@defop("sqrt", promote="float", self="grad / (2 * conj(result))", jvp="self_t / (2 * result)")
def sqrt(xp, x):
    return xp.sqrt(x)


@defop("conj_physical", self="conj(grad)", jvp="conj(self_t)")
def conj_physical(xp, x):
    return xp.conj(x)


@defop("clamp", node="ClampBackward1", params=("min", "max"),
       self="where(clamp_mask(self, min, max), grad, 0)",
       jvp="where(clamp_mask(self, min, max), self_t, 0)")
def clamp_op(xp, x, lo, hi):
    out = x
    if lo is not None:
        out = xp.maximum(out, xp.asarray(lo, dtype=x.dtype))
    if hi is not None:
        out = xp.minimum(out, xp.asarray(hi, dtype=x.dtype))
    return out if out is not x else x.copy()


# ============================================================================================
# B. Binary
# ============================================================================================


@defop("add", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="grad", other="grad if alpha == 1 else grad * conj(alpha)",
       jvp="self_t + other_t * alpha")
def add_op(xp, a, b, alpha):
    return xp.add(a, b) if alpha == 1 else xp.add(a, xp.multiply(b, alpha))


@defop("sub", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="grad", other="-grad if alpha == 1 else -grad * conj(alpha)",
       jvp="self_t - other_t * alpha")
def sub_op(xp, a, b, alpha):
    return xp.subtract(a, b) if alpha == 1 else xp.subtract(a, xp.multiply(b, alpha))


@defop("rsub", node="RsubBackward1", inputs=("self", "other"), params=("alpha",), promote="binary",
       self="-grad if alpha == 1 else -grad * conj(alpha)", jvp="-self_t * alpha")
def rsub_op(xp, a, b, alpha):
    return xp.subtract(b, a) if alpha == 1 else xp.subtract(b, xp.multiply(a, alpha))


@defop("mul", inputs=("self", "other"), promote="binary",
       self="grad * conj(other)", other="grad * conj(self)",
       jvp="self_t * other + other_t * self")
def mul(xp, a, b):
    return xp.multiply(a, b)


@defop("div", inputs=("self", "other"), promote="float",
       self="grad / conj(other)", other="-grad * conj(self / other / other)",
       jvp="(self_t - other_t * result) / other")
def div_op(xp, a, b):
    return xp.true_divide(a, b)


@defop("pow", node="PowBackward0", params=("exponent",), promote="binary",
       self="pow_backward(grad, self, exponent)",
       jvp="pow_backward(self_t, self, exponent)")
def pow_scalar(xp, x, exponent):
    return xp.power(x, exponent)


@defop("pow_tensor", node="PowBackward1", inputs=("self", "exponent"), promote="binary",
       self="pow_backward(grad, self, exponent)",
       exponent="pow_exponent_backward(grad, self, result)",
       jvp="pow_backward(self_t, self, exponent) + pow_exponent_backward(exponent_t, self, result)")
def pow_tensor(xp, x, e):
    return xp.power(x, e)


@defop("pow_scalar_base", node="PowBackward2", inputs=("exponent",), params=("self",), promote="binary",
       exponent="pow_exponent_backward(grad, self, result)",
       jvp="pow_exponent_backward(exponent_t, self, result)")
def pow_scalar_base(xp, e, base):
    return xp.power(xp.asarray(base, dtype=e.dtype), e)


@defop("maximum", inputs=("self", "other"), promote="binary",
       self="grad * tie_weight(self, other)", other="grad * tie_weight(other, self)",
       jvp="self_t * tie_weight(self, other) + other_t * tie_weight(other, self)")
def maximum(xp, a, b):
    return xp.maximum(a, b)


@defop("minimum", inputs=("self", "other"), promote="binary",
       self="grad * tie_weight(other, self)", other="grad * tie_weight(self, other)",
       jvp="self_t * tie_weight(other, self) + other_t * tie_weight(self, other)")
def minimum(xp, a, b):
    return xp.minimum(a, b)


@defop("where", node="WhereBackward0", inputs=("self", "other"), params=("condition",), promote="binary",
       self="where(condition, grad, 0)", other="where(condition, 0, grad)",
       jvp="where(condition, self_t, other_t)")
def where_op(xp, a, b, condition):
    return xp.where(condition, a, b)


# ============================================================================================
# Comparisons and logic: no gradient (no formula, so no node is ever recorded)
# ============================================================================================


def _compare(name: str, ufunc: str) -> Op:
    def forward(xp, a, b):
        return getattr(xp, ufunc)(a, b)

    return defop(name, inputs=("self", "other"), promote="binary")(forward)


for _name, _ufunc in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                      ("gt", "greater"), ("ge", "greater_equal"), ("logical_and", "logical_and"),
                      ("logical_or", "logical_or"), ("logical_xor", "logical_xor"),
                      ("bitwise_and", "bitwise_and"), ("bitwise_or", "bitwise_or"),
                      ("bitwise_xor", "bitwise_xor")):
    globals()[_name] = _compare(_name, _ufunc)


@defop("logical_not")
def logical_not(xp, x):
    return xp.logical_not(x)


@defop("bitwise_not")
def bitwise_not(xp, x):
    return xp.logical_not(x) if x.dtype == bool else xp.invert(x)


@defop("isnan")
def isnan(xp, x):
    return xp.isnan(x)


@defop("isinf")
def isinf(xp, x):
    return xp.isinf(x)


@defop("isfinite")
def isfinite(xp, x):
    return xp.isfinite(x)


# ============================================================================================
# Public functions whose torch signature differs from their row
# ============================================================================================


def add(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """input + alpha * other, broadcasting."""
    return apply(add_op, (input, other), (alpha,))


def sub(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """input - alpha * other, broadcasting."""
    return apply(sub_op, (input, other), (alpha,))


subtract = sub


def rsub(input: Tensor, other: Tensor | complex, *, alpha: complex = 1) -> Tensor:
    """other - alpha * input."""
    if isinstance(other, Tensor):
        return sub(other, input, alpha=alpha)
    return apply(rsub_op, (input, other), (alpha,))


def div(input: Tensor | complex, other: Tensor | complex, *, rounding_mode: str | None = None) -> Tensor:
    """True division (ints give floats); rounding_mode 'trunc' or 'floor' gives no gradient."""
    if not isinstance(input, Tensor):
        return mul(reciprocal(other), input)
    if rounding_mode is None:
        return apply(div_op, (input, other))
    from .. import no_grad

    with no_grad():
        q = apply(div_op, (input, other))
        q = q.trunc() if rounding_mode == "trunc" else q.floor()
    dt = _binary_dtype(input, other)
    return q if q.dtype is dt else q.to(dt)


divide = true_divide = div


def pow(input: Tensor | complex, exponent: Tensor | complex) -> Tensor:  # noqa: A001 - torch's name
    """input ** exponent; the node names torch's three overloads (PowBackward0/1/2)."""
    if isinstance(input, Tensor):
        if isinstance(exponent, Tensor):
            return apply(pow_tensor, (input, exponent))
        return apply(pow_scalar, (input,), (exponent,))
    return apply(pow_scalar_base, (exponent,), (input,))


def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max]; the gradient passes where min <= x <= max (boundaries included)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min if isinstance(min, Tensor) else _full_as(out, min))
        if max is not None:
            out = minimum(out, max if isinstance(max, Tensor) else _full_as(out, max))
        return out
    return apply(clamp_op, (input,), (min, max))


clip = clamp


def clamp_min(input: Tensor, min: float) -> Tensor:  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: float) -> Tensor:  # noqa: A002
    return clamp(input, max=max)


def where(condition: Tensor, input: Tensor | complex | None = None, other: Tensor | complex | None = None) -> Tensor:
    """Elements of input where condition holds, else of other; condition gets no gradient."""
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    cond = condition._data if isinstance(condition, Tensor) else condition
    if cond.dtype != bool:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {condition.dtype}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .. import tensor

        input = tensor(input)
    return apply(where_op, (input, other), (cond,))


def conj(input: Tensor | complex) -> Tensor | complex:
    """The complex conjugate; real tensors are returned as they are (no copy, no node)."""
    if isinstance(input, Tensor):
        return apply(conj_physical, (input,)) if input._data.dtype.kind == "c" else input
    return input.conjugate() if isinstance(input, complex) else input


def reciprocal(input: Tensor) -> Tensor:
    return apply(reciprocal_op, (input,))


@defop("reciprocal", promote="float", self="-grad * conj(result * result)", jvp="-self_t * result * result")
def reciprocal_op(xp, x):
    return xp.reciprocal(x)


# ============================================================================================
# Formula helpers: differentiable pieces the rules above share
# ============================================================================================


def pow_backward(grad: Tensor, self: Tensor, exponent: Tensor | complex) -> Tensor:
    """d(x ** n) = n * x ** (n - 1), and exactly 0 where n == 0 (torch's convention)."""
    if isinstance(exponent, Tensor):
        return where(exponent == 0, 0.0, grad * conj(exponent * pow(self, exponent - 1)))
    if exponent == 0:
        return grad * 0
    return grad * conj(exponent * pow(self, exponent - 1))


def pow_exponent_backward(grad: Tensor, self: Tensor | complex, result: Tensor) -> Tensor:
    """d(b ** e)/de = b ** e * log(b), masked to 0 where b == 0 and e >= 0 (torch's convention)."""
    if isinstance(self, Tensor):
        return where((self == 0) & (result == result), 0.0, grad * conj(result * log(self)))
    if self == 0:
        return grad * 0
    import math

    return grad * conj(result * (math.log(self) if not isinstance(self, complex) else __import__("cmath").log(self)))


def tie_weight(mine: Tensor, theirs: Tensor | complex) -> Tensor:
    """For maximum/minimum: 1 where mine wins, 1/2 on ties, 0 where it loses."""
    return (mine > theirs) + 0.5 * (mine == theirs)


def clamp_mask(x: Tensor, lo: float | None, hi: float | None) -> Tensor:
    """Where clamp passes the gradient: lo <= x <= hi (boundaries pass, as in torch)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        mask = (x <= hi) if mask is None else mask & (x <= hi)
    return mask


def _binary_dtype(a: Tensor | complex, b: Tensor | complex) -> object:
    from .. import _dtype as D

    dims, zeros, scalars = [], [], []
    for v in (a, b):
        if isinstance(v, Tensor):
            (dims if v.ndim else zeros).append(v.dtype)
        else:
            scalars.append(D.scalar_dtype(v))
    return D.result_type(dims, zeros, scalars)


def _full_as(t: Tensor, value: float) -> Tensor:
    from .. import full

    return full((), value, dtype=t.dtype)


__all__ = ["abs", "add", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "clamp", "clamp_max", "clamp_min", "clip", "conj", "conj_physical", "cos", "div", "divide", "eq", "exp", "ge", "gt", "isfinite", "isinf", "isnan", "le", "log", "logical_and", "logical_not", "logical_or", "logical_xor", "lt", "maximum", "minimum", "mul", "ne", "neg", "pow", "reciprocal", "relu", "rsub", "sgn", "sigmoid", "sin", "sqrt", "sub", "subtract", "tanh", "true_divide", "where"]
FUNCTIONAL = ["relu", "sigmoid", "tanh"]
