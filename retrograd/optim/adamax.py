"""Adamax: Adam with the infinity norm of past gradients in place of the root mean square."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check_adam_family, _direction, _next_step, _saved_copy


class Adamax(Optimizer):
    """``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 u, abs(g) + eps)``, ``p -= lr / (1 - beta1^t) m / u``."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_adam_family(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["exp_avg"] = C.zeros_like(param)
            state["exp_inf"] = C.zeros_like(param)
        step = _next_step(state)
        grad = _direction(grad, param, group)
        beta1, beta2 = group["betas"]
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(_saved_copy(exp_inf.mul_(beta2), group).maximum(grad.abs().add_(group["eps"])))
        param.addcdiv_(exp_avg, exp_inf, value=-group["lr"] / (1 - beta1**step))
