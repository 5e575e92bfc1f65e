"""torch's memory formats: the order in which a tensor's dims are laid out in memory.

contiguous_format is row-major; channels_last (4-d) and channels_last_3d (5-d) put the channel dim
(dim 1) innermost, as NHWC and NDHWC; preserve_format keeps the input's layout when it is dense,
else row-major. NumPy arrays carry strides, so each format is a real layout here.
"""

from __future__ import annotations

import numpy as np


class memory_format:  # noqa: N801 - torch's name
    """One of torch's memory formats (torch.contiguous_format, torch.channels_last, ...)."""

    __slots__ = ("name", "ndim")

    def __init__(self, name: str, ndim: int | None = None) -> None:
        self.name = name
        self.ndim = ndim  # the rank a channels-last format requires

    def __repr__(self) -> str:
        return f"torch.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)


def _dims_outermost_first(ndim: int, fmt: memory_format) -> tuple[int, ...]:
    """The dims from the one with the largest stride to the innermost, in `fmt`."""
    if fmt.ndim is None:
        return tuple(range(ndim))
    if ndim != fmt.ndim:
        raise RuntimeError(f"required rank {fmt.ndim} tensor to use {fmt.name} format")
    return (0,) + tuple(range(2, ndim)) + (1,)


def laid_out(array: np.ndarray, fmt: memory_format | None) -> np.ndarray:
    """A copy of `array` in `fmt` (None: row-major; preserve_format: the input's layout when dense)."""
    if fmt is None or fmt is contiguous_format:
        return np.array(array, order="C", copy=True)
    if fmt is preserve_format:
        return np.array(array, order="K", copy=True)
    order = _dims_outermost_first(array.ndim, fmt)
    return np.ascontiguousarray(array.transpose(order)).transpose(np.argsort(order))


def is_laid_out(array: np.ndarray, fmt: memory_format) -> bool:
    """Whether `array` has `fmt`'s strides (dims of size 1 may have any stride, as in torch)."""
    if not hasattr(array, "strides"):  # an array API array without a memory layout has every layout
        return True
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return bool(array.flags.c_contiguous)
    if array.ndim != fmt.ndim:
        return False
    expected = array.itemsize
    for d in reversed(_dims_outermost_first(array.ndim, fmt)):
        if array.shape[d] != 1 and array.strides[d] != expected:
            return False
        expected *= array.shape[d]
    return True
