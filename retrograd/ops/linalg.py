"""Rule table: linear algebra (OPS.md section H).

`matmul` is composed the way torch composes it, so its node is torch's: DotBackward0 (1-d @ 1-d),
MvBackward0 (2-d @ 1-d), SqueezeBackward4 (1-d @ 2-d), MmBackward0 (2-d @ 2-d) and
UnsafeViewBackward0 for batched shapes, where one fused row broadcasts the batch dims (the engine
sums them back, Note [sum_to]).
"""

from __future__ import annotations

from .._tensor import Tensor
from .registry import apply, defop

# ============================================================================================
# Rows
# ============================================================================================


@defop("mm", inputs=("self", "mat2"), self="grad.mm(conj(mat2).t())", mat2="conj(self).t().mm(grad)",
       jvp="self_t.mm(mat2) + self.mm(mat2_t)")
def mm_op(xp, a, b):
    return xp.matmul(a, b)


@defop("mv", inputs=("self", "vec"), self="outer(grad, conj(vec))", vec="conj(self).t().mv(grad)",
       jvp="self_t.mv(vec) + self.mv(vec_t)")
def mv_op(xp, a, v):
    return xp.matmul(a, v)


@defop("dot", inputs=("self", "tensor"), self="grad * conj(tensor)", tensor="grad * conj(self)",
       jvp="dot(self_t, tensor) + dot(self, tensor_t)")
def dot_op(xp, a, b):
    return xp.dot(a, b)


@defop("bmm", inputs=("self", "mat2"), self="grad.bmm(conj(mat2).transpose(1, 2))",
       mat2="conj(self).transpose(1, 2).bmm(grad)", jvp="self_t.bmm(mat2) + self.bmm(mat2_t)")
def bmm_op(xp, a, b):
    return xp.matmul(a, b)


@defop("outer", node="MulBackward0", inputs=("self", "vec2"), self="(grad * conj(vec2)).sum(1)",
       vec2="(grad * conj(self).unsqueeze(1)).sum(0)", jvp="outer(self_t, vec2) + outer(self, vec2_t)")
def outer_op(xp, a, b):
    return xp.multiply.outer(a, b)


@defop("matmul_nd", node="UnsafeViewBackward0", inputs=("self", "other"),
       self="matmul_grad_left(grad, other, len(self_shape))", other="matmul_grad_right(grad, self, len(other_shape))",
       jvp="matmul(self_t, other) + matmul(self, other_t)")
def matmul_nd(xp, a, b):
    return xp.matmul(a, b)


matmul_vec_mat = matmul_nd.alias("matmul_vec_mat", "SqueezeBackward4")
matmul_mat_batch = matmul_nd.alias("matmul_mat_batch", "CloneBackward0")  # torch: (b.mT @ a.mT).mT.contiguous()


# ============================================================================================
# Formula helpers
# ============================================================================================


def matmul_grad_left(grad: Tensor, other: Tensor, self_ndim: int) -> Tensor:
    """d(a @ b)/da for any matmul shapes; extra batch dims are summed away by the engine."""
    other = conj(other)
    if other.ndim == 1:
        return grad.unsqueeze(-1) * other
    if self_ndim == 1:
        return matmul(grad.unsqueeze(-2), other.mT).squeeze(-2)
    return matmul(grad, other.mT)


def matmul_grad_right(grad: Tensor, self: Tensor, other_ndim: int) -> Tensor:
    """d(a @ b)/db for any matmul shapes."""
    self = conj(self)
    if self.ndim == 1:
        return self.unsqueeze(-1) * grad.unsqueeze(-2) if other_ndim > 1 else grad.unsqueeze(-1) * self
    if other_ndim == 1:
        return matmul(self.mT, grad.unsqueeze(-1)).squeeze(-1)
    return matmul(self.mT, grad)


# ============================================================================================
# Public functions
# ============================================================================================


def _check_dtypes(name: str, a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        from .reduction import _legacy_name

        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_legacy_name(a.dtype).lower()} != "
                           f"{_legacy_name(b.dtype).lower()}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-d tensors."""
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError(f"{'self' if input._data.ndim != 2 else 'mat2'} must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        (n, k), (k2, m) = input._data.shape, mat2._data.shape
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _check_dtypes("mm", input, mat2)
    return apply(mm_op, (input, mat2))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec._data.ndim}, {input._data.ndim}, "
                           f"{vec._data.ndim}")
    if input._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0]}), mat ({input._data.shape[0]}x"
                           f"{input._data.shape[1]}), vec ({vec._data.shape[0]})")
    _check_dtypes("mv", input, vec)
    return apply(mv_op, (input, vec))


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-d tensors."""
    if input._data.ndim != 1 or tensor._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {tensor._data.ndim}D tensors")
    if input._data.shape != tensor._data.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input._data.shape[0]}] and src "
                           f"[{tensor._data.shape[0]}] to have the same number of elements, but got "
                           f"{input._data.shape[0]} and {tensor._data.shape[0]} elements respectively")
    if input._data.dtype != tensor._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype.name.capitalize()} "
                           f"and {tensor.dtype.name.capitalize()}")
    return apply(dot_op, (input, tensor))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of (b, n, m) and (b, m, p) tensors."""
    if input._data.ndim != 3 or mat2._data.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if input._data.ndim != 3 else "batch2 must be a 3D tensor")
    (b, n, k), (b2, k2, m) = input._data.shape, mat2._data.shape
    if b != b2 or k != k2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
                           f"[{b2}, {k2}].")
    _check_dtypes("bmm", input, mat2)
    return apply(bmm_op, (input, mat2))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-d tensors."""
    return apply(outer_op, (input, vec2))


ger = outer


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product for every shape combination, as torch.matmul (batch dims broadcast)."""
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 2 and db == 2:
        return mm(input, other)
    ka = input._data.shape[-1]
    kb = other._data.shape[-2] if db > 1 else other._data.shape[0]
    if ka != kb:
        if da == 1:
            raise RuntimeError(f"size mismatch, got input ({ka}), mat ({ka}x{other._data.shape[-1]}), vec ({kb})")
        a2 = input._data.shape if da > 1 else (1, ka)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({int(_prod(a2[:-1]))}x{ka} and "
                           f"{kb}x{other._data.shape[-1]})")
    _check_dtypes("matmul", input, other)
    op = matmul_vec_mat if da == 1 and db == 2 else matmul_mat_batch if da == 2 and db >= 3 else matmul_nd
    return apply(op, (input, other))


def _prod(values: tuple) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def conj(x: Tensor) -> Tensor:
    from .pointwise import conj as _conj

    return _conj(x)


__all__ = ["bmm", "dot", "ger", "matmul", "mm", "mv", "outer"]
