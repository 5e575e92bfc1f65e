"""Rule table: shape and view ops (OPS.md section F), as adjoint pairs.

View ops (`view=True`) return NumPy views that share memory and the version counter with their
input and remember how they were made (Note [view creation meta]). An in-place change through a view is
recorded on the view's base by `rebase_view` (Note [in-place through views]).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _xp
from .._creation import empty_strided, tensor, zeros
from .._memory_format import cast_preserved, contiguous_format, is_laid_out, laid_out, memory_format, preserve_format
from .._tensor import Size, Tensor, _takes_as_int, _wrap, _wrap_dim, as_int, as_sizes, int_list, live_views, make_stale
from .._warn import warn_once_at_user
from ..autograd import grad_mode
from ..autograd.forward_ad import only_levels, set_tangent
from ..autograd.graph import Node, edge_of, move_retains_grad
from ..storage import root_array, storage_extent
from . import arrays as A
from .registry import (
    DEFAULT,
    FREED_MESSAGE,
    IN_CUSTOM_FUNCTION,
    INFERENCE,
    MULTI_OUTPUT,
    NO_GRAD,
    Op,
    _broadcast_error,
    apply,
    creation_meta,
    defop,
    forward_name,
    unrecorded_arrays,
)
from .registry import sum_to as _sum_to

# ============================================================================================
# Views: reshape, transpose, squeeze, expand, alias
# ============================================================================================


@defop("view", params=("shape",), view=True, self="grad.reshape(self_shape)", jvp="self_t.reshape(shape)")
def view_op(xp, x, shape):
    try:
        if not hasattr(x, "strides"):  # an array API array without a memory layout (Note [choosing a namespace]):
            return xp.reshape(x, shape)  # the library shares its memory where it can
        out = x.view()
        out.shape = shape
    except (AttributeError, ValueError):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead."
        ) from None
    return out


reshape_alias_op = view_op.alias("_reshape_alias", "ReshapeAliasBackward0")  # reshape's view of strided memory


@defop("view_dtype", params=("dtype",))  # torch's view.dtype: no autograd view, its output not differentiable
def view_dtype_op(xp, x, dtype):
    return x.view(D.native(xp, dtype))


@defop("_unsafe_view", node="UnsafeViewBackward0", params=("shape",), self="grad.reshape(self_shape)",
       jvp="self_t.reshape(shape)")
def unsafe_view(xp, x, shape):
    return xp.reshape(x, shape)


@defop("alias", node="AliasBackward0", view=True, self="grad", jvp="self_t")
def alias_op(xp, x):
    return _same(xp, x)


def _same(xp, x):
    """A new array object for x's elements: a NumPy (or CuPy) view, another namespace's reshape to its own shape."""
    return x.view() if hasattr(x, "view") else xp.reshape(x, x.shape)


@defop("transpose", params=("dim0", "dim1"), view=True, self="grad.transpose(dim0, dim1)",
       jvp="self_t.transpose(dim0, dim1)")
def transpose_op(xp, x, dim0, dim1):
    if not x.ndim:
        return _same(xp, x)
    dims = list(range(x.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return xp.permute_dims(x, tuple(dims))


@defop("t", node="TBackward0", view=True, self="t_grad(grad)", jvp="self_t.t()")
def t_op(xp, x):
    if hasattr(x, "strides"):
        return x.T
    return xp.matrix_transpose(x) if x.ndim == 2 else x  # the standard's .T takes 2-d arrays only


# Note [unrecorded transposes]
# A linear layer's weight enters addmm as w.t(), so its gradient passes TBackward0, whose formula transposes
# it back, after AddmmBackward0's NumPy path (Note [unrecorded addmm backward] in linalg.py) made it as the
# transpose of a product. When nothing records them (unrecorded_arrays: no create_graph, forward-mode level,
# vmap or saved-tensor hook), both are NumPy's transposed arrays in new tensors rather than the view op (its
# entry point and view bookkeeping, a microsecond or two each, two per layer and step): the same memory and
# strides, so the weight's gradient still reaches AccumulateGrad as a transposed transpose of a product that
# nothing else holds, which `.grad` keeps without a copy (graph._stealable). Otherwise `grad.t()` records.


def t_grad(grad: Tensor) -> Tensor:
    """The gradient of t(x): grad.t(), as NumPy's transpose when nothing records it (Note [unrecorded
    transposes])."""
    arrays = unrecorded_arrays(grad)
    return grad.t() if arrays is None else _wrap(arrays[0].T)


@defop("permute", params=("dims",), view=True, self="grad.permute(inverse_permutation(dims))",
       jvp="self_t.permute(dims)")
def permute_op(xp, x, dims):
    return xp.permute_dims(x, dims)


@defop("squeeze", node="SqueezeBackward0", view=True, self="grad.reshape(self_shape)", jvp="self_t.squeeze()")
def squeeze_all(xp, x):
    return xp.squeeze(x, axis=tuple(d for d, n in enumerate(x.shape) if n == 1))


@defop("squeeze_dim", node="SqueezeBackward1", params=("dim",), view=True, self="grad.reshape(self_shape)",
       jvp="self_t.squeeze(dim)")
def squeeze_dim(xp, x, dim):
    return xp.squeeze(x, axis=dim) if x.ndim and x.shape[dim] == 1 else _same(xp, x)


@defop("squeeze_dims", node="SqueezeBackward2", params=("dims",), view=True, self="grad.reshape(self_shape)",
       jvp="self_t.squeeze(dims)")
def squeeze_dims(xp, x, dims):
    return xp.squeeze(x, axis=tuple(d for d in dims if x.shape[d] == 1)) if x.ndim else _same(xp, x)


@defop("unsqueeze", params=("dim",), view=True, self="grad.squeeze(dim)", jvp="self_t.unsqueeze(dim)")
def unsqueeze_op(xp, x, dim):
    if not hasattr(x, "strides"):
        return xp.expand_dims(x, axis=dim)
    return A.reshape(xp, x, x.shape[:dim] + (1,) + x.shape[dim:])  # never copies: a size-1 dim takes any stride


def _strided_view(x, shape: tuple, strides: tuple):
    """A view of x's memory with other shape and strides (byte strides from x's first element), writeable
    when x is. A contiguous NumPy array goes through the ndarray constructor (~0.5 µs against as_strided's ~4)."""
    if type(x) is not np.ndarray:  # CuPy's strided arrays (always writeable)
        return _xp.namespace(x).lib.stride_tricks.as_strided(x, shape, strides)
    if x.flags.c_contiguous:
        return np.ndarray(shape, x.dtype, x, 0, strides)
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=x.flags.writeable)


@defop("expand", params=("shape",), view=True, self="sum_to(grad, self_shape)", jvp="self_t.expand(shape)")
def expand_op(xp, x, shape):
    if type(x) is np.ndarray and not x.ndim:  # a reduction's gradient: one element, contiguous, seen everywhere
        return np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
    if not hasattr(x, "strides"):
        return xp.broadcast_to(x, shape)
    lead = len(shape) - x.ndim
    strides = (0,) * lead  # a 0-d source (a reduction's gradient) needs no more
    if x.ndim:
        strides += tuple([0 if n == 1 and m != 1 else s for n, m, s in zip(x.shape, shape[lead:], x.strides)])
    return _strided_view(x, shape, strides)


# ============================================================================================
# Copies: clone, casts
# ============================================================================================


@defop("clone", params=("memory_format",), self="grad", jvp="self_t.clone()")
def clone_op(xp, x, memory_format):
    if not hasattr(x, "strides"):
        return xp.asarray(x, copy=True)
    # torch's default is preserve_format: a channels_last or transposed input's copy keeps its layout
    return laid_out(x, preserve_format if memory_format is None else memory_format)


# torch's _to_copy_backward: a complex gradient of a real input is its real part (no ComplexWarning)
@defop("_to_copy", node="ToCopyBackward0", params=("dtype", "memory_format"),
       self="cast_to(real(grad) if D.kind(self_dtype) != 'c' else grad, self_dtype)",
       jvp="cast_to(self_t, dtype)")
def to_copy(xp, x, dtype, memory_format):
    if D.kind(x) == "c" and dtype.kind != "c" and dtype.names is None:  # to a real dtype (complex32 has names):
        # torch's copy warns once; NumPy's own warning is not given
        warn_once_at_user("Casting complex values to real discards the imaginary part (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/Copy.cpp:307.)")
        x = xp.real(x)
    if not hasattr(x, "strides"):
        return xp.astype(x, D.native(xp, dtype))
    out = A.astype(xp, x, dtype)
    return cast_preserved(out, x) if memory_format is None else laid_out(out, memory_format)


@defop("_to_device", node="ToCopyBackward0", params=("device", "source"), self="to_device(grad, source, device)",
       jvp="to_device(self_t, device, source)")
def to_device_op(xp, x, device, source):
    return _xp.transfer(x, *device)


def to_device(t: Tensor, device: tuple, source: tuple | None = None) -> Tensor:
    """`t` copied to the torch device (type, index) (ToCopyBackward0; the gradient goes back to `source`)."""
    source = _xp.locate(t._data) if source is None else source
    return t if source == device else apply(to_device_op, (t,), (device, source))


# ============================================================================================
# Joining and splitting
# ============================================================================================


@defop("cat", inputs=("*tensors",), params=("dim",),
       tensors="cat_backward(grad, tensors_shape, dim)",
       jvp="cat_op(tensors_t, dim)")
def cat_op(xp, arrays, dim):
    ndim = max(a.ndim for a in arrays)
    return xp.concat([a for a in arrays if a.ndim == ndim], axis=dim)  # torch skips 1-d empty tensors


@defop("block_diag", inputs=("*tensors",), node="BlockDiagBackward0",
       tensors="block_diag_backward(grad, tensors_shape)", jvp="block_diag_op(tensors_t)")
def block_diag_op(xp, arrays):
    blocks = [A.reshape(xp, a, (1,) * (2 - a.ndim) + tuple(a.shape)) for a in arrays]  # 0-d, 1-d: one row
    out = xp.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)), dtype=arrays[0].dtype,
                   device=arrays[0].device)
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


@defop("stack", inputs=("*tensors",), params=("dim",), tensors="grad.unbind(dim)", jvp="stack(tensors_t, dim)")
def stack_op(xp, arrays, dim):
    return xp.stack(arrays, axis=dim)


@defop("unbind", params=("dim",), view=True, outputs=-1, self="stack(grads, dim)", jvp="self_t.unbind(dim)")
def unbind_op(xp, x, dim):
    moved = xp.moveaxis(x, dim, 0)
    return tuple(moved[i, ...] for i in range(moved.shape[0]))  # `...` keeps 0-d results views, not scalars


@defop("split", node="SplitBackward0", params=("split_size", "dim"), view=True, outputs=-1,
       self="cat(grads, dim)", jvp="split_op(self_t, split_size, dim)")
def split_op(xp, x, split_size, dim):
    return _split_at(xp, x, _chunk_sizes(x.shape[dim], split_size), dim)


@defop("split_with_sizes", node="SplitWithSizesBackward0", params=("sizes", "dim"), view=True, outputs=-1,
       self="cat(grads, dim)", jvp="split_with_sizes_op(self_t, sizes, dim)")
def split_with_sizes_op(xp, x, sizes, dim):
    return _split_at(xp, x, sizes, dim)


# torch's unsafe_split family: the same pieces and gradient, sharing the input's memory without being
# tracked as its views (no shared version counter, no view checks on in-place writes): the caller
# promises not to write into them while the input is still needed.
@defop("unsafe_split", node="UnsafeSplitBackward0", params=("split_size", "dim"), outputs=-1,
       self="cat(grads, dim)", jvp="unsafe_split_op(self_t, split_size, dim)")
