"""RAdam: Adam whose adaptive step is switched on, and rectified, once the variance estimate is reliable."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .adam import _update_moments
from .optimizer import Optimizer, _check_adam_family, _next_step


class RAdam(Optimizer):
    """rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t); for rho_t > 5 the Adam step times the rectification r_t,
    else plain momentum SGD on the bias-corrected first moment."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_family(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["exp_avg"] = C.zeros_like(param)
            state["exp_avg_sq"] = C.zeros_like(param)
        step = _next_step(state)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        _update_moments(param, grad, exp_avg, exp_avg_sq, group)
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / (1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = bias_correction2**0.5 / (exp_avg_sq.sqrt() + group["eps"])
            param.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            param.add_(corrected * lr, alpha=-1.0)
