"""Adadelta: step sizes from running averages of squared gradients and squared updates, no learning rate needed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _direction, _next_step


class Adadelta(Optimizer):
    """``v = rho v + (1 - rho) g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) g``, ``u = rho u + (1 - rho) d^2``,
    ``p -= lr d``."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["square_avg"] = C.zeros_like(param)
            state["acc_delta"] = C.zeros_like(param)
        _next_step(state)
        grad = _direction(grad, param, group)
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad  # sqrt saves its result: not in place
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-group["lr"])
