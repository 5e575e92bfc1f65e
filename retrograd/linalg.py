"""torch.linalg: the linear-algebra functions of the op table (each family lists its own in LINALG)."""

from .ops import LINALG as _NAMES
from .ops import _modules

for _module in _modules:
    for _name in getattr(_module, "LINALG", ()):
        globals()[_name] = getattr(_module, _name)

__all__ = list(_NAMES)
