"""torch.nn.functional: the network functions, built on retrograd's op table."""

from __future__ import annotations

from .._tensor import Tensor
from ..ops.nn import binary_cross_entropy_with_logits, cross_entropy, log_softmax, mse_loss, nll_loss, softmax
from ..ops.pointwise import relu, sigmoid, tanh


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable: -softplus(-x)."""
    from ..ops.pointwise import log

    return log(sigmoid(input))


__all__ = ["binary_cross_entropy_with_logits", "cross_entropy", "log_softmax", "logsigmoid", "mse_loss",
           "nll_loss", "relu", "sigmoid", "softmax", "tanh"]
