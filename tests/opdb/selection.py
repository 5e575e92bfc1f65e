"""Op database rows: sorting and selection (OPS.md E).

Every forward test compares the returned indices with torch's, so the tie samples check the
order torch's CPU algorithms leave equal values in (Note [torch's order among equal values]):
short rows (insertion sort), long rows (introsort, partial_sort, nth_element, quickselect) and
NaN. Tie samples are compared with torch's backward only (`gradcheck=False`).
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, distinct, noncontig, rand
from .reduction import ties, with_nan


def kink(*args, name, **kwargs):
    """A sample with ties or NaN: compared with torch's backward, no finite differences."""
    return Sample(args, kwargs, name, gradcheck=False)


def sort_samples(rng):
    return [
        Sample((distinct(rng, 3, 5),), name="last_dim"),
        Sample((distinct(rng, 4, 3), 0), name="dim0"),
        Sample((distinct(rng, 2, 3, 4), -2, True), name="neg_dim_descending"),
        Sample((distinct(rng, 3, 5),), {"descending": True, "stable": True}, "stable_descending"),
        Sample((distinct(rng, 3, 5),), {"dim": 0, "stable": False}, "stable_false_keyword"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng, 1, 4), 0), name="size1_dim"),
        Sample((rand(rng, 3, 0),), name="empty_dim"),
        Sample((noncontig(distinct(rng, 5, 3)), 0), name="noncontig"),
        kink(ties(rng, 3, 12), name="ties_short"),
        kink(ties(rng, 3, 40, values=5), name="ties_long"),
        kink(ties(rng, 3, 40, values=5), 1, True, name="ties_long_descending"),
        kink(ties(rng, 2, 300, values=7), stable=True, name="ties_long_stable"),
        kink(ties(rng, 2, 50, values=4), descending=True, stable=True, name="ties_long_stable_descending"),
        kink(with_nan(ties(rng, 2, 30, values=4), (0, 3), (0, 17), (1, 0)), name="nan"),
        kink(with_nan(ties(rng, 2, 30, values=4), (0, 3), (0, 17), (1, 0)), 1, True, name="nan_descending"),
        Sample((C(rng.integers(0, 4, size=(3, 20))),), name="int"),
    ]


def argsort_samples(rng):
    return [
        Sample((distinct(rng, 3, 5),), name="last_dim"),
        Sample((distinct(rng, 4, 3), 0, True), name="dim0_descending"),
        Sample((distinct(rng),), name="0d"),
        Sample((ties(rng, 3, 40, values=5),), name="ties_long"),
        Sample((ties(rng, 3, 40, values=5),), {"stable": True, "descending": True}, "ties_stable_descending"),
        Sample((C(rng.integers(0, 4, size=(3, 20))), -1), name="int"),
    ]


def msort_samples(rng):
    return [
        Sample((distinct(rng, 5, 3),), name="2d"),
        Sample((distinct(rng, 4),), name="1d"),
        kink(ties(rng, 30, 2, values=4), name="ties"),
    ]


def topk_samples(rng):
    return [
        Sample((distinct(rng, 3, 6), 2), name="k2"),
        Sample((distinct(rng, 6, 3), 3, 0), name="dim0"),
        Sample((distinct(rng, 3, 6), 2, -1, False), name="smallest"),
        Sample((distinct(rng, 3, 8), 4), {"sorted": False}, "unsorted"),
        Sample((distinct(rng, 3, 8), 3, -1, False, False), name="unsorted_smallest"),
        Sample((distinct(rng, 2, 130), 2), name="partial_sort_path"),
        Sample((distinct(rng, 3, 6), 6), name="k_is_n"),
        Sample((distinct(rng, 3, 6), 0), name="k0"),
        Sample((distinct(rng), 1), name="0d"),
        Sample((noncontig(distinct(rng, 6, 3)), 2, 0), name="noncontig"),
        kink(ties(rng, 3, 10), 4, name="ties_short"),
        kink(ties(rng, 3, 40, values=5), 7, name="ties_nth_element"),
        kink(ties(rng, 3, 40, values=5), 7, -1, True, False, name="ties_unsorted"),
        kink(ties(rng, 2, 300, values=6), 3, name="ties_partial_sort"),
        kink(ties(rng, 2, 300, values=6), 3, -1, False, name="ties_partial_sort_smallest"),
        kink(with_nan(ties(rng, 2, 30, values=4), (0, 5), (1, 9), (1, 10)), 5, name="nan"),
        Sample((C(rng.integers(0, 4, size=(3, 20))), 3), name="int"),
    ]


