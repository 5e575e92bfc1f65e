"""torch.utils.data._utils: the DataLoader's helpers under torch's private path; `collate` is the one code imports."""

from . import collate

__all__ = ["collate"]
