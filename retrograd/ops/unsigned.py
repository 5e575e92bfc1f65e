"""Which rows of the rule table run on torch's wide unsigned dtypes (uint16, uint32, uint64), which refuse bool,
complex numbers, integers, floats or half-precision floats too, and the words of torch's refusal for the others
(Notes [unsigned dtypes], [bool and complex refusals], [low-precision linear algebra]).

The registry's entry points read this table: a row not in UNSIGNED_ROWS whose first input is (after promotion) a
tensor of one of those dtypes, or of a kind a row's table refuses (BOOL_REFUSALS, ...), raises torch's
`"<kernel>" not implemented for 'UInt64'` (or the row's own words) before NumPy computes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

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
    "as_strided_copy", "as_strided_scatter", "cat", "circular_pad", "clone", "conj", "conj_physical",
    "constant_pad_nd", "copy_", "copy_slices", "diag_embed", "diagonal", "diagonal_copy", "diagonal_scatter", "expand",
    "expand_copy", "fill", "fill_out", "fill_tensor", "fill_tensor_out", "index", "narrow_copy", "permute",
    "permute_copy", "repeat", "roll",
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
    "mul", "mul_scalar", "outer", "div", "div_scalar", "ceil", "floor", "round", "trunc", "nan_to_num",
    # reductions, sorting, uniques
    "all", "any", "sum_all", "sum_dim", "nansum", "prod_all", "prod_dim", "cumsum", "cumprod", "argsort", "sort",
    "sort_stable", "_unique", "_unique2", "unique_consecutive", "unique_dim", "nonzero_static",
})


def _convolution_kernel(x: np.ndarray, params: tuple) -> str:
    """The CPU kernel torch runs a convolution with (params: the convolution row's window, groups, transposed)."""
    window, _, transposed = params[:3]
    if transposed:
        return f"slow_conv_transpose{3 if x.ndim == 5 else 2}d_out_cpu"
    if any(d != 1 for d in window.dilation):
        return "slow_conv_dilated<>"
    return "compute_columns3d" if x.ndim == 5 else "slow_conv2d_cpu"


# the kernel torch's refusal names, where it is not "<row>_cpu": a name, or a function of the input and params
KERNELS: dict[str, str | Callable[[np.ndarray, tuple], str]] = {
    "div_rounding": lambda x, params: f"div_{params[0]}_cpu", "convolution": _convolution_kernel,
    "round_decimals": lambda x, params: "round_vml_cpu" if params[0] == 0 else "round_cpu",
    "_log_softmax": "log_softmax_lastdim_kernel_impl", "_softmax": "softmax_lastdim_kernel_impl", "abs": "abs_cpu",
    "add": "add_stub", "add_scalar": "add_stub", "addbmm": "addmm_impl_cpu_", "addcmul": "addcmul_cpu_out",
    "addmm": "addmm_impl_cpu_", "addmv": "addmv_impl_cpu", "addr": "addr_cpu", "amax": "max_values_cpu",
    "amin": "min_values_cpu", "avg_pool2d": "avg_pool2d", "avg_pool3d": "avg_pool3d_out_frame", "baddbmm": "baddbmm",
    "bernoulli": "bernoulli_tensor_cpu_self_", "bernoulli_": "bernoulli_scalar_cpu_",
    "bernoulli_p": "bernoulli_scalar_cpu_", "bernoulli_tensor_": "bernoulli_tensor_cpu_self_",
    "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu", "bmm": "bmm",
    "clamp": "clamp_scalar_cpu", "clamp_max": "clamp_max_scalar_cpu", "clamp_max_tensor": "minimum_cpu",
    "clamp_min": "clamp_min_scalar_cpu", "clamp_min_tensor": "maximum_cpu", "clamp_tensor": "clamp_cpu",
    "count_nonzero": "nonzero_count_cpu", "dot": "dot", "einsum": "bmm", "flip": "flip_cpu",
    "floor_divide": "div_floor_cpu", "fmax": "maximum_cpu", "fmin": "minimum_cpu", "fmod": "fmod_cpu",
    "fmod_scalar": "fmod_cpu", "gather": "scatter_gather_tensor_cpu", "geometric_": "geometric_cpu",
    "hardtanh": "clamp_scalar_cpu", "hash_tensor": "xor_sum_cpu", "index_fill_tensor": "index_fill_cpu",
    "index_put": "index_put", "index_select": "index_select", "isin": "isin_default_cpu", "linalg_cross": "cross",
    "logcumsumexp": "logcumsumexp_out_cpu", "masked_fill": "masked_fill", "masked_fill_tensor": "masked_fill",
    "masked_scatter": "masked_scatter", "masked_select": "masked_select", "max_all": "max_all", "max_dim": "max_cpu",
    "max_pool2d_with_indices": "max_pool2d", "max_pool3d_with_indices": "max_pool3d", "maximum": "maximum_cpu",
    "median_all": "median_cpu", "median_dim": "median_out", "min_all": "min_all", "min_dim": "min_cpu",
    "minimum": "minimum_cpu", "mm": "addmm_impl_cpu_", "mv": "addmv_impl_cpu", "nanmedian_all": "median_cpu",
    "nanmedian_dim": "median_out", "native_channel_shuffle": "channel_shuffle", "normal_": "normal_kernel_cpu",
    "pixel_shuffle": "pixel_shuffle", "pixel_unshuffle": "pixel_unshuffle", "pow": "pow", "pow_scalar_base": "pow",
    "pow_tensor": "pow", "reflection_pad1d": "reflection_pad1d", "reflection_pad2d": "reflection_pad2d",
    "reflection_pad3d": "reflection_pad3d", "relu": "clamp_min_scalar_cpu", "remainder": "remainder_cpu",
    "remainder_scalar": "remainder_cpu", "remainder_scalar_self": "remainder_cpu",
    "replication_pad1d": "replication_pad1d", "replication_pad2d": "replication_pad2d",
    "replication_pad3d": "replication_pad3d", "rsub": "add_stub", "rsub_scalar": "add_stub",
    "scatter": "scatter_gather_tensor_cpu", "searchsorted": "searchsorted_out_cpu", "sgn": "sign_cpu",
    "sub": "add_stub", "sub_scalar": "add_stub", "threshold": "threshold_cpu", "trace": "trace", "tril": "tril",
    "triu": "triu", "uniform_": "check_uniform_bounds", "vdot": "dot",
}

# rows whose kernel torch skips for a 0-d input (a copy) or an empty one (nothing to compute)
ZERO_DIM_COPIES = frozenset({"cummax", "cummin", "flip", "kthvalue", "max_dim", "min_dim", "mode", "topk"})
EMPTY_SKIPS = frozenset({"amax", "amin", "argmax", "argmin", "circular_pad", "count_nonzero", "cummax", "cummin",
                         "flip", "gather", "index_select", "masked_select", "max_dim", "min_dim", "mm", "mode",
                         "pixel_shuffle", "pixel_unshuffle", "searchsorted", "tril", "triu", "bernoulli",
                         "geometric_", "log_normal_", "normal_", "normal_tensor_float", "normal_float_tensor",
                         "normal_tensor_tensor"})

UNSIGNED_TYPES = frozenset(dt.np.type for dt in D.UNSIGNED_WIDE)  # NumPy's scalar types of them

# Note [bool and complex refusals]
# Some rows' CPU kernels have no loop for bool (the products, abs, pow, remainder, the roundings), for complex
# numbers (every ordering: max, min, sort, argmax, cummax; nansum; the roundings, unique; remainder, atan2 and the
# bitwise ops), for integers (the normalisations) or for floats (the bitwise ops, shifts, gcd), where NumPy computes
# (complex numbers by its lexicographic order) or raises a TypeError of its own. They refuse them as the
# unsigned types: by the kernel's name, or, a pair, in the error and words of their own. The entry points look these
# types up in one set beside the unsigned ones (refused_types), so the rows that take them pay nothing more. (atan2
# and copysign, float rows that convert integers first, refuse complex numbers in their forwards.)

# a refusal: the kernel's name, an (error type, words) pair, or a function of the input and params giving either
# (or None where torch has a loop for those params)
Refusal = str | tuple[type[Exception], str] | Callable[[np.ndarray, tuple], str | tuple[type[Exception], str] | None]
_ORDERLESS = "not implemented for complex tensors."
_SORT = (RuntimeError, " Sort does not support complex dtypes on CPU")
_NORMS = {"native_layer_norm": "LayerNormKernelImpl", "native_group_norm": "GroupNormKernelImpl",
          "native_batch_norm": "batch_norm"}
_UNPOOLS = {"max_unpool2d": "max_unpool2d", "max_unpool3d": "max_unpool3d"}
_MARGINS = {"multi_margin_loss": "multi_margin_loss_cpu_kernel",
            "multilabel_margin_loss": "multilabel_margin_loss_forward_out_frame"}


def _exponential(array: np.ndarray, params: tuple) -> tuple[type[Exception], str]:
    return RuntimeError, ("Exponential distribution is a continuous probability distribution. dtype must be a "
                          f"floating point but you specified {_type_name(array.dtype)}")


# float rows (promote="float") whose torch kernels take floats only: bool and integers refused before conversion
CHECKED_BEFORE_CONVERSION = frozenset({"hypot", "logaddexp", "logaddexp2", "igamma", "igammac"})
_FLOATS_ONLY = {  # kernels with no loop for bool nor integers
    "round_decimals": KERNELS["round_decimals"], "frac": "frac_cpu", "lerp": "lerp_kernel_scalar",
    "lerp_tensor": "lerp_kernel_tensor", "nll_loss": "nll_loss_out_frame", **_MARGINS, **_UNPOOLS,
    "max_pool2d_with_indices_backward": "max_pool2d_backward", "bernoulli": "bernoulli_tensor_cpu_p_",
    **dict.fromkeys(("normal_tensor_float", "normal_float_tensor", "normal_tensor_tensor"), "normal_kernel_cpu"),
    "linalg_householder_product": "orgqr_cpu", "ormqr": "ormqr_cpu", "_ctc_loss": "ctc_loss_cpu",
    **{row: row + "_cpu" for row in CHECKED_BEFORE_CONVERSION}}
def _index_reduce_kernel(array: np.ndarray, params: tuple) -> str:
    """index_reduce's kernel for bool and complex (neither has a loop): another when include_self is False."""
    return "index_func_" if params[3] else "index_reduce_func_exclude_input_init"


BOOL_REFUSALS: dict[str, Refusal] = {
    **{row: KERNELS.get(row, row + "_cpu") for row in (  # (with a number, remainder and fmod promote bool first)
        "abs", "addbmm", "addcmul", "addmm", "addmv", "baddbmm", "bmm", "dot", "fmod", "linalg_cross", "mm", "mv",
        "pow", "pow_scalar_base", "pow_tensor", "remainder", "searchsorted", "trace", "vdot")},
    **_NORMS, "div_rounding": KERNELS["div_rounding"], "round": "round_vml_cpu", "ceil": "ceil_vml_cpu",
    "floor": "floor_vml_cpu", "trunc": "trunc_vml_cpu", "clamp_tensor": "clamp_cpu",
    "index_reduce": _index_reduce_kernel,
    "scatter_reduce": lambda x, params: "scatter_gather_tensor_cpu_reduce_mean" if params[2] == "mean" else None,
    **_FLOATS_ONLY, "triangular_solve":
    "triangular_solve_cpu", "convolution": lambda x, params: "slow_conv3d_cpu" if x.ndim == 5 and not params[2]
    else _convolution_kernel(x, params),
    # the samplers of continuous distributions
    "normal_": "normal_kernel_cpu", "uniform_": "check_uniform_bounds", "geometric_": "geometric_cpu",
    "log_normal_": "log_normal_cpu", "exponential_": _exponential,
    "cauchy_": (RuntimeError, "Cauchy distribution is a continuous probability distribution. dtype must be a "
                              "floating point but you specified bool"),
    "neg": (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                          "a mask, use the `~` or `logical_not()` operator instead."),
    "argmax": (RuntimeError, "argmax(): does not support bool input"),
    "argmin": (RuntimeError, "argmin(): does not support bool input"),
}
COMPLEX_REFUSALS: dict[str, Refusal] = {
    **_NORMS, **dict.fromkeys(("_unique", "_unique2", "unique_consecutive", "unique_dim"), "unique"),
    "amax": "max_values_cpu", "amin": "min_values_cpu", "aminmax": "aminmax_cpu", "cummax": "cummax_cpu",
    "cummin": "cummin_cpu", "max_all": "max_all", "min_all": "min_all", "round": "round_vml_cpu",
    "maximum": (RuntimeError, f"maximum {_ORDERLESS}"), "minimum": (RuntimeError, f"minimum {_ORDERLESS}"),
    "fmax": (RuntimeError, f"fmax {_ORDERLESS}"), "fmin": (RuntimeError, f"fmin {_ORDERLESS}"),
    "max_dim": (RuntimeError, "max(): does not support complex input"),
    "min_dim": (RuntimeError, "min(): does not support complex input"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "sort": _SORT, "sort_stable": _SORT, "argsort": _SORT, "searchsorted": KERNELS["searchsorted"],
    "erf": "erf_vml_cpu", "erfc": "erfc_vml_cpu", "erfinv": "erfinv_vml_cpu", "lgamma": "lgamma_vml_cpu",
    "digamma": "digamma", "polygamma": lambda x, params: ("digamma", "trigamma", "polygamma")[min(params[0], 2)],
    "log_normal_": "log_normal_cpu", "nll_loss": "nll_loss_out_frame", "frac": "frac_cpu",
    "geometric_": "geometric_cpu", "bernoulli": "bernoulli_tensor_cpu_self_", **_UNPOOLS, **_MARGINS,
    "normal_float_tensor": (RuntimeError, "normal expects standard deviation to be non-complex"),
    "scatter_reduce": lambda x, params: f"scatter_gather_tensor_cpu_reduce_{params[2]}" if params[2] in ("amax", "amin")
    else None, "index_reduce": _index_reduce_kernel,
    **{row: row + "_cpu" for row in ("hypot", "logaddexp2", "igamma", "igammac")},
    "round_decimals": KERNELS["round_decimals"],
    **{row: (RuntimeError, f"{row} is not supported for complex tensors.") for row in ("deg2rad", "rad2deg")},
    "exponential_": _exponential,
    "nansum": (RuntimeError, "nansum on CPU does not support complex inputs"),
    **{row: (NotImplementedError, f"{row} is not supported for complex inputs") for row in ("ceil", "floor", "trunc")},
}
INTEGER_REFUSALS: dict[str, Refusal] = {**_NORMS, **_FLOATS_ONLY, "im2col": "im2col_out_cpu",
                                         "col2im": "col2im_out_cpu"}
_BITWISE = {row: row + "_cpu" for row in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")}
_INTEGRAL = {**_BITWISE, "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu", "gcd": "gcd_cpu",
             "lcm": "lcm_cpu"}
FLOAT_REFUSALS: dict[str, Refusal] = dict(_INTEGRAL)  # NumPy's TypeError otherwise
COMPLEX_REFUSALS.update(_INTEGRAL, signbit=(NotImplementedError, "signbit is not implemented for complex tensors."),
                        **{row: KERNELS[row] for row in ("div_rounding", "fmod", "fmod_scalar", "remainder",
                                                         "remainder_scalar", "remainder_scalar_self")})

# Note [low-precision linear algebra]
# torch's LAPACK kernels have no float16 or bfloat16 loop, and its linalg functions refuse those dtypes by the
# kernel's name or in words of their own; NumPy's linalg raises a TypeError of its own for float16 and would
# compute bfloat16 in float32 (the opmath road, Note [bfloat16]). The same holds for a few other kernels (the
# special functions retrograd computes in float64, multi-margin loss, polar). Both dtypes are refused from this
# table: float16 by the entry points' set lookup, bfloat16 where the opmath road starts (registry._apply_bfloat16).
LOW_PRECISION = "{}: Low precision dtypes not supported. Got {}"


def _low_precision(where: str) -> Callable[[np.ndarray, tuple], tuple[type[Exception], str]]:
    return lambda array, params: (RuntimeError, LOW_PRECISION.format(where, _type_name(array.dtype)))


def _pinv_refusal(array: np.ndarray, params: tuple) -> tuple[type[Exception], str]:
    shape = ", ".join(map(str, array.shape))
    return RuntimeError, (f"linalg.pinv({_type_name(array.dtype)}{{[{shape}]}}): expected a tensor with 2 or more "
                          "dimensions of float, double, cfloat or cdouble types")


LOW_PRECISION_REFUSALS: dict[str, Refusal] = {
    **dict.fromkeys(("linalg_det", "linalg_solve_ex", "linalg_lu_factor_ex", "linalg_lu"), "lu_cpu"),
    **dict.fromkeys(("linalg_qr", "geqrf"), "geqrf_cpu"),
    **dict.fromkeys(("linalg_cholesky_ex", "cholesky"), "cholesky_cpu"),
    **dict.fromkeys(("linalg_solve_triangular", "triangular_solve"), "triangular_solve_cpu"),
    "linalg_eig": "linalg_eig_out_cpu", "linalg_eigh": "linalg_eigh_cpu", "linalg_svd": "linalg_svd_cpu",
    "linalg_householder_product": "orgqr_cpu", "ormqr": "ormqr_cpu", "linalg_ldl_factor_ex": "ldl_factor_kernel_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu", "cholesky_solve": "cholesky_solve_cpu",
    "linalg_lu_solve": "linalg.lu_solve_cpu",
    "linalg_inv_ex": _low_precision("linalg.inv"), "linalg_slogdet": _low_precision("linalg.slogdet"),
    "linalg_pinv": _pinv_refusal,
    "linalg_lstsq": (RuntimeError, "This function doesn't handle types other than float and double"),
    "polar": "polar_cpu",  # torch.polar refuses bfloat16 first, in words of its own
    **_MARGINS,
    # the special functions computed in float64 (ops/special.py) whose torch kernels have no half loop either
    **{f"special_{name}": f"{name}_cpu" for name in (
        "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
        "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
        "spherical_bessel_j0", "erfcx", "log_ndtr", "ndtri", "zeta", "chebyshev_polynomial_t",
        "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
        "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")},
    **dict.fromkeys(("special_zeta_scalar_self", "special_zeta_scalar_other"), "zeta_cpu"),
}
# the rows that refuse bfloat16, tested where its opmath road starts
BFLOAT16_REFUSED_ROWS = frozenset(FLOAT_REFUSALS) | frozenset(LOW_PRECISION_REFUSALS)
_REFUSALS = {"b": BOOL_REFUSALS, "c": COMPLEX_REFUSALS, "i": INTEGER_REFUSALS, "u": INTEGER_REFUSALS,
             "f": FLOAT_REFUSALS}  # by kind
_TYPES = {"b": {np.bool_}, "c": {np.complex64, np.complex128},
          "i": {np.int8, np.int16, np.int32, np.int64, np.uint8}, "f": {np.float16, np.float32, np.float64}}


def _type_name(dtype: np.dtype) -> str:
    return D.scalar_type_name(D.FROM_NUMPY[dtype])


@functools.cache
def refused_types(row: str, floating: bool = False) -> frozenset:
    """The NumPy scalar types row `row` refuses (Notes [unsigned dtypes], [bool and complex refusals],
    [low-precision linear algebra]); a `floating` row's (promote="float") inputs come converted from the unsigned
    types, as torch's do."""
    refused = set() if row in UNSIGNED_ROWS or floating else set(UNSIGNED_TYPES)
    for kind, table in (("b", BOOL_REFUSALS), ("c", COMPLEX_REFUSALS), ("i", INTEGER_REFUSALS),
                        ("f", FLOAT_REFUSALS)):
        if row in table:
            refused |= _TYPES[kind]
    if row in LOW_PRECISION_REFUSALS:
        refused.add(np.float16)
    return frozenset(refused)


def refuse_row(row: str, array: object, params: tuple) -> None:
    """torch's error for row `row` run on `array` with `params`, where torch's kernel would see a dtype it has no
    loop for (refused_types): not for a 0-d or empty input torch copies or skips, nor for a flip that keeps the
    innermost (unit-stride) dim in place (torch flips the others by copying, with no kernel of its own)."""
    dtype = getattr(array, "dtype", None)
    if not isinstance(dtype, np.dtype):  # NumPy's or CuPy's arrays
        return
    if dtype.type in UNSIGNED_TYPES:
        if row in UNSIGNED_ROWS or array.ndim == 0 and row in ZERO_DIM_COPIES or array.size == 0 and row in EMPTY_SKIPS:
            return
        if row == "flip" and all(array.strides[d] != array.itemsize for d in params[0]):
            return
        refusal = KERNELS.get(row, row + "_cpu")
    else:
        kind = "f" if dtype is D.NUMPY_BFLOAT16 else dtype.kind
        refusal = _REFUSALS.get(kind, {}).get(row)
        if refusal is None and kind == "f" and dtype.itemsize == 2:
            refusal = LOW_PRECISION_REFUSALS.get(row)
        if refusal is None or isinstance(refusal, str) and (array.ndim == 0 and row in ZERO_DIM_COPIES
                                                            or array.size == 0 and row in EMPTY_SKIPS):
            return  # a kernel's name: torch copies or skips those inputs before the kernel as for unsigned ones
    if callable(refusal):
        refusal = refusal(array, params)
        if refusal is None:  # torch has a loop for these params
            return
    if isinstance(refusal, tuple):
        raise refusal[0](refusal[1])
    raise NotImplementedError(f"\"{refusal}\" not implemented for '{_type_name(dtype)}'")