def kthvalue_samples(rng):
    return [
        Sample((distinct(rng, 3, 5), 2), name="k2"),
        Sample((distinct(rng, 5, 3), 5, 0), name="last_dim0"),
        Sample((distinct(rng, 3, 5), 1, -1, True), name="k1_keepdim"),
        Sample((distinct(rng, 2, 3, 4), 3, 1), name="3d"),
        Sample((distinct(rng), 1), name="0d"),
        kink(ties(rng, 4, 7), 3, name="ties"),
        kink(ties(rng, 3, 40, values=5), 20, 1, True, name="ties_long"),
        kink(with_nan(ties(rng, 2, 12, values=3), (0, 2), (1, 7)), 11, name="nan"),
        Sample((C(rng.integers(0, 4, size=(3, 9))), 4), name="int"),
    ]


def mode_samples(rng):
    return [
        Sample((distinct(rng, 3, 5),), name="distinct"),
        Sample((distinct(rng, 4, 3), 0, True), name="distinct_dim0_keepdim"),
        Sample((distinct(rng),), name="0d"),
        Sample((rand(rng, 0, 3), 1), name="empty_other_dim"),
        kink(ties(rng, 4, 9), name="ties_short"),
        kink(ties(rng, 3, 16), 1, name="ties_16"),
        kink(ties(rng, 4, 40, values=6), name="ties_long"),
        kink(ties(rng, 40, 3, values=6), 0, True, name="ties_long_dim0_keepdim"),
        kink(with_nan(ties(rng, 3, 9, values=3), (0, 2), (0, 5), (1, 0), (2, 1), (2, 3), (2, 7)), name="nan_short"),
        kink(with_nan(ties(rng, 2, 40, values=4), (0, 5), (0, 30), (1, 9), (1, 10)), name="nan_long"),
        Sample((C(rng.integers(0, 4, size=(3, 30))),), name="int"),
    ]


def sorted_rows(rng, *shape):
    return np.sort(rng.integers(0, 10, size=shape), axis=-1).astype(np.float64)


def searchsorted_samples(rng):
    seq = sorted_rows(rng, 8)
    shuffled = rng.permutation(8).astype(np.float64)  # `sorter` must sort it: else the answer is undefined
    return [
        Sample((seq, rand(rng, 3, 4) * 5 + 5), name="1d_sequence"),
        Sample((seq, C(seq[[0, 3, 5]])), {"right": True}, "ties_right"),
        Sample((seq, C(seq[[1, 4]])), {"side": "right", "out_int32": True}, "side_int32"),
        Sample((sorted_rows(rng, 2, 3, 6), rand(rng, 2, 3, 4) * 5 + 5), name="batched"),
        Sample((seq, 4.0), name="number"),
        Sample((C(shuffled), rand(rng, 5) * 8), {"sorter": C(np.argsort(shuffled))}, "sorter"),
    ]


def isin_samples(rng):
    x = rng.integers(0, 6, size=(3, 4)).astype(np.float64)
    return [
        Sample((x, C(np.array([1.0, 4.0, 7.0]))), name="tensor"),
        Sample((x, C(np.array([2, 3]))), {"invert": True}, "int_test_invert"),
        Sample((x, 3.0), name="number_test"),
        Sample((2.0, C(np.array([1.0, 2.0]))), name="number_elements"),
        Sample((C(np.arange(4.0)), C(np.array([0.0, 3.0]))), {"assume_unique": True}, "assume_unique"),
    ]


def unique_samples(rng):
    x = rng.integers(0, 3, size=(4, 3)).astype(np.float64)
    x[1] = x[0]
    return [
        Sample((x,), name="flat"),
        Sample((x,), {"return_inverse": True, "return_counts": True}, "inverse_counts"),
        Sample((x,), {"return_counts": True, "dim": 0}, "dim0_counts"),
        Sample((x,), {"return_inverse": True, "dim": -1}, "last_dim_inverse"),
    ]


OPS = [
    OpInfo("searchsorted", searchsorted_samples, differentiable=False),
    OpInfo("bucketize", lambda rng: [Sample((rand(rng, 3, 4) * 5 + 5, C(sorted_rows(rng, 6))), name="tensor"),
                                     Sample((rand(rng, 3) * 5 + 5, C(sorted_rows(rng, 6))), {"right": True}, "right")],
           differentiable=False),
    OpInfo("isin", isin_samples, differentiable=False),
    # the values require grad, but torch declares no derivative: its backward raises (tests/test_tensor_surface.py)
    OpInfo("unique", unique_samples, method=True, differentiable=False),
    OpInfo("unique_consecutive", unique_samples, method=True, differentiable=False),
    OpInfo("sort", sort_samples, method=True),
    OpInfo("argsort", argsort_samples, method=True, differentiable=False),
    OpInfo("msort", msort_samples, method=True),
    OpInfo("topk", topk_samples, method=True),
    OpInfo("kthvalue", kthvalue_samples, method=True),
    OpInfo("mode", mode_samples, method=True),
]
