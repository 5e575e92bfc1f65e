"""torch.linalg: the linear-algebra functions of the op table (each family lists its own in LINALG)."""

from .ops import LINALG as _NAMES
from .ops import _modules
from .ops.linalg import LinAlgError  # noqa: F401 - torch.linalg.LinAlgError, raised for singular matrices

for _module in _modules:
    for _name in getattr(_module, "LINALG", ()):
        # where torch.<name> and torch.linalg.<name> differ (svd, cross, ...) a family keeps the latter as linalg_<name>
        globals()[_name] = getattr(_module, "linalg_" + _name, None) or getattr(_module, _name)

__all__ = list(_NAMES)
