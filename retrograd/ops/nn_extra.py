"""Rule table: the less common torch.nn.functional kernels and losses (channel_shuffle, pdist, embedding_bag,
ctc_loss, fractional max pooling, max unpooling), fake quantization for quantization-aware training, and the
composites torch builds on existing rows (linear_cross_entropy, triplet_margin_with_distance_loss).

Where torch declares no derivative of a backward (pdist's, ctc_loss's), the backward is a row of its own whose
derivative raises torch's error, so a second derivative fails as it does in torch. ctc_loss's gradient is torch's:
the derivative through a log_softmax (exp(log_probs) minus the alignment posteriors), not the plain derivative
with respect to log_probs (Note [ctc gradient]).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _creation
from .. import _dtype as D
from .._tensor import Tensor, _wrap
from . import arrays as A
from .conv import max_pool_backward_op
from .indexing import _index_range, index_add_op
from .nn import (
    _refuse_reduced_floats,
    _renorm_rows,
    cross_entropy,
    embedding_backward_op,
    linear,
    loss_reduce,
    pairwise_distance,
)
from .pointwise import _refuse_kinds, where
from .registry import apply, defop, keep_index_versions, namespace
from .statistics import count_bins

# ============================================================================================
# Rows
# ============================================================================================


@defop("native_channel_shuffle", node="ChannelShuffleBackward0", params=("groups",),
       self="channel_shuffle_op(grad, self_shape[1] // groups)", jvp="channel_shuffle_op(self_t, groups)")
def channel_shuffle_op(xp, x, groups):
    """(N, g k, ...) -> channels regrouped as k groups of g: channel c k + i moves to i g + c."""
    n, c = x.shape[:2]
    grouped = A.reshape(xp, x, n, groups, c // groups, *x.shape[2:])
    return A.reshape(xp, A.copy(xp, xp.permute_dims(grouped, (0, 2, 1, *range(3, grouped.ndim)))), x.shape)


@defop("_pdist_forward", node="PdistBackward0", params=("p",), self="pdist_backward_op(grad, self, result, p)")
def pdist_op(xp, x, p):
    """The p-norm distance of each pair of rows i < j, in row-major order of the pairs."""
    first, second = (xp.asarray(rows, device=x.device) for rows in np.triu_indices(x.shape[0], 1))
    diff = xp.abs(xp.take(x, first, axis=0) - xp.take(x, second, axis=0))
    if p == 0:
        return A.astype(xp, xp.count_nonzero(diff, axis=-1), x.dtype)
    if math.isinf(p):
        return A.max_from(xp, diff, -1, False, 0)
    if p == 1:
        return A.reduce(xp, "sum", diff, -1)
    if p == 2:
        return xp.sqrt(A.reduce(xp, "sum", diff * diff, -1))
    return A.reduce(xp, "sum", diff**p, -1) ** (1.0 / p)


# torch declares no derivative of _pdist_backward
@defop("_pdist_backward", node="PdistBackwardBackward0", inputs=("grad_output", "self", "pdist"), params=("p",),
       grad_output="not_implemented_error('_pdist_backward')", self="not_implemented_error('_pdist_backward')",
       pdist="not_implemented_error('_pdist_backward')")
def pdist_backward_op(xp, g, x, dist, p):
    """Each pair's distance gradient g * d dist / d x_i added to row i and subtracted from row j."""
    first, second = (xp.asarray(rows, device=x.device) for rows in np.triu_indices(x.shape[0], 1))
    diff = xp.take(x, first, axis=0) - xp.take(x, second, axis=0)
    d = dist[:, None]
    zero = xp.zeros((), dtype=diff.dtype, device=x.device)
    safe = xp.where(d == 0, xp.ones_like(d), d)
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            slope = xp.zeros_like(diff)
        elif p == 1:
            slope = xp.sign(diff)
        elif math.isinf(p):
            slope = xp.where(xp.abs(diff) == d, xp.sign(diff), zero)
        elif p == 2:
            slope = xp.where(d == 0, zero, diff / safe)
        else:
            slope = xp.where(d == 0, zero, xp.sign(diff) * xp.abs(diff) ** (p - 1) / safe ** (p - 1))
    rows = A.astype(xp, slope * g[:, None], x.dtype, copy=False)
    return index_add_op.forward(xp, index_add_op.forward(xp, xp.zeros_like(x), rows, 0, first, 1), rows, 0, second, -1)


@defop("_embedding_bag", node="EmbeddingBagBackward0", inputs=("weight", "per_sample_weights"),
       params=("bags", "mode", "padding_idx", "scale_grad_by_freq"),
       weight="embedding_bag_weight_grad(grad, weight, per_sample_weights, bags, mode, padding_idx, "
              "scale_grad_by_freq)",
       per_sample_weights="embedding_bag_sample_weight_grad(grad, weight, bags, padding_idx)")
def embedding_bag_op(xp, w, psw, bags, mode, padding_idx, scale_grad_by_freq):
    """Each bag's rows of w (times per_sample_weights) summed, averaged or maxed; padding_idx rows left out, an
    empty bag gives zeros."""
    if xp is not np:  # NumPy's ufunc.at scatters; the others compare
        return _bags_compared(xp, w, psw, bags, mode, padding_idx)
    keep = bags.indices != padding_idx
    rows = w[bags.indices[keep]]
    if psw is not None:
        rows = rows * psw[keep][:, None]
    members = bags.bag[keep]
    out = xp.zeros((bags.count, w.shape[1]), dtype=w.dtype)
    if mode == "max":
        out.fill(-np.inf)
        xp.maximum.at(out, members, rows)
        out[bags.sizes(padding_idx) == 0] = 0
        return out
    xp.add.at(out, members, rows)
    if mode == "mean":
        out /= np.maximum(bags.sizes(padding_idx), 1)[:, None]
    return out


