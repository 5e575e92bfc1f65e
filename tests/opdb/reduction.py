"""Op database rows: reductions and scans (OPS.md D).

Gradcheck samples use values without ties (`distinct`) or away from kinks; samples with ties,
NaN or a zero norm are compared with torch's backward only (`gradcheck=False`), which is where
the tie conventions (even split for max()/amax/median(), the returned index for max(dim)) are
checked. Indices returned next to values are compared with torch's in every forward test.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import C, Dt, OpInfo, Sample, distinct, noncontig, positive, rand


def ties(rng, *shape, values=3):
    """Floats drawn from a few integers, so every slice has repeated values."""
    return rng.integers(0, values, size=shape).astype(np.float64)


def with_nan(a, *where):
    a = a.copy()
    for idx in where:
        a[idx] = np.nan
    return a


def with_zeros(a, *where):
    a = a.copy()
    for idx in where:
        a[idx] = 0.0
    return a


def kink(*args, name, **kwargs):
    """A sample at a tie or kink: compared with torch's backward, no finite differences."""
    return Sample(args, kwargs, name, gradcheck=False)


# ============================================================================================
# Sums and means
# ============================================================================================


def sum_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="all"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng, 0, 3),), name="empty"),
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 3, 4), -1, True), name="neg_dim_keepdim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), name="dims"),
        Sample((rand(rng, 2, 3, 4), [-1, 0], True), name="dim_list_keepdim"),
        Sample((rand(rng, 3, 4), ()), name="empty_dims"),
        Sample((rand(rng, 3, 4), None, True), name="none_keepdim"),
        Sample((rand(rng, 0, 3), 0), name="empty_dim"),
        Sample((rand(rng, 1, 5), 0), name="size1_dim"),
        Sample((rand(rng), 0), name="0d_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 0), name="noncontig"),
        Sample((rand(rng, 3, 4),), {"dtype": Dt("float64")}, "dtype"),
        Sample((C(rng.integers(-5, 5, size=(3, 4))), 1), name="int"),
        Sample((C(rng.random((3, 4)) > 0.5),), name="bool"),
    ]


def nansum_samples(rng):
    return [
        Sample((with_nan(rand(rng, 3, 4), (0, 1), (2, 3)),), name="all"),
        Sample((with_nan(rand(rng, 3, 4), (1, 1)), 1), name="dim"),
        Sample((with_nan(rand(rng, 2, 3, 4), (0, 0, 0)), (0, 2), True), name="dims_keepdim"),
        Sample((with_nan(rand(rng, 3, 4), (0, slice(None))), -1), name="nan_row"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng, 0, 3), 0), name="empty_dim"),
        Sample((C(rng.integers(-5, 5, size=(3, 4))),), name="int"),
    ]


def mean_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="all"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng, 3, 4), 0), name="dim"),
        Sample((rand(rng, 3, 4), -1, True), name="neg_dim_keepdim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), name="dims"),
        Sample((rand(rng, 3, 4), ()), name="empty_dims"),
        Sample((rand(rng, 3, 4), None, True), name="none_keepdim"),
        Sample((rand(rng, 1, 5), 0), name="size1_dim"),
        Sample((rand(rng, 0, 3), 1), name="empty_input"),
        Sample((noncontig(rand(rng, 4, 3)), 1), name="noncontig"),
        Sample((C(rng.integers(-5, 5, size=(3, 4))),), {"dtype": Dt("float64")}, "int_with_dtype"),
    ]


def nanmean_samples(rng):
    return [
        Sample((with_nan(rand(rng, 3, 4), (0, 1), (2, 3)),), name="all"),
        Sample((with_nan(rand(rng, 3, 4), (1, 1)), 1), name="dim"),
        Sample((with_nan(rand(rng, 2, 3, 4), (0, 0, 0)), (0, 2), True), name="dims_keepdim"),
        Sample((rand(rng, 3, 4), 0), name="no_nan"),
        Sample((rand(rng),), name="0d"),
    ]


# ============================================================================================
# Products (Note [products with zeros]: gradcheck and gradgradcheck run through the zeros)
# ============================================================================================


