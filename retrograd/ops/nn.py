"""Rule table: neural-network kernels and losses (OPS.md section I), with torch.nn.functional's signatures.

Hot ops get one fused node each, as torch has, instead of a chain of small ones (one node is also one
Python call in backward): softmax, log_softmax, linear (addmm), the normalisations (one standardisation
row serves layer, group and batch norm under their three node names), nll_loss, the elementwise losses,
embedding and attention. What torch composes (cross_entropy = log_softmax + nll_loss, l1_loss, kl_div,
cosine_similarity, rms_norm, the margin losses, ...) is composed here from the same pieces, so every
grad_fn name is torch's. The spatial kernels (convolution, pooling, padding, resampling) live in conv.py
and are part of this family: everything public there is re-exported here.

Arguments torch treats as non-differentiable (class weights, index targets, masks) are row parameters or
inputs without a formula; passing one that requires grad raises torch's error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import _creation
from .. import _dtype as D
from .._creation import zeros
from .._memory_format import contiguous_format, keeping_channels_last, memory_order
from .._tensor import Tensor, _wrap, _wrap_dim
from .._warn import warn_once, warn_once_at_user
from .._xp import has_data
from ..autograd.forward_ad import composite, transforms
from ..autograd.grad_mode import no_grad
from . import arrays as A
from .activation import logsigmoid
from .conv import *  # noqa: F403 - the spatial kernels are this family's too (rows, helpers, public functions)
from .conv import FUNCTIONAL_ONLY as _CONV_FUNCTIONAL
from .conv import PUBLIC as _CONV_PUBLIC
from .conv import (
    adaptive_max_pool1d_with_indices,
    affine_grid,
    avg_pool2d,
    avg_pool3d,
    constant_like,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    pad,
)
from .indexing import _index_range, index_put_op, scatter_add_op
from .linalg import addmm, matmul, matrix_norm
from .pointwise import _refuse_kinds, clamp_min, div_by_number, log, log1p, minimum, sigmoid, where, xlogy
from .reduction import _reduced_dims, check_vector_norm_input, vector_norm_op
from .registry import (
    _broadcast_error,
    apply,
    autocast_input,
    defop,
    keep_index_versions,
    namespace,
    sum_to,
    unrecorded_arrays,
)
from .shape import cat, stack


class NormAxes(NamedTuple):
    """How a normalisation standardises: statistics over `dims` of the input seen as `layout`; weight and
    bias (of shape `params`) broadcast as `affine`; `frozen` = (mean, var) arrays in the layout to use
    instead of the input's statistics (batch norm in eval mode); `moments` = the input's own (mean, invstd) in the
    layout, which batch norm takes before the forward (Note [float32 batch-norm statistics]) and its backward
    reuses, as torch's save_mean and save_invstd."""

    layout: tuple[int, ...]
    dims: tuple[int, ...]
    affine: tuple[int, ...]
    params: tuple[int, ...]
    frozen: tuple | None = None
    moments: tuple | None = None


# ============================================================================================
# Rows: softmax family
# ============================================================================================


@defop("_softmax", node="SoftmaxBackward0", params=("dim",), self="softmax_backward_data(grad, result, dim)",
       jvp="result * (self_t - (self_t * result).sum(dim, True))")
def softmax_op(xp, x, dim):
    return _along_rows(xp, x, dim, _softmax_forward, "softmax")


def _along_rows(xp: Any, x: Any, dim: int, forward: Any, kernel: str) -> Any:
    """forward(xp, x, dim) of softmax or log_softmax as torch's kernels take it: a 0-d x is one element, an empty x
    is copied, integers, bools and complex numbers are refused by the kernel torch picks (its lastdim one along the
    last dim), and float16 runs in float32, rounded once (Note [float16 sums] in ops/reduction.py)."""
    if not x.size:
        return A.copy(xp, x)
    last = not x.ndim or dim == x.ndim - 1
    _refuse_kinds(x.dtype, f"{kernel}_lastdim_kernel_impl" if last else f"{kernel}_kernel_impl", "buic")
    dim = dim if x.ndim else None  # CuPy refuses a 0-d array's axis 0
    if x.dtype == np.float16:
        return forward(xp, x.astype(np.float32), dim).astype(np.float16)
    return forward(xp, x, dim)


def _softmax_forward(xp: Any, x: Any, dim: int | None) -> Any:
    parts = _row_blocks(x, dim)
    with np.errstate(invalid="ignore"):  # a row of -inf is NaN without a warning, as torch's
        if parts is not None:
            return _softmax_rows(x, parts, log=False)
        e = xp.exp(x - A.reduce(xp, "max", x, dim, True))
        e /= xp.sum(e, axis=dim, keepdims=True)  # in place: one full-size temporary fewer
    return e


@defop("_softmax_backward_data", node="SoftmaxBackwardDataBackward0", inputs=("grad_output", "output"),
       params=("dim",),
       grad_output="softmax_backward_data(grad, output, dim)",
       output="grad * (grad_output - (grad_output * output).sum(dim, True))"
              " - grad_output * (grad * output).sum(dim, True)",
       jvp="softmax_backward_data(grad_output_t, output, dim) + output_t * (grad_output - (grad_output * output)"
           ".sum(dim, True)) - output * (grad_output * output_t).sum(dim, True)")
def softmax_backward_data(xp, g, r, dim):
    dim = dim if g.ndim else None  # a 0-d tensor is one element (CuPy refuses its axis 0)
    parts = _row_blocks(r, dim)
    if parts is not None and _same_layout(g, r):  # Note [softmax rows in blocks]
        width = r.shape[-1]
        rows, grads, out = r.reshape(-1, width), g.reshape(-1, width), np.empty_like(r)
        into = out.reshape(-1, width)
        for part in parts:
            block = into[part]
            np.subtract(grads[part], np.vecdot(grads[part], rows[part])[:, None], out=block)
            block *= rows[part]
        return out
    if dim is not None and type(g) is np.ndarray and g.dtype.kind == "f" and g.dtype == r.dtype:
        out = g - np.expand_dims(np.vecdot(g, r, axis=dim), dim)  # sum(g r) without g r's temporary
    else:
        out = g - xp.sum(g * r, axis=dim, keepdims=True)
    out *= r  # r * (g - sum(g r)), the product in place
    return out


@defop("_log_softmax", node="LogSoftmaxBackward0", params=("dim",),
       self="log_softmax_backward_data(grad, result, dim)",
       jvp="self_t - (self_t * exp(result)).sum(dim, True)")
def log_softmax_op(xp, x, dim):
    return _along_rows(xp, x, dim, _log_softmax_forward, "log_softmax")


def _log_softmax_forward(xp: Any, x: Any, dim: int | None) -> Any:
    with np.errstate(invalid="ignore"):  # a row of -inf is NaN without a warning, as torch's
        if not hasattr(x, "strides"):  # the standard's functions; NumPy's methods below skip their Python wrappers
            shifted = x - A.reduce(xp, "max", x, dim, True)
            return shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True))
        parts = _row_blocks(x, dim)
        if parts is not None:
            return _softmax_rows(x, parts, log=True)
        shifted = x - A.reduce(xp, "max", x, dim, True)
        shifted -= xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))  # in place: one temporary fewer
    return shifted


@defop("_log_softmax_backward_data", node="LogSoftmaxBackwardDataBackward0", inputs=("grad_output", "output"),
       params=("dim",),
       grad_output="grad - (grad * exp(output)).sum(dim, True)",
       output="-grad * exp(output) * grad_output.sum(dim, True)",
       jvp="grad_output_t - exp(output) * (grad_output_t.sum(dim, True) + output_t * grad_output.sum(dim, True))")
def log_softmax_backward_data(xp, g, r, dim):
    dim = dim if g.ndim else None  # a 0-d tensor is one element (CuPy refuses its axis 0)
    parts = _row_blocks(r, dim)
    if parts is not None and _same_layout(g, r):
        out = np.empty_like(r)
        width = r.shape[-1]
        rows, into, grads = r.reshape(-1, width), out.reshape(-1, width), g.reshape(-1, width)
        minus_sums = -_row_sums(grads)
        for part in parts:
            block = into[part]
            np.exp(rows[part], out=block)
            block *= minus_sums[part]
            block += grads[part]  # g - exp(r) * sum(g)
        return out
    scaled = xp.exp(r)
    scaled *= A.reduce(xp, "sum", g, dim, True)
    return g - scaled


# Note [softmax rows in blocks]
# softmax and log_softmax along the last axis of a large C-contiguous NumPy array run all their passes a block
# of rows at a time (Note [blockwise passes] in ops/arrays.py): the rows' maxima, the shift, exp, the rows' sums,
# and the division or the log's subtraction then read what the previous pass left in the cache, the input is
# read from memory once, and exp's temporary is a block's size. Rows of at most 512 are summed by BLAS
# (`_row_sums`), so the last bit may differ from the whole-array formula's pairwise sum; the other passes are
# the same ufuncs in the same order, each row's maximum its own. log_softmax of (700, 10000) float32 (a language
# model's 10000 classes): 13.0 -> 7.1 ms forward (torch 11.4 alone) with the shift on the whole array; on the
# Intel host, its 28 MB input read from memory, 17.4 -> 10.9 ms with it in the blocks too. The backward (8.1 ->
# 6.8 ms) takes the sums of the whole gradient first: by blocks of six rows they cost more, and BLAS's sums of
# narrow rows change with the block. softmax's backward, r (g - sum(g r)), goes by blocks whole: each row's
# sum(g r) is its own dot product (np.vecdot), the same bits in any block; 10-20% less for an attention's
# (32, 4, 64, 64) and for (700, 10000) float32 with the inputs read from memory.


def _row_blocks(x: np.ndarray, dim: int | None) -> list[slice] | None:
    """The blocks of rows a softmax along dim runs by (Note [softmax rows in blocks]); None for the whole array."""
    if type(x) is not np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or dim not in (-1, x.ndim - 1) or not x.size \
            or not x.flags.c_contiguous:
        return None
    width = x.shape[-1]
    rows = x.size // width
    return A.blocks(rows, width) if rows > 2 * A.block_step(width) else None  # three blocks or more


def _same_layout(g: Any, r: np.ndarray) -> bool:
    """Whether a gradient is a C-contiguous NumPy array of the output's shape and dtype, so that the backward of
    a softmax goes by r's blocks of rows (not a batched gradient, whose extra dims r lacks)."""
    return type(g) is np.ndarray and g.shape == r.shape and g.dtype == r.dtype and g.flags.c_contiguous


def _softmax_rows(x: np.ndarray, parts: list[slice], log: bool) -> np.ndarray:
    """softmax (or log_softmax) of x along its last axis, by the given blocks of rows (Note [softmax rows in
    blocks]); narrow rows' softmax without the shift where it may (Note [softmax without the shift])."""
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    scratch = np.empty((parts[0].stop, x.shape[-1]), dtype=x.dtype) if log else None
    limit = None if log else _unshifted_limit(rows)
    for part in parts:
        if limit is not None and rows[part].max() < limit:  # False for a NaN
            _unshifted_softmax(rows[part], out[part])
        else:
            _shifted_rows(rows[part], out[part], scratch, log)
    return out.reshape(x.shape)


def _shifted_rows(rows: np.ndarray, out: np.ndarray, scratch: np.ndarray | None, log: bool) -> None:
    """softmax (or log_softmax, exp's values in `scratch`) of each row into out, as torch's kernel: exp(x - max)."""
    block = np.subtract(rows, A.reduce(np, "max", rows, -1, True), out=out)
    e = np.exp(block, out=block if scratch is None else scratch[:block.shape[0]])
    sums = _row_sums(e)
    if log:
        block -= np.log(sums)
    else:
        block /= sums


# Note [softmax without the shift]
# softmax subtracts each row's maximum before exp only to keep exp in range, and the maximum of a row of 64 (an
# attention's scores) is the costliest of its passes: NumPy pays a set-up per row (0.50 ms of 1.3 for (32, 4, 64,
# 64) float32; exp 0.20, the rows' sums 0.04). Where the block's largest element is so small that no exp, nor a
# row's sum, can overflow (below log(max) - log(width) - 1), a block of rows at most 512 wide takes exp(x) / sum
# unshifted. A row whose sum is under 1 is taken again with the shift: its largest terms may lie where exp has
# lost digits (subnormal), or all of it is -inf (NaN, as torch's). With a sum of 1 or more, an exp that is
# subnormal belongs to an output below float's smallest normal, where torch's result is subnormal too. The
# other rows differ from torch's exp(x - max) / sum by exp's and the division's roundings: exp of the unrounded
# x, where torch's x - max is rounded first (relative errors up to |x - max| * 2^-24, 1e-6 at 20 below the
# maximum). log_softmax keeps the shift, as its log of the sum needs it. The fused attention row takes its scores
# so too where no narrow dtype stores the exponentials (their rounding is torch's only after the shift): its
# log-sum-exp is then log(sum) with top 0, and a row masked from every key is one of those taken again; a causal
# (32, 4, 64, 32) float32 attention's forward: 2.87 -> 2.25 ms.


def _unshifted_limit(rows: np.ndarray) -> float | None:
    """The bound a block's elements must stay under to take softmax unshifted (Note [softmax without the shift]);
    None for rows over 512 wide and dtypes other than float32 and float64."""
    width = rows.shape[1]
    if width > 512 or rows.dtype not in _BLAS_FLOATS:
        return None
    return math.log(np.finfo(rows.dtype).max) - math.log(width) - 1


def _unshifted_exp(rows: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exp(rows), each row's sum as a column, the indices of the rows to take again with the shift: a sum under 1
    or NaN) (Note [softmax without the shift])."""
    e = np.exp(rows, out=out)
    sums = _row_sums(e)
    return e, sums, np.flatnonzero(~(sums[:, 0] >= 1))


def _unshifted_softmax(rows: np.ndarray, out: np.ndarray) -> None:
    """softmax of each row into out as exp(x) / sum, rows whose sum is under 1 with the shift (Note [softmax
    without the shift])."""
    e, sums, redo = _unshifted_exp(rows, out)
    e /= sums
    if redo.size:
        again = np.empty((redo.size, rows.shape[1]), dtype=rows.dtype)
        _shifted_rows(rows[redo], again, None, log=False)
        out[redo] = again


def _row_sums(rows: np.ndarray) -> np.ndarray:
    """Each row's sum, as a column: for float32 and float64 rows of at most 512 as their product with a vector of
    ones (one BLAS matrix-vector product), since NumPy's reduction pays a set-up per row (32768 rows of 64: 1.12 ->
    0.25 ms on an AVX2 host); wider rows, and other dtypes, by NumPy's pairwise sum."""
    width = rows.shape[1]
    if width > 512 or rows.dtype not in _BLAS_FLOATS:
        return rows.sum(axis=1, keepdims=True)
    return (rows @ np.ones(width, rows.dtype))[:, None]


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# ============================================================================================
# Rows: normalisation, embedding, attention
# ============================================================================================


@defop("native_layer_norm", node="NativeLayerNormBackward0", inputs=("input", "weight", "bias"),
       params=("axes", "eps"),
       input="norm_grads(grad, input, weight, axes, eps)[0]",
       weight="norm_grads(grad, input, weight, axes, eps)[1]",
       bias="norm_grads(grad, input, weight, axes, eps)[2]",
       jvp="standardize_jvp(input_t, weight_t, bias_t, input, weight, axes, eps)")
