"""torch.optim.adamw: AdamW lives with Adam (retrograd/optim/adam.py); this is torch's import path for it."""

from .adam import AdamW

__all__ = ["AdamW"]
