"""Pooling layers: max, average, power-average, adaptive and fractional max pooling in 1-D, 2-D and 3-D, and
max unpooling, each calling its functional."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    n_dims: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        pool = getattr(F, f"max_pool{self.n_dims}d")
        return pool(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                    return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """The maximum over sliding windows of (N, C, L) inputs."""

    n_dims = 1


class MaxPool2d(_MaxPoolNd):
    """The maximum over sliding windows of (N, C, H, W) inputs."""

    n_dims = 2


class MaxPool3d(_MaxPoolNd):
    """The maximum over sliding windows of (N, C, D, H, W) inputs."""

    n_dims = 3


class AvgPool1d(Module):
    """The mean over sliding windows of (N, C, L) inputs."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class AvgPool2d(Module):
    """The mean over sliding windows of (N, C, H, W) inputs."""

    n_dims = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        pool = getattr(F, f"avg_pool{self.n_dims}d")
        return pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                    self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """The mean over sliding windows of (N, C, D, H, W) inputs."""

    n_dims = 3


class _LPPoolNd(Module):
    """The p-norm over sliding windows: (sum of x^p) ^ (1/p), through average pooling as torch computes it."""

    n_dims: int

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, f"lp_pool{self.n_dims}d")(input, self.norm_type, self.kernel_size, self.stride,
                                                    self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """The p-norm over sliding windows of (N, C, L) inputs."""

    n_dims = 1


class LPPool2d(_LPPoolNd):
    """The p-norm over sliding windows of (N, C, H, W) inputs."""

    n_dims = 2


class LPPool3d(_LPPoolNd):
    """The p-norm over sliding windows of (N, C, D, H, W) inputs."""

    n_dims = 3



class _AdaptivePool(Module):
    """Pooling to a fixed output size whatever the input size; `function` names the functional."""

    function: str

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        if self.function.startswith("adaptive_max"):
            self.return_indices = return_indices

    def forward(self, input: Tensor) -> Tensor:
        if self.function.startswith("adaptive_max"):
            return getattr(F, self.function)(input, self.output_size, self.return_indices)
        return getattr(F, self.function)(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    function = "adaptive_avg_pool1d"

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    function = "adaptive_avg_pool2d"

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    function = "adaptive_avg_pool3d"

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    function = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptivePool):
    function = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptivePool):
    function = "adaptive_max_pool3d"


class _MaxUnpoolNd(Module):
    """Scatters pooled values back to the positions max pooling took them from."""

    n_dims: int

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _tuple(kernel_size, self.n_dims)
        self.stride = _tuple(stride if stride is not None else kernel_size, self.n_dims)
        self.padding = _tuple(padding, self.n_dims)

    def forward(self, input: Tensor, indices: Tensor, output_size: list[int] | None = None) -> Tensor:
        unpool = getattr(F, f"max_unpool{self.n_dims}d")
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    n_dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    n_dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    n_dims = 3


def _tuple(value: Any, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _FractionalMaxPoolNd(Module):
    """Max pooling over windows at random increasing corners; `_random_samples` (a buffer) fixes them."""

    n_dims: int

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n = self.n_dims
        if n == 3 and any(k <= 0 for k in _tuple(kernel_size, n)):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{n}d requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        pool = getattr(F, f"fractional_max_pool{self.n_dims}d")
        return pool(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                    _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    n_dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    n_dims = 3


__all__ = [
    "FractionalMaxPool2d", "FractionalMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
]
