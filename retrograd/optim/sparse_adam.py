"""SparseAdam: Adam for sparse gradients (nn.Embedding(sparse=True)). retrograd has no sparse layout, so every
gradient is dense and a step refuses it with torch's error, as torch does for a dense gradient."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check


class SparseAdam(Optimizer):
    """Constructs and checks its hyper-parameters as torch; `step` raises on the (always dense) gradients."""

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        _check(not isinstance(lr, Tensor) or lr.numel() == 1, "Tensor lr must be 1-element")
        _check(0.0 < lr, f"Invalid learning rate: {lr}")
        _check(0.0 < eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        _check(not complex_params,
               f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if any(p.grad is not None for group in self.param_groups for p in group["params"]):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
