"""ASGD: SGD with a decaying step eta_t, and a running average ax of the iterates from step t0 on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _direction, _next_step


class ASGD(Optimizer):
    """``p = p (1 - lambd eta) - eta g``, ``ax += mu (p - ax)``; then ``eta = lr / (1 + lambd lr t)^alpha`` and
    ``mu = 1 / max(1, t - t0)``."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["eta"] = C.tensor(float(group["lr"]), dtype=float32)
            state["mu"] = C.tensor(1.0, dtype=float32)
            state["ax"] = C.zeros_like(param)
        step = _next_step(state)
        grad = _direction(grad, param, group)
        lr, lambd = group["lr"], group["lambd"]
        eta = state["eta"].item()
        param.mul_(1 - lambd * eta)
        param.add_(grad, alpha=-eta)
        if state["mu"].item() != 1:
            state["ax"].add_(param.sub(state["ax"]).mul_(state["mu"].item()))
        else:
            state["ax"].copy_(param)
        state["eta"].copy_(C.tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
        state["mu"].copy_(C.tensor(1 / max(1, step - group["t0"])))
