"""torch's memory formats: the order in which a tensor's dims are laid out in memory.

contiguous_format is row-major; channels_last (4-d) and channels_last_3d (5-d) put the channel dim
(dim 1) innermost, as NHWC and NDHWC; preserve_format keeps the input's layout when it is dense,
else row-major. NumPy arrays carry strides, so each format is a real layout here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
legacy_contiguous_format = contiguous_format  # torch's name for it in its older Python code (the same object)
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)


def _dims_outermost_first(ndim: int, fmt: memory_format) -> tuple[int, ...]:
    """The dims from the one with the largest stride to the innermost, in `fmt`."""
    if fmt.ndim is None:
        return tuple(range(ndim))
    if ndim != fmt.ndim:
        raise RuntimeError(f"required rank {fmt.ndim} tensor to use {fmt.name} format")
    return (0,) + tuple(range(2, ndim)) + (1,)


def memory_order(data: Any) -> tuple[int, ...]:
    """data's dims from the outermost to the innermost as torch's TensorIterator walks them (and as `empty_like`
    lays out a copy): by decreasing stride, the larger size outside on a tie, and a broadcast dim (stride 0) left
    where it is, by the insertion sort of TensorIterator's `reorder_dimensions`. Dims of size 1 (and 0) go last (they
    do not change the order); C order for a contiguous array or another library's."""
    strides = getattr(data, "strides", None)
    if strides is None:
        return tuple(range(data.ndim))
    shape, strides = data.shape, [abs(s) for s in strides]

    def should_swap(dim0: int, dim1: int) -> int:  # 1: dim0 belongs outside dim1, -1: inside, 0: either
        if strides[dim0] == 0 or strides[dim1] == 0:
            return 0
        if strides[dim0] != strides[dim1]:
            return 1 if strides[dim0] > strides[dim1] else -1
        return 1 if shape[dim0] > shape[dim1] else 0

    perm = [d for d in reversed(range(data.ndim)) if shape[d] > 1]  # innermost first, as torch's
    for i in range(1, len(perm)):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return (*reversed(perm), *(d for d in range(data.ndim) if shape[d] <= 1))


def like_order(array: Any, fmt: memory_format | None) -> tuple[int, ...]:
    """The dims of a new tensor like `array` (the _like factories') from the outermost to the innermost:
    preserve_format (None, their default) keeps the layout of a dense array whose dims are permuted (a transposed
    view), as torch's empty_like does; row-major for anything else; a channels-last format its own order."""
    if fmt is None or fmt is preserve_format:
        permuted = isinstance(array, np.ndarray) and not array.flags.c_contiguous and _is_permuted_dense(array)
        return memory_order(array) if permuted else tuple(range(array.ndim))
    return _dims_outermost_first(array.ndim, fmt)


def _is_permuted_dense(array: np.ndarray) -> bool:
    """Whether `array` fills its memory without gaps or overlaps in some order of its dims (torch's
    is_non_overlapping_and_dense)."""
    expected = array.itemsize
    for d in sorted((d for d in range(array.ndim) if array.shape[d] != 1), key=lambda d: abs(array.strides[d])):
        if array.strides[d] != expected:
            return False
        expected *= array.shape[d]
    return True


def laid_out(array: np.ndarray, fmt: memory_format | None) -> np.ndarray:
    """A copy of `array` in `fmt` (None: row-major; preserve_format: `preserved`'s layout)."""
    if fmt is None or fmt is contiguous_format:
        return array.copy(order="C")  # a method, so CuPy's arrays take it too
    if fmt is preserve_format:
        return preserved(array)
    return _copied_in_order(array, _dims_outermost_first(array.ndim, fmt))


