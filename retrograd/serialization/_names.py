"""The globals torch's files name, and the retrograd objects that stand for them.

A torch file refers to code only by name (`torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`,
`torch.float32`, `collections.OrderedDict`, ...). `DEFAULT_GLOBALS` is the table torch's
weights_only loader accepts without being asked; the rebuild functions below build retrograd
tensors from the storages the archive holds, checking every size and stride first.
"""

from __future__ import annotations

import codecs
from collections import Counter, OrderedDict
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor, _wrap, device, on_device
from ..nn.parameter import Parameter

# torch's legacy storage class for each dtype: the name a file gives a storage's element type
STORAGE_NAMES: dict[str, D.dtype] = {
    "DoubleStorage": D.float64, "FloatStorage": D.float32, "HalfStorage": D.float16, "LongStorage": D.int64,
    "IntStorage": D.int32, "ShortStorage": D.int16, "CharStorage": D.int8, "ByteStorage": D.uint8,
    "BoolStorage": D.bool_, "ComplexDoubleStorage": D.complex128, "ComplexFloatStorage": D.complex64,
    "BFloat16Storage": D.bfloat16,  # its NumPy type (ml_dtypes') is looked up when a storage is read
}
STORAGE_NAME_OF: dict[D.dtype, str] = {dt: name for name, dt in STORAGE_NAMES.items()}
STORAGE_NAMES["UntypedStorage"] = D.uint8  # raw bytes, which _rebuild_tensor_v3 reads as its dtype


class StorageType:
    """What `torch.FloatStorage` and its kin stand for in a file: the element type of a storage."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = STORAGE_NAMES[name]

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class LoadedStorage:
    """One `data/<key>` record as a flat, writable NumPy array; tensors built on it share its memory."""

    def __init__(self, array: np.ndarray, device: str | None = None) -> None:
        self.array = array
        self.device = device  # where its tensors go (None: the CPU)


def _check_ints(what: str, values: Any, minimum: int = 0) -> tuple:
    if not isinstance(values, tuple) or not all(type(v) is int and v >= minimum for v in values):
        raise RuntimeError(f"a tensor in the file has an invalid {what}: {values!r}")
    return values


def rebuild_tensor_v2(storage: LoadedStorage, storage_offset: int, size: tuple, stride: tuple,
                      requires_grad: bool, backward_hooks: Any, metadata: Any = None) -> Tensor:
    """torch._utils._rebuild_tensor_v2: a tensor viewing `storage` from `storage_offset` with `size` and `stride`.

    The view must lie inside the storage: a file cannot make retrograd read outside it.
    """
    if not isinstance(storage, LoadedStorage):
        raise RuntimeError(f"a tensor in the file is built on {type(storage).__name__}, not on a storage")
    (storage_offset,) = _check_ints("storage offset", (storage_offset,))
    size, stride = _check_ints("size", tuple(size)), _check_ints("stride", tuple(stride))
    if len(size) != len(stride):
        raise RuntimeError(f"a tensor in the file has size {size} but stride {stride}")
    flat = storage.array
    if 0 not in size:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= flat.size:
            raise RuntimeError(f"a tensor in the file (size {list(size)}, stride {list(stride)}, offset "
                               f"{storage_offset}) reaches element {last} of a storage of {flat.size} elements")
        # an ndarray over the storage's own array (as_strided's would hide it behind a DummyArray base): its storage
        # offset and the storage other tensors of the file share stay visible (storage_offset(), untyped_storage())
        view = np.ndarray(size, flat.dtype, buffer=flat, offset=storage_offset * flat.itemsize,
                          strides=[s * flat.itemsize for s in stride])
    else:
        view = np.empty(size, flat.dtype)
    t = _wrap(view if storage.device is None else on_device(view, storage.device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def rebuild_tensor_v3(storage: LoadedStorage, storage_offset: int, size: tuple, stride: tuple,
                      requires_grad: bool, backward_hooks: Any, dtype: D.dtype, metadata: Any = None) -> Tensor:
    """torch._utils._rebuild_tensor_v3: as v2, on an untyped storage whose bytes are read as `dtype`."""
    if not isinstance(storage, LoadedStorage) or not isinstance(dtype, D.dtype):
        raise RuntimeError(f"a tensor in the file has storage {type(storage).__name__} and dtype {dtype!r}")
    raw = storage.array.view(np.uint8)
    if raw.size % dtype.itemsize:
        raise RuntimeError(f"a storage of {raw.size} bytes cannot hold elements of {dtype}")
    return rebuild_tensor_v2(LoadedStorage(raw.view(dtype.np), storage.device), storage_offset, size, stride,
                             requires_grad, backward_hooks, metadata)


def rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Parameter:
    """torch._utils._rebuild_parameter."""
    if not isinstance(data, Tensor):
        raise RuntimeError(f"a Parameter in the file wraps {type(data).__name__}, not a tensor")
    return Parameter(data, bool(requires_grad))


def _with_state(tensor: Tensor, state: Any) -> Tensor:
    """torch._utils._set_obj_state: the attributes a script had set on the saved tensor, set again (a state of
    (dict, slots) is torch's for objects with __slots__ of their own)."""
    for attributes in (state if isinstance(state, tuple) else (state,)):
        for name, value in (attributes or {}).items():
            setattr(tensor, name, value)
    return tensor


def rebuild_parameter_with_state(data: Tensor, requires_grad: bool, backward_hooks: Any, state: Any) -> Parameter:
    """torch._utils._rebuild_parameter_with_state: a Parameter with the Python attributes set on the saved one."""
    return _with_state(rebuild_parameter(data, requires_grad, backward_hooks), state)


def rebuild_from_type_v2(func: Any, new_type: Any, args: tuple, state: Any) -> Any:
    """torch._tensor._rebuild_from_type_v2, for plain tensors and parameters (retrograd has no tensor subclasses),
    with the Python attributes set on the saved one."""
    result = func(*args)
    if new_type not in (Tensor, Parameter):
        raise RuntimeError(f"retrograd cannot load tensor subclass {new_type!r}")
    return _with_state(result, state)


DEFAULT_GLOBALS: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
    "torch.nn.parameter.Parameter": Parameter, "torch.Size": Size, "torch.Tensor": Tensor, "torch.device": device,
    "_codecs.encode": codecs.encode, "builtins.bytearray": bytearray, "builtins.set": set,
    "builtins.complex": complex,
    "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2, "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
    **{f"torch.{dt.name}": dt for dt in (*D.ALL_DTYPES, D.bfloat16, D.complex32)},  # a dtype as a value
    **{f"torch.{name}": StorageType(name) for name in STORAGE_NAMES if name != "UntypedStorage"},
    "torch.storage.UntypedStorage": StorageType("UntypedStorage"),
}

# What the pickler writes for retrograd's own objects: torch's name for them (Note [torch's zip layout])
TORCH_NAMES: dict[int, tuple[str, str]] = {
    id(obj): tuple(name.rsplit(".", 1)) for name, obj in DEFAULT_GLOBALS.items() if name.startswith("torch.")
}


def torch_name(module: str, name: str) -> tuple[str, str]:
    """torch's module path for a retrograd global: retrograd mirrors torch's layout (retrograd.nn.modules.linear)."""
    if module == "retrograd" or module.startswith("retrograd."):
        module = "torch" + module[len("retrograd"):]
    return module, name
