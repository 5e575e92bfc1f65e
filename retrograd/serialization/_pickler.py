"""The pickler behind `save`: retrograd objects pickled exactly as torch pickles their torch twins.

A tensor becomes `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict())` whose storage is a persistent id `("storage", torch.FloatStorage, key, "cpu",
numel)`; tensors viewing one NumPy buffer share one storage (Note [which storage a tensor views]).
Globals are written under torch's names, which is why this is the pure-Python pickler:
the C one insists that a global it writes can be imported under that name.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import _xp
from .._tensor import Size, Tensor
from ..autograd.graph import HookDict
from ..nn.parameter import Parameter
from ._names import STORAGE_NAME_OF, TORCH_NAMES, torch_name

PROTOCOL = 2  # torch's DEFAULT_PROTOCOL


class TorchGlobal:
    """A global written by name only, such as `torch._utils._rebuild_tensor_v2` (retrograd need not have it)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:
        """Never called: pickle only checks that a reduce function is callable before writing its name."""
        raise TypeError(f"{self.module}.{self.name} is a name to write into a file, not a function")


_REBUILD_TENSOR = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
# a dtype with no legacy storage class (uint16, uint32, uint64): its bytes in an UntypedStorage, the dtype named after
_REBUILD_TENSOR_V3 = TorchGlobal("torch._utils", "_rebuild_tensor_v3")
_UNTYPED_STORAGE = TorchGlobal("torch.storage", "UntypedStorage")
_REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
# a tensor or Parameter carrying attributes a script set on it: rebuilt, then given them (its __dict__, the state)
_REBUILD_PARAMETER_WITH_STATE = TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE = TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
_SIZE = TorchGlobal("torch", "Size")
_STORAGE_TYPES = {dt: TorchGlobal("torch", name) for dt, name in STORAGE_NAME_OF.items()}


class StorageRef:
    """A storage met while pickling: its key in the archive and its elements in memory order."""

    def __init__(self, key: str, owner: np.ndarray, location: str = "cpu") -> None:
        self.key, self.owner, self.flat, self.location = key, owner, owner.ravel(order="K"), location


# Note [which storage a tensor views]
# A retrograd tensor is a NumPy array, perhaps a view of another. Its storage is the last array of
# its dtype up its `.base` chain (a loaded tensor's chain ends in the file's bytes, of another
# dtype); when that array is one contiguous block, the tensor is saved as (offset, strides) into
# it, so views saved together load sharing memory, as in torch. Anything else (negative strides, a
# strided buffer) is saved as a contiguous copy of its own.
def _storage_view(array: np.ndarray) -> tuple[np.ndarray, int, tuple]:
    """(the array owning the storage, storage offset, strides), offset and strides in elements."""
    root = array
    while isinstance(root.base, np.ndarray) and root.base.dtype == array.dtype:  # (a loaded storage's own array, not
        root = root.base  # the file's bytes it was read from)
    itemsize = array.itemsize
    if root.dtype == array.dtype and (root.flags.c_contiguous or root.flags.f_contiguous) and root.size:
        offset_bytes = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        strides = array.strides
        if offset_bytes % itemsize == 0 and all(s >= 0 and s % itemsize == 0 for s in strides):
            return root, offset_bytes // itemsize, tuple(s // itemsize for s in strides)
    copy = array.copy(order="C")  # (np.ascontiguousarray would give a 0-d array a dim)
    return copy, 0, tuple(s // itemsize for s in copy.strides)


class TorchPickler(pickle._Pickler):
    """Pickles with torch's globals and a persistent id per storage; `storages` lists them in key order."""

    def __init__(self, file: Any, protocol: int = PROTOCOL) -> None:
        super().__init__(file, protocol=protocol)
        self.storages: list[StorageRef] = []
        self._storage_keys: dict[int, StorageRef] = {}

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is not StorageRef:
            return None
        typed = _STORAGE_TYPES.get(D.FROM_NUMPY[obj.flat.dtype])
        if typed is None:
            return ("storage", _UNTYPED_STORAGE, obj.key, obj.location, obj.flat.nbytes)
        return ("storage", typed, obj.key, obj.location, obj.flat.size)

    def _storage(self, owner: np.ndarray, location: str = "cpu") -> StorageRef:
        ref = self._storage_keys.get(id(owner))
        if ref is None:  # the StorageRef holds `owner`, so its id stays unique while pickling
            ref = self._storage_keys[id(owner)] = StorageRef(str(len(self.storages)), owner, location)
            self.storages.append(ref)
        return ref

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, TorchGlobal):
            return obj.name
        if isinstance(obj, Parameter):
            args = (Tensor.detach(obj), obj.requires_grad, OrderedDict())
            if obj.__dict__:
                return _REBUILD_PARAMETER_WITH_STATE, (*args, obj.__dict__)
            return _REBUILD_PARAMETER, args
        if isinstance(obj, Tensor) and obj.__dict__:
            rebuild, args = self._tensor_reduction(obj)
            return _REBUILD_FROM_TYPE, (rebuild, Tensor, args, obj.__dict__)
        if isinstance(obj, Tensor):
            return self._tensor_reduction(obj)
        if type(obj) is HookDict:  # a module's hook table: torch keeps its hooks in an OrderedDict
            return OrderedDict, (), None, None, iter(obj.items())
        if type(obj) is Size:
            return _SIZE, (tuple(obj),)
        if isinstance(obj, D.dtype):
            return obj.name
        return NotImplemented

    def _tensor_reduction(self, obj: Tensor) -> tuple:
        """torch's _rebuild_tensor_v2 (v3 for a dtype with no storage class) and its arguments for a plain tensor."""
        data, location = obj._data, "cpu"
        if type(data) is not np.ndarray:  # a device's array: its host copy in the file, its device named, as torch
            location, data = str(obj.device), _xp.transfer(data, "cpu", None)
        owner, offset, strides = _storage_view(data)
        args = (self._storage(owner, location), offset, tuple(obj.shape), strides, obj.requires_grad, OrderedDict())
        if obj.dtype not in _STORAGE_TYPES:
            return _REBUILD_TENSOR_V3, (*args, obj.dtype)
        return _REBUILD_TENSOR, args

    def save_global(self, obj: Any, name: str | None = None) -> None:
        """GLOBAL module name, under torch's name for retrograd's objects (no import check: torch may be absent)."""
        if isinstance(obj, TorchGlobal):
            module, name = obj.module, obj.name
        elif id(obj) in TORCH_NAMES:
            module, name = TORCH_NAMES[id(obj)]
        elif (getattr(obj, "__module__", None) or "").startswith("retrograd"):
            module, name = torch_name(obj.__module__, name or obj.__qualname__)
        else:
            super().save_global(obj, name)
            return
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)
