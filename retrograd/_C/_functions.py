"""torch._C._functions: the AccumulateGrad node class, and two nodes tests build graphs with: DelayedError (its
backward raises) and UndefinedGrad (its backward hands on no gradient)."""

from __future__ import annotations

from typing import Any

from ..autograd.function import Function
from ..autograd.graph import AccumulateGrad

__all__ = ["AccumulateGrad", "DelayedError", "UndefinedGrad"]


class _Error(Function):
    @staticmethod
    def forward(ctx: Any, message: str, *inputs: Any) -> tuple:
        ctx.message = message
        return tuple(t.clone() for t in inputs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        raise RuntimeError(ctx.message)


class _UndefinedGrad(Function):
    @staticmethod
    def forward(ctx: Any, *inputs: Any) -> tuple:
        return tuple(t.clone() for t in inputs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        return (None,) * len(grads)


def _one_or_all(outputs: tuple) -> Any:
    return outputs[0] if len(outputs) == 1 else outputs


class DelayedError:
    """DelayedError(message, num_inputs)(*inputs): copies of the inputs whose node raises `message` if backward
    ever reaches it (a gradient that must not be asked for)."""

    def __init__(self, message: str, num_inputs: int) -> None:
        self.message, self.num_inputs = message, num_inputs

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != self.num_inputs:
            raise TypeError(f"expected {self.num_inputs} inputs, but got {len(inputs)}")
        return _one_or_all(_Error.apply(self.message, *inputs))


class UndefinedGrad:
    """UndefinedGrad()(*inputs): copies of the inputs whose node passes back no gradient (an undefined one)."""

    def __call__(self, *inputs: Any) -> Any:
        return _one_or_all(_UndefinedGrad.apply(*inputs))
