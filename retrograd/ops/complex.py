"""Rule table: complex numbers (OPS.md section J).

Gradients follow torch's convention for complex inputs: for a real-valued loss L of z = x + iy,
z.grad = dL/dx + i dL/dy (the conjugate Wirtinger derivative, times two). Every rule therefore
multiplies the incoming gradient by the *conjugate* of the local derivative, and a real input
fed into a complex result receives the real part of its gradient (the engine casts, `_fit`).

`real` and `imag` are views made as torch makes them: `view_as_real(z).select(-1, k)`, so their
node is SelectBackward0 over ViewAsRealBackward0. `conj` conjugates at once (a copy, not a view) but
records torch's node name, ConjBackward0, and sets torch's conjugate bit (Note [conjugate and negative
bits]); so `real` and `imag` of a tensor with that bit are torch's: of its `_conj`, then a `_neg_view`
for `imag`.
"""

# Note [conjugate and negative bits]
# torch's `conj` of a complex tensor is a lazy view: the same memory read conjugated, marked by the
# conjugate bit (is_conj); `_neg_view` likewise sets the negative bit (is_neg), and so does `imag` of
# a conjugate view. NumPy has no lazy conjugation, so retrograd computes their values at once (a
# copy, not a view) and keeps torch's bits as metadata on the result (`_tensor.lazy_bits`), where
# torch would set them: conj and _neg_view flip one bit of their input's, views
# (registry._mark_views) and `detach` keep their source's; every other op's result has none, as
# torch's materialised results. The bits decide what torch decides by them: resolve_conj and
# resolve_neg (a clone without bits, CloneBackward0, where a bit is set) and forward AD's make_dual
# (a tangent whose bits differ from its primal's is copied, with the primal's bits). What the copy
# cannot give: a write through `x.conj()` or `x._neg_view()` does not reach x, x.conj()._base is
# None, and an in-place op on it records its own node (torch's regenerates the view's ConjBackward0
# over CopySlices on x). Not done: torch's refusals of numpy() and view_as_real on a tensor with a
# bit, because a derivative formula here may end in `conj` where torch's kernel gives a plain tensor
# (a conv or sinc gradient), so a gradient or tangent can carry a bit torch's has not.

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dtype as D
from .._creation import zeros_like
from .._tensor import Tensor, lazy_bits, set_lazy_bits
from . import arrays as A
from .registry import apply, defop

# ============================================================================================
# Views between complex tensors and pairs of reals
# ============================================================================================


@defop("view_as_real", view=True, self="view_as_complex_op(grad.contiguous())", jvp="view_as_real(self_t)")
def view_as_real_op(xp, z):
    if xp is not np:  # the standard has no strided views: the parts stacked, a copy
        return xp.stack([xp.real(z), xp.imag(z)], axis=-1)
    if D.is_complex32(z):  # its two float16 fields as a trailing dim (Note [complex32])
        return D.complex32_parts(z)
    parts = z.real  # a view of the real parts; each imaginary part sits one real item further on
    return xp.lib.stride_tricks.as_strided(parts, z.shape + (2,), z.strides + (parts.itemsize,))


@defop("view_as_complex", view=True, self="view_as_real(grad.contiguous().resolve_conj())",
       jvp="view_as_complex(self_t)")
def view_as_complex_op(xp, x):
    if xp is not np:  # the standard has no strided views: the parts joined, a copy
        return _from_parts(xp, x[..., 0], x[..., 1])
    if x.size == 0:  # nothing to share; NumPy gives some empty arrays zero strides, which .view refuses
        return xp.empty(x.shape[:-1], dtype=COMPLEX_OF[x.dtype.name])
    return x.view(COMPLEX_OF[x.dtype.name])[..., 0]


COMPLEX_OF = {"float16": D.NUMPY_COMPLEX32, "float32": "complex64", "float64": "complex128"}

# ============================================================================================
# Conjugation, angle, construction from parts
# ============================================================================================


@defop("conj", node="ConjBackward0", self="conj(grad)", jvp="conj(self_t)")
def conj_op(xp, z):
    return xp.conj(z)


@defop("_neg_view", node="NegViewBackward0", self="grad.neg()", jvp="_neg_view(self_t)")
def neg_view_op(xp, x):
    return xp.negative(x)


@defop("conj_physical", self="conj_physical(grad)", jvp="conj_physical(self_t)")
def conj_physical_op(xp, z):
    return xp.conj(z)


