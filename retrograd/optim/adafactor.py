"""Adafactor: Adam's second moment kept as row and column factors for matrices (memory O(n + m), not O(nm))."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _creation as C
from .. import float32
from .._tensor import Tensor
from .optimizer import Optimizer, _check, _next_step


class Adafactor(Optimizer):
    """The step size is relative to the parameter's RMS, the variance of a matrix gradient is the outer product of
    its row and column means of g², and the update is clipped to RMS <= d (torch's single-tensor algorithm)."""

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        _check(not isinstance(lr, Tensor) or lr.numel() == 1, "Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if param.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            if grad.dim() > 1:  # the row factor reduces the last dimension, the column factor the one before
                state["row_var"] = grad.new_zeros([*grad.shape[:-1], 1])
                state["col_var"] = grad.new_zeros([*grad.shape[:-2], 1, grad.shape[-1]])
            else:
                state["variance"] = C.zeros_like(grad)
        grad = -grad if group["maximize"] else grad
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype.np).eps)
        lr = float(group["lr"])
        step = _next_step(state)
        one_minus_beta2 = step ** group["beta2_decay"]
        alpha = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * min(lr, 1 / step**0.5)
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2)
            col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2)
            var_estimate = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            var_estimate = state["variance"].lerp_(grad * grad, one_minus_beta2).clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        param.add_(update, alpha=-alpha / denom)
