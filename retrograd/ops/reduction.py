"""Rule table: reductions (OPS.md section D).

Torch names the whole-tensor and the along-`dim` overloads differently (SumBackward0 vs
SumBackward1, MaxBackward1 vs MaxBackward0), so each overload is its own row.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Sequence

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from .registry import apply, defop

# ============================================================================================
# Rows
# ============================================================================================


@defop("sum_all", node="SumBackward0", params=("dtype",), self="grad.expand(self_shape)",
       jvp="self_t.sum()")
def sum_all(xp, x, dtype):
    return xp.sum(x, dtype=dtype)


@defop("sum_dim", node="SumBackward1", params=("dim", "keepdim", "dtype"),
       self="restore_reduced_dims(grad, dim, keepdim, len(self_shape)).expand(self_shape)",
       jvp="self_t.sum(dim, keepdim)")
def sum_dim(xp, x, dim, keepdim, dtype):
    return xp.sum(x, axis=dim, keepdims=keepdim, dtype=dtype)


@defop("mean_all", node="MeanBackward0", self="grad.expand(self_shape) / math.prod(self_shape)",
       jvp="self_t.mean()")
def mean_all(xp, x):
    return xp.mean(x)


@defop("mean_dim", node="MeanBackward1", params=("dim", "keepdim"),
       self="restore_reduced_dims(grad, dim, keepdim, len(self_shape)).expand(self_shape)"
            " / math.prod(self_shape[d] for d in dim)",
       jvp="self_t.mean(dim, keepdim)")
def mean_dim(xp, x, dim, keepdim):
    return xp.mean(x, axis=dim, keepdims=keepdim)


@defop("max_all", node="MaxBackward1", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_distribute_backward(self_t, self, result).sum()")
def max_all(xp, x):
    return xp.max(x)


@defop("min_all", node="MinBackward1", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_distribute_backward(self_t, self, result).sum()")
def min_all(xp, x):
    return xp.min(x)


@defop("max_dim", node="MaxBackward0", params=("dim", "keepdim"), outputs=2, differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grads[0], dim, results[1], self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, results[1], keepdim)")
def max_dim(xp, x, dim, keepdim):
    idx = xp.expand_dims(xp.argmax(x, axis=dim), dim)
    values = xp.take_along_axis(x, idx, axis=dim)
    return (values, idx) if keepdim else (values.squeeze(dim), idx.squeeze(dim))


@defop("min_dim", node="MinBackward0", params=("dim", "keepdim"), outputs=2, differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grads[0], dim, results[1], self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, results[1], keepdim)")
def min_dim(xp, x, dim, keepdim):
    idx = xp.expand_dims(xp.argmin(x, axis=dim), dim)
    values = xp.take_along_axis(x, idx, axis=dim)
    return (values, idx) if keepdim else (values.squeeze(dim), idx.squeeze(dim))


@defop("amax", params=("dim", "keepdim"),
       self="evenly_distribute_reduced(grad, self, result, dim, keepdim)",
       jvp="evenly_distribute_reduced(self_t, self, result, dim, True).sum(dim, keepdim)")
def amax_op(xp, x, dim, keepdim):
    return xp.max(x, axis=dim, keepdims=keepdim)


@defop("amin", params=("dim", "keepdim"),
       self="evenly_distribute_reduced(grad, self, result, dim, keepdim)",
       jvp="evenly_distribute_reduced(self_t, self, result, dim, True).sum(dim, keepdim)")
def amin_op(xp, x, dim, keepdim):
    return xp.min(x, axis=dim, keepdims=keepdim)


@defop("linalg_vector_norm", params=("ord", "dim", "keepdim"),
       self="norm_backward(grad, self, result, ord, dim, keepdim)",
       jvp="norm_jvp(self_t, self, result, ord, dim, keepdim)")
def vector_norm_op(xp, x, ord, dim, keepdim):  # noqa: A002
    a = xp.abs(x)
    if ord == 2:
        out = xp.sqrt(xp.sum((a * a), axis=dim, keepdims=keepdim))
    elif ord == math.inf:
        out = xp.max(a, axis=dim, keepdims=keepdim, initial=0)
    elif ord == -math.inf:
        out = xp.min(a, axis=dim, keepdims=keepdim)
    elif ord == 0:
        out = xp.sum(a != 0, axis=dim, keepdims=keepdim).astype(a.dtype)
    elif ord == 1:
        out = xp.sum(a, axis=dim, keepdims=keepdim)
    else:
        out = xp.sum(a**ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)
    return out.astype(a.dtype, copy=False)


# ============================================================================================
# Formula helpers
# ============================================================================================


def restore_reduced_dims(grad: Tensor, dim: Sequence[int] | None, keepdim: bool, ndim: int) -> Tensor:
    """Put back, as size-1 dims, the dims a reduction removed (so grad broadcasts to the input)."""
    if keepdim:
        return grad
    dims = range(ndim) if dim is None else sorted(dim)
    for d in dims:
        grad = grad.unsqueeze(d)
    return grad


def evenly_distribute_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """max()/min() over everything: the gradient is split evenly among tied extremes (NaN counts)."""
    mask = (self == result) | (self.isnan() & result.isnan())
    return mask * (grad / mask.sum())


def evenly_distribute_reduced(grad: Tensor, self: Tensor, result: Tensor, dim: Sequence[int] | None,
                              keepdim: bool) -> Tensor:
    """amax/amin along dims: each slice's gradient split evenly among its tied extremes."""
    ndim = self.ndim
    r = restore_reduced_dims(result, dim, keepdim, ndim)
    g = restore_reduced_dims(grad, dim, keepdim, ndim)
    mask = self == r
    count = mask.sum(dim if dim is not None else tuple(range(ndim)), keepdim=True)
    return mask * (g / count)