def unsafe_split_op(xp, x, split_size, dim):
    return split_op.forward(xp, x, split_size, dim)


@defop("unsafe_split_with_sizes", node="UnsafeSplitWithSizesBackward0", params=("sizes", "dim"), outputs=-1,
       self="cat(grads, dim)", jvp="unsafe_split_with_sizes_op(self_t, sizes, dim)")
def unsafe_split_with_sizes_op(xp, x, sizes, dim):
    return _split_at(xp, x, sizes, dim)


def _chunk_sizes(n: int, size: int) -> list[int]:
    """Sizes of split(size) along a dim of length n: full chunks, then the remainder (one chunk when n is 0)."""
    if n == 0:
        return [0]
    return [size] * (n // size) + ([n % size] if n % size else [])


def _split_at(xp, x, sizes, dim):
    starts = [0, *itertools.accumulate(sizes)]
    lead = (slice(None),) * dim
    return tuple(x[(*lead, slice(a, b), Ellipsis)] for a, b in zip(starts, starts[1:]))


# ============================================================================================
# Select, slice and their adjoints
# ============================================================================================


@defop("select", params=("dim", "index"), view=True, self="select_backward(grad, self_shape, dim, index)",
       jvp="select_op(self_t, dim, index)")
def select_op(xp, x, dim, index):
    return x[(slice(None),) * dim + (index, Ellipsis)]  # `...` keeps a 0-d result a view, not a scalar


@defop("select_backward", node="SelectBackwardBackward0", inputs=("grad_output",),
       params=("input_sizes", "dim", "index"), grad_output="select_op(grad, dim, index)",
       jvp="select_backward(grad_output_t, input_sizes, dim, index)")
def select_backward(xp, g, input_sizes, dim, index):
    out = xp.zeros(input_sizes, dtype=g.dtype, device=g.device)
    out[(slice(None),) * dim + (index, Ellipsis)] = g
    return out


@defop("slice", params=("dim", "start", "end", "step"), view=True,
       self="slice_backward(grad, self_shape, dim, start, end, step)", jvp="slice_op(self_t, dim, start, end, step)")
def slice_op(xp, x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step), Ellipsis)]


@defop("slice_backward", node="SliceBackwardBackward0", inputs=("grad_output",),
       params=("input_sizes", "dim", "start", "end", "step"),
       grad_output="slice_op(grad, dim, start, end, step)",
       jvp="slice_backward(grad_output_t, input_sizes, dim, start, end, step)")
def slice_backward(xp, g, input_sizes, dim, start, end, step):
    out = xp.zeros(input_sizes, dtype=g.dtype, device=g.device)
    out[(slice(None),) * dim + (slice(start, end, step), Ellipsis)] = g
    return out


# ============================================================================================
# Rearranging copies: repeat, flip, roll, rot90
# ============================================================================================


@defop("repeat", params=("repeats",), self="repeat_backward(grad, repeats, self_shape)",
       jvp="repeat_op(self_t, repeats)")
def repeat_op(xp, x, repeats):
    return xp.tile(xp.reshape(x, (1,) * (len(repeats) - x.ndim) + x.shape), repeats)


@defop("flip", params=("dims",), self="flip_op(grad, dims)", jvp="flip_op(self_t, dims)")
def flip_op(xp, x, dims):
    return xp.asarray(xp.flip(x, axis=dims) if x.ndim else x, copy=True)


@defop("roll", params=("shifts", "dims"), self="roll_op(grad, tuple(-s for s in shifts), dims)",
       jvp="roll_op(self_t, shifts, dims)")
def roll_op(xp, x, shifts, dims):
    return xp.roll(x, shift=shifts, axis=dims) if dims else xp.roll(x, shift=shifts[0])


@defop("rot90", params=("k", "dims"), self="rot90_op(grad, -k, dims)", jvp="rot90_op(self_t, k, dims)")
def rot90_op(xp, x, k, dims):
    if hasattr(x, "strides"):
        return xp.rot90(x, k, dims).copy()
    k, (first, second) = k % 4, dims  # NumPy's rot90 in the standard's flips and permutations
    swapped = list(range(x.ndim))
    swapped[first], swapped[second] = swapped[second], swapped[first]
    if k == 0:
        return A.copy(xp, x)
    if k == 2:
        return xp.flip(xp.flip(x, axis=first), axis=second)
    if k == 1:
        return xp.permute_dims(xp.flip(x, axis=second), tuple(swapped))
    return xp.flip(xp.permute_dims(x, tuple(swapped)), axis=second)


# ============================================================================================
# Diagonals and triangles
# ============================================================================================

_DIAGONAL_VJP = "diagonal_backward(grad, self_shape, offset, dim1, dim2)"
_DIAGONAL_JVP = "diagonal_op(self_t, offset, dim1, dim2)"


@defop("diagonal", params=("offset", "dim1", "dim2"), view=True, self=_DIAGONAL_VJP, jvp=_DIAGONAL_JVP)
def diagonal_op(xp, x, offset, dim1, dim2):
    return _writable_diagonal(xp, x, offset, dim1, dim2)


@defop("diagonal_backward", node="DiagonalBackwardBackward0", inputs=("grad_output",),
       params=("input_sizes", "offset", "dim1", "dim2"), grad_output="diagonal_op(grad, offset, dim1, dim2)",
       jvp="diagonal_backward(grad_output_t, input_sizes, offset, dim1, dim2)")
def diagonal_backward(xp, g, input_sizes, offset, dim1, dim2):
    if not hasattr(g, "strides"):
        return _embed_diagonal(xp, g, input_sizes, offset, dim1, dim2)
    out = xp.zeros(input_sizes, dtype=g.dtype, device=g.device)
    _writable_diagonal(xp, out, offset, dim1, dim2)[...] = g
    return out


@defop("diag_embed", params=("offset", "dim1", "dim2"), self="diagonal_op(grad, offset, dim1, dim2)",
       jvp="diag_embed_op(self_t, offset, dim1, dim2)")
def diag_embed_op(xp, x, offset, dim1, dim2):
    n = (x.shape[-1] if x.ndim else 1) + abs(offset)
    shape = list(x.shape[:-1])
    for d in sorted((dim1, dim2)):
        shape.insert(d, n)
    if not hasattr(x, "strides"):
        return _embed_diagonal(xp, x, shape, offset, dim1, dim2)
    out = xp.zeros(shape, dtype=x.dtype, device=x.device)
    _writable_diagonal(xp, out, offset, dim1, dim2)[...] = x
    return out


def _diagonal(xp, x, offset, dim1, dim2):
    """NumPy's diagonal(x, offset, dim1, dim2), in the standard's words elsewhere (linalg.diagonal of the last two
    dims)."""
    if hasattr(x, "strides"):
        return xp.diagonal(x, offset, dim1, dim2)
    return xp.linalg.diagonal(xp.moveaxis(x, (dim1, dim2), (-2, -1)), offset=offset)


def _embed_diagonal(xp, values, shape, offset, dim1, dim2):
    """Zeros of `shape` with `values` (..., k) on the diagonal (offset, dim1, dim2), built without writing through a
    view: the standard's arrays have no strided diagonal to write to."""
    n1, n2 = shape[dim1], shape[dim2]
    rows = xp.reshape(xp.arange(n1, device=values.device), (n1, 1))
    cols = xp.reshape(xp.arange(n2, device=values.device), (1, n2))
    on_diagonal = cols - rows == offset
    if not values.shape[-1] or not xp.any(on_diagonal):
        return xp.zeros(shape, dtype=values.dtype, device=values.device)
    position = xp.clip(xp.broadcast_to(rows if offset >= 0 else cols, (n1, n2)), 0, values.shape[-1] - 1)
    spread = xp.reshape(xp.take(values, xp.reshape(position, (-1,)), axis=-1), values.shape[:-1] + (n1, n2))
    square = xp.where(on_diagonal, spread, xp.zeros((), dtype=values.dtype, device=values.device))
    return xp.moveaxis(square, (-2, -1), (dim1, dim2))


def _writable_diagonal(xp, x, offset, dim1, dim2):
    d = _diagonal(xp, x, offset, dim1, dim2)
    if type(x) is np.ndarray and x.flags.writeable:
        d.flags.writeable = True  # NumPy hands out read-only diagonals; torch's are ordinary views
    return d


@defop("tril", params=("diagonal",), self="tril_op(grad, diagonal)", jvp="tril_op(self_t, diagonal)")
def tril_op(xp, x, diagonal):
    return xp.tril(x, k=diagonal)


@defop("triu", params=("diagonal",), self="triu_op(grad, diagonal)", jvp="triu_op(self_t, diagonal)")
def triu_op(xp, x, diagonal):
    return xp.triu(x, k=diagonal)


# ============================================================================================
# Strided views: as_strided, unfold
# ============================================================================================


@defop("as_strided", params=("size", "stride", "storage_offset", "geometry"), view=True,
       self="as_strided_backward(grad, geometry)", jvp="as_strided_tangent(self_t, geometry)")
def as_strided_op(xp, x, size, stride, storage_offset, geometry):
    return geometry.window(size, stride, storage_offset)


@defop("unfold", params=("dimension", "size", "step"), view=True,
       self="unfold_backward(grad, self_shape, dimension, size, step)", jvp="self_t.unfold(dimension, size, step)")
def unfold_op(xp, x, dim, size, step):
    if x.ndim == 0:
        return A.reshape(xp, x, 1)
    count = (x.shape[dim] - size) // step + 1
    shape = x.shape[:dim] + (count,) + x.shape[dim + 1:] + (size,)
    if xp is not np:  # the standard has no strided views: the windows' elements taken, a copy
        places = xp.reshape(xp.arange(count, device=x.device)[:, None] * step + xp.arange(size, device=x.device), (-1,))
        windows = xp.reshape(xp.take(x, places, axis=dim), x.shape[:dim] + (count, size) + x.shape[dim + 1:])
        return xp.moveaxis(windows, dim + 1, -1)
    strides = x.strides[:dim] + (x.strides[dim] * step,) + x.strides[dim + 1:] + (x.strides[dim],)
    return _strided_view(x, shape, strides)


@defop("unfold_backward", node="UnfoldBackwardBackward0", inputs=("grad_in",),
       params=("input_sizes", "dim", "size", "step"), grad_in="grad.unfold(dim, size, step)",
       jvp="unfold_backward(grad_in_t, input_sizes, dim, size, step)")
def unfold_backward(xp, g, input_sizes, dim, size, step):
    if not input_sizes:
        return A.reshape(xp, g, ())
    out = xp.zeros(input_sizes, dtype=g.dtype, device=g.device)
    moved, windows = xp.moveaxis(out, dim, 0), xp.moveaxis(g, dim, 0)
    count = windows.shape[0]
    for k in range(size):  # within one offset k the windows touch distinct places, every step-th from k
        moved[k:k + step * (count - 1) + 1:step, ...] += windows[..., k]
    return out if hasattr(out, "strides") else xp.moveaxis(moved, 0, dim)


# ============================================================================================
# Copies of views (permute_copy, ...) and their adjoints, the scatters (select_scatter, ...)
# ============================================================================================


