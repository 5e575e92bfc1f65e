"""torch.amp.autocast_mode: autocast lives in retrograd/amp/__init__.py; this is torch's import path for it."""

from . import autocast, custom_bwd, custom_fwd, is_autocast_available

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
