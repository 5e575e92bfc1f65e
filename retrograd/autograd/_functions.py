"""torch.autograd._functions: torch's old built-in autograd Functions that code still calls."""

from __future__ import annotations

import math
from typing import Any

from .function import Function


class Resize(Function):
    """A reshape to `sizes` (same number of elements) as a custom Function (ResizeBackward)."""

    @staticmethod
    def forward(ctx: Any, tensor: Any, sizes: tuple) -> Any:
        ctx.sizes = sizes
        ctx.numel = math.prod(sizes)
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in total), but the given "
                f"tensor has a size of {'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). autograd's "
                "resize can only change the shape of a given tensor, while preserving the number of elements. ")
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().view(*sizes)

    @staticmethod
    def backward(ctx: Any, grad_output: Any) -> tuple:
        return grad_output.contiguous().view(ctx.input_sizes), None