def _bag_members(xp: Any, bags: Bags, padding_idx: int) -> Any:
    """(bags, indices): whether index k is a non-padding member of bag b."""
    every = xp.reshape(xp.arange(bags.count, device=bags.bag.device), (-1, 1))
    return (bags.bag[None, :] == every) & (bags.indices != padding_idx)[None, :]


def _bags_compared(xp: Any, w: Any, psw: Any, bags: Bags, mode: str, padding_idx: int) -> Any:
    """embedding_bag for arrays without indexed writes (the standard's): each bag compares its number with every
    index's, bags x indices x D work, as index_add's compared scatter."""
    rows = xp.take(w, bags.indices, axis=0)
    if psw is not None:
        rows = rows * psw[:, None]
    members = _bag_members(xp, bags, padding_idx)[:, :, None]
    if mode == "max":
        out = xp.max(xp.where(members, rows[None, ...], -math.inf), axis=1)
        return xp.where(A.reduce(xp, "any", members, 1), out, xp.zeros_like(out))
    out = xp.sum(xp.where(members, rows[None, ...], xp.zeros((), dtype=w.dtype, device=w.device)), axis=1)
    if mode == "mean":
        out = out / A.astype(xp, xp.maximum(bags.sizes(padding_idx), 1), w.dtype)[:, None]
    return out


@defop("_ctc_loss", node="CtcLossBackward0", inputs=("log_probs",),
       params=("targets", "input_lengths", "target_lengths", "blank", "zero_infinity"),
       log_probs="ctc_loss_backward_op(grad, log_probs, result, targets, input_lengths, target_lengths, blank, "
                 "zero_infinity)")
def ctc_loss_op(xp, lp, targets, input_lengths, target_lengths, blank, zero_infinity):
    """The negative log-likelihood of each target (N) under the (T, N, C) log_probs, summed over alignments."""
    losses = [-_ctc_log_likelihood(xp, _ctc_alpha(xp, lp[:t, n, :], _extended(target, blank)))
              for n, (target, t) in enumerate(zip(targets, input_lengths))]
    return A.astype(xp, xp.stack(losses), lp.dtype) if losses else xp.zeros(0, dtype=lp.dtype, device=lp.device)


# torch declares no derivative of _ctc_loss_backward: under create_graph its node is NotImplemented
@defop("_ctc_loss_backward", node="NotImplemented", inputs=("grad", "log_probs", "nll"),
       params=("targets", "input_lengths", "target_lengths", "blank", "zero_infinity"),
       grad="not_implemented('_ctc_loss_backward')", log_probs="not_implemented('_ctc_loss_backward')",
       nll="not_implemented('_ctc_loss_backward')")
def ctc_loss_backward_op(xp, grad, lp, nll, targets, input_lengths, target_lengths, blank, zero_infinity):
    """torch's gradient (Note [ctc gradient]): exp(lp) - sum over the positions s labelled c of
    exp(log alpha_t(s) + log beta_t(s) + nll - lp), for t within each input length, zero after."""
    out = xp.zeros_like(lp)
    for n, (target, length) in enumerate(zip(targets, input_lengths)):
        if length == 0 or (zero_infinity and bool(xp.isinf(nll[n]))):
            continue
        labels = _extended(target, blank)
        probs = lp[:length, n, :]
        alpha = _ctc_alpha(xp, probs, labels)
        beta = xp.flip(_ctc_alpha(xp, xp.flip(probs, axis=0), labels[::-1]))
        posterior = _ctc_posterior(xp, alpha + beta, labels, probs.shape[1])
        with np.errstate(invalid="ignore", over="ignore"):
            out[:length, n, :] = A.astype(xp, (xp.exp(probs) - xp.exp(posterior + nll[n] - probs)) * grad[n], lp.dtype)
    return out


def _fractional_max_pool_forward(xp, x, starts, kernel):
    """The maximum of each window (its size `kernel`, its corner at `starts`, one (planes, out) array per spatial
    dimension) and its flat index in the input plane; the first maximum, or the last NaN, as torch picks."""
    d = len(kernel)
    spatial = x.shape[x.ndim - d:]
    planes = A.reshape(xp, x, (math.prod(x.shape[:x.ndim - d]), *spatial))
    out = tuple(s.shape[1] for s in starts)
    coords = []  # per dimension: (P, *out, *kernel) coordinates, broadcast over the others
    for i, (start, k) in enumerate(zip(starts, kernel)):
        shape = [start.shape[0]] + [1] * (2 * d)
        shape[1 + i], shape[1 + d + i] = out[i], k
        coords.append(A.reshape(xp, start[:, :, None] + xp.arange(k, device=x.device), shape))
    coords = xp.broadcast_arrays(A.reshape(xp, xp.arange(planes.shape[0], device=x.device), (-1, *[1] * (2 * d))),
                                 *coords)
    windows = planes[tuple(coords)]
    windows = A.reshape(xp, windows, (*windows.shape[:1 + d], -1))
    nan = xp.isnan(windows)
    last_nan = windows.shape[-1] - 1 - xp.argmax(A.astype(xp, xp.flip(nan, axis=-1), xp.int8), axis=-1)
    arg = xp.where(A.reduce(xp, "any", nan, -1), last_nan, xp.argmax(windows, axis=-1))[..., None]
    best = xp.take_along_axis(windows, arg, axis=-1)[..., 0]
    flat = 0
    for c, size in zip(coords[1:], spatial):
        flat = flat * size + xp.take_along_axis(A.reshape(xp, c, (*c.shape[:1 + d], -1)), arg, axis=-1)[..., 0]
    lead = x.shape[:x.ndim - d]
    return A.reshape(xp, best, (*lead, *out)), A.astype(xp, A.reshape(xp, flat, (*lead, *out)), xp.int64)


