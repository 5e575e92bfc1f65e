"""Muon: momentum SGD for 2-D weights whose update is orthogonalised by a Newton–Schulz iteration run in bfloat16."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _creation as C
from .._tensor import Tensor
from .optimizer import Optimizer, _check

DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


class Muon(Optimizer):
    """``B = lerp(B, g, 1 - momentum)``; the update (nesterov: ``lerp(g, B, momentum)``) is orthogonalised,
    ``p *= 1 - lr weight_decay`` and ``p -= adjusted_lr O`` (torch's algorithm, bfloat16 rounding included)."""

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS, eps: float = 1e-7,
                 ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        _check(not isinstance(lr, Tensor) or lr.numel() == 1, "Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}")
        _check(0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}")
        _check(adjust_lr_fn in (None, "original", "match_rms_adamw"),
               f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                _check(p.ndim == 2, f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                    f"{p.size()}")

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if param.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = C.zeros_like(grad)
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        lr, momentum = float(group["lr"]), group["momentum"]
        buffer = state["momentum_buffer"].lerp_(grad, 1 - momentum)
        update = grad.lerp(buffer, momentum) if group["nesterov"] else buffer
        orthogonal = _orthogonalise(update.numpy(), group["ns_coefficients"], group["ns_steps"], group["eps"])
        rows, cols = param.shape
        if group["adjust_lr_fn"] in (None, "original"):
            ratio = math.sqrt(max(1, rows / cols))
        else:  # "match_rms_adamw"
            ratio = 0.2 * math.sqrt(max(rows, cols))
        param.mul_(1 - lr * group["weight_decay"])
        param.add_(C.tensor(orthogonal, dtype=param.dtype), alpha=-lr * ratio)


# Note [Muon in bfloat16]
# torch runs the Newton–Schulz iteration on `grad.bfloat16()`: every op rounds its result to bfloat16 (8 bits of
# mantissa), and that rounding is most of what the update is made of. NumPy has no bfloat16, so the iteration
# runs here on float64 arrays of bfloat16 values, each op computed exactly enough (float64 sums of products of
# 8-bit mantissas) and rounded once to bfloat16 as torch's CPU kernels do; this reproduces torch's bits.
def _round_bfloat16(array: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even) through float32, as torch's conversion does; as float64."""
    bits = np.asarray(array, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _orthogonalise(grad: np.ndarray, coefficients: tuple[float, float, float], steps: int,
                   eps: float) -> np.ndarray:
    """torch's `_zeropower_via_newtonschulz`: X / |X|, then X = aX + (bG + cG²)X with G = XXᵀ, in bfloat16."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (float(np.float32(k)) for k in coefficients)  # torch's kernels take the scalars as float
    x = _round_bfloat16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _round_bfloat16(np.sqrt((x * x).sum()))
    x = _round_bfloat16(x / max(norm, _round_bfloat16(eps)))
    for _ in range(steps):
        gram = _round_bfloat16(x @ x.T)
        x = _round_bfloat16(a * x + _round_bfloat16(c * (gram @ gram) + b * gram) @ x)
    return x.T if tall else x