@defop("angle", promote="float", self="angle_backward(grad, self)", jvp="angle_jvp(self_t, self)")
def angle_op(xp, z):
    if D.kind(z) == "c":  # NumPy's angle is this atan2, which the standard has
        return xp.angle(z) if xp is np else xp.atan2(xp.imag(z), xp.real(z))
    # torch: pi for negative reals, 0 otherwise (also for -0.0), NaN stays NaN
    pi = xp.asarray(math.pi, dtype=z.dtype, device=z.device)
    return A.astype(xp, xp.where(z < 0, pi, xp.where(z != z, z, 0)), z.dtype, copy=False)


@defop("polar", inputs=("abs", "angle"), abs="real(conj(grad) * sgn(result))",
       angle="real(conj(grad) * result * 1j)",
       jvp="abs_t * polar(ones_like(abs), angle) + angle_t * result * 1j")
def polar_op(xp, r, theta):
    return _from_parts(xp, r * xp.cos(theta), r * xp.sin(theta))


@defop("complex", inputs=("re", "im"), re="real(grad)", im="imag(grad)", jvp="complex(re_t, im_t)")
def complex_op(xp, re, im):
    return _from_parts(xp, re, im)


def _from_parts(xp, re, im):
    """A complex array of the real dtype's precision from broadcast real and imaginary parts (Note [complex numbers
    from parts])."""
    if xp is not np:
        return _from_parts_standard(xp, re, im)
    shape = xp.broadcast_shapes(re.shape, im.shape)
    out = xp.empty(shape, dtype=COMPLEX_OF[re.dtype.name])
    out.real = re
    out.imag = im
    return out


# Note [complex numbers from parts]
# NumPy writes the parts into a complex array's memory (`out.real = re`); the standard has no such views, and
# re + im * 1j is not exact: the product computes im * 0 for its real part (NaN for an infinite im) and both sums
# lose signs of zero (-0.0 + 0.0 is +0.0). So the standard's path builds each part from an exact operation:
# astype(im) is (im, +0), conj of it (im, -0), times 1j (+0, im) exactly (im * 1 + -0 * 0 keeps even -0), and
# -conj of that (-0, im); conj(astype(re)) is (re, -0), and adding the two gives (re + -0, -0 + im) = (re, im),
# since x + -0 is x for every x. An infinite or NaN im, whose product would be NaN, takes the constant (-0, im)
# instead. Bit for bit NumPy's result (tests/test_complex.py).


def _from_parts_standard(xp, re, im):
    """_from_parts on arrays without writable parts: each part from exact operations (Note above)."""
    dtype = xp.complex128 if re.dtype == xp.float64 else xp.complex64
    re, im = xp.broadcast_arrays(re, im)
    finite = xp.isfinite(im)
    unit = xp.conj(xp.astype(xp.where(finite, im, 0.0), dtype)) * 1j  # (+0, im)
    nan, inf, minus_inf = (xp.asarray(builtins.complex(-0.0, v), dtype=dtype, device=im.device)
                           for v in (math.nan, math.inf, -math.inf))
    not_finite = xp.where(im != im, nan, xp.where(im > 0, inf, minus_inf))
    return xp.conj(xp.astype(re, dtype)) + xp.where(finite, -xp.conj(unit), not_finite)


# ============================================================================================
# Public functions
# ============================================================================================