fractional_max_pool_backward_op = max_pool_backward_op.alias("fractional_max_pool2d_backward",
                                                             "FractionalMaxPool2DBackwardBackward0")
fractional_max_pool3d_backward_op = max_pool_backward_op.alias("fractional_max_pool3d_backward",
                                                               "FractionalMaxPool3DBackwardBackward0")
fractional_max_pool_op, fractional_max_pool3d_op = (
    defop(f"fractional_max_pool{d}d", node=f"FractionalMaxPool{d}DBackward0", params=("starts", "kernel"),
          outputs=("result0", "result1"), differentiable_outputs=(0,),
          self=f"{backward}(grads[0], result1._data, self_shape, len(kernel), True)",
          jvp="(pick_op(self_t, result1._data, len(kernel), True), None)")(_fractional_max_pool_forward)
    for d, backward in ((2, "fractional_max_pool_backward_op"), (3, "fractional_max_pool3d_backward_op")))


@defop("max_unpool2d", node="MaxUnpool2DBackward0", params=("indices", "output_shape", "d"),
       self="pick_op(grad, indices, d, False)", jvp="max_unpool_op(self_t, indices, output_shape, d)")
def max_unpool_op(xp, x, indices, output_shape, d):
    """Each value written at its flat index in a zero plane of the output's spatial size (max pooling undone)."""
    return max_pool_backward_op.forward(xp, x, indices, output_shape, d, False)


max_unpool3d_op = max_unpool_op.alias("max_unpool3d", "MaxUnpool3DBackward0")


# Note [packed sequences]
# A PackedSequence holds the time steps of a batch of sequences sorted by decreasing length one after the other:
# step t holds the first batch_sizes[t] sequences' elements. Packing is a gather of (step, row) pairs, its
# backward the scatter back into a zero padded tensor, and the two rows are each other's derivative.


@defop("_pack_padded_sequence", node="PackPaddedSequenceBackward0", params=("steps", "rows", "batch_first"),
       self="pack_padded_backward_op(grad, steps, rows, batch_first, self_shape)",
       jvp="pack_padded_op(self_t, steps, rows, batch_first)")
def pack_padded_op(xp, x, steps, rows, batch_first):
    """The elements at (step, row) of a padded (T, B, *) input ((B, T, *) if batch_first), in packed order."""
    return x[rows, steps] if batch_first else x[steps, rows]


@defop("_pack_padded_sequence_backward", node="PackPaddedSequenceBackwardBackward0", inputs=("grad_output",),
       params=("steps", "rows", "batch_first", "input_shape"),
       grad_output="pack_padded_op(grad, steps, rows, batch_first)",
       jvp="pack_padded_backward_op(grad_output_t, steps, rows, batch_first, input_shape)")
def pack_padded_backward_op(xp, g, steps, rows, batch_first, input_shape):
    """Packed gradients written back at their (step, row) of a zero padded tensor."""
    out = xp.zeros(input_shape, dtype=g.dtype, device=g.device)
    if batch_first:
        out[rows, steps] = g
    else:
        out[steps, rows] = g
    return out


# Note [weight norm]
# w = v * g / ||v||, the norm taken over every dim but `dim` (0 or the last: torch's fused kernel, one node
# WeightNormInterfaceBackward0; other dims compose from norm_except_dim, as torch does). With n = ||v|| and
# s = sum(grad * v) over those dims: dL/dg = s / n and dL/dv = (g / n) (grad - v s / n^2).


@defop("_weight_norm_interface", node="WeightNormInterfaceBackward0", inputs=("v", "g"), params=("dim",),
       outputs=("result0", "result1"), differentiable_outputs=(0,),
       v="weight_norm_v_grad(grads[0], v, g, dim)", g="weight_norm_sum(grads[0] * v, dim) / weight_norm_of(v, dim)",
       jvp="weight_norm_jvp(v, g, v_t, g_t, result1, dim)")
def weight_norm_interface_op(xp, v, g, dim):
    """(v g / ||v||, ||v||) with the norm over every dim but `dim` (kept as size-1 dims)."""
    axes = tuple(i for i in range(v.ndim) if i != dim)
    norms = xp.sqrt((v * v.conj()).real.sum(axis=axes, keepdims=True)).astype(v.dtype, copy=False)
    return v * (g / norms), norms


def weight_norm_sum(t: Tensor, dim: int) -> Tensor:
    """t summed over every dim but `dim`, keeping them as size-1 dims (Note [weight norm])."""
    return t.sum([i for i in range(t.dim()) if i != dim], keepdim=True)


def weight_norm_of(v: Tensor, dim: int) -> Tensor:
    """||v|| over every dim but `dim`, recomputed from v so that second derivatives see its dependence on v."""
    return weight_norm_sum(v * v, dim).sqrt()


