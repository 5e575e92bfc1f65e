"""torch.cpu.amp: the deprecated spellings of torch.amp's GradScaler and autocast for the device "cpu"."""

from __future__ import annotations

import warnings
from typing import Any

from .. import _dtype as D
from .. import amp as _amp


class GradScaler(_amp.GradScaler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", *args, **kwargs)


class autocast(_amp.autocast):  # noqa: N801 - torch's name
    def __init__(self, enabled: bool = True, dtype: Any = D.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