def _copy_row(view: Op, name: str | None = None, node: str | None = None, shaped: Op | None = None) -> Op:
    """torch's `<view>_copy`: the view's row (parameters, derivatives, tangent) with its result in memory of its
    own, recorded as the view's node with `_copy` (PermuteBackward0_copy). `shaped`: a row whose forward gives
    the same elements where the view's cannot (view_copy reshapes memory that view would refuse)."""
    forward = (shaped or view).forward

    def copied(xp, x, *params):
        out = forward(xp, x, *params)
        return A.copy(xp, out) if view.n_outputs == 1 else tuple(A.copy(xp, o) for o in out)

    return defop(name or f"{view.name}_copy", params=view.params, node=node or f"{view.node_name}_copy",
                 outputs=view.n_outputs, jvp=view.jvp_src, **view.vjp_src)(copied)


VIEW_COPIES = {view: _copy_row(view, *how) for view, *how in (
    (alias_op,), (as_strided_op,), (diagonal_op,), (expand_op,), (permute_op,), (squeeze_all,), (squeeze_dim,),
    (squeeze_dims,), (t_op,), (transpose_op,), (unbind_op,), (unfold_op,), (unsqueeze_op,),
    (split_with_sizes_op,), (split_op,), (select_op,), (view_op, None, None, unsafe_view),
    (slice_op, "narrow_copy", "NarrowCopyBackward0"))}  # torch's narrow_copy has a node of its own
slice_copy_op = _copy_row(slice_op)  # slice_copy keeps slice's node name, SliceBackward0_copy


def _scatter_row(view: Op, unstrided: Callable | None = None) -> Op:
    """torch's `<view>_scatter`: self with src written where the view lies, the view's adjoint (self's gradient:
    grad with zeros there; src's: that view of grad). `unstrided`: the same for arrays whose view is no strided
    window to write through (the standard's diagonal)."""
    name, args = f"{view.name}_scatter", ", ".join(view.params)

    def scatter(xp, x, src, *params):
        if unstrided is not None and xp is not np:
            return unstrided(xp, x, src, *params)
        out = A.copy(xp, x)
        view.forward(xp, out, *params)[...] = src
        return out

    return defop(name, inputs=("self", "src"), params=view.params, self=f"{name}_op(grad, zeros_like(src), {args})",
                 src=f"{view.name}_op(grad, {args})", jvp=f"{name}_op(self_t, src_t, {args})")(scatter)


def _diagonal_written(xp, x, src, offset, dim1, dim2):
    """x with src on the diagonal (offset, dim1, dim2), chosen place by place."""
    on_diagonal = _embed_diagonal(xp, xp.ones_like(src, dtype=xp.bool), x.shape, offset, dim1, dim2)
    return xp.where(on_diagonal, _embed_diagonal(xp, src, x.shape, offset, dim1, dim2), x)


select_scatter_op, slice_scatter_op = map(_scatter_row, (select_op, slice_op))
diagonal_scatter_op = _scatter_row(diagonal_op, _diagonal_written)


@defop("as_strided_scatter", inputs=("self", "src"), params=("size", "stride", "storage_offset"),
       self="as_strided_scatter_op(grad, zeros_like(src), size, stride, storage_offset)",
       src="as_strided(grad.contiguous(), size, stride, storage_offset)",
       jvp="as_strided_scatter_op(self_t, src_t, size, stride, storage_offset)")
def as_strided_scatter_op(xp, x, src, size, stride, storage_offset):
    out = x.copy(order="K")  # torch's clone keeps a dense input's strides, and the window reads that storage
    storage = out.ravel(order="K")[storage_offset:]  # a view: the copy is dense
    window = np.lib.stride_tricks.as_strided(storage, size, tuple(s * out.itemsize for s in stride))
    window[...] = src
    return out


# ============================================================================================
# In-place through views (Note [in-place through views])
# ============================================================================================


@defop("copy_slices", node="CopySlices", inputs=("self", "src"), params=("region",),
       jvp="put_at(self_t, src_t, region)")
def copy_slices(xp, base, src, region):
    return base  # the write already went through the view's memory; this gives the base its new tangent


# Note [in-place through views]
# An in-place op on a view v of base b (v shares b's memory) changes b too. torch records it as
# CopySlices on b, a node that wraps the in-place op's own node `fn`: its edges are b's old history
# and fn's edges past the first (fn's first edge, v's old history, is not followed). Its backward is
# torch's: the incoming gradient is copied into a tensor laid out like b (CopyBackwards when it has a
# history), fn is applied to a clone of that copy's view where v lies (AsStridedBackward0,
# CloneBackward0), and fn's gradient for v is written back into the view (CopySlices again); the copy
# is b's old history's gradient, the rest of fn's gradients go to fn's other inputs. So the graph of a
# double backward has torch's nodes. The copy_slices row only gives b its new tangent (forward AD).
# Afterwards every live view of b (v included) gets a fresh history from the new b: an as_strided
# view (AsStridedBackward0), as torch regenerates it. Views register on their base in
# registry._mark_views (Note [views and in-place writes]).


# Note [views and in-place writes]
# torch keeps no list of a base's views: a view remembers its base's version when its grad_fn was
# made, and reading grad_fn regenerates it when the version moved on. Here grad_fn and requires_grad
# are plain slots that every op reads, so histories are regenerated eagerly, at the write, and the
# write must find the live views. They are listed where base and views already meet: the version
# counter they share (`_vc`, a list made on the first view or write) holds the version at [0] and a
# weak reference to each view made in grad mode (or in no_grad of a base that requires grad) after
# it. Appending costs one weak reference (made in C, with no callback); the dead are dropped when
# the list's length reaches a power of two from 16 on and half of it is dead (_tensor.prune_views),
# so tracking costs O(1) a view however many live. A detached alias shares the counter, so `live_views(base)` keeps the
# views whose `_base` is that base. A view keeps no dict of facts unless one differs from its
# default (registry._mark_views): made the usual way (creation_meta DEFAULT), its forward base
# its base, no conjugate or negative bit, no replay recipe. So a view of a base in grad mode costs
# the tensor, a weak reference and an append, which the generated entry points of single-output
# view ops write inline (Op._run_source); any other case goes through _mark_views.


class CopySlices(Node):
    """The node an in-place op on a view records on the view's base (Note [in-place through views])."""

    __slots__ = ("fn", "_base_layout", "_view")

    def __init__(self, base: Tensor, view: Tensor, fn: Node) -> None:
        super().__init__()
        self.fn = fn
        storage = _storage(base)
        base_size, base_stride, base_offset = storage.describe_owner()
        self._base_layout = (base_size, base_stride)
        recipe = view._extra_dict().get("replay")
        if recipe is not None:
            self._view: _Replay | tuple = _Replay(recipe, base)
        else:
            size, stride, offset = storage.describe(view._data)
            self._view = (size, stride, offset - base_offset)
        old = edge_of(base) if base._requires_grad else (None, 0)
        self._next_nodes = (old[0],) + fn._next_nodes[1:]
        self._next_nrs = (old[1],) + fn._next_nrs[1:]

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def apply(self, grads: list) -> list:
        grad = grads[0]
        out: list = [None] * len(self._next_nodes)
        if grad is None:
            return out
        if self.fn is None:
            raise RuntimeError(FREED_MESSAGE)
        result = grad.new_empty_strided(*self._base_layout).copy_(grad)
        view = self._view
        grad_slice = view(result) if isinstance(view, _Replay) else _within_base(result, *view)
        res = self.fn.apply([grad_slice.clone(memory_format=contiguous_format)])
        if self._next_nodes[0] is not None:
            if res[0] is None:
                grad_slice.zero_()
            else:
                grad_slice.copy_(res[0])
            out[0] = result
        out[1:] = res[1:]
        return out

    def release(self) -> None:
        """Let go of fn, as torch's does (fn frees what it saved when nothing else holds it: a saved
        output of fn's op may still lead to fn)."""
        self.fn = None


def rebase_view(tensor: Tensor, recorded: bool = True, tangent_levels: tuple = ()) -> None:
    """After an in-place op gave `tensor` a new node (`recorded`, its grad_fn) or tangent: record the write
    on its base (CopySlices) when `tensor` is a view, then regenerate the history of the base's live views
    (Note above). Tangents follow only at `tangent_levels`: the op wrote the others in place (forward_ad,
    Note [tangents of views])."""
    with only_levels(tangent_levels):
        _rebase_view(tensor, recorded)


def _rebase_view(tensor: Tensor, recorded: bool) -> None:
    base = tensor._base
    if base is not None:
        recipe = tensor._extra_dict().get("replay")
        same_elements = recipe is None or tensor._data.dtype == base._data.dtype  # flat positions say where it is
        region = _storage(base).region_of(tensor._data) if same_elements else _Replay(recipe, base)
        node = CopySlices(base, tensor, tensor.grad_fn) if recorded else None
        written = apply(copy_slices, (base, tensor), (region,))
        if node is not None:
            written.grad_fn, written._output_nr, written._requires_grad = node, 0, True
        _take_over(base, written)
        if not tensor._extra_dict().get("discarded"):
            _regenerate(tensor, base)
    else:
        base = tensor
    if base._requires_grad:
        for v in live_views(base):
            if v is not tensor:
                _regenerate_or_refuse(v, base)


def regenerate_after_untracked_write(tensor: Tensor, keep: Tensor | None = None) -> None:
    """After an in-place op that recorded nothing (under no_grad or in inference mode) on `tensor`, a
    view or a base with tracked views: torch regenerates the history of each view whose version moved
    on, from its base's unchanged history (AsStridedBackward0), or refuses to (Note [view creation
    meta]); `keep` is a view whose new history an in-place view op has just given."""
    base = tensor._base if tensor._base is not None else tensor
    if not base._requires_grad:
        return
    views = set(live_views(base))
    if tensor is not base and not tensor._extra_dict().get("discarded"):
        views.add(tensor)
    views.discard(keep)
    if not views:  # the views it tracked have all died (an optimizer's step on a weight whose graph is freed)
        return
    with grad_mode.inference_mode(False):  # recorded whatever the caller's modes
        for v in views:
            _regenerate_or_refuse(v, base)


def _regenerate_or_refuse(view: Tensor, base: Tensor) -> None:
    """A view of `base` after an in-place change of their memory: a fresh history if it was made the
    ordinary way, else the refusal torch gives when its grad_fn is next read (Note [view creation meta])."""
    if creation_meta(view) == DEFAULT:
        _regenerate(view, base)
    elif "stale" not in view._extra:  # not made the usual way: it has an _extra
        make_stale(view)  # its grad_fn raises the refusal from now on


def _regenerate(view: Tensor, base: Tensor) -> None:
    _take_over(view, _remade(view, base))


def _remade(view: Tensor, base: Tensor) -> Tensor:
    """`view` made afresh from its base's history: as_strided, or replayed (Note [view replay])."""
    recipe = view._extra_dict().get("replay")
    if recipe is not None:
        return _Replay(recipe, base)(base)
    storage = _storage(base)
    size, stride, offset = storage.describe(view._data)
    return apply(as_strided_op, (base,), (size, stride, offset, _AsStrided(storage, base._data, size, stride, offset)))


# Note [view replay]
# A view whose dtype differs from its base's (view_as_real, view_as_complex, `z.real`, `z.imag`) is
# not an as_strided view of its base: torch records how to remake it from the base (ViewInfo's
# view_fn) and uses that to regenerate its history and to route CopySlices' gradient. Here
# registry._mark_views records the recipe: the view op applied to its (remade) source, or, for a
# view of such a view, as_strided in the view's own elements. A recipe is resolved against the base
# once (_Replay), then replayed on the base, on a gradient or on a tangent laid out like the base.
# In-place view ops (transpose_) leave the recipe as it was, as torch does: a write through
# `view_as_real(z).transpose_(0, 1)` regenerates the untransposed view (torch's own TODO in
# test_autograd_inplace_views_cross_dtype).