def weight_norm_v_grad(grad: Tensor, v: Tensor, g: Tensor, dim: int) -> Tensor:
    """dL/dv of w = v g / ||v|| (Note [weight norm])."""
    norms = weight_norm_of(v, dim)
    return g / norms * (grad - v * weight_norm_sum(grad * v, dim) / norms.pow(2))


def weight_norm_jvp(v: Tensor, g: Tensor, v_t: Tensor | None, g_t: Tensor | None, norms: Tensor, dim: int) -> tuple:
    """The tangents of (w, ||v||) from those of v and g."""
    norms_t = weight_norm_sum(v * v_t, dim) / norms if v_t is not None else None
    w_t = None
    if v_t is not None:
        w_t = (v_t - v * norms_t / norms) * (g / norms)
    if g_t is not None:
        w_t = v * (g_t / norms) if w_t is None else w_t + v * (g_t / norms)
    return w_t, norms_t


# Note [ctc gradient]
# torch's ctc_loss_backward returns exp(lp) - (posterior of each class), the gradient the loss would have with
# respect to the logits if log_probs were their log_softmax. Through a log_softmax, which is how CTC is used,
# this is the true gradient (the exp(lp) term sums to one per frame and log_softmax's backward removes it);
# with respect to log_probs alone it is not. retrograd returns torch's numbers.


# ============================================================================================
# Array helpers (forwards)
# ============================================================================================


def _extended(target: np.ndarray, blank: int) -> np.ndarray:
    """The target with blanks around and between its labels: l' of length 2L + 1."""
    labels = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    labels[1::2] = target
    return labels


def _ctc_alpha(xp: Any, lp: Any, labels: np.ndarray) -> Any:
    """log alpha_t(s) (T, S') in float64: the log-probability of the prefixes of alignments that are at l'(s) at
    time t."""
    steps, size = lp.shape[0], len(labels)
    alpha = xp.full((steps, size), -math.inf, dtype=xp.float64, device=lp.device)
    if steps == 0:
        return alpha
    emitted = A.astype(xp, xp.take(lp, xp.asarray(labels, device=lp.device), axis=1), xp.float64)  # lp[t, l'(s)]
    alpha[0, :2] = emitted[0, :2]
    skip = np.zeros(size, dtype=bool)  # s may come from s - 2: a label differing from the one two before
    skip[2:] = (labels[2:] != labels[:-2]) & (labels[2:] != labels[0])
    skip = xp.asarray(skip[2:], device=lp.device)
    with np.errstate(invalid="ignore"):
        for t in range(1, steps):
            prev = alpha[t - 1, :]
            total = A.copy(xp, prev)
            total[1:] = xp.logaddexp(total[1:], prev[:-1])
            total[2:] = xp.where(skip, xp.logaddexp(total[2:], prev[:-2]), total[2:])
            alpha[t, :] = total + emitted[t, :]
    return alpha


def _ctc_log_likelihood(xp: Any, alpha: Any) -> Any:
    """log p(target): alignments end on the last label or on the blank after it."""
    if not alpha.shape[0]:
        return xp.asarray(-math.inf if alpha.shape[1] > 1 else 0.0, dtype=xp.float64, device=alpha.device)
    return xp.logaddexp(alpha[-1, -2], alpha[-1, -1]) if alpha.shape[1] > 1 else alpha[-1, -1]


def _ctc_posterior(xp: Any, joint: Any, labels: np.ndarray, classes: int) -> Any:
    """(T, C): logsumexp of log alpha + log beta over the positions labelled c, -inf for classes not in l'."""
    present, group = np.unique(labels, return_inverse=True)  # the host's labels: which positions share a class
    members = xp.asarray(group[:, None] == np.arange(len(present)), device=joint.device)  # (S', U)
    spread = xp.where(members, joint[:, :, None], xp.asarray(-math.inf, dtype=joint.dtype, device=joint.device))
    top = xp.max(spread, axis=1)
    top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
    with np.errstate(divide="ignore"):
        grouped = xp.log(xp.sum(xp.exp(spread - top[:, None, :]), axis=1)) + top  # (T, U)
    column = np.full(classes, len(present))  # each class's group; classes not in l' read the -inf column
    column[present] = np.arange(len(present))
    padded = xp.concat([grouped, xp.full((grouped.shape[0], 1), -math.inf, dtype=grouped.dtype,
                                         device=grouped.device)], axis=1)
    return xp.take(padded, xp.asarray(column, device=joint.device), axis=1)


@dataclass(frozen=True)
class Bags:
    """embedding_bag's grouping: the flat `indices`, the `bag` each belongs to, and how many bags there are."""

    indices: np.ndarray
    bag: np.ndarray
    count: int

    def sizes(self, padding_idx: int) -> Any:
        """How many non-padding indices each bag holds."""
        return count_bins(namespace(self.bag), self.bag[self.indices != padding_idx], self.count)

    def __hash__(self) -> int:
        return id(self)


# ============================================================================================
# Derivative helpers (differentiable ops)
# ============================================================================================


