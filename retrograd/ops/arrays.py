"""Array idioms for forward code, on any namespace (Note [choosing a namespace] in retrograd/_xp.py).

NumPy's arrays (and CuPy's, which copy NumPy's API) take their methods, the fast path: NumPy's module
functions add a Python wrapper of a microsecond or more. Any other array-API array takes the standard's
functions, which know no methods, memory layouts or NumPy dtypes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype as D

_NUMPY_COMPLEX32 = D.NUMPY_COMPLEX32


def numpy_indexing(x: Any) -> bool:
    """Whether x indexes as NumPy's arrays do: a bad index raises and every reduction has its ufunc.at. CuPy
    copies NumPy's API but not these (a bad index wraps around, there is no multiply.at)."""
    return type(x) is np.ndarray


def copy(xp: Any, x: Any) -> Any:
    """A copy of x's elements."""
    return x.copy() if hasattr(x, "strides") else xp.asarray(x, copy=True)


def astype(xp: Any, x: Any, dtype: Any, copy: bool = True) -> Any:
    """x converted to `dtype` (ours, a NumPy dtype or the namespace's own)."""
    if hasattr(x, "strides"):
        if isinstance(dtype, D.dtype):
            dtype = dtype.np
        if dtype is _NUMPY_COMPLEX32:  # NumPy would copy a number into both parts (Note [complex32])
            return D.to_complex32(x)
        try:
            return x.astype(dtype) if copy else x.astype(dtype, copy=False)  # a keyword costs NumPy's call more
        except TypeError:
            if x.dtype != _NUMPY_COMPLEX32:
                raise
            return D.cast(x, D.FROM_NUMPY[np.dtype(dtype)])  # complex32, which NumPy converts to nothing
    return xp.astype(x, D.native(xp, dtype), copy=copy)


def reshape(xp: Any, x: Any, *shape: Any) -> Any:
    """x with another shape, given as NumPy's method takes it (a view where the layout allows)."""
    if hasattr(x, "strides"):
        return x.reshape(*shape)
    return xp.reshape(x, tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape)


# Note [reductions through the ufunc]
# An ndarray's sum, prod, max, min, any and all (and np.sum, np.mean, np.cumsum) are Python functions of NumPy's
# around the ufunc's reduce or accumulate: a RuntimeWarning from the loop (inf - inf in a sum, an overflow) is then
# raised from NumPy's frame, which Note [floating-point warnings]'s filter for retrograd's frames does not reach,
# and torch computes the same inf or nan silently. NumPy's own arrays go to the ufunc itself, the same loop (the
# same dtypes, the same pairwise sums), so the warning is raised from retrograd's frame and silenced.
_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "any": np.logical_or,
           "all": np.logical_and}


