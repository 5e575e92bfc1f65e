"""Rule table: sorting and selection (OPS.md section E): sort, argsort, msort, topk, kthvalue, mode;
searching sorted values (searchsorted, bucketize, isin) and unique values (unique, unique_consecutive).

The values are differentiable and each one's gradient goes back to the index it came from
(value_selecting_reduction_backward); the indices are not. Which index torch reports among
equal values is part of its output, so this module also models the C++ algorithms torch runs
on CPU (Note [torch's order among equal values]).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import _creation, _xp
from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim, as_int
from .._warn import warn_once_at_user
from . import arrays as A
from .pointwise import _refuse_kinds
from .reduction import return_type
from .registry import apply, defop, namespace

# ============================================================================================
# Rows
# ============================================================================================


@defop("sort", node="SortBackward0", params=("dim", "descending", "stable"), outputs=("values", "indices"),
       differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, True)",
       jvp="gather_reduced(self_t, dim, indices, True)")
def sort_op(xp, x, dim, descending, stable):
    return select_rows(xp, x, dim, True, lambda keys: sort_order(keys, descending, stable))


# torch.sort(..., stable=...) is a separate overload with its own node name.
sort_stable_op = sort_op.alias("sort_stable", "SortBackward1")


@defop("argsort", params=("dim", "descending", "stable"))
def argsort_op(xp, x, dim, descending, stable):
    return sort_op.forward(xp, x, dim, descending, stable)[1]


@defop("topk", params=("k", "dim", "largest", "sorted"), outputs=("values", "indices"), differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, True)",
       jvp="gather_reduced(self_t, dim, indices, True)")
def topk_op(xp, x, k, dim, largest, sorted):  # noqa: A002
    return select_rows(xp, x, dim, True, lambda keys: topk_order(keys, k, largest, sorted))


@defop("kthvalue", params=("k", "dim", "keepdim"), outputs=("values", "indices"), differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def kthvalue_op(xp, x, k, dim, keepdim):
    return select_rows(xp, x, dim, keepdim, lambda keys: kth_order(keys, k))


@defop("mode", params=("dim", "keepdim"), outputs=("values", "indices"), differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def mode_op(xp, x, dim, keepdim):
    return select_rows(xp, x, dim, keepdim, mode_order)


# ============================================================================================
# Searching sorted values: indices and masks, never differentiable
# ============================================================================================


@defop("searchsorted", inputs=("sorted_sequence", "self"), params=("out_int32", "right"))
def searchsorted_op(xp, seq, values, out_int32, right):
    side = "right" if right else "left"
    index_type = xp.int32 if out_int32 else xp.int64
    if seq.ndim == 1:
        return A.astype(xp, xp.searchsorted(seq, values, side=side), index_type)
    rows, found = A.reshape(xp, seq, -1, seq.shape[-1]), A.reshape(xp, values, -1, values.shape[-1])
    out = xp.stack([xp.searchsorted(rows[i, ...], found[i, ...], side=side) for i in range(rows.shape[0])]) \
        if rows.shape[0] else found
    return A.astype(xp, A.reshape(xp, out, values.shape), index_type)


@defop("isin", inputs=("elements", "test_elements"), params=("assume_unique", "invert"), promote="binary")
def isin_op(xp, elements, test_elements, assume_unique, invert):
    if xp is np:  # assume_unique only spares NumPy a sort
        return np.isin(elements, test_elements, assume_unique=assume_unique, invert=invert)
    # the standard's isin takes integers only: a binary search among the sorted test elements
    device = (elements if hasattr(elements, "device") else test_elements).device
    elements, tests = (xp.asarray(v, device=device) for v in (elements, test_elements))  # numbers too
    tests, flat = xp.sort(A.reshape(xp, tests, -1)), A.reshape(xp, elements, -1)
    if tests.shape[0] == 0:
        return xp.full(elements.shape, invert, device=device)
    nearest = xp.take(tests, xp.clip(xp.searchsorted(tests, flat), 0, tests.shape[0] - 1))
    return A.reshape(xp, (nearest != flat) if invert else (nearest == flat), elements.shape)


# ============================================================================================
# Unique values: the values require grad, yet torch has no derivative for them (the backward
# raises); the inverse indices and counts are not differentiable
# ============================================================================================


@defop("_unique2", node="Unique2Backward0", params=("return_inverse", "return_counts"), outputs=3,
       differentiable_outputs=(0,), self="not_implemented_error('_unique2')")
def unique2_op(xp, x, return_inverse, return_counts):
    flat = A.reshape(xp, x, -1)
    if hasattr(flat, "strides") and not (D.kind(flat) in "fc" and xp.isnan(flat).any()):
        order = flat.argsort()  # NumPy's quicksort, several times faster than its stable sort
    else:  # NaNs are each a value of their own, in their order (as torch's)
        order = A.argsort(xp, flat, 0)
    values, runs, counts = runs_of(xp, xp.take(flat, order, axis=0))
    inverse = A.reshape(xp, unsort(xp, runs, order), x.shape)
    empty = xp.zeros(0, dtype=xp.int64, device=x.device)
    return values, inverse if return_inverse else empty, counts if return_counts else empty


@defop("_unique", node="UniqueBackward0", params=("return_inverse",), outputs=2, differentiable_outputs=(0,),
       self="not_implemented_error('_unique')")
def unique_op(xp, x, return_inverse):
    return unique2_op.forward(xp, x, return_inverse, False)[:2]


@defop("unique_dim", node="UniqueDimBackward0", params=("dim",), outputs=3, differentiable_outputs=(0,),
       self="not_implemented_error('unique_dim')")
def unique_dim_op(xp, x, dim):
    rows = xp.moveaxis(x, dim, 0)
    flat = A.reshape(xp, rows, rows.shape[0], math.prod(rows.shape[1:]))
    order = xp.arange(rows.shape[0], device=x.device)
    for column in reversed(range(flat.shape[1])):  # a lexicographic order: stable sorts from the last key
        order = xp.take(order, A.argsort(xp, xp.take(flat[:, column], order, axis=0), 0), axis=0)
    values, runs, counts = runs_of(xp, xp.take(rows, order, axis=0))
    return xp.moveaxis(values, 0, dim), unsort(xp, runs, order), counts


@defop("unique_consecutive", node="UniqueConsecutiveBackward0", params=("return_inverse", "return_counts", "dim"),
       outputs=3, differentiable_outputs=(0,), self="not_implemented_error('unique_consecutive')")
def unique_consecutive_op(xp, x, return_inverse, return_counts, dim):
    values, runs, counts = runs_of(xp, A.reshape(xp, x, -1) if dim is None else xp.moveaxis(x, dim, 0))
    empty = xp.zeros(0, dtype=xp.int64, device=x.device)
    return (values if dim is None else xp.moveaxis(values, 0, dim),
            A.reshape(xp, runs, x.shape if dim is None else -1) if return_inverse else empty,
            counts if return_counts else empty)


def unsort(xp, values, order):
    """values[k] moved to position order[k]: sorted values back in the order before the sort (NumPy writes them
    there; the standard, which has no assignment through index arrays, takes them by the inverse order)."""
    if hasattr(values, "strides"):
        out = xp.empty_like(values)
        out[order] = values
        return out
    return xp.take(values, A.argsort(xp, order, 0), axis=0)


def runs_of(xp, rows):
    """Runs of equal consecutive slices along axis 0: (each run's slice, each slice's run, each run's length)."""
    n = rows.shape[0]
    flat = A.reshape(xp, rows, n, math.prod(rows.shape[1:]))
    changed = A.reduce(xp, "any", flat[1:, ...] != flat[:-1, ...], 1)
    starts = xp.concat([xp.ones(min(n, 1), dtype=xp.bool, device=rows.device), changed])
    runs = xp.cumulative_sum(A.astype(xp, starts, xp.int64)) - 1
    ends = xp.concat([xp.nonzero(starts)[0], xp.asarray([n], device=rows.device)])
    return xp.take(rows, ends[:-1], axis=0), runs, A.astype(xp, xp.diff(ends), xp.int64, copy=False)


# ============================================================================================
# Forward helpers: each slice along `dim` becomes a row
# ============================================================================================


def select_rows(xp, x, dim: int, keepdim: bool, choose: Callable[[np.ndarray], np.ndarray]) -> tuple:
    """(values, indices) picked along dim. `choose` maps the (m, n) array whose rows are the
    slices to the (m, j) positions to pick; a kept dim of size 1 is squeezed unless keepdim."""
    if x.ndim == 0:
        return A.copy(xp, x), xp.zeros((), dtype=xp.int64, device=x.device)
    moved = xp.moveaxis(x, dim, -1)
    picked = choose(A.reshape(xp, moved, math.prod(moved.shape[:-1]), moved.shape[-1]))
    idx = A.astype(xp, xp.moveaxis(A.reshape(xp, picked, moved.shape[:-1] + picked.shape[-1:]), -1, dim), xp.int64)
    values = xp.take_along_axis(x, idx, axis=dim)
    return (values, idx) if keepdim else (xp.squeeze(values, axis=dim), xp.squeeze(idx, axis=dim))


def stable_order(rows: np.ndarray, descending: bool) -> np.ndarray:
    """Positions in stable sorted order, NaN counted as the largest value (as torch orders it)."""
    xp = namespace(rows)
    if not descending:
        return A.argsort(xp, rows, 1)
    n = rows.shape[1]  # a stable descending sort: the stable ascending sort of the reversed row, reversed
    return n - 1 - xp.flip(A.argsort(xp, xp.flip(rows, axis=1), 1), axis=1)


def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a == b, with NaN equal to NaN (equal keys for torch's NaN-aware comparators)."""
    same = a == b
    xp = namespace(a)
    return same | (xp.isnan(a) & xp.isnan(b)) if D.kind(a) in "fc" else same


def has_ties(sorted_rows: np.ndarray, upto: int) -> np.ndarray:
    """Per row: whether two of the first `upto` + 1 sorted values are equal."""
    j = min(upto, sorted_rows.shape[1] - 1)
    return A.reduce(namespace(sorted_rows), "any", equal(sorted_rows[:, 1:j + 1], sorted_rows[:, :j]), 1)


def sort_order(rows: np.ndarray, descending: bool, stable: bool) -> np.ndarray:
    """Positions in sorted order. stable=False is std::sort, stable only up to 16 elements."""
    order = stable_order(rows, descending)
    if not stable and rows.shape[1] > 16:
        xp = namespace(rows)
        for r in rows_where(has_ties(xp.take_along_axis(rows, order, axis=1), rows.shape[1])):
            order[r, ...] = model_rows(rows[r, ...], descending, std_sort)
    return order


def topk_order(rows: np.ndarray, k: int, largest: bool, sorted: bool) -> np.ndarray:  # noqa: A002
    """The positions of the k best, as torch's std::partial_sort or nth_element (+ sort) leave them."""
    order = stable_order(rows, largest)
    if k == 0:
        return order[:, :0]
    partial = k * 64 <= rows.shape[1]
    xp = namespace(rows)
    model = has_ties(xp.take_along_axis(rows, order, axis=1), k)
    if not sorted and not partial and k > 1:
        model[...] = True  # nth_element leaves the first k - 1 in an order of its own
    algorithm = (lambda a: std_partial_sort(a, k)) if partial else (lambda a: std_select_sorted(a, k, sorted))
    for r in rows_where(model):
        order[r, ...] = model_rows(rows[r, ...], largest, algorithm)
    return order[:, :k]


def kth_order(rows: np.ndarray, k: int) -> np.ndarray:
    """The position of the k-th smallest, as torch's quickselect finds it among equal values."""
    order = stable_order(rows, False)[:, k - 1:k]
    xp = namespace(rows)
    kth = xp.take_along_axis(rows, order, axis=1)
    for r in rows_where(xp.count_nonzero(equal(rows, kth), axis=1) > 1):
        order[r, 0] = model_rows(rows[r, ...], False, lambda a: torch_quickselect(a, k - 1))[k - 1]
    return order


def mode_order(rows: np.ndarray) -> np.ndarray:
    """The position torch reports for each row's most frequent value (the smallest such value):
    the last of its run after std::sort, which is its last occurrence up to 16 elements."""
    m, n = rows.shape
    xp = namespace(rows)
    if m == 0:
        return xp.zeros((0, 1), dtype=xp.int64, device=rows.device)
    ranks = ranks_of(rows)
    ranked = xp.sort(ranks, axis=1)
    starts = xp.concat([xp.ones((m, 1), dtype=xp.bool, device=rows.device), ranked[:, 1:] != ranked[:, :-1]], axis=1)
    flat_starts = A.reshape(xp, starts, -1)  # each row opens a run: runs never cross rows
    run_lengths = xp.diff(xp.concat([xp.nonzero(flat_starts)[0], xp.asarray([m * n], device=rows.device)]))
    run = xp.cumulative_sum(A.astype(xp, flat_starts, xp.int64)) - 1
    length_at = A.reshape(xp, xp.take(run_lengths, run), (m, n))  # the length of the run each sorted place is in
    best = xp.argmax(length_at, axis=1)[:, None]  # the longest run, the smallest value on ties (the first)
    mode_key = xp.take_along_axis(ranked, best, axis=1)
    mode_count = xp.take_along_axis(length_at, best, axis=1)[:, 0]
    hits = A.astype(xp, xp.flip(ranks == mode_key, axis=1), xp.int8)
    order = (n - 1 - xp.argmax(hits, axis=1))[:, None]
    if n > 16:
        for r in rows_where(mode_count > 1):
            row_ranks = _xp.transfer(ranks[r, ...], "cpu", None)
            pairs = model_rows(row_ranks, False, std_sort)
            order[r, 0] = int(pairs[np.flatnonzero(row_ranks[pairs] == int(mode_key[r, 0]))[-1]])
    if D.kind(rows) == "f":
        for r in rows_where(xp.any(xp.isnan(rows), axis=1)):
            order[r, 0] = nan_row_mode(_xp.transfer(rows[r, ...], "cpu", None).tolist())
    return order


# Note [mode of a row with NaN]
# torch's CPU mode std::sorts (value, index) pairs by the values' plain `<` and counts runs of `==`
# values: NaN is neither below nor above anything, so it stays where the sort leaves it, and no two
# NaNs make a run. A row with NaN is therefore replayed on its raw values (Python's float `<` is
# C++'s), not on ranks, which would sort NaNs to the top as one value.


def nan_row_mode(row: list) -> int:
    """The position torch's mode reports for a row holding NaN (Note [mode of a row with NaN])."""
    pairs = list(zip(row, range(len(row))))
    std_sort(pairs)
    best, best_count, count = 0, 0, 0
    for i, (value, position) in enumerate(pairs):
        count += 1
        if i == len(pairs) - 1 or value != pairs[i + 1][0]:
            if count > best_count:
                best, best_count = position, count
            count = 0
    return best


# Note [torch's order among equal values]
# On CPU torch orders each slice with C++ algorithms that are not stable: sort(stable=False) is
# libstdc++'s std::sort (introsort; insertion sort, which is stable, up to 16 elements); topk runs
# std::partial_sort when k * 64 <= n, otherwise std::nth_element and then std::sort of the first
# k - 1; mode std::sorts (value, index) pairs and reports the index at the end of the longest run;
# kthvalue runs torch's own median-of-three quickselect. Among equal values the reported indices
# are whatever those algorithms leave behind (and so is the gradient's destination). The models
# below replay them on rows of integer ranks (NaN ranked above every number, as torch's NaN-aware
# comparators order it) and are used only on rows where ties can change the answer; elsewhere
# NumPy's stable sort gives the same positions much faster. A model runs in Python, so a large
# slice with ties is slow. On another namespace (a GPU's) the stable sort is the standard's
# (`argsort(stable=True)`, descending by flips), and a row with ties has its ranks copied to the host
# for the model, its positions copied back: the standard has no unstable sort whose order among equal
# values could stand for std::sort's, and none is needed. (torch's CUDA kernels order ties by
# algorithms of their own; these are the CPU's, which the tests compare against.)


def ranks_of(values: np.ndarray) -> np.ndarray:
    """Equal values get equal integer ranks, ordered as the values are (NaNs share the top rank)."""
    xp = namespace(values)
    if xp is np:
        return np.unique(values, return_inverse=True)[1].reshape(values.shape)
    flat = A.reshape(xp, values, -1)
    order = A.argsort(xp, flat, 0)
    ordered = xp.take(flat, order)
    new = xp.concat([xp.zeros(min(flat.shape[0], 1), dtype=xp.bool, device=values.device),
                     xp.logical_not(equal(ordered[1:], ordered[:-1]))])
    return A.reshape(xp, unsort(xp, xp.cumulative_sum(A.astype(xp, new, xp.int64)), order), values.shape)


def rows_where(mask: np.ndarray) -> list[int]:
    """The numbers of the rows where `mask` (one bool per row) is set, on the host."""
    return np.flatnonzero(_xp.transfer(mask, "cpu", None)).tolist()


def model_rows(row: np.ndarray, descending: bool, algorithm: Callable[[list], None]) -> np.ndarray:
    """Run a model of a C++ algorithm on (rank, position) pairs of one row (of any namespace: the ranks are copied to
    the host), ranks negated for a descending order (the models always put smaller keys first); return the positions
    it leaves, in row's namespace and on its device."""
    ranks = _xp.transfer(ranks_of(row), "cpu", None)
    pairs = list(zip((-ranks if descending else ranks).tolist(), range(row.shape[0])))
    algorithm(pairs)
    positions = np.array([p for _, p in pairs], dtype=np.int64)
    return positions if type(row) is np.ndarray else namespace(row).asarray(positions, device=row.device)


def std_sort(a: list) -> None:
    """std::sort: introsort with depth limit 2 log2(n), then a final insertion sort."""
    n = len(a)
    if n < 2:
        return
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1))
    _insertion_sort(a, 0, min(n, 16))
    for i in range(16, n):
        _unguarded_linear_insert(a, i)