def embedding_bag_weight_grad(grad: Tensor, weight: Tensor, per_sample_weights: Tensor | None, bags: Bags, mode: str,
                              padding_idx: int, scale_grad_by_freq: bool) -> Tensor:
    """sum / mean: each index's bag gradient (times its sample weight, or over its bag's size) added into its
    row; max: each bag's gradient into the row that gave the maximum, column by column."""
    if mode == "max":
        rows = _max_rows(weight._data, bags, padding_idx)
        empty = _wrap(bags.sizes(padding_idx) == 0)[:, None]
        source = grad.masked_fill(empty, 0)
        return _creation.zeros_like(weight).scatter_add(0, _wrap(rows), source)
    per_index = grad.index_select(0, _wrap(bags.bag))
    if per_sample_weights is not None:
        per_index = per_index * per_sample_weights.unsqueeze(1)
    elif mode == "mean":
        xp = namespace(bags.bag)
        sizes = xp.take(xp.maximum(bags.sizes(padding_idx), 1), bags.bag)
        per_index = per_index / _wrap(A.astype(xp, sizes, weight._data.dtype)).unsqueeze(1)
    padding = None if padding_idx < 0 else padding_idx
    return apply(embedding_backward_op, (per_index,), (bags.indices, weight.shape[0], padding, scale_grad_by_freq))


def _max_rows(w: np.ndarray, bags: Bags, padding_idx: int) -> np.ndarray:
    """(bags, D): the weight row holding each bag's maximum in each column (0 for an empty bag); the first on ties."""
    xp = namespace(w)
    if xp is not np:  # the standard: every bag compares its members at once; the first maximum above -inf
        values = xp.where(_bag_members(xp, bags, padding_idx)[:, :, None], xp.take(w, bags.indices, axis=0)[None, ...],
                          -math.inf)
        first = xp.argmax(values, axis=1)
        picked = A.reshape(xp, xp.take(bags.indices, A.reshape(xp, first, -1)), first.shape)
        return xp.where(xp.max(values, axis=1) > -math.inf, picked, xp.zeros_like(picked))
    keep = np.flatnonzero(bags.indices != padding_idx)
    rows = np.zeros((bags.count, w.shape[1]), dtype=np.int64)
    best = np.full((bags.count, w.shape[1]), -np.inf)
    for k in keep:  # in index order, so ties keep the first
        values = w[bags.indices[k]]
        better = values > best[bags.bag[k]]
        best[bags.bag[k]] = np.where(better, values, best[bags.bag[k]])
        rows[bags.bag[k]] = np.where(better, bags.indices[k], rows[bags.bag[k]])
    return rows


def embedding_bag_sample_weight_grad(grad: Tensor, weight: Tensor, bags: Bags, padding_idx: int) -> Tensor:
    """d out[bag(k)] / d w_k = weight[index k]: the dot product with the bag's gradient (0 for padding)."""
    keep = _wrap(A.astype(namespace(bags.indices), bags.indices != padding_idx, weight._data.dtype))
    rows = weight.index_select(0, _wrap(bags.indices)) * grad.index_select(0, _wrap(bags.bag))
    return rows.sum(1) * keep


# ============================================================================================
# Public functions: argument handling in torch's words
# ============================================================================================


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Regroup the channels of (N, C, ...) as C / groups interleaved groups (ShuffleNet)."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {input.shape[1]} channels and "
                           f"{groups} groups.")
    return apply(channel_shuffle_op, (input,), (groups,))


