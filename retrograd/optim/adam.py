"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize, in torch's arithmetic order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from ..autograd.forward_ad import transforms
from ..ops.inplace import mark_written, scaled_add
from .optimizer import Optimizer, _check_adam_family, _direction, _next_step


class Adam(Optimizer):
    """Adaptive moments: p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_family(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32)
            state["exp_avg"] = C.zeros_like(param)
            state["exp_avg_sq"] = C.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = C.zeros_like(param)
        if _numpy_update(param, grad, state, group):
            return
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        step = _next_step(state)
        if group["weight_decay"] != 0 and group["decoupled_weight_decay"]:
            param.mul_(1 - lr * group["weight_decay"])
        grad = _direction(grad, param, group)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp towards grad
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        second = exp_avg_sq
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"].copy_(state["max_exp_avg_sq"].maximum(exp_avg_sq))
        denom = (second.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        param.add_(exp_avg / denom, alpha=-step_size)


# Note [Adam's step in NumPy]
# Adam's update is about a dozen tensor ops per parameter (five of them out of place), and users' programs
# (the GPT's AdamW) run it for every parameter every step: on small parameters the ops' dispatch is most of
# its cost. When every array is a C-contiguous NumPy float32 or float64 array of the parameter's shape and
# the hyper-parameters are Python numbers, _numpy_update runs the same arithmetic as Adam._update, operation
# for operation (the same ufuncs on the same operands, the in-place ones with out=, the scaled adds as
# ops.inplace.scaled_add does them), so the bits are the same; then it counts each tensor's in-place changes as the
# ops would (the version counters) and updates their live views. Anything else takes the tensor ops.


def _numpy_update(param: Tensor, grad: Tensor, state: dict, group: dict) -> bool:
    """Adam._update done in NumPy (Note [Adam's step in NumPy]); False, having done nothing, where it does not apply."""
    beta1, beta2 = group["betas"]
    lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
    numbers = (int, float)
    if transforms.active or group.get("differentiable") or not (
            type(lr) in numbers and type(beta1) in numbers and type(beta2) in numbers and type(eps) in numbers
            and type(weight_decay) in numbers):
        return False
    names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
    tensors = (param, grad, *(state[k] for k in names))
    p = param._data
    for t in tensors:
        a = t._data
        if type(a) is not np.ndarray or a.dtype != p.dtype or a.shape != p.shape or not a.flags.c_contiguous:
            return False
    count = state["step"]._data
    if p.dtype not in (np.float32, np.float64) or not p.ndim or not p.flags.writeable or type(count) is not np.ndarray \
            or count.ndim:
        return False
    g, m, v = grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data
    np.add(count, 1, out=count)
    mark_written(state["step"])
    step = count.item()
    decoupled = weight_decay != 0 and group.get("decoupled_weight_decay", False)
    if decoupled:
        np.multiply(p, 1 - lr * weight_decay, out=p)
    if group.get("maximize"):
        g = np.negative(g)
    if weight_decay != 0 and not group.get("decoupled_weight_decay", False):
        g = np.add(g, p if weight_decay == 1 else np.multiply(p, weight_decay))
    _add_scaled(m, np.subtract(g, m), 1 - beta1)
    np.multiply(v, beta2, out=v)
    _add_scaled(v, np.multiply(g, g), 1 - beta2)
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    second = v
    if group["amsgrad"]:
        second = np.maximum(state["max_exp_avg_sq"]._data, v, out=state["max_exp_avg_sq"]._data)
    denom = np.sqrt(second)
    np.divide(denom, bias_correction2_sqrt, out=denom)
    np.add(denom, group["eps"], out=denom)
    _add_scaled(p, np.divide(m, denom), -step_size)
    for t, changes in ((param, 2 if decoupled else 1), (state["exp_avg"], 1), (state["exp_avg_sq"], 2),
                       *(((state["max_exp_avg_sq"], 1),) if group["amsgrad"] else ())):
        for _ in range(changes):
            mark_written(t)
    return True


def _add_scaled(data: np.ndarray, value: np.ndarray, alpha: float) -> None:
    """data += alpha * value, as add_(value, alpha=alpha) computes it."""
    if alpha == 1:
        np.add(data, value, out=data)
    else:
        scaled_add(data, value, alpha)


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