def std_partial_sort(a: list, k: int) -> None:
    """std::partial_sort(begin, begin + k, end): heap-select the k smallest, then heap-sort them."""
    _heap_select(a, 0, k, len(a))
    _sort_heap(a, 0, k)


def std_select_sorted(a: list, k: int, sorted: bool) -> None:  # noqa: A002
    """torch's topk for k * 64 > n: std::nth_element at k - 1, then std::sort of the first k - 1."""
    _nth_element(a, k - 1)
    if sorted:
        head = a[:k - 1]
        std_sort(head)
        a[:k - 1] = head


def torch_quickselect(a: list, k: int) -> None:
    """torch's quick_select_template (kthvalue): median-of-three Hoare selection of position k."""
    lo, hi = 0, len(a) - 1
    while hi > lo:
        if hi == lo + 1:
            if a[lo][0] > a[hi][0]:
                a[lo], a[hi] = a[hi], a[lo]
            return
        mid = (lo + hi) >> 1
        a[mid], a[lo + 1] = a[lo + 1], a[mid]
        for i, j in ((lo + 1, hi), (lo, hi), (lo + 1, lo)):
            if a[i][0] > a[j][0]:
                a[i], a[j] = a[j], a[i]
        i, j, pivot = lo + 1, hi, a[lo][0]
        while True:
            i += 1
            while pivot > a[i][0]:
                i += 1
            j -= 1
            while a[j][0] > pivot:
                j -= 1
            if j < i:
                break
            a[i], a[j] = a[j], a[i]
        a[lo], a[j] = a[j], a[lo]
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


