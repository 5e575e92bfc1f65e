"""Rule table: indexing, gather and scatter (OPS.md section G).

`x[key]` is split the way torch splits it, so grad_fn names match: integers become `select`,
slices `slice`, None `unsqueeze` (all views), and tensor/list/bool indices one `index` op whose
backward accumulates into duplicate positions (`x[[0, 0]]` gives grad 2 at 0). `x[key] = v`
takes the same views and writes through them (`copy_`, `fill_` or `index_put_`), so the base
records CopySlices (see shape.py, Note [in-place through views]).

Index tensors are not inputs of the rows but parameters (NumPy int64 or bool arrays): they
never carry a gradient, and formulas pass them on to other rows as they are.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import zeros
from .._tensor import Tensor, _wrap, _wrap_dim, argument_type_name
from .._warn import user_stacklevel, warn_once_at_user
from .._xp import is_array, namespace
from ..autograd import grad_mode
from ..autograd.forward_ad import transforms as _transforms
from . import arrays as A
from .pointwise import where
from .registry import _broadcast_error, apply, defop, keep_index_versions
from .shape import alias_op, cat, select, select_op, slice_op, unsqueeze

# ============================================================================================
# Advanced indexing: index, index_put
# ============================================================================================


@defop("index", params=("indices",), self="index_backward(grad, self_shape, indices)",
       jvp="index_op(self_t, indices)")
def index_op(xp, x, indices):
    if not A.numpy_indexing(x):  # the standard indexes with integer arrays only beside integers: a flat take
        # (CuPy's x[indices] would wrap an index out of bounds around, where this raises torch's error)
        rows, linear, at, _ = _advanced_rows(xp, x, indices)
        picked = xp.take(rows, xp.reshape(linear, (-1,)), axis=0)
        return _move_dims(xp, xp.reshape(picked, linear.shape + rows.shape[1:]), linear.ndim, 0, at)
    return x[indices]


@defop("index_put", node="IndexPutBackward0", inputs=("self", "values"), params=("indices", "accumulate"),
       self="grad if accumulate else index_put_op(grad, 0.0, indices, False)", values="index_op(grad, indices)",
       jvp="index_put_op(self_t, values_t, indices, accumulate)")
def index_put_op(xp, x, values, indices, accumulate):
    if not hasattr(x, "strides"):  # the standard has no indexed assignment: the rows' scatter (Note above)
        return _index_put_standard(xp, x, values, indices, accumulate)
    if not A.numpy_indexing(x):  # CuPy wraps an index out of bounds: torch's check first
        _explain_index_error(indices, x.shape)
    out = A.copy(xp, x)
    if accumulate:
        xp.add.at(out, indices, values)
    else:
        out[indices] = values
    return out


# Note [advanced indexing on the standard]
# The standard indexes with integer arrays only when every other entry is an integer, and has no indexed
# assignment. There a key of index arrays and full slices is read as NumPy reads it, through rows: masks become
# their nonzero positions, the indexed dims move first and merge into rows, the broadcast index arrays become one
# linear row number each, and `take` (getitem) or a scatter of rows (index_put: arrays.add_at, or the last write
# per row by comparison, _scatter_compared) works on those rows. NumPy puts the broadcast dims first when the
# index arrays stand apart (a slice between them), else where the first one stood.


def _advanced_rows(xp, x, key):
    """(x with its indexed dims merged into leading rows, the linear row of each broadcast index, where NumPy
    puts the broadcast dims, and the function that turns such rows back into x's layout)."""
    dims, arrays, dim = [], [], 0
    for k in key:
        if is_array(k) and k.dtype == xp.bool:
            if k.shape != x.shape[dim:dim + k.ndim]:
                raise IndexError("mask shape")  # replaced by torch's words (_explain_index_error)
            found = xp.nonzero(k) if k.ndim else ()
            dims += range(dim, dim + len(found))
            arrays += found
            dim += k.ndim
            continue
        if is_array(k):
            size = x.shape[dim]
            if k.size and (int(xp.max(k)) >= size or int(xp.min(k)) < -size):
                raise IndexError("index out of bounds")  # replaced by torch's words (_explain_index_error)
            dims.append(dim)
            arrays.append(k % size if size else k)
        dim += 1
    try:
        arrays = xp.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError("shape mismatch") from None
    linear = xp.zeros(arrays[0].shape, dtype=xp.int64, device=x.device)
    for d, index in zip(dims, arrays):
        linear = linear * x.shape[d] + A.astype(xp, index, xp.int64, copy=False)
    order = dims + [d for d in range(x.ndim) if d not in dims]
    moved_shape = tuple(x.shape[d] for d in order)
    rows = xp.reshape(xp.permute_dims(x, tuple(order)), (math.prod(moved_shape[:len(dims)]),) + moved_shape[len(dims):])
    at = dims[0] if dims == list(range(dims[0], dims[0] + len(dims))) else 0

    def restore(new_rows):
        return xp.permute_dims(xp.reshape(new_rows, moved_shape), tuple(sorted(range(x.ndim), key=order.__getitem__)))

    return rows, linear, at, restore


def _move_dims(xp, x, count, start, to):
    """x with its `count` dims from `start` moved to begin at `to` (the other dims keep their order)."""
    if start == to:
        return x
    moved = list(range(start, start + count))
    others = [d for d in range(x.ndim) if d not in moved]
    return xp.permute_dims(x, tuple(others[:to] + moved + others[to:]))


def _index_put_standard(xp, x, values, indices, accumulate):
    """index_put on the standard's arrays: values sent to x's indexed rows (Note above)."""
    rows, linear, at, restore = _advanced_rows(xp, x, indices)
    if not is_array(values):
        values = xp.asarray(values, dtype=x.dtype, device=x.device)
    rest = rows.shape[1:]
    placed = tuple(rest[:at]) + linear.shape + tuple(rest[at:])
    values = _move_dims(xp, xp.broadcast_to(A.astype(xp, values, x.dtype, copy=False), placed), linear.ndim, at, 0)
    flat_rows = xp.reshape(rows, (rows.shape[0], math.prod(rest)))
    flat_values = xp.reshape(values, (math.prod(linear.shape), flat_rows.shape[1]))
    flat_linear = xp.reshape(linear, (-1,))
    if accumulate:
        return restore(A.add_at(xp, flat_rows, flat_linear, flat_values))
    lines = xp.broadcast_to(xp.reshape(flat_linear, (-1, 1)), flat_values.shape)
    return restore(_scatter_compared(xp, flat_rows, flat_values, 0, lines, None))


# ============================================================================================
# Along one dim: index_select, index_add, index_copy, index_fill
# ============================================================================================


@defop("index_select", params=("dim", "index"), self="index_select_backward(grad, self_shape, dim, index)",
       jvp="index_select_op(self_t, dim, index)")
def index_select_op(xp, x, dim, index):
    return xp.take(x, index, axis=dim) if x.ndim else A.reshape(xp, xp.take(A.reshape(xp, x, 1), index, axis=0), ())


@defop("index_add", inputs=("self", "source"), params=("dim", "index", "alpha"), self="grad",
       source="scale_by_alpha(index_select_op(grad, dim, index), alpha)",
       jvp="index_add_op(self_t, source_t, dim, index, alpha)")
def index_add_op(xp, x, source, dim, index, alpha):
    if not hasattr(x, "strides"):
        source = source * alpha if alpha != 1 else source
        return _scatter_compared(xp, x, source, dim, _spread(xp, index, dim, source.shape), "sum")
    out = A.copy(xp, x)
    xp.add.at(_along(out, dim), index, _along(source * alpha if alpha != 1 else source, dim))
    return out


@defop("index_copy", inputs=("self", "source"), params=("dim", "index"), self="index_fill_op(grad, dim, index, 0)",
       source="index_select_op(grad, dim, index)", jvp="index_copy_op(self_t, source_t, dim, index)")
def index_copy_op(xp, x, source, dim, index):
    if not hasattr(x, "strides"):
        return _scatter_compared(xp, x, source, dim, _spread(xp, index, dim, source.shape), None)
    out = A.copy(xp, x)
    _along(out, dim)[index] = _along(source, dim)
    return out


@defop("index_fill", params=("dim", "index", "value"), self="index_fill_op(grad, dim, index, 0)",
       jvp="index_fill_op(self_t, dim, index, 0)")
def index_fill_op(xp, x, dim, index, value):
    if not hasattr(x, "strides"):
        shape = x.shape[:dim] + index.shape + x.shape[dim + 1:] if x.ndim else ()
        return _scatter_compared(xp, x, value, dim, _spread(xp, index, dim, shape), None)
    out = A.copy(xp, x)
    _along(out, dim)[index] = value
    return out


@defop("index_fill_tensor", node="IndexFillBackward1", inputs=("self", "value"), params=("dim", "index"),
       self="index_fill_op(grad, dim, index, 0)", value="index_select_op(grad, dim, unique_index(index)).sum()",
       jvp="index_fill_tensor_op(self_t, value_t, dim, index)")
def index_fill_tensor_op(xp, x, value, dim, index):
    if x.ndim == 0:
        return A.astype(xp, value, x.dtype)
    n = x.shape[dim]
    chosen = xp.any(A.reshape(xp, index % n, (-1, 1)) == xp.arange(n, device=x.device), axis=0)
    chosen = A.reshape(xp, chosen, (-1,) + (1,) * (x.ndim - dim - 1))
    value = A.reshape(xp, value, value.shape + (1,) * (x.ndim - value.ndim))  # leading dims (vmap's) align with x's
    return xp.where(chosen, A.astype(xp, value, x.dtype, copy=False), x)


def _spread(xp, index, dim, shape):
    """A vector of indices along dim spread over `shape` (the index of each element of a slice-wise op)."""
    return xp.broadcast_to(A.reshape(xp, index, tuple(-1 if i == dim else 1 for i in range(len(shape)))), shape)


def _along(x, dim):
    """x with `dim` moved first (a view; 0-d tensors count as 1-d)."""
    return np.moveaxis(x.reshape(1) if x.ndim == 0 else x, dim, 0)


# ============================================================================================
# Along one dim, index per element: gather, scatter, scatter_add, scatter_reduce
# ============================================================================================


@defop("gather", params=("dim", "index"), self="gather_backward(grad, self_shape, dim, index)",
       jvp="gather_op(self_t, dim, index)")
def gather_op(xp, x, dim, index):
    if index.size == 0:  # torch takes an empty index of any rank: the result has its shape
        return xp.empty(index.shape, dtype=x.dtype)
    unit = dim == x.ndim and index.ndim == x.ndim  # 0-d input and index (vmap's too): along a unit trailing dim
    if dim == x.ndim:  # a 0-d input reads as 1-d
        x = x[..., None]
    if unit:
        index = index[..., None]
    leading = tuple(slice(None) if i == dim else slice(0, n) for i, n in enumerate(index.shape))
    out = xp.take_along_axis(x[leading], index, axis=dim)  # torch reads only the part the index covers
    return out[..., 0] if unit else out


@defop("scatter", inputs=("self", "src"), params=("dim", "index"), self="scatter_value_op(grad, dim, index, 0)",
       src="gather_op(grad, dim, index)", jvp="scatter_op(self_t, src_t, dim, index)")
def scatter_op(xp, x, src, dim, index):
    if not hasattr(x, "strides"):
        return _scatter_compared(xp, x, src, dim, index, None)
    out = A.copy(xp, x)
    target, places, src = _scatter_target(out, src, dim, index)
    target[places] = src
    return out


@defop("scatter_value", node="ScatterBackward1", params=("dim", "index", "value"),
       self="scatter_value_op(grad, dim, index, 0)", jvp="scatter_value_op(self_t, dim, index, 0)")
def scatter_value_op(xp, x, dim, index, value):
    if not hasattr(x, "strides"):
        return _scatter_compared(xp, x, value, dim, index, None)
    out = A.copy(xp, x)
    target, places, _ = _scatter_target(out, None, dim, index)
    target[places] = value
    return out


@defop("scatter_add", inputs=("self", "src"), params=("dim", "index"), self="grad", src="gather_op(grad, dim, index)",
       jvp="scatter_add_op(self_t, src_t, dim, index)")
def scatter_add_op(xp, x, src, dim, index):
    if not hasattr(x, "strides"):
        return _scatter_compared(xp, x, src, dim, index, "sum")
    out = A.copy(xp, x)
    target, places, src = _scatter_target(out, src, dim, index)
    xp.add.at(target, places, src)
    return out


# torch has no derivative for scatter(..., reduce=): its node is torch::autograd::NotImplemented
@defop("scatter_reduce_legacy", node="NotImplemented", inputs=("self", "src"), params=("dim", "index", "reduce"),
       self="derivative_not_implemented('aten::scatter')", src="derivative_not_implemented('aten::scatter')")
def scatter_reduce_legacy(xp, x, src, dim, index, reduce):
    if not hasattr(x, "strides") or reduce == "multiply" and not A.numpy_indexing(x):
        # the standard has no ufunc.at, CuPy no multiply.at: reduce each place's compared values
        return _scatter_compared(xp, x, src, dim, index, "sum" if reduce == "add" else "prod")
    out = A.copy(xp, x)
    target, places, src = _scatter_target(out, src, dim, index)
    (xp.add if reduce == "add" else xp.multiply).at(target, places, src)
    return out


scatter_reduce_legacy.node_class.name = lambda node: "torch::autograd::NotImplemented"

_IDENTITY = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}


