"""Rule table: indexing, gather and scatter (OPS.md section G).

`x[key]` is split the way torch splits it, so grad_fn names match: integers become `select`,
slices `slice`, None `unsqueeze` (all views), and tensor/list/bool indices one `index` op whose
backward accumulates into duplicate positions (`x[[0, 0]]` gives grad 2 at 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._tensor import Tensor, _wrap, _wrap_dim
from .registry import apply, defop

# ============================================================================================
# Rows
# ============================================================================================


@defop("index", params=("indices",), self="index_put_zeros(grad, self_shape, indices)",
       jvp="index_op(self_t, indices)")
def index_op(xp, x, indices):
    return x[indices]


@defop("index_put", node="IndexPutBackward0", inputs=("self", "values"), params=("indices", "accumulate"),
       self="grad if accumulate else masked_at(grad, indices)", values="index_op(grad, indices)",
       jvp="index_put(self_t, values_t, indices, accumulate)")
def index_put(xp, x, values, indices, accumulate):
    out = x.copy()
    values = xp.asarray(values, dtype=x.dtype)
    if accumulate:
        xp.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


# `x[basic] = v` is the same computation; torch names its node CopySlices.
copy_slices_put = index_put.alias("copy_slices_put", "CopySlices")


@defop("gather", params=("dim", "index"), self="zeros_scatter_add(grad, self_shape, dim, index)",
       jvp="self_t.gather(dim, index)")
def gather_op(xp, x, dim, index):
    return xp.take_along_axis(x, index, axis=dim)


@defop("scatter", node="ScatterBackward0", inputs=("self", "src"), params=("dim", "index"),
       self="grad.scatter(dim, index, 0)", src="grad.gather(dim, index)",
       jvp="self_t.scatter(dim, index, src_t)")
def scatter_op(xp, x, src, dim, index):
    out = x.copy()
    if isinstance(src, np.ndarray) and src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    xp.put_along_axis(out, index, src, axis=dim)
    return out


@defop("scatter_add", inputs=("self", "src"), params=("dim", "index"),
       self="grad", src="grad.gather(dim, index)", jvp="self_t.scatter_add(dim, index, src_t)")
def scatter_add_op(xp, x, src, dim, index):
    out = x.copy()
    if src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]
    idx = list(np.indices(index.shape, sparse=True))
    idx[dim] = index
    xp.add.at(out, tuple(idx), src)
    return out


@defop("masked_fill", inputs=("self", "value"), params=("mask",), promote=None,
       self="grad.masked_fill(mask, 0)", value="grad.masked_select(mask).sum() if value_shape == () else None",
       jvp="self_t.masked_fill(mask, 0)")
def masked_fill_op(xp, x, value, mask):
    return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)


# ============================================================================================
# Formula helpers
# ============================================================================================


def index_put_zeros(grad: Tensor, shape: tuple, indices: tuple) -> Tensor:
    """The adjoint of indexing: grad added into zeros at the indexed places (duplicates add up)."""
    from .. import zeros

    return apply(index_put, (zeros(shape, dtype=grad.dtype), grad), (indices, True))


def masked_at(grad: Tensor, indices: tuple) -> Tensor:
    """grad with the indexed places set to zero (what an overwritten region receives)."""
    return apply(index_put, (grad, 0.0), (indices, False))


def zeros_scatter_add(grad: Tensor, shape: tuple, dim: int, index: np.ndarray) -> Tensor:
    from .. import zeros

    return apply(scatter_add_op, (zeros(shape, dtype=grad.dtype), grad), (dim, index))


# ============================================================================================
# Public functions
# ============================================================================================


def _as_index(value: object) -> object:
    """An index array for NumPy from a tensor, list or array (ints as int64, masks as bool)."""
    if isinstance(value, Tensor):
        arr = value._data
    else:
        arr = np.asarray(value)
        if arr.dtype == object:
            arr = np.asarray([v._data if isinstance(v, Tensor) else v for v in value])
    if arr.dtype.kind not in "biu":
        if arr.size == 0:
            return arr.astype(np.int64)
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr


def _is_advanced(k: object) -> bool:
    return isinstance(k, (Tensor, list, np.ndarray, tuple)) or (isinstance(k, np.generic) and k.dtype == bool) \
        or isinstance(k, bool)


def getitem(self: Tensor, key: object) -> Tensor:
    """x[key] with torch's decomposition into select / slice / unsqueeze views and one index op."""
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(_as_index(k) if isinstance(k, (Tensor, list, np.ndarray)) else k for k in key)
    consumed = 0
    for k in key:
        if isinstance(k, np.ndarray):
            consumed += k.ndim if k.dtype == bool else 1
        elif k is not None and k is not Ellipsis and not isinstance(k, bool):
            consumed += 1
    if consumed > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim}")
    for pos, k in enumerate(key):
        if k is Ellipsis:
            key = key[:pos] + (slice(None),) * (self._data.ndim - consumed) + key[pos + 1:]
            break
    out = self
    dim = 0
    advanced: list = []  # the key for the final index op, over out's dims
    has_advanced = False
    for k in key:
        if k is None:
            out = out.unsqueeze(dim)
            advanced.append(slice(None))
            dim += 1
        elif isinstance(k, bool) or (isinstance(k, (int, np.integer)) and not isinstance(k, bool)):
            if isinstance(k, bool):
                out = out.unsqueeze(dim)
                advanced.append(np.array([True]) if k else np.array([False]))
                has_advanced = True
                dim += 1
                continue
            size = out._data.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
            out = out.select(dim, int(k))
        elif isinstance(k, slice):
            size = out._data.shape[dim]
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if (start, stop, step) != (0, size, 1):
                out = apply(_slice_op(), (out,), (dim, start, max(stop, start), step))
            advanced.append(slice(None))
            dim += 1
        else:
            advanced.append(k)
            has_advanced = True
            dim += k.ndim if k.dtype == bool else 1
    if has_advanced:
        out = apply(index_op, (out,), (_normalise_index(tuple(advanced), out._data.shape),))
    elif out is self:
        out = apply(_view_alias(), (self,), (self._data.shape,))
    return out


