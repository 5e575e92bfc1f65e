"""Rule table: reductions and scans (OPS.md section D).

Sums, means, products, extremes, moments (var/std), logsumexp, vector norms, cumulative scans
and medians, with the public functions that reach them under torch's signatures. Torch names
the whole-tensor and the along-`dim` overloads differently (SumBackward0 vs SumBackward1,
MaxBackward1 vs MaxBackward0), so each overload is its own row. Ops that select one element per
slice return `torch.return_types`-style named tuples (values, indices) built by `return_type`.

Rows that reduce several dims take `dim` as a sorted tuple of non-negative dims (None for
"everything"; a 0-d input is reduced over `()`, which leaves it as it is, as torch treats a
scalar); rows along one dim (max(dim), prod(dim), the scans, median(dim)) take an int.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import arange, ones_like, zeros
from .._tensor import Tensor, _wrap_dim
from .._warn import user_stacklevel
from . import arrays as A
from . import complex32
from .pointwise import _refuse_kinds, conj, exp, isnan, logical_not, maximum, minimum, sgn, where
from .registry import apply, defop

# ============================================================================================
# Sums and means
# ============================================================================================

# Note [float16 sums]
# torch's CPU kernels sum float16 in a float32 accumulator (its acc_type) and round the result once, whatever the
# layout. NumPy's float16 add does so only along the contiguous inner axis (its pairwise loop); along any other
# axis it adds into a float16 output element by element, which stalls at 2048 + 1 = 2048 (the column sums of a
# (4096, 2) tensor of ones were 2048). So the float16 sums, cumulative sums and products, variances and norms
# here ask NumPy for a float32 accumulator and round the result once; softmax, log_softmax (ops/nn.py) and
# einsum (ops/linalg.py) run on a float32 copy, as torch's kernels do. logsumexp is torch's composite, rounded
# op by op.


def _accumulator(x: Any, dtype: Any) -> Any:
    """The dtype NumPy sums x in: float32 where the result is float16 (Note [float16 sums]), else `dtype`."""
    if (x.dtype == np.float16 if dtype is None else np.dtype(dtype) == np.float16):
        return np.float32
    return dtype


def _narrowed(summed: Any, accumulator: Any, dtype: Any) -> Any:
    """A sum made in `accumulator` rounded back to float16 where _accumulator widened it."""
    return summed.astype(np.float16) if accumulator is not dtype else summed


@defop("sum_all", node="SumBackward0", params=("dtype",), self="grad.expand(self_shape)",
       jvp="self_t.sum().to(result.dtype)")
def sum_all(xp, x, dtype):
    if not hasattr(x, "strides"):  # not NumPy-like: the standard's function
        return xp.sum(xp.astype(x, xp.int64) if D.kind(x) == "b" else x, dtype=D.native(xp, dtype))
    accumulator = _accumulator(x, dtype)
    return _narrowed(A.reduce(xp, "sum", x, dtype=accumulator), accumulator, dtype)


@defop("sum_dim", node="SumBackward1", params=("dim", "keepdim", "dtype"),
       self="restore_reduced_dims(grad, dim, keepdim, len(self_shape)).expand(self_shape)",
       jvp="self_t.sum(dim, keepdim).to(result.dtype)")
def sum_dim(xp, x, dim, keepdim, dtype):
    if not hasattr(x, "strides"):
        return xp.sum(xp.astype(x, xp.int64) if D.kind(x) == "b" else x, axis=dim, keepdims=keepdim,
                      dtype=D.native(xp, dtype))
    accumulator = _accumulator(x, dtype)
    return _narrowed(A.reduce(xp, "sum", x, dim, keepdim, accumulator), accumulator, dtype)


@defop("nansum", params=("dim", "keepdim", "dtype"),
       self="where(isnan(self), 0.0, restore_reduced_dims(grad, dim, keepdim, self.ndim).expand(self_shape))",
       jvp="where(isnan(self), 0.0, self_t).sum(dim, keepdim).to(result.dtype)")
def nansum_op(xp, x, dim, keepdim, dtype):
    dtype = D.native(xp, dtype)
    accumulator = _accumulator(x, dtype) if hasattr(x, "strides") else dtype
    return _narrowed(A.reduce(xp, "sum", xp.where(xp.isnan(x), 0, x), dim, keepdim, accumulator), accumulator, dtype)


@defop("mean_all", node="MeanBackward0", self="grad.expand(self_shape) / math.prod(self_shape)",
       jvp="self_t.mean()")
def mean_all(xp, x):
    return A.mean(xp, x)


@defop("mean_dim", node="MeanBackward1", params=("dim", "keepdim"),
       self="mean_backward(grad, self_shape, dim, keepdim)", jvp="self_t.mean(dim, keepdim)")
def mean_dim(xp, x, dim, keepdim):
    return A.mean(xp, x, dim, keepdim)


# ============================================================================================
# Products (see Note [products with zeros])
# ============================================================================================


@defop("prod_all", node="ProdBackward0", params=("dtype",),
       self="prod_backward(grad, self, result, None, False)",
       jvp="product_jvp(self_t, self, result, None, False)")
def prod_all(xp, x, dtype):
    return xp.prod(x, dtype=D.native(xp, dtype))


@defop("prod_dim", node="ProdBackward1", params=("dim", "keepdim", "dtype"),
       self="prod_backward(grad, self, result, dim, keepdim)",
       jvp="product_jvp(self_t, self, result, dim, keepdim)")
def prod_dim(xp, x, dim, keepdim, dtype):
    return xp.prod(x, axis=dim if x.ndim else (), keepdims=keepdim, dtype=D.native(xp, dtype))


# ============================================================================================
# Extremes: max/min over everything split the gradient among ties, along a dim it goes to the
# returned index; amax/amin/aminmax split it among each slice's ties
# ============================================================================================


@defop("max_all", node="MaxBackward1", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_read_jvp(self_t, self, result)")
def max_all(xp, x):
    return xp.max(x)


@defop("min_all", node="MinBackward1", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_read_jvp(self_t, self, result)")
def min_all(xp, x):
    return xp.min(x)


@defop("max_dim", node="MaxBackward0", params=("dim", "keepdim"), outputs=("values", "indices"),
       differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def max_dim(xp, x, dim, keepdim):
    return select_along(xp, x, dim, keepdim, lambda: xp.argmax(x, axis=dim, keepdims=True))


@defop("min_dim", node="MinBackward0", params=("dim", "keepdim"), outputs=("values", "indices"),
       differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def min_dim(xp, x, dim, keepdim):
    return select_along(xp, x, dim, keepdim, lambda: xp.argmin(x, axis=dim, keepdims=True))


@defop("amax", params=("dim", "keepdim"),
       self="evenly_distribute_reduced(grad, self, result, dim, keepdim)",
       jvp="amaxamin_jvp(self_t, self, result, dim, keepdim)")
def amax_op(xp, x, dim, keepdim):
    return xp.max(x, axis=dim, keepdims=keepdim)


@defop("amin", params=("dim", "keepdim"),
       self="evenly_distribute_reduced(grad, self, result, dim, keepdim)",
       jvp="amaxamin_jvp(self_t, self, result, dim, keepdim)")
def amin_op(xp, x, dim, keepdim):
    return xp.min(x, axis=dim, keepdims=keepdim)


@defop("aminmax", params=("dim", "keepdim"), outputs=("min", "max"),
       self="evenly_distribute_reduced(grads[0], self, min, dim, keepdim)"
            " + evenly_distribute_reduced(grads[1], self, max, dim, keepdim)",
       jvp="(amaxamin_jvp(self_t, self, min, dim, keepdim), amaxamin_jvp(self_t, self, max, dim, keepdim))")
def aminmax_op(xp, x, dim, keepdim):
    return xp.min(x, axis=dim, keepdims=keepdim), xp.max(x, axis=dim, keepdims=keepdim)


# ============================================================================================
# Moments: `dim` None means every element (torch's formula differs there when dof <= 0)
# ============================================================================================


@defop("var", params=("dim", "correction", "keepdim"),
       self="var_backward(grad, self, dim, correction, keepdim)",
       jvp="var_jvp(self_t, self, dim, correction, keepdim)")
def var_op(xp, x, dim, correction, keepdim):
    return variance(xp, x, dim, correction, keepdim)


@defop("std", params=("dim", "correction", "keepdim"),
       self="var_backward(std_to_var_grad(grad, result), self, dim, correction, keepdim)",
       jvp="std_to_var_grad(var_jvp(self_t, self, dim, correction, keepdim), result)")
def std_op(xp, x, dim, correction, keepdim):
    return variance(xp, x, dim, correction, keepdim, root=True)


@defop("var_mean", params=("dim", "correction", "keepdim"), outputs=2,
       self="var_backward(grads[0], self, dim, correction, keepdim)"
            " + mean_backward(grads[1], self.shape, dim, keepdim)",
       jvp="(var_jvp(self_t, self, dim, correction, keepdim), self_t.mean(dim, keepdim))")
def var_mean_op(xp, x, dim, correction, keepdim):
    return variance(xp, x, dim, correction, keepdim), A.mean(xp, x, dim, keepdim)


@defop("std_mean", params=("dim", "correction", "keepdim"), outputs=("result0", "result1"),
       self="var_backward(std_to_var_grad(grads[0], result0), self, dim, correction, keepdim)"
            " + mean_backward(grads[1], self.shape, dim, keepdim)",
       jvp="(std_to_var_grad(var_jvp(self_t, self, dim, correction, keepdim), result0), self_t.mean(dim, keepdim))")
def std_mean_op(xp, x, dim, correction, keepdim):
    return variance(xp, x, dim, correction, keepdim, root=True), A.mean(xp, x, dim, keepdim)


# ============================================================================================
# logsumexp and vector norms
# ============================================================================================


@defop("logsumexp", params=("dim", "keepdim", "stored"), promote="float",
       self="logsumexp_backward(grad, self, result, dim, keepdim)",
       jvp="logsumexp_jvp(self_t, self, dim, keepdim)")
def logsumexp_op(xp, x, dim, keepdim, stored):
    """log(sum(exp(x - max))) + max. torch composes it of ops (amax, sub, exp_, sum, log_, add_), so for a bfloat16
    or float16 input (`stored`, its NumPy type) each step's result is rounded to it; the sum still accumulates in
    float32 (Note [float16 sums]; bfloat16 comes widened, Note [bfloat16] in _dtype.py)."""
    if stored is not None:
        x = A.astype(xp, x, np.float32, copy=False)

    def rounded(a: Any) -> Any:
        return a if stored is None else A.astype(xp, A.astype(xp, a, stored), np.float32, copy=False)

    shift = A.max_from(xp, x, dim, True, -math.inf)
    shift = xp.where(xp.isfinite(shift), shift, 0)  # all -inf (or inf) slices: no shift
    with np.errstate(divide="ignore"):
        sums = rounded(xp.sum(rounded(xp.exp(rounded(x - shift))), axis=dim, keepdims=True))
        out = rounded(xp.log(sums)) + shift
    if stored is not None:
        out = A.astype(xp, out, stored, copy=False)
    return out if keepdim else A.reshape(xp, out, [n for i, n in enumerate(x.shape) if i not in dim])


@defop("linalg_vector_norm", params=("ord", "dim", "keepdim"),
       self="norm_backward(grad, self, result, ord, dim, keepdim)",
       jvp="norm_jvp(self_t, self, result, ord, dim, keepdim)")
def vector_norm_op(xp, x, ord, dim, keepdim):  # noqa: A002
    if ord == 2 and type(x) is np.ndarray and x.dtype in _DOT_DTYPES and x.size:
        squares = _rows_squared_norms(x, dim)
        if squares is not None:
            return np.asarray(np.sqrt(squares if keepdim else squares.reshape(
                () if dim is None else tuple(n for i, n in enumerate(x.shape) if i not in dim))))
    a = xp.abs(x)
    dtype = a.dtype
    if dtype == np.float16:  # summed in float32 (Note [float16 sums]), powers too, as torch's kernel
        a = a.astype(np.float32)
    if x.ndim == 0:  # a 0-d tensor reduces over its (one-element) dim 0 to a 0-d norm
        dim = None
    with np.errstate(divide="ignore"):
        if ord == 2:
            out = xp.sqrt(xp.sum(a * a, axis=dim, keepdims=keepdim))
        elif ord == math.inf:
            out = A.max_from(xp, a, dim, keepdim, 0)
        elif ord == -math.inf:
            out = xp.min(a, axis=dim, keepdims=keepdim)
        elif ord == 0:
            out = xp.count_nonzero(a, axis=dim, keepdims=keepdim)
        elif ord == 1:
            out = xp.sum(a, axis=dim, keepdims=keepdim)
        else:
            out = xp.sum(a**ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)
    return A.astype(xp, xp.asarray(out), dtype, copy=False)


_DOT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _rows_squared_norms(x: np.ndarray, dim: tuple[int, ...] | None) -> np.ndarray | None:
    """The sum of squares over all dims or the last one, size-1 dims kept: one dot per row along the last axis
    (no temporary of x's size; |x| and its square took two, 1.27 against 0.16 ms for 10000 x 200 float32), the
    rows' sums then added pairwise as np.sum does; None for other dims."""
    last = x.ndim - 1
    if dim is None or len(dim) == x.ndim:
        rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
        return np.vecdot(rows, rows).sum().reshape((1,) * x.ndim)
    if tuple(dim) == (last,):
        return np.vecdot(x, x)[..., None]
    return None


# ============================================================================================
# Scans
# ============================================================================================


@defop("cumsum", params=("dim", "dtype"), self="reversed_cumsum(grad, dim)",
       jvp="self_t.cumsum(dim).to(result.dtype)")
def cumsum_op(xp, x, dim, dtype):
    if not hasattr(x, "strides") and D.kind(x) == "b":  # the standard sums numbers only
        x = xp.astype(x, xp.int64)
    dtype = D.native(xp, dtype)
    accumulator = _accumulator(x, dtype) if hasattr(x, "strides") else dtype
    return _narrowed(_running(xp, "sum", x, dim, accumulator), accumulator, dtype)


@defop("cumprod", params=("dim", "dtype"), self="cumprod_backward(grad, self, result, dim)",
       jvp="cumprod_jvp(self_t, self, result, dim)")
def cumprod_op(xp, x, dim, dtype):
    dtype = D.native(xp, dtype)
    accumulator = _accumulator(x, dtype) if hasattr(x, "strides") else dtype
    return _narrowed(_running(xp, "prod", x, dim, accumulator), accumulator, dtype)


def _running(xp: Any, kind: str, x: Any, dim: int, dtype: Any) -> Any:
    """The cumulative sum or product ("sum", "prod") of x along dim in dtype: NumPy's arrays through the ufunc's
    accumulate (Note [reductions through the ufunc] in ops/arrays.py), others through the standard's function."""
    flat = A.reshape(xp, x, -1) if x.ndim == 0 else x
    if type(flat) is np.ndarray:
        out = (np.add if kind == "sum" else np.multiply).accumulate(flat, axis=dim, dtype=dtype)
    else:
        out = getattr(xp, f"cumulative_{kind}")(flat, axis=dim, dtype=dtype)
    return A.reshape(xp, out, x.shape)


@defop("cummax", params=("dim",), outputs=("values", "indices"), differentiable_outputs=(0,),
       self="cummaxmin_backward(grad, self_shape, indices, dim)", jvp="gather_reduced(self_t, dim, indices, True)")
def cummax_op(xp, x, dim):
    return running_extreme(xp, x, dim, "maximum")


@defop("cummin", params=("dim",), outputs=("values", "indices"), differentiable_outputs=(0,),
       self="cummaxmin_backward(grad, self_shape, indices, dim)", jvp="gather_reduced(self_t, dim, indices, True)")
def cummin_op(xp, x, dim):
    return running_extreme(xp, x, dim, "minimum")


# ============================================================================================
# Medians: over everything the gradient is split among ties; along a dim it goes to the index
# ============================================================================================


@defop("median_all", node="MedianBackward0", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_read_jvp(self_t, self, result)")
def median_all(xp, x):
    return median_along(xp, A.reshape(xp, x, -1), 0, False, ignore_nan=False)[0]


@defop("nanmedian_all", node="NanmedianBackward0", self="evenly_distribute_backward(grad, self, result)",
       jvp="evenly_read_jvp(self_t, self, result)")
def nanmedian_all(xp, x):
    return median_along(xp, A.reshape(xp, x, -1), 0, False, ignore_nan=True)[0]


@defop("median_dim", node="MedianBackward1", params=("dim", "keepdim"), outputs=("values", "indices"),
       differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def median_dim(xp, x, dim, keepdim):
    return median_along(xp, x, dim, keepdim, ignore_nan=False)


@defop("nanmedian_dim", node="NanmedianBackward1", params=("dim", "keepdim"), outputs=("values", "indices"),
       differentiable_outputs=(0,),
       self="value_selecting_reduction_backward(grad, dim, indices, self_shape, keepdim)",
       jvp="gather_reduced(self_t, dim, indices, keepdim)")
def nanmedian_dim(xp, x, dim, keepdim):
    return median_along(xp, x, dim, keepdim, ignore_nan=True)


# ============================================================================================
# Indices, counts and logic: no gradient (no formula, so no node is ever recorded)
# ============================================================================================


@defop("argmax", params=("dim", "keepdim"))
def argmax_op(xp, x, dim, keepdim):
    return index_of_extreme(xp, x, dim, keepdim, xp.argmax)


@defop("argmin", params=("dim", "keepdim"))
def argmin_op(xp, x, dim, keepdim):
    return index_of_extreme(xp, x, dim, keepdim, xp.argmin)


@defop("count_nonzero", params=("dim",))
def count_nonzero_op(xp, x, dim):
    return xp.asarray(xp.count_nonzero(x, axis=dim), dtype=xp.int64)


# torch's hash_tensor has no derivative (no formula: its uint64 result is never differentiable)
@defop("hash_tensor", params=("dim", "keepdim"))
def hash_tensor_op(xp, x, dim, keepdim):
    """Each element's bits as a uint64 (floats widened to float64, integers and bools to int64 first), xor-reduced over
    `dim` (None: every dim): torch's mode 0. Reinterpreting bits is NumPy's ndarray.view (the standard has none)."""
    wide = A.astype(xp, x, D.float64 if D.kind(x) in "f" else D.int64, copy=False)
    return xp.bitwise_xor.reduce(wide.view(np.uint64), axis=dim, keepdims=keepdim)


@defop("all", params=("dim", "keepdim"))
def all_op(xp, x, dim, keepdim):
    return _bytes_stay_bytes(xp, x, xp.all(x, axis=dim, keepdims=keepdim))


@defop("any", params=("dim", "keepdim"))
def any_op(xp, x, dim, keepdim):
    return _bytes_stay_bytes(xp, x, xp.any(x, axis=dim, keepdims=keepdim))


@defop("_is_all_true")
def is_all_true_op(xp, x):
    return xp.all(x)


@defop("_is_any_true")
def is_any_true_op(xp, x):
    return xp.any(x)


def _bytes_stay_bytes(xp, x, truth):
    """all/any of a uint8 tensor answer 0 or 1 in uint8, as torch's do (the byte masks from before torch.bool)."""
    return A.astype(xp, truth, np.uint8) if D.of_array(x) is D.uint8 else truth


# ============================================================================================
# Forward helpers (NumPy)
# ============================================================================================


def select_along(xp, x, dim: int, keepdim: bool, pick) -> tuple:
    """(values, indices) of one element per slice along dim; `pick()` gives the kept-dim indices."""
    if x.ndim == 0:
        return A.copy(xp, x), xp.zeros((), dtype=xp.int64, device=x.device)
    idx = pick()
    values = xp.take_along_axis(x, idx, axis=dim)
    if keepdim:
        return values, idx
    if hasattr(values, "strides"):
        return values.squeeze(dim), idx.squeeze(dim)  # NumPy's methods skip its functions' Python wrappers
    return xp.squeeze(values, axis=dim), xp.squeeze(idx, axis=dim)


def index_of_extreme(xp, x, dim: int | Sequence[int] | None, keepdim: bool, find) -> object:
    """argmax/argmin over one dim or several (flattened in order, as over everything)."""
    if x.ndim == 0:
        return xp.zeros((), dtype=xp.int64, device=x.device)
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = xp.permute_dims(x, tuple(kept) + dims)
    flat = A.reshape(xp, moved, moved.shape[:len(kept)] + (math.prod(x.shape[d] for d in dims),))
    out = find(flat, axis=-1)
    if type(x) is not np.ndarray and D.kind(x) in "fc":  # CuPy's argmax skips NaN: torch and NumPy take the first
        nan = A.astype(xp, xp.isnan(flat), xp.int8)
        out = xp.where(xp.any(nan == 1, axis=-1), xp.argmax(nan, axis=-1), out)
    return A.reshape(xp, out, [1 if d in dims else n for d, n in enumerate(x.shape)]) if keepdim else out


def variance(xp, x, dim: tuple | None, correction: float, keepdim: bool, root: bool = False):
    """Sum of squared deviations over (count - correction), as torch: a divisor <= 0 gives inf/nan; its square root
    with `root`. float16 is computed in float32 and rounded once, as torch's kernel (Note [float16 sums])."""
    half = hasattr(x, "strides") and x.dtype == np.float16
    if half:
        x = x.astype(np.float32)
    deviation = x - A.mean(xp, x, dim, True)
    squares = (deviation * xp.conj(deviation)).real if D.kind(x) == "c" else deviation * deviation
    divisor = builtins.max(reduced_numel(x.shape, dim) - correction, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        divisor = xp.asarray(divisor, dtype=squares.dtype, device=squares.device)
        out = xp.sum(squares, axis=dim, keepdims=keepdim) / divisor
    if root:
        out = xp.sqrt(out)
    return out.astype(np.float16) if half else out


def _complex32_variance(xp, z, dim: tuple | None, correction: float, keepdim: bool):
    """torch's variance of complex32 values `z` (given as complex64): each part's variance rounded to float16, the
    two summed in float16 (Note [complex32 kernels])."""
    real, imag = (variance(xp, part, dim, correction, keepdim).astype(np.float16) for part in (z.real, z.imag))
    return real + imag


def _complex32_mean(xp, z, dim: tuple | None, keepdim: bool):
    """torch's mean of complex32 values `z` beside their variance: each part's float16 mean (Note [complex32
    kernels])."""
    real, imag = (A.mean(xp, part, dim, keepdim).astype(np.float16) for part in (z.real, z.imag))
    return D.to_complex32(real + 1j * imag.astype(np.complex64))


complex32.FORWARDS.update(
    var=_complex32_variance,
    std=lambda xp, z, *params: np.sqrt(_complex32_variance(xp, z, *params)),
    var_mean=lambda xp, z, dim, correction, keepdim: (_complex32_variance(xp, z, dim, correction, keepdim),
                                                      _complex32_mean(xp, z, dim, keepdim)),
    std_mean=lambda xp, z, dim, correction, keepdim: (np.sqrt(_complex32_variance(xp, z, dim, correction, keepdim)),
                                                      _complex32_mean(xp, z, dim, keepdim)))


def running_extreme(xp, x, dim: int, extreme) -> tuple:
    """cummax/cummin: values and the index of the latest element equal to the running extreme.

    An element takes over when it ties the extreme (so ties report the last index) or is NaN;
    once NaN, the extreme stays NaN.
    """
    line = A.reshape(xp, x, -1) if x.ndim == 0 else x
    values = A.accumulate(xp, extreme, line, dim)
    takes_over = (line == values) | (xp.isnan(line) if D.kind(line) in "fc" else False)
    positions = A.reshape(xp, xp.arange(line.shape[dim], device=x.device), (-1,) + (1,) * (line.ndim - dim - 1))
    indices = A.accumulate(xp, "maximum", xp.where(takes_over, positions, xp.zeros_like(positions)), dim)
    return A.reshape(xp, values, x.shape), A.reshape(xp, A.astype(xp, indices, xp.int64), x.shape)


def median_along(xp, x, dim: int, keepdim: bool, ignore_nan: bool) -> tuple:
    """torch's median: the lower middle of each slice in stable sorted order (equal values keep
    their order, so ties resolve by position). median() returns a slice's first NaN if it has
    one; nanmedian() takes the middle of the non-NaN values (and index 0 of an all-NaN slice).
    An empty input has median NaN."""
    if x.ndim == 0:
        return A.copy(xp, x), xp.zeros((), dtype=xp.int64, device=x.device)
    if x.size == 0 and x.ndim == 1:
        return xp.asarray(math.nan, dtype=x.dtype, device=x.device), xp.zeros((), dtype=xp.int64, device=x.device)
    nan = xp.isnan(x) if D.kind(x) in "fc" else xp.full(x.shape, False, device=x.device)
    order = A.argsort(xp, x, dim)  # NaN last
    if ignore_nan:
        valid = x.shape[dim] - xp.count_nonzero(nan, axis=dim, keepdims=True)
        middle = xp.maximum(valid - 1, 0) // 2
    else:
        middle = xp.full(x.shape[:dim] + (1,) + x.shape[dim + 1:], (x.shape[dim] - 1) // 2, device=x.device)
    idx = xp.take_along_axis(order, middle, axis=dim)
    if not ignore_nan:
        first_nan = xp.argmax(A.astype(xp, nan, xp.int8), axis=dim, keepdims=True)
        idx = xp.where(xp.any(nan, axis=dim, keepdims=True), first_nan, idx)
    return select_along(xp, x, dim, keepdim, lambda: A.astype(xp, idx, xp.int64))


# ============================================================================================
# Formula helpers
# ============================================================================================


def restore_reduced_dims(grad: Tensor, dim: int | Sequence[int] | None, keepdim: bool, ndim: int) -> Tensor:
    """Put back, as size-1 dims, the dims a reduction removed (so grad broadcasts to the input)."""
    if keepdim or ndim == 0:
        return grad
    dims = range(ndim) if dim is None else sorted(dim) if isinstance(dim, Sequence) else (dim,)
    for d in dims:
        grad = grad.unsqueeze(d)
    return grad


def reduced_numel(shape: Sequence[int], dim: Sequence[int] | None) -> int:
    """How many elements each output of a reduction over `dim` combines."""
    return math.prod(shape) if dim is None else math.prod(shape[d] for d in dim)


def mean_backward(grad: Tensor, self_shape: tuple, dim: Sequence[int] | None, keepdim: bool) -> Tensor:
    """The gradient of a mean: grad spread evenly over the elements each output averaged."""
    return restore_reduced_dims(grad, dim, keepdim, len(self_shape)).expand(self_shape) / reduced_numel(self_shape, dim)


def evenly_distribute_backward(grad: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """max()/min()/median() over everything: the gradient is split evenly among the elements
    equal to the result (among the NaNs when the result is NaN)."""
    mask = (self == result) | (self.isnan() & result.isnan())
    return mask * (grad / mask.sum())


def evenly_read_jvp(t: Tensor, self: Tensor, result: Tensor) -> Tensor:
    """Tangent of max()/min()/median() over everything: the mean tangent of the elements equal to
    the result (NaN when the result is NaN, as in torch)."""
    mask = self == result
    return (mask * (t / mask.sum())).sum()


def evenly_distribute_reduced(grad: Tensor, self: Tensor, result: Tensor, dim: Sequence[int] | None,
                              keepdim: bool) -> Tensor:
    """amax/amin along dims: each slice's gradient split evenly among its tied extremes."""
    ndim = self.ndim
    mask = self == restore_reduced_dims(result, dim, keepdim, ndim)
    count = mask.sum(tuple(range(ndim)) if dim is None else dim, keepdim=True)
    return mask * (restore_reduced_dims(grad, dim, keepdim, ndim) / count)


def amaxamin_jvp(t: Tensor, self: Tensor, result: Tensor, dim: Sequence[int] | None, keepdim: bool) -> Tensor:
    """Tangent of amax/amin: each slice's mean tangent over its tied extremes."""
    mask = self == restore_reduced_dims(result, dim, keepdim, self.ndim)
    dims = tuple(range(self.ndim)) if dim is None else dim
    return where(mask, t, 0.0).sum(dims, keepdim=keepdim) / mask.sum(dims, keepdim=keepdim)


def value_selecting_reduction_backward(grad: Tensor, dim: int, indices: Tensor, self_shape: tuple,
                                       keepdim: bool) -> Tensor:
    """max(dim)/median(dim)/sort/topk/...: each gradient goes to the selected index only."""
    if len(self_shape) == 0:
        return grad
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter(dim, indices, grad)


def gather_reduced(t: Tensor, dim: int, indices: Tensor, keepdim: bool) -> Tensor:
    """The forward-mode counterpart: pick each slice's tangent at the selected index."""
    if t.ndim == 0:
        return t
    out = t.gather(dim, indices if keepdim else indices.unsqueeze(dim))
    return out if keepdim else out.squeeze(dim)


def cummaxmin_backward(grad: Tensor, self_shape: tuple, indices: Tensor, dim: int) -> Tensor:
    """cummax/cummin: every output's gradient goes to the element it copied (they add up)."""
    if len(self_shape) == 0:
        return grad
    return zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter_add(dim, indices, grad)


def reversed_cumsum(t: Tensor, dim: int) -> Tensor:
    """out[i] = sum of t[j] for j >= i along dim (the adjoint of cumsum)."""
    if t.ndim == 0 or t.shape[dim] <= 1:
        return t
    backwards = arange(t.shape[dim] - 1, -1, -1, device=t.device)
    return t.index_select(dim, backwards).cumsum(dim).index_select(dim, backwards)


# Note [products with zeros]
# d prod(x) / dx_k is the product of the other elements. Dividing the result by x_k gives it only
# when no element is zero, which is the fast path (torch's too). With zeros, cumprod_backward
# works slice by slice on the first zero z: before z the division is safe for the outputs that
# precede z; the contributions of outputs after z carry x_z as a factor, so they equal x_z times
# the gradient of the same cumprod with x_z replaced by 1 (a recursion that ends when no zeros
# are left). Written this way every derivative of every order is right, not only the value.
# prod's gradient is the gradient of the last cumprod output.


def cumprod_backward(grad: Tensor, self: Tensor, result: Tensor, dim: int) -> Tensor:
    """The gradient of cumprod along dim, exact with any number of zeros (Note [products with zeros])."""
    if self.ndim == 0 or self.shape[dim] <= 1:
        return grad
    zero = self == 0
    if not zero.any():
        return reversed_cumsum(grad * conj(result), dim) / conj(self)
    zeros_so_far = zero.cumsum(dim)
    first_zero = zero & (zeros_so_far == 1)
    before = zeros_so_far == 0
    unzeroed = where(first_zero, 1.0, self)
    later = cumprod_backward(grad, unzeroed, unzeroed.cumprod(dim), dim)
    early = where(before, reversed_cumsum(where(before, grad * conj(result), 0.0), dim)
                  / conj(where(before, self, 1.0)), 0.0)
    pivot = (self * first_zero).sum(dim, keepdim=True)  # x_z itself: 0, but kept in the graph
    return where(first_zero, later, early + conj(pivot) * (later - early))


def cumprod_jvp(t: Tensor, self: Tensor, result: Tensor, dim: int) -> Tensor:
    """Tangent of cumprod: result * cumsum(t / x) before the first zero; from the first zero on,
    only the zero's own tangent survives: cumprod of x with x_z replaced by t_z."""
    if self.ndim == 0:
        return t
    zero = self == 0
    if not zero.any():
        return (t / self).cumsum(dim) * result
    first_zero = zero & (zero.cumsum(dim) == 1)
    after = first_zero.cumsum(dim) > 0
    return where(after, where(first_zero, t, self).cumprod(dim), (t / where(zero, 1.0, self)).cumsum(dim) * result)


def prod_backward(grad: Tensor, self: Tensor, result: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """The gradient of prod (over everything when dim is None), zero-safe (Note [products with zeros])."""
    if self.ndim == 0:
        return grad
    g = restore_reduced_dims(grad, dim, keepdim, self.ndim)
    if self.numel() == 0:
        return g.expand(self.shape)
    if not (self == 0).any():
        return g * conj(restore_reduced_dims(result, dim, keepdim, self.ndim) / self)
    x, d = (self.reshape(-1), 0) if dim is None else (self, dim)
    n = x.shape[d]
    last = (arange(n, device=self.device) == n - 1).reshape([n if i == d else 1 for i in range(x.ndim)])
    out = cumprod_backward(where(last, g.reshape([1] * x.ndim) if dim is None else g, 0.0), x, x.cumprod(d), d)
    return out.reshape(self.shape)


def product_jvp(t: Tensor, self: Tensor, result: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """Tangent of prod: the tangent weighted by the product of the other elements."""
    weights = conj(prod_backward(ones_like(result), self, result, dim, keepdim))
    return (weights * t).sum(tuple(range(self.ndim)) if dim is None else dim, keepdim=keepdim)


def var_backward(grad: Tensor, self: Tensor, dim: Sequence[int] | None, correction: float, keepdim: bool) -> Tensor:
    """2 / (N - correction) * (x - mean) * grad; over everything with N <= correction, torch gives
    nan where x equals the mean and inf elsewhere."""
    dof = reduced_numel(self.shape, dim) - correction
    if dim is None and dof <= 0:
        return grad * where(self == self.mean(), math.nan, math.inf)
    g = restore_reduced_dims(grad, dim, keepdim, self.ndim)
    centered = self - (self.mean() if dim is None else self.mean(dim, keepdim=True))
    return (2.0 / dof if dof else math.inf) * g * centered


def var_jvp(t: Tensor, self: Tensor, dim: Sequence[int] | None, correction: float, keepdim: bool) -> Tensor:
    """Tangent of var: 2 / (N - correction) * sum(Re(conj(x - mean) * t))."""
    dof = reduced_numel(self.shape, dim) - correction
    centered = self - (self.mean() if dim is None else self.mean(dim, keepdim=True))
    dims = tuple(range(self.ndim)) if dim is None else dim
    return (2.0 / dof if dof else math.inf) * (conj(centered) * t).real.sum(dims, keepdim=keepdim)


def std_to_var_grad(grad: Tensor, std: Tensor) -> Tensor:
    """d std = d var / (2 std), and 0 where std is 0 (torch's subgradient)."""
    return where(std == 0, 0.0, grad / (2 * std))


def logsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Sequence[int], keepdim: bool) -> Tensor:
    """grad * softmax(self) along dim, as exp(self - result)."""
    ndim = self.ndim
    g = restore_reduced_dims(grad, dim, keepdim, ndim)
    return g * conj(exp(self - restore_reduced_dims(result, dim, keepdim, ndim)))


def logsumexp_jvp(t: Tensor, self: Tensor, dim: Sequence[int], keepdim: bool) -> Tensor:
    """Tangent of logsumexp: the softmax-weighted mean of the tangent (NaN over an empty dim, as in torch). A complex
    input is shifted by the largest real part, as torch's forward does (there is no max of complex numbers)."""
    weights = exp(self - self.real.amax(dim, keepdim=True)) if self.numel() else exp(self)
    return (weights * t).sum(dim, keepdim=keepdim) / weights.sum(dim, keepdim=keepdim)


def norm_backward(grad: Tensor, self: Tensor, result: Tensor, ord: float, dim: Sequence[int] | None,
                  keepdim: bool) -> Tensor:  # noqa: A002
    """Gradient of the vector p-norm, with torch's choices at 0 (gradient 0 where the norm is 0)."""
    ndim = self.ndim
    g = restore_reduced_dims(grad, dim, keepdim, ndim)
    r = restore_reduced_dims(result, dim, keepdim, ndim)
    if ord == 0:
        return self * 0
    if ord == 1:
        return sgn(self) * g
    if ord == 2:
        return g * where(r == 0, 0.0, self / r)
    if math.isinf(ord):
        a = self.abs()
        mask = (a == r) | a.isnan()
        return sgn(self) * (mask * (g / mask.sum(tuple(range(ndim)) if dim is None else dim, keepdim=True)))
    if ord < 1:
        return where(self == 0, 0.0, sgn(self) * self.abs().pow(ord - 1)) * g * r.pow(1 - ord)
    scale = where(r == 0, 0.0, g / r.pow(ord - 1))
    if ord < 2:
        return sgn(self) * self.abs().pow(ord - 1) * scale
    return self * self.abs().pow(ord - 2) * scale


def norm_jvp(t: Tensor, self: Tensor, result: Tensor, ord: float, dim: Sequence[int] | None,
             keepdim: bool) -> Tensor:  # noqa: A002
    """Tangent of the p-norm: Re(sum(conj(d norm / dx) * t)), from the VJP with a unit cotangent."""
    weights = norm_backward(result * 0 + 1, self, result, ord, dim, keepdim)
    return (conj(weights) * t).real.sum(tuple(range(self.ndim)) if dim is None else dim, keepdim=keepdim)


# ============================================================================================
# Public functions
# ============================================================================================


def return_type(name: str, fields: Sequence[str]) -> type:
    """A named tuple that prints like torch's `torch.return_types.<name>` (fields one per line)."""

    def __repr__(self: tuple) -> str:  # noqa: N807
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{body})"

    return type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": __repr__})


return_types_max = return_type("max", ("values", "indices"))
return_types_min = return_type("min", ("values", "indices"))
return_types_aminmax = return_type("aminmax", ("min", "max"))
return_types_cummax = return_type("cummax", ("values", "indices"))
return_types_cummin = return_type("cummin", ("values", "indices"))
return_types_median = return_type("median", ("values", "indices"))
return_types_nanmedian = return_type("nanmedian", ("values", "indices"))


def _dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """Normalise `dim` (int, sequence or None) to a sorted tuple of non-negative dims."""
    if dim is None:
        return None
    if isinstance(dim, (int, np.integer)) or (isinstance(dim, Tensor) and dim.ndim == 0):
        return (_wrap_dim(dim, ndim),)
    out = tuple(sorted({_wrap_dim(d, ndim) for d in dim}))
    if len(out) != len(tuple(dim)):
        raise RuntimeError(f"dim {_wrap_dim(next(iter(dim)), ndim)} appears multiple times in the list of dims")
    return out


def _reduced_dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """The dims a row reduces: `dim` normalised, every dim for None or (), none for a 0-d input."""
    dims = _dims(dim, ndim)
    if ndim == 0:
        return ()
    return tuple(range(ndim)) if not dims else dims


def _whole(dim: object) -> bool:
    """Whether `dim` asks for a reduction over everything (None or an empty list)."""
    return dim is None or (not isinstance(dim, (int, Tensor)) and len(dim) == 0)


def _accumulate_dtype(input: Tensor, dtype: D.dtype | None, kernel: str, bool_loop: bool = True) -> object:
    """The NumPy dtype sums and products accumulate in: `dtype`, or int64 for integer/bool input. torch's `kernel`
    has no wide unsigned accumulator (Note [unsigned dtypes]), and the scans' none for bool (`bool_loop`)."""
    if dtype is not None:
        D.refuse_unsigned(kernel, dtype)
        if dtype is D.bool_ and not bool_loop:
            raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
        return dtype.np
    data = input._data
    if type(data) is np.ndarray and data.dtype.kind in "fc":  # the common case, without the dtype look-up
        return None
    return D.int64.np if input.dtype.category < 2 else None


def _require_floating(input: Tensor, what: str) -> None:
    if input.dtype.category < 2:
        raise RuntimeError(f"{what}(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {D.scalar_type_name(input.dtype)}")


def _require_nonempty_dim(input: Tensor, d: int, name: str) -> None:
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


class _DimOmitted:
    """The default of `dim` in sum and mean. torch takes another overload when dim=None is passed (SumBackward1,
    MeanBackward1: the dim list's) than when dim is left out (SumBackward0, MeanBackward0), so the two differ."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


_DIM_OMITTED: Any = _DimOmitted()


def sum(input: Tensor, dim: int | Sequence[int] | None = _DIM_OMITTED, keepdim: bool = False, *,  # noqa: A001
        dtype: D.dtype | None = None) -> Tensor:
    """Sum over all elements or along `dim` (int and bool inputs sum in int64)."""
    accumulate = _accumulate_dtype(input, dtype, "sum_cpu")
    if dim is _DIM_OMITTED:
        if not keepdim:
            return apply(sum_all, (input,), (accumulate,))
        dim = None
    return apply(sum_dim, (input,), (_reduced_dims(dim, input.ndim), keepdim, accumulate))


def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: D.dtype | None = None) -> Tensor:
    """Sum treating NaN as zero (NaNs get no gradient)."""
    accumulate = _accumulate_dtype(input, dtype, "sum_cpu")
    return apply(nansum_op, (input,), (_reduced_dims(dim, input.ndim), keepdim, accumulate))


def mean(input: Tensor, dim: int | Sequence[int] | None = _DIM_OMITTED, keepdim: bool = False, *,
         dtype: D.dtype | None = None) -> Tensor:
    """Arithmetic mean over all elements or along `dim` (floating or complex input only)."""
    if dtype is not None:
        input = input.to(dtype)
    _require_floating(input, "mean")
    if dim is _DIM_OMITTED:
        if not keepdim:
            return apply(mean_all, (input,))
        dim = None
    return apply(mean_dim, (input,), (_reduced_dims(dim, input.ndim), keepdim))


def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: D.dtype | None = None) -> Tensor:
    """Mean of the non-NaN elements (torch composes it: nansum / count, a DivBackward0 node)."""
    if input.dtype.category < 2:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{D.scalar_type_name(input.dtype)}")
    count = sum(logical_not(isnan(input)), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:
    """Product of all elements or along `dim`; the gradient is exact with zeros."""
    accumulate = _accumulate_dtype(input, dtype, "prod_out_cpu")
    if dim is None:
        return apply(prod_all, (input,), (accumulate,))
    if not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    return apply(prod_dim, (input,), (_wrap_dim(dim, input.ndim), keepdim, accumulate))


def _extreme(input: Tensor, dim: object, keepdim: bool, name: str, whole: object, along: object,
             result_type: type) -> Tensor | tuple:
    if isinstance(dim, Tensor) or (dim is not None and not isinstance(dim, int)):  # max(x, other), 0-d other too
        return (maximum if name == "max" else minimum)(input, dim)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return apply(whole, (input,))
    d = _wrap_dim(int(dim), input.ndim)
    _require_nonempty_dim(input, d, name)
    return result_type(*apply(along, (input,), (d, keepdim)))


def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Tensor | tuple:  # noqa: A001
    """max(x): the largest element; max(x, dim): (values, indices); max(x, y): elementwise."""
    return _extreme(input, dim, keepdim, "max", max_all, max_dim, return_types_max)


def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Tensor | tuple:  # noqa: A001
    """min(x): the smallest element; min(x, dim): (values, indices); min(x, y): elementwise."""
    return _extreme(input, dim, keepdim, "min", min_all, min_dim, return_types_min)


def _extreme_dims(input: Tensor, dim: int | Sequence[int], name: str, prefix: str) -> tuple[int, ...] | None:
    """amax/amin/aminmax's dims, with torch's errors for reductions over nothing."""
    dims = _dims(dim, input.ndim) if not _whole(dim) else None
    if dims is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return None
    for d in dims:
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"{prefix} Expected reduction dim {d} to have non-zero size.")
    return dims if input.ndim else ()


def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """Largest values along dims (all dims if empty); ties share the gradient evenly."""
    return apply(amax_op, (input,), (_extreme_dims(input, dim, "amax", "amax():"), keepdim))


def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """Smallest values along dims (all dims if empty); ties share the gradient evenly."""
    return apply(amin_op, (input,), (_extreme_dims(input, dim, "amin", "amin():"), keepdim))


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> tuple:
    """(min, max) in one pass, over everything or along `dim`; ties share each gradient evenly."""
    if dim is None and input._data.size == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    dims = None if dim is None else _extreme_dims(input, dim, "aminmax", "aminmax:")
    if dim is None and keepdim:
        dims = tuple(range(input.ndim))
    return return_types_aminmax(*apply(aminmax_op, (input,), (dims, keepdim)))


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value, the first on ties (no gradient)."""
    return _arg_extreme(input, dim, keepdim, "argmax", argmax_op)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value, the first on ties (no gradient)."""
    return _arg_extreme(input, dim, keepdim, "argmin", argmin_op)


def _arg_extreme(input: Tensor, dim: int | None, keepdim: bool, name: str, op: object) -> Tensor:
    if dim is None:
        if input._data.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return apply(op, (input,), (None, keepdim))
    d = _wrap_dim(dim, input.ndim)
    _require_nonempty_dim(input, d, name)
    return apply(op, (input,), (d, keepdim))


def _correction(name: str, input: Tensor, dim: object, unbiased: bool | None, correction: float | None,
                keepdim: bool) -> tuple:
    """Resolve var/std's overloads (dim, unbiased, keepdim | dim, correction=, keepdim=) to row params."""
    if isinstance(dim, bool):  # torch.var(x, True): the legacy (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both 'unbiased' and "
                        "'correction'")
    if input.dtype.category < 2:
        raise RuntimeError(f"{name if name.endswith('_mean') else 'std and var'} only support floating point and "
                           "complex dtypes")
    correction = (1 if unbiased is None or unbiased else 0) if correction is None else correction
    dims = None if dim is None and not keepdim else _reduced_dims(dim, input.ndim)
    if reduced_numel(input.shape, dims) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel). (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/ReduceOps.cpp:1861.)", UserWarning,
                      stacklevel=user_stacklevel())
    return dims, correction, keepdim


def var(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None) -> Tensor:
    """Variance with divisor N - correction (correction=1 by default; unbiased=False means 0)."""
    return apply(var_op, (input,), _correction("var", input, dim, unbiased, correction, keepdim))


def std(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None) -> Tensor:
    """Standard deviation, the square root of var (gradient 0 where it is 0)."""
    return apply(std_op, (input,), _correction("std", input, dim, unbiased, correction, keepdim))


def var_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) in one node."""
    return apply(var_mean_op, (input,), _correction("var_mean", input, dim, unbiased, correction, keepdim))


def std_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) in one node."""
    return apply(std_mean_op, (input,), _correction("std_mean", input, dim, unbiased, correction, keepdim))


def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) along dim, computed stably; its gradient is softmax(x) * grad."""
    stored = input._data.dtype if input.dtype in (D.bfloat16, D.float16) else None
    return apply(logsumexp_op, (input,), (_reduced_dims(dim, input.ndim), keepdim, stored))


def check_vector_norm_input(x: Tensor) -> None:
    """torch's vector norm, and its composites (normalize, renorm), take floating or complex tensors only."""
    if x.dtype.category < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {D.scalar_type_name(x.dtype)}")


def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,  # noqa: A002
                dtype: D.dtype | None = None) -> Tensor:
    """The vector p-norm over all elements or along `dim` (torch.linalg.vector_norm)."""
    if dtype is not None:
        x = x.to(dtype)
    check_vector_norm_input(x)
    dims = None if _whole(dim) and not keepdim else _reduced_dims(dim, x.ndim)
    return apply(vector_norm_op, (x,), (float(ord), dims, keepdim))


