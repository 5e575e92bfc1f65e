"""Rule table: neural-network kernels and losses (OPS.md section I).

Hot ops get one fused node each (softmax, log_softmax, the losses), as torch has, instead of a
chain of small ones: one node is also one Python call in backward.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _wrap_dim
from .conv import *  # noqa: F403 - the spatial kernels are this family's too (rows, helpers, public functions)
from .conv import FUNCTIONAL_ONLY as _CONV_FUNCTIONAL
from .conv import PUBLIC as _CONV_PUBLIC
from .registry import apply, defop

# ============================================================================================
# Rows
# ============================================================================================


@defop("_softmax", node="SoftmaxBackward0", params=("dim",), self="softmax_backward_data(grad, result, dim)",
       jvp="result * (self_t - (self_t * result).sum(dim, True))")
def softmax_op(xp, x, dim):
    e = xp.exp(x - xp.max(x, axis=dim, keepdims=True)) if x.size else x.copy()
    return e / xp.sum(e, axis=dim, keepdims=True)


@defop("_softmax_backward_data", node="SoftmaxBackwardDataBackward0", inputs=("grad_output", "output"),
       params=("dim",),
       grad_output="softmax_backward_data(grad, output, dim)",
       output="grad * (grad_output - (grad_output * output).sum(dim, True))"
              " - grad_output * (grad * output).sum(dim, True)",
       jvp="softmax_backward_data(grad_output_t, output, dim) + output_t * (grad_output - (grad_output * output)"
           ".sum(dim, True)) - output * (grad_output * output_t).sum(dim, True)")
def softmax_backward_data(xp, g, r, dim):
    return r * (g - xp.sum(g * r, axis=dim, keepdims=True))


@defop("_log_softmax", node="LogSoftmaxBackward0", params=("dim",),
       self="log_softmax_backward_data(grad, result, dim)",
       jvp="self_t - (self_t * exp(result)).sum(dim, True)")
def log_softmax_op(xp, x, dim):
    if not x.size:
        return x.copy()
    shifted = x - xp.max(x, axis=dim, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True))


@defop("_log_softmax_backward_data", node="LogSoftmaxBackwardDataBackward0", inputs=("grad_output", "output"),
       params=("dim",),
       grad_output="grad - (grad * exp(output)).sum(dim, True)",
       output="-grad * exp(output) * grad_output.sum(dim, True)",
       jvp="grad_output_t - exp(output) * (grad_output_t.sum(dim, True) + output_t * grad_output.sum(dim, True))")
def log_softmax_backward_data(xp, g, r, dim):
    return g - xp.exp(r) * xp.sum(g, axis=dim, keepdims=True)


@defop("binary_cross_entropy_with_logits", inputs=("self", "target", "weight", "pos_weight"),
       params=("reduction",),
       self="bce_logits_input_grad(grad, self, target, weight, pos_weight, reduction)",
       target="bce_logits_target_grad(grad, self, target, weight, pos_weight, reduction)",
       jvp="bce_logits_jvp(self_t, target_t, self, target, weight, pos_weight, reduction)")
def bce_with_logits_op(xp, x, t, w, pw, reduction):
    log_sig_neg = xp.logaddexp(0, -x)  # log(1 + exp(-x)), stable for |x| large
    if pw is None:
        loss = (1 - t) * x + log_sig_neg
    else:
        loss = (1 - t) * x + (1 + (pw - 1) * t) * log_sig_neg
    if w is not None:
        loss = loss * w
    return _reduce(xp, loss.astype(x.dtype, copy=False), reduction)


@defop("mse_loss", inputs=("self", "target"), params=("reduction",),
       self="2 * (self - target) * reduced_grad(grad, reduction, self_shape, target_shape)",
       target="-2 * (self - target) * reduced_grad(grad, reduction, self_shape, target_shape)",
       jvp="loss_reduce(2 * (self - target) * (self_t - target_t), reduction)")
def mse_loss_op(xp, x, t, reduction):
    d = x - t
    return _reduce(xp, d * d, reduction)


@defop("nll_loss", node="NllLossBackward0", inputs=("self",), params=("target", "weight", "reduction", "ignore_index"),
       self="nll_loss_backward(grad, self_shape, self_dtype, target, weight, reduction, ignore_index)",
       jvp="nll_loss_forward_t(self_t, target, weight, reduction, ignore_index)")
def nll_loss_op(xp, x, target, weight, reduction, ignore_index):
    picked, w = _nll_pick(xp, x, target, weight, ignore_index)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return xp.sum(loss)
    return (xp.sum(loss) / xp.sum(w)).astype(x.dtype)


# ============================================================================================
# Helpers (forward on arrays; formulas in retrograd ops)
# ============================================================================================


def _reduce(xp, loss, reduction: str):
    if reduction == "mean":
        return xp.mean(loss)
    if reduction == "sum":
        return xp.sum(loss)
    return loss


def _nll_pick(xp, x, target, weight, ignore_index):
    """Per-sample -log-probability pick and weight (0 where target == ignore_index)."""
    cls_dim = 1 if x.ndim > 1 else 0
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    if x.ndim == 1:
        picked = x[safe]
    else:
        picked = xp.take_along_axis(x, xp.expand_dims(safe, cls_dim), axis=cls_dim).squeeze(cls_dim)
    w = weight[safe] if weight is not None else xp.ones(safe.shape, dtype=x.dtype)
    return picked, xp.where(valid, w, 0).astype(x.dtype)


def reduced_grad(grad: Tensor, reduction: str, *shapes: tuple) -> Tensor:
    """The incoming gradient spread over the elements a 'mean'/'sum' reduction combined."""
    if reduction == "mean":
        n = np.prod(np.broadcast_shapes(*shapes), dtype=np.int64)
        return grad / int(n) if n else grad * float("nan")
    return grad


def loss_reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def bce_logits_input_grad(grad, x, t, w, pw, reduction):
    from .. import sigmoid

    g = reduced_grad(grad, reduction, x.shape, t.shape)
    if pw is None:
        d = sigmoid(x) - t
    else:
        d = (pw * t + 1 - t) * sigmoid(x) - pw * t
    return d * g * w if w is not None else d * g


def bce_logits_target_grad(grad, x, t, w, pw, reduction):
    from .pointwise import log, sigmoid

    g = reduced_grad(grad, reduction, x.shape, t.shape)
    d = -x if pw is None else (pw - 1) * -log(sigmoid(x)) - x
    return d * g * w if w is not None else d * g


def bce_logits_jvp(x_t, t_t, x, t, w, pw, reduction):
    from .. import ones

    one = ones((), dtype=x.dtype)
    gi = bce_logits_input_grad(one, x, t, w, pw, "none")
    out = gi * x_t
    if t_t is not None:
        out = out + bce_logits_target_grad(one, x, t, w, pw, "none") * t_t
    return loss_reduce(out, reduction)


def nll_loss_backward(grad, shape, dtype, target, weight, reduction, ignore_index):
    """-w[t] * grad at each target position (divided by the total weight for 'mean')."""
    from .. import zeros
    from .._tensor import _wrap

    xp = np
    _, w = _nll_pick(xp, np.zeros(shape, dtype), target, weight, ignore_index)
    scale = _wrap(-w)
    if reduction == "mean":
        total = w.sum()
        scale = scale / _wrap(total)
    g = grad * scale if reduction != "none" else grad * scale
    cls_dim = 1 if len(shape) > 1 else 0
    safe = np.where(target != ignore_index, target, 0)
    out = zeros(shape, dtype=g.dtype)
    if len(shape) == 1:
        return out.scatter(0, _wrap(safe.reshape(1)), g.reshape(1))
    return out.scatter(cls_dim, _wrap(np.expand_dims(safe, cls_dim)), g.unsqueeze(cls_dim))


def nll_loss_forward_t(x_t, target, weight, reduction, ignore_index):
    return apply(nll_loss_op, (x_t,), (target, weight, reduction, ignore_index))


# ============================================================================================
# Public functions
# ============================================================================================


def softmax(input: Tensor, dim: int | None = None, dtype: object = None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1  # torch's legacy implicit-dim choice
    return apply(softmax_op, (input,), (_wrap_dim(dim, input._data.ndim),))


def log_softmax(input: Tensor, dim: int | None = None, dtype: object = None) -> Tensor:
    """log(softmax(x)) along dim, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return apply(log_softmax_op, (input,), (_wrap_dim(dim, input._data.ndim),))


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross-entropy in one stable node."""
    _check_reduction(reduction)
    if target._data.shape != input._data.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return apply(bce_with_logits_op, (input, target, weight, pos_weight), (reduction,))


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or per-element) squared error."""
    _check_reduction(reduction)
    if target._data.shape != input._data.shape:
        import warnings

        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=2)
    return apply(mse_loss_op, (input, target), (reduction,))


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities (N, C) or (C,)."""
    _check_reduction(reduction)
    t = target._data
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name.capitalize()}")
    n_cls = input._data.shape[1 if input._data.ndim > 1 else 0]
    valid = t[t != ignore_index]
    if valid.size and (valid.max() >= n_cls or valid.min() < 0):
        raise IndexError(f"Target {int(valid.max() if valid.max() >= n_cls else valid.min())} is out of bounds.")
    if input._data.ndim > 1 and t.shape[0] != input._data.shape[0]:
        raise ValueError(f"Expected input batch_size ({input._data.shape[0]}) to match target batch_size "
                         f"({t.shape[0]}).")
    w = weight._data if weight is not None else None
    return apply(nll_loss_op, (input,), (t.astype(np.int64), w, reduction, ignore_index))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim followed by nll_loss (class indices or probabilities)."""
    cls_dim = 1 if input._data.ndim > 1 else 0
    logp = log_softmax(input, cls_dim)
    if target._data.dtype.kind == "f":  # class probabilities
        t = target
        if label_smoothing:
            t = t * (1 - label_smoothing) + label_smoothing / input._data.shape[cls_dim]
        per = -(logp * t if weight is None else logp * t * _class_view(weight, input)).sum(cls_dim)
        if reduction == "mean":
            return per.sum() / (input._data.size // input._data.shape[cls_dim])
        return per.sum() if reduction == "sum" else per
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return loss
    n_cls = input._data.shape[cls_dim]
    valid = Tensor.__new__(Tensor)
    from .._tensor import _wrap

    valid = _wrap((target._data != ignore_index).astype(input._data.dtype))
    smooth = -(logp if weight is None else logp * _class_view(weight, input)).sum(cls_dim) * valid
    if reduction == "mean":
        denom = valid.sum() if weight is None else (_wrap(weight._data[np.where(target._data != ignore_index,
                                                                                target._data, 0)]) * valid).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * loss + (label_smoothing / n_cls) * smooth


def _class_view(weight: Tensor, input: Tensor) -> Tensor:
    shape = [1] * input._data.ndim
    shape[1 if input._data.ndim > 1 else 0] = -1
    return weight.reshape(shape)


__all__ = ["log_softmax", "softmax", *_CONV_PUBLIC]
FUNCTIONAL = ["binary_cross_entropy_with_logits", "cross_entropy", "log_softmax", "mse_loss", "nll_loss", "softmax",
              *_CONV_PUBLIC, *_CONV_FUNCTIONAL]