def native_norm_op(xp, x, w, b, axes, eps):
    """Standardise over axes.dims of x seen as axes.layout, then scale and shift (layer/group/batch norm)."""
    if _layer_statistics(x, axes) and type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.size \
            and all(p is None or type(p) is np.ndarray and p.dtype == x.dtype for p in (w, b)):
        return _layer_norm_rows(x, w, b, axes, eps)
    xs = A.reshape(xp, x, axes.layout)
    if axes.moments is not None:
        mean, scale = axes.moments
    else:
        mean, var = axes.frozen or _moments(xp, xs, axes.dims)
        scale = 1 / xp.sqrt(var + eps)
    if len(scale.shape) == len(axes.affine) and all(a in (1, n) for a, n in zip(axes.affine, scale.shape)):
        # weight and bias per statistic (batch norm): y = x * scale + shift in two passes, as torch's kernel
        scale, shift = _batch_norm_terms(xp, mean, scale, w, b, axes.affine)
        y = xs * scale
        y += shift
        return A.astype(xp, y, x.dtype, copy=False)
    y = xs - mean
    y *= scale
    y = A.reshape(xp, y, x.shape)
    if w is not None:
        y = y * A.reshape(xp, w, axes.affine)
    if b is not None:
        y = y + A.reshape(xp, b, axes.affine)
    return A.astype(xp, y, x.dtype, copy=False)


def _layer_norm_rows(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, axes: NormAxes,
                     eps: float) -> np.ndarray:
    """Layer norm's forward on the (rows, D) matrix: the means as a matrix-vector product, the variances as one dot
    per row of the centred rows, which become the output in place (one array; the general path below makes four
    and takes seven passes: 0.35 -> 0.18 ms for (32, 64, 128) float32, torch 0.12)."""
    width = math.prod(axes.params)
    rows = x.reshape(-1, width)
    out = rows - (rows @ np.full(width, 1 / width, dtype=x.dtype))[:, None]
    out *= (1 / np.sqrt(np.vecdot(out, out) / width + eps))[:, None]
    if w is not None:
        out *= w.reshape(width)
    if b is not None:
        out += b.reshape(width)
    return out.reshape(x.shape)


def _moments(xp, xs, dims: tuple[int, ...]):
    """(mean, biased variance) over dims, kept as size-1 dims: four passes (NumPy's var takes the mean again)."""
    mean = A.reduce(xp, "mean", xs, dims, True)
    centered = xs - mean
    centered *= centered
    return mean, A.reduce(xp, "mean", centered, dims, True)


# Note [float32 batch-norm statistics]
# torch's CPU batch norm accumulates a float32 input's sums in double (its acc_type for float): the mean is the
# double sum over the count, rounded; the variance's sum adds the float32 squares (x - mean)^2 in double and is
# rounded, then divided by the count in float32 (var_sum / n, a float over an integer); save_invstd is
# 1 / sqrt(var + eps) in double, rounded; the running statistics are momentum * stat + (1 - momentum) * running
# in float32, with the unbiased variance var_sum / (n - 1) in float32 and its product momentum * var added
# unrounded (fused; the mean's is rounded first, as measured against torch 2.13's wheel). The output is
# input * alpha + beta per channel,
# alpha = invstd * weight and beta = bias - mean * alpha in one rounding (the kernel's multiply-add is fused).
# Float32 sums (BLAS's, NumPy's) drift by a few ulps on off-centre channels (a ReLU's or a conv bias's output),
# which the normalisation multiplies by invstd, so the statistics are taken torch's way. The output's own
# multiply-add is not fused here (NumPy has none; in float64 it would take three times as long), so it is rounded
# twice, within an ulp of input * alpha of torch's. The backward sums each (sample, channel) plane in float32
# and adds the planes in double, as torch's kernel does (Note [unrecorded batch-norm backward]). Float64 inputs
# accumulate in float64 both ways; other dtypes, and arrays that are not NumPy's, take _moments.


def _channel_statistics(x: Any, eps: float) -> tuple[Any, Any, Any]:
    """Batch norm's (mean, invstd) of each channel of (N, C, ...) in the layout (1, C, 1, ...), and the unbiased
    variance per channel for the running estimate, rounded as torch's CPU kernel rounds them (Note [float32
    batch-norm statistics]): two passes and one temporary, the sums in float64."""
    count = x.size // x.shape[1]
    if type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64):
        xp = namespace(x)
        mean, var = _moments(xp, x, (0, *range(2, x.ndim)))
        return mean, 1 / xp.sqrt(var + eps), A.reshape(xp, var, -1) * (count / (count - 1))
    rows = x.reshape(*x.shape[:2], -1)
    mean = (_wide_channel_sums(rows) / count).astype(x.dtype)
    centered = rows - mean[:, None]
    centered *= centered
    var_sum = _wide_channel_sums(centered).astype(x.dtype)
    var = var_sum / x.dtype.type(count)
    invstd = (1 / np.sqrt(var.astype(np.float64) + eps)).astype(x.dtype)
    view = _channel_view(x.shape)
    return mean.reshape(view), invstd.reshape(view), var_sum / x.dtype.type(count - 1)


def _channel_sums(rows: np.ndarray) -> np.ndarray:
    """Sum over dims 0 and 2 of (N, C, S): a matrix-vector product per sample (no temporary, BLAS speed)."""
    return (rows @ np.ones(rows.shape[2], dtype=rows.dtype)).sum(0)


def _wide_channel_sums(rows: np.ndarray) -> np.ndarray:
    """_channel_sums accumulated in float64, as torch's CPU kernels accumulate float32 (Note [float32 batch-norm
    statistics])."""
    return _channel_sums(rows) if rows.dtype == np.float64 else rows.sum(axis=(0, 2), dtype=np.float64)


def _batch_norm_terms(xp: Any, mean: Any, invstd: Any, w: Any, b: Any, affine: tuple[int, ...]) -> tuple[Any, Any]:
    """Batch norm's per-channel (alpha, beta) with output = input * alpha + beta: alpha = invstd * weight, beta =
    bias - mean * alpha rounded once for float32, as torch's fused multiply-add rounds it (Note [float32 batch-norm
    statistics]; the product of two float32s is exact in float64)."""
    alpha = invstd if w is None else invstd * A.reshape(xp, w, affine)
    if b is None:
        return alpha, -mean * alpha
    bias = A.reshape(xp, b, affine)
    if alpha.dtype != xp.float32 or mean.dtype != xp.float32 or bias.dtype != xp.float32:
        return alpha, bias - mean * alpha
    wide = [A.astype(xp, t, xp.float64) for t in (bias, mean, alpha)]
    return alpha, A.astype(xp, wide[0] - wide[1] * wide[2], xp.float32)


native_group_norm_op = native_norm_op.alias("native_group_norm", "NativeGroupNormBackward0")
native_group_norm_op.forward = keeping_channels_last(native_group_norm_op.forward)  # torch's CPU kernel's layout
native_batch_norm_op = native_norm_op.alias("native_batch_norm", "NativeBatchNormBackward0")


@defop("embedding", inputs=("weight",), params=("indices", "padding_idx", "scale_grad_by_freq"),
       weight="embedding_backward_op(grad, indices, weight_shape[0], padding_idx, scale_grad_by_freq)",
       jvp="embedding_op(weight_t, indices, None, False)")
def embedding_op(xp, w, indices, padding_idx, scale_grad_by_freq):
    if hasattr(w, "strides") or indices.ndim == 1:  # the standard's take has vector indices only
        return xp.take(w, indices, axis=0)
    return A.reshape(xp, xp.take(w, A.reshape(xp, indices, -1), axis=0), indices.shape + w.shape[1:])


@defop("embedding_dense_backward", node="EmbeddingDenseBackwardBackward0", inputs=("grad_output",),
       params=("indices", "num_weights", "padding_idx", "scale_grad_by_freq"),
       grad_output="embedding_op(grad, indices, None, False) * embedding_row_scale(indices, num_weights, "
                   "padding_idx, scale_grad_by_freq, grad.dtype)",
       jvp="embedding_backward_op(grad_output_t, indices, num_weights, padding_idx, scale_grad_by_freq)")
def embedding_backward_op(xp, g, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Each looked-up row's gradient added into its weight row (padding_idx gets none)."""
    flat = A.reshape(xp, indices, -1)
    rows = A.reshape(xp, g, flat.size, g.shape[-1])  # -1 cannot be inferred when there are no indices
    if padding_idx is not None or scale_grad_by_freq:
        rows = rows * A.astype(xp, _row_scale(xp, flat, num_weights, padding_idx, scale_grad_by_freq)[:, None],
                               g.dtype, copy=False)
    return A.add_at(xp, xp.zeros((num_weights, rows.shape[1]), dtype=g.dtype, device=g.device), flat, rows)


@defop("_scaled_dot_product_flash_attention_for_cpu", node="ScaledDotProductFlashAttentionForCpuBackward0",
       inputs=("query", "key", "value"), params=("dropout_p", "is_causal", "attn_mask", "scale", "stored"),
       outputs=("output", "logsumexp"), differentiable_outputs=(0,),
       query="attention_grads(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask, scale)[0]",
       key="attention_grads(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask, scale)[1]",
       value="attention_grads(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask, scale)[2]",
       jvp="attention_jvp(query_t, key_t, value_t, query, key, value, is_causal, attn_mask, scale)")
def attention_op(xp, q, k, v, dropout_p, is_causal, attn_mask, scale, stored):
    """(softmax(q @ k^T * scale + mask) @ v, each row's log-sum-exp of the scores) in the order of torch's CPU kernel
    (Note [attention in torch's order]); `attn_mask` is additive (-inf where masked) or None, `is_causal` adds the
    causal one, `scale` None is 1 / sqrt(E), `stored` the narrow dtype the exponentials are rounded to (the query's
    bfloat16 or float16) or None. dropout_p is 0 (torch's math path takes dropout)."""
    dtype, query = q.dtype, q
    compute = np.float32 if dtype == np.float16 else dtype  # bfloat16 comes widened (Note [bfloat16] in _dtype.py)
    q, k, v = (A.astype(xp, a, compute, copy=False) for a in (q, k, v))
    s = xp.matmul(q, A.matrix_transpose(xp, k)) * _attention_scale(scale, q)
    mask = attention_mask(xp, attn_mask, is_causal, q, k)
    if mask is not None:
        s = s + A.astype(xp, mask, compute, copy=False)
    e, sums, top = _attention_exponentials(xp, s, shift=stored is not None)
    if stored is not None:
        e = A.astype(xp, A.astype(xp, e, stored), compute)
    out = xp.matmul(e, v)
    out /= xp.reshape(sums, out.shape[:-1] + (1,))
    logsumexp = xp.reshape(xp.log(sums) + top, out.shape[:-1])  # 0 in a row masked from every key, as torch's
    if type(query) is np.ndarray and query.ndim == 4:  # torch's is (N, L, H) in memory
        laid_lse = np.empty((out.shape[0], out.shape[2], out.shape[1]), dtype=logsumexp.dtype).transpose(0, 2, 1)
        laid_lse[...] = logsumexp
        logsumexp = laid_lse
    if type(query) is np.ndarray and query.strides[-1] == query.itemsize and not query.flags.c_contiguous:
        laid = np.empty_like(query, dtype=dtype)  # laid out as the query, as torch's output is
        laid[...] = out
        return laid, logsumexp
    return A.astype(xp, out, dtype, copy=False), logsumexp


def _attention_exponentials(xp, s: Any, shift: bool) -> tuple[Any, Any, Any]:
    """(exp(s - top), each row's sum of those, top) for the scores s: top each row's maximum, or 0 where the rows
    may go unshifted (Note [softmax without the shift]; not if `shift`); a row every key is masked from has top 0,
    exponentials 0 and sum 1 (zeros out, as torch's kernel gives). NumPy's C-contiguous scores may be overwritten."""
    rows = type(s) is np.ndarray and s.flags.c_contiguous  # NumPy's rows: in place, by the softmax helpers
    flat = s.reshape(-1, s.shape[-1]) if rows else s
    limit = None if shift or not rows else _unshifted_limit(flat)
    if limit is not None and flat.max() < limit:  # False for a NaN
        e, sums, redo = _unshifted_exp(flat)
        top = np.zeros_like(sums)
        if redo.size:
            e[redo], sums[redo], top[redo] = _attention_exponentials(xp, flat[redo], shift=True)
        return e.reshape(s.shape), sums, top
    top = A.reduce(xp, "max", flat if rows else s, -1, True)
    empty = top == -math.inf
    some_empty = A.reduce(xp, "any", empty)
    if some_empty:
        top = xp.where(empty, xp.zeros_like(top), top)
    if rows:
        flat -= top
        e = np.exp(s, out=s)
    else:
        e = xp.exp(s - top)
    sums = _row_sums(flat) if rows else A.reduce(xp, "sum", e, -1, True)
    if some_empty:  # their exponentials are all 0: divided by 1, not by their 0 sum
        sums = xp.where(empty, xp.ones_like(sums), sums)
    return e, sums, top


def _attention_scale(scale: float | None, query: Any) -> float:
    """The scores' scale: the given one, else 1 / sqrt(E), as torch's."""
    return 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale


def attention_mask(xp, attn_mask: Any, is_causal: bool, query: Any, key: Any) -> Any:
    """The additive mask attention applies (-inf where masked): attn_mask, plus the causal one (key j masked from
    query i where j > i) when is_causal; None for neither."""
    if not is_causal:
        return attn_mask
    length, source = query.shape[-2], key.shape[-2]
    device = getattr(query, "device", None)
    rows = xp.reshape(xp.arange(length, device=device), (length, 1))
    causal = xp.where(xp.arange(source, device=device) <= rows, xp.zeros((), device=device), -xp.inf)
    return causal if attn_mask is None else attn_mask + causal


# Note [attention in torch's order]
# The fused attention row follows torch's CPU flash kernel: the scores in float32 at least, their exponentials after
# each row's maximum (or unshifted: Note [softmax without the shift]), the rows' sums of those, the exponentials rounded
# to the query's dtype when it is narrower (torch's kernel stores them so for its second GEMM), their product with v,
# and that divided by the sums. Dividing the (L, E) product, not the (L, S) probabilities, is the order that gives
# torch's bfloat16 numbers, and a pass fewer. A row whose every key is masked gives zeros (and zero gradients), where
# softmax alone gives NaN. The output is laid out as the query when the query's last dim is dense (MultiheadAttention's
# heads are (L, N, H, E) in memory): torch's is, and its permute and reshape back to (L N, H E) are then views, not a
# copy.


# ============================================================================================
# Rows: losses
# ============================================================================================


@defop("nll_loss", node="NllLossBackward0", inputs=("self",), params=("target", "weight", "reduction", "ignore_index"),
       self="nll_loss_grad(grad, self, target, weight, reduction, ignore_index)",
       jvp="nll_loss_of(self_t, target, weight, reduction, ignore_index)")
def nll_loss_op(xp, x, target, weight, reduction, ignore_index):
    """ignore_index is None when no target is ignored (nll_loss checks): then unweighted losses need no mask."""
    safe = target if ignore_index is None else xp.where(target == ignore_index, 0, target)
    picked = _at_targets(xp, x, safe)
    if weight is None and ignore_index is None:
        loss, total = -picked, picked.size
        if reduction == "mean" and total:  # a float by a nonzero count: nothing to guard, already x's dtype
            return A.reduce(xp, "sum", loss) / total
    else:
        w = _sample_weights(xp, target, weight, ignore_index, x.dtype)
        loss, total = -picked * w, A.reduce(xp, "sum", w)
        if ignore_index is not None:  # torch's 0 for an ignored sample, not -x * 0 (-0.0)
            loss = A.astype(xp, xp.where(target == ignore_index, 0, loss), x.dtype, copy=False)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return A.reduce(xp, "sum", loss)
    with np.errstate(invalid="ignore", divide="ignore"):
        return A.astype(xp, A.reduce(xp, "sum", loss) / total, x.dtype)


@defop("nll_loss_backward", node="NllLossBackwardBackward0", inputs=("grad_output", "self"),
       params=("target", "weight", "reduction", "ignore_index"),
       grad_output="nll_loss_of(grad, target, weight, reduction, ignore_index)", self="zeros_like(grad)",
       jvp="nll_loss_grad(grad_output_t, self, target, weight, reduction, ignore_index)")
def nll_loss_backward_op(xp, g, x, target, weight, reduction, ignore_index):
    """-w[t] * grad at each target position (over the total weight for 'mean'), zero elsewhere: nll_loss's
    backward as one row, linear in grad, so its own derivative is nll_loss again (torch's double backward)."""
    if weight is None and ignore_index is None and target.size:  # every sample weighs 1 (or 1 / count)
        w = 1 / target.size if reduction == "mean" else 1  # a Python float keeps g's dtype
    else:
        w = _sample_weights(xp, target, weight, ignore_index, g.dtype)
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                w = w / A.reduce(xp, "sum", w)
    out = xp.zeros(x.shape, dtype=g.dtype, device=g.device)
    if ignore_index is None:
        return _at_targets(xp, out, target, -w * g)
    # an ignored sample's row is left alone (as torch does), also when all are and 'mean' made 0 / 0
    ignored = target == ignore_index
    return _at_targets(xp, out, xp.where(ignored, 0, target),
                       A.astype(xp, xp.where(ignored, 0, -w * g), g.dtype, copy=False))


nll_loss2d_op = nll_loss_op.alias("nll_loss2d", "NllLoss2DBackward0")
nll_loss2d_backward_op = nll_loss_backward_op.alias("nll_loss2d_backward", "NllLoss2DBackwardBackward0")


@defop("binary_cross_entropy", inputs=("self", "target", "weight"), params=("reduction",),
       self="bce_input_grad(grad, self, target, weight, reduction)",
       target="bce_target_grad(grad, self, target, weight, reduction)",
       jvp="loss_reduce(bce_input_grad(1, self, target, weight, 'none') * self_t"
           " + bce_target_grad(1, self, target, weight, 'none') * target_t, reduction)")
def bce_op(xp, x, t, w, reduction):
    with np.errstate(divide="ignore"):
        loss = (t - 1) * xp.maximum(xp.log1p(-x), -100) - t * xp.maximum(xp.log(x), -100)
    if w is not None:
        loss = loss * w
    return _reduce(xp, A.astype(xp, loss, x.dtype, copy=False), reduction)


@defop("binary_cross_entropy_with_logits", inputs=("self", "target", "weight", "pos_weight"),
       params=("reduction",),
       self="bce_logits_input_grad(grad, self, target, weight, pos_weight, reduction)",
       target="bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction)",
       jvp="loss_reduce(bce_logits_input_grad(1, self, target, weight, pos_weight, 'none') * self_t"
           " + bce_logits_target_grad(1, self, target, weight, pos_weight, 'none') * target_t, reduction)")
def bce_with_logits_op(xp, x, t, w, pw, reduction):
    _refuse_kinds(x, "log_sigmoid_cpu", "buic")
    log_sig_neg = xp.logaddexp(0, -x)  # log(1 + exp(-x)), stable for |x| large
    if pw is None:
        loss = (1 - t) * x + log_sig_neg
    else:
        loss = (1 - t) * x + (1 + (pw - 1) * t) * log_sig_neg
    if w is not None:
        loss = loss * w
    return _reduce(xp, A.astype(xp, loss, t.dtype, copy=False), reduction)  # torch computes in place on 1 - target


@defop("mse_loss", inputs=("self", "target"), params=("reduction",), promote="binary",
       self="2 * (self - target) * reduced_grad(grad, reduction, self_shape, target_shape)",
       target="-2 * (self - target) * reduced_grad(grad, reduction, self_shape, target_shape)",
       jvp="loss_reduce(2 * (self - target) * (self_t - target_t), reduction)")
def mse_loss_op(xp, x, t, reduction):
    _refuse_kinds(x, "mse_cpu", "buic")  # promoted: integers with a float target are computed
    d = x - t
    return _reduce(xp, d * d, reduction)


@defop("smooth_l1_loss", inputs=("self", "target"), params=("reduction", "beta"), promote="binary",
       self="smooth_l1_slope(self - target, beta) * reduced_grad(grad, reduction, self_shape, target_shape)",
       target="-smooth_l1_slope(self - target, beta) * reduced_grad(grad, reduction, self_shape, target_shape)",
       jvp="loss_reduce(smooth_l1_slope(self - target, beta) * (self_t - target_t), reduction)")
def smooth_l1_loss_op(xp, x, t, reduction, beta):
    _refuse_kinds(x, "smooth_l1_cpu", "buic")
    d = xp.abs(x - t)
    return _reduce(xp, A.astype(xp, xp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), d.dtype, copy=False),
                   reduction)