native_channel_shuffle = channel_shuffle


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of a 2-D input, pairs i < j in order: n (n - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.shape[0] > 1 and input.shape[1]:  # where torch's kernel runs
        _refuse_reduced_floats(input.dtype, "pdist")
    return apply(pdist_op, (input,), (float(p),))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows: the rows of a 2-D input, or the runs of a 1-D input that
    start at `offsets` (the last offset ends the last bag when include_last_offset)."""
    if weight.dtype in (D.int64, D.int32) and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences. However, found offsets of type "
                             f"{_TENSOR_CLASS if isinstance(offsets, Tensor) else type(offsets)}")
        xp, device = namespace(input._data), input._data.device
        starts = xp.arange(input.shape[0], device=device) * input.shape[1]
        indices = A.reshape(xp, input._data, -1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        indices = input._data
        xp, device = namespace(indices), indices.device
        starts = A.astype(xp, offsets._data, xp.int64)
        if not starts.shape[0] or (include_last_offset and starts.shape[0] == 1):  # no bags: the indices are in none
            indices = indices[:0]
            if per_sample_weights is not None:
                per_sample_weights = per_sample_weights[:0]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    index_dtype = input.dtype if offsets is None or input.ndim == 2 else D.promote_types(input.dtype, offsets.dtype)
    if index_dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {D.tensor_type_name(index_dtype)} instead (while checking arguments "
                           "for embedding_bag)")
    if input.ndim == 1:
        _check_offsets(xp, starts, input.shape[0], index_dtype)
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx %= n
    if indices.size and (A.reduce(xp, "max", indices) >= n or A.reduce(xp, "min", indices) < 0):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, xp.unique_values(indices), max_norm, norm_type)
    count = starts.shape[0] - 1 if include_last_offset and input.ndim == 1 else starts.shape[0]
    bag = xp.searchsorted(starts[:count], xp.arange(indices.size, dtype=xp.int64, device=device), side="right") - 1
    bags = Bags(A.astype(xp, indices, xp.int64), A.astype(xp, bag, xp.int64), count)
    return apply(embedding_bag_op, (weight, per_sample_weights),
                 (bags, mode, -1 if padding_idx is None else padding_idx, scale_grad_by_freq))


def _check_offsets(xp: Any, starts: Any, size: int, index_dtype: D.dtype) -> None:
    """torch's checks of a 1-D input's offsets, in its words: the first must be 0 and the last within the input
    (what torch checks up front); negative or decreasing ones fail as they do inside torch's kernels."""
    if not starts.shape[0]:
        return
    first, last = int(starts[0]), int(starts[-1])
    if first != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {first}\n[ {D.tensor_type_name(index_dtype)}{{}} ]")
    if last > size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {size} but got offsets[-1] of {last}")
    if int(A.reduce(xp, "min", starts)) < 0:
        raise IndexError("index out of range in self")
    if bool(xp.any(starts[1:] < starts[:-1])):
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")


def _interval_starts(xp: Any, samples: Any, size: int, out: int, kernel: int) -> Any:
    """torch's generate_intervals, per plane: window corners spread over the input by each plane's random sample
    in [0, 1), in the samples' float type; the last window ends at the input's end."""
    def number(value: float) -> Any:
        return xp.asarray(value, dtype=samples.dtype, device=samples.device)

    alpha = number(size - kernel) / number(out - 1) if out > 1 else number(0)
    steps = A.astype(xp, xp.arange(out - 1, device=samples.device), samples.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        starts = (A.astype(xp, (steps + samples[:, None]) * alpha, xp.int64)
                  - A.astype(xp, samples * alpha, xp.int64)[:, None])
    last = xp.full((samples.shape[0], 1), size - kernel, dtype=xp.int64, device=samples.device)
    return xp.concat([starts, last], axis=1)


def _fractional_max_pool(input: Tensor, d: int, kernel_size: int | Sequence[int], output_size: Any,
                         output_ratio: Any, return_indices: bool, random_samples: Tensor | None) -> Any:
    name = f"fractional_max_pool{d}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    spatial = tuple(input.shape[input.ndim - d:])
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * d
        if len(ratio) > d:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(n * r) for n, r in zip(spatial, ratio)]
    out = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * d
    kernel = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * d
    batch, channels = (1 if input.ndim == d + 1 else input.shape[0]), input.shape[input.ndim - d - 1]
    if random_samples is None:
        random_samples = _creation.rand(batch, channels, d, dtype=input.dtype, device=input.device)
    if random_samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if random_samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {random_samples.ndim}")
    if random_samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if random_samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if random_samples.shape[2] != d:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {d}; got {random_samples.shape[2]}.")
    where = f"{name}()" if d == 2 else f"{name}_out()"
    for axis, size, o, k in zip(("time", "height", "width")[3 - d:], spatial, out, kernel):
        if o + k - 1 > size - (d == 3):  # torch's 3-d check is strict, its 2-d one is not
            raise RuntimeError(f"{where}: pool {axis} {k} too large relative to input {axis} {size}")
    xp = namespace(random_samples._data)
    samples = A.reshape(xp, random_samples._data[:batch, ...], (batch * channels, d))
    order = (1, 0) if d == 2 else (0, 1, 2)  # torch draws a 2-d plane's width sample first
    starts = tuple(_interval_starts(xp, samples[:, j], size, o, k)
                   for j, size, o, k in zip(order, spatial, out, kernel))
    op = fractional_max_pool_op if d == 2 else fractional_max_pool3d_op
    values, indices = apply(op, (input,), (starts, kernel))
    return (values, indices) if return_indices else values


def fractional_max_pool2d(input: Tensor, kernel_size: int | Sequence[int], output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Max pooling over windows at pseudo-random, increasing corners (Graham's fractional max pooling)."""
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: int | Sequence[int], output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """fractional_max_pool2d over volumes."""
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: int | Sequence[int], output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: int | Sequence[int], output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio, True, _random_samples)


def _unpool_size(input: Tensor, d: int, kernel_size: Any, stride: Any, padding: Any, output_size: Any) -> list[int]:
    """torch's _unpool_output_size: the pooled input's size before pooling, or output_size checked against it."""
    def tuple_of(value: Any) -> tuple[int, ...]:
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * d

    kernel = tuple_of(kernel_size)
    stride = kernel if stride is None else tuple_of(stride)
    padding = tuple_of(padding)
    default = [(input.shape[input.ndim - d + i] - 1) * stride[i] + kernel[i] - 2 * padding[i] for i in range(d)]
    if output_size is None:
        size = default
    else:
        size = output_size  # as given: the error shows it so
        if len(size) == d + 2:
            size = size[2:]
        if len(size) != d:
            raise ValueError(f"output_size should be a sequence containing {d} or {d + 2} elements, but it has a "
                             f"length of '{len(size)}'")
        for i in range(d):
            low, high = default[i] - stride[i], default[i] + stride[i]
            if not low < size[i] < high:
                raise ValueError(f'invalid output_size "{size}" (dim {i} must be between {low} and {high})')
    for i in range(d):
        if size[i] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{i}]={size[i]}")
    return list(size)


def _unpool(input: Tensor, indices: Tensor, size: list[int]) -> Tensor:
    """aten::max_unpool2d / 3d: `input` scattered into zero planes of spatial `size` at `indices`."""
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {D.scalar_type_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    flat = indices._data
    high, least = _index_range(flat)
    if least < 0 or high >= math.prod(size):
        bad = high if high >= math.prod(size) else least
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(str(n) for n in size)})")
    d = len(size)
    shape = (*input.shape[:input.ndim - d], *size)
    return keep_index_versions(apply(max_unpool_op if d == 2 else max_unpool3d_op, (input,), (flat, shape, d)), indices)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Undo max_pool1d: each value back at the position its index names, zeros elsewhere (as torch: through
    max_unpool2d on a trailing dimension of 1)."""
    size = _unpool_size(input, 1, kernel_size, stride, padding, output_size)
    return _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), [*size, 1]).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Undo max_pool2d: each value back at the position its index names, zeros elsewhere."""
    return _unpool(input, indices, _unpool_size(input, 2, kernel_size, stride, padding, output_size))


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Undo max_pool3d: each value back at the position its index names, zeros elsewhere."""
    return _unpool(input, indices, _unpool_size(input, 3, kernel_size, stride, padding, output_size))


def _pack_padded_sequence(input: Tensor, lengths: Tensor, batch_first: bool) -> tuple[Tensor, Tensor]:
    """torch._VF._pack_padded_sequence: (data, batch_sizes) of a padded batch sorted by decreasing `lengths`
    (Note [packed sequences])."""
    if lengths.dim() != 1 or lengths.dtype is not D.int64 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                           f"{lengths.device.type} {D.scalar_type_name(lengths.dtype)} tensor")
    sizes = lengths._data
    batch = input.shape[0 if batch_first else 1]
    if len(sizes) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(sizes)} "
                           f"(batch_size={batch})")
    if sizes[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if np.any(sizes[1:] > sizes[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                           "this requirement if you do not need ONNX exportability.")
    batch_sizes = (sizes[None, :] > np.arange(sizes[0])[:, None]).sum(1)
    steps = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    rows = np.concatenate([np.arange(n) for n in batch_sizes])
    data = apply(pack_padded_op, (input,), (steps, rows, bool(batch_first)))
    return data, _creation.tensor(batch_sizes, dtype=D.int64)


def _pad_packed_sequence(data: Tensor, batch_sizes: Tensor, batch_first: bool, padding_value: float,
                         total_length: int) -> tuple[Tensor, Tensor]:
    """torch._VF._pad_packed_sequence: the packed steps written into a (total_length, B, *) tensor of
    padding_value, one slice copy per run of steps with the same batch size (as torch), and each sequence's length."""
    sizes = [int(n) for n in batch_sizes._data]
    output = _creation.full((total_length, sizes[0], *data.shape[1:]), padding_value, dtype=data.dtype)
    lengths = np.zeros(sizes[0], dtype=np.int64)
    offset = start = 0
    for t in range(1, len(sizes) + 1):
        if t < len(sizes) and sizes[t] == sizes[start]:
            continue
        steps, width = t - start, sizes[start]
        block = data[offset:offset + steps * width].view(steps, width, *data.shape[1:])
        output[start:t, :width] = block
        lengths[:width] = t
        offset += steps * width
        start = t
    if batch_first:
        output = output.transpose(0, 1)
    return output, _creation.tensor(lengths)