def _insertion_sort(a: list, first: int, last: int) -> None:
    for i in range(first + 1, last):
        if a[i][0] < a[first][0]:
            a[first:i + 1] = [a[i]] + a[first:i]
        else:
            _unguarded_linear_insert(a, i)


def _unguarded_linear_insert(a: list, i: int) -> None:
    value = a[i]
    while value[0] < a[i - 1][0]:
        a[i] = a[i - 1]
        i -= 1
    a[i] = value


def _partition_pivot(a: list, first: int, last: int) -> int:
    """Move the median of (first + 1, middle, last - 1) to first, then partition around it."""
    x, y, z = first + 1, first + (last - first) // 2, last - 1
    if a[x][0] < a[y][0]:
        median = y if a[y][0] < a[z][0] else z if a[x][0] < a[z][0] else x
    else:
        median = x if a[x][0] < a[z][0] else z if a[y][0] < a[z][0] else y
    a[first], a[median] = a[median], a[first]
    pivot, lo, hi = a[first][0], first + 1, last
    while True:
        while a[lo][0] < pivot:
            lo += 1
        hi -= 1
        while pivot < a[hi][0]:
            hi -= 1
        if lo >= hi:
            return lo
        a[lo], a[hi] = a[hi], a[lo]
        lo += 1