@defop("huber_loss", inputs=("self", "target"), params=("reduction", "delta"),
       self="huber_slope(self - target, delta) * reduced_grad(grad, reduction, self_shape, target_shape)",
       target="-huber_slope(self - target, delta) * reduced_grad(grad, reduction, self_shape, target_shape)",
       jvp="loss_reduce(huber_slope(self - target, delta) * (self_t - target_t), reduction)")
def huber_loss_op(xp, x, t, reduction, delta):
    _refuse_kinds(x, "huber_cpu", "buic")
    d = xp.abs(x - t)
    return _reduce(xp, A.astype(xp, xp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), x.dtype, copy=False),
                   reduction)  # in input's dtype: torch's kernel writes into a tensor like input


@defop("soft_margin_loss", inputs=("self", "target"), params=("reduction",),
       self="-target * sigmoid(-target * self) * reduced_grad(grad, reduction, self_shape, target_shape)",
       jvp="loss_reduce(-target * sigmoid(-target * self) * self_t, reduction)")
def soft_margin_loss_op(xp, x, t, reduction):
    return _reduce(xp, A.astype(xp, xp.log1p(xp.exp(-t * x)), x.dtype, copy=False), reduction)


@defop("multi_margin_loss", inputs=("self", "weight"), params=("target", "p", "margin", "reduction"),
       self="margin_coefficients(self, target, p, margin, weight) * per_sample(grad, reduction, target.shape)",
       jvp="loss_reduce((margin_coefficients(self, target, p, margin, weight) * self_t).sum(-1), reduction)")
def multi_margin_loss_op(xp, x, w, target, p, margin, reduction):
    terms = _margin_terms(xp, x, target, margin)
    loss = xp.maximum(terms, 0) ** p
    if w is not None:
        loss = loss * _class_weights(xp, w, target)[..., None]
    return _reduce(xp, A.astype(xp, A.reduce(xp, "sum", loss, -1) / x.shape[-1], x.dtype, copy=False), reduction)


@defop("multilabel_margin_loss", inputs=("self",), params=("target", "reduction"),
       self="multilabel_margin_coefficients(self, target) * per_sample(grad, reduction, self_shape[:-1])",
       jvp="loss_reduce((multilabel_margin_coefficients(self, target) * self_t).sum(-1), reduction)")
def multilabel_margin_loss_op(xp, x, target, reduction):
    hinge, _, _ = _multilabel_hinges(xp, x, target)
    per_sample = A.reduce(xp, "sum", xp.maximum(hinge, 0), (-2, -1)) / x.shape[-1]
    return _reduce(xp, A.astype(xp, per_sample, x.dtype, copy=False), reduction)


@defop("cdist", node="CdistBackward0", inputs=("x1", "x2"), params=("p",),
       x1="cdist_grad(grad, x1, x2, result, p)", x2="cdist_grad(grad.mT, x2, x1, result.mT, p)",
       jvp="(cdist_slope(x1, x2, result, p) * (x1_t.unsqueeze(-2) - x2_t.unsqueeze(-3))).sum(-1)")
def cdist_op(xp, a, b, p):
    diff = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return A.astype(xp, xp.count_nonzero(diff, axis=-1), a.dtype)
    if math.isinf(p):
        return A.max_from(xp, diff, -1, False, 0)
    if p == 1:
        return A.reduce(xp, "sum", diff, -1)
    if p == 2:
        return xp.sqrt(A.reduce(xp, "sum", diff * diff, -1))
    return A.reduce(xp, "sum", diff ** p, -1) ** (1.0 / p)


@defop("_euclidean_dist", node="EuclideanDistBackward0", inputs=("x1", "x2"),
       x1="euclidean_dist_grads(grad, x1, x2, result)[0]", x2="euclidean_dist_grads(grad, x1, x2, result)[1]",
       jvp="euclidean_dist_jvp(x1_t, x2_t, x1, x2, result)")
def euclidean_dist_op(xp, a, b):
    """Distances through one matmul, torch's way for large inputs: |a|^2 - 2 a.b + |b|^2, clamped at 0."""
    sq_a = A.reduce(xp, "sum", a * a, -1, True)
    sq_b = A.reduce(xp, "sum", b * b, -1, True)
    d2 = xp.matmul(a, A.matrix_transpose(xp, b)) * -2 + sq_a + A.matrix_transpose(xp, sq_b)
    return xp.sqrt(xp.maximum(d2, 0))


# torch's nn composites reach this reduction row through an overload with its own node name
norm_op = vector_norm_op.alias("norm_dim", "NormBackward1")


def frobenius_norm(input: Tensor, dim: Sequence[int], keepdim: bool = False) -> Tensor:
    """torch.frobenius_norm, which torch keeps for TorchScript: ATen's norm(input, 2, dim, keepdim) over at most
    2 dims (NormBackward1)."""
    warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead")
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    if input.dtype.category < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{D.scalar_type_name(input.dtype)} instead.")
    return apply(norm_op, (input,), (2.0, _reduced_dims(dim, input.ndim), keepdim))


def nuclear_norm(input: Tensor, dim: Sequence[int] | bool = (-2, -1), keepdim: bool = False) -> Tensor:
    """torch.nuclear_norm(input, keepdim=False) or (input, dim, keepdim=False), which torch keeps for TorchScript:
    linalg.matrix_norm(input, 'nuc', dim, keepdim)."""
    warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if isinstance(dim, bool):
        dim, keepdim = (-2, -1), dim
    return matrix_norm(input, "nuc", dim, keepdim)


# ============================================================================================
# Array helpers (forwards)
# ============================================================================================


def _reduce(xp, loss, reduction: str):
    if reduction == "mean":
        return A.mean(xp, loss)
    if reduction == "sum":
        return xp.sum(loss)
    return loss


def _at_targets(xp, x, index, values=None):
    """x's entry at each sample's class index along the class dim (dim 1, or 0 for one sample), or, given
    `values`, write them there. Plain integer indexing for 1-d and 2-d inputs (take_along_axis's Python
    wrapper costs more than a small loss)."""
    cls = 1 if x.ndim > 1 else 0
    if values is not None and not hasattr(x, "strides"):  # the standard has no indexed assignment: a one-hot select
        classes = xp.reshape(xp.arange(x.shape[cls], device=x.device), (-1,) + (1,) * (x.ndim - cls - 1))
        return xp.where(xp.expand_dims(index, axis=cls) == classes,
                        xp.expand_dims(xp.broadcast_to(values, index.shape), axis=cls), x)
    if x.ndim <= 2:
        where = (xp.arange(x.shape[0], device=x.device), index) if x.ndim == 2 else index
        if values is None:
            return x[where]
        x[where] = values
        return x
    if values is not None:
        values = xp.expand_dims(xp.broadcast_to(values, index.shape), cls)
    index = xp.expand_dims(index, cls)
    if values is None:
        return xp.squeeze(xp.take_along_axis(x, index, axis=cls), axis=cls)
    xp.put_along_axis(x, index, values, axis=cls)
    return x


def _sample_weights(xp, target, weight, ignore_index: int | None, dtype: object):
    """Each sample's class weight, 0 where the target is ignore_index (None: no target is ignored)."""
    valid = None if ignore_index is None else target != ignore_index
    if weight is None:
        w = xp.ones(target.shape, dtype=dtype, device=target.device)
    else:
        classes = target if valid is None else xp.where(valid, target, 0)
        w = A.astype(xp, _class_weights(xp, weight, classes), dtype, copy=False)
    return w if valid is None else A.astype(xp, xp.where(valid, w, 0), dtype, copy=False)


def _class_weights(xp, weight, target):
    """weight[target]: each sample's class weight, in target's shape (the standard's take wants a vector)."""
    if hasattr(weight, "strides"):
        return weight[target]
    return xp.reshape(xp.take(weight, xp.reshape(target, (-1,)), axis=0), target.shape)


def _row_scale(xp, flat, num_weights: int, padding_idx: int | None, by_freq: bool):
    """Per looked-up index (float64): 0 for padding_idx, 1 / count with scale_grad_by_freq, else 1."""
    scale = xp.ones(flat.shape, dtype=xp.float64, device=flat.device)
    if by_freq:
        counts = A.add_at(xp, xp.zeros(num_weights, dtype=xp.float64, device=flat.device), flat, scale)
        scale = scale / xp.take(counts, flat)
    if padding_idx is not None:
        scale = xp.where(flat == padding_idx, 0.0, scale)
    return scale


def _margin_terms(xp, x, target, margin):
    """margin - x[y] + x[i] for every class i, and 0 at the target class itself."""
    picked = xp.take_along_axis(x, target[..., None], axis=-1)
    terms = margin - picked + x
    return xp.where(xp.arange(x.shape[-1], device=x.device) == target[..., None], 0, terms)


def _multilabel_hinges(xp, x, target):
    """1 - x[y_j] + x[i] for every listed target j (up to the first -1) and every non-target class i."""
    listed = xp.cumulative_sum(A.astype(xp, target < 0, xp.int64), axis=-1) == 0  # the entries before the first -1
    safe = xp.where(listed, target, 0)
    classes = xp.arange(x.shape[-1], device=x.device)
    is_target = xp.any((safe[..., :, None] == classes) & listed[..., :, None], axis=-2)
    pairs = listed[..., :, None] & ~is_target[..., None, :]
    picked = xp.take_along_axis(x, safe, axis=-1)
    hinge = xp.where(pairs, 1 - picked[..., :, None] + x[..., None, :], 0)
    return hinge, pairs, safe


# ============================================================================================
# Formula helpers: differentiable pieces the rules above share
# ============================================================================================


def reduced_grad(grad: Tensor, reduction: str, *shapes: tuple) -> Tensor:
    """The incoming gradient spread over the elements a 'mean'/'sum' reduction combined."""
    if reduction == "mean":
        n = math.prod(np.broadcast_shapes(*shapes))
        return grad / n if n else grad * float("nan")
    return grad


def per_sample(grad: Tensor, reduction: str, shape: tuple) -> Tensor:
    """Each sample's share of the incoming gradient, with a trailing dim to broadcast over its classes."""
    return reduced_grad(grad, reduction, shape) if reduction != "none" else grad.unsqueeze(-1)


def loss_reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def standardized(input: Tensor, axes: NormAxes, eps: float) -> tuple[Tensor, Tensor]:
    """(x - mean) * invstd in the statistics layout, and invstd; constant statistics when frozen."""
    xs = input.reshape(axes.layout)
    if axes.frozen is not None:
        mean, var = axes.frozen
        invstd = constant_like(1 / namespace(var).sqrt(var + eps), input)
        return (xs - constant_like(mean, input)) * invstd, invstd
    centered = xs - xs.mean(axes.dims, keepdim=True)
    invstd = ((centered * centered).mean(axes.dims, keepdim=True) + eps) ** -0.5
    return centered * invstd, invstd


def _through_statistics(t: Tensor, xhat: Tensor, axes: NormAxes) -> Tensor:
    """A cotangent or tangent (in the layout) passed through the mean and variance of the statistics."""
    if axes.frozen is not None:
        return t
    return t - t.mean(axes.dims, keepdim=True) - xhat * (t * xhat).mean(axes.dims, keepdim=True)


# Note [unrecorded batch-norm backward]
# Batch norm's backward formulas are differentiable ops, so that a gradient taken under create_graph can be
# differentiated again; run one by one they take about ten passes over the input, most with a fresh
# temporary, and recompute the statistics the forward took. When nothing records them (grad mode off in
# backward: create_graph=False, and no forward-mode level, vmap or saved-tensor hook active) they are
# computed in NumPy instead, from the forward's (mean, invstd), which the node keeps in its NormAxes
# parameter: one pass for sum(grad), one for sum(grad * (x - mean)), each summed per (sample, channel) plane
# and the planes added in float64, and the input's gradient by torch's CPU kernel's formula,
# (grad - sum / n - (x - mean) * k) * (invstd * weight) with k = dot * invstd^2 / n, the last factor one per
# channel (a pass fewer than a product by each: 1.75 -> 1.47 ms for the node of a ResNet layer's (32, 16, 32,
# 32) float32, within an ulp of two roundings). Both passes run a block of samples at a time (Note [blockwise
# passes] in ops/arrays.py): x - mean is a block's temporary, taken in each while the block is in the cache,
# and the result is the one full-size array (the same bits as whole-array passes; 1.55 -> 1.40 ms alone). Same
# formula as the recorded path (the biased variance's invstd, the sums over their count).


