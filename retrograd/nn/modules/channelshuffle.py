"""ChannelShuffle: functional.channel_shuffle as a layer (ShuffleNet's channel interleaving)."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class ChannelShuffle(Module):
    """Splits the channels into `groups` and interleaves them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


__all__ = ["ChannelShuffle"]