class _Replay:
    """A view recipe (Note [view replay]) resolved against its base: callable on any tensor laid out
    like the base, giving that tensor's view."""

    __slots__ = ("steps", "size", "stride")

    def __init__(self, recipe: tuple, base: Tensor) -> None:
        chain = []
        while recipe is not None:
            chain.append(recipe)
            recipe = recipe[-1]
        steps = []
        for step in reversed(chain):
            if step[0] == "strided":
                arr = step[1]
                steps.append(("strided", *_storage(base, arr.dtype).describe(arr)))
            else:
                steps.append(step[:-1])
        self.steps = tuple(steps)
        self.size, self.stride = base._data.shape, _storage(base).describe_owner()[1]

    def copy(self, tensor: Tensor) -> Tensor:
        """A copy of `tensor` laid out like the base (torch's CopySlices makes its result so)."""
        return empty_strided(self.size, self.stride, dtype=tensor.dtype).copy_(tensor)

    def __call__(self, tensor: Tensor) -> Tensor:
        if tensor._data.shape != self.size or _storage(tensor).describe_owner()[1] != self.stride:
            tensor = self.copy(tensor)
        for step in self.steps:
            if step[0] == "strided":
                tensor = _within_base(tensor, *step[1:])
            else:
                _, op, params, index = step
                out = apply(op, (tensor,), params)
                tensor = out[index] if op.n_outputs > 1 else out
        return tensor


def view_of_tangent(view: Tensor, base: Tensor, base_tangent: Tensor) -> Tensor | None:
    """The view of `base_tangent` that `view` is of `base` (forward_ad, Note [tangents of views]); None
    when the tangent is laid out otherwise than the base, or the view changes dtype. A tangent batched by
    vmap gives the same view of each example: the view of its physical tensor, batched likewise."""
    physical = getattr(base_tangent, "_physical", None)
    tangent = base_tangent if physical is None else physical
    batched = 0 if physical is None else len(base_tangent._levels)
    if view._data.dtype != base._data.dtype or tangent._data.dtype != base._data.dtype:
        return None
    place = _Geometry(base)
    root = tangent._base if tangent._base is not None else tangent
    size, stride, offset = _storage(root).describe(tangent._data)
    base_size, base_stride, base_offset = place.describe_owner()
    if (size[batched:], stride[batched:]) != (base_size, base_stride):
        return None
    view_size, view_stride, view_offset = place.describe(view._data)
    return _within_base(base_tangent, view_size, view_stride, offset + view_offset - base_offset)


def zeros_batched_like(tensor: Tensor, like: Tensor) -> Tensor:
    """Zeros laid out like `tensor` in every example of the batched `like` (a batched tangent that views
    of `tensor` can be views of)."""
    batch = tuple(level.size for level in like._levels)
    place = _Geometry(tensor)
    stride, numel = place.describe_owner()[1], max(1, place.numel)
    batch_stride = tuple(math.prod(batch[i + 1:]) * numel for i in range(len(batch)))
    physical = empty_strided(batch + tensor._data.shape, batch_stride + stride, dtype=like.dtype).zero_()
    from ..autograd.batched import make  # vmap builds on the op table (imports it at its top)

    return make(physical, like._levels)


def same_strides(a: Tensor, b: Tensor) -> bool:
    """a and b have the same shape and the same strides in elements."""
    return a._data.shape == b._data.shape and _Geometry(a).describe_owner()[1] == _Geometry(b).describe_owner()[1]


def same_layout(a: Tensor, b: Tensor) -> bool:
    """a and b have the same shape and strides (and, when they share memory, the same first element)."""
    return same_strides(a, b) and (_address(a._data) == _address(b._data) or not np.may_share_memory(a._data, b._data))


def is_contiguous_layout(tensor: Tensor) -> bool:
    return tensor._data.flags.c_contiguous


def zeros_laid_out_like(tensor: Tensor) -> Tensor:
    """Zeros with `tensor`'s shape, dtype and strides, in a storage of its storage's size at its offset (torch's
    new_zeros_with_same_feature_meta: a tangent its views, and as_strided over its storage, can be views of)."""
    stride = _Geometry(tensor).describe_owner()[1]
    offset, size = storage_extent(tensor._data)
    if offset == 0 and size == tensor._data.size:
        return empty_strided(tensor._data.shape, stride, dtype=tensor.dtype).zero_()
    return zeros(size, dtype=tensor.dtype).as_strided(tensor._data.shape, stride, offset)


def same_storage_layout(a: Tensor, b: Tensor) -> bool:
    """a and b have the same strides and the same storage offset and size (torch's has_same_meta, which does not
    look at the storage of a tensor without elements)."""
    return same_strides(a, b) and (a._data.size == 0 or storage_extent(a._data) == storage_extent(b._data))


def is_writable_in_place(tensor: Tensor) -> bool:
    """No two elements share memory (an expanded tangent is replaced, not written)."""
    return all(s != 0 or n <= 1 for n, s in zip(tensor._data.shape, tensor._data.strides))


def put_at(base: Tensor, src: Tensor, region: np.ndarray | _Replay) -> Tensor:
    """A copy of base with src written where a view of it lies (CopySlices' tangent)."""
    if isinstance(region, _Replay):
        out = region.copy(base)
        region(out).copy_(src)
        return out
    from .indexing import put_op  # indexing builds on this family (imports it at its top)

    return put_op(base, src, region, False)


def _storage(base: Tensor, dtype: np.dtype | None = None, whole: bool = False) -> _Geometry:
    """The base's storage geometry in elements of `dtype` (its own by default), kept on the base while
    its array stays the same. Its positions count from the base's first element, so that they apply to any
    tensor laid out like the base (a gradient, a tangent); `whole`: from the start of the memory torch's storage
    is (the root of the array's chain of bases, as `untyped_storage()` shows it), for as_strided's offsets."""
    if dtype is not None and dtype == base._data.dtype:
        dtype = None
    extra = base._extra_dict()
    key = "storage" if dtype is None and not whole else ("storage", dtype, whole)
    storage = extra.get(key)
    if storage is None or storage.owner is not base._data:
        storage = extra[key] = _Geometry(base, dtype, root_array(base._data) if whole else None)
    return storage


def _take_over(tensor: Tensor, fresh: Tensor) -> None:
    """`tensor` (whose memory `fresh` shares) takes fresh's history and forward-AD tangents."""
    if fresh.grad_fn is not None:
        old_node, old_nr = tensor.grad_fn, tensor._output_nr
        tensor.grad_fn, tensor._output_nr, tensor._requires_grad = fresh.grad_fn, fresh._output_nr, True
        move_retains_grad(tensor, old_node, old_nr)
    tangents = None if fresh._extra is None else fresh._extra.get("fw_grad")
    if tangents:
        for level, tangent in tangents.items():
            set_tangent(tensor, level, tangent)


# Note [view creation meta]
# A view remembers how it was made (torch's CreationMeta, registry._mark_views): the ordinary way,
# in no_grad mode, in inference mode, as one of several views one op returns, or inside a custom
# Function. Only the first kind can be written in place with grad mode on, or get a fresh history
# after its base (or another view of it) was written: for the others torch refuses, naming the kind,
# when the view is written (check_inplace_view) and, for a written base, when the view's grad_fn is
# next read. Histories here are regenerated eagerly, at the write, so such a view is marked there:
# its grad_fn slot is emptied, the old value kept as "stale", and reading it raises (Note [stale views] in
# _tensor.py).

_REBASE_ADVICE = {
    MULTI_OUTPUT: " This view is the output of a function that returns multiple views. Such functions do not allow "
                  "the output views to be modified inplace. You should replace the inplace operation by an "
                  "out-of-place one.",
    NO_GRAD: " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
             "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
             "inplace to be tracked) or both outside (if you want the inplace to be tracked).",
    INFERENCE: " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
               "moving both the view and the inplace either both inside the inference_mode block (if you don't want "
               "the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
    IN_CUSTOM_FUNCTION: " This view was created inside a custom Function (or because an input was returned as-is) and "
                        "the autograd logic to handle view+inplace would override the custom backward associated with "
                        "the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
                        "this by cloning the output of the custom Function.",
}


def recorded_grad_fn(tensor: Tensor) -> object:
    """The grad_fn as recorded, without the refusal a stale view gives (torch's grad_fn_ field)."""
    extra = tensor._extra
    return extra["stale"] if extra is not None and "stale" in extra else tensor.grad_fn


def view_rebase_message(view: Tensor, indirect: bool = False) -> str:
    """torch's refusal for a view not made the ordinary way, written in place itself or (`indirect`)
    through its base or another view (Note [view creation meta])."""
    meta = creation_meta(view)
    fn = recorded_grad_fn(view)
    modified = "its base or another view of its base has been" if indirect else "is being"
    origin = None if fn is None else f"Output {view._output_nr} of {forward_name(fn)}"
    if meta in (INFERENCE, NO_GRAD) or fn is None:
        prefix = "A view was created in" if fn is None else f"{origin} is a view of a view which was created in"
        if meta == INFERENCE:
            head = f"{prefix} inference mode and {modified} modified inplace in normal mode."
        else:
            head = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
    else:
        head = f"{origin} is a view and {modified} modified inplace."
    return head + _REBASE_ADVICE[meta]


def check_inplace_view(view: Tensor, other_requires_grad: bool = False) -> None:
    """torch's refusals for an in-place write to a view (called by Tensor._check_inplace, and by
    Tensor._become when only another input of the op requires grad), in torch's order: how the view
    was made (Note [view creation meta]) first, then views of leaves."""
    if grad_mode._state.enabled and (view._requires_grad or other_requires_grad):
        if creation_meta(view) != DEFAULT:
            raise RuntimeError(view_rebase_message(view))
        if view._requires_grad and view._base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


class _Geometry:
    """The memory of a base tensor seen as torch's flat storage of `dtype` elements (the base's own
    by default; a view_as_real of a complex base counts in its real elements): element positions
    counted from the lowest address any of the base's elements has (NumPy arrays may start anywhere
    in a buffer)."""

    __slots__ = ("owner", "dtype", "origin", "numel", "item", "_cache")

    def __init__(self, base: Tensor, dtype: np.dtype | None = None, memory: np.ndarray | None = None) -> None:
        arr = base._data
        self.owner = arr
        self.dtype = arr.dtype if dtype is None else dtype
        self.item = self.dtype.itemsize
        memory = arr if memory is None else memory  # what the positions count over: the base's elements by default
        low = high = _address(memory)
        for n, s in zip(memory.shape, memory.strides):
            if n == 0:
                low = high = _address(memory)
                break
            low, high = low + min(0, (n - 1) * s), high + max(0, (n - 1) * s)
        self.origin = low
        self.numel = (high - low + memory.itemsize) // self.item if memory.size else 0
        self._cache: dict = {}

    def describe(self, arr: np.ndarray) -> tuple[tuple, tuple, int]:
        """(size, stride, storage_offset) of an array that lives in this storage."""
        return arr.shape, tuple(s // self.item for s in arr.strides), (_address(arr) - self.origin) // self.item

    def describe_owner(self) -> tuple[tuple, tuple, int]:
        if "owner" not in self._cache:
            self._cache["owner"] = self.describe(self.owner)
        return self._cache["owner"]

    def positions(self, size: Sequence[int], stride: Sequence[int], offset: int) -> np.ndarray:
        """The storage position of every element of a strided view (an int64 array of shape `size`)."""
        pos = np.full(tuple(size), offset, dtype=np.int64)
        for d, (n, s) in enumerate(zip(size, stride)):
            pos += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(size) - d - 1))
        return pos

    def base_positions(self) -> np.ndarray:
        if "base" not in self._cache:
            self._cache["base"] = self.positions(*self.describe_owner())
        return self._cache["base"]

    def region_of(self, arr: np.ndarray) -> np.ndarray:
        """For each element of `arr` (a view of the base), its flat index in the base."""
        pos = self.positions(*self.describe(arr))
        if self.owner.flags.c_contiguous:
            return pos
        where = np.full(self.numel, -1, dtype=np.int64)
        where[self.base_positions().reshape(-1)] = np.arange(self.owner.size)
        return where[pos]

    def window(self, size: tuple, stride: tuple, offset: int) -> np.ndarray:
        """A NumPy view of the storage with torch's (size, stride, storage_offset)."""
        strides = tuple(s * self.item for s in stride)
        owner = self.owner
        if owner.flags.c_contiguous and owner.size == self.numel and _address(owner) == self.origin and owner.size \
                and 0 not in size:  # the owner is the storage itself: the quick way
            return np.ndarray(tuple(size), self.dtype, buffer=owner, offset=offset * self.item, strides=strides)
        interface = {"data": (self.origin + offset * self.item, not owner.flags.writeable), "shape": tuple(size),
                     "strides": strides, "typestr": self.dtype.str, "version": 3}
        return np.asarray(_Memory(interface, owner))