def prod_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="all"),
        Sample((with_zeros(rand(rng, 3, 4), (1, 2)),), name="one_zero"),
        Sample((with_zeros(rand(rng, 3, 4), (0, 0), (2, 3)),), name="two_zeros"),
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((with_zeros(rand(rng, 3, 4), (0, 1), (2, 0), (2, 3)), 1), name="dim_zeros"),
        Sample((with_zeros(rand(rng, 4, 3), (0, 1), (2, 1)), 0, True), name="dim_two_zeros_keepdim"),
        Sample((rand(rng, 3, 4), -1, True), name="neg_dim_keepdim"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng), 0), name="0d_dim"),
        Sample((rand(rng, 0, 3),), name="empty"),
        Sample((rand(rng, 0, 3), 1), name="empty_other_dim"),
        Sample((rand(rng, 1, 4), 0), name="size1_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 0), name="noncontig"),
        Sample((rand(rng, 3, 4), 1), {"dtype": Dt("float64")}, "dtype"),
        Sample((C(rng.integers(-3, 4, size=(3, 4))), 1), name="int"),
    ]


# ============================================================================================
# Extremes
# ============================================================================================


def max_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), name="all"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng, 3, 4), 1), name="dim"),
        Sample((distinct(rng, 3, 4), -2, True), name="neg_dim_keepdim"),
        Sample((distinct(rng, 1, 4), 0), name="size1_dim"),
        Sample((distinct(rng), 0), name="0d_dim"),
        Sample((noncontig(distinct(rng, 4, 3)), 1), name="noncontig"),
        Sample((distinct(rng, 3, 4), distinct(rng, 4) + 0.1), name="binary"),
        kink(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), name="ties_all"),
        kink(np.array([[1.0, 3.0, 3.0, 3.0], [2.0, 2.0, 0.0, 2.0]]), 1, name="ties_dim"),
        kink(ties(rng, 4, 5), 0, True, name="ties_dim_keepdim"),
        kink(with_nan(distinct(rng, 3, 4), (0, 1), (0, 3)), name="nan_all"),
        kink(with_nan(distinct(rng, 3, 4), (1, 2)), 1, name="nan_dim"),
        Sample((C(rng.integers(-5, 5, size=(3, 4))), 1), name="int"),
    ]


def amax_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), name="all"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng, 3, 4), 1), name="dim"),
        Sample((distinct(rng, 2, 3, 4), (0, -1), True), name="dims_keepdim"),
        Sample((distinct(rng, 3, 4), -1, True), name="neg_dim_keepdim"),
        Sample((distinct(rng, 3, 4), ()), name="empty_dims"),
        Sample((distinct(rng, 1, 4), 0), name="size1_dim"),
        Sample((rand(rng, 0, 3), 1), name="empty_other_dim"),
        kink(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]), name="ties_all"),
        kink(ties(rng, 4, 5), 1, name="ties_dim"),
        kink(ties(rng, 2, 3, 4), (0, 2), True, name="ties_dims_keepdim"),
    ]


def aminmax_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), name="all"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng, 3, 4),), {"dim": 1}, "dim"),
        Sample((distinct(rng, 3, 4),), {"dim": -2, "keepdim": True}, "neg_dim_keepdim"),
        Sample((distinct(rng, 3, 4),), {"keepdim": True}, "all_keepdim"),
        Sample((rand(rng, 0, 3),), {"dim": 1}, "empty_other_dim"),
        kink(ties(rng, 4, 5), name="ties_all"),
        kink(ties(rng, 4, 5), dim=0, name="ties_dim"),
    ]


def arg_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), name="all"),
        Sample((distinct(rng, 3, 4), 1), name="dim"),
        Sample((distinct(rng, 3, 4), -2, True), name="neg_dim_keepdim"),
        Sample((distinct(rng, 3, 4), None, True), name="all_keepdim"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng), 0), name="0d_dim"),
        Sample((ties(rng, 5, 40), 1), name="ties"),
        Sample((with_nan(distinct(rng, 3, 4), (1, 1), (1, 2)), 1), name="nan"),
        Sample((C(rng.integers(0, 3, size=(3, 4))), 0), name="int"),
    ]


# ============================================================================================
# Moments
# ============================================================================================


