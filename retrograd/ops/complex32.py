"""Which rows of the rule table run on torch's complex32 (ComplexHalf), and the words of torch's refusal for the
others (Note [complex32] in retrograd/_dtype.py).

The choke point (registry._complex32_forward) reads this table: a row where a complex32 array is among the forward's
inputs (after promotion) computes on complex64 copies and rounds its results once if it is in COMPLEX32_ROWS (through
FORWARDS where torch's kernel rounds more often), and raises torch's `"<kernel>" not implemented for 'ComplexHalf'`
(or the op's own RuntimeError) otherwise.
"""

from __future__ import annotations

from typing import Any

from .. import _dtype as D
from .unsigned import EMPTY_SKIPS as UNSIGNED_EMPTY_SKIPS
from .unsigned import KERNELS as UNSIGNED_KERNELS
from .unsigned import ZERO_DIM_COPIES as UNSIGNED_ZERO_DIM_COPIES

# Note [complex32 kernels]
# torch 2.13 has ComplexHalf CPU kernels for copying, converting, filling, selecting and joining values, for add,
# sub, mul, neg, conj, abs and sgn, equality and the class tests (isnan, isfinite, ...), any and all, and the
# vector norms (through their complex64 accumulation), var and std; every other op (division, exp and the
# transcendental functions, sums, products, matmul, ordered comparisons, ...) raises NotImplementedError naming its
# kernel, unless its input is empty (or 0-d) and the kernel is skipped. Most kernels compute in complex64 and round
# once; addcmul computes in complex32 arithmetic (each product rounded) and var/std take each part's float16
# variance and add them in float16 (FORWARDS).
# Measured by running OpInfo's samples converted to complex32 through torch (tests/test_complex32.py compares both
# libraries on them, values or error texts). View rows never reach this table: they run on the complex32 array.

COMPLEX32_ROWS = frozenset({
    # made, copied, converted, selected, joined, filled (the values cross unchanged)
    "_to_copy", "clone", "copy_", "copy_slices", "cat", "stack", "block_diag", "constant_pad_nd", "circular_pad",
    "diag_embed", "diagonal_scatter", "select_scatter", "slice_scatter", "as_strided_scatter", "narrow_copy",
    "alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "permute_copy", "squeeze_copy",
    "squeeze_dim_copy", "squeeze_dims_copy", "t_copy", "transpose_copy", "unsqueeze_copy", "unbind_copy",
    "unfold_copy", "view_copy", "split_with_sizes_copy", "repeat", "roll", "rot90", "tril", "triu", "where",
    "index", "index_select", "index_fill", "index_fill_tensor", "masked_fill", "masked_fill_tensor",
    "masked_select", "nonzero_static", "fill", "fill_out", "fill_tensor", "fill_tensor_out", "zero",
    "_unsafe_view", "_reshape_alias", "uniform_", "normal_",
    # arithmetic torch has kernels for
    "add", "add_scalar", "sub", "sub_scalar", "rsub", "rsub_scalar", "mul", "mul_scalar", "outer", "neg", "conj",
    "conj_physical", "abs", "sgn", "addcmul",
    # equality, class tests, reductions to bool, norms
    "eq", "eq_", "eq_scalar_", "ne", "ne_", "ne_scalar_", "isfinite", "isinf", "isnan", "isreal", "all", "any",
    "count_nonzero", "isclose", "linalg_vector_norm", "norm_dim", "dist", "std", "var", "std_mean", "var_mean",
    "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "index_put", "index_add",
})

# rows of several tensors whose result dtype is their promoted one (the others keep self's): complex32 beside a
# wider tensor gives that wider dtype, unrounded
PROMOTING = frozenset({"block_diag", "cat", "stack", "outer", "where"})

# rows whose kernel torch skips for a 0-d input (a copy) or an empty one (nothing to compute or factor)
ZERO_DIM_COPIES = UNSIGNED_ZERO_DIM_COPIES | {"cumsum", "cumprod"}
EMPTY_SKIPS = UNSIGNED_EMPTY_SKIPS | {
    "sum_all", "sum_dim", "prod_all", "prod_dim", "cumsum", "cumprod", "bmm", "addmm", "addmv", "mv", "cholesky",
    "linalg_cholesky_ex", "linalg_det", "linalg_eigh", "linalg_ldl_factor_ex", "linalg_svd", "linalg_lu_solve",
    "linalg_lu", "linalg_lu_factor_ex"}


def _rounded(value: Any) -> Any:
    """A complex64 array rounded to complex32 and read back (one rounding of an intermediate result)."""
    return D.widen(D.to_complex32(value))


def _addcmul(xp: Any, x: Any, t1: Any, t2: Any, value: complex) -> Any:
    """addcmul as torch's ComplexHalf kernel computes it: `self + value * t1 * t2` in complex32 arithmetic, the
    value made complex32 and each product rounded."""
    return x + _rounded(_rounded(_rounded(value) * t1) * t2)


