"""torch.nn.functional: the network functions of the op table (each family lists its own in FUNCTIONAL)."""

from __future__ import annotations

from ..ops import FUNCTIONAL as _NAMES
from ..ops import _modules

for _module in _modules:
    for _name in getattr(_module, "FUNCTIONAL", ()):
        globals()[_name] = getattr(_module, _name)

__all__ = list(_NAMES)
