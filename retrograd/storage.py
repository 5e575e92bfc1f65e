"""torch.storage: the memory a tensor's elements live in, as torch's UntypedStorage (bytes) and TypedStorage
(elements of one dtype) show it. Here that memory is the NumPy array at the root of the tensor's array's chain
of bases (Note [storage of an array]); the storage objects are read-only descriptions of it, enough for code
that tells tensors apart by their memory (tied weights found by `t.untyped_storage().data_ptr()`) or reads
it whole (`tolist()`)."""

# Note [storage of an array]
# torch's views share their base's storage and start at an element offset in it; NumPy's views keep their
# base in `.base`, and retrograd's strided windows (ops/shape.py) keep theirs as `.base.owner`. Following
# that chain to its root gives the memory a view shares with its base, detached aliases and the views of
# both: the storage's first byte is the lowest address of the root's elements, its size the span they
# cover, and a tensor's storage_offset is its first element's distance from there. Memory a NumPy array
# does not own (np.frombuffer's bytes, a memory map) counts from the first array laid over it, and an
# array given to from_numpy starts a storage of its own there (mark_root), as torch.from_numpy makes one:
# tensors made from two slices of one array do not share a storage.

from __future__ import annotations

import mmap
import weakref
from typing import Any

import numpy as np

from . import _dtype as D
from ._warn import warn_once

__all__ = ["TypedStorage", "UntypedStorage"]


_ROOTS: dict[int, weakref.ref] = {}  # id -> the arrays that start a storage of their own (from_numpy's)


def mark_root(data: np.ndarray) -> None:
    """Make `data` the start of a storage of its own, as torch.from_numpy makes one for the array it is given."""
    key = id(data)
    _ROOTS[key] = weakref.ref(data, lambda ref: _ROOTS.pop(key, None) if _ROOTS.get(key) is ref else None)


def root_array(data: np.ndarray) -> np.ndarray:
    """The array at the end of `data`'s chain of bases, or the first one marked a root (Note [storage of an
    array])."""
    while True:
        ref = _ROOTS.get(id(data))
        if ref is not None and ref() is data:
            return data
        base = data.base
        if isinstance(base, np.ndarray):
            data = base
        elif isinstance(getattr(base, "owner", None), np.ndarray):  # a strided window of ops/shape.py
            data = base.owner
        else:
            return data


def _span(data: np.ndarray) -> tuple[int, int]:
    """(lowest address, bytes covered) of an array's elements."""
    low = high = data.__array_interface__["data"][0]
    if data.size == 0:
        return low, 0
    for n, s in zip(data.shape, data.strides):
        low, high = low + min(0, (n - 1) * s), high + max(0, (n - 1) * s)
    return low, high - low + data.itemsize


class UntypedStorage:
    """The bytes of a tensor's memory: torch.UntypedStorage's queries (data_ptr, nbytes, size, tolist, ...)."""

    __slots__ = ("_root", "_ptr", "_nbytes")
    dtype = D.uint8
    is_cuda = False
    is_sparse = False

    def __init__(self, root: np.ndarray) -> None:
        self._root = root
        self._ptr, self._nbytes = _span(root)

    def _bytes(self) -> np.ndarray:
        """The storage's bytes as a uint8 array (a view: the storage's own memory)."""
        if self._nbytes == 0:
            return np.zeros(0, np.uint8)
        interface = {"data": (self._ptr, True), "shape": (self._nbytes,), "typestr": "|u1", "version": 3}
        return np.asarray(_Bytes(interface, self._root))

    @property
    def device(self) -> Any:
        from ._tensor import CPU

        return CPU

    def data_ptr(self) -> int:
        return self._ptr

    def nbytes(self) -> int:
        return self._nbytes

    def size(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def element_size(self) -> int:
        return 1

    def tolist(self) -> list[int]:
        return self._bytes().tolist()

    def __getitem__(self, index: int) -> int:
        if not -self._nbytes <= index < self._nbytes:
            raise IndexError(f"index {index} out of range for storage of size {self._nbytes}")
        return int(self._bytes()[index])

    def is_shared(self) -> bool:
        return is_shared_memory(self._root)

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def cpu(self) -> UntypedStorage:
        return self

    def __eq__(self, other: object) -> bool:  # the same memory: torch hands back one object per storage
        return isinstance(other, UntypedStorage) and (self._ptr, self._nbytes) == (other._ptr, other._nbytes)

    def __hash__(self) -> int:
        return hash((self._ptr, self._nbytes))

    def __repr__(self) -> str:
        return _listing(self.tolist(), f"torch.storage.UntypedStorage(device={self.device})", self._nbytes)


class _Bytes:
    """Exposes a storage's bytes to NumPy and keeps the root array alive while they are viewed."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.owner = owner


class TypedStorage:
    """A tensor's memory as elements of its dtype (torch.TypedStorage, which torch deprecates for UntypedStorage)."""

    __slots__ = ("_untyped_storage", "dtype")
    is_cuda = False
    is_sparse = False

    def __init__(self, untyped: UntypedStorage, dtype: D.dtype) -> None:
        self._untyped_storage = untyped
        self.dtype = dtype

    @property
    def device(self) -> Any:
        return self._untyped_storage.device

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def _elements(self) -> np.ndarray:
        return D.widen(self._untyped_storage._bytes().view(self.dtype.np))

    def tolist(self) -> list:
        return self._elements().tolist()

    def __getitem__(self, index: int) -> Any:
        if not -self.size() <= index < self.size():
            raise IndexError(f"index {index} out of range for storage of size {self.size()}")
        return self._elements()[index].item()

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypedStorage) and (self._untyped_storage, self.dtype) == (other._untyped_storage,
                                                                                           other.dtype)

    def __hash__(self) -> int:
        return hash((self._untyped_storage, self.dtype))

    def __repr__(self) -> str:
        return _listing(self.tolist(), f"torch.storage.TypedStorage(dtype={self.dtype}, device={self.device})",
                        self.size())