def preserved(array: np.ndarray) -> np.ndarray:
    """A copy of `array` as torch's clone lays it out by default (empty_like's preserve_format): a dense array's
    strides, size-1 dims included (a channels_last activation stays channels_last, a transpose stays transposed);
    an array with gaps or a broadcast dim gets dense strides in `memory_order`, torch's `infer_dense_strides`."""
    if array.flags.c_contiguous and 1 not in array.shape:  # (NumPy's flag ignores the strides of size-1 dims)
        return array.copy()
    if array.size and type(array) is np.ndarray and _is_permuted_dense(array):
        # its own strides, a size-1 dim's too (a depthwise weight's (9, 1, 3, 1) in channels_last), as torch's
        # empty_like keeps a non-overlapping dense tensor's
        return _copied_with_strides(array, array.strides)
    return _copied_in_order(array, list(memory_order(array)))


def cast_preserved(cast: Any, source: Any) -> Any:
    """`cast`, a copy of `source` in another dtype, with source's strides (in elements) when source is dense, a
    size-1 dim's included, as torch's preserve_format casts lay it out (NumPy's astype picks its own there)."""
    if type(cast) is not np.ndarray or source.flags.c_contiguous and 1 not in source.shape or not cast.size:
        return cast
    strides = tuple(s // source.itemsize * cast.itemsize for s in source.strides)
    if cast.strides == strides or not _is_permuted_dense(source):
        return cast
    return _copied_with_strides(cast, strides)


def _copied_with_strides(array: np.ndarray, strides: tuple[int, ...]) -> np.ndarray:
    """A copy of a dense `array` laid out with `strides` (in bytes, dense in some order of the dims)."""
    copied = np.ndarray(array.shape, array.dtype, buffer=np.empty(array.size, array.dtype), strides=strides)
    copied[...] = array
    return copied


def _copied_in_order(array: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """A dense copy of `array` whose dims lie in memory from order[0] (outermost) to order[-1], with torch's strides
    for size-1 dims too (the product of the sizes inside them: a fresh row-major copy has them, where NumPy's
    ascontiguousarray keeps a size-1 dim's stride as it was). Array methods only, so CuPy's arrays take it too."""
    return array.transpose(tuple(order)).copy().transpose(tuple(int(d) for d in np.argsort(order)))


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


def suggest_memory_format(array: Any) -> memory_format:
    """The layout torch reads off a tensor's strides (TensorImpl's is_channels_last_strides_2d/_3d, which
    `suggest_memory_format` answers): channels_last for a 4-d array whose dims nest as NHWC, channels_last_3d for a
    5-d one as NDHWC, else contiguous_format; ambiguous strides (a size-1 channel dim of a row-major array, an N111
    tensor) read as row-major, as in torch."""
    shape, strides = getattr(array, "shape", ()), getattr(array, "strides", None)
    if strides is None or len(shape) not in (4, 5) or strides[1] == 0:
        return contiguous_format
    fmt = channels_last if len(shape) == 4 else channels_last_3d
    smallest = 0
    for d in reversed(_dims_outermost_first(len(shape), fmt)):  # innermost first: 1, (4,) 3, 2, 0
        if shape[d] == 0 or strides[d] < smallest or (d == 0 and smallest == strides[1]):
            return contiguous_format
        smallest = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return fmt


def keeping_channels_last(forward: Any) -> Any:
    """An op's forward whose (first) result is laid out channels_last when its input's strides suggest it, as
    torch's CPU kernels that allocate their output in `input.suggest_memory_format()` do (group norm, pooling,
    upsampling, padding): a channels_last activation stays channels_last through a U-Net's decoder."""

    def kept(xp: Any, x: Any, *rest: Any) -> Any:
        out = forward(xp, x, *rest)
        if not hasattr(x, "strides") or x.ndim != 4 or suggest_memory_format(x) is not channels_last:
            return out
        first = out[0] if isinstance(out, tuple) else out
        if hasattr(first, "strides") and first.ndim == 4 and not is_laid_out(first, channels_last):
            first = laid_out(first, channels_last)
            return (first, *out[1:]) if isinstance(out, tuple) else first
        return out

    kept.__name__, kept.__doc__ = forward.__name__, forward.__doc__
    return kept