def _batch_statistics(input: Tensor, axes: NormAxes) -> bool:
    """Whether the statistics are the input's own, taken over the elements that each weight scales (batch norm
    in training): then the sums of the weight and bias gradients are also the means the input gradient needs."""
    return axes.frozen is None and axes.layout == tuple(input.shape) and \
        tuple(i for i, n in enumerate(axes.affine) if n == 1) == tuple(axes.dims)


def _batch_norm_grads_unrecorded(grad: Tensor, input: Tensor, weight: Tensor | None,
                                 moments: tuple | None) -> tuple[Tensor, Tensor, Tensor] | None:
    """Note [unrecorded batch-norm backward]: batch norm's three gradients in NumPy from the forward's saved
    statistics, when nothing records them; None when they must be differentiable ops."""
    arrays = unrecorded_arrays(grad, input, *(() if weight is None else (weight,)))
    if arrays is None or moments is None:
        return None
    g, x = arrays[:2]
    n, c = x.shape[:2]
    rows, inputs = g.reshape(n, c, -1), x.reshape(n, c, -1)
    count = n * rows.shape[2]
    mean, invstd = moments[0].reshape(c, 1), moments[1].reshape(c)
    wide = np.float64 if x.dtype in (np.float32, np.float64) else x.dtype  # torch's CPU acc_type
    ones = np.ones(rows.shape[2], dtype=rows.dtype)
    sums, dot = np.zeros(c, dtype=wide), np.zeros(c, dtype=wide)
    parts = A.blocks(n, c * rows.shape[2])  # Note [blockwise passes]: a block's centred input stays in the cache
    for part in parts:
        sums += (rows[part] @ ones).sum(0, dtype=wide)  # planes by BLAS, then added
        dot += np.vecdot(rows[part], inputs[part] - mean).sum(0, dtype=wide)  # sum(grad * (x - mean)) per channel
    k = (dot.astype(x.dtype) * invstd * invstd / x.dtype.type(count))[:, None]
    grad_mean = (sums / count).astype(x.dtype)[:, None]
    scale = invstd[:, None] if weight is None else (invstd * weight._data)[:, None]
    input_grad = np.empty(rows.shape, dtype=x.dtype)
    for part in parts:
        centered = inputs[part] - mean
        centered *= k
        block = input_grad[part]
        np.subtract(rows[part], grad_mean, out=block)
        block -= centered
        block *= scale  # invstd * weight per channel: one pass where two took each factor
    return _wrap(input_grad.reshape(x.shape)), _wrap((dot * invstd).astype(x.dtype)), _wrap(sums.astype(x.dtype))


# Note [unrecorded layer-norm backward]
# The same for layer norm (statistics over the trailing dims, weight and bias over those dims too): the
# differentiable formulas take about fifteen passes, each an op with its own temporary, and the statistics
# again (3.8 ms against torch's 0.11 for (32, 64, 128) float32). Unrecorded, it is NumPy on the (rows, D)
# matrix: the statistics again (the forward keeps none), x_hat, the column sums for the weight and bias
# gradients, and the input's invstd * (g' - mean(g') - x_hat * mean(g' * x_hat)), g' = grad * weight, with the
# row means as matrix-vector products. Same formula as the recorded path, rounded differently.


def _layer_statistics(input: Tensor, axes: NormAxes) -> bool:
    """Whether the statistics are each trailing slice's own and the weight spans that slice (layer norm)."""
    return axes.frozen is None and axes.layout == tuple(input.shape) and axes.affine == axes.params and \
        axes.dims == tuple(range(input.ndim - len(axes.dims), input.ndim)) and \
        axes.affine == tuple(input.shape[input.ndim - len(axes.dims):])


def _layer_norm_grads_unrecorded(grad: Tensor, input: Tensor, weight: Tensor | None, axes: NormAxes,
                                 eps: float) -> tuple[Tensor, Tensor, Tensor] | None:
    """Note [unrecorded layer-norm backward]: layer norm's three gradients in NumPy, when nothing records them;
    None when they must be differentiable ops."""
    arrays = unrecorded_arrays(grad, input, *(() if weight is None else (weight,)))
    if arrays is None or not input._data.size:
        return None
    g, x = arrays[:2]
    width = math.prod(axes.params)
    rows, g = x.reshape(-1, width), g.reshape(-1, width)
    per_width = np.full(width, 1 / width, dtype=x.dtype)
    xhat = rows - (rows @ per_width)[:, None]
    invstd = 1 / np.sqrt(np.vecdot(xhat, xhat) / width + eps)
    xhat *= invstd[:, None]
    per_row = np.ones(rows.shape[0], dtype=x.dtype)
    bias_grad = per_row @ g  # column sums as matrix-vector products (a third of np.sum(0)'s time)
    scaled = g * xhat
    weight_grad = per_row @ scaled
    if weight is None:
        scaled = g.copy()
    else:
        np.multiply(g, weight._data.reshape(width), out=scaled)  # g' (the product above is spent)
    xhat *= (np.vecdot(scaled, xhat) / width)[:, None]
    scaled -= (scaled @ per_width)[:, None]
    scaled -= xhat
    scaled *= invstd[:, None]
    return _wrap(scaled.reshape(x.shape)), _wrap(weight_grad.reshape(axes.params)), \
        _wrap(bias_grad.reshape(axes.params))


