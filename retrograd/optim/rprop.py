"""Rprop: per-element step sizes that grow while a gradient keeps its sign and shrink when it flips."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _next_step, _saved_copy


class Rprop(Optimizer):
    """Each step size s grows by etaplus while g keeps the sign of the last g and shrinks by etaminus when it
    flips (that g then counts as 0), within step_sizes; then ``p -= sign(g) s``."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["prev"] = C.zeros_like(param)
            state["step_size"] = C.full_like(grad, group["lr"])
        _next_step(state)
        grad = -grad if group["maximize"] else grad  # no weight decay: torch's Rprop ignores a group's weight_decay
        etaminus, etaplus = group["etas"]
        sign = grad.mul(_saved_copy(state["prev"], group)).sign()
        factor = sign.masked_fill(sign.gt(0), etaplus).masked_fill(sign.lt(0), etaminus).masked_fill(sign.eq(0), 1)
        state["step_size"].mul_(factor).clamp_(*group["step_sizes"])
        grad = grad.masked_fill(sign.lt(0), 0)
        param.addcmul_(grad.sign(), state["step_size"], value=-1)
        state["prev"].copy_(grad)