def _identity(xp: Any, reduce: str, x: Any) -> int | float | bool:
    """The value a place starts from when include_self is False, as torch's: amax's and amin's -inf and inf where
    x's dtype has them, else its least and greatest value (False and True for bool)."""
    identity, kind = _IDENTITY[reduce], D.kind(x)
    if kind == "b":
        return bool(identity > 0)
    if kind in "iu" and math.isinf(identity):
        return xp.iinfo(x.dtype).min if identity < 0 else xp.iinfo(x.dtype).max
    return identity


def _mean_of(total: Any, counts: Any) -> Any:
    """A place's total over its count: floor division for integers, as torch's div_(count, "floor")."""
    return total // counts if D.kind(total) in "iu" else total / counts


@defop("scatter_reduce", inputs=("self", "src"), params=("dim", "index", "reduce", "include_self"),
       self="scatter_reduce_backward(grad, self, src, result, dim, index, reduce, include_self)[0]",
       src="scatter_reduce_backward(grad, self, src, result, dim, index, reduce, include_self)[1]",
       jvp="scatter_reduce_tangent(self, self_t, src, src_t, result, dim, index, reduce, include_self)")
def scatter_reduce_op(xp, x, src, dim, index, reduce, include_self):
    if not hasattr(x, "strides") or reduce not in ("sum", "mean") and not A.numpy_indexing(x):
        # the standard has no ufunc.at, CuPy no multiply.at and an inexact maximum.at: compare each place's values
        return _scatter_compared(xp, x, src, dim, index, reduce, include_self)
    out = A.copy(xp, x)
    target, places, src = _scatter_target(out, src, dim, index)
    if not include_self:
        target[places] = _identity(xp, reduce, x)
    {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce].at(
        target, places, src)
    if reduce == "mean":
        target[...] = _mean_of(target, _scatter_counts(x.shape, dim, index, include_self).reshape(target.shape))
    return out


# index_reduce reduces whole slices of source into self along dim: scatter_reduce with the index spread
# over source's shape (the row's `index`, spread once by the public function), so the two share their
# forward, formulas and batching rule, as torch defines them alike.
@defop("index_reduce", inputs=("self", "source"), params=("dim", "index", "reduce", "include_self"),
       self="scatter_reduce_backward(grad, self, source, result, dim, index, reduce, include_self, 'index_reduce')[0]",
       source="scatter_reduce_backward(grad, self, source, result, dim, index, reduce, include_self, "
              "'index_reduce')[1]",
       jvp="scatter_reduce_tangent(self, self_t, source, source_t, result, dim, index, reduce, include_self)")
def index_reduce_op(xp, x, source, dim, index, reduce, include_self):
    return scatter_reduce_op.forward(xp, x, source, dim, index, reduce, include_self)


