"""torch.nn for retrograd: functional ops (modules arrive with the training issue)."""

from . import functional

__all__ = ["functional"]
