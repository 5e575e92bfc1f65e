"""NAdam: Adam with Nesterov momentum, its momentum warmed up by Dozat's schedule mu_t."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .adam import _update_moments
from .optimizer import Optimizer, _check, _check_adam_family, _next_step


class NAdam(Optimizer):
    """``mu_t = beta1 (1 - 0.96^(t psi) / 2)``; ``p -= lr [(1 - mu_t) g / (1 - prod mu) + mu_t+1 m / (1 - prod mu
    mu_t+1)] / (sqrt(v / (1 - beta2^t)) + eps)``."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_family(lr, betas, eps, weight_decay)
        _check(momentum_decay >= 0.0, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["mu_product"] = C.tensor(1.0, dtype=float32)
            state["exp_avg"] = C.zeros_like(param)
            state["exp_avg_sq"] = C.zeros_like(param)
        step = _next_step(state)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        grad = _update_moments(param, grad, exp_avg, exp_avg_sq, group)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        mu_product = state["mu_product"].mul_(mu)
        denom = exp_avg_sq.div(1 - beta2**step).sqrt() + group["eps"]  # not in place: sqrt saves its result
        if group["differentiable"]:  # the coefficients stay tensors, so the gradient reaches mu_product
            param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
            param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product * mu_next)), denom)
            return
        mu_product = mu_product.item()
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
