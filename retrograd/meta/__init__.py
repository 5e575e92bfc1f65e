"""The `meta` device: tensors that hold a shape and a dtype and no elements, for shape inference, deferred
initialisation (`with torch.device('meta'): model = Net()`, then `model.to_empty(device='cpu')`) and stateless
calls on a module whose own tensors are never read (torch.func's model ensembling).

Its arrays (`MetaArray`) and their array-API namespace (`retrograd.meta.namespace`) live here, outside the core:
this package plugs them in behind the device type 'meta' through the array seam (`_xp.register`), and nothing of
the core imports it. Note [meta arrays] in namespace.py says how results find their shapes.
"""

from __future__ import annotations

from .. import _xp
from .namespace import MetaArray, MetaBackend

__all__ = ["MetaArray", "MetaBackend"]

_xp.register(MetaBackend())