# torch's DelayedError: a value whose gradient cannot be computed, known while recording the
# backward; the error is raised only if that gradient is ever differentiated
@defop("delayed_error", node="Error", params=("message",), self="raise_delayed_error(message)")
def delayed_error_op(xp, x, message):
    return x


def raise_delayed_error(message: str) -> None:
    raise RuntimeError(message)


def _scatter_target(out: np.ndarray, src: object, dim: int, index: np.ndarray) -> tuple:
    """(view of out, the NumPy key that sends element i of `index` to out[..., index[i], ...] along
    dim, the part of src the index covers). A 0-d tensor (dim one past its dims, also as vmap
    batches one) gets a unit trailing dim. An empty index (any rank, as torch takes it) selects nothing."""
    if index.size == 0:
        return out.reshape(-1), (np.zeros(0, dtype=np.intp),), np.zeros(0, dtype=out.dtype)
    if dim == out.ndim:  # a 0-d target reads as 1-d; a 0-d index (and src) too
        if index.ndim == out.ndim:
            index = index[..., None]
            if is_array(src) and src.ndim == out.ndim and src.ndim:
                src = src[..., None]
        out = out[..., None]
    places = list(_open_grid(index))
    places[dim] = index
    if is_array(src) and src.ndim and src.shape != index.shape:
        src = src[tuple(slice(0, n) for n in index.shape)]  # torch reads only the part the index covers
    return out, tuple(places), src


def _open_grid(index: np.ndarray) -> tuple:
    """np.indices(index.shape, sparse=True) in index's namespace, on its device (a CuPy index: GPU positions)."""
    if type(index) is np.ndarray:
        return np.indices(index.shape, sparse=True)
    xp, ones = namespace(index), (1,) * index.ndim
    return tuple(xp.reshape(xp.arange(n, device=index.device), ones[:axis] + (n,) + ones[axis + 1:])
                 for axis, n in enumerate(index.shape))


def _scatter_compared(xp, x, src, dim, index, reduce, include_self=True):
    """scatter (reduce None: the last write wins, as NumPy's) or scatter_reduce (sum, prod, mean, amax, amin) for
    arrays without indexed writes (the standard's): each place along dim compares its position with every index of
    its line, k x n comparisons per line."""
    if index.size == 0:
        return A.copy(xp, x)
    if x.ndim == 0:
        return A.reshape(xp, _scatter_compared(xp, A.reshape(xp, x, 1), src if not hasattr(src, "ndim") or src.ndim
                                               else A.reshape(xp, src, 1), 0, A.reshape(xp, index, 1), reduce,
                                               include_self), ())
    lines = xp.moveaxis(index, dim, -1)  # (..., k): index lines; the places compared are the last axis, (..., k, n)
    k, n = lines.shape[-1], x.shape[dim]
    hits = lines[..., None] == xp.arange(n, device=x.device)
    region = tuple(slice(0, m) for m in lines.shape[:-1]) + (slice(None),)
    out = A.copy(xp, xp.moveaxis(x, dim, -1))
    if hasattr(src, "ndim") and src.ndim:
        src = xp.moveaxis(src[tuple(slice(0, m) for m in index.shape)], dim, -1)  # torch reads the covered part only
    else:
        src = xp.broadcast_to(xp.asarray(src, dtype=x.dtype, device=x.device), lines.shape)
    base = out[region]
    if reduce is None:
        last = xp.max(xp.where(hits, xp.reshape(xp.arange(k, device=x.device), (k, 1)), -1), axis=-2)  # (..., n)
        written = xp.take_along_axis(src, xp.clip(last, 0, None), axis=-1)
        out[region] = xp.where(last >= 0, written, base)
        return xp.moveaxis(out, -1, dim)
    identity = xp.asarray(_identity(xp, reduce, x), dtype=x.dtype, device=x.device)
    combined = getattr(xp, _COMBINED[reduce])(xp.where(hits, src[..., None], identity), axis=-2)
    combined = A.astype(xp, combined, x.dtype, copy=False)  # an integer sum wraps as torch's, before a mean's division
    if reduce == "mean":
        count = A.reduce(xp, "sum", A.astype(xp, hits, x.dtype), -2) + int(include_self)
        combined = _mean_of(combined + base if include_self else combined, xp.maximum(count, 1))
    elif include_self:
        combined = getattr(xp, _MERGED[reduce])(base, combined)
    out[region] = xp.where(xp.any(hits, axis=-2), A.astype(xp, combined, x.dtype, copy=False), base)
    return xp.moveaxis(out, -1, dim)


_COMBINED = {"sum": "sum", "mean": "sum", "prod": "prod", "amax": "max", "amin": "min"}  # over a place's values
_MERGED = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}  # those with self's value


def _scatter_counts(shape: tuple, dim: int, index: np.ndarray, include_self: bool) -> np.ndarray:
    """How many values scatter_reduce combined into each place (at least 1, as torch divides by it)."""
    xp = namespace(index)
    counts = xp.full(shape, int(include_self), dtype=xp.int64, device=index.device)
    ones = xp.ones(index.shape, dtype=xp.int64, device=index.device)
    return xp.maximum(scatter_add_op.forward(xp, counts, ones, dim, index), 1)


# ============================================================================================
# Masks and flat positions: masked_fill, masked_select, masked_scatter, take, put
# ============================================================================================


# torch has two rows: a number value is a parameter (MaskedFillBackward0, one edge: self), a 0-d tensor value
# an input (MaskedFillBackward1, edges self and value)
@defop("masked_fill", params=("mask", "value"), self="masked_fill_op(grad, mask, 0.0)",
       jvp="masked_fill_op(self_t, mask, 0.0)")
def masked_fill_op(xp, x, mask, value):
    fill = A.astype(xp, xp.asarray(value, device=x.device), x.dtype, copy=False)
    if type(x) is np.ndarray and type(mask) is np.ndarray and x.flags.c_contiguous and mask.ndim <= x.ndim \
            and np.broadcast_shapes(x.shape, mask.shape) == x.shape:
        out = x.copy()  # a copy and a masked write: half of where's time with a broadcast mask (attention's)
        np.copyto(out, fill, where=mask)
        return out
    return xp.where(mask, fill, x)


@defop("masked_fill_tensor", node="MaskedFillBackward1", inputs=("self", "value"), params=("mask",),
       self="masked_fill_op(grad, mask, 0.0)", value="masked_fill_op(grad, ~mask, 0.0).sum()",
       jvp="masked_fill_tensor_op(self_t, value_t, mask)")
def masked_fill_tensor_op(xp, x, value, mask):
    return masked_fill_op.forward(xp, x, mask, value)


@defop("masked_select", params=("mask",), self="masked_select_backward(grad, self_shape, mask)",
       jvp="masked_select_op(self_t, mask)")
