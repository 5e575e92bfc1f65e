"""torch.special: the special functions of the op table (retrograd/ops/special.py holds the ones no
other family has; the rest are the same functions as torch's top-level names, SPECIAL_ALIASES)."""

from . import ops as _ops
from .ops import special as _family

for _name in _family.SPECIAL:
    _alias = _family.SPECIAL_ALIASES.get(_name)
    globals()[_name] = getattr(_ops, _alias) if _alias else getattr(_family, "special_" + _name)

__all__ = list(_family.SPECIAL)
