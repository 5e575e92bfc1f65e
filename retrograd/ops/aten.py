"""torch.ops.aten: the aten operators retrograd has, by their aten names (`torch.ops.aten.slice.Tensor(x, 0, 1)`).

An operator is an overload packet: callable itself, and each of its overloads (`.default`, `.Tensor`, ...) is the
same callable, since retrograd's functions take every overload's arguments. An operator retrograd lacks raises
AttributeError, as torch's namespace does for a name it does not know.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import _dtype as D
from .._tensor import Tensor
from .conv import max_pool_input_backward_op
from .nn import attention_op, native_dropout_backward_op
from .registry import apply
from .shape import _sliced


class OpOverloadPacket:
    """One aten operator: calling it or any of its overloads runs retrograd's function."""

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self._name, self._function = name, function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function(*args, **kwargs)

    def __getattr__(self, overload: str) -> OpOverloadPacket:
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __repr__(self) -> str:
        return f"aten.{self._name}"


def slice(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,  # noqa: A001
          step: int = 1) -> Tensor:
    """aten::slice: elements start:end:step along dim (bounds clamped as torch clamps them; a view)."""
    return apply(*_sliced(input, dim, start, end, step))


def native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    """aten::native_dropout_backward: grad_output * mask * scale (NativeDropoutBackwardBackward0)."""
    return apply(native_dropout_backward_op, (grad_output,), (mask._data, scale))


def max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size: Sequence[int],
                                     stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                                     ceil_mode: bool, indices: Tensor) -> Tensor:
    """aten::max_pool2d_with_indices_backward: each output's gradient added to the input element its `indices`
    picked (the window arguments are already in `indices`)."""
    return apply(max_pool_input_backward_op, (grad_output, input), (indices._data, tuple(input.shape), 2, True))


def _scaled_dot_product_flash_attention_for_cpu(query: Tensor, key: Tensor, value: Tensor, dropout_p: float = 0.0,
                                                 is_causal: bool = False, *, attn_mask: Tensor | None = None,
                                                 scale: float | None = None) -> tuple[Tensor, Tensor]:
    """aten::_scaled_dot_product_flash_attention_for_cpu: (output, logsumexp) of the fused attention row (4-d
    query, key and value, an additive attn_mask; no dropout)."""
    if dropout_p != 0.0:
        raise NotImplementedError("retrograd's fused attention row takes no dropout: use scaled_dot_product_attention")
    stored = query._data.dtype if query.dtype in (D.bfloat16, D.float16) else None
    return apply(attention_op, (query, key, value),
                 (0.0, is_causal, None if attn_mask is None else attn_mask._data, scale, stored))


class _Namespace:
    """torch.ops.aten's operators that retrograd has."""

    def __init__(self, functions: dict[str, Callable[..., Any]]) -> None:
        self._packets = {name: OpOverloadPacket(name, fn) for name, fn in functions.items()}

    def __getattr__(self, name: str) -> OpOverloadPacket:
        try:
            return self._packets[name]
        except KeyError:
            raise AttributeError(f"retrograd does not support torch.ops.aten.{name} yet") from None


aten = _Namespace({"slice": slice, "native_dropout_backward": native_dropout_backward,
                   "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
                   "_scaled_dot_product_flash_attention_for_cpu": _scaled_dot_product_flash_attention_for_cpu})