def value_selecting_reduction_backward(grad: Tensor, dim: int, indices: Tensor, self_shape: tuple,
                                       keepdim: bool) -> Tensor:
    """max(dim)/min(dim)/median(dim)...: the gradient goes to the selected index only."""
    from .. import zeros

    if not keepdim and len(self_shape) > 0:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return zeros(self_shape, dtype=grad.dtype).scatter(dim, indices, grad)


def gather_reduced(t: Tensor, dim: int, indices: Tensor, keepdim: bool) -> Tensor:
    """The forward-mode counterpart: pick each slice's tangent at the selected index."""
    idx = indices if keepdim else indices.unsqueeze(dim)
    out = t.gather(dim, idx)
    return out if keepdim else out.squeeze(dim)


def norm_backward(grad: Tensor, self: Tensor, result: Tensor, ord: float, dim: Sequence[int] | None,
                  keepdim: bool) -> Tensor:  # noqa: A002
    """Gradient of the vector p-norm, 0 where the norm is 0 (torch's subgradient)."""
    from .pointwise import sgn, where

    ndim = self.ndim
    g = restore_reduced_dims(grad, dim, keepdim, ndim)
    r = restore_reduced_dims(result, dim, keepdim, ndim)
    if ord == 0:
        return self * 0
    if ord == 1:
        return sgn(self) * g
    if ord == 2:
        return self * where(r == 0, 0.0, g / r)
    if math.isinf(ord):
        return evenly_distribute_reduced(grad, self.abs(), result, dim, keepdim) * sgn(self)
    a = self.abs()
    return sgn(self) * a.pow(ord - 1) * where(r == 0, 0.0, g / r.pow(ord - 1))


def norm_jvp(t: Tensor, self: Tensor, result: Tensor, ord: float, dim: Sequence[int] | None,
             keepdim: bool) -> Tensor:  # noqa: A002
    ones = result * 0 + 1
    return (norm_backward(ones, self, result, ord, dim, keepdim) * t).sum(
        tuple(range(self.ndim)) if dim is None else dim, keepdim=keepdim)


# ============================================================================================
# Public functions
# ============================================================================================

return_types_max = namedtuple("max", ["values", "indices"])
return_types_min = namedtuple("min", ["values", "indices"])


def _dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """Normalise `dim` (int, sequence or None) to a sorted tuple of non-negative dims."""
    if dim is None:
        return None
    if isinstance(dim, int) or (isinstance(dim, Tensor) and dim.ndim == 0):
        return (_wrap_dim(int(dim), ndim),)
    out = tuple(sorted({_wrap_dim(int(d), ndim) for d in dim}))
    if len(out) != len(tuple(dim)):
        raise RuntimeError(f"dim {_wrap_dim(int(next(iter(dim))), ndim)} appears multiple times in the list of dims")
    return out


def _sum_dtype(input: Tensor, dtype: D.dtype | None) -> object:
    if dtype is not None:
        return dtype.np
    return D.int64.np if input._data.dtype.kind in "biu" else None