def masked_select_op(xp, x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return xp.broadcast_to(x, shape)[xp.broadcast_to(mask, shape)]


@defop("masked_scatter", inputs=("self", "source"), params=("mask",), self="masked_fill_op(grad, mask, 0.0)",
       source="masked_scatter_source_grad(grad, mask, source_shape)",
       jvp="masked_scatter_op(self_t, source_t, mask)")
def masked_scatter_op(xp, x, source, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    where = xp.broadcast_to(mask, shape)
    if not hasattr(x, "strides"):  # no indexed assignment: each masked place takes source's element at its rank
        if not source.size:  # then nothing is masked (masked_scatter checks the count)
            return A.copy(xp, xp.broadcast_to(x, shape))
        flat = xp.reshape(where, (-1,))
        rank = xp.cumulative_sum(A.astype(xp, flat, xp.int64)) - 1
        picked = xp.take(xp.reshape(source, (-1,)), xp.clip(rank, 0, None), axis=0)
        return xp.where(where, xp.reshape(picked, shape), x)
    out = A.copy(xp, xp.broadcast_to(x, shape))
    out[where] = A.reshape(xp, source, -1)[: int(xp.count_nonzero(where))]
    return out


@defop("take", params=("index",), self="take_backward(grad, self_shape, index)", jvp="take_op(self_t, index)")
def take_op(xp, x, index):
    return A.reshape(xp, x, -1)[index]


@defop("put", inputs=("self", "source"), params=("index", "accumulate"),
       self="grad if accumulate else put_op(grad, zeros(source_shape, dtype=grad.dtype, device=grad.device), index, "
            "False)",
       source="take_op(grad, index).reshape(source_shape)", jvp="put_op(self_t, source_t, index, accumulate)")
def put_op(xp, x, source, index, accumulate):
    if not hasattr(x, "strides"):
        flat = _scatter_compared(xp, A.reshape(xp, x, -1), A.reshape(xp, source, -1), 0,
                                 A.reshape(xp, index, -1) % math.prod(x.shape), "sum" if accumulate else None)
        return A.reshape(xp, flat, x.shape)
    out = A.copy(xp, x)
    flat, places, values = A.reshape(xp, out, -1), A.reshape(xp, index, -1), xp.asarray(source).reshape(-1)
    if accumulate:
        xp.add.at(flat, places, values)
    else:
        flat[places] = values
    return out


# ============================================================================================
# Fills (what x[key] = scalar writes through its view)
# ============================================================================================


@defop("fill", node="FillBackward2", params=("value",), self="zeros_like(grad)", jvp="zeros_like(self_t)")
def fill_op(xp, x, value):
    return xp.full_like(x, value)


@defop("fill_tensor", node="FillBackward3", inputs=("self", "value"), self="zeros_like(grad)", value="grad.sum()",
       jvp="cast_to(value_t, self_dtype).expand(self_shape)")
def fill_tensor_op(xp, x, value):
    return A.astype(xp, xp.broadcast_to(value, x.shape), x.dtype)


fill_out_op = fill_op.alias("fill_out", "FillBackward0")  # torch.fill, out of place: the Scalar and Tensor nodes
fill_tensor_out_op = fill_tensor_op.alias("fill_tensor_out", "FillBackward1")


@defop("zero", node="ZeroBackward0", self="zeros_like(grad)", jvp="zeros_like(self_t)")
def zero_op(xp, x):
    return xp.zeros_like(x)


# ============================================================================================
# Formula helpers
# ============================================================================================


def index_backward(grad: Tensor, shape: tuple, indices: tuple) -> Tensor:
    """The adjoint of indexing: grad added into zeros at the indexed places (duplicates add up)."""
    return index_put_op(zeros(shape, dtype=grad.dtype, device=grad.device), grad, indices, True)


def index_select_backward(grad: Tensor, shape: tuple, dim: int, index: np.ndarray) -> Tensor:
    return index_add_op(zeros(shape, dtype=grad.dtype, device=grad.device), grad, dim, index, 1)


def gather_backward(grad: Tensor, shape: tuple, dim: int, index: np.ndarray) -> Tensor:
    return scatter_add_op(zeros(shape, dtype=grad.dtype, device=grad.device), grad, dim, index)


def take_backward(grad: Tensor, shape: tuple, index: np.ndarray) -> Tensor:
    return put_op(zeros(shape, dtype=grad.dtype, device=grad.device), grad, index, True)


def masked_select_backward(grad: Tensor, shape: tuple, mask: np.ndarray) -> Tensor:
    """grad put back at the masked places of a zero tensor of the broadcast shape."""
    return masked_scatter_op(zeros(np.broadcast_shapes(shape, mask.shape), dtype=grad.dtype, device=grad.device), grad,
                             mask)


def masked_scatter_source_grad(grad: Tensor, mask: np.ndarray, source_shape: tuple) -> Tensor:
    """The gradient at the masked places, in source's order, padded with zeros to source's size."""
    picked = masked_select_op(grad, mask)
    rest = int(np.prod(source_shape)) - picked._data.size
    return cat([picked, zeros(rest, dtype=grad.dtype, device=grad.device)]).reshape(source_shape)


def unique_index(index: object) -> object:
    """The distinct entries of an index array (each filled slice counts once), in its own namespace."""
    return namespace(index).unique_values(index)


def scale_by_alpha(t: Tensor, alpha: complex) -> Tensor:
    """t * conj(alpha), skipped for alpha == 1 (torch's maybe_multiply)."""
    return t if alpha == 1 else t * (alpha.conjugate() if isinstance(alpha, complex) else alpha)


def derivative_not_implemented(name: str) -> None:
    raise RuntimeError(f"derivative for {name} is not implemented")


def scatter_reduce_backward(grad: Tensor, self: Tensor, src: Tensor, result: Tensor, dim: int, index: np.ndarray,
                            reduce: str, include_self: bool, op: str = "scatter_reduce") -> tuple[Tensor, Tensor]:
    """Gradients of scatter_reduce (and index_reduce, `op`) for (self, src), as torch defines them (ties
    share evenly)."""
    if reduce == "sum":
        grad_self, grad_src = grad, gather_op(grad, dim, index)
    elif reduce == "mean":
        counts = _scatter_counts(tuple(self.shape), dim, index, include_self)
        grad_self = grad / _wrap(A.astype(namespace(counts), counts, grad._data.dtype))
        grad_src = gather_op(grad_self, dim, index)
    elif reduce == "prod":
        grad_self, grad_src = _scatter_prod_backward(grad, self, src, result, dim, index, include_self, op)
    else:  # amax, amin: the gradient is shared among the values equal to the result
        self_wins = (self == result).to(grad.dtype)
        src_wins = (src == gather_op(result, dim, index)).to(grad.dtype)
        shared = grad / scatter_add_op(self_wins, src_wins, dim, index)
        grad_self, grad_src = self_wins * shared, src_wins * gather_op(shared, dim, index)
    if not include_self:
        grad_self = scatter_value_op(grad_self, dim, index, 0)
    return grad_self, grad_src


def _scatter_prod_backward(grad: Tensor, self: Tensor, src: Tensor, result: Tensor, dim: int, index: np.ndarray,
                           include_self: bool, op: str) -> tuple[Tensor, Tensor]:
    """The product rule without dividing by zero: a lone zero factor gets the product of the others.
    With two zeros or more in one place, the source's gradient is right but its own derivative is not:
    while recording, it goes through torch's DelayedError, whose backward raises."""
    self_nonzero = self.masked_fill(self == 0, 1)
    grad_self = grad * scatter_reduce_op(self_nonzero, src, dim, index, "prod", include_self) / self_nonzero
    src_zero = src == 0
    zeros_per_place = scatter_add_op(self.new_zeros(self.shape), src_zero.to(self.dtype), dim, index)
    lone_zero = src_zero & (gather_op(zeros_per_place, dim, index) == 1)
    others = scatter_reduce_op(self, src.masked_fill(lone_zero, 1), dim, index, "prod", include_self)
    grad_src = where(lone_zero, gather_op(grad * others, dim, index),
                     gather_op(grad * result, dim, index) / src.masked_fill(src_zero, 1))
    if grad_mode._state.enabled and bool(A.reduce(namespace(index), "any", zeros_per_place._data > 1)):
        source = "src" if op == "scatter_reduce" else "source"
        grad_src = delayed_error_op(grad_src, f"{op}(): Double backward is unsupported for {source} when >1 zeros in "
                                              f"{source} are scattered to the same position in self")
    return grad_self, grad_src


def scatter_reduce_tangent(self: Tensor, self_t: Tensor, src: Tensor, src_t: Tensor, result: Tensor, dim: int,
                           index: np.ndarray, reduce: str, include_self: bool) -> Tensor:
    """The JVP of scatter_reduce: linear for sum/mean, the winners' mean tangent for amax/amin, and
    for prod the sum over factors of (tangent x product of the other factors)."""
    def reduced(a: Tensor, b: Tensor, how: str) -> Tensor:
        return scatter_reduce_op(a, b, dim, index, how, include_self)

    if reduce in ("sum", "mean"):
        return reduced(self_t, src_t, reduce)
    if reduce == "prod":
        return _prod_tangent(reduced, self, self_t, src, src_t)
    self_wins = (self == result).to(self_t.dtype)
    src_wins = (src == gather_op(result, dim, index)).to(self_t.dtype)
    return reduced(self_t * self_wins, src_t * src_wins, "sum") / reduced(self_wins, src_wins, "sum")


def _prod_tangent(reduced, self: Tensor, self_t: Tensor, src: Tensor, src_t: Tensor) -> Tensor:
    """d(prod) = prod(nonzero factors) * (sum of t/x with no zero factor; the zero's t with one; 0 with more)."""
    def split(x: Tensor, x_t: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        zero = x == 0
        nonzero = x.masked_fill(zero, 1)
        return nonzero, zero.to(x_t.dtype), (x_t / nonzero).masked_fill(zero, 0), x_t.masked_fill(~zero, 0)

    self_nz, self_zero, self_rate, self_zt = split(self, self_t)
    src_nz, src_zero, src_rate, src_zt = split(src, src_t)
    zeros = reduced(self_zero, src_zero, "sum")
    rate = where(zeros == 0, reduced(self_rate, src_rate, "sum"),
                 where(zeros == 1, reduced(self_zt, src_zt, "sum"), 0.0))
    return reduced(self_nz, src_nz, "prod") * rate


# ============================================================================================
# Public functions: x[key] and x[key] = value
# ============================================================================================


def _sequence_as_tuple(key: object) -> bool:
    """torch's (NumPy's old) rule: a list holding a sequence, slice, tensor, None or Ellipsis is a tuple."""
    if not isinstance(key, (list, tuple)) or len(key) >= 32:
        return False
    for item in key:
        if isinstance(item, (Tensor, list, tuple, slice, np.ndarray)) or item is None or item is Ellipsis:
            warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
                          "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
                          "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
                          "a different result (Triggered internally at "
                          "/__w/pytorch/pytorch/torch/csrc/autograd/python_variable_indexing.cpp:349.)", UserWarning,
                          stacklevel=user_stacklevel())
            return True
    return False


def _as_index(value: object) -> np.ndarray:
    """An index array from a tensor, list or array: integers as int64, masks as bool."""
    if isinstance(value, Tensor):
        arr = value._data
        if value.dtype not in (D.int64, D.int32, D.uint8, D.bool_):  # torch takes other arrays and lists as int64
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    else:
        arr = np.asarray(value)
        if arr.dtype == object:
            arr = np.asarray([v._data if isinstance(v, Tensor) else v for v in value])
    if D.of_array(arr) is D.uint8:  # torch warns every time (TORCH_WARN), at the user's line
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead. "
                      "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/IndexingUtils.h:37.)",
                      UserWarning, stacklevel=user_stacklevel())
        return arr != 0
    if D.kind(arr) == "b":
        return arr
    if D.kind(arr) not in "iu":
        if arr.size == 0 and not isinstance(value, Tensor):
            return arr.astype(np.int64)
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return A.astype(namespace(arr), arr, np.int64, copy=False)


def _index_like(data: object, index: object) -> object:
    """An index array where `data` lives: a list's (host) index, or a CPU tensor's, indexing a device's tensor."""
    if type(index) is type(data) or type(data) is np.ndarray:
        return index
    return namespace(data).asarray(index, device=data.device)


def _parse_key(key: object) -> list:
    """The entries of an indexing key: None, Ellipsis, slice, int, bool or an index array."""
    if not isinstance(key, tuple):
        key = tuple(key) if _sequence_as_tuple(key) else (key,)
    entries = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            entries.append(k)
        elif isinstance(k, (bool, np.bool_)):
            entries.append(bool(k))
        elif isinstance(k, (int, np.integer)):
            entries.append(int(k))
        elif isinstance(k, Tensor) and k._data.ndim == 0 and k.dtype.category < 2:
            # a 0-d uint8 tensor is a mask, as a 0-d bool is (torch's applySlicing), and warns of nothing
            entries.append(bool(k._data) if k.dtype.category == 0 or k.dtype is D.uint8 else int(k._data))
        elif isinstance(k, (Tensor, list, tuple, range, np.ndarray)):
            entries.append(_as_index(k))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(k).__name__})")
    return entries