def reduce(xp: Any, name: str, x: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
    """x reduced by the standard's `name` (sum, prod, mean, max, min, any, all) over `axis`, sums and products in
    `dtype` if given (Note [reductions through the ufunc])."""
    if type(x) is np.ndarray:
        if name == "mean":
            return mean(xp, x, axis, keepdims)
        if (name == "max" or name == "min") and x.ndim > 1 and x.size and (axis == -1 or axis == x.ndim - 1) \
                and x.shape[-1] <= HALVED_WIDTH and x.flags.c_contiguous and x.dtype.kind in "fiub":
            return _narrow_row_extremes(_UFUNCS[name], x, keepdims)
        return _UFUNCS[name].reduce(x, axis=axis, keepdims=keepdims, dtype=dtype)
    options = {} if dtype is None else {"dtype": dtype}
    if hasattr(x, "strides"):  # whole-array reductions take no arguments (vmap's batched views read them all)
        method = getattr(x, name)
        return method(**options) if axis is None and not keepdims else method(axis=axis, keepdims=keepdims, **options)
    return getattr(xp, name)(x, axis=axis, keepdims=keepdims, **options)


# Note [narrow rows' extremes]
# NumPy's max and min along a short last axis pay a set-up per row: a classifier's (1024, 10) float32 logits take
# 61 us, where the elementwise maximum of whole columns runs at memory speed. So rows up to TRANSPOSED_WIDTH wide
# are laid out as columns by one transposing copy, a block of rows at a time (Note [blockwise passes]), and reduced
# along the new first axis: 8 us (and (64, 10) 4.7 -> 3.4, (6553, 10) 355 -> 35). Rows up to HALVED_WIDTH (an
# attention's 64 keys) take the elementwise maximum of their two halves, repeated: (1024, 64) 98 -> 73 us, where
# the transposing copy costs 81; wider rows go to NumPy's reduction, which halving no longer beats from about 100
# wide ((128, 512): 47 against 19). The same elements compared, so the same values, NaN propagated as max does.
# softmax and log_softmax of (1024, 10) float32 then take 72 us, not 125, and cross-entropy's forward 106, not 155.
# One thread, this host (Intel, AVX-512).
TRANSPOSED_WIDTH, HALVED_WIDTH = 48, 64


def _row_extremes(ufunc: Any, rows: np.ndarray) -> np.ndarray:
    """Each row's maximum or minimum (ufunc np.maximum or np.minimum) of a C-contiguous (R, w) block of at most
    HALVED_WIDTH columns, as a column (Note [narrow rows' extremes])."""
    if rows.shape[1] <= TRANSPOSED_WIDTH:
        return ufunc.reduce(np.ascontiguousarray(rows.T), axis=0)[:, None]
    top = rows
    while top.shape[1] > 1:
        half = top.shape[1] // 2
        folded = ufunc(top[:, :half], top[:, half:2 * half])
        if top.shape[1] % 2:
            ufunc(folded[:, :1], top[:, 2 * half:], out=folded[:, :1])
        top = folded
    return top


def _narrow_row_extremes(ufunc: Any, x: np.ndarray, keepdims: bool) -> np.ndarray:
    """x's maxima or minima along its narrow last axis, by blocks of rows (Note [narrow rows' extremes])."""
    width = x.shape[-1]
    rows = x.reshape(-1, width)
    if x.size <= _BLOCK_ELEMENTS:
        out = _row_extremes(ufunc, rows)
    else:
        out = np.empty((rows.shape[0], 1), dtype=x.dtype)
        for part in blocks(rows.shape[0], width):
            out[part] = _row_extremes(ufunc, rows[part])
    return out.reshape(x.shape[:-1] + ((1,) if keepdims else ()))


def mean(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """x's mean over `axis`; a mean of no elements is NaN without NumPy's "Mean of empty slice" warning, as in
    torch (the warning names NumPy's frame, so Note [floating-point warnings]'s filter misses it). NumPy's arrays:
    np.mean's own steps (float16 summed in float32, integers in float64), through the ufunc (Note [reductions
    through the ufunc])."""
    if x.size == 0:
        axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 where the mean covers no elements
            return xp.sum(x, axis=axis, keepdims=keepdims) / math.prod(x.shape[d] for d in axes)
    if type(x) is np.ndarray:
        wide = np.float64 if x.dtype.kind in "biu" else np.float32 if x.dtype == np.float16 else None
        total = np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=wide)
        out = total / (x.size // total.size)
        return out.astype(np.float16) if x.dtype == np.float16 else out
    return xp.mean(x, axis=axis, keepdims=keepdims)


def argsort(xp: Any, x: Any, axis: int) -> Any:
    """Indices that sort x along `axis`, equal elements in their order (NaN last)."""
    if hasattr(x, "strides"):
        return x.argsort(axis=axis, kind="stable")
    return xp.argsort(x, axis=axis, stable=True)


def matrix_transpose(xp: Any, x: Any) -> Any:
    """x with its last two dims swapped (a view where the layout allows)."""
    if hasattr(x, "strides"):
        return x.swapaxes(-1, -2)
    return xp.matrix_transpose(x)


def dot(xp: Any, a: Any, b: Any) -> Any:
    """The inner product of two vectors, without conjugation (NumPy's dot; the standard's tensordot)."""
    if hasattr(a, "strides"):
        return xp.dot(a, b)
    return xp.tensordot(a, b, axes=1)


# Note [few-row products]
# x @ W.T for a float32 x of few rows (a small batch, an LSTM step's hidden state, tokens being sampled) and a
# weight W stored (out, in), as a linear layer keeps it: OpenBLAS's sgemm takes up to twice as long as for the
# same product transposed, W @ x.T, where W is read in its own layout and the small x is the transposed operand
# (its copying of the transposed operand into its panels dominates when the rows are few). So the product runs
# as W @ x.T and one copy lays it out in C order; the same dot products in the same order (every case measured
# gave the same bits). One thread, this host's SkylakeX kernels, us: (20, 200) @ (200, 800) 111 -> 86 (an LSTM
# step's), (8, 784) @ (784, 512) 249 -> 134, (32, 128) @ (128, 384) 47 -> 38, (64, 784) @ (784, 512) 521 -> 460;
# the MLP step of batch 64 spends 110 us less in its first two layers. It lost from about 64 rows when the inner
# dimension is under 512 and from about 128 when it is more (so the bounds are 32 and 64 rows), for a W of fewer
# than 32,768 elements (the copy's fixed cost), and in float64 and complex128; one row is BLAS's matrix-vector
# product either way.
FEW_ROWS, FEW_ROWS_DEEP, DEEP_INNER, LARGE_WEIGHT = 32, 64, 512, 1 << 15


def matmul(xp: Any, a: Any, b: Any) -> Any:
    """a @ b, through (b.T @ a.T).T for a float32 matrix of few rows by a transposed one (Note [few-row
    products])."""
    if type(a) is np.ndarray and a.ndim == 2 and b.ndim == 2 and a.dtype == np.float32 and b.dtype == np.float32 \
            and 2 <= a.shape[0] <= (FEW_ROWS_DEEP if a.shape[1] >= DEEP_INNER else FEW_ROWS) \
            and b.size >= LARGE_WEIGHT and a.flags.c_contiguous and b.flags.f_contiguous and not b.flags.c_contiguous:
        return np.ascontiguousarray(np.matmul(b.T, a.T).T)
    return xp.matmul(a, b)


def max_from(xp: Any, x: Any, axis: Any, keepdims: bool, initial: float) -> Any:
    """The largest of `initial` and x's elements over `axis` (NumPy's max(initial=): empty reductions give it)."""
    if type(x) is np.ndarray:  # CuPy's max takes no initial
        return x.max(axis=axis, keepdims=keepdims, initial=initial)
    axes = range(x.ndim) if axis is None else [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    if all(x.shape[a] for a in axes):
        return xp.maximum(xp.max(x, axis=axis, keepdims=keepdims), initial)
    shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape) if keepdims or a not in axes)
    return xp.full(shape, initial, dtype=x.dtype, device=x.device)


def add_at(xp: Any, out: Any, index: Any, values: Any) -> Any:
    """out with values[i] added into row index[i], repeated indices accumulating (NumPy's and CuPy's add.at, in
    place). The standard has no scatter: there, a one-hot matrix product (rows x len(index) work; fine for the
    small tables it serves, never NumPy's path)."""
    if type(out) is np.ndarray and _rows_by_segments(out, index, values):
        return out
    scatter = getattr(getattr(xp, "add", None), "at", None)
    if scatter is not None:
        scatter(out, index, values)
        return out
    rows = xp.arange(out.shape[0], device=out.device)
    one_hot = astype(xp, xp.reshape(rows, (-1, 1)) == xp.reshape(index, (1, -1)), values.dtype)
    per_index = xp.reshape(values, (index.shape[0], math.prod(out.shape[1:])))  # -1 is ambiguous for no index
    return out + xp.reshape(xp.matmul(one_hot, per_index), out.shape)


# Note [rows added by segments]
# NumPy's add.at runs its ufunc loop once per index: for whole rows (an embedding's gradient, 700 rows of 200
# into a 10000-row table) that is 1.1 ms where one pass over the rows takes 0.1. Sorted by index (stably, so
# each row's values stay in their order), the rows form one segment per distinct index: when most indices are
# distinct, the first row of each segment is added with one fancy-indexed add (its targets are distinct) and
# the few repeats go through add.at in their order, the same sums as add.at's, bit for bit; when most repeat
# (a 65-word vocabulary), add.reduceat sums each segment (rounded differently) and one add puts them in.
# 10000 x 200 float32 from 700 rows: 1.13 -> 0.25 ms; 65 x 128 from 2048 rows: 1.73 -> 0.37 ms. Below about
# 4096 values the sort costs more than it saves.


def _rows_by_segments(out: np.ndarray, index: Any, values: Any) -> bool:
    """Note [rows added by segments]: values[i] added into out[index[i]] for whole rows of one dtype; False
    (nothing done) when the case is not that one."""
    if out.ndim < 2 or type(index) is not np.ndarray or index.ndim != 1 or index.dtype.kind not in "iu" \
            or type(values) is not np.ndarray or values.dtype != out.dtype or values.shape[:1] != index.shape \
            or values.size < 4096 or math.prod(out.shape[1:]) < 8 or index.min() < 0:
        return False
    order = np.argsort(index, kind="stable")
    targets = index[order]
    rows = values[order]
    first = np.empty(targets.shape, dtype=bool)
    first[0] = True
    np.not_equal(targets[1:], targets[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    if 2 * starts.size > index.size:
        out[targets[starts]] += rows[starts]
        repeats = ~first
        np.add.at(out, targets[repeats], rows[repeats])
    else:
        out[targets[starts]] += np.add.reduceat(rows, starts, axis=0)
    return True


def accumulate(xp: Any, combine: Any, x: Any, axis: int) -> Any:
    """The running `combine` along `axis`: out[i] = combine(out[i - 1], x[i]). `combine` names a ufunc (maximum,
    minimum, logaddexp: NumPy's ufunc.accumulate) or is a function of two arrays (NumPy: a loop over the axis).
    The standard has no ufunc methods: there, a log-step scan (each step combines every element with the one 2^k
    before it), log2(n) whole-array steps whose grouping, not order, differs from a loop's."""
    if xp is np:
        if isinstance(combine, str):
            return getattr(np, combine).accumulate(x, axis=axis)
        out = np.moveaxis(x.copy(), axis, 0)
        for i in range(1, out.shape[0]):
            out[i] = combine(out[i - 1], out[i])
        return np.moveaxis(out, 0, axis)
    combine = getattr(xp, combine) if isinstance(combine, str) else combine
    moved = xp.moveaxis(x, axis, -1)
    step = 1
    while step < moved.shape[-1]:
        moved = xp.concat([moved[..., :step], combine(moved[..., :-step], moved[..., step:])], axis=-1)
        step *= 2
    return xp.moveaxis(moved, -1, axis)


# Note [blockwise passes]
# An elementwise formula written in NumPy is one pass over memory per ufunc: exact GELU's forward is about 25
# (erf's polynomial alone 20), each reading and writing arrays larger than the cache, and it keeps several
# full-size temporaries alive at once. Taken a block of _BLOCK_ELEMENTS at a time, the passes of one block run
# on data the previous pass left in the core's cache, and the temporaries are a block's size. The elements
# are computed by the same ufunc calls in the same order, at the same offsets modulo every SIMD width (the
# block size is a power of two), so the results are the same bits. Blocks smaller than this one lose to
# NumPy's cost per call (a microsecond or so, about 25 calls per block). The last pass of a block writes into
# the result's block (blockwise's `out`), not into a temporary then copied, so formulas of a few passes gain
# too: tanh's and sigmoid's backward, three passes, 1.2 -> 0.67 ms for (2048, 512) float32 read from memory
# (torch 0.48); exact GELU's forward and backward 8-10%.
_BLOCK_ELEMENTS = 1 << 16
BLOCKWISE_MIN_ELEMENTS = 2 * _BLOCK_ELEMENTS  # up to this size an array goes whole: fewer than three blocks


def blockwise(fn: Any, *arrays: Any) -> Any:
    """fn(*arrays, out) for an elementwise fn of many passes, block by block on NumPy's contiguous arrays of one
    shape and dtype (Note [blockwise passes]); fn on the whole arrays, with out None, for anything else. fn
    returns its result, which it may write into `out` (the result's block, after the first) to spare a copy."""
    first = arrays[0]
    if first.size <= BLOCKWISE_MIN_ELEMENTS or any(type(a) is not np.ndarray or a.shape != first.shape or
                                                 a.dtype != first.dtype or not a.flags.c_contiguous for a in arrays):
        return fn(*arrays, None)
    flat = [a.reshape(-1) for a in arrays]
    out = None
    for part in blocks(first.size, 1):
        into = None if out is None else out[part]  # the first block's result tells the dtype
        piece = fn(*(a[part] for a in flat), into)
        if out is None:
            out = np.empty(first.size, dtype=piece.dtype)
        if piece is not into:
            out[part] = piece
    return out.reshape(first.shape)


def product(a: Any, b: Any, out: Any) -> Any:
    """a * b, written into out when one is given (a block of blockwise's result)."""
    return a * b if out is None else np.multiply(a, b, out=out)


def block_step(item_elements: int) -> int:
    """Items of `item_elements` elements each in one block of Note [blockwise passes] (at least one)."""
    return max(1, _BLOCK_ELEMENTS // max(item_elements, 1))


def blocks(count: int, item_elements: int) -> list[slice]:
    """Slices of `count` items of `item_elements` elements each, about _BLOCK_ELEMENTS elements a slice (at least
    one item): the blocks of Note [blockwise passes]."""
    step = block_step(item_elements)
    return [slice(i, min(i + step, count)) for i in range(0, count, step)]


def with_scalar(ufunc: Any, x: Any, value: float) -> Any:
    """ufunc(x, value) for NumPy's maximum or minimum and a Python number, in x's dtype: NumPy's SIMD loops of
    these take two arrays, and a scalar (or any broadcast) operand runs the plain loop, about three times
    slower (ReLU's forward), so on large float arrays the value is a block of an array and x goes through it
    block by block (Note [blockwise passes]; the same elements, the same bits)."""
    if type(x) is not np.ndarray or x.dtype.kind != "f" or x.size <= BLOCKWISE_MIN_ELEMENTS or not x.flags.c_contiguous:
        return ufunc(x, value)
    operand = np.full(_BLOCK_ELEMENTS, value, dtype=x.dtype)
    out = np.empty(x.shape, dtype=x.dtype)
    flat, into = x.reshape(-1), out.reshape(-1)
    for part in blocks(x.size, 1):
        ufunc(flat[part], operand[:part.stop - part.start], out=into[part])
    return out
