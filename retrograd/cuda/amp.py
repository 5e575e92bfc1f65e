"""torch.cuda.amp: the deprecated spellings of torch.amp's GradScaler and autocast for the device "cuda"."""

from __future__ import annotations

import warnings
from typing import Any

from .. import amp as _amp


class GradScaler(_amp.GradScaler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", *args, **kwargs)


class autocast(_amp.autocast):  # noqa: N801 - torch's name
    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