def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False,
         dtype: D.dtype | None = None) -> Tensor:
    """torch.norm: the 2-norm by default ('fro' over at most two dims), the vector p-norm, or another matrix norm
    ('nuc', 'fro' over more dims: torch.linalg.matrix_norm over `dim`, all dims when not given)."""
    if p is None or p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
        p = 2
    if isinstance(p, str):
        from .linalg import matrix_norm

        return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along dim (logical xor for bool), after joining prepend and append."""
    from .shape import cat

    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim)
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        size = input.shape[d]
        after, before = input.narrow(d, 1, builtins.max(size - 1, 0)), input.narrow(d, 0, builtins.max(size - 1, 0))
        input = after.logical_xor(before) if input.dtype is D.bool_ else after - before
    return input


def _sample_spacing(y: Tensor, x: Tensor, d: int) -> Tensor:
    """The spacing dx of sample points x along dim d of y (a vector x lies along d; fewer dims align right)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        x = x.view(tuple(y.shape[d] if i == d else 1 for i in range(y.ndim)))
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return x.narrow(d, 1, x.shape[d] - 1) - x.narrow(d, 0, x.shape[d] - 1)


def _refuse_bool_samples(name: str, y: Tensor, x: Tensor | None) -> None:
    """torch's trapezoid rules take no bool samples nor points (its words name both when points are given)."""
    points = isinstance(x, Tensor)
    if y.dtype is D.bool_ or points and x.dtype is D.bool_:
        raise RuntimeError(f"{name}: received a bool input for {'`x` or `y`' if points else '`y`'}, but bool is not "
                           "supported")


