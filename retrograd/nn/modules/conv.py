"""Convolution layers: Conv1d/2d/3d and their transposes, sharing one base class as in torch, and their Lazy forms
(in_channels read from the first input)."""

from __future__ import annotations

import math
from typing import Any

from ... import _creation as C
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .linear import _uniform_bias
from .module import Module
from .utils import _ntuple


class _ConvNd(Module):
    """Shared set-up of every convolution: shapes, checks, padding modes, initialisation and repr."""

    n_dims: int
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 output_padding: Any = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        parse = _ntuple(self.n_dims)
        kernel_size, stride, dilation = parse(kernel_size), parse(stride), parse(dilation)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = parse(padding)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed = self.transposed
        self.output_padding = parse(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._pad_amounts()
        shape = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(C.empty(*shape, *kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(C.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_amounts(self) -> list[int]:
        """The padding for F.pad (last dimension first, before and after) when padding_mode is not 'zeros'."""
        if isinstance(self.padding, str):
            amounts = [0, 0] * self.n_dims
            if self.padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size, range(self.n_dims - 1, -1, -1)):
                    total = d * (k - 1)
                    amounts[2 * i], amounts[2 * i + 1] = total // 2, total - total // 2
            return amounts
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            _uniform_bias(self.bias, fan_in)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """Conv1d / 2d / 3d: `functional.conv{n}d`, with F.pad first for non-zero padding modes."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = getattr(F, f"conv{self.n_dims}d")
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(input, weight, bias, self.stride, (0,) * self.n_dims, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) inputs."""

    n_dims = 1


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) inputs.

    >>> Conv2d(1, 8, 3, padding=1)(retrograd.randn(2, 1, 8, 8)).shape
    torch.Size([2, 8, 8, 8])
    """

    n_dims = 2


class _ConvTransposeNd(_ConvNd):
    """ConvTranspose1d / 2d / 3d: `functional.conv_transpose{n}d` (zero padding only, as torch)."""

    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size: list[int] | None) -> tuple:
        """The output_padding that makes the result `output_size` (torch's rule and message)."""
        if output_size is None:
            return self.output_padding
        n = self.n_dims
        leading = 2 if input.dim() == n + 2 else 1
        if len(output_size) == leading + n:  # (the sizes keep their type: torch's message prints them as given)
            output_size = output_size[leading:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{leading + n} elements (got {len(output_size)})")
        min_sizes = [(input.size(d + leading) - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:  # (the input's sizes from dim 2, even unbatched, as torch prints them)
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return tuple(s - m for s, m in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        conv = getattr(F, f"conv_transpose{self.n_dims}d")
        output_padding = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) inputs."""

    n_dims = 3


class ConvTranspose1d(_ConvTransposeNd):
    """The gradient of Conv1d with respect to its input, as a layer (upsampling)."""

    n_dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, as a layer (upsampling)."""

    n_dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """The gradient of Conv3d with respect to its input, as a layer (upsampling volumes)."""

    n_dims = 3


class _LazyConvMixin(LazyModuleMixin):
    """in_channels = 0 and placeholder weight and bias until the first input gives the channels."""

    def _make_lazy(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        """Called after the base constructor ran with in = out = 0 channels and no bias."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        n = self.n_dims
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        self.in_channels = input.shape[1] if input.dim() == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
        else:
            self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConv(_LazyConvMixin, _Conv):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin, _ConvTransposeNd):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv):
    """Conv1d whose in_channels is read from the first input; it becomes a Conv1d then."""

    n_dims = 1
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv):
    """Conv2d whose in_channels is read from the first input; it becomes a Conv2d then."""

    n_dims = 2
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv):
    """Conv3d whose in_channels is read from the first input; it becomes a Conv3d then."""

    n_dims = 3
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose):
    """ConvTranspose1d whose in_channels is read from the first input; it becomes a ConvTranspose1d then."""

    n_dims = 1
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose):
    """ConvTranspose2d whose in_channels is read from the first input; it becomes a ConvTranspose2d then."""

    n_dims = 2
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose):
    """ConvTranspose3d whose in_channels is read from the first input; it becomes a ConvTranspose3d then."""

    n_dims = 3
    cls_to_become = ConvTranspose3d


__all__ = [
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d",
    "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
]