def _slice_op() -> object:
    from .shape import slice_op

    return slice_op


def _view_alias() -> object:
    from .shape import view_op

    return view_op


def _normalise_index(key: tuple, shape: tuple) -> tuple:
    """Bounds-check integer index arrays with torch's message and drop trailing full slices."""
    dim = 0
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype != bool:
            size = shape[dim]
            if k.size and (k.max() >= size or k.min() < -size):
                bad = int(k.max() if k.max() >= size else k.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
            dim += 1
        elif isinstance(k, np.ndarray):
            if k.shape != shape[dim:dim + k.ndim]:
                raise IndexError(f"The shape of the mask {list(k.shape)} at index {dim} does not match the shape of "
                                 f"the indexed tensor {list(shape[dim:dim + k.ndim])} at index {dim}")
            dim += k.ndim
        else:
            dim += 1
    while key and isinstance(key[-1], slice):
        key = key[:-1]
    return key


def setitem(self: Tensor, key: object, value: Tensor | complex) -> None:
    """x[key] = value, in place: CopySlices for basic keys, IndexPutBackward0 for advanced ones."""
    self._check_inplace()
    if not isinstance(key, tuple):
        key = (key,)
    np_key = tuple(_as_index(k) if _is_advanced(k) and not isinstance(k, bool) else k for k in key)
    advanced = any(isinstance(k, np.ndarray) for k in np_key)
    if isinstance(value, Tensor) and value._data.dtype != self._data.dtype:
        value = value.to(self.dtype)
    target_shape = np.empty(self._data.shape, dtype=bool)[np_key].shape
    if isinstance(value, Tensor):
        try:
            np.broadcast_shapes(value._data.shape, target_shape)
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                               f"indexing result of shape {list(target_shape)}") from None
    op = index_put if advanced else copy_slices_put
    self._become(apply(op, (self, value), (np_key, False)))


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim=0): values picked along dim."""
    d = _wrap_dim(dim, input._data.ndim)
    idx = index._data
    if idx.dtype != np.int64:
        raise RuntimeError("gather(): Expected dtype int64 for index")
    if idx.ndim != input._data.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    sizes = input._data.shape
    for i in range(idx.ndim):
        if i != d and idx.shape[i] > sizes[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(sizes)} apart from dimension {d}")
    if any(idx.shape[i] < sizes[i] for i in range(idx.ndim) if i != d):  # torch reads only the leading part
        input = input[tuple(slice(0, n) if i != d else slice(None) for i, n in enumerate(idx.shape))]
    return apply(gather_op, (input,), (d, idx))


def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | float = None, *, value: float | None = None,
            reduce: str | None = None) -> Tensor:
    """A copy of input with src (or value) written at index along dim."""
    if src is None:
        src = value
    d = _wrap_dim(dim, input._data.ndim)
    if reduce is not None:
        raise NotImplementedError("scatter(reduce=...) is not supported; use scatter_reduce")
    return apply(scatter_op, (input, src), (d, index._data if isinstance(index, Tensor) else index))


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of input with src added at index along dim (duplicates add up)."""
    d = _wrap_dim(dim, input._data.ndim)
    return apply(scatter_add_op, (input, src), (d, index._data if isinstance(index, Tensor) else index))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices at `index` along dim."""
    d = _wrap_dim(dim, input._data.ndim)
    idx = _as_index(index)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    return apply(index_op, (input,), (_normalise_index((slice(None),) * d + (idx.reshape(-1),), input._data.shape),))


def masked_fill(input: Tensor, mask: Tensor, value: Tensor | float) -> Tensor:
    """input with `value` where mask is True (no gradient through the masked places)."""
    m = mask._data
    if m.dtype != bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if isinstance(value, Tensor) and value._data.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value._data.ndim} dimension(s).")
    return apply(masked_fill_op, (input, value), (m,))


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where mask is True, as a 1-d tensor."""
    shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    x = input.expand(shape) if input._data.shape != shape else input
    return apply(index_op, (x,), ((np.broadcast_to(mask._data, shape),),))


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or one tensor per dim."""
    idx = np.nonzero(input._data if input._data.ndim else input._data.reshape(1))
    if as_tuple:
        return tuple(_wrap(i.astype(np.int64)) for i in idx)
    return _wrap(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = _wrap_dim(dim, input._data.ndim)
    shape = list(np.broadcast_shapes(input._data.shape[:d] + (1,) + input._data.shape[d + 1:],
                                     indices._data.shape[:d] + (1,) + indices._data.shape[d + 1:]))
    s_in, s_idx = list(shape), list(shape)
    s_in[d], s_idx[d] = input._data.shape[d], indices._data.shape[d]
    return gather(input.expand(s_in), d, _wrap(np.broadcast_to(indices._data, s_idx)))


__all__ = ["gather", "index_select", "masked_fill", "masked_select", "nonzero", "scatter", "scatter_add", "take_along_dim"]