def var_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="all"),
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), name="dims"),
        Sample((rand(rng, 3, 4), -1), {"keepdim": True}, "neg_dim_keepdim"),
        Sample((rand(rng, 3, 4), 1, False), name="unbiased_false"),
        Sample((rand(rng, 3, 4), 1, True, True), name="unbiased_keepdim_positional"),
        Sample((rand(rng, 3, 4), False), name="legacy_unbiased"),
        Sample((rand(rng, 3, 4),), {"dim": 0, "correction": 0}, "correction0"),
        Sample((rand(rng, 3, 5),), {"dim": 1, "correction": 2}, "correction2"),
        Sample((rand(rng, 3, 4),), {"correction": 0, "keepdim": True}, "all_keepdim"),
        Sample((rand(rng, 1, 4), 0), {"correction": 0}, "size1_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 0), name="noncontig"),
        kink(rand(rng, 1, 4), 0, name="dof0_dim"),
        kink(rand(rng, 1), name="dof0_all"),
        kink(rand(rng), name="0d"),
        kink(rand(rng, 3, 0), 1, name="empty_dim"),
    ]


def std_samples(rng):
    """var's samples, where a single element (std 0) is a kink, plus a constant row."""
    constant_row = rand(rng, 3, 4)
    constant_row[1] = 0.7
    samples = [replace(s, gradcheck=False) if s.name == "size1_dim" else s for s in var_samples(rng)]
    return samples + [kink(constant_row, 1, name="zero_std")]


def var_mean_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="all"),
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), {"keepdim": True}, "dims_keepdim"),
        Sample((rand(rng, 3, 4), 0, False), name="unbiased_false"),
        Sample((rand(rng, 3, 5),), {"dim": -1, "correction": 2}, "correction2"),
    ]


# ============================================================================================
# logsumexp and norms
# ============================================================================================


def logsumexp_samples(rng):
    neg_inf = rand(rng, 3, 4)
    neg_inf[0, 1] = neg_inf[2, 0] = -math.inf
    all_neg_inf = rand(rng, 3, 4)
    all_neg_inf[1] = -math.inf
    return [
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 3, 4), -1, True), name="neg_dim_keepdim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), name="dims"),
        Sample((rand(rng, 3, 4) + 500.0, 0), name="large_values"),
        Sample((rand(rng), 0), name="0d"),
        Sample((rand(rng, 1, 4), 0), name="size1_dim"),
        Sample((rand(rng, 3, 0), 1), name="empty_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 1), name="noncontig"),
        Sample((neg_inf, 1), name="some_neg_inf"),
        kink(all_neg_inf, 1, name="neg_inf_row"),
        Sample((C(rng.integers(-3, 3, size=(3, 4))), 1), name="int"),
    ]


def vector_norm_samples(rng):
    zero_row = rand(rng, 3, 4)
    zero_row[1] = 0.0
    return [
        Sample((rand(rng, 3, 4),), name="2"),
        Sample((rand(rng, 3, 4), 1), name="1_away_from_0"),
        Sample((with_zeros(rand(rng, 3, 4), (0, 1)),), name="2_with_a_zero"),
        Sample((rand(rng, 3, 4), math.inf, 1), name="inf_dim"),
        Sample((rand(rng, 3, 4), -math.inf), name="neg_inf"),
        Sample((with_zeros(rand(rng, 3, 4), (1, 1)), 0, 1), name="0"),
        Sample((rand(rng, 3, 4), 3, (0, 1), True), name="3_dims_keepdim"),
        Sample((rand(rng, 2, 3, 4), 2.5, -1), name="2.5_neg_dim"),
        Sample((positive(rng, 3, 4), 0.5, 0), name="0.5"),
        Sample((positive(rng, 3, 4), -1, 1), name="neg_1"),
        Sample((rand(rng, 3, 4),), {"dim": 0, "keepdim": True}, "keepdim"),
        Sample((rand(rng, 3, 4),), {"dtype": Dt("float64")}, "dtype"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng, 0, 3), 2, 1), name="empty_other_dim"),
        kink(zero_row, 2, 1, name="2_zero_row"),
        kink(zero_row, 1, 1, name="1_zero_row"),
        kink(zero_row, 3, 1, name="3_zero_row"),
        kink(zero_row, 0.5, 1, name="0.5_zero_row"),
        kink(np.array([[-3.0, 3.0, 1.0], [2.0, -1.0, 0.5]]), math.inf, 1, name="inf_ties"),
    ]


def norm_samples(rng):
    return [
        Sample((rand(rng, 3, 4),), name="default"),
        Sample((rand(rng, 3, 4), 1), name="p1"),
        Sample((rand(rng, 3, 4), math.inf), name="pinf"),
        Sample((rand(rng, 3, 4),), {"dim": 1}, "dim"),
        Sample((rand(rng, 3, 4), "fro", (0, 1)), name="fro_dims"),
        Sample((rand(rng, 3, 4), 3, -1, True), name="p3_keepdim"),
        Sample((rand(rng, 3, 4), None, 0), name="p_none_dim"),
        kink(np.zeros((2, 3)), name="zero"),
    ]