def _introsort_loop(a: list, first: int, last: int, depth: int) -> None:
    while last - first > 16:
        if depth == 0:
            _heap_select(a, first, last, last)
            _sort_heap(a, first, last)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last)
        _introsort_loop(a, cut, last, depth)
        last = cut


def _nth_element(a: list, nth: int) -> None:
    first, last = 0, len(a)
    if nth == last:
        return
    depth = 2 * (last.bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last)
            a[first], a[nth] = a[nth], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last)


def _adjust_heap(a: list, base: int, hole: int, length: int, value: tuple) -> None:
    """Sift the hole down to a leaf along the larger children, then push `value` up from there."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if a[base + child][0] < a[base + child - 1][0]:
            child -= 1
        a[base + hole] = a[base + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[base + hole] = a[base + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and a[base + parent][0] < value[0]:
        a[base + hole] = a[base + parent]
        hole, parent = parent, (parent - 1) // 2
    a[base + hole] = value


def _heap_select(a: list, first: int, middle: int, last: int) -> None:
    length = middle - first
    for parent in range((length - 2) // 2, -1, -1) if length > 1 else ():
        _adjust_heap(a, first, parent, length, a[first + parent])
    for i in range(middle, last):
        if a[i][0] < a[first][0]:
            value, a[i] = a[i], a[first]
            _adjust_heap(a, first, 0, length, value)


def _sort_heap(a: list, first: int, last: int) -> None:
    while last - first > 1:
        last -= 1
        value, a[last] = a[last], a[first]
        _adjust_heap(a, first, 0, last - first, value)


# ============================================================================================
# Public functions
# ============================================================================================

return_types_sort = return_type("sort", ("values", "indices"))
return_types_topk = return_type("topk", ("values", "indices"))
return_types_kthvalue = return_type("kthvalue", ("values", "indices"))
return_types_mode = return_type("mode", ("values", "indices"))


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None) -> tuple:
    """(values, indices) sorted along dim; ties as torch orders them (stable=True keeps input order)."""
    op = sort_op if stable is None else sort_stable_op
    d = _wrap_dim(dim, input.ndim)
    return return_types_sort(*apply(op, (input,), (d, bool(descending), bool(stable))))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The indices that sort input along dim (no gradient)."""
    return apply(argsort_op, (input,), (_wrap_dim(dim, input.ndim), bool(descending), bool(stable)))