def _index_views(x: Tensor, entries: list, lone_slice: bool) -> tuple[Tensor, tuple | None]:
    """Apply the basic entries as views (select, slice, unsqueeze) the way torch does; return the
    view and the key of the advanced entries over the view's dims (None if there are none)."""
    ndim = x._data.ndim
    specified = sum(e.ndim if is_array(e) and D.kind(e) == "b" else 1 for e in entries
                    if e is not None and e is not Ellipsis and not isinstance(e, bool))
    if specified > ndim:
        if ndim == 0 and len(entries) == 1 and isinstance(entries[0], int):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                             "C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out, dim = x, 0
    advanced: list = []  # one entry per dim of `out` up to the last advanced one
    for position, e in enumerate(entries):  # torch's bounds error names the entry's place in the key
        if e is Ellipsis:
            skip = ndim - specified
            advanced += [slice(None)] * skip
            dim += skip
        elif e is None or isinstance(e, bool):
            out = unsqueeze(out, dim)
            advanced.append(_index_like(x._data, np.array([e])) if isinstance(e, bool) else slice(None))
            dim += 1
        elif isinstance(e, int):
            size = out._data.shape[dim]
            if not -size <= e < size:
                raise IndexError(f"index {e} is out of bounds for dimension {position} with size {size}")
            out = select(out, dim, e)
        elif isinstance(e, slice):
            size = out._data.shape[dim]
            start, stop, step = e.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            # torch keeps the dim as it is only for a slice written from 0 (`-n:` and `1:` of an empty dim slice)
            from_zero = e.start is None or operator.index(e.start) == 0
            if lone_slice or not from_zero or (stop, step) != (size, 1):
                out = apply(slice_op, (out,), (dim, start, max(stop, start), step))
            advanced.append(slice(None))
            dim += 1
        else:  # checked only if NumPy refuses it (_explain_index_error)
            advanced.append(_index_like(x._data, e))
            dim += e.ndim if D.kind(e) == "b" else 1
    if not any(is_array(a) for a in advanced):
        return out, None
    while isinstance(advanced[-1], slice):
        advanced.pop()
    return out, tuple(advanced)


def _explain_index_error(key: tuple, shape: tuple) -> None:
    """Raise torch's IndexError for an advanced key that NumPy refused (an index out of bounds, a
    mask of the wrong shape, index arrays that do not broadcast); return if none applies."""
    dim = 0
    for k in key:
        if is_array(k):
            _check_index(k, shape, dim)
        dim += k.ndim if is_array(k) and D.kind(k) == "b" else 1
    shapes = [a.shape if D.kind(a) != "b" else (int(namespace(a).count_nonzero(a)),) for a in key if is_array(a)]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in shapes)) from None


def _check_index(index: np.ndarray, shape: tuple, dim: int) -> None:
    """torch's bounds check of an index array (or shape check of a mask) at `dim`."""
    if D.kind(index) == "b":
        for j, n in enumerate(index.shape):
            if dim + j >= len(shape) or n != shape[dim + j]:
                raise IndexError(f"The shape of the mask {list(index.shape)} at index {j} does not match the shape of "
                                 f"the indexed tensor {list(shape)} at index {dim + j}")
        return
    size = shape[dim]
    high, least = _index_range(index)
    if high >= size or least < -size:
        bad = int(high if high >= size else least)
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def getitem(self: Tensor, key: object) -> Tensor:
    """x[key] with torch's decomposition into select / slice / unsqueeze views and one index op."""
    kind = type(key)
    if (kind is int or kind is slice) and self._data.ndim:  # x[i], x[a:b]: the view _index_views makes, unparsed
        # (an index out of range, a step below 1: the general path raises torch's error)
        size = self._data.shape[0]
        if kind is int:
            if -size <= key < size:
                return apply(select_op, (self,), (0, key + size if key < 0 else key))
        else:
            start, stop, step = key.indices(size)
            if step > 0:
                return apply(slice_op, (self,), (0, start, max(stop, start), step))
    out, advanced = _index_views(self, _parse_key(key), lone_slice=isinstance(key, slice))
    if advanced is None:
        return apply(alias_op, (out,)) if out is self else out
    try:
        return keep_index_versions(apply(index_op, (out,), (advanced,)), *_index_tensors(key))
    except IndexError:
        _explain_index_error(advanced, out._data.shape)
        raise


