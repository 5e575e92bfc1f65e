"""The `meta` device: tensors that hold a shape and a dtype and no elements, for shape inference, deferred
initialisation (`with torch.device('meta'): model = Net()`, then `model.to_empty(device='cpu')`) and stateless
calls on a module whose own tensors are never read (torch.func's model ensembling).

Its arrays (`MetaArray`) and their array-API namespace (`retrograd.meta.namespace`) live here, outside the core:
the package face puts `BACKEND` behind the device type 'meta' through the array seam (`_xp.provide`), loading this
package on the device's first use; nothing of the core imports it. Note [meta arrays] in namespace.py says how
results find their shapes.
"""

from __future__ import annotations

from .namespace import MetaArray, MetaBackend

__all__ = ["BACKEND", "MetaArray", "MetaBackend"]

BACKEND = MetaBackend()