# forwards of rows that torch's ComplexHalf kernels compute otherwise than in complex64 with one rounding; they take
# complex64 arrays of complex32 values (the choke point rounds their result)
FORWARDS = {"addcmul": _addcmul}

# the kernel torch's refusal names where it is not the unsigned dtypes' (ops/unsigned.py) nor "<row>_cpu"
KERNELS = {
    "sum_all": "sum_cpu", "sum_dim": "sum_cpu", "nansum": "sum_cpu", "mean_all": "sum_cpu", "mean_dim": "sum_cpu",
    "prod_all": "prod_out_cpu", "prod_dim": "prod_out_cpu", "cumsum": "cumsum_out_cpu",
    "cumprod": "cumprod_out_cpu", "div": "div_cpu", "div_scalar": "div_cpu", "vdot": "vdot", "exp2": "exp2",
    "pow": "pow", "pow_scalar_base": "pow", "pow_tensor": "pow", "einsum": "sum_cpu", "trace": "trace",
    "addcdiv": "addcdiv_cpu_out", "lerp": "lerp_kernel_scalar", "lerp_tensor": "lerp_kernel_tensor",
    "linalg_svd": "linalg_svd_cpu", "linalg_eigh": "linalg_eigh_cpu", "linalg_eig": "linalg_eig_out_cpu",
    "linalg_lu": "lu_cpu", "linalg_lu_factor_ex": "lu_cpu", "linalg_det": "lu_cpu",
    "linalg_cholesky_ex": "cholesky_cpu",
    "linalg_ldl_factor_ex": "ldl_factor_kernel_cpu", "linalg_ldl_solve": "ldl_solve_kernel_cpu",
    "linalg_lu_solve": "linalg.lu_solve_cpu", "cholesky_inverse": "cholesky_inverse_out_cpu", "put": "take_put_cpu",
    "take": "take_cpu", "scatter_value": "scatter_gather_scalar_cpu", "scatter_add": "scatter_gather_tensor_cpu",
    "native_channel_shuffle": "channel_shuffle", "im2col": "im2col_out_cpu", "logical_not": "logical_not_cpu",
    "flip": "flip_cpu", "matrix_power_zero": "eye", "linalg_qr": "geqrf_cpu", "linalg_solve_ex": "lu_cpu",
    "linalg_householder_product": "orgqr_cpu", "linalg_matrix_exp": "bmm", "logsumexp": "exp_vml_cpu",
    "lu_unpack": "scatter_gather_scalar_cpu", "scatter_reduce_legacy": "scatter_gather_tensor_cpu",
    **{f"{name}": f"{name}_vml_cpu" for name in ("exp", "log", "log10", "log1p", "log2", "sqrt", "expm1", "sin",
                                                  "cos", "tan", "tanh", "asin", "acos", "atan")},
}

_MKL_FFT = "MKL FFT doesn't support tensors of type: Half"
_LOW_PRECISION = "Low precision dtypes not supported. Got ComplexHalf"
# rows whose refusal is a RuntimeError of the op's own checks, before any kernel: its text, of the input's shape
RUNTIME_ERRORS = {
    "fft_c2c": lambda shape: _MKL_FFT, "fft_c2r": lambda shape: _MKL_FFT, "fft_r2c": lambda shape: _MKL_FFT,
    "linalg_inv_ex": lambda shape: f"linalg.inv: {_LOW_PRECISION}",
    "linalg_slogdet": lambda shape: f"linalg.slogdet: {_LOW_PRECISION}",
    "sort": lambda shape: "Sort does not support complex dtypes on CPU",
    "sort_stable": lambda shape: "Sort does not support complex dtypes on CPU",
    "linalg_pinv": lambda shape: f"linalg.pinv(ComplexHalf{{{list(shape)}}}): expected a tensor with 2 or more "
                                 "dimensions of float, double, cfloat or cdouble types",
}


def refuse(row: str, array: Any, params: tuple) -> None:
    """torch's error for row `row` (not in COMPLEX32_ROWS) run on the complex32 `array` with `params`, except for a
    0-d or empty input torch copies or skips, nor for a flip torch does as a copy (it keeps the innermost,
    unit-stride dim in place, as for the unsigned dtypes; a dim of size 1 flips to itself)."""
    if array.ndim == 0 and row in ZERO_DIM_COPIES or array.size == 0 and row in EMPTY_SKIPS:
        return
    if row == "flip" and all(array.strides[d] != array.itemsize or array.shape[d] == 1 for d in params[0]):
        return
    if row in RUNTIME_ERRORS:
        raise RuntimeError(RUNTIME_ERRORS[row](array.shape))
    kernel = KERNELS.get(row) or UNSIGNED_KERNELS.get(row, row + "_cpu")
    name = kernel if isinstance(kernel, str) else kernel(array, params)
    raise NotImplementedError(f"\"{name}\" not implemented for '{D.scalar_type_name(D.complex32)}'")