def _weight_norm_interface(v: Tensor, g: Tensor, dim: int = 0) -> tuple[Tensor, Tensor]:
    """torch._weight_norm_interface: (v g / ||v||, ||v||), the norm over every dim but `dim` (Note [weight norm])."""
    return apply(weight_norm_interface_op, (v, g), (dim % v.dim(),))


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The `pow`-norm of v over every dim but `dim` (all of them for dim=-1), shaped to broadcast against v."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view(v.size(0), *[1] * (v.dim() - 1))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view(*[1] * (v.dim() - 1), v.size(-1))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """torch._weight_norm: v g / ||v||, one node for dim 0 or the last dim (Note [weight norm])."""
    if dim in (0, v.dim() - 1) and v.dtype is not D.float16:
        return _weight_norm_interface(v.contiguous(), g.contiguous(), dim)[0]
    return v * (g / norm_except_dim(v, 2, dim))


_TENSOR_CLASS = "<class 'torch.Tensor'>"  # what torch's str(type(offsets)) prints for a tensor


def _lengths(lengths: Tensor | Sequence[int]) -> np.ndarray:
    """Sequence lengths given as a tensor (read on the host, as torch reads them), a sequence or a number, as a
    flat int64 array."""
    return np.asarray(lengths._host() if isinstance(lengths, Tensor) else lengths, dtype=np.int64).reshape(-1)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification: -log p(target | log_probs (T, N, C)) summed over alignments; 'mean'
    divides each by its target length before averaging over the batch."""
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, batch, classes = lp.shape
    tg = targets._host()  # the labels pick the positions of the recursions: the host reads them
    ilen, tlen = _lengths(input_lengths), _lengths(target_lengths)
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if len(ilen) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tlen) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    if tg.ndim == 1:  # the targets concatenated
        ends = np.cumsum(tlen)
        if tg.shape[0] < ends[-1]:
            raise RuntimeError(f"Expected tensor to have size {ends[-1]} at dimension 0, but got size "
                               f"{tg.shape[0]} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        sequences = [tg[e - n:e] for e, n in zip(ends, tlen)]
    else:
        if tlen.max(initial=0) > tg.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {tlen.max()} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        sequences = [row[:n] for row, n in zip(tg, tlen)]
    for length in ilen:
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length} (while "
                               "checking arguments for ctc_loss_allocate_outputs)")
    params = (tuple(np.asarray(s, dtype=np.int64) for s in sequences), tuple(int(n) for n in ilen),
              tuple(int(n) for n in tlen), blank, zero_infinity)
    loss = apply(ctc_loss_op, (lp,), params)
    if zero_infinity:  # impossible alignments (inputs too short) cost 0; their gradient is zeroed in the backward
        loss = where(loss == math.inf, _creation.zeros((), dtype=loss.dtype), loss)
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        divisor = _creation.tensor(np.maximum(tlen, 1).reshape(loss.shape), dtype=lp.dtype, device=lp.device)
        return (loss / divisor).mean()
    return loss_reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                                      margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) for any distance function d (pairwise_distance by default)."""
    from .pointwise import clamp_min, minimum

    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance(positive, negative))
    return loss_reduce(clamp_min(margin + dist_pos - dist_neg, 0), reduction)


_ACC_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """torch's options for the chunked linear_cross_entropy, checked as torch checks them. retrograd computes every
    configuration by the reference path (linear, then cross_entropy): chunking only bounds torch's peak memory."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and str(self.acc_dtype).split(".")[-1] not in _ACC_DTYPE_NAMES:
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target): the logits of a (C, out_features...,
    in_features) weight, for class-index or class-probability targets."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and (out_features or reduction not in {"mean", "sum", "none"} or label_smoothing != 0.0
                                or target.dtype is not D.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum',"
                      "'none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={out_features}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if out_features:
        linear_weight = linear_weight.reshape(math.prod(out_features, start=classes), in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=classes))
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)


