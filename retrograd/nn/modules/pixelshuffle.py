"""torch.nn.modules.pixelshuffle: PixelShuffle and PixelUnshuffle live with Upsample (upsampling.py)."""

from .upsampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