def msort(input: Tensor) -> Tensor:
    """Values sorted along the first dim."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:  # noqa: A002
    """The k largest (or smallest) values along dim and their indices."""
    k, d = as_int(k, "k"), _wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    kind = D.kind(input._data.dtype)
    if kind in "bc":  # torch's own check, before any kernel (the leading space of the complex one is torch's too)
        raise RuntimeError("topk does not support bool dtypes on CPU" if kind == "b"
                           else " topk does not support complex dtypes on CPU")
    return return_types_topk(*apply(topk_op, (input,), (k, d, bool(largest), bool(sorted))))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> tuple:
    """The k-th smallest value along dim (1-based) and its index."""
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if input.ndim and size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.ndim:  # a 0-d input is its own k-th value, no kernel run
        _refuse_kinds(input._data.dtype, "kthvalue_cpu", "bc")
    return return_types_kthvalue(*apply(kthvalue_op, (input,), (k, d, keepdim)))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> tuple:
    """The most frequent value along dim (the smallest on ties) and the index torch reports for it."""
    d = _wrap_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if input.ndim and input.numel():  # torch's kernel runs on neither
        _refuse_kinds(input._data.dtype, "mode_cpu")
    return return_types_mode(*apply(mode_op, (input,), (d, keepdim)))


def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value of input would go in the innermost dim of sorted_sequence to keep it sorted
    (the first such place, or the last with right=True or side='right')."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    for tensor, what, line in ((input, "input value", 32), (sorted_sequence, "boundary", 38)):
        if isinstance(tensor, Tensor) and not tensor.is_contiguous():  # torch copies it, and says so once
            warn_once_at_user(f"torch.searchsorted(): {what} tensor is non-contiguous, this will lower the performance "
                              "due to extra data copy when converting non-contiguous tensor to contiguous, please use "
                              f"contiguous {what} tensor if possible. This message will only appear once per program. "
                              f"(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                              f"BucketizationUtils.h:{line}.)")
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    values = input if isinstance(input, Tensor) else _creation.tensor(input, dtype=sorted_sequence.dtype,
                                                                      device=sorted_sequence.device)
    return apply(searchsorted_op, (sorted_sequence, values), (bool(out_int32), bool(right)))


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value: i such that boundaries[i-1] < x <= boundaries[i] (< and <= swapped
    with right=True)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements: Tensor | float, test_elements: Tensor | float, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of `elements` is among `test_elements` (or is not, with invert=True)."""
    if not isinstance(elements, Tensor):
        elements = _creation.tensor(elements, dtype=test_elements.dtype)
    return apply(isin_op, (elements, test_elements), (bool(assume_unique), bool(invert)))


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Tensor | tuple:
    """The distinct values (always sorted, as torch's CPU kernels give them), and optionally where
    each input value went and how often each occurs."""
    if dim is None:
        out = apply(unique2_op, (input,), (bool(return_inverse), bool(return_counts)))
    else:
        out = apply(unique_dim_op, (input,), (_wrap_dim(dim, input.ndim),))
    return _unique_result(out, return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Tensor | tuple:
    """The values with each run of equal consecutive values (slices along dim) kept once."""
    d = None if dim is None else _wrap_dim(dim, input.ndim)
    out = apply(unique_consecutive_op, (input,), (bool(return_inverse), bool(return_counts), d))
    return _unique_result(out, return_inverse, return_counts)


def _unique_result(out: tuple, return_inverse: bool, return_counts: bool) -> Tensor | tuple:
    """torch.unique's return: the values alone, or with the inverse and counts that were asked for."""
    if not return_inverse and not return_counts:
        return out[0]
    return (out[0],) + ((out[1],) if return_inverse else ()) + ((out[2],) if return_counts else ())


def _unique(input: Tensor, sorted: bool = True, return_inverse: bool = False) -> tuple:  # noqa: A002
    """torch._unique: (values, inverse), the inverse empty unless asked for."""
    return apply(unique_op, (input,), (bool(return_inverse),))


def _unique2(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
             return_counts: bool = False) -> tuple:
    """torch._unique2: (values, inverse, counts), the last two empty unless asked for."""
    return apply(unique2_op, (input,), (bool(return_inverse), bool(return_counts)))


def unique_dim(input: Tensor, dim: int, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
               return_counts: bool = False) -> tuple:
    """torch._VF.unique_dim: (values, inverse, counts) of the slices along dim."""
    return apply(unique_dim_op, (input,), (_wrap_dim(dim, input.ndim),))


__all__ = ["argsort", "bucketize", "isin", "kthvalue", "mode", "msort", "searchsorted", "sort", "topk", "unique",
           "unique_consecutive"]
METHODS = ["argsort", "kthvalue", "mode", "msort", "sort", "topk", "unique", "unique_consecutive"]
