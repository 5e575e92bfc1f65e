"""Dropout layers: zero elements (or whole channels) with probability p while training."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    """Calls `functional.<function>(input, p, training, inplace)`."""

    function: str

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self.function)(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p and scales the rest by 1/(1-p) (training only)."""

    function = "dropout"


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) inputs."""

    function = "dropout1d"


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) inputs."""

    function = "dropout2d"


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) inputs."""

    function = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of SELU activations."""

    function = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (the SELU-preserving form of Dropout2d/3d)."""

    function = "feature_alpha_dropout"


__all__ = [
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
]