def _listing(items: list, title: str, size: int) -> str:
    """torch's storage repr: one element a line, then the storage's description."""
    return "".join(f" {item}\n" for item in items) + f"[{title} of size {size}]"


def untyped_storage_of(data: np.ndarray) -> UntypedStorage:
    """The storage an array's elements live in (Note [storage of an array])."""
    if type(data) is not np.ndarray:
        raise RuntimeError("retrograd describes the storage of CPU tensors only")
    return UntypedStorage(root_array(data))


def typed_storage_of(data: np.ndarray, dtype: D.dtype) -> TypedStorage:
    """Tensor.storage(): the untyped storage seen as `dtype` elements, with torch's deprecation warning (once)."""
    warn_once("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
              stacklevel=3)
    return TypedStorage(untyped_storage_of(data), dtype)


def storage_offset_of(data: np.ndarray) -> int:
    """How many elements of its dtype lie between the storage's start and the array's first element."""
    return (data.__array_interface__["data"][0] - _span(root_array(data))[0]) // data.itemsize


def storage_extent(data: np.ndarray) -> tuple[int, int]:
    """(storage offset, storage size) of an array, in its elements (torch's storage meta; (0, size) for arrays
    that are no NumPy array, whose storage is not described here)."""
    if type(data) is not np.ndarray:
        return 0, data.size
    low, size = _span(root_array(data))
    return (data.__array_interface__["data"][0] - low) // data.itemsize, size // data.itemsize


def copied_with_storage(data: np.ndarray) -> np.ndarray:
    """`data` laid over a copy of its whole storage, at the same offset with the same strides: torch's
    Tensor.__deepcopy__ copies the storage and sets the tensor's geometry on the copy (a channels_last or
    transposed tensor, a slice with its offset, keep theirs)."""
    root = root_array(data)
    storage = UntypedStorage(root)
    memory = np.empty(storage.nbytes() // root.itemsize, root.dtype)  # the root's dtype, as torch.save reads a root
    memory.view(np.uint8)[:] = storage._bytes()
    offset = data.__array_interface__["data"][0] - storage.data_ptr()
    return np.ndarray(data.shape, data.dtype, buffer=memory, offset=offset, strides=data.strides)


def is_shared_memory(data: np.ndarray) -> bool:
    """Whether an array's storage is memory mapped shared (share_memory_'s, or a shared file map)."""
    if not isinstance(data, np.ndarray):
        return False
    root = root_array(data)
    return isinstance(root.base, mmap.mmap) or isinstance(root, np.memmap) and root.mode in ("r+", "w+")


def shared_copy(data: np.ndarray) -> np.ndarray:
    """A copy of `data` in anonymous shared memory (MAP_SHARED: processes forked later see each other's writes)."""
    memory = mmap.mmap(-1, max(data.nbytes, 1))
    shared = np.ndarray(data.shape, data.dtype, buffer=memory)
    shared[...] = data
    return shared


def is_storage(obj: Any) -> bool:
    """torch.is_storage: whether obj is a storage (typed or untyped)."""
    return isinstance(obj, (TypedStorage, UntypedStorage))