def _index_tensors(key: object) -> tuple:
    """The tensors of an indexing key that index as arrays, which torch saves with the node (Note [index tensors])."""
    entries = key if isinstance(key, (tuple, list)) else (key,)
    return tuple(k for k in entries if isinstance(k, Tensor) and k._data.ndim)


def fill_(self: Tensor, value: Tensor | complex) -> Tensor:
    """Set every element to value, in place (FillBackward2 for a number, FillBackward3 for a 0-d tensor)."""
    self._check_inplace(memory=False)
    if not isinstance(value, Tensor):
        value = D.checked(value, self._data.dtype, halves=self._data.size != 1)  # Note [numbers out of a dtype's range]
    elif value._data.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value._data.ndim} "
                           "dimensions.")
    if _recorded(self, value):
        if isinstance(value, Tensor):
            return self._become(apply(fill_tensor_op, (self, value)))
        return self._become(apply(fill_op, (self,), (value,)))
    value = value._data if isinstance(value, Tensor) else value
    self._data[...] = D.to_complex32(value) if D.is_complex32(self._data) else value  # Note [complex32]
    self._bump_version()
    return self


def fill(input: Tensor, value: Tensor | complex) -> Tensor:
    """A new tensor like input, every element value (FillBackward0 for a number, FillBackward1 for a 0-d tensor)."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value._data.ndim} "
                               "dimensions.")
        return apply(fill_tensor_out_op, (input, value))
    return apply(fill_out_op, (input,), (value,))


def zero_(self: Tensor) -> Tensor:
    """Set every element to zero, in place (ZeroBackward0)."""
    self._check_inplace(memory=False)
    if _recorded(self, None):
        return self._become(apply(zero_op, (self,)))
    self._data[...] = 0
    self._bump_version()
    return self


def _recorded(self: Tensor, value: object) -> bool:
    """Whether an in-place write must go through the op table (a node or a tangent to record)."""
    if _transforms.active:
        return True
    return grad_mode._state.enabled and (self._requires_grad or isinstance(value, Tensor) and value._requires_grad)


def setitem(self: Tensor, key: object, value: Tensor | complex) -> None:
    """x[key] = value, in place: a write through the views of `key` (CopySlices on x), or
    ``index_put_`` for advanced keys (IndexPutBackward0)."""
    if key is False:
        return
    if key is True:  # torch writes x.unsqueeze(0) (a True in a tuple is an advanced index)
        key = None
    if not isinstance(value, (Tensor, bool, int, float, complex, np.number)):
        raise TypeError(f"can't assign a {argument_type_name(value)} to a {D.tensor_type_name(self.dtype)}")
    if not isinstance(value, Tensor):
        value = D.checked(D.number(value), self._data.dtype, halves=False)
    _refuse_byte_mask_fill(key if isinstance(key, tuple) else (key,), value, False)
    target, advanced = _index_views(self, _parse_key(key), lone_slice=False)
    if target is not self:
        target._extra_dict()["discarded"] = True  # no one sees this view after the write: no need to regenerate it
    if advanced is not None:
        keep_index_versions(_index_put_inplace(target, advanced, _drop_leading_ones(value) if isinstance(value, Tensor)
                                               else value, False), *_index_tensors(key))
    elif isinstance(value, Tensor):  # torch's copy_to: equal sizes copy, a 0-d value fills, else an expanded copy
        if value._data.shape == target._data.shape:
            target.copy_(value)
        elif value._data.ndim:
            target.copy_(_drop_leading_ones(value).expand(target._data.shape))
        else:
            target._check_inplace()
            fill_(target, value)
    else:  # torch fills with a 0-d tensor, after copy_'s refusal of memory the target's elements share
        target._check_inplace()
        data = self._data  # the value made where the tensor lives: a GPU array takes no host array
        fill_(target, _wrap(namespace(data).asarray(value, dtype=data.dtype, device=data.device)))


def _drop_leading_ones(value: Tensor) -> Tensor:
    """torch strips leading size-1 dims of an assigned value before broadcasting it."""
    shape = value._data.shape
    if not shape:
        return value
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return value.view(shape[k:]) if k else value


# ============================================================================================
# Public functions: index_put, index_select, index_add, index_copy, index_fill
# ============================================================================================


def _dtype_word(dt: D.dtype) -> str:
    return D.scalar_type_name(dt)


def _refuse_byte_mask_fill(key: Sequence, value: Tensor | complex, accumulate: bool) -> None:
    """torch writes a one-element value through a lone mask index (slices and integers around it) by masked_fill_
    (canDispatchToMaskedFill), which refuses a uint8 mask: what old byte-mask code's `x[mask] = 0` gets now."""
    if accumulate or (isinstance(value, Tensor) and value._data.size != 1):
        return
    advanced = [k for k in key if isinstance(k, Tensor) and k._data.ndim or isinstance(k, (list, range, np.ndarray))]
    if len(advanced) != 1 or isinstance(advanced[0], (list, range)):  # a list of numbers is a long index
        return
    lone = advanced[0]._data if isinstance(advanced[0], Tensor) else advanced[0]  # an array: a tensor of its dtype
    if D.of_array(lone) is D.uint8:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")


def _put_key(self: Tensor, indices: Sequence) -> tuple:
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    for i, idx in enumerate(indices):
        if not isinstance(idx, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(idx).__name__}")
    key = tuple(_index_like(self._data, _as_index(idx)) for idx in indices)
    if len(key) > self._data.ndim and not any(is_array(k) and D.kind(k) == "b" for k in key):
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim} (got {len(key)})")
    return key


def _put_values(self: Tensor, key: tuple, values: Tensor | complex) -> Tensor | complex:
    """Values for index_put: same dtype as self and broadcastable to the indexed shape."""
    if not isinstance(values, Tensor):
        return values
    target = _indexed_shape(self._data.shape, key)
    try:
        fits = np.broadcast_shapes(values._data.shape, target) == target  # values broadcast to the result's shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(target)}") from None
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dtype_word(self.dtype)} for the destination and {_dtype_word(values.dtype)} for the "
                           "source.")
    return values