def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,  # noqa: A001
        dtype: D.dtype | None = None) -> Tensor:
    """Sum over all elements or along `dim`."""
    if dim is None or (not isinstance(dim, int) and not isinstance(dim, Tensor) and len(dim) == 0):
        if dim is None or not keepdim:
            return apply(sum_all, (input,), (_sum_dtype(input, dtype),))
    return apply(sum_dim, (input,), (_dims(dim, input.ndim), keepdim, _sum_dtype(input, dtype)))


def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: D.dtype | None = None) -> Tensor:
    """Arithmetic mean over all elements or along `dim` (floating or complex input only)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {_legacy_name(input.dtype)}"
        )
    if dim is None:
        return apply(mean_all, (input,))
    return apply(mean_dim, (input,), (_dims(dim, input.ndim), keepdim))


def _legacy_name(dt: D.dtype) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "float32": "Float", "float64": "Double"}.get(dt.name, dt.name)


def _extreme(input: Tensor, dim: object, keepdim: bool, name: str, whole: object, along: object,
             result_type: type) -> Tensor | tuple:
    if isinstance(dim, Tensor) and dim.ndim > 0 or (dim is not None and not isinstance(dim, (int, Tensor))):
        from .pointwise import maximum, minimum

        return (maximum if name == "max" else minimum)(input, dim)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return apply(whole, (input,))
    d = _wrap_dim(int(dim), input.ndim)
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if input._data.ndim == 0:
        values, indices = apply(along, (input.reshape(1),), (0, False))
        return result_type(values.reshape(()), indices.reshape(()))
    return result_type(*apply(along, (input,), (d, keepdim)))


def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Tensor | tuple:  # noqa: A001
    """max(x): the largest element; max(x, dim): (values, indices); max(x, y): elementwise."""
    return _extreme(input, dim, keepdim, "max", max_all, max_dim, return_types_max)


def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Tensor | tuple:  # noqa: A001
    """min(x): the smallest element; min(x, dim): (values, indices); min(x, y): elementwise."""
    return _extreme(input, dim, keepdim, "min", min_all, min_dim, return_types_min)


def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """Largest values along dims (all dims if empty); ties share the gradient evenly."""
    dims = _dims(dim, input.ndim) if dim != () else None
    return apply(amax_op, (input,), (dims, keepdim))


def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """Smallest values along dims (all dims if empty); ties share the gradient evenly."""
    dims = _dims(dim, input.ndim) if dim != () else None
    return apply(amin_op, (input,), (dims, keepdim))


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (no gradient)."""
    from .._tensor import _wrap

    xp_ = input._data
    if dim is None:
        out = xp_.argmax()
        return _wrap(out.reshape((1,) * xp_.ndim) if keepdim else out)
    d = _wrap_dim(dim, xp_.ndim)
    out = xp_.argmax(axis=d, keepdims=keepdim) if xp_.ndim else xp_.argmax()
    return _wrap(out)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (no gradient)."""
    from .._tensor import _wrap

    xp_ = input._data
    if dim is None:
        out = xp_.argmin()
        return _wrap(out.reshape((1,) * xp_.ndim) if keepdim else out)
    d = _wrap_dim(dim, xp_.ndim)
    out = xp_.argmin(axis=d, keepdims=keepdim) if xp_.ndim else xp_.argmin()
    return _wrap(out)


def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,  # noqa: A002
                dtype: D.dtype | None = None) -> Tensor:
    """The vector p-norm over all elements or along `dim` (torch.linalg.vector_norm)."""
    if dtype is not None:
        x = x.to(dtype)
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {_legacy_name(x.dtype)}")
    return apply(vector_norm_op, (x,), (float(ord), _dims(dim, x.ndim), keepdim))


def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False,
         dtype: D.dtype | None = None) -> Tensor:
    """torch.norm: the 2-norm by default ('fro' over the given dims), or the vector p-norm."""
    if p is None or p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: p={p!r} is only supported by torch.linalg.matrix_norm")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def all(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (along dim) is nonzero; bool result, no gradient."""
    from .._tensor import _wrap

    a = input._data
    return _wrap(a.all() if dim is None else a.all(axis=_wrap_dim(dim, a.ndim), keepdims=keepdim))


def any(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where some element (along dim) is nonzero; bool result, no gradient."""
    from .._tensor import _wrap

    a = input._data
    return _wrap(a.any() if dim is None else a.any(axis=_wrap_dim(dim, a.ndim), keepdims=keepdim))


__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "max", "mean", "min", "norm", "sum"]
LINALG = ["vector_norm"]