# ============================================================================================
# Scans
# ============================================================================================


def cumsum_samples(rng):
    return [
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 3, 4), 0), name="dim0"),
        Sample((rand(rng, 2, 3, 4), -2), name="neg_dim"),
        Sample((rand(rng), 0), name="0d"),
        Sample((rand(rng, 1, 4), 0), name="size1_dim"),
        Sample((rand(rng, 3, 0), 1), name="empty_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 1), name="noncontig"),
        Sample((rand(rng, 3, 4), 1), {"dtype": Dt("float64")}, "dtype"),
        Sample((C(rng.integers(-3, 4, size=(3, 4))), 1), name="int"),
        Sample((C(rng.random((3, 4)) > 0.5), 0), name="bool"),
    ]


def cumprod_samples(rng):
    return [
        Sample((rand(rng, 3, 4), 1), name="dim"),
        Sample((rand(rng, 4, 3), 0), name="dim0"),
        Sample((with_zeros(rand(rng, 3, 5), (0, 2), (1, 0), (2, 4)), 1), name="one_zero_per_row"),
        Sample((with_zeros(rand(rng, 2, 6), (0, 1), (0, 3), (1, 2), (1, 3)), -1), name="two_zeros"),
        Sample((with_zeros(rand(rng, 1, 5), (0, 1), (0, 2), (0, 4)), 1), name="three_zeros"),
        Sample((with_zeros(rand(rng, 2, 3, 4), (0, 1, 2)), 1), name="3d_zero"),
        Sample((rand(rng), 0), name="0d"),
        Sample((rand(rng, 1, 4), 0), name="size1_dim"),
        Sample((rand(rng, 3, 0), 1), name="empty_dim"),
        Sample((noncontig(rand(rng, 4, 3)), 1), name="noncontig"),
        Sample((rand(rng, 3, 4), 1), {"dtype": Dt("float64")}, "dtype"),
        Sample((C(rng.integers(-3, 4, size=(3, 4))), 1), name="int"),
    ]


def cummax_samples(rng):
    return [
        Sample((distinct(rng, 3, 5), 1), name="dim"),
        Sample((distinct(rng, 4, 3), 0), name="dim0"),
        Sample((distinct(rng, 2, 3, 4), -1), name="neg_dim"),
        Sample((distinct(rng), 0), name="0d"),
        Sample((rand(rng, 3, 0), 1), name="empty_dim"),
        kink(ties(rng, 4, 6), 1, name="ties"),
        kink(with_nan(distinct(rng, 2, 5), (0, 1), (0, 3), (1, 4)), 1, name="nan"),
        Sample((C(rng.integers(0, 3, size=(3, 4))), 1), name="int"),
    ]


# ============================================================================================
# Medians
# ============================================================================================


def median_samples(rng):
    return [
        Sample((distinct(rng, 3, 5),), name="all_odd"),
        Sample((distinct(rng, 3, 4),), name="all_even"),
        Sample((distinct(rng, 3, 5), 1), name="dim"),
        Sample((distinct(rng, 4, 3), 0, True), name="dim_keepdim"),
        Sample((distinct(rng, 2, 3, 4), -1), name="neg_dim"),
        Sample((distinct(rng),), name="0d"),
        Sample((distinct(rng), 0), name="0d_dim"),
        Sample((distinct(rng, 1, 4), 0), name="size1_dim"),
        kink(rand(rng, 0), name="empty"),
        kink(ties(rng, 3, 6), name="ties_all"),
        kink(ties(rng, 4, 7), 1, name="ties_dim"),
        kink(ties(rng, 6, 40), 1, name="ties_long_dim"),
        kink(with_nan(distinct(rng, 3, 5), (0, 1), (2, 0), (2, 2)), 1, name="nan_dim"),
        kink(with_nan(distinct(rng, 3, 5), (1, 3)), name="nan_all"),
        kink(with_nan(distinct(rng, 2, 3), (1, slice(None))), 1, name="all_nan_row"),
        Sample((C(rng.integers(0, 4, size=(3, 5))), 1), name="int"),
    ]