class _Memory:
    """Exposes part of an array's memory to NumPy and keeps the array alive while viewed."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.owner = owner


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


class _AsStrided:
    """as_strided's parameters resolved against its input's storage (what its rules need; the
    element positions are computed only when a rule asks)."""

    __slots__ = ("storage", "size", "stride", "offset", "source", "whole")

    def __init__(self, storage: _Geometry, source: np.ndarray, size: tuple, stride: tuple, offset: int,
                 whole: bool = False) -> None:
        self.storage, self.size, self.stride, self.offset, self.whole = storage, size, stride, offset, whole
        self.source = storage.describe(source) if source is not storage.owner else storage.describe_owner()

    def window(self, size: tuple, stride: tuple, offset: int) -> np.ndarray:
        return self.storage.window(size, stride, offset)

    def input_positions(self) -> np.ndarray:
        return self.storage.positions(*self.source)

    def output_positions(self) -> np.ndarray:
        return self.storage.positions(self.size, self.stride, self.offset)

    def input_counts(self) -> np.ndarray | None:
        """How many input elements share each input element's memory (None when none overlap)."""
        if all(s != 0 or n <= 1 for n, s in zip(self.source[0], self.source[1])):
            return None
        pos = self.input_positions()
        counts = np.bincount(pos.reshape(-1), minlength=self.storage.numel)
        return counts[pos] if counts.size and counts.max() > 1 else None


# ============================================================================================
# Formula helpers
# ============================================================================================