def _trapezoid_setup(y: Tensor, x: Tensor | None, dim: int) -> tuple[int, Tensor | None]:
    """The wrapped dim, and the result when there are no samples (zeros, as NumPy)."""
    from .. import _creation

    d = _wrap_dim(dim, y.ndim)
    _refuse_bool_samples("trapezoid", y, x)
    if y.shape[d] == 0:
        return d, _creation.zeros(tuple(n for i, n in enumerate(y.shape) if i != d), dtype=y.dtype)
    return d, None


def _scaled(t: Tensor, number: float, divide: bool = False) -> Tensor:
    """t times a number (divided by its inverse), recorded as torch's Scalar overloads (MulBackward1, DivBackward1)."""
    from .pointwise import div_by_number, mul_by_number

    return div_by_number(t, 1 / number) if divide else mul_by_number(t, number)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along dim: samples y at points x, or spaced dx apart (1 by default)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: pass either x or dx")
    d, empty = _trapezoid_setup(y, x, dim)
    if empty is not None:
        return empty
    ends = y.narrow(d, 1, y.shape[d] - 1) + y.narrow(d, 0, y.shape[d] - 1)
    if isinstance(x, Tensor):
        return _scaled((_sample_spacing(y, x, d) * ends).sum(d), 0.5, divide=True)
    return _scaled(y.sum(d) - _scaled(y.select(d, 0) + y.select(d, -1), 0.5), float(1 if dx is None else dx))


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule (torch.trapz: trapezoid's older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along dim: one value per interval."""
    d = _wrap_dim(dim, y.ndim)
    _refuse_bool_samples("cumulative_trapezoid", y, x)
    if y.shape[d] == 0:
        return y.clone()
    ends = y.narrow(d, 0, y.shape[d] - 1) + y.narrow(d, 1, y.shape[d] - 1)
    if isinstance(x, Tensor):
        return _scaled((_sample_spacing(y, x, d) * ends).cumsum(d), 0.5, divide=True)
    return _scaled(ends, float(1 if dx is None else dx) / 2.0).cumsum(d)


def cumsum(input: Tensor, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
    """Running sum along dim (int and bool inputs sum in int64)."""
    accumulate = _accumulate_dtype(input, dtype, "cumsum_out_cpu", bool_loop=False)
    return apply(cumsum_op, (input,), (_wrap_dim(dim, input.ndim), accumulate))


def cumprod(input: Tensor, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
    """Running product along dim; the gradient is exact with zeros."""
    accumulate = _accumulate_dtype(input, dtype, "cumprod_out_cpu", bool_loop=False)
    return apply(cumprod_op, (input,), (_wrap_dim(dim, input.ndim), accumulate))


def cummax(input: Tensor, dim: int) -> tuple:
    """(values, indices) of the running maximum; ties take the later index."""
    return return_types_cummax(*apply(cummax_op, (input,), (_wrap_dim(dim, input.ndim),)))


def cummin(input: Tensor, dim: int) -> tuple:
    """(values, indices) of the running minimum; ties take the later index."""
    return return_types_cummin(*apply(cummin_op, (input,), (_wrap_dim(dim, input.ndim),)))


def _median(input: Tensor, dim: int | None, keepdim: bool, name: str, whole: object, along: object,
            result_type: type) -> Tensor | tuple:
    """median or nanmedian, refusing bool and complex as torch's kernels do (the whole one not when empty)."""
    if dim is None:
        if input.numel():
            _refuse_kinds(input._data.dtype, "median_cpu", "bc")
        return apply(whole, (input,))
    d = _wrap_dim(dim, input.ndim)
    _require_nonempty_dim(input, d, name)
    _refuse_kinds(input._data.dtype, "median_out", "bc")
    return result_type(*apply(along, (input,), (d, keepdim)))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | tuple:
    """The lower median: of everything (ties share the gradient) or along dim (values, indices)."""
    return _median(input, dim, keepdim, "median", median_all, median_dim, return_types_median)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | tuple:
    """median ignoring NaNs."""
    return _median(input, dim, keepdim, "nanmedian", nanmedian_all, nanmedian_dim, return_types_nanmedian)


def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Number of nonzero elements, over everything or along dims (int64, no gradient)."""
    return apply(count_nonzero_op, (input,), (None if _whole(dim) else _reduced_dims(dim, input.ndim),))


def hash_tensor(input: Tensor, dim: int | Sequence[int] | None = (), *, keepdim: bool = False,
                mode: int = 0) -> Tensor:
    """A uint64 hash of the elements, over everything or along dims: their bits (as float64, or int64) xor-ed.

    >>> hash_tensor(tensor([1, 2]))  # 1 ^ 2
    tensor(3, dtype=torch.uint64)
    """
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    _refuse_kinds(input._data.dtype, "xor_sum_cpu")
    dims = None if _whole(dim) else _dims(dim, input.ndim)
    if dims is None and input._data.size == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")
    for d in dims or ():
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    return apply(hash_tensor_op, (input,), (dims if input.ndim else None, keepdim and input.ndim > 0))


def all(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element (along dim) is nonzero; bool result (uint8 for uint8 input), no gradient."""
    return apply(all_op, (input,), (None if dim is None else _reduced_dims(dim, input.ndim), keepdim))


def any(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where some element (along dim) is nonzero; bool result (uint8 for uint8 input), no gradient."""
    return apply(any_op, (input,), (None if dim is None else _reduced_dims(dim, input.ndim), keepdim))


def _is_all_true(input: Tensor) -> Tensor:
    """Whether every element of a bool tensor is True, as a 0-d bool tensor. Under vmap it answers for every
    example at once, unbatched, so that a check (a distribution's validation) can branch on it, as torch's can."""
    return apply(is_all_true_op, (_truth_values(input),))


def _is_any_true(input: Tensor) -> Tensor:
    """Whether some element of a bool tensor is True, as _is_all_true answers."""
    return apply(is_any_true_op, (_truth_values(input),))


def _truth_values(input: Tensor) -> Tensor:
    if input.dtype is not D.bool_:  # torch's own words: an internal assert of its kernel
        raise RuntimeError('self.scalar_type() == at::kBool INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/aten/src/'
                           'ATen/native/ReduceOps.cpp":2144, please report a bug to PyTorch. ')
    return input


__all__ = ["_is_all_true", "_is_any_true", "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "count_nonzero",
           "cummax", "cummin", "cumprod", "cumsum", "cumulative_trapezoid", "diff", "hash_tensor", "trapezoid", "trapz",
           "logsumexp", "max", "mean", "median", "min", "nanmean", "nanmedian", "nansum", "norm", "prod", "std",
           "std_mean", "sum", "var", "var_mean"]
METHODS = ["aminmax", "count_nonzero", "cummax", "cummin", "cumprod", "cumsum", "diff", "hash_tensor", "logsumexp",
           "median", "nanmean", "nanmedian", "nansum", "prod", "std", "var"]
INPLACE = ["cumsum", "cumprod"]
LINALG = ["vector_norm"]