def count_nonzero_samples(rng):
    return [
        Sample((with_zeros(rand(rng, 3, 4), (0, 1), (2, 2)),), name="all"),
        Sample((with_zeros(rand(rng, 3, 4), (0, 1)), 1), name="dim"),
        Sample((with_zeros(rand(rng, 2, 3, 4), (0, 1, 2)), (0, 2)), name="dims"),
        Sample((rand(rng),), name="0d"),
        Sample((C(rng.integers(0, 2, size=(3, 4))), 0), name="int"),
    ]


def hash_tensor_samples(rng):
    return [
        Sample((with_zeros(rand(rng, 3, 4), (0, 1)),), name="all"),
        Sample((rand(rng, 3, 4), 1), {"keepdim": True}, name="dim_keepdim"),
        Sample((rand(rng, 2, 3, 4), (0, 2)), name="dims"),
        Sample((rand(rng),), name="0d"),
        Sample((C(rng.integers(-5, 5, size=(3, 4))), 0), name="int"),
        Sample((C(rng.random((3, 4)) > 0.5), -1), name="bool"),
    ]


def logical_samples(rng):
    return [
        Sample((with_zeros(rand(rng, 3, 4), (0, 1)),), name="all"),
        Sample((with_zeros(rand(rng, 3, 4), (0, 1)), 1), name="dim"),
        Sample((with_zeros(rand(rng, 3, 4), (2, 2)), -2, True), name="neg_dim_keepdim"),
        Sample((with_zeros(rand(rng, 2, 3, 4), (0, 0, 0)), (0, 2)), name="dims"),
        Sample((C(rng.random((3, 4)) > 0.3), 0), name="bool"),
        Sample((rand(rng),), name="0d"),
        Sample((rand(rng, 0, 3), 1), name="empty"),
    ]


OPS = [
    OpInfo("sum", sum_samples, method=True),
    OpInfo("nansum", nansum_samples, method=True),
    OpInfo("mean", mean_samples, method=True),
    OpInfo("nanmean", nanmean_samples, method=True),
    OpInfo("prod", prod_samples, method=True),
    OpInfo("max", max_samples, method=True),
    OpInfo("min", max_samples, method=True),
    OpInfo("amax", amax_samples, method=True),
    OpInfo("amin", amax_samples, method=True),
    OpInfo("aminmax", aminmax_samples, method=True),
    OpInfo("argmax", arg_samples, method=True, differentiable=False),
    OpInfo("argmin", arg_samples, method=True, differentiable=False),
    OpInfo("var", var_samples, method=True),
    OpInfo("std", std_samples, method=True),
    OpInfo("var_mean", var_mean_samples),
    OpInfo("std_mean", var_mean_samples),
    OpInfo("logsumexp", logsumexp_samples, method=True),
    OpInfo("linalg.vector_norm", vector_norm_samples, aliases=("vector_norm",)),
    OpInfo("norm", norm_samples, method=True),
    OpInfo("cumsum", cumsum_samples, method=True),
    OpInfo("cumprod", cumprod_samples, method=True),
    OpInfo("cummax", cummax_samples, method=True),
    OpInfo("cummin", cummax_samples, method=True),
    OpInfo("median", median_samples, method=True),
    OpInfo("nanmedian", median_samples, method=True),
    OpInfo("count_nonzero", count_nonzero_samples, method=True, differentiable=False),
    OpInfo("hash_tensor", hash_tensor_samples, method=True, differentiable=False),
    OpInfo("all", logical_samples, method=True, differentiable=False),
    OpInfo("any", logical_samples, method=True, differentiable=False),
]

OPS += [
    OpInfo("diff", lambda rng: [Sample((rand(rng, 3, 4),), name="last"),
                                Sample((rand(rng, 4, 3), 2, 0, rand(rng, 1, 3), rand(rng, 2, 3)), name="ends")],
           method=True),
    OpInfo("trapezoid", lambda rng: [Sample((rand(rng, 3, 4),), {"dx": 0.5}, name="dx"),
                                     Sample((rand(rng, 3, 4), C(np.array([0.0, 1.0, 3.0, 4.5]))), name="points")],
           aliases=("trapz",)),
    OpInfo("cumulative_trapezoid", lambda rng: [Sample((rand(rng, 3, 4),), {"dx": 2.0}, name="dx"),
                                                Sample((rand(rng, 3, 4), C(np.array([0.0, 1.0, 3.0]))), {"dim": 0},
                                                       name="points")]),
]