def inverse_permutation(dims: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def sum_to(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a broadcast gradient to `shape` (the adjoint of expand)."""
    return _sum_to(grad, tuple(shape))


def cast_to(t: Tensor, dtype: np.dtype) -> Tensor:
    """`t` converted to a NumPy dtype (a ToCopyBackward0 node when it changes)."""
    return t if t._data.dtype == dtype else apply(to_copy, (t,), (dtype, None))


def cat_backward(grad: Tensor, shapes: list, dim: int) -> list[Tensor]:
    """Each input's piece of grad, narrowed out as torch does (SliceBackward0 when differentiated again); 1-d
    empty inputs get fresh empty zeros (torch's rule, whether or not cat skipped them)."""
    pieces, offset = [], 0
    for s in shapes:
        if len(s) == 1 and s[0] == 0:
            pieces.append(zeros(0, dtype=grad.dtype, device=grad.device))
        else:
            pieces.append(grad.narrow(dim, offset, s[dim]))
            offset += s[dim]
    return pieces


def block_diag_backward(grad: Tensor, shapes: list) -> list[Tensor]:
    """Each block's piece of grad (a 0-d or 1-d input's block is one row), in the input's shape."""
    pieces, r, c = [], 0, 0
    for shape in shapes:
        rows, cols = ((1,) * (2 - len(shape)) + tuple(shape))
        pieces.append(grad[r:r + rows, c:c + cols].reshape(shape))
        r, c = r + rows, c + cols
    return pieces


def repeat_backward(grad: Tensor, repeats: tuple, self_shape: tuple) -> Tensor:
    """Sum the gradient over the tiles: view it as (r0, s0, r1, s1, ...) and sum the r axes."""
    padded = (1,) * (len(repeats) - len(self_shape)) + tuple(self_shape)
    tiled = [n for pair in zip(repeats, padded) for n in pair]
    return grad.reshape(tiled).sum(tuple(range(0, len(tiled), 2))).reshape(self_shape)


def as_strided_backward(grad: Tensor, geometry: _AsStrided) -> Tensor:
    """Add the gradient into the storage at the output's places, read it back at the input's
    (divided by how many input elements share a place, as torch does for overlapping inputs)."""
    from .indexing import index_add_op, take_op  # indexing builds on this family (imports it at its top)

    if 0 in geometry.size:  # torch: fresh zeros in the input's shape, without history
        return zeros(geometry.source[0], dtype=grad.dtype, device=grad.device)
    storage = zeros(geometry.storage.numel, dtype=grad.dtype, device=grad.device)
    storage = index_add_op(storage, grad.reshape(-1), 0, geometry.output_positions().reshape(-1), 1)
    out = take_op(storage, geometry.input_positions())
    counts = geometry.input_counts()
    return out if counts is None else out / _wrap(counts.astype(grad._data.dtype))


def as_strided_tangent(tangent: Tensor, geometry: _AsStrided) -> Tensor:
    """The input's tangent laid into the storage, read through the strided window. torch's formula is
    self_t.as_strided(size, stride, storage_offset), so under vmap a user's window that reaches outside each
    example of a batched tangent is refused, as its batching rule refuses it."""
    from .indexing import put_op, take_op  # indexing builds on this family (imports it at its top)

    physical = getattr(tangent, "_physical", None)
    if geometry.whole and physical is not None:
        _inside_each_example(physical, len(tangent._levels), geometry.size, geometry.stride, geometry.offset, True)

    storage = put_op(zeros(geometry.storage.numel, dtype=tangent.dtype, device=tangent.device), tangent,
                     geometry.input_positions(), False)
    return take_op(storage, geometry.output_positions())


# ============================================================================================
# Public functions: views
# ============================================================================================


def _infer_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    """Resolve a single -1 in a target shape, with torch's error for impossible shapes."""
    shape = tuple(map(int, shape))
    if -1 not in shape:
        if math.prod(shape) != numel:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if known == 0 or numel % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(numel // known if s == -1 else s for s in shape)


def _dim_list(dims: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """Dims wrapped to [0, ndim), refusing repeats with torch's message."""
    dims = (dims,) if hasattr(type(dims), "__index__") else tuple(dims)
    wrapped = tuple(_wrap_dim(d, ndim) for d in dims)
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return wrapped


def view(input: Tensor, *shape: int, dtype: D.dtype | None = None, size: Sequence[int] | None = None) -> Tensor:
    """The same memory seen with another shape (varargs or `size=`), or as elements of another dtype (its bits
    reinterpreted; a different element size changes the last dim), no copy; errors when impossible."""
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        shape, dtype = (), shape[0]
    if size is not None:
        shape = (int_list(size, "view", "size"),)
    if dtype is None:
        return apply(*_viewed(input, *shape))
    refusal = _view_dtype_refusal(input, dtype)
    if refusal:
        raise RuntimeError(refusal)
    out = apply(view_dtype_op, (input,), (dtype,))
    if out._vc is None:  # the same memory: writes through either count on one version counter
        out._vc = input._counter()
    return out


def _view_dtype_refusal(input: Tensor, dtype: D.dtype) -> str | None:
    """torch's reason a tensor cannot be seen as `dtype` of another element size, in its order of checks."""
    old, new = input.dtype.itemsize, dtype.itemsize
    if old == new:
        return None
    names = (f"view {D.SCALAR_TYPE_NAMES[input.dtype.name]} as {D.SCALAR_TYPE_NAMES[dtype.name]} "
             "(different element sizes)")
    if input.dim() == 0:
        return f"self.dim() cannot be 0 to {names}"
    strides = input.stride()
    if strides[-1] != 1:
        return f"self.stride(-1) must be 1 to {names}, but got {strides[-1]}"
    if old > new:
        return None
    ratio = new // old
    if input.shape[-1] % ratio:
        return f"self.size(-1) must be divisible by {ratio} to {names}, but got {input.shape[-1]}"
    offset = _storage_offset(input._data)
    if offset % ratio:
        return f"self.storage_offset() must be divisible by {ratio} to {names}, but got {offset}"
    for i, stride in enumerate(strides[:-1]):
        if stride % ratio:
            return f"self.stride({i}) must be divisible by {ratio} to {names}, but got {stride}"
    return None


def _storage_offset(a: Any) -> int:
    """Where a NumPy array starts in the memory of the array it views, in elements (0 for other arrays)."""
    if not isinstance(a, np.ndarray):
        return 0
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize


def _viewed(input: Tensor, *shape: int) -> tuple[Op, tuple, tuple]:
    return view_op, (input,), (_infer_shape(as_sizes(shape, "view"), input._data.size),)


def _reshaped(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """As torch: a view of contiguous memory (ViewBackward0), a view of other strided memory when the layout
    allows it (ReshapeAliasBackward0), else a copy (UnsafeViewBackward0)."""
    target = _infer_shape(shape, input._data.size)
    if not hasattr(input._data, "strides") or input._data.flags.c_contiguous:
        return apply(view_op, (input,), (target,))
    trial = input._data.view()
    try:
        trial.shape = target
    except AttributeError:
        return apply(unsafe_view, (clone(input),), (target,))
    return apply(reshape_alias_op, (input,), (target,))


def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor (a view when contiguous, else a copy)."""
    return view(contiguous(input), -1)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, len(shape))
    e = _wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    return reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim into several dims of the given sizes (one may be -1)."""
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    sizes = int_list(sizes, "unflatten", "sizes", 2)  # the method's position: nn.Unflatten and most code call it
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if -1 not in sizes and math.prod(sizes) != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shape[d]}) in the input tensor")
    return view(input, shape[:d] + _infer_shape(sizes, shape[d]) + shape[d + 1:])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    return apply(*_transposed(input, dim0, dim1))


def _transposed(input: Tensor, dim0: int, dim1: int) -> tuple[Op, tuple, tuple]:
    n = input._data.ndim
    return transpose_op, (input,), (_wrap_dim(dim0, n), _wrap_dim(dim1, n))


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """NumPy's name for transpose."""
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Another name for transpose."""
    return transpose(input, dim0, dim1)


def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (0-d and 1-d tensors are returned as they are, as a view)."""
    return apply(*_transposed_matrix(input))


def _transposed_matrix(input: Tensor) -> tuple[Op, tuple, tuple]:
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return t_op, (input,), ()


def _permute(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    """Reorder dims (a view)."""
    return apply(*_permuted(input, dims))


def _permuted(input: Tensor, dims: Sequence[int]) -> tuple[Op, tuple, tuple]:
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    wrapped = tuple(_wrap_dim(d, n) for d in dims)
    if len(set(wrapped)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_op, (input,), (wrapped,)


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dims to new positions (a permute)."""
    n = input._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    src_w = [_wrap_dim(s, n) for s in src]
    dst_w = [_wrap_dim(s, n) for s in dst]
    for name, given, wrapped in (("source", src, src_w), ("destination", dst, dst_w)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given})")
    order = [i for i in range(n) if i not in src_w]
    for d, s in sorted(zip(dst_w, src_w)):
        order.insert(d, s)
    return permute(input, order)


def moveaxis(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """NumPy's name for movedim."""
    return movedim(input, source, destination)


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dims (all, or the given ones when they have size 1)."""
    return apply(*_squeezed(input, dim))


def _squeezed(input: Tensor, dim: int | Sequence[int] | None = None) -> tuple[Op, tuple, tuple]:
    n = input._data.ndim
    if dim is None:
        return squeeze_all, (input,), ()
    if isinstance(dim, (int, np.integer)):
        return squeeze_dim, (input,), (_wrap_dim(int(dim), n),)
    return squeeze_dims, (input,), (_dim_list(dim, n),)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim`."""
    return apply(*_unsqueezed(input, dim))


def _unsqueezed(input: Tensor, dim: int) -> tuple[Op, tuple, tuple]:
    return unsqueeze_op, (input,), (_wrap_dim(dim, input._data.ndim + 1),)


def expand(input: Tensor, *sizes: int) -> Tensor:
    """Broadcast size-1 dims to `sizes` without copying (-1 keeps a dim)."""
    return apply(*_expanded(input, *sizes))


def _expanded(input: Tensor, *sizes: int, implicit: bool = False) -> tuple[Op, tuple, tuple]:
    sizes = as_sizes(sizes, "expand")
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead >= 0 and sizes[lead:] == shape and (not lead or min(sizes) >= 0):  # new leading dims only (sum's VJP)
        return expand_op, (input,), (sizes,)
    if lead < 0:
        raise RuntimeError(f"expand({D.tensor_type_name(input.dtype)}{{{list(shape)}}}, size={list(sizes)}): the "
                           f"number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            target.append(s)
            continue
        cur = shape[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shape)}")
        target.append(s)
    return expand_op, (input,), (tuple(target),)


def _split_along(name: str, dim: int, min_dims: int) -> Callable:
    """torch.hsplit / vsplit / dsplit: tensor_split along one dim, an int count dividing it exactly."""

    def split(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        if input._data.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                               f"with {input._data.ndim} dimensions!")
        d = 0 if name == "hsplit" and input._data.ndim == 1 else dim
        if isinstance(indices_or_sections, int) and indices_or_sections and input._data.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{input._data.shape[d]} is not divisible by the split_size {indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)

    split.__name__ = split.__qualname__ = name
    split.__doc__ = f"torch.{name}: split along dim {dim}{' (dim 0 of a vector)' if name == 'hsplit' else ''}."
    return split


hsplit, vsplit, dsplit = _split_along("hsplit", 1, 1), _split_along("vsplit", 0, 2), _split_along("dsplit", 2, 3)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded to their common shape (a tensor already of that shape is returned as it is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    arrays = [t._data for t in tensors]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
    except ValueError:
        raise _broadcast_error(arrays) from None
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: tensor i (0-d or 1-d) viewed along dim i and expanded over the others ('xy' swaps the
    first two dims, as NumPy's meshgrid)."""
    from .._warn import warn_once

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warn_once("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.")
        indexing = "ij"
    for a, b in zip(tensors, tensors[1:]):  # no promotion: the grids keep their tensors' dtypes
        if a.dtype is not b.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a.device != b.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                               f"{t.shape}")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(tensors[i]._data.size for i in order)
    grids = []
    for i, t in enumerate(tensors):
        view_shape = [1] * len(tensors)
        view_shape[order.index(i)] = -1
        grids.append(expand(view(t, tuple(view_shape)), shape))
    return tuple(grids)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-d tensor, one per row (a single tensor: itself)."""
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Every r-element combination of a 1-d input's elements (in order; with repeats when `with_replacement`), one
    per row, built as torch builds it: grids of r copies, the increasing index tuples selected, stacked
    (StackBackward0)."""
    from .indexing import masked_select  # indexing builds on this family (imports it at its top)

    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return tensor([], dtype=input.dtype, device=input.device)
    index = np.indices((input._data.size,) * r)
    increasing = np.less_equal if with_replacement else np.less
    mask = tensor(np.logical_and.reduce([increasing(a, b) for a, b in zip(index, index[1:])], initial=True),
                  device=input.device)
    return stack([masked_select(g, mask) for g in meshgrid(*[input] * r, indexing="ij")], 1)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of the tensors (0-d and 1-d ones count as one row), zeros elsewhere."""
    for i, t in enumerate(tensors):
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t._data.ndim} dimensions")
    if not tensors:
        return zeros(1, 0)
    return apply(block_diag_op, (_promote_all(list(tensors)),))


def broadcast_shapes(*shapes: int | Sequence[int]) -> Size:
    """The shape tensors of these shapes broadcast to, without making them (torch's errors for mismatches)."""
    result: list[int] = []
    for k, shape in enumerate(shapes):
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        if not isinstance(shape, (tuple, list)) or not all(isinstance(n, (int, np.integer)) for n in shape):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
        result = [1] * (len(shape) - len(result)) + result
        for i in range(-1, -len(shape) - 1, -1):
            if shape[i] < 0 or shape[i] != 1 and result[i] not in (1, shape[i]):
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {k} had {tuple(shape)}; but expected shape should be "
                                   f"broadcastable to {result}")
            if shape[i] != 1:
                result[i] = shape[i]
    return Size(result)


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in an array of `shape` of flat indices (one int64 tensor per dim), as torch computes them:
    floor division by each dim's stride, modulo its size."""
    if indices.is_complex() or indices.is_floating_point() or indices.dtype is D.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    strides = list(itertools.accumulate(reversed(shape[1:] + (1,)), lambda a, b: a * b))[::-1]
    sizes = [tensor(v, dtype=D.int64, device=indices.device) for v in (strides, shape)]
    return unbind(indices.unsqueeze(-1).floor_divide(sizes[0]) % sizes[1], -1)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-d tensor with the flattened input on diagonal `offset`."""
    return diag_embed(view(input.contiguous(), (-1,)), offset)


def positive(input: Tensor) -> Tensor:
    """The input itself (unary +); a bool tensor is refused, as torch."""
    if input._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def sum_to_size(input: Tensor, *size: int) -> Tensor:
    """The sum of input down to `size` (the shape it was broadcast from): the adjoint of expand."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else tuple(size)
    have = input._data.shape
    lead = len(have) - len(shape)
    if lead < 0 or any(n != 1 and n != have[lead + i] for i, n in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    return _sum_to(input, shape)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """view with other's shape."""
    if isinstance(other, Tensor) and other._data.size == input._data.size:  # a shape of ints that fits: no checks
        return apply(view_op, (input,), (other._data.shape,))
    return view(input, other.shape)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """expand to other's shape."""
    return expand(input, other.shape)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """expand to `size` (NumPy's name)."""
    return expand(input, tuple(size))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, removing the dim (a view)."""
    return apply(*_selected(input, dim, index))


def _selected(input: Tensor, dim: int, index: int) -> tuple[Op, tuple, tuple]:
    if input._data.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return select_op, (input,), (d, index + size if index < 0 else index)


def narrow(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    """Elements start..start+length along dim (a view)."""
    return apply(*_narrowed(input, dim, start, length))


def _narrowed(input: Tensor, dim: int, start: int | Tensor, length: int) -> tuple[Op, tuple, tuple]:
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    start, length = as_int(start, "start"), as_int(length, "length")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_op, (input,), (d, start, start + length, 1)


def narrow_slice(input: Tensor, dim: int, start: int | None, end: int | None, step: int | None) -> Tensor:
    """A basic slice start:end:step along dim (a view; the bounds as Python's slice takes them)."""
    return apply(slice_op, (input,), (dim, start, end, step))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a last dim (a view)."""
    return apply(*_diagonal_of(input, offset, dim1, dim2))


def _diagonal_of(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> tuple[Op, tuple, tuple]:
    n = input._data.ndim
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op, (input,), (offset, d1, d2)


# Note [in-place view ops]
# `x.transpose_(0, 1)` changes x's shape and strides, not its values: x becomes the view that
# transpose(x) returns, taking its array and its history under the node name torch gives the
# in-place form (TransposeBackward1, ...). It counts as a change of x's memory: the version moves
# on and the other views of that memory get fresh histories (or torch's refusal). x stays what it
# was: a view of its base, or no view. Under vmap the batch (the physical tensor) becomes the
# view, as torch's batching rules change it in place.

_INPLACE_VIEW_NODES = {op: op.alias(name, node) for op, name, node in (
    (transpose_op, "transpose_", "TransposeBackward1"), (t_op, "t_", "TBackward1"),
    (squeeze_all, "squeeze_", "SqueezeBackward3"), (squeeze_dim, "squeeze_dim_", "SqueezeBackward4"),
    (squeeze_dims, "squeeze_dims_", "SqueezeBackward5"), (unsqueeze_op, "unsqueeze_", "UnsqueezeBackward1"),
    (as_strided_op, "as_strided_", "AsStridedBackward1"))}


def _inplace_view(view_fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The in-place form of a view function (Note [in-place view ops])."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self._check_inplace(memory=False)
        _become_view(self, view_fn(self, *args, **kwargs))
        return self

    method.__name__ = view_fn.__name__ + "_"
    method.__doc__ = f"In-place version of {view_fn.__name__}: self becomes that view of itself."
    return method


def _become_view(tensor: Tensor, view: Tensor) -> None:
    """`tensor` becomes `view`, a view of itself (Note [in-place view ops]); under vmap its physical tensor
    (the whole batch) becomes the view's, as torch's batching rules change it in place."""
    physical = getattr(tensor, "_physical", None)
    if physical is not None:
        _become_view(physical, view._physical)
        tensor._data = view._data
        return
    node = view.grad_fn
    if node is not None and type(node).op in _INPLACE_VIEW_NODES:  # a batched view may be made by another op
        node.__class__ = _INPLACE_VIEW_NODES[type(node).op].node_class
    tensor._data = view._data  # how tensor was made stays as it was, as in torch
    _take_over(tensor, view)
    del view  # a temporary view of tensor: no history to regenerate
    tensor._bump_version()
    regenerate_after_untracked_write(tensor, keep=tensor)


transpose_ = swapaxes_ = swapdims_ = _inplace_view(transpose)
t_ = _inplace_view(t)
squeeze_ = _inplace_view(squeeze)
unsqueeze_ = _inplace_view(unsqueeze)


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A view of input's storage with the given size, stride and offset (in elements)."""
    return _as_strided(input, size, stride, storage_offset, whole=True)


def _within_base(input: Tensor, size: Sequence[int], stride: Sequence[int], offset: int) -> Tensor:
    """as_strided with `offset` counted from the first element of input's autograd base, not from the start of
    its storage: the windows of views and gradients laid out like a base (CopySlices, view replay, tangents)."""
    return _as_strided(input, size, stride, offset, whole=False)


def _as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None,
                whole: bool) -> Tensor:
    physical = getattr(input, "_physical", None)
    if physical is not None:  # under vmap: the same window of each example (torch's batching rule)
        from ..autograd.batched import make  # vmap builds on the op table (imports it at its top)

        k = len(input._levels)
        own_size, own_stride, offset = _inside_each_example(physical, k, size, stride, storage_offset, whole)
        return make(apply(*_strided_in(physical, own_size[:k] + tuple(size), own_stride[:k] + tuple(stride), offset,
                                       whole)), input._levels)
    return apply(*_strided_in(input, size, stride, storage_offset, whole))


def _inside_each_example(physical: Tensor, k: int, size: Sequence[int], stride: Sequence[int], offset: int | None,
                         whole: bool) -> tuple[tuple, tuple, int]:
    """The (size, stride) of a batched tensor's physical array in its storage (its k batch dims first) and the
    window's offset (None: the example's own), once torch's vmap check finds the window inside each example."""
    root = physical._base if physical._base is not None else physical
    own_size, own_stride, own_offset = _storage(root, whole=whole).describe(physical._data)
    offset = own_offset if offset is None else int(offset)
    _check_within_example(size, stride, offset, own_size[k:], own_stride[k:], own_offset)
    return own_size, own_stride, offset


def _check_within_example(size: Sequence[int], stride: Sequence[int], offset: int, example_size: tuple,
                          example_stride: tuple, example_offset: int) -> None:
    """torch's vmap refuses an as_strided window that reaches memory outside the example it is taken of."""
    if 0 in size:
        return
    last, example_last = _last_position(size, stride, offset), _last_position(example_size, example_stride,
                                                                              example_offset)
    if offset < example_offset or last > example_last:
        raise RuntimeError(f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset}) can access memory "
                           f"outside of `tensor`. `result` can access some memory in range [{offset}, {last + 1}], "
                           f"but `tensor` can only access some memory in range [{example_offset}, "
                           f"{example_last + 1}]. This is not supported inside of vmap, please try to rewrite the "
                           "`as_strided` call as a sequence of PyTorch view operations")


def _strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
             storage_offset: int | None = None) -> tuple[Op, tuple, tuple]:
    """as_strided's op and arguments, the offset counted from the start of input's storage (torch's
    storage_offset): as_strided_copy's view."""
    return _strided_in(input, size, stride, storage_offset, whole=True)


def _strided_in(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None,
                whole: bool) -> tuple[Op, tuple, tuple]:
    """as_strided's op and arguments; offsets count from the base's first element, or with `whole` from the start
    of its storage (torch's storage_offset)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    storage = _storage(input._base if input._base is not None else input, input._data.dtype, whole)
    offset = storage.describe(input._data)[2] if storage_offset is None else int(storage_offset)
    _check_in_storage(size, stride, offset, storage.numel, storage.item)
    geometry = _AsStrided(storage, input._data, size, stride, offset, whole)
    return as_strided_op, (input,), (size, stride, offset, geometry)


def _check_in_storage(size: tuple, stride: tuple, offset: int, numel: int, itemsize: int) -> None:
    """torch's refusal of a strided window reaching past a storage of `numel` elements."""
    needed = 0 if 0 in size else _last_position(size, stride, offset) + 1
    if needed > numel:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of "
                           f"bounds for storage of size {numel * itemsize}")


def _last_position(size: Sequence[int], stride: Sequence[int], offset: int) -> int:
    """The storage position of a strided window's last element (its sizes all at least 1)."""
    return offset + sum((n - 1) * s for n, s in zip(size, stride))


as_strided_ = _inplace_view(as_strided)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: every window of `size` elements along `dimension`, `step` apart, as a new last dim."""
    return apply(*_unfolded(input, dimension, size, step))


def _unfolded(input: Tensor, dimension: int, size: int, step: int) -> tuple[Op, tuple, tuple]:
    n = input._data.ndim
    d = _wrap_dim(dimension, n)
    length = input._data.shape[d] if n else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return unfold_op, (input,), (d, size, step)


def cast(input: Tensor, dtype: D.dtype, memory_format: memory_format | None = None) -> Tensor:
    """input converted to `dtype`, and laid out in `memory_format` if given (ToCopyBackward0); integer and
    bool results carry no gradient, as in torch."""
    if dtype.category < 2:
        with grad_mode.no_grad():
            return apply(to_copy, (input,), (dtype.np, memory_format))
    return apply(to_copy, (input,), (dtype.np, memory_format))


def detach(input: Tensor) -> Tensor:
    """The same memory without history (requires_grad=False)."""
    return input.detach()


def contiguous(input: Tensor, memory_format: memory_format = contiguous_format) -> Tensor:
    """self when already laid out in `memory_format` (row-major by default), else a copy that is."""
    if is_laid_out(input._data, memory_format):
        return input
    return apply(clone_op, (input,), (memory_format,))


def is_contiguous(input: Tensor, memory_format: memory_format = contiguous_format) -> bool:
    """Whether input is laid out in `memory_format` (row-major by default)."""
    return is_laid_out(input._data, memory_format)


def clone(input: Tensor, *, memory_format: memory_format | None = None) -> Tensor:
    """A copy with its own memory that stays in the graph (CloneBackward0)."""
    return apply(clone_op, (input,), (memory_format,))


# ============================================================================================
# Public functions: at least n dims
# ============================================================================================


def _at_least(tensors: tuple, ndim: int) -> Tensor | tuple[Tensor, ...]:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    items = tensors if single or len(tensors) != 1 else tuple(tensors[0])
    out = tuple(_raise_rank(t, ndim) for t in items)
    return out[0] if single else out


def _raise_rank(x: Tensor, ndim: int) -> Tensor:
    """torch's atleast_nd for one tensor: 0-d reshapes, 1-d and 2-d unsqueeze, others pass through."""
    n = x._data.ndim
    if n >= ndim:
        return x
    if n == 0:
        return reshape(x, (1,) * ndim)
    if n == 1 and ndim == 3:
        return unsqueeze(unsqueeze(x, 0), -1)
    return unsqueeze(x, 0 if n == 1 else -1)


def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each input as at least a 1-d tensor."""
    return _at_least(tensors, 1)


def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each input as at least a 2-d tensor (1-d becomes a row)."""
    return _at_least(tensors, 2)


def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each input as at least a 3-d tensor."""
    return _at_least(tensors, 3)


# ============================================================================================
# Public functions: joining and splitting
# ============================================================================================


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (1-d empty tensors are skipped, as torch allows)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    ref = next((t for t in tensors if t._data.shape != (0,)), tensors[0])
    d = _wrap_dim(dim, ref._data.ndim)
    for i, t in enumerate(tensors):
        if t._data.shape == (0,) and t is not ref:
            continue
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref._data.ndim} and {t._data.ndim}")
        for k, (a, b) in enumerate(zip(ref._data.shape, t._data.shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got "
                                   f"size {b} for tensor number {i} in the list.")
    return apply(cat_op, (_promote_all(tensors),), (d,))


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Another name for cat."""
    return cat(tensors, dim)


def concatenate(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """NumPy's name for cat; its parameter is `dim` too, `axis` only as torch's parser takes it everywhere (Note
    [NumPy's keyword names]): efficient-kan writes `torch.concatenate([...], dim=0)`."""
    return cat(tensors, dim)


def _stacking(name: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-d inputs)."""
    tensors = list(atleast_1d(_stacking("hstack", tensors)))
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, 1-d inputs becoming rows."""
    return cat(list(atleast_2d(_stacking("vstack", tensors))), 0)


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Another name for vstack."""
    return vstack(tensors)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 2 (depth), after atleast_3d."""
    return cat(list(atleast_3d(_stacking("dstack", tensors))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join as columns: 0-d and 1-d inputs become (n, 1) columns, then hstack."""
    tensors = _stacking("column_stack", tensors)
    return hstack([reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in tensors])


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    tensors = _stacking("stack", tensors)
    for i, t in enumerate(tensors):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    tensors = _promote_all(tensors)
    return apply(stack_op, (tensors,), (_wrap_dim(dim, tensors[0]._data.ndim + 1),))


def _promote_all(tensors: list[Tensor]) -> list[Tensor]:
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    return [t if t.dtype is dt else t.to(dt) for t in tensors]


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into the slices along `dim`, removing it."""
    return apply(*_unbound(input, dim))


def _unbound(input: Tensor, dim: int = 0) -> tuple[Op, tuple, tuple]:
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return unbind_op, (input,), (_wrap_dim(dim, input._data.ndim),)


def _split_dim(input: Tensor, dim: int, name: str = "split") -> tuple[int, int]:
    if input._data.ndim == 0:
        raise RuntimeError(f"{name} expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input._data.ndim)
    return d, input._data.shape[d]


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Chunks of `split_size` along dim (the last may be smaller), or of the given sizes."""
    if not isinstance(split_size_or_sections, (int, np.integer)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    return _split_by_size(split_op, tensor, split_size_or_sections, dim)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Chunks of the given sizes along dim (they must add up to its length)."""
    return apply(*_split_by_sizes(split_with_sizes_op, input, split_sizes, dim))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` nearly equal parts (ceil-sized, as torch)."""
    return split(input, _chunk_size(input, chunks, dim), dim)


def unsafe_split(tensor: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """split's pieces, not tracked as views of the input (torch's unsafe_split)."""
    return _split_by_size(unsafe_split_op, tensor, split_size, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """split_with_sizes's pieces, not tracked as views of the input."""
    return apply(*_split_by_sizes(unsafe_split_with_sizes_op, input, split_sizes, dim))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """chunk's pieces, not tracked as views of the input (UnsafeSplitBackward0, as torch)."""
    return unsafe_split(input, _chunk_size(input, chunks, dim), dim)


def _split_by_size(op: Op, tensor: Tensor, split_size: int, dim: int) -> tuple[Tensor, ...]:
    return apply(*_split_into(op, tensor, split_size, dim))


def _split_into(op: Op, tensor: Tensor, split_size: int, dim: int = 0) -> tuple[Op, tuple, tuple]:
    """split's arguments: pieces of split_size along dim, after torch's checks."""
    d, n = _split_dim(tensor, dim)
    size = int(split_size)
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    return op, (tensor,), (size, d)


def _split_by_sizes(op: Op, input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Op, tuple, tuple]:
    d, n = _split_dim(input, dim)
    sizes = tuple(int(s) for s in split_sizes)
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(sizes)}")
    return op, (input,), (sizes, d)


def _chunk_size(input: Tensor, chunks: int, dim: int) -> int:
    """The split size of chunk(chunks): ceil(n / chunks), at least 1."""
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input._data.shape[_wrap_dim(dim, input._data.ndim)]
    return max(-(-n // chunks), 1)


def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `sections` parts whose sizes differ by at most one, or at the given indices (slice views)."""
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.dtype is not D.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{D.scalar_type_name(arg.dtype)}")
        if arg._data.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {arg._data.ndim} dims")
        arg = int(arg._data) if arg._data.ndim == 0 else arg.tolist()
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(arg, (int, np.integer)):
        if arg <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {arg}")
        q, r = divmod(n, int(arg))
        sizes = [q + 1] * r + [q] * (int(arg) - r)
        bounds = list(zip(np.cumsum([0] + sizes[:-1]).tolist(), np.cumsum(sizes).tolist()))
    else:
        cuts = [0] + [int(i) for i in arg] + [n]
        bounds = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            start, stop, _ = slice(a, b).indices(n)
            bounds.append((start, max(start, stop)))
    return tuple(apply(slice_op, (input,), (d, s, e, 1)) for s, e in bounds)


# ============================================================================================
# Public functions: copies that rearrange
# ============================================================================================


def repeat(input: Tensor, *sizes: int) -> Tensor:
    """Tile the tensor sizes[i] times along each dim (extra leading sizes add dims)."""
    sizes = as_sizes(sizes, "repeat", "repeats")
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    padded = (1,) * (len(sizes) - len(shape)) + shape
    target = [n * r for n, r in zip(padded, sizes)]
    if any(s < 0 for s in target):
        bad = next(s for s in target if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {target}")
    return apply(repeat_op, (input,), (sizes,))


def _tile(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    """repeat, with dims padded by leading ones when shorter than the tensor's rank."""
    return repeat(input, (1,) * (input._data.ndim - len(dims)) + dims)


def _int_list_forms(op: Callable[[Tensor, tuple[int, ...]], Tensor], name: str, argument: str
                    ) -> tuple[Callable, Callable]:
    """torch.<name>(input, <argument>) and Tensor.<name> for an op whose one parameter is an int list. torch's
    parser takes the list as one positional or by keyword in both forms, and gathers varargs in the method only
    (`x.permute(1, 0)`, `x.tile(2)`), so the function refuses a bare int (`torch.flip(x, 1)`)."""
    def int_list_of(args: tuple, keyword: dict, method: bool) -> tuple[int, ...]:
        if keyword or not args:  # the keyword, or torch's refusals of what is missing or given twice
            if args and argument in keyword:
                raise TypeError(f"{name}() got multiple values for argument '{argument}'")
            if not args and argument not in keyword:
                raise TypeError(f'{name}() missing 1 required positional arguments: "{argument}"')
            if set(keyword) - {argument}:
                raise TypeError(f"{name}() got an unexpected keyword argument '{min(set(keyword) - {argument})}'")
            return int_list(keyword[argument], name, argument)
        if not method:
            if len(args) > 1:
                raise TypeError(f"{name}() takes 2 positional arguments but {len(args) + 1} were given")
            return int_list(args[0], name, argument, 2)
        if len(args) > 1 and type(args[0]) is not int and not _takes_as_int(args[0]):  # varargs only when the
            raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")  # first is an int
        return as_sizes(args, name, argument)

    def function(input: Tensor, *args: Any, **keyword: Any) -> Tensor:
        return op(input, int_list_of(args, keyword, False))

    def method(self: Tensor, *args: Any, **keyword: Any) -> Tensor:
        return op(self, int_list_of(args, keyword, True))

    for form in function, method:
        form.__name__ = form.__qualname__ = name
        form.__doc__ = f"{op.__doc__} ``torch.{name}(input, {argument})``; ``Tensor.{name}(*{argument})`` also."
    return function, method


def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (or slice along dim) repeats[i] times, keeping them together."""
    if repeats is None:  # repeat_interleave(counts): the index of each count, repeated
        counts = input._data
        return _wrap(np.repeat(np.arange(counts.size, dtype=np.int64), counts))
    if dim is None:
        input, d = flatten(input), 0
    else:
        d = _wrap_dim(dim, input._data.ndim)
    if isinstance(repeats, (int, np.integer)):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        wide = unsqueeze(input, d + 1)
        shape = list(wide._data.shape)
        shape[d + 1] = int(repeats)
        return flatten(clone(expand(wide, shape)), d, d + 1)
    n = input._data.shape[d]
    if repeats._data.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    xp = _xp.namespace(repeats._data)
    counts = A.reshape(xp, repeats._data, -1)
    if counts.size == 1:
        counts = xp.broadcast_to(counts, (n,))
    if counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size({d}) = {n}")
    if A.reduce(xp, "any", counts < 0):
        raise RuntimeError("repeats can not be negative")
    from .indexing import index_select  # indexing builds on this family (imports it at its top)

    return index_select(input, d, _wrap(xp.repeat(xp.arange(n, dtype=xp.int64, device=counts.device), counts)))


def _flip(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    """Reverse the order of elements along the given dims (a copy)."""
    return apply(flip_op, (input,), (_dim_list(dims, input._data.ndim),))


def fliplr(input: Tensor) -> Tensor:
    """flip along dim 1 (left/right)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """flip along dim 0 (up/down)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _flip(input, (0,))


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along dims (over the flattened tensor when dims is None)."""
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims) and not (not dims and len(shifts) == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    n = input._data.ndim
    if n == 0 and dims:  # torch wraps roll's dims without the scalar's dim 0 / -1
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return apply(roll_op, (input,), (tuple(int(s) for s in shifts), tuple(_wrap_dim(d, n) for d in dims)))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees k times in the plane of dims, from the first towards the second."""
    dims = tuple(dims)
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = _wrap_dim(dims[0], n), _wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    return apply(rot90_op, (input,), (k % 4, (d0, d1)))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d input becomes a diagonal matrix; a matrix gives its diagonal (a copy)."""
    n = input._data.ndim
    if n == 1:
        return apply(diag_embed_op, (input,), (diagonal, 0, 1))
    if n != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")
    return apply(VIEW_COPIES[diagonal_op], (input,), (diagonal, 0, 1))


# Note [view copies and scatters]
# torch's `<view>_copy` ops (permute_copy, ...) give a view's elements in memory of their own, and its
# `<view>_scatter` ops (select_scatter, ...) write src into a copy of self where the view lies: the
# view's adjoint. Each view function resolves its arguments in a helper that returns (row, inputs,
# params) (`_permuted`, ...); the view applies that row, its copy the row's copy (VIEW_COPIES: the
# same derivatives under the node name plus `_copy`), its scatter the scatter row of the same params,
# after torch's check that src has the view's shape.


def _copy_of(name: str, resolve: Callable[..., tuple[Op, tuple, tuple]], row: Op | None = None
             ) -> Callable[..., Tensor]:
    """torch.<name>: the view `resolve` describes, as a copy by its VIEW_COPIES row unless `row` is given (Note
    [view copies and scatters])."""

    def copy(input: Tensor, *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor, ...]:
        view, inputs, params = resolve(input, *args, **kwargs)
        return apply(row or VIEW_COPIES[view], inputs, params)

    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = f"torch.{name}: {name.removesuffix('_copy')}'s elements in memory of their own."
    copy.__signature__ = inspect.signature(resolve).replace(return_annotation="Tensor")
    return copy


def _aliased(input: Tensor) -> tuple[Op, tuple, tuple]:
    return alias_op, (input,), ()


alias_copy = _copy_of("alias_copy", _aliased)
as_strided_copy = _copy_of("as_strided_copy", _strided)
diagonal_copy = _copy_of("diagonal_copy", _diagonal_of)
expand_copy = _copy_of("expand_copy", _expanded)
narrow_copy = _copy_of("narrow_copy", _narrowed)
permute_copy = _copy_of("permute_copy", _permuted)
squeeze_copy = _copy_of("squeeze_copy", _squeezed)
t_copy = _copy_of("t_copy", _transposed_matrix)
transpose_copy = _copy_of("transpose_copy", _transposed)
unbind_copy = _copy_of("unbind_copy", _unbound)
unfold_copy = _copy_of("unfold_copy", _unfolded)
unsqueeze_copy = _copy_of("unsqueeze_copy", _unsqueezed)
view_copy = _copy_of("view_copy", _viewed)
split_with_sizes_copy = _copy_of("split_with_sizes_copy", functools.partial(_split_by_sizes, split_with_sizes_op))
split_copy = _copy_of("split_copy", functools.partial(_split_into, split_op))
select_copy = _copy_of("select_copy", _selected)


def _sliced(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
            step: int = 1) -> tuple[Op, tuple, tuple]:
    """aten::slice's arguments: bounds wrapped once and clamped to the dim, as torch (step must be positive)."""
    if input._data.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input._data.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = input._data.shape[d]
    start, end = (min(max(b + n if b < 0 else b, 0), n) for b in (start or 0, n if end is None else end))
    return slice_op, (input,), (d, start, max(start, end), step)


def _scatter_of(name: str, resolve: Callable[..., tuple[Op, tuple, tuple]], row: Op) -> Callable[..., Tensor]:
    """torch.<name>: a copy of input with src written where the view `resolve` describes lies (Note [view copies
    and scatters])."""

    def scatter(input: Tensor, src: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        view, _, params = resolve(input, *args, **kwargs)
        where = view.forward(np, np.broadcast_to(0, input.shape), *params)  # the view's shape; no values read
        if tuple(src.shape) != where.shape:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(where.shape)}")
        return apply(row, (input, src), params)

    scatter.__name__ = scatter.__qualname__ = name
    scatter.__doc__ = f"torch.{name}: input with src written where {name.removesuffix('_scatter')} would look."
    parameters = list(inspect.signature(resolve).parameters.values())
    src = inspect.Parameter("src", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    scatter.__signature__ = inspect.Signature([parameters[0], src, *parameters[1:]], return_annotation="Tensor")
    return scatter


slice_copy = _copy_of("slice_copy", _sliced, slice_copy_op)
select_scatter = _scatter_of("select_scatter", _selected, select_scatter_op)
slice_scatter = _scatter_of("slice_scatter", _sliced, slice_scatter_op)
diagonal_scatter = _scatter_of("diagonal_scatter", _diagonal_of, diagonal_scatter_op)


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of input with src written into the window (size, stride, storage_offset) of the copy's memory."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = int(storage_offset or 0)
    _check_in_storage(size, stride, offset, input._data.size, input._data.itemsize)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(size)}")
    return apply(as_strided_scatter_op, (input, src), (size, stride, offset))


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Place the last dim of input on the diagonal of the (dim1, dim2) planes of a new tensor."""
    n = input._data.ndim + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(diag_embed_op, (input,), (offset, d1, d2))


def _triangle(op: object, name: str, input: Tensor, diagonal: int) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return apply(op, (input,), (int(diagonal),))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (elements above `diagonal` zeroed)."""
    return _triangle(tril_op, "tril", input, diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (elements below `diagonal` zeroed)."""
    return _triangle(triu_op, "triu", input, diagonal)


permute, PERMUTE_METHOD = _int_list_forms(_permute, "permute", "dims")
reshape, RESHAPE_METHOD = _int_list_forms(_reshaped, "reshape", "shape")
flip, FLIP_METHOD = _int_list_forms(_flip, "flip", "dims")
tile, TILE_METHOD = _int_list_forms(_tile, "tile", "dims")

__all__ = ["alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
           "split_with_sizes_copy", "split_copy", "select_copy", "slice_copy", "select_scatter", "slice_scatter",
           "diagonal_scatter", "as_strided_scatter",
           "block_diag", "broadcast_shapes", "combinations", "unravel_index",
           "as_strided", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "broadcast_to",
           "cartesian_prod", "diagflat", "dsplit", "hsplit", "meshgrid", "positive", "vsplit", "cat",
           "chunk", "clone", "column_stack", "concat", "concatenate", "contiguous", "detach", "diag", "diag_embed",
           "diagonal", "dstack", "expand", "expand_as", "flatten", "flip", "fliplr", "flipud", "hstack", "movedim",
           "moveaxis", "narrow", "permute", "ravel", "repeat_interleave", "reshape", "roll", "rot90", "row_stack",
           "select", "split", "split_with_sizes", "squeeze", "stack", "swapaxes", "swapdims", "t", "tensor_split",
           "tile", "transpose", "tril", "triu", "unbind", "unflatten", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes", "unsqueeze", "view", "vstack"]
METHODS = ["narrow_copy", "as_strided_scatter", "diagonal_scatter", "select_scatter", "slice_scatter",
           "as_strided", "as_strided_", "diag", "diag_embed", "diagflat", "diagonal", "dsplit", "hsplit", "positive",
           "sum_to_size", "vsplit", "fliplr", "flipud", "is_contiguous",
           "ravel", "repeat", "repeat_interleave", "roll", "rot90", "split_with_sizes", "squeeze_", "swapaxes_",
           "swapdims_", "t_", "tensor_split", "transpose_", "tril", "triu", "unfold", "unsafe_chunk",
           "unsafe_split", "unsafe_split_with_sizes", "unsqueeze_"]
INPLACE = ["tril", "triu"]
