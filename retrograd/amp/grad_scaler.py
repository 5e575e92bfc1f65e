"""torch.amp.grad_scaler: GradScaler lives in retrograd/amp/__init__.py; this is torch's import path for it."""

from . import GradScaler

__all__ = ["GradScaler"]
