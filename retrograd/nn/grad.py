"""torch.nn.grad: the gradients of conv1d/2d/3d with respect to their input and weight, given the output's gradient,
without running the convolution: the `convolution_backward` row (node ConvolutionBackwardBackward0) with only
one of its outputs asked for, so they are differentiable in the weight (or input) and the gradient."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _creation as C
from .._tensor import Tensor
from ..ops.conv import Window, _ntuple, convolution_backward_op

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _window(d: int, kernel: Sequence[int], stride: object, padding: object, dilation: object) -> Window:
    return Window(tuple(kernel), _ntuple(stride, d, "stride"), tuple((p, p) for p in _ntuple(padding, d, "padding")),
                  _ntuple(dilation, d, "dilation"))


def _placeholder(shape: Sequence[int], like: Tensor) -> Tensor:
    """A tensor of `shape` whose values the row never reads (it needs only the shape), as torch's expanded one."""
    return C.zeros((), dtype=like.dtype).expand(*shape)


def _input_grad(d: int, input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: object,
                padding: object, dilation: object, groups: int) -> Tensor:
    win = _window(d, weight.shape[2:], stride, padding, dilation)
    return convolution_backward_op(grad_output, _placeholder(input_size, grad_output), weight, win, groups, False,
                                   None, (True, False, False))[0]


def _weight_grad(d: int, input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: object,
                 padding: object, dilation: object, groups: int) -> Tensor:
    win = _window(d, tuple(weight_size)[2:], stride, padding, dilation)
    return convolution_backward_op(grad_output, input, _placeholder(weight_size, grad_output), win, groups, False,
                                   None, (False, True, False))[1]


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: object = 1,
                 padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to an input of shape `input_size`."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: object = 1,
                 padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to an input of shape `input_size`."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor, stride: object = 1,
                 padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to an input of shape `input_size`."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: object = 1,
                  padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to a weight of shape `weight_size`."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: object = 1,
                  padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to a weight of shape `weight_size`."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Sequence[int], grad_output: Tensor, stride: object = 1,
                  padding: object = 0, dilation: object = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to a weight of shape `weight_size`."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
