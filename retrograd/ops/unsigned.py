"""Which rows of the rule table run on torch's wide unsigned dtypes (uint16, uint32, uint64), and the words of
torch's refusal for the others (Note [unsigned dtypes]).

The registry's entry points read this table: a row not in UNSIGNED_ROWS whose first input is (after promotion) a
tensor of one of those dtypes raises torch's `"<kernel>" not implemented for 'UInt64'` before NumPy computes.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as D

# Note [unsigned dtypes]
# torch 2.13 has uint16, uint32 and uint64 tensors with "limited support": they can be made, converted, copied,
# viewed, reshaped, indexed, compared for equality, combined bitwise (and, or, xor), multiplied, divided (true
# division), summed and multiplied down (sum, prod, cumsum, cumprod and nansum give int64, as for every integer
# type), sorted, and any op that computes in floating point (exp, sqrt, the special functions) converts them
# first; nearly everything else (add, sub, neg, abs, ordered comparisons, max and min, matmul, shifts, bitwise_not,
# floor division, remainder, pow, ...) raises NotImplementedError naming the kernel and the type. They promote
# with no other integer type nor bool nor complex, only with the floating types (_dtype.promote_types). NumPy
# computes on all of them, so the rows torch runs are listed here and every other row refuses as torch does:
# measured by running OpInfo's samples converted to these dtypes through torch (tests/test_uint_dtypes.py
# compares both libraries on them, values or error texts).

UNSIGNED_ROWS = frozenset({
    # made, copied, converted, viewed, reshaped, selected, filled
    "_reshape_alias", "_to_copy", "_to_device", "_unsafe_view", "alias", "alias_copy", "as_strided", "as_strided_",
    "as_strided_copy", "as_strided_scatter", "cat", "clone", "conj", "conj_physical", "constant_pad_nd", "copy_",
    "copy_slices", "diag_embed", "diagonal", "diagonal_copy", "diagonal_scatter", "expand", "expand_copy", "fill",
    "fill_out", "fill_tensor", "fill_tensor_out", "index", "narrow_copy", "permute", "permute_copy", "repeat", "roll",
    "rot90", "select", "select_scatter", "slice", "slice_scatter", "split", "split_with_sizes",
    "split_with_sizes_copy", "squeeze", "squeeze_", "squeeze_copy", "squeeze_dim", "squeeze_dim_", "squeeze_dim_copy",
    "squeeze_dims", "squeeze_dims_", "squeeze_dims_copy", "stack", "t", "t_", "t_copy", "transpose", "transpose_",
    "transpose_copy", "unbind", "unbind_copy", "unfold", "unfold_copy", "unsafe_split", "unsafe_split_with_sizes",
    "unsqueeze", "unsqueeze_", "unsqueeze_copy", "view", "view_copy", "view_dtype", "where", "zero",
    "random_", "random_from_to_", "random_to_",
    # equality, class tests, bitwise and, or, xor
    "eq", "eq_", "eq_scalar_", "ne", "ne_", "ne_scalar_", "isclose", "isfinite", "isinf", "isnan", "isneginf",
    "isposinf", "isreal", "signbit", "bitwise_and", "bitwise_or", "bitwise_xor",
    # arithmetic torch has kernels for; rounding an integer is the identity
    "mul", "mul_scalar", "div", "div_scalar", "ceil", "floor", "round", "trunc", "nan_to_num",
    # reductions, sorting, uniques
    "all", "any", "sum_all", "sum_dim", "nansum", "prod_all", "prod_dim", "cumsum", "cumprod", "argsort", "sort",
    "sort_stable", "_unique", "_unique2", "unique_consecutive", "unique_dim", "nonzero_static",
})

# the kernel torch's refusal names, where it is not "<row>_cpu"
KERNELS = {
    "abs": "abs_cpu", "add": "add_stub", "add_scalar": "add_stub", "sub": "add_stub", "sub_scalar": "add_stub",
    "rsub": "add_stub", "rsub_scalar": "add_stub", "addcmul": "addcmul_cpu_out", "addmm": "addmm_impl_cpu_",
    "mm": "addmm_impl_cpu_", "addbmm": "addmm_impl_cpu_", "addmv": "addmv_impl_cpu", "mv": "addmv_impl_cpu",
    "addr": "addr_cpu", "bmm": "bmm", "baddbmm": "baddbmm", "dot": "dot", "vdot": "dot", "trace": "trace",
    "tril": "tril", "triu": "triu", "flip": "flip_cpu", "max_all": "max_all", "min_all": "min_all",
    "max_dim": "max_cpu", "min_dim": "min_cpu", "amax": "max_values_cpu", "amin": "min_values_cpu",
    "maximum": "maximum_cpu", "minimum": "minimum_cpu", "fmax": "maximum_cpu", "fmin": "minimum_cpu",
    "clamp": "clamp_scalar_cpu", "clamp_min": "clamp_min_scalar_cpu", "clamp_max": "clamp_max_scalar_cpu",
    "clamp_tensor": "clamp_cpu", "clamp_min_tensor": "maximum_cpu", "clamp_max_tensor": "minimum_cpu",
    "relu": "clamp_min_scalar_cpu", "hardtanh": "clamp_scalar_cpu", "floor_divide": "div_floor_cpu",
    "div_rounding": "div_floor_cpu", "remainder": "remainder_cpu", "remainder_scalar": "remainder_cpu",
    "remainder_scalar_self": "remainder_cpu", "fmod": "fmod_cpu", "fmod_scalar": "fmod_cpu", "pow": "pow",
    "pow_tensor": "pow", "pow_scalar_base": "pow", "bitwise_left_shift": "lshift_cpu",
    "bitwise_right_shift": "rshift_cpu", "count_nonzero": "nonzero_count_cpu", "masked_select": "masked_select",
    "masked_fill": "masked_fill", "masked_fill_tensor": "masked_fill", "masked_scatter": "masked_scatter",
    "gather": "scatter_gather_tensor_cpu", "scatter": "scatter_gather_tensor_cpu", "median_all": "median_cpu",
    "median_dim": "median_out", "nanmedian_all": "median_cpu", "nanmedian_dim": "median_out", "linalg_cross": "cross",
    "pixel_shuffle": "pixel_shuffle", "pixel_unshuffle": "pixel_unshuffle", "native_channel_shuffle":
    "channel_shuffle", "avg_pool2d": "avg_pool2d", "avg_pool3d": "avg_pool3d_out_frame", "uniform_":
    "check_uniform_bounds", "geometric_": "geometric_cpu", "searchsorted": "searchsorted_out_cpu",
    "index_put": "index_put", "isin": "isin_default_cpu", "threshold": "threshold_cpu", "hash_tensor": "xor_sum_cpu",
}

UNSIGNED_TYPES = frozenset(dt.np.type for dt in D.UNSIGNED_WIDE)  # NumPy's scalar types of them


def refuse_unsigned(kernel: str, value: object) -> None:
    """torch's error from `kernel` for a wide unsigned dtype (of an array, NumPy's or CuPy's, or a NumPy dtype);
    nothing for any other dtype or a number."""
    dtype = value if isinstance(value, np.dtype) else getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.type in UNSIGNED_TYPES:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.scalar_type_name(dtype)}'")


def kernel(row: str) -> str:
    """The kernel torch's refusal names for `row`."""
    return KERNELS.get(row, row + "_cpu")