# ============================================================================================
# Fake quantization (quantization-aware training): rows and public functions
# ============================================================================================


@defop("fake_quantize_per_tensor_affine_cachemask", node="FakeQuantizePerTensorAffineCachemaskBackward0",
       params=("scale", "zero_point", "quant_min", "quant_max"), outputs=("output", "mask"),
       differentiable_outputs=(0,), self="grad * mask")  # (no forward AD: torch declares none)
def fake_quantize_op(xp, x, scale, zero_point, quant_min, quant_max):
    """x rounded to the integer grid of `scale` offset by `zero_point`, clamped to [quant_min, quant_max] and mapped
    back (scale and zero_point numbers, or arrays shaped to broadcast along a channel dim); the mask marks the
    elements whose grid value lies in the range, where the straight-through gradient passes. As torch's kernel:
    x times 1 / scale (rounded to float32), rounded half to even, a float zero point added before the rounding and
    an integer one after; the result scaled back in float32 whatever x's dtype."""
    _refuse_kinds(x, "fake_quantize_tensor_cachemask_kernel_type_handling", "buic")
    compute = xp.float64 if x.dtype == xp.float64 else xp.float32
    scale = xp.asarray(scale, dtype=xp.float32, device=x.device)
    zero = xp.asarray(zero_point, device=x.device)
    shifted = A.astype(xp, x, compute, copy=False) * A.astype(xp, 1 / scale, compute)
    if D.kind(zero) == "f":
        grid = xp.round(shifted + A.astype(xp, zero, compute))
    else:
        grid = xp.round(shifted) + A.astype(xp, zero, compute)
    mask = (grid >= quant_min) & (grid <= quant_max)
    out = A.astype(xp, xp.clip(grid, quant_min, quant_max) - A.astype(xp, zero, compute), xp.float32) * scale
    return A.astype(xp, out, x.dtype, copy=False), mask


fake_quantize_tensor_qparams_op = fake_quantize_op.alias("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                                                        "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0")
fake_quantize_per_channel_op = fake_quantize_op.alias("fake_quantize_per_channel_affine_cachemask",
                                                      "FakeQuantizePerChannelAffineCachemaskBackward0")


def _check_quant_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:  # (torch's message, with the spaces of its source line)
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def fake_quantize_per_tensor_affine(input: Tensor, scale: float | Tensor, zero_point: int | Tensor, quant_min: int,
                                    quant_max: int) -> Tensor:
    """Quantize and dequantize with one scale and zero point: round(x / scale) + zero_point clamped to
    [quant_min, quant_max], then back; the gradient passes where the value was in range (straight through)."""
    _check_quant_range(quant_min, quant_max)
    op = fake_quantize_tensor_qparams_op if isinstance(scale, Tensor) else fake_quantize_op
    scale, zero_point = (float(scale), int(zero_point))
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return apply(op, (input,), (scale, zero_point, quant_min, quant_max))[0]


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor, axis: int, quant_min: int,
                                     quant_max: int) -> Tensor:
    """fake_quantize_per_tensor_affine with a scale and zero point per index of dim `axis`."""
    _check_quant_range(quant_min, quant_max)
    if zero_point.dtype not in (D.int32, D.float32, D.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {D.scalar_type_name(zero_point.dtype)}")
    if not 0 <= axis < input.dim():
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scale.dim() != 1 or zero_point.dim() != 1 or scale.numel() != input.size(axis) or \
            zero_point.numel() != input.size(axis):
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    if zero_point.dtype is D.int32 and not bool(((zero_point >= quant_min) & (zero_point <= quant_max)).all()):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    along = (-1,) + (1,) * (input.dim() - axis - 1)
    params = (*(A.reshape(namespace(t._data), t._data, along) for t in (scale, zero_point)), quant_min, quant_max)
    return apply(fake_quantize_per_channel_op, (input,), params)[0]


__all__ = ["channel_shuffle", "native_channel_shuffle", "pdist", "embedding_bag", "ctc_loss",
           "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]
FUNCTIONAL = ["channel_shuffle", "native_channel_shuffle", "pdist", "embedding_bag", "ctc_loss",
              "triplet_margin_with_distance_loss", "linear_cross_entropy", "fractional_max_pool2d",
              "fractional_max_pool3d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
              "max_unpool1d", "max_unpool2d", "max_unpool3d"]