def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of input with values written (or added, accumulate=True) at the indexed places."""
    if isinstance(indices, (tuple, list)):
        _refuse_byte_mask_fill(indices, values, bool(accumulate))
    return keep_index_versions(_index_put(input, _put_key(input, indices), values, bool(accumulate)), *indices)


def index_put_(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place index_put (IndexPutBackward0, or CopySlices on the base when input is a view)."""
    if not isinstance(values, Tensor):  # torch's words for the method (torch.index_put_ says position 3)
        raise TypeError(f"index_put_(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if isinstance(indices, (tuple, list)):
        _refuse_byte_mask_fill(indices, values, bool(accumulate))
    return keep_index_versions(_index_put_inplace(input, _put_key(input, indices), values, bool(accumulate)),
                               *indices)


def _indexed_shape(shape: tuple, key: tuple) -> tuple:
    """The shape of x[key] for an advanced key (index arrays, masks and full slices), laid out as NumPy lays it;
    IndexError where NumPy's indexing would raise one for the key's shapes."""
    spans, shapes, dim = [], [], 0  # (first dim, dims) each index array covers
    for k in key:
        if not is_array(k):
            dim += 1
            continue
        xp = namespace(k)
        mask = k.dtype == xp.bool
        width = k.ndim if mask else 1
        if mask and k.shape != tuple(shape[dim:dim + width]):
            raise IndexError("mask shape")  # torch's words: _explain_index_error
        shapes.append((int(xp.count_nonzero(k)),) if mask else k.shape)
        spans.append((dim, width))
        dim += width
    try:
        broadcast = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch") from None
    covered = {d for first, width in spans for d in range(first, first + width)}
    rest = [n for d, n in enumerate(shape) if d not in covered]
    apart = any(first != before + width for (before, width), (first, _) in zip(spans, spans[1:]))
    at = 0 if apart else spans[0][0]
    return tuple(rest[:at]) + broadcast + tuple(rest[at:])


def _index_put_inplace(target: Tensor, key: tuple, values: Tensor | complex, accumulate: bool) -> Tensor:
    target._check_inplace()
    return target._become(_index_put(target, key, values, accumulate))


def _index_put(target: Tensor, key: tuple, values: Tensor | complex, accumulate: bool) -> Tensor:
    try:
        return apply(index_put_op, (target, _put_values(target, key, values)), (key, accumulate))
    except IndexError:
        _explain_index_error(key, target._data.shape)
        raise


def _index_vector(index: Tensor, what: str) -> np.ndarray:
    """The index of index_select (int32 or int64; its shape checked first) or index_fill_ (int64 only; its dtype
    checked first), flattened to int64, with each op's own refusals."""
    arr = index._data if isinstance(index, Tensor) else np.asarray(index)
    if what == "index_fill_":
        if D.of_array(arr) is not D.int64:
            raise IndexError("index_fill_(): Expected dtype int64 for index.")
        if arr.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
    elif arr.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector")
    elif D.of_array(arr) not in (D.int32, D.int64):
        raise RuntimeError(f"{what}(): Expected dtype int32 or int64 for index")
    if hasattr(arr, "strides"):
        return arr.reshape(-1).astype(np.int64, copy=False)  # NumPy's methods skip its functions' wrappers
    xp = namespace(arr)
    return xp.astype(xp.reshape(arr, (-1,)), xp.int64, copy=False)


def _index_range(index: object) -> tuple[int, int]:
    """(largest, smallest) element of an index array; (0, 0) when it is empty."""
    if not index.size:
        return 0, 0
    if hasattr(index, "strides"):
        return index.max(), index.min()  # NumPy's methods (and NumPy's integers) skip its functions' wrappers
    xp = namespace(index)
    return int(xp.max(index)), int(xp.min(index))


def _check_along(index: np.ndarray, size: int, dim: int, error: type = IndexError, what: str = "",
                 negative: bool = False) -> None:
    """torch's bounds check for an index along dim (some ops also take negative indices)."""
    low = -size if negative else 0
    if not index.size:
        return
    high, least = (int(v) for v in _index_range(index))  # a batched index's whole range (Note [batched tensors])
    if high >= size or least < low:
        bad = high if high >= size else least
        raise error(f"{what}index {bad} is out of bounds for dimension {dim} with size {size}")


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices at `index` along dim (IndexSelectBackward0)."""
    d = _wrap_dim(dim, input._data.ndim)
    idx = _index_vector(index, "index_select")
    if input._data.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)")
    size = input._data.shape[d] if input._data.ndim else 1
    if not idx.size:
        return keep_index_versions(apply(index_select_op, (input,), (d, idx)), index)
    if not size and input._data.ndim > 1:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    high, least = _index_range(idx)
    if high >= size or least < 0:
        if d == 0:  # torch's kernels for rows (and 0-d and 1-d input) check in their own words
            raise IndexError("index out of range in self")
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={high if high >= size else least} "
                           f"axis_dim={size}")
    return keep_index_versions(apply(index_select_op, (input,), (d, idx)), index)


def _along_source(input: Tensor, dim: int, index: Tensor, source: Tensor, what: str) -> tuple[int, np.ndarray]:
    d = _wrap_dim(dim, input._data.ndim)
    arr = index._data
    if arr.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector, but got dim: {arr.ndim} with type: "
                         f"{_dtype_word(index.dtype)} and size: {list(arr.shape)}")
    if index.dtype not in (D.int64, D.int32):  # even an empty one, unlike scatter's
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index but got: {_dtype_word(index.dtype)}")
    xp = namespace(arr)
    idx = A.astype(xp, A.reshape(xp, arr, -1), np.int64, copy=False)
    n = source._data.shape[d] if source._data.ndim else 1
    if idx.size != n:
        raise RuntimeError(f"{what}(): Number of indices ({idx.size}) should be equal to source.size(dim): ({n}), "
                           f"for dim: {d}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{what}(): self ({_dtype_word(input.dtype)}) and source ({_dtype_word(source.dtype)}) "
                           "must have the same scalar type")
    size = input._data.shape[d] if input._data.ndim else 1
    if what == "index_add_" and input._data.ndim > 1:  # torch's kernel on more dims checks as index_select's
        _check_along(idx, size, d, RuntimeError)
    elif idx.size and not 0 <= min(_index_range(idx)) <= max(_index_range(idx)) < size:  # its 1-d path, index_reduce
        raise IndexError("index out of range in self")
    return d, idx


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: complex = 1) -> Tensor:
    """A copy of input with alpha * source added at `index` along dim (duplicates add up)."""
    d, idx = _along_source(input, dim, index, source, "index_add_")
    return keep_index_versions(apply(index_add_op, (input, source), (d, idx, alpha)), index)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of input with the slices of source written at `index` along dim, after torch's checks in torch's
    order (ranks, then dtypes, then sizes). Its index must be int64: index_add and index_reduce also take int32."""
    d = _wrap_dim(dim, input._data.ndim)
    arr, src = index._data, source._data
    if arr.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {arr.ndim})")
    if not src.ndim and arr.size != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {arr.size})")
    if src.ndim and input._data.ndim and src.ndim != input._data.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({src.ndim}), destination dimensionality ({input._data.ndim})")
    if index.dtype is not D.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_dtype_word(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_dtype_word(input.dtype)} and (source) {_dtype_word(source.dtype)}")
    self_slice, source_slice = (shape[:d] + shape[d + 1:] for shape in (input._data.shape, src.shape))
    if self_slice != source_slice:
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {' '.join(map(str, self_slice))} at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, source_slice))} at dimension 0.")
    xp = namespace(arr)
    idx = A.astype(xp, A.reshape(xp, arr, -1), np.int64, copy=False)
    n = src.shape[d] if src.ndim else 1
    if idx.size != n:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) ({n})")
    _check_along(idx, input._data.shape[d] if input._data.ndim else 1, d, IndexError, "index_copy_(): ")
    return keep_index_versions(apply(index_copy_op, (input, source), (d, idx)), index)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Tensor | complex) -> Tensor:
    """A copy of input with the slices at `index` along dim set to value."""
    d = _wrap_dim(dim, input._data.ndim)
    idx = _index_vector(index, "index_fill_")
    size = input._data.shape[d] if input._data.ndim else 1
    _check_along(idx, size, d, negative=True)
    idx = idx % size if idx.size else idx
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        return keep_index_versions(apply(index_fill_tensor_op, (input, value), (d, idx)), index)
    D.check_fits(value, input._data.dtype)
    return keep_index_versions(apply(index_fill_op, (input,), (d, idx, value)), index)


# ============================================================================================
# Public functions: gather, scatter, scatter_add, scatter_reduce
# ============================================================================================


