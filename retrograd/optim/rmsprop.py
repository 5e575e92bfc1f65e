"""RMSprop: divide by a running root-mean-square of gradients (centered and momentum variants)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _direction, _next_step


class RMSprop(Optimizer):
    """v = alpha * v + (1 - alpha) * g^2;  p -= lr * g / (sqrt(v - mean(g)^2 if centered) + eps)."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(alpha >= 0.0, f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["square_avg"] = C.zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = C.zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = C.zeros_like(param)
        alpha = group["alpha"]
        _next_step(state)
        grad = _direction(grad, param, group)
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.add_(grad - grad_avg, alpha=1 - alpha)  # lerp towards grad
            avg = square_avg.sub(grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg + group["eps"]  # not in place: sqrt's result is saved when differentiable
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(grad / avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.add_(grad / avg, alpha=-group["lr"])
