"""Adagrad: per-element learning rates from the running sum of squared gradients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _direction, _next_step


class Adagrad(Optimizer):
    """s += g^2;  p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(lr_decay >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(initial_accumulator_value >= 0.0, f"Invalid initial_accumulator_value value: "
                                                 f"{initial_accumulator_value}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:  # torch creates Adagrad's state up front
            for p in group["params"]:
                self.state[p]["step"] = C.tensor(0.0, dtype=float32, device="cpu")
                value = group["initial_accumulator_value"]  # both parts of a complex sum (Note [complex parameters])
                self.state[p]["sum"] = C.full_like(p, complex(value, value) if p.is_complex() else value)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        step = _next_step(state)
        grad = _direction(grad, param, group)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state["sum"].add_(grad * grad)
        std = state["sum"].sqrt() + group["eps"]  # not in place: sqrt's result is saved when differentiable
        param.add_(grad / std, alpha=-clr)