def _scatter_index(input: Tensor, dim: int, index: Tensor, src: Tensor | None, what: str) -> tuple[int, np.ndarray]:
    """Check a gather/scatter index the way torch does; return the wrapped dim and the index array."""
    d = _wrap_dim(dim, input._data.ndim)
    idx = index._data
    if idx.size and index.dtype not in (D.int64, D.int32):  # an empty index of any dtype is accepted, as torch
        raise RuntimeError(f"{what}(): Expected dtype int32/int64 for index")
    if max(idx.ndim, 1) != max(input._data.ndim, 1) and idx.size:  # 0-d counts as 1-d
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           + ("input tensor" if what == "gather" else "self tensor"))
    sizes = input._data.shape
    for i in range(min(idx.ndim, len(sizes))):
        if i != d and idx.shape[i] > sizes[i]:
            if what == "gather":
                raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be no "
                                   f"larger than self {list(sizes)} apart from dimension {d}")
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(sizes)} apart from "
                               f"dimension {d} and to be no larger size than src {list(src.shape)}")
        if src is not None and idx.shape[i] > src._data.shape[i]:
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(sizes)} apart from "
                               f"dimension {d} and to be no larger size than src {list(src.shape)}")
    _check_along(idx, sizes[d] if sizes else 1, d, RuntimeError)
    return d, idx


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim=0): values picked along dim."""
    d, idx = _scatter_index(input, dim, index, None, "gather")
    return keep_index_versions(apply(gather_op, (input,), (d, idx)), index)


def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | complex | None = None, *,
            value: complex | None = None, reduce: str | None = None) -> Tensor:
    """A copy of input with src (or value) written at index along dim (reduce: 'add'/'multiply' combine)."""
    if src is None:
        src = value
    tensor_src = src if isinstance(src, Tensor) else None
    if tensor_src is not None and tensor_src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d, idx = _scatter_index(input, dim, index, tensor_src, "scatter")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
        if tensor_src is not None:
            warn_once_at_user("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                              "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                              "options. (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                              "TensorAdvancedIndexing.cpp:225.)")
        return keep_index_versions(apply(scatter_reduce_legacy, (input, src), (d, idx, reduce)), index)
    if tensor_src is None:
        D.check_fits(src, input._data.dtype)
        return keep_index_versions(apply(scatter_value_op, (input,), (d, idx, src)), index)
    return keep_index_versions(apply(scatter_op, (input, src), (d, idx)), index)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of input with src added at index along dim (duplicates add up)."""
    if src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d, idx = _scatter_index(input, dim, index, src, "scatter")
    return keep_index_versions(apply(scatter_add_op, (input, src), (d, idx)), index)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of input where each place also reduces (sum/prod/mean/amax/amin) the src values sent to it."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")  # torch's words
    d, idx = _scatter_index(input, dim, index, src, "scatter")
    return keep_index_versions(apply(scatter_reduce_op, (input, src), (d, idx, reduce, bool(include_self))), index)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of input where the slices at `index` along dim also reduce (prod/mean/amax/amin) the
    slices of source sent to them."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, idx = _along_source(input, dim, index, source, "index_reduce_")
    shape = [1] * source._data.ndim
    if shape:
        shape[d] = idx.size
    spread = namespace(idx).broadcast_to(A.reshape(namespace(idx), idx, shape), source._data.shape)
    warn_once_at_user("index_reduce() is in beta and the API may change at any time. (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:1523.)")
    return keep_index_versions(apply(index_reduce_op, (input, source), (d, spread, reduce, bool(include_self))), index)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values picked along dim at `indices`, with input and indices broadcast (gather), or from
    the flattened input when dim is None."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if indices.dtype is not D.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{D.scalar_type_name(indices.dtype)}")
    d = _wrap_dim(dim, input._data.ndim)
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input._data.ndim} dimensions for input, and {indices._data.ndim} dimensions for "
                           "indices")
    shape = list(np.broadcast_shapes(input._data.shape[:d] + (1,) + input._data.shape[d + 1:],
                                     indices._data.shape[:d] + (1,) + indices._data.shape[d + 1:]))
    s_in, s_idx = list(shape), list(shape)
    s_in[d], s_idx[d] = input._data.shape[d], indices._data.shape[d]
    if tuple(s_in) != input._data.shape:
        input = input.expand(s_in)
    index = where(indices < 0, indices + s_in[d], indices)  # negative indices count from the end; tensor ops for vmap
    return gather(input, d, index if tuple(s_idx) == tuple(index.shape) else index.expand(s_idx))


# ============================================================================================
# Public functions: masks, take, put, nonzero
# ============================================================================================


def _bool_mask(mask: Tensor, what: str) -> np.ndarray:
    """The array of a bool mask; torch's refusal of any other dtype, in each op's own words (masked_fill_ names
    the C++ type, masked_scatter_ the ScalarType, after its deprecation warning for uint8)."""
    if mask.dtype is D.bool_:
        return mask._data
    if what == "masked_fill_":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{D.CPP_TYPE_NAMES[mask.dtype.name]}")
    if what == "masked_scatter_":
        if mask.dtype is D.uint8:
            warnings.warn("masked_scatter_ received a mask with dtype torch.uint8, this behavior is now deprecated,"
                          "please use a mask with dtype torch.bool instead. (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:3130.)", UserWarning,
                          stacklevel=user_stacklevel())
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{D.scalar_type_name(mask.dtype)}")
    raise RuntimeError(f"{what}: expected BoolTensor for mask")


def masked_fill(input: Tensor, mask: Tensor, value: Tensor | complex) -> Tensor:
    """input with `value` where mask is True (no gradient through the masked places)."""
    m = _bool_mask(mask, "masked_fill_")
    # the mask is not one of the op's inputs, so the registry cannot word its shape error: torch's, mask as tensor a
    if error := _broadcast_error([m, input._data]):
        raise error
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        return keep_index_versions(apply(masked_fill_tensor_op, (input, value), (m,)), mask)
    D.check_fits(value, input._data.dtype)
    return keep_index_versions(apply(masked_fill_op, (input,), (m, value)), mask)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where mask is True (input and mask broadcast together), as a 1-d tensor."""
    return keep_index_versions(apply(masked_select_op, (input,), (_bool_mask(mask, "masked_select"),)), mask)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """input with the masked places filled, in order, by source's leading elements."""
    m = _bool_mask(mask, "masked_scatter_")
    xp = namespace(m)
    if int(xp.count_nonzero(xp.broadcast_to(m, np.broadcast_shapes(m.shape, input._data.shape)))) > source._data.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return keep_index_versions(apply(masked_scatter_op, (input, source), (m,)), mask)


def _flat_index(input: Tensor, index: Tensor) -> np.ndarray:
    idx = index._data
    if index.dtype is not D.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_dtype_word(index.dtype)}")
    n = input._data.size
    high, least = _index_range(idx)
    if high >= n or least < -n:
        raise IndexError(f"out of range: tried to access index {high if high >= n else least} on a tensor of {n} "
                         "elements.")
    return idx


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened input at `index`, in index's shape."""
    return keep_index_versions(apply(take_op, (input,), (_flat_index(input, index),)), index)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of input with source written (or added) at flat positions `index`."""
    if source._data.size != index._data.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._data.size}, index.numel() = {index._data.size}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype_word(input.dtype)} and source.dtype = {_dtype_word(source.dtype)}")
    return keep_index_versions(apply(put_op, (input, source), (_flat_index(input, index), bool(accumulate))), index)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or one tensor per dim."""
    D.refuse_unsigned("nonzero_count_cpu", input.dtype)
    data = input._data
    xp = namespace(data)
    if as_tuple:
        return tuple(_wrap(A.astype(xp, i, np.int64)) for i in xp.nonzero(_at_least_1d(xp, data)))
    return _wrap(_nonzero_rows(xp, data))


def _at_least_1d(xp, x):
    return x if x.ndim else A.reshape(xp, x, 1)


def _nonzero_rows(xp, x):
    """The (n, ndim) int64 indices of x's nonzero elements (a 0-d x: (1, 0) or (0, 0))."""
    found = xp.nonzero(_at_least_1d(xp, x))  # first: vmap refuses it for its dynamic shape
    if x.ndim == 0:
        return xp.zeros((int(bool(x)), 0), dtype=xp.int64, device=x.device)
    return A.astype(xp, xp.stack(found, axis=1), np.int64)


@defop("nonzero_static", params=("size", "fill_value"))
def nonzero_static_op(xp, x, size, fill_value):
    found = _nonzero_rows(xp, x)
    found = found[:min(size, found.shape[0]), ...]  # the standard leaves a stop past the end unspecified
    padding = xp.full((size - found.shape[0], x.ndim), fill_value, dtype=xp.int64, device=x.device)
    return xp.concat([found, padding])


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero's (n, ndim) indices cut or padded with `fill_value` rows to exactly `size` rows (a static shape)."""
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    return apply(nonzero_static_op, (input,), (int(size), int(fill_value)))


def argwhere(input: Tensor) -> Tensor:
    """nonzero(input) as an (n, ndim) tensor."""
    return nonzero(input)


__all__ = ["argwhere", "fill", "fill_", "gather", "index_add", "index_copy", "index_fill", "index_put", "index_put_",
           "index_reduce", "index_select", "masked_fill", "masked_scatter", "masked_select", "nonzero",
           "nonzero_static", "put", "scatter", "scatter_add", "scatter_reduce", "take", "take_along_dim", "zero_"]
METHODS = ["nonzero_static", "fill_", "index_add", "index_copy", "index_fill", "index_put", "index_put_",
           "index_reduce", "masked_scatter", "put", "scatter_reduce", "take", "zero_"]
INPLACE = ["index_add", "index_copy", "index_fill", "index_reduce", "masked_scatter", "put", "scatter_reduce"]
