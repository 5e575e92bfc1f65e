"""torch.utils.data._utils.collate: default_collate and default_convert live in dataloader.py; this is torch's
import path for them."""

from ..dataloader import default_collate, default_convert

__all__ = ["default_collate", "default_convert"]