def view_as_real(input: Tensor) -> Tensor:
    """A real view of a complex tensor with a trailing dimension of 2 (real, imaginary)."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(view_as_real_op, (input,))


def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of a real tensor whose last dimension holds (real, imaginary) pairs."""
    data = input._data
    if input.dtype.name not in COMPLEX_OF:
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {D.scalar_type_name(input.dtype)}")
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    # strides of empty tensors are not checked: NumPy gives some of them zero strides where torch's are regular;
    # nor those of the standard's arrays, which have none (their view_as_complex is a copy)
    if not hasattr(data, "strides") or not data.size:
        return apply(view_as_complex_op, (input,))
    if data.strides[-1] != data.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * data.itemsize) for s, n in zip(data.strides[:-1], data.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return apply(view_as_complex_op, (input,))


def real(input: Tensor) -> Tensor:
    """The real part: a view for complex tensors (of the resolved conjugate where the conjugate bit is set,
    as torch's), the tensor itself otherwise."""
    if not input.is_complex():
        return input
    return view_as_real(_conj(input) if lazy_bits(input)[0] else input).select(-1, 0)


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view; where the conjugate bit is set, torch's
    negative view of the resolved conjugate's."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if lazy_bits(input)[0]:
        return _neg_view(view_as_real(_conj(input))).select(-1, 1)
    return view_as_real(input).select(-1, 1)


def conj(input: Tensor | complex) -> Tensor | complex:
    """The complex conjugate, with the conjugate bit flipped; real tensors (and real numbers) as they are."""
    if isinstance(input, Tensor):
        data = input._data
        if type(data) is np.ndarray:  # most formulas call conj: NumPy's dtype kind, without the dtype lookup
            kind = data.dtype.kind
            if kind != "c" and (kind != "V" or data.dtype is D.NUMPY_BFLOAT16):  # complex32's is 'V'
                return input
        elif not input.dtype.is_complex:
            return input
        conj_bit, neg = lazy_bits(input)
        return set_lazy_bits(apply(conj_op, (input,)), (not conj_bit, neg))
    return input.conjugate() if isinstance(input, builtins.complex) else input


def _conj(input: Tensor) -> Tensor:
    """torch._conj: `conj` for complex tensors."""
    return conj(input)


def _neg_view(input: Tensor) -> Tensor:
    """The negation, with the negative bit flipped (NegViewBackward0; Note [conjugate and negative bits])."""
    conj_bit, neg = lazy_bits(input)
    return set_lazy_bits(apply(neg_view_op, (input,)), (conj_bit, not neg))


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, always materialised (ConjPhysicalBackward0); real tensors as they are."""
    return apply(conj_physical_op, (input,)) if input.dtype.is_complex else input


def resolve_conj(input: Tensor) -> Tensor:
    """The input itself, or, where its conjugate bit is set, a clone without bits (CloneBackward0)."""
    return input.clone() if lazy_bits(input)[0] else input


def resolve_neg(input: Tensor) -> Tensor:
    """The input itself, or, where its negative bit is set, a clone without bits (CloneBackward0)."""
    return input.clone() if lazy_bits(input)[1] else input


def is_conj(input: Tensor) -> bool:
    """torch's conjugate bit (Note [conjugate and negative bits])."""
    return lazy_bits(input)[0]


def is_neg(input: Tensor) -> bool:
    """torch's negative bit (Note [conjugate and negative bits])."""
    return lazy_bits(input)[1]


def angle(input: Tensor) -> Tensor:
    """The argument of each element (radians); for real tensors pi where negative, else 0."""
    return apply(angle_op, (input,))


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """abs * (cos(angle) + i sin(angle)), elementwise."""
    _check_parts(abs, angle)
    return apply(polar_op, (abs, angle))


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """real + i imag from two real tensors of the same floating dtype."""
    _check_parts(real, imag)
    return apply(complex_op, (real, imag))


def _check_parts(a: Tensor, b: Tensor) -> None:
    """torch's checks on the two real parts of `complex` and `polar`."""
    na, nb = a.dtype.name, b.dtype.name
    if na not in COMPLEX_OF or nb not in COMPLEX_OF:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{D.scalar_type_name(a.dtype)} and {D.scalar_type_name(b.dtype)}")
    if na != nb:
        raise RuntimeError(f"Expected object of scalar type {D.scalar_type_name(a.dtype)} but got scalar type "
                           f"{D.scalar_type_name(b.dtype)} for "
                           "second argument")


# ============================================================================================
# Formula helpers
# ============================================================================================


def angle_backward(grad: Tensor, self: Tensor) -> Tensor:
    """d angle: i z / |z|^2 for complex z (0 at z = 0); nothing flows to a real input."""
    from .pointwise import where  # pointwise imports this family at its top

    if not self.is_complex():
        return zeros_like(self)
    return where(self == 0, 0, grad * self / (self.abs() ** 2) * 1j)


def angle_jvp(self_t: Tensor, self: Tensor) -> Tensor:
    """Tangent of the angle: Im(conj(z) dz) / |z|^2, and 0 for real inputs."""
    from .pointwise import where  # pointwise imports this family at its top

    if not self.is_complex():
        return zeros_like(real(self_t))
    return where(self == 0, 0, imag(conj(self) * self_t) / (self.abs() ** 2))


__all__ = ["angle", "complex", "conj", "conj_physical", "imag", "is_conj", "is_neg", "polar", "real", "resolve_conj",
           "resolve_neg", "view_as_complex", "view_as_real"]
METHODS = ["angle", "conj_physical", "resolve_conj", "resolve_neg", "_conj", "_neg_view"]
INPLACE = ["conj_physical"]