def norm_grads(grad: Tensor, input: Tensor, weight: Tensor | None, axes: NormAxes,
               eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(input, weight, bias) gradients of a normalisation, from one standardisation (Note [shared gradient
    calls]): sum(grad * xhat) and sum(grad) over the affine dims, and the input's invstd * (g' - mean(g') -
    xhat * mean(g' * xhat)), g' = grad * weight. Where the statistics are taken over the same elements as those
    sums (batch norm), the two means are those sums over their count, so they are not taken again."""
    if _batch_statistics(input, axes):
        fast = _batch_norm_grads_unrecorded(grad, input, weight, axes.moments)
        if fast is not None:
            return fast
    elif _layer_statistics(input, axes):
        fast = _layer_norm_grads_unrecorded(grad, input, weight, axes, eps)
        if fast is not None:
            return fast
    xhat, invstd = standardized(input, axes, eps)
    flat_xhat = xhat.reshape(input.shape)
    weight_grad = sum_to(grad * flat_xhat, axes.affine)
    bias_grad = sum_to(grad, axes.affine)
    w = None if weight is None else weight.reshape(axes.affine)
    if _batch_statistics(input, axes):
        count = math.prod(input.shape[i] for i in axes.dims)
        scale = invstd if w is None else invstd * w
        input_grad = (grad - bias_grad / count - flat_xhat * (weight_grad / count)) * scale
    else:
        g = grad if w is None else grad * w
        input_grad = (_through_statistics(g.reshape(axes.layout), xhat, axes) * invstd).reshape(input.shape)
    return input_grad, weight_grad.reshape(axes.params), bias_grad.reshape(axes.params)


def standardize_jvp(input_t: Tensor, weight_t: Tensor | None, bias_t: Tensor | None, input: Tensor,
                    weight: Tensor | None, axes: NormAxes, eps: float) -> Tensor:
    xhat, invstd = standardized(input, axes, eps)
    out = (_through_statistics(input_t.reshape(axes.layout), xhat, axes) * invstd).reshape(input.shape)
    if weight is not None:
        out = out * weight.reshape(axes.affine)
        if isinstance(weight_t, Tensor):
            out = out + xhat.reshape(input.shape) * weight_t.reshape(axes.affine)
    if isinstance(bias_t, Tensor):
        out = out + bias_t.reshape(axes.affine)
    return out


def embedding_row_scale(indices: np.ndarray, num_weights: int, padding_idx: int | None, by_freq: bool,
                        dtype: object) -> Tensor:
    xp = namespace(indices)
    scale = _row_scale(xp, A.reshape(xp, indices, -1), num_weights, padding_idx, by_freq)
    return _wrap(A.astype(xp, A.reshape(xp, scale, (*indices.shape, 1)), dtype))


def attention_probs(query: Tensor, key: Tensor, is_causal: bool, attn_mask: np.ndarray | None,
                    scale: float | None) -> Tensor:
    """softmax(q k^T s + mask), zero in a row every key is masked from (Note [attention in torch's order])."""
    mask = attention_mask(namespace(query._data), attn_mask, is_causal, query._data, key._data)
    scores = matmul(query, key.mT) * _attention_scale(scale, query)
    if mask is None:
        return softmax(scores, -1)
    return _zero_masked_rows(softmax(scores + constant_like(mask, query), -1), mask)


def _zero_masked_rows(probs: Tensor, mask: np.ndarray) -> Tensor:
    """Attention probabilities with zeros in each row the additive `mask` is -inf all along (torch's _safe_softmax)."""
    xp = namespace(mask)
    masked_rows = xp.all(xp.isinf(mask) & (mask < 0), axis=-1, keepdims=True)
    if not bool(xp.any(masked_rows)):
        return probs
    return probs.masked_fill(_wrap(xp.broadcast_to(masked_rows, tuple(probs.shape))), 0.0)


def attention_grads(grad: Tensor, query: Tensor, key: Tensor, value: Tensor, output: Tensor, logsumexp: Tensor,
                    dropout_p: float, is_causal: bool, attn_mask: np.ndarray | None,
                    scale: float | None) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) of softmax(q k^T s + mask) v, through the attention probabilities P: from the saved output and
    log-sum-exp when nothing records them (Note [attention backward from the log-sum-exp]), else recomputed by
    differentiable ops. dropout_p is 0 (the fused row takes none)."""
    fast = _attention_grads_unrecorded(grad, query, key, value, output, logsumexp, is_causal, attn_mask, scale)
    if fast is not None:
        return fast
    probs = attention_probs(query, key, is_causal, attn_mask, scale)
    d_scores = softmax_backward_data(matmul(grad, value.mT), probs, probs.ndim - 1) * _attention_scale(scale, query)
    return matmul(d_scores, key), matmul(d_scores.mT, query), matmul(probs.mT, grad)


# Note [attention backward from the log-sum-exp]
# The fused row saves each row's log-sum-exp of the scores, as torch's kernel does, so its backward rebuilds the
# probabilities in two passes, P = exp(s - lse), not softmax's five (maximum, difference, exponential, sum,
# quotient); and softmax's backward P * (dP - rowsum(dP * P)) takes its row sums from the (L, E) output, rowsum(dP *
# P) = rowsum(dO * O) (dP = dO V^T, O = P V), not the (L, S) product. Unrecorded, in NumPy, as the layer norm's
# backward; under create_graph, or for a narrow query, the differentiable composition recomputes P.


def _attention_grads_unrecorded(grad: Tensor, query: Tensor, key: Tensor, value: Tensor, output: Tensor,
                                logsumexp: Tensor, is_causal: bool, attn_mask: np.ndarray | None,
                                scale: float | None) -> tuple[Tensor, Tensor, Tensor] | None:
    """Note [attention backward from the log-sum-exp]: (dq, dk, dv) in NumPy, or None where they must be ops."""
    if query.dtype is not D.float32 and query.dtype is not D.float64:
        return None
    arrays = unrecorded_arrays(grad, query, key, value, output, logsumexp)
    if arrays is None:
        return None
    g, q, k, v, o, lse = arrays
    scale = _attention_scale(scale, q)
    s = q @ k.swapaxes(-1, -2)
    s *= scale
    mask = attention_mask(np, attn_mask, is_causal, q, k)
    if mask is not None:
        s += mask
    s -= lse[..., None]
    probs = np.exp(s, out=s)
    d_probs = g @ v.swapaxes(-1, -2)
    d_probs -= np.vecdot(g, o)[..., None]
    d_probs *= probs
    d_probs *= scale  # the scores' gradient
    return (_wrap(d_probs @ k), _wrap(d_probs.swapaxes(-1, -2) @ q), _wrap(probs.swapaxes(-1, -2) @ g))


def attention_jvp(query_t: Tensor, key_t: Tensor, value_t: Tensor, query: Tensor, key: Tensor, value: Tensor,
                  is_causal: bool, attn_mask: np.ndarray | None, scale: float | None) -> Tensor:
    probs = attention_probs(query, key, is_causal, attn_mask, scale)
    d_scores = (matmul(query_t, key.mT) + matmul(query, key_t.mT)) * _attention_scale(scale, query)
    d_probs = probs * (d_scores - (d_scores * probs).sum(-1, keepdim=True))
    return matmul(d_probs, value) + matmul(probs, value_t)


def nll_loss_of(x: Tensor, target: np.ndarray, weight: np.ndarray | None, reduction: str, ignore_index: int) -> Tensor:
    """nll_loss's row for x's rank: images (more than 2 dims) record NllLoss2DBackward0, as in torch."""
    return (nll_loss2d_op if x.ndim > 2 else nll_loss_op)(x, target, weight, reduction, ignore_index)


def nll_loss_grad(grad: Tensor, x: Tensor, target: np.ndarray, weight: np.ndarray | None, reduction: str,
                  ignore_index: int) -> Tensor:
    """nll_loss's backward through the row for x's rank (NllLoss[2D]BackwardBackward0 under create_graph)."""
    row = nll_loss2d_backward_op if x.ndim > 2 else nll_loss_backward_op
    return row(grad, x, target, weight, reduction, ignore_index)


def bce_input_grad(grad: Tensor | float, x: Tensor, t: Tensor, w: Tensor | None, reduction: str) -> Tensor:
    """(x - t) / max(x (1 - x), 1e-12) * w, torch's clamped slope."""
    g = reduced_grad(grad, reduction, x.shape)
    d = (x - t) / clamp_min((1 - x) * x, 1e-12) * g
    return d * w if w is not None else d


def bce_target_grad(grad: Tensor | float, x: Tensor, t: Tensor, w: Tensor | None, reduction: str) -> Tensor:
    """-logit(x) * w."""
    g = reduced_grad(grad, reduction, x.shape)
    d = (log1p(-x) - log(x)) * g
    return d * w if w is not None else d


def bce_logits_input_grad(grad: Tensor | float, x: Tensor, t: Tensor, w: Tensor | None, pw: Tensor | None,
                          reduction: str) -> Tensor:
    g = reduced_grad(grad, reduction, x.shape, t.shape)
    d = sigmoid(x) - t if pw is None else (pw * t + 1 - t) * sigmoid(x) - pw * t
    return d * g * w if w is not None else d * g


def bce_logits_target_grad(grad: Tensor | float, x: Tensor, t: Tensor, w: Tensor | None, pw: Tensor | None,
                           reduction: str) -> Tensor:
    g = reduced_grad(grad, reduction, x.shape, t.shape)
    d = -x if pw is None else (pw - 1) * -log(sigmoid(x)) - x
    return d * g * w if w is not None else d * g


def smooth_l1_slope(d: Tensor, beta: float) -> Tensor:
    """d/beta inside (-beta, beta), sign(d) outside."""
    return where(d.abs() < beta, d / beta, d.sgn())


def huber_slope(d: Tensor, delta: float) -> Tensor:
    """d inside (-delta, delta), delta * sign(d) outside."""
    return where(d.abs() < delta, d, delta * d.sgn())


def margin_coefficients(x: Tensor, target: np.ndarray, p: int, margin: float, weight: Tensor | None) -> Tensor:
    """d loss / d x of multi_margin_loss per sample: slope of each active hinge, minus their sum at the target."""
    cls = x.shape[-1]
    index = _wrap(target[..., None])
    terms = margin - x.gather(-1, index) + x
    xp = namespace(target)
    active = constant_like((terms._data > 0) & (xp.arange(cls, device=target.device) != target[..., None]), x)
    slope = active if p == 1 else 2 * terms * active
    if weight is not None:
        slope = slope * weight[_wrap(target)].unsqueeze(-1)
    slope = slope / cls
    return slope - zeros(x.shape, dtype=x.dtype, device=x.device).scatter(-1, index, slope.sum(-1, keepdim=True))


def multilabel_margin_coefficients(x: Tensor, target: np.ndarray) -> Tensor:
    """d loss / d x of multilabel_margin_loss per sample (piecewise constant: the count of active hinges)."""
    xp = namespace(target)
    hinge, pairs, safe = _multilabel_hinges(xp, x._data, target)
    active = A.astype(xp, pairs & (hinge > 0), x._data.dtype)
    coef = A.reduce(xp, "sum", active, -2)  # each target's place loses its count of active hinges
    coef = scatter_add_op.forward(xp, coef, -A.reduce(xp, "sum", active, -1), coef.ndim - 1, safe)
    return constant_like(coef / x.shape[-1], x)


def cdist_slope(x1: Tensor, x2: Tensor, result: Tensor, p: float) -> Tensor:
    """d dist[i, j] / d x1[i] for every pair: (..., P, R, M), zero where the distance is zero."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    dist = result.unsqueeze(-1)
    if p == 0:
        return diff * 0
    if p == 1:
        return diff.sgn()
    if math.isinf(p):
        return diff.sgn() * (diff.abs() == dist)
    safe = where(dist == 0, 1, dist)
    if p == 2:
        return where(dist == 0, 0, diff / safe)
    return where(dist == 0, 0, diff.sgn() * diff.abs() ** (p - 1) / safe ** (p - 1))


def cdist_grad(grad: Tensor, x1: Tensor, x2: Tensor, result: Tensor, p: float) -> Tensor:
    return (cdist_slope(x1, x2, result, p) * grad.unsqueeze(-1)).sum(-2)


def euclidean_dist_grads(grad: Tensor, x1: Tensor, x2: Tensor, result: Tensor) -> tuple[Tensor, Tensor]:
    ratio = where(result == 0, 0, grad / where(result == 0, 1, result))
    return (x1 * ratio.sum(-1, keepdim=True) - matmul(ratio, x2),
            x2 * ratio.sum(-2).unsqueeze(-1) - matmul(ratio.mT, x1))


def euclidean_dist_jvp(x1_t: Tensor, x2_t: Tensor, x1: Tensor, x2: Tensor, result: Tensor) -> Tensor:
    """d|x1_i - x2_j| = (x1_i - x2_j) . (dx1_i - dx2_j) / dist."""
    cross = (x1 * x1_t).sum(-1, keepdim=True) + (x2 * x2_t).sum(-1).unsqueeze(-2)
    cross = cross - matmul(x1_t, x2.mT) - matmul(x1, x2_t.mT)
    return where(result == 0, 0, cross / where(result == 0, 1, result))


# ============================================================================================
# Public functions: argument handling in torch's words
# ============================================================================================


def _not_differentiable(function: str, **tensors: Tensor | None) -> None:
    for name, t in tensors.items():
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{function}' is not differentiable with respect to argument '{name}'. "
                               "This input cannot have requires_grad True.")


# Note [the deprecated size_average and reduce]
# torch translates the deprecated flags in torch/nn/_reduction.py, whose warning (stacklevel 2) names the line that
# called it in torch's own code: each functional loss's own line, or, for the losses that go through legacy_get_enum,
# the one line of legacy_get_enum; nn's losses name _Loss.__init__'s. So under the default filter each of those
# places warns once per process (per reduction named), whatever the user's line. Our warnings name our lines in the
# same way: the loss's call of _reduction, the one line of _warn_legacy_shared, _Loss.__init__'s call.
LEGACY_REDUCTION_WARNING = "size_average and reduce args will be deprecated, please use reduction='{}' instead."


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str, shared_warning: bool = False) -> str:
    """The reduction, honouring the deprecated size_average/reduce flags as torch does; their warning names the
    calling loss's line, or with `shared_warning` (torch's losses that use legacy_get_enum) one line for all
    (Note [the deprecated size_average and reduce])."""
    if size_average is not None or reduce is not None:
        legacy = _legacy_reduction(size_average, reduce)
        if shared_warning:
            _warn_legacy_shared(legacy)
        else:
            warnings.warn(LEGACY_REDUCTION_WARNING.format(legacy), UserWarning, stacklevel=2)
        return legacy
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _warn_legacy_shared(reduction: str) -> None:
    """The deprecation warning at one line for every loss torch translates through legacy_get_enum."""
    warnings.warn(LEGACY_REDUCTION_WARNING.format(reduction), UserWarning, stacklevel=1)


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _warn_size(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """torch's legacy choice of softmax dim when none is given, with its deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


# ---- softmax family -------------------------------------------------------------------------

def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    dim = _implicit_dim("softmax", input.ndim, _stacklevel) if dim is None else dim
    return apply(softmax_op, (input,), (_wrap_dim(dim, input._data.ndim),))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """log(softmax(x)) along dim, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    dim = _implicit_dim("log_softmax", input.ndim, _stacklevel) if dim is None else dim
    return apply(log_softmax_op, (input,), (_wrap_dim(dim, input._data.ndim),))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None) -> Tensor:
    """softmax(-x) along dim."""
    if dtype is not None:
        input = input.to(dtype)
    return softmax(-input, _implicit_dim("softmin", input.ndim, _stacklevel) if dim is None else dim)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + Gumbel noise) / tau); hard=True gives one-hot samples with the soft gradient."""
    # -log(Exponential(1)), drawn as torch draws it: into a row-major empty_like (its legacy_contiguous_format)
    gumbels = -_creation.empty_like(logits, memory_format=contiguous_format).exponential_().log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    hard_one = _creation.zeros_like(logits).scatter(dim, index, 1.0)
    return hard_one - soft.detach() + soft


# ---- linear layers --------------------------------------------------------------------------

@composite("aten::linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias: one fused addmm (AddmmBackward0) as torch, for any number of leading dims.

    >>> linear(randn(8, 4), randn(3, 4), randn(3)).grad_fn
    <AddmmBackward0 object at ...>
    """
    if bias is None:
        return matmul(input, weight.t())
    nd = input._data.ndim
    if nd == 2:
        return addmm(bias, input, weight.t())
    flags = getattr(input._data, "flags", None)  # None: an array API array without a memory layout
    if (flags is None or flags.c_contiguous) and bias._data.ndim == 1:  # flatten the leading dims, as torch does
        flat = input.reshape(math.prod(input.shape[:-1]), input.shape[-1])
        return addmm(bias, flat, weight.t()).view(*input.shape[:-1], weight.shape[0])
    return matmul(input, weight.t()) + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1 . W_k . x2 + b_k over the last dims."""
    named = {"input1": input1, "input2": input2, "weight": weight, "bias": bias}
    if len({t.dtype for t in named.values() if t is not None}) > 1:  # torch checks this first
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{name}: {D.CPP_TYPE_NAMES[t.dtype.name]}" for name, t in named.items() if t is not None))
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for a, b in zip(input1.shape[:-1], input2.shape[:-1]):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {a} and {b}")
    out_f, n1, n2 = weight.shape
    if input1.shape[-1] != n1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {n1}")
    if input2.shape[-1] != n2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {n2}")
    if bias is not None and bias.shape[0] != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                           f"{out_f}")
    x1 = input1.reshape(-1, n1)
    x2 = input2.reshape(-1, n2)
    mixed = x1.mm(weight.permute(1, 0, 2).reshape(n1, out_f * n2)).view(-1, out_f, n2)
    out = (mixed * x2.unsqueeze(1)).sum(-1).reshape(*input1.shape[:-1], out_f)
    return out + bias if bias is not None else out


# ---- embedding, one_hot ---------------------------------------------------------------------

def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` at the indices `input`; padding_idx's row gets no gradient; max_norm renormalises
    the looked-up rows of weight in place (no gradient), as torch does. The gradient is always dense."""
    indices = input._data
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {D.aten_type_name(input.dtype)} instead (while checking arguments for "
                           "embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    high, least = _index_range(indices)
    if high >= n or least < 0:
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, namespace(indices).unique_values(indices), max_norm, norm_type)
    indices = A.astype(namespace(indices), indices, np.int64, copy=False)
    return keep_index_versions(apply(embedding_op, (weight,), (indices, padding_idx, scale_grad_by_freq)), input)


def _renorm_rows(weight: Tensor, rows: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch.embedding_renorm_: scale the given rows down to max_norm, in place and outside autograd."""
    data = weight._data
    xp = namespace(data)
    picked = xp.take(data, rows, axis=0)
    norms = xp.linalg.vector_norm(picked, ord=norm_type, axis=1)
    scale = A.astype(xp, xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)[:, None], data.dtype)
    if hasattr(data, "strides"):
        data[rows] *= scale
    else:  # the standard writes only whole arrays in place
        data[...] = index_put_op.forward(xp, data, picked * scale, (rows,), False)
    weight._bump_version()


def _legacy(t: Tensor) -> str:
    return D.scalar_type_name(t.dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim (no gradient). An empty input needs a positive num_classes: it has
    no values to infer it from, and torch refuses rather than return a size-0 class dim."""
    idx = tensor._data
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if not idx.size and num_classes <= 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    high, least = _index_range(idx)
    if least < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(high) + 1
    elif idx.size and high >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    xp = namespace(idx)
    return _wrap(A.astype(xp, idx[..., None] == xp.arange(num_classes, device=idx.device), np.int64))


# ---- dropout --------------------------------------------------------------------------------

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, p: float, feature: bool) -> np.ndarray | Tensor:
    """Bernoulli(1 - p) draws from retrograd's generator: per element, or per (sample, channel) for features.
    torch draws an element mask into `empty_like(input)`, which keeps input's layout, and fills it in memory order:
    on a permuted input (attention's output, transposed back to batch-first) the draws run in that order too."""
    shape = input.shape if not feature else (*input.shape[:2], *(1,) * (input.ndim - 2))
    if transforms.vmap and (hasattr(input, "_levels") or any(lv.randomness == "different" for lv in transforms.vmap)):
        return _batched_keep_mask(input, p, tuple(shape))  # a batched input, or one mask per example wanted
    if type(input._data) is np.ndarray:  # torch's CPU masks (Note [torch's CPU random streams])
        order = tuple(range(input.ndim)) if feature else memory_order(input._data)
        keep = _creation._torch_rng(None).bernoulli(1 - p, tuple(shape[d] for d in order))
        return keep.transpose(np.argsort(order)).astype(input._data.dtype)
    keep = _creation.rand(*shape, dtype=input.dtype, device=input.device)._data < 1 - p
    return A.astype(namespace(keep), keep, input.dtype)


# Note [dropout under vmap]
# As torch's batching rule for dropout, the running vmap levels' randomness picks the mask: 'different' draws one
# for every example, also of an input that is not batched, 'same' one mask for all examples, 'error' refuses: the
# draw of a random factory (Note [random factories under vmap]), torch's CPU bernoulli row-major over the batch dims
# of the 'different' levels and the mask's shape.

def _batched_keep_mask(input: Tensor, p: float, shape: tuple) -> Tensor:
    """The keep mask of a dropout inside vmap, batched at its 'different' levels (Note [dropout under vmap])."""
    rng = _creation._torch_rng(None)  # torch's error under randomness='error'
    return _creation._per_example(shape, lambda shape: _wrap(rng.bernoulli(1 - p, shape).astype(input.dtype.np)))


def _constant(value: np.ndarray | Tensor, like: Tensor) -> Tensor:
    """A mask-derived value as a tensor in `like`'s dtype: a batched mask (vmap) is one already."""
    return value if isinstance(value, Tensor) else constant_like(value, like)


@defop("native_dropout_backward", node="NativeDropoutBackwardBackward0", inputs=("grad_output",),
       params=("mask", "scale"), grad_output="native_dropout_backward_op(grad, mask, scale)",
       jvp="native_dropout_backward_op(grad_output_t, mask, scale)")
def native_dropout_backward_op(xp, g, mask, scale):
    """aten::native_dropout_backward: the gradient of a dropout that kept `mask` and scaled by `scale`."""
    return (g * mask * scale).astype(g.dtype, copy=False)


def _dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool = False,
             alpha: bool = False) -> Tensor:
    """torch's _dropout_impl: input * noise (MulBackward0), plus an affine shift for alpha dropout."""
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        noise = constant_like(0.0, input)
        return input.mul_(noise) if inplace else input * noise
    keep = _keep_mask(input, p, feature)
    if not alpha:
        noise = _constant(keep / (1 - p), input)
        return input.mul_(noise) if inplace else input * noise
    selu_alpha = 1.7580993408473766  # -SELU's lower bound: dropped units are set there, then re-standardised
    a = 1.0 / math.sqrt((selu_alpha * selu_alpha * p + 1) * (1 - p))
    shift = _constant((keep - 1) * selu_alpha * a + selu_alpha * a * p, input)
    scaled = input.mul_(_constant(keep * a, input)) if inplace else input * _constant(keep * a, input)
    return scaled.add_(shift) if inplace else scaled + shift


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only).

    Draws come from retrograd's default generator (`retrograd.manual_seed` makes them repeatable).
    """
    return _dropout(input, p, training, inplace)


def _on_batch_of_one(fn: object, input: Tensor, unbatched: bool) -> Tensor:
    """Run fn on input with a batch dim added (and removed again) when it has none, as torch does."""
    return fn(input.unsqueeze(0)).squeeze(0) if unbatched else fn(input)


def _warn_dims(name: str, input: Tensor, dims: tuple[int, int], d: int) -> None:
    if input.ndim not in dims:
        warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will result in "
                      "an error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with {d} "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. {dims[0]}D or "
                      f"{dims[1]}D inputs).", UserWarning, stacklevel=3)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _on_batch_of_one(lambda t: _dropout(t, p, training, inplace, True), input, input.ndim == 2)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability p (a 3-d input is taken as (N, C, L), as torch)."""
    _check_p(p)
    _warn_dims("dropout2d", input, (3, 4), 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
    return _dropout(input, p, training, inplace, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    _check_p(p)
    _warn_dims("dropout3d", input, (4, 5), 3)
    return _on_batch_of_one(lambda t: _dropout(t, p, training, inplace, True), input, input.ndim != 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: keeps mean and variance (dropped units go to SELU's lower bound)."""
    return _dropout(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels."""
    _check_p(p)
    return _dropout(input, p, training, inplace, feature=True, alpha=True)


# ---- normalisation --------------------------------------------------------------------------

def _channel_view(shape: Sequence[int]) -> tuple[int, ...]:
    """(1, C, 1, ...): a per-channel weight against an (N, C, ...) input."""
    return (1, shape[1], *(1,) * (len(shape) - 2))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalise each channel of (N, C, ...) by its batch statistics (training) or the running ones.

    In training the running statistics are updated in place: r = (1 - momentum) r + momentum * stat,
    with the unbiased variance, as torch does.
    """
    x = input._data
    if training and x.shape[0] * math.prod(x.shape[2:]) == 1:  # torch checks this first (a 0-d input: IndexError)
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    if transforms.vmap:
        return _batch_norm_in_ops(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if x.size == 0:  # as torch: a copy scaled and shifted by the first weight and bias, no statistics checked
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        return out if bias is None else out + bias[0]
    channels = x.shape[1] if x.ndim > 1 else 0  # torch's count for a 1-d input, which it then refuses
    dims = (0, *range(2, x.ndim))
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is None and not training and name.startswith("running"):
            raise RuntimeError(f"{name} must be defined in evaluation mode")
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    _wrap_dim(1, x.ndim)  # torch's IndexError for the channel dim of a 1-d input
    _check_norm_dtypes(input, weight, bias, running_mean, running_var)
    if training:
        frozen = None
        mean, invstd, unbiased_var = _channel_statistics(x, eps)
        moments = (mean, invstd)
        if running_mean is not None or running_var is not None:
            _update_running(running_mean, running_var, A.reshape(namespace(x), mean, -1), unbiased_var, momentum)
    else:
        shape, xp = _channel_view(x.shape), namespace(x)
        frozen = tuple(A.copy(xp, A.reshape(xp, t._data, shape)) for t in (running_mean, running_var))
        moments = None
    axes = NormAxes(tuple(x.shape), dims, _channel_view(x.shape), (channels,), frozen, moments)
    return apply(native_batch_norm_op, (input, weight, bias), (axes, eps))


_UNBATCHED_RUNNING_STATS = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which will be updated in place, "
    "were not batched.\nIf you are using a module and do not need eval mode, please set `track_running_stats` to be "
    "False.If you are using a prebuilt module and do not need eval mode, please see the functorch website for "
    "resources on how to patch your module to work with vmap")


def _batch_norm_in_ops(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                       weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float,
                       eps: float) -> Tensor:
    """batch_norm written with tensor ops, for vmap: the input, a running statistic or the affine parameters may be
    batched, so the statistics go through the ops' batching rules instead of the raw arrays. As torch, running
    statistics updated in training must be batched wherever the input is."""
    from ..autograd.batched import is_batched  # loaded on vmap's first use, as the registry loads it

    dims, shape = (0, *range(2, input.dim())), _channel_view(input.shape)
    if training:
        running = [t for t in (running_mean, running_var) if t is not None]
        if running and is_batched(input) and not all(is_batched(t) for t in running):
            raise RuntimeError(_UNBATCHED_RUNNING_STATS)
        mean, var = input.mean(dims), input.var(dims, unbiased=False)
        count = input.numel() // input.shape[1]
        for stat, value in ((running_mean, mean), (running_var, var * (count / (count - 1)))):
            if stat is not None:
                stat.mul_(1 - momentum).add_(value.detach() * momentum)
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def _check_norm_dtypes(input: Tensor, *parameters: Tensor | None) -> None:
    """torch's CPU normalisations take parameters (affine, then running statistics) of input's dtype, or all
    float32 beside a half or bfloat16 input, told apart by the first one given (its mixed_dtype.h)."""
    given = [p.dtype for p in parameters if p is not None]
    if all(dt is input.dtype for dt in given):
        return
    if given[0] is not input.dtype:
        if any(dt is not D.float32 for dt in given):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if input.dtype not in (D.float16, D.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return
    other = next(dt for dt in given if dt is not input.dtype)
    raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found {D.scalar_type_name(other)}")


def _update_running(running_mean: Tensor | None, running_var: Tensor | None, mean: Any, var: Any,
                    momentum: float) -> None:
    """running = momentum * stat + (1 - momentum) * running in place, in the running statistics' dtype, as torch's
    CPU kernel takes it: for a float32 variance the product momentum * stat is added without rounding (the kernel's
    multiply-add is fused there, Note [float32 batch-norm statistics])."""
    for running, stat in ((running_mean, mean), (running_var, var)):
        if running is not None:
            xp = namespace(running._data)
            running._data *= 1 - momentum
            if running is running_var and running._data.dtype == xp.float32 and stat.dtype == xp.float32:
                # the product of float32 momentum and stat is exact in float64, so the sum is rounded once
                wide = float(np.float32(momentum)) * A.astype(xp, stat, xp.float64) + running._data
                running._data[...] = A.astype(xp, wide, xp.float32)
            else:
                running._data += A.astype(xp, momentum * stat, running._data.dtype)
            running._bump_version()


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) plane: batch_norm of the input viewed as (1, N*C, ...), as torch."""
    x = input._data
    if use_input_stats and math.prod(x.shape[2:]) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    n, c = x.shape[:2]
    flat = input.contiguous().view(1, n * c, *x.shape[2:])

    def repeat(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.unsqueeze(0).expand(n, c).reshape(n * c)

    if use_input_stats:
        if running_mean is not None or running_var is not None:
            xp, dims = namespace(x), tuple(range(2, x.ndim))
            stats_mean = A.reduce(xp, "mean", A.reduce(xp, "mean", x, dims), 0)
            stats_var = A.reduce(xp, "mean", xp.var(x, axis=dims, correction=1), 0)
            _update_running(running_mean, running_var, stats_mean, stats_var, momentum)
        out = batch_norm(flat, None, None, repeat(weight), repeat(bias), True, momentum, eps)
    else:
        out = batch_norm(flat, repeat(running_mean), repeat(running_var), repeat(weight), repeat(bias), False,
                         momentum, eps)
    return out.view(*x.shape)


def _normalized_shape(input: Tensor, normalized_shape: int | Sequence[int], name: str) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    return shape


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Standardise over the last len(normalized_shape) dims, then scale and shift: one fused node.

    >>> layer_norm(x, (x.shape[-1],), weight, bias)
    """
    shape = _normalized_shape(input, normalized_shape, "layer_norm")
    _check_norm_dtypes(input, weight, bias)
    k = len(shape)
    axes = NormAxes(tuple(input.shape), tuple(range(input.ndim - k, input.ndim)), shape, shape)
    return apply(native_norm_op, (input, weight, bias), (axes, eps))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Standardise each group of channels of (N, C, ...) per sample, then scale and shift per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    _check_norm_dtypes(input, weight, bias)
    axes = NormAxes((n, num_groups, -1), (2,), _channel_view(input.shape), (c,))
    return apply(native_group_norm_op, (input, weight, bias), (axes, eps))


# torch's native_* normalisations return the saved statistics too: (output, mean, 1/std). Layer and batch
# norm's statistics carry no gradient, as in torch; group norm's do, and are computed here with differentiable
# ops (MeanBackward1, RsqrtBackward0 where torch names all three outputs NativeGroupNormBackward0).


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """layer_norm, with the mean and 1/std of each normalised slice (the batch dims, then size-1 dims; no gradient)."""
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(tuple(normalized_shape)), input.ndim))
    xp = namespace(input._data)
    mean, var = _moments(xp, input._data, dims)
    return out, _wrap(mean), _wrap(A.astype(xp, 1 / xp.sqrt(var + eps), input._data.dtype, copy=False))


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """batch_norm, with the batch mean and 1/std per channel in training (empty tensors in evaluation; no
    gradient)."""
    xp = namespace(input._data)
    if training and not input._data.size:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = {list(input.shape)}")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, *(_wrap(xp.empty(0, dtype=input._data.dtype, device=input._data.device)) for _ in range(2))
    mean, invstd = (A.reshape(xp, a, -1) for a in _channel_statistics(input._data, eps)[:2])
    return out, _wrap(mean), _wrap(A.astype(xp, invstd, input._data.dtype, copy=False))


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int,  # noqa: N803
                      HxW: int, group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803 - torch's
    """group_norm of an (N, C, ...) input of HxW elements per channel, with each group's mean and 1/std, (N, group),
    both differentiable."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, but got {input.numel()}")
    groups = input.reshape(N, group, -1)
    return (group_norm(input, group, weight, bias, eps), groups.mean(-1),
            (groups.var(-1, unbiased=False) + eps).rsqrt())


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last dims, times weight, composed as torch's: half and bfloat16 in
    float32 (eps float32's by default), the result cast back to input's dtype."""
    shape = _normalized_shape(input, normalized_shape, "rms_norm")
    if weight is not None and weight.dtype is not input.dtype:
        warn_once_at_user(f"Mismatch dtype between input and weight: input dtype = {D.CPP_TYPE_NAMES[input.dtype.name]}"
                          f", weight dtype = {D.CPP_TYPE_NAMES[weight.dtype.name]}, Cannot dispatch to fused "
                          "implementation. (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/layer_norm.cpp:346.)", key="rms_norm dtypes")
    x = input.float() if input.dtype in (D.float16, D.bfloat16) else input
    if eps is None:
        eps = D.finfo(x.dtype).eps
    dims = tuple(range(-len(shape), 0))
    out = x * (x.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return (out * weight if weight is not None else out).type_as(input)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p, eps) along dim."""
    check_vector_norm_input(input)
    denom = clamp_min(apply(norm_op, (input,), (float(p), (_wrap_dim(dim, input.ndim),), True)), eps)
    return input / denom.expand_as(input)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Divide each element by a power of the mean square of `size` neighbouring channels (composed, as torch)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = pad(div.view(sizes[0], 1, sizes[1], sizes[2], -1), (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(*sizes)
    return input / (div * alpha + k).pow(beta)


# ---- attention ------------------------------------------------------------------------------

def _check_attention_inputs(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None) -> None:
    """torch's validate_sdpa_input, before either path: one dtype for q, k and v, at least 2 dims each, and a mask
    that is bool, float32 or query's dtype (an integer or uint8 mask is refused, never added)."""
    names = [D.CPP_TYPE_NAMES[t.dtype.name] for t in (query, key, value)]
    if query.dtype is not key.dtype or query.dtype is not value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: {names[0]} "
                           f"key.dtype: {names[1]} and value.dtype: {names[2]} instead.")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if attn_mask is not None and attn_mask.dtype not in (D.bool_, D.float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {D.CPP_TYPE_NAMES[attn_mask.dtype.name]} and  query.dtype: {names[0]} "
                           "instead.")


def _check_attention_mask(query: Tensor, key: Tensor, attn_mask: Tensor) -> None:
    """torch's error for a mask that does not broadcast to the scores (..., L, S), the scores being its tensor a."""
    try:
        batch = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
    except ValueError:
        return  # query and key refuse first, in their own words
    scores = np.broadcast_to(np.empty((), bool), (*batch, query.shape[-2], key.shape[-2]))
    error = _broadcast_error([scores, attn_mask._data])
    if error is not None:
        raise error


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v. Like torch on the CPU: one fused node for 4-d inputs without dropout
    (ScaledDotProductFlashAttentionForCpuBackward0), torch's math composition otherwise."""
    # autocast casts the op's inputs, mask too, before either path (its narrow dtype decides the fused row's rounding)
    row = attention_op.name
    query, key, value = (autocast_input(t, row) for t in (query, key, value))
    if attn_mask is not None:
        attn_mask = autocast_input(attn_mask, row)
    _check_attention_inputs(query, key, value, attn_mask)
    if enable_gqa and query.shape[-3] != key.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    if attn_mask is not None:
        _check_attention_mask(query, key, attn_mask)
    length, source = query.shape[-2], key.shape[-2]
    fused = (query.ndim == 4 and key.ndim == 4 and value.ndim == 4 and dropout_p == 0.0 and query.is_floating_point()
             and query.shape[-1] == key.shape[-1] == value.shape[-1] and length > 0 and source > 0
             and not (attn_mask is not None and attn_mask.requires_grad))
    if is_causal and attn_mask is not None and not fused:  # the fused kernel applies both, the math path refuses
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    additive = None  # the mask as torch's kernel takes it: a bool one as 0 and -inf
    xp, device = namespace(query._data), query._data.device
    if attn_mask is not None:
        m = attn_mask._data
        additive = xp.where(m, xp.zeros((), device=device), -xp.inf) if D.kind(m) == "b" else m
    if fused:
        stored = query._data.dtype if query.dtype in (D.bfloat16, D.float16) else None
        return apply(attention_op, (query, key, value),
                     (0.0, is_causal, None if additive is None else A.astype(xp, additive, query.dtype), scale,
                      stored))[0]
    mask = attention_mask(xp, additive, is_causal, query._data, key._data)
    scale = _attention_scale(scale, query)
    # torch's math path: both sides scaled by sqrt(scale), additive mask, softmax, dropout, matmul
    root = math.sqrt(abs(scale))
    scores = matmul(query * (root if scale >= 0 else -root), key.mT * root)
    if attn_mask is not None and attn_mask.dtype is not D.bool_:
        scores = scores + attn_mask
    elif mask is not None:
        scores = scores + constant_like(mask, scores)
    probs = softmax(scores, -1)
    if mask is not None:
        probs = _zero_masked_rows(probs, mask)
    if dropout_p > 0.0:
        probs = dropout(probs, dropout_p, True)
    return matmul(probs, value)


# ---- distances ------------------------------------------------------------------------------

def _clamped_unrecorded(t: Tensor, low: float) -> Tensor:
    """A copy of `t` clamped below at `low` in place under no_grad, as torch clamps cosine_similarity's norms and
    gaussian_nll_loss's variance: the gradient flows as if unclamped. Tensor ops, so that it also runs under vmap."""
    out = t.clone()
    with no_grad():
        out.clamp_min_(low)
    return out


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(|x1|, eps) max(|x2|, eps))`` along dim; each input is divided by its norm first, as torch."""
    common = D.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{D.scalar_type_name(common)}")
    a, b = _broadcast_pair(x1, x2)
    d = _wrap_dim(dim, a.ndim)

    def unit(t: Tensor) -> Tensor:
        return t / _clamped_unrecorded(apply(vector_norm_op, (t,), (2.0, (d,), True)), eps)

    return (unit(a) * unit(b)).sum(d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim."""
    diff = x1 - x2 + eps
    return apply(norm_op, (diff,), (float(p), (max(diff.ndim - 1, 0),), keepdim))


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M). torch's checks come in
    its order: the mode (in Python), the shapes, then, off the matrix-product path, the dtypes, p, and its kernel's
    refusal of bfloat16 and float16 where it runs (some distance to compute)."""
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.ndim < 2 else 2} got: "
                           f"{min(x1.ndim, x2.ndim)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == modes[1] or (compute_mode == modes[0] and (rows1 > 25 or rows2 > 25)))
    if not use_mm:
        for name, x in (("X1", x1), ("X2", x2)):
            if not x.is_floating_point():
                raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                                   f"{D.scalar_type_name(x.dtype)}")
        if p < 0:
            raise RuntimeError("cdist only supports non-negative p values")
        if x1.numel() and x2.numel():
            _refuse_reduced_floats(x1.dtype, "cdist")
        if x2.dtype is not x1.dtype:  # its kernel reads both as x1's type
            raise RuntimeError(f"expected scalar type {D.scalar_type_name(x1.dtype)} but found "
                               f"{D.scalar_type_name(x2.dtype)}")
        return apply(cdist_op, (x1, x2), (float(p),))
    if x2.dtype is not x1.dtype:  # the matrix product's refusal
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {D.CPP_TYPE_NAMES[x1.dtype.name]} != "
                           f"{D.CPP_TYPE_NAMES[x2.dtype.name]}")
    batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    a = x1.expand(*batch, rows1, x1.shape[-1]).reshape(-1, rows1, x1.shape[-1]) if batch else x1
    b = x2.expand(*batch, rows2, x2.shape[-1]).reshape(-1, rows2, x2.shape[-1]) if batch else x2
    return apply(euclidean_dist_op, (a, b)).view(*batch, rows1, rows2)


def _refuse_reduced_floats(dtype: D.dtype, kernel: str) -> None:
    """The NotImplementedError of a torch CPU kernel dispatched over float32 and float64 only (pdist's, cdist's)."""
    if dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dtype)}\'')


# ---- losses ---------------------------------------------------------------------------------

def _check_target_classes(target: np.ndarray, classes: int, ignore_index: int) -> bool:
    """torch's IndexError for a class index out of range; returns whether some target is ignore_index (neither for
    a meta tensor's target, which holds no classes to check)."""
    if not target.size or not has_data(target):
        return False
    xp = namespace(target)
    low, high = A.reduce(xp, "min", target), A.reduce(xp, "max", target)
    if 0 <= low and high < classes and not low <= ignore_index <= high:  # the common case: two reductions
        return False
    ignored = target == ignore_index
    valid = target[~ignored]
    high, least = _index_range(valid)
    if high >= classes or least < 0:
        raise IndexError(f"Target {high if high >= classes else least} is out of bounds.")
    return bool(A.reduce(xp, "any", ignored))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (C,), (N, C) or (N, C, d1, ...)."""
    reduction = _reduction(size_average, reduce, reduction)
    _not_differentiable("nll_loss_forward", weight=weight)
    t = target._data
    x = input._data
    _check_nll_shapes(x.shape, t.shape, target.dtype)
    ignored = _check_target_classes(t, x.shape[1 if x.ndim > 1 else 0], ignore_index)
    w = None if weight is None else A.astype(namespace(x), weight._data, x.dtype)
    params = (A.astype(namespace(t), t, np.int64, copy=False), w, reduction, ignore_index if ignored else None)
    if x.ndim <= 2:
        return keep_index_versions(apply(nll_loss_op, (input,), params), target)
    # torch views K-d inputs as 2-d images, and views back
    loss = keep_index_versions(apply(nll_loss2d_op, (input,), params), target)
    return loss.view(*t.shape) if reduction == "none" and x.ndim != 4 else loss


def _check_nll_shapes(shape: tuple[int, ...], target_shape: tuple[int, ...], target_dtype: D.dtype) -> None:
    """nll_loss's checks of the input and target shapes and the target's dtype, in torch's order: the batch
    sizes first (a 0-d target's counts as 0), then by the input's rank those of its 1-2d kernel (a 0-d or 1-d
    target: a (N, 1) target, the usual slip, is refused), its 4-d image kernel, or its K-d reshape onto that."""
    if len(shape) < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {len(shape)})")
    targets = target_shape[0] if target_shape else 0
    if len(shape) != 1 and shape[0] != targets:
        raise ValueError(f"Expected input batch_size ({shape[0]}) to match target batch_size ({targets}).")
    if len(shape) == 4 and len(target_shape) != 3:
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                           f"{len(target_shape)}")
    if len(shape) > 2 and len(shape) != 4 and target_shape[1:] != shape[2:]:
        raise RuntimeError(f"Expected target size {[shape[0], *shape[2:]]}, got {list(target_shape)}")
    if len(shape) <= 2 and len(target_shape) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target_dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {D.scalar_type_name(target_dtype)}")
    if len(shape) == 1 and len(target_shape) == 1 and targets != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {targets}")
    if len(shape) == 4 and target_shape != shape[:1] + shape[2:]:
        raise RuntimeError(f"size mismatch (got input: {list(shape)} , target: {list(target_shape)}")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim then nll_loss, for class indices or class probabilities, with label
    smoothing (composed as torch composes it, so the nodes are LogSoftmaxBackward0 + NllLossBackward0)."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    input = autocast_input(input, "cross_entropy")
    cls = 1 if input.ndim > 1 else 0
    classes = input.shape[cls]
    logp = log_softmax(input, cls)
    weight_view = None if weight is None else weight.reshape(*(classes if i == cls else 1 for i in range(input.ndim)))
    if target.shape == input.shape:  # class probabilities: torch decides by the shapes, then checks the dtype
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{_legacy(target)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        per = logp * target if weight_view is None else logp * target * weight_view
        if reduction == "none":
            return -per.sum(cls)
        if reduction == "sum":
            return -per.sum()
        return div_by_number(-per.sum(), input.numel() // classes if input.numel() else 0)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return loss
    ignored = target._data == ignore_index
    smooth = -(logp if weight_view is None else logp * weight_view).sum(cls)
    smooth = where(_wrap(ignored), 0.0, smooth)
    if reduction == "mean":
        if weight is None:
            smooth = smooth.sum() / int(namespace(ignored).count_nonzero(~ignored))
        else:
            smooth = smooth.sum() / weight[_wrap(target._data[~ignored])].sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * loss + smooth * (label_smoothing / classes)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) with the logs clamped at -100, as torch."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _not_differentiable("binary_cross_entropy", weight=weight)
    if target.dtype is not input.dtype:  # torch's kernel takes target in input's dtype, never converts it
        raise RuntimeError(f"Found dtype {D.scalar_type_name(target.dtype)} but expected "
                           f"{D.scalar_type_name(input.dtype)}")
    x = input._data
    _refuse_kinds(x, "binary_cross_entropy", "buic")  # before its range checks, as torch's dispatch
    xp = namespace(x)
    if x.size and A.reduce(xp, "any", (x < 0) | (x > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if x.size and A.reduce(xp, "any", (target._data < 0) | (target._data > 1)):
        raise RuntimeError("all elements of target should be between 0 and 1")
    if weight is not None:
        weight = weight.expand(*np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    return apply(bce_op, (input, target, weight), (reduction,))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable node; pos_weight scales the positive term."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    D.check_cast(D.promote_types(input.dtype, target.dtype), target.dtype)  # the loss is made in target's dtype
    return apply(bce_with_logits_op, (input, target, weight, pos_weight), (reduction,))


def _weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    """The weighted forms of mse/l1/huber loss, as torch.nn.functional writes them."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / weight.sum() if mean_by_weight else loss.mean()


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or per-element) squared error."""
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target).pow(2), input, weight, reduction, True)
    return apply(mse_loss_op, (input, target), (reduction,))


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or per-element) absolute error (composed: abs then the reduction)."""
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    diff = (input - target).abs()
    if weight is not None:
        return _weighted(diff, input, weight, reduction, True)
    return loss_reduce(diff, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic below beta, linear above (beta = 0 is l1_loss)."""
    _warn_size(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    a, b = _broadcast_pair(input, target)
    return apply(smooth_l1_loss_op, (a, b), (reduction, float(beta)))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Quadratic below delta, delta-scaled linear above."""
    _warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    D.check_cast(D.promote_types(input.dtype, target.dtype), input.dtype)  # written into a tensor like input
    a, b = _broadcast_pair(input, target)
    if weight is not None:
        return _weighted(apply(huber_loss_op, (a, b), ("none", float(delta))), input, weight, reduction, False)
    return apply(huber_loss_op, (a, b), (_reduction(None, None, reduction), float(delta)))


def _broadcast_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return (a if tuple(a.shape) == shape else a.expand(*shape)), (b if tuple(b.shape) == shape else b.expand(*shape))


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: target (log target - input); 'batchmean' divides by the batch size."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    elif reduction not in ("batchmean", "none", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.is_complex() or target.is_complex():
        raise RuntimeError("kl_div: Complex inputs not supported.")
    loss = _kl_div_pointwise(input, target, log_target)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return loss_reduce(loss, reduction)


def _kl_div_pointwise(input: Tensor, target: Tensor, log_target: bool) -> Tensor:
    return target.exp() * (target - input) if log_target else xlogy(target, target) - target * input


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)) for labels y = +-1."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    _not_differentiable("soft_margin_loss", target=target)
    return apply(soft_margin_loss_op, (input, target), (reduction,))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over the classes (composed, as torch)."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return loss_reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: sum over wrong classes of max(0, margin - x[y] + x[i])^p, over C."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _not_differentiable("multi_margin_loss", weight=weight)
    t = A.astype(namespace(target._data), target._data, np.int64)
    _check_margin_input(input)
    frames = input.shape[0] if input.ndim == 2 else 1
    if t.ndim > 1 or t.size != frames:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{frames}], but got {list(t.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if input.ndim < 2:  # one sample: a 0-d input is one class; a 1-element target makes it a batch of one
        input = input.reshape((1,) * t.ndim + (-1,))
    _check_target_classes(t, input.shape[-1], -100)
    return keep_index_versions(apply(multi_margin_loss_op, (input, weight), (t, p, float(margin), reduction)), target)


def _check_margin_input(input: Tensor) -> None:
    """The margin losses take one sample (C,) or a batch (N, C) of non-empty rows; a 0-d input is one class."""
    if not (input.ndim == 0 or input.ndim in (1, 2) and input.shape[-1] != 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Hinge loss between every listed target class (up to the first -1) and every other class, over C."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    t = A.astype(namespace(target._data), target._data, np.int64)
    _check_margin_input(input)
    if input.ndim == 2 and t.shape != tuple(input.shape) or input.ndim < 2 and (t.ndim > 1 or t.size != input.numel()):
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {list(input.shape)}")
    if input.ndim < 2:  # one sample: its target is a vector of its classes (a 0-d input is one class)
        input, t = input.reshape(-1), t.reshape(-1)
    return keep_index_versions(apply(multilabel_margin_loss_op, (input,), (t, reduction)), target)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return loss_reduce(clamp_min(-target * (input1 - input2) + margin, 0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    zero = constant_like(0.0, input)
    margin_part = where(target != 1, clamp_min(margin - input, 0), zero)
    self_part = where(target != -1, input, zero)
    return loss_reduce(margin_part + self_part, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    zero = constant_like(0.0, cos)
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, clamp_min(cos - margin, 0), zero)
    return loss_reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) with pairwise distances (d(p, n) if smaller and swap)."""
    reduction = _reduction(size_average, reduce, reduction, shared_warning=True)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return loss_reduce(clamp_min(margin + d_pos - d_neg, 0), reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """exp(x) - t x (log_input) or x - t log(x + eps), plus Stirling's term when full."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * log(input + eps)
    if full:
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(_wrap(target._data <= 1), 0)
    return loss_reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log var + (x - t)^2 / var) (+ 0.5 log 2 pi when full); var is clamped at eps without gradient."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _creation.ones_like(input)
    elif A.reduce(namespace(var._data), "any", var._data < 0):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = _clamped_unrecorded(var, eps)
    loss = 0.5 * (log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return loss_reduce(loss, reduction)


# ---- the functional forms torch exposes at top level ----------------------------------------------------
# Note [top-level functional forms]
# torch.embedding, torch.kl_div, torch.dropout, ... are the ATen functions torch.nn.functional calls, with
# ATen's signatures: the weight before the indices, the train flag positional, reductions as the integers of
# torch's Reduction enum (0 none, 1 mean, 2 sum; kl_div's mean is the plain mean, without F's warning),
# cudnn_enabled accepted and ignored. Each calls the functional form above; retrograd/__init__.py re-exports
# TOP_LEVEL under these names (the op table's own `embedding`, `dropout`, ... stay torch.nn.functional's).

def _reduction_of(reduction: int, function: str, position: int) -> str:
    """The reduction one of torch's Reduction enum values names (any other integer reduces nothing, as ATen's)."""
    if type(reduction) is not int:
        raise TypeError(f"{function}(): argument 'reduction' (position {position}) must be int, not "
                        f"{type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _aten_embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
                    sparse: bool = False) -> Tensor:
    return embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0, scale_grad_by_freq, sparse)


def _aten_embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale the rows of input that indices name down to max_norm, in place (``torch.embedding_renorm_``)."""
    _renorm_rows(input, namespace(indices._data).unique_values(indices._data), max_norm, norm_type)
    return input


def _dropout_form(name: str, inplace: bool, **kind: bool) -> Any:
    """torch.<name>(input, p, train): _dropout of that kind, in place for the names ending in '_'."""

    def function(input: Tensor, p: float, train: bool) -> Tensor:
        if not 0 <= p <= 1:  # ATen's check (F's raises ValueError)
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        return _dropout(input, p, train, inplace, **kind)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, p, train): the ATen form of torch.nn.functional's dropout of this kind."
    return function


def _aten_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                     running_var: Tensor | None, training: bool, momentum: float, eps: float,
                     cudnn_enabled: bool) -> Tensor:
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _aten_instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                        running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                        cudnn_enabled: bool) -> Tensor:
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _aten_kl_div(input: Tensor, target: Tensor, reduction: int = 1, *, log_target: bool = False) -> Tensor:
    return loss_reduce(_kl_div_pointwise(input, target, log_target), _reduction_of(reduction, "kl_div", 3))


def _aten_binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                           pos_weight: Tensor | None = None, reduction: int = 1) -> Tensor:
    return binary_cross_entropy_with_logits(input, target, weight,
                                            reduction=_reduction_of(reduction, "binary_cross_entropy_with_logits", 5),
                                            pos_weight=pos_weight)


def _aten_cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                                reduction: int = 1) -> Tensor:
    return cosine_embedding_loss(input1, input2, target, margin,
                                 reduction=_reduction_of(reduction, "cosine_embedding_loss", 5))


def _aten_margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                              reduction: int = 1) -> Tensor:
    return margin_ranking_loss(input1, input2, target, margin,
                               reduction=_reduction_of(reduction, "margin_ranking_loss", 5))


def _aten_triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                              eps: float = 1e-6, swap: bool = False, reduction: int = 1) -> Tensor:
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_reduction_of(reduction, "triplet_margin_loss", 8))


def _aten_hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1) -> Tensor:
    return hinge_embedding_loss(input, target, margin, reduction=_reduction_of(reduction, "hinge_embedding_loss", 4))


def _aten_poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                           reduction: int) -> Tensor:
    return poisson_nll_loss(input, target, log_input, full, eps=eps,
                            reduction=_reduction_of(reduction, "poisson_nll_loss", 6))


def _aten_convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                      padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                      output_padding: Sequence[int], groups: int) -> Tensor:
    """torch.convolution: conv1d/2d/3d, or their transposes, by the weight's spatial dims."""
    spatial = weight.ndim - 3  # 0, 1, 2 for 1-d, 2-d, 3-d
    if transposed:
        return (conv_transpose1d, conv_transpose2d, conv_transpose3d)[spatial](input, weight, bias, stride, padding,
                                                                             output_padding, groups, dilation)
    return (conv1d, conv2d, conv3d)[spatial](input, weight, bias, stride, padding, dilation, groups)


def _aten_adaptive_max_pool1d(input: Tensor, output_size: Sequence[int]) -> tuple[Tensor, Tensor]:
    return adaptive_max_pool1d_with_indices(input, output_size)


def _aten_affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    return affine_grid(theta, size, align_corners)


# Note [fused LSTM cell]
# nn.LSTM's loop, where the layer is not one node (Note [LSTM layer]: float64, projections, packed input, another
# device), takes each step's gates through one row, torch's fused cell (ThnnFusedLstmCellBackward0, the kernel
# torch's LSTMCell runs on CUDA), whose forward and unrecorded backward the layer's row runs too: (gates, c) ->
# (h, c'), c' = sigmoid(f) c + sigmoid(i) tanh(g) and h = sigmoid(o) tanh(c'), the gates (N, 4H) in torch's order
# i, f, g, o. Its forward makes the ufunc calls of those ops in their order, so in float32 and float64 h and c' are
# the bits the ten ops gave (the layer keeps the ops in half precision, where the ops' own rounding differs), and a
# step records one node where it recorded ten. Its backward is differentiable ops (double backward through an
# LSTM), or, when nothing records it, one NumPy kernel (the rule of Note [unrecorded batch-norm backward]). The
# LSTMCell module keeps torch's CPU ops, so its graph is torch's (MulBackward0 ...).


@defop("_thnn_fused_lstm_cell", node="ThnnFusedLstmCellBackward0", inputs=("input_gates", "cx"), outputs=("hy", "cy"),
       input_gates="fused_lstm_cell_backward(grads[0], grads[1], input_gates, cx, cy)[0]",
       cx="fused_lstm_cell_backward(grads[0], grads[1], input_gates, cx, cy)[1]",
       jvp="fused_lstm_cell_jvp(input_gates_t, cx_t, input_gates, cx, cy)")
def fused_lstm_cell_op(xp, gates, cx):
    """One LSTM step's (h, c') from its gates and cell state (Note [fused LSTM cell])."""
    n = cx.shape[-1]
    i, f, g, o = (gates[..., k * n:(k + 1) * n] for k in range(4))
    cy = xp.add(xp.multiply(sigmoid.forward(xp, f), cx), xp.multiply(sigmoid.forward(xp, i), xp.tanh(g)))
    return xp.multiply(sigmoid.forward(xp, o), xp.tanh(cy)), cy


def fused_lstm_cell_backward(grad_hy: Tensor, grad_cy: Tensor, gates: Tensor, cx: Tensor,
                             cy: Tensor) -> tuple[Tensor, Tensor]:
    """(d gates, d cx) of the fused LSTM cell, with dc' = grad_cy + grad_hy o (1 - tanh(c')^2): the gates' sigmoid and
    tanh derivatives times dc' g, dc' c, dc' i and grad_hy tanh(c'); dc' f for c. NumPy when nothing records it."""
    arrays = unrecorded_arrays(grad_hy, grad_cy, gates, cx, cy)
    if arrays is not None:
        d_gates, d_cx = _fused_lstm_cell_backward_arrays(*arrays)
        return _wrap(d_gates), _wrap(d_cx)
    i, f, g, o = gates.chunk(4, -1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    tanh_cy = cy.tanh()
    d_cy = grad_cy + grad_hy * o * (1 - tanh_cy * tanh_cy)
    d_gates = cat([d_cy * g * i * (1 - i), d_cy * cx * f * (1 - f), d_cy * i * (1 - g * g),
                   grad_hy * tanh_cy * o * (1 - o)], -1)
    return d_gates, d_cy * f


def _fused_lstm_cell_backward_arrays(grad_hy, grad_cy, gates, cx, cy) -> tuple[np.ndarray, np.ndarray]:
    """fused_lstm_cell_backward's formula on NumPy's arrays, the gates' gradient written in place by quarter."""
    n = cx.shape[-1]
    i, f, o = (sigmoid.forward(np, gates[..., k * n:(k + 1) * n]) for k in (0, 1, 3))
    g = np.tanh(gates[..., 2 * n:3 * n])
    tanh_cy = np.tanh(cy)
    d_cy = 1 - tanh_cy * tanh_cy
    d_cy *= o
    d_cy *= grad_hy
    d_cy += grad_cy
    d_gates = np.empty(gates.shape, dtype=gates.dtype)
    for k, (gate, factor) in enumerate(((i, g), (f, cx), (g, i), (o, tanh_cy))):
        quarter = d_gates[..., k * n:(k + 1) * n]
        np.multiply(d_cy if k < 3 else grad_hy, factor, out=quarter)
        quarter *= 1 - gate * gate if k == 2 else gate * (1 - gate)
    d_cy *= f
    return d_gates, d_cy


def fused_lstm_cell_jvp(gates_t: Tensor, cx_t: Tensor, gates: Tensor, cx: Tensor,
                        cy: Tensor) -> tuple[Tensor, Tensor]:
    """The fused LSTM cell's tangents (h', c') for the tangents of its gates and cell state."""
    i, f, g, o = gates.chunk(4, -1)
    i_t, f_t, g_t, o_t = gates_t.chunk(4, -1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy_t = f * cx_t + cx * f * (1 - f) * f_t + g * i * (1 - i) * i_t + i * (1 - g * g) * g_t
    tanh_cy = cy.tanh()
    return tanh_cy * o * (1 - o) * o_t + o * (1 - tanh_cy * tanh_cy) * cy_t, cy_t


def fused_lstm_cell(gates: Tensor, cx: Tensor) -> tuple[Tensor, Tensor]:
    """One LSTM step's (h, c') from its gates (N, 4H), in torch's order i, f, g, o, and cell state (N, H), in one
    node (Note [fused LSTM cell])."""
    return apply(fused_lstm_cell_op, (gates, cx), ())


# Note [LSTM layer]
# On the CPU in float32 torch's nn.LSTM runs each layer and direction as one node, oneDNN's MkldnnRnnLayerBackward0
# (aten's mkldnn_rnn_layer: input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx -> output, hy, cy, workspace),
# unless the layer has projections or the input is packed. retrograd runs that row there too. Its forward is the
# loop of Notes [recurrent product folded] and [fused LSTM cell] on NumPy's arrays: one product projects the whole
# sequence (both biases added once), then each step one recurrent product and the cell's ufuncs, the bits the
# per-step ops give. The workspace (torch's is oneDNN's bytes, uint8; so is this one) holds each step's gates before
# their activations and its cell state. The backward walks the steps in reverse with one small product each (the
# gates' gradient by W_hh) and takes the weights', the biases' and the input's gradients for the whole sequence in
# one product each, where the per-step graph made two products, an add into W_hh's gradient and three nodes a step.
# Under create_graph it recomputes the steps with the differentiable per-step ops and walks them back with
# differentiable ops, as torch's differentiable_lstm_backward does; forward mode is refused, as torch refuses it.
# The node saves what its backward reads (the inputs, the output, the workspace and the direction); torch's also
# keeps the layer's other arguments and the last (h, c).

_LSTM_MODE = 2  # oneDNN's (and cuDNN's) number for an LSTM
_LSTM_GRADS = ("lstm_layer_grads(grads, input, weight0, weight1, weight2, weight3, hx_, cx_, result0, result3, "
               "reverse, grad_input_mask)")


@defop("mkldnn_rnn_layer", node="MkldnnRnnLayerBackward0",
       inputs=("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_"),
       params=("reverse", "batch_sizes", "mode", "hidden_size", "num_layers", "has_biases", "bidirectional",
               "batch_first", "train"),
       outputs=("result0", "result1", "result2", "result3"), differentiable_outputs=(0, 1, 2), materialize_grads=False,
       input=_LSTM_GRADS + "[0]", weight0=_LSTM_GRADS + "[1]", weight1=_LSTM_GRADS + "[2]",
       weight2=_LSTM_GRADS + "[3]", weight3=_LSTM_GRADS + "[3]", hx_=_LSTM_GRADS + "[4]", cx_=_LSTM_GRADS + "[5]")
def lstm_layer_op(xp, x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode, hidden_size, num_layers,
                  has_biases, bidirectional, batch_first, train):
    """One LSTM layer and direction over a (L, N, I) sequence (Note [LSTM layer]): the outputs (L, N, H), the last
    (h, c) and the workspace. NumPy's arrays only, as oneDNN's node is the CPU's: nn.LSTM runs it there alone."""
    steps, n = x.shape[:2]
    size = hx.shape[-1]
    proj = A.matmul(np, x.reshape(steps * n, -1), w_ih.T).reshape(steps, n, -1)
    if b_ih is not None:
        proj += b_ih + b_hh
    work = np.empty((steps, n, 5 * size), dtype=x.dtype)
    out = np.empty((steps, n, size), dtype=x.dtype)
    h, c = hx, cx
    for t in _lstm_order(steps, reverse):
        gates = work[t, :, :4 * size]
        np.add(proj[t], A.matmul(np, h, w_hh.T), out=gates)
        h, c = fused_lstm_cell_op.forward(np, gates, c)
        work[t, :, 4 * size:] = c
        out[t] = h
    return out, h, c, work.reshape(-1).view(np.uint8)


def _lstm_order(steps: int, reverse: bool) -> range:
    """The steps in the order a direction runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def lstm_layer_grads(grads: Sequence[Tensor | None], input: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                     b_hh: Tensor | None, hx: Tensor, cx: Tensor, output: Tensor, work: Tensor, reverse: bool,
                     mask: Sequence[bool]) -> tuple:
    """The LSTM layer's (input, weight_ih, weight_hh, bias, hx, cx) gradients for the gradients of its (output, hy,
    cy), any of them None (Note [LSTM layer]); the bias's is both biases'. `mask` says which inputs want one."""
    g_out, g_hy, g_cy = grads[:3]
    arrays = unrecorded_arrays(input, w_ih, w_hh, hx, cx, output, *(g for g in grads[:3] if g is not None))
    if arrays is not None:
        return _lstm_layer_grads_arrays(*(None if g is None else g._data for g in grads[:3]), *arrays[:6],
                                        work._data, reverse, mask)
    steps, size = input.shape[0], hx.shape[-1]
    proj = linear(input, w_ih, None if b_ih is None else b_ih + b_hh)
    w_t = w_hh.t()
    h, c, saved = hx, cx, []
    for t in _lstm_order(steps, reverse):  # the forward again, recorded
        gates = addmm(proj[t], h, w_t)
        h_next, c_next = fused_lstm_cell(gates, c)
        saved.append((t, gates, h, c, c_next))
        h, c = h_next, c_next
    dh = _creation.zeros_like(hx) if g_hy is None else g_hy
    dc = _creation.zeros_like(cx) if g_cy is None else g_cy
    d_gates, h_prev = [None] * steps, [None] * steps
    for t, gates, h, c, c_next in reversed(saved):
        if g_out is not None:
            dh = dh + g_out[t]
        d_gates[t], dc = fused_lstm_cell_backward(dh, dc, gates, c, c_next)
        h_prev[t] = h
        dh = d_gates[t].mm(w_hh)
    flat = stack(d_gates).reshape(-1, 4 * size)
    return (matmul(flat, w_ih).reshape(*input.shape[:2], -1), flat.t().mm(input.reshape(flat.shape[0], -1)),
            flat.t().mm(stack(h_prev).reshape(flat.shape[0], -1)), flat.sum(0), dh, dc)


def _lstm_layer_grads_arrays(g_out, g_hy, g_cy, x, w_ih, w_hh, hx, cx, output, work, reverse: bool,
                             mask: Sequence[bool]) -> tuple:
    """lstm_layer_grads on NumPy's arrays: the steps in reverse, one product each, then one product per weight."""
    steps, n, size = output.shape
    work = work.view(x.dtype).reshape(steps, n, 5 * size)
    order = _lstm_order(steps, reverse)
    d_gates = np.empty((steps, n, 4 * size), dtype=x.dtype)
    dh = np.zeros_like(hx) if g_hy is None else g_hy
    dc = np.zeros_like(cx) if g_cy is None else g_cy
    for k in range(steps - 1, -1, -1):
        t = order[k]
        c = cx if k == 0 else work[order[k - 1], :, 4 * size:]
        d_gates[t], dc = _fused_lstm_cell_backward_arrays(dh if g_out is None else dh + g_out[t], dc,
                                                          work[t, :, :4 * size], c, work[t, :, 4 * size:])
        dh = A.matmul(np, d_gates[t], w_hh)
    flat = d_gates.reshape(-1, 4 * size)
    input_grad = _wrap(A.matmul(np, flat, w_ih).reshape(steps, n, -1)) if mask[0] else None
    ih_grad = _wrap(flat.T @ x.reshape(flat.shape[0], -1)) if mask[1] else None
    hh_grad = None
    if mask[2]:  # each step's previous h: the step before's output, hx for the first
        before = np.empty_like(output)
        first, rest, earlier = (-1, slice(0, -1), slice(1, None)) if reverse else (0, slice(1, None), slice(0, -1))
        before[first] = hx
        before[rest] = output[earlier]
        hh_grad = _wrap(flat.T @ before.reshape(flat.shape[0], -1))
    bias_grad = _wrap(np.ones(flat.shape[0], dtype=x.dtype) @ flat) if mask[3] or mask[4] else None
    return input_grad, ih_grad, hh_grad, bias_grad, _wrap(dh), _wrap(dc)


def lstm_layer(input: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, hx: Tensor,
               cx: Tensor, reverse: bool, num_layers: int, bidirectional: bool, batch_first: bool,
               train: bool) -> tuple[Tensor, Tensor, Tensor]:
    """One float32 LSTM layer and direction over a (L, N, I) sequence as torch's oneDNN node (Note [LSTM layer]):
    (output, h, c)."""
    out, h, c, _ = apply(lstm_layer_op, (input, w_ih, w_hh, b_ih, b_hh, hx, cx),
                         (reverse, (), _LSTM_MODE, hx.shape[-1], num_layers, b_ih is not None, bidirectional,
                          batch_first, train))
    return out, h, c


def _check_cell(input: Tensor, hidden: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor) -> None:
    """ATen's checks of a recurrent cell's input size, and of each hidden state's batch and hidden sizes."""
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}")
    for k, h in enumerate(hidden):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size {h.shape[0]}")
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected {w_hh.shape[1]}")


def _gates(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
           b_hh: Tensor | None) -> Tensor:
    """linear(hx, w_hh, b_hh) += linear(input, w_ih, b_ih), as ATen's cells add them."""
    return linear(hx, w_hh, b_hh).add_(linear(input, w_ih, b_ih))


def _aten_lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                    b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step, (h', c'), computed op for op as ATen's CPU LSTMCell (so its graph has torch's nodes)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell(input, hx, w_ih, w_hh)
    ingate, forgetgate, cellgate, outgate = _gates(input, hx[0], w_ih, w_hh, b_ih, b_hh).unsafe_chunk(4, 1)
    for gate in (ingate, forgetgate, outgate):
        gate.sigmoid_()
    cellgate.tanh_()
    cy = (forgetgate * hx[1]).add_(ingate * cellgate)
    return outgate * cy.tanh(), cy


def _aten_gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                   b_hh: Tensor | None = None) -> Tensor:
    """One GRU step, computed op for op as ATen's CPU GRUCell."""
    _check_cell(input, (hx,), w_ih, w_hh)
    input_reset, input_update, input_new = linear(input, w_ih, b_ih).unsafe_chunk(3, 1)
    hidden_reset, hidden_update, hidden_new = linear(hx, w_hh, b_hh).unsafe_chunk(3, 1)
    reset_gate = hidden_reset.add_(input_reset).sigmoid_()
    update_gate = hidden_update.add_(input_update).sigmoid_()
    new_gate = input_new.add(hidden_new.mul_(reset_gate)).tanh_()
    return (hx - new_gate).mul_(update_gate).add_(new_gate)


def _simple_cell(name: str, nonlinearity: str) -> Any:
    """torch.<name>: one step of an Elman cell, nonlinearity(linear(hx) + linear(input)), as ATen's SimpleCell."""

    def cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
        _check_cell(input, (hx,), w_ih, w_hh)
        return getattr(_gates(input, hx, w_ih, w_hh, b_ih, b_hh), nonlinearity)()

    cell.__doc__ = f"One step of torch's {nonlinearity} RNN cell, computed as ATen computes it."
    return cell


TOP_LEVEL = {
    "lstm_cell": _aten_lstm_cell, "gru_cell": _aten_gru_cell, "rnn_tanh_cell": _simple_cell("rnn_tanh_cell", "tanh"),
    "rnn_relu_cell": _simple_cell("rnn_relu_cell", "relu"),
    "convolution": _aten_convolution, "adaptive_max_pool1d": _aten_adaptive_max_pool1d,
    "affine_grid_generator": _aten_affine_grid_generator,
    "embedding": _aten_embedding, "embedding_renorm_": _aten_embedding_renorm_, "batch_norm": _aten_batch_norm,
    "instance_norm": _aten_instance_norm, "kl_div": _aten_kl_div,
    "binary_cross_entropy_with_logits": _aten_binary_cross_entropy_with_logits,
    "cosine_embedding_loss": _aten_cosine_embedding_loss, "margin_ranking_loss": _aten_margin_ranking_loss,
    "triplet_margin_loss": _aten_triplet_margin_loss, "hinge_embedding_loss": _aten_hinge_embedding_loss,
    "poisson_nll_loss": _aten_poisson_nll_loss,
    **{name + suffix: _dropout_form(name + suffix, suffix == "_", feature="feature" in name, alpha="alpha" in name)
       for name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout") for suffix in ("", "_")},
}
for _name, _function in TOP_LEVEL.items():
    _function.__name__ = _function.__qualname__ = _name


__all__ = ["frobenius_norm", "nuclear_norm", "bilinear", "cdist", "cosine_similarity", "group_norm", "layer_norm",
           "log_softmax", "native_batch_norm",
           "native_group_norm", "native_layer_norm", "pairwise_distance", "rms_norm", "softmax", *_CONV_PUBLIC]
FUNCTIONAL = ["alpha_dropout", "batch_norm", "bilinear", "binary_cross_entropy", "binary_cross_entropy_with_logits",
              "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "dropout", "dropout1d", "dropout2d",
              "dropout3d", "embedding", "feature_alpha_dropout", "gaussian_nll_loss", "group_norm", "gumbel_softmax",
              "hinge_embedding_loss", "huber_loss", "instance_norm", "kl_div", "l1_loss", "layer_norm", "linear",
              "local_response_norm", "log_softmax", "margin_ranking_loss", "mse_loss", "multi_margin_loss",
              "multilabel_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "normalize", "one_hot",
              "pairwise_distance", "poisson_nll_loss", "rms_norm", "scaled_dot_product_attention", "smooth_l1_loss",
              "soft_margin_loss", "softmax", "softmin", "triplet_margin_loss", *_CONV_PUBLIC, *_CONV_FUNCTIONAL]
