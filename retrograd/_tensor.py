"""Tensor: a NumPy array plus the autograd attributes torch users know.

The array lives in `_data`; `grad_fn` is the node that made the tensor (None for leaves);
`_vc` counts in-place changes so that backward can refuse stale saved values (its first item; weak
references to the views sharing it follow, ops/shape.py, Note [views and in-place writes]). Every
computation is delegated to the op table (`retrograd.ops`); methods are attached there.
"""

# Note [inference tensors]
# Tensors made inside inference_mode (by factories, and by ops other than views of normal tensors)
# are inference tensors: as in torch they have no version counter, so `_vc` holds the one
# NO_VERSION_COUNTER. What follows from that is torch's: `_version` raises; reading the counter to
# save the tensor for backward raises torch's "cannot be saved for backward" (every place that saves
# reads it); an in-place change bumps nothing inside inference mode and raises outside it, after the
# write, as torch's VariableVersion::bump does. Views of an inference tensor are inference tensors,
# not views; ops whose only tensor operands are inference tensors record nothing (torch dispatches
# them below autograd), a Python number among the operands counting as a normal tensor, as torch
# wraps it in one.

from __future__ import annotations

import copy
import itertools
import numbers
import operator
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _dtype as D
from . import _layout, _xp, autograd
from . import storage as _storage
from ._warn import warn_once_at_user
from .autograd import grad_mode
from .autograd.forward_ad import current_tangent, transforms
from .autograd.graph import (
    AccumulateGrad,
    HookDict,
    RemovableHandle,
    add_hook,
)

_ndarray = np.ndarray
_generic = np.generic
_new = object.__new__
_weak = weakref.ref
NO_BITS = (False, False)


def lazy_bits(tensor: Tensor) -> tuple[bool, bool]:
    """torch's (conjugate bit, negative bit) of `tensor` (ops/complex.py, Note [conjugate and negative bits])."""
    extra = tensor._extra
    return NO_BITS if extra is None else extra.get("bits", NO_BITS)


def set_lazy_bits(tensor: Tensor, bits: tuple[bool, bool]) -> Tensor:
    """Give `tensor` torch's conjugate and negative bits `bits`; returns it."""
    if bits != NO_BITS:
        tensor._extra_dict()["bits"] = bits
    elif tensor._extra is not None:
        tensor._extra.pop("bits", None)
    return tensor


INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)


class _NoVersionCounter:
    """The version counter of inference tensors: there is none, and reading one to save the tensor for
    backward is torch's error (Note [inference tensors])."""

    __slots__ = ()

    def __getitem__(self, index: int) -> int:
        raise RuntimeError(INFERENCE_SAVE_MESSAGE)

    def __repr__(self) -> str:
        return "NO_VERSION_COUNTER"


NO_VERSION_COUNTER = _NoVersionCounter()
_size = tuple.__new__  # a Size of an array's shape, which holds ints already: no checks on the hot path


class Size(tuple):
    """torch.Size: a tuple of ints that prints as `torch.Size([2, 3])`; slicing, concatenating with a tuple
    (on either side) and repeating it give a Size again, as in torch."""

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> Size:
        items = tuple(sizes)
        if all(type(s) is int for s in items):
            return tuple.__new__(cls, items)
        ints = []
        for i, s in enumerate(items):  # anything with __index__ (bools, NumPy ints, 0-d integer tensors)
            try:
                ints.append(operator.index(s))
            except TypeError:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')") from None
        return tuple.__new__(cls, ints)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def __reduce__(self) -> tuple:
        return Size, (tuple(self),)

    def __getitem__(self, index: Any) -> Any:
        item = tuple.__getitem__(self, index)
        return tuple.__new__(Size, item) if type(index) is slice else item

    def __add__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to torch.Size")
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __radd__(self, other: Any) -> Size:
        return tuple.__new__(Size, other + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, times: Any) -> Size:
        if not hasattr(times, "__index__"):  # Python's own error for repeating a sequence
            raise TypeError(f"can't multiply sequence by non-int of type '{type(times).__name__}'")
        return tuple.__new__(Size, tuple.__mul__(self, times))

    __rmul__ = __mul__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


# torch's device types, in the order its error text lists them
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
                "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


ACCELERATOR_MISSING = "Cannot access accelerator device when none is available."


class device:  # noqa: N801 - torch's name
    """Where a tensor lives: 'cpu' (NumPy's arrays) or 'cuda:N' (CuPy's, where a GPU is present; Note [choosing
    a namespace] in _xp.py). Any of torch's device types can be named (`torch.device('cuda:0')` is a value a
    script may build and compare); placing a tensor there needs the hardware (placement)."""

    __slots__ = ("type", "index")

    def __init__(self, type: str = "cpu", index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            type, index = type.type, type.index  # noqa: A001
        elif isinstance(type, int):  # an index alone names the current accelerator's device, and there is none
            raise RuntimeError(ACCELERATOR_MISSING)
        name, _, idx = str(type).partition(":")
        if name not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                               f"{name}")
        self.type = name
        self.index = int(idx) if idx else index

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:  # a device equals a device only: torch.device('cpu') != 'cpu'
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self) -> tuple:
        """Pickled as torch pickles a device, device(type[, index]), so either library loads the other's."""
        return device, (self.type,) if self.index is None else (self.type, self.index)


def placement(where: Any) -> tuple[str, int | None]:
    """The torch device (type, index) a tensor goes to for `device=where`; torch's AssertionError where this
    machine has no such device ("cuda" without CuPy and a GPU, as on a torch built without CUDA)."""
    where = where if isinstance(where, device) else device("cpu" if where is None else where)
    if where.type == "cpu":
        return "cpu", None
    found = _xp.backend(where.type)
    if found is None:
        if where.type == "cuda":
            raise AssertionError("Torch not compiled with CUDA enabled")  # torch's words on a CPU-only build
        raise RuntimeError(f"retrograd computes on the CPU, on CUDA through CuPy and on meta; device "
                           f"{str(where)!r} is not available")
    if not found.indexed:  # meta: 'meta:0' places a tensor on device(type='meta'), as torch does
        return where.type, None
    index = 0 if where.index is None else where.index
    if index >= len(found.devices):
        raise RuntimeError("CUDA error: invalid device ordinal")
    return where.type, index


def on_device(array: Any, where: Any) -> Any:
    """`array` placed on the torch device `where` (a copy when it lives elsewhere)."""
    if where is None and type(array) is _ndarray:
        return array
    return _xp.transfer(array, *placement(where))


CPU = device("cpu")

# Note [the default device]
# Factories (torch.empty, zeros, tensor, arange, ...) and so a module's parameters go, when no `device=` is given,
# to the default device: the innermost `with torch.device(...)` block's, else set_default_device's, else the CPU.
# The stack holds None for the CPU, so a factory's CPU default costs one test; the first entry is
# set_default_device's. A `_like` factory follows its input's device instead, as torch's do.
DEFAULT_DEVICE: list[device | None] = [None]


def _enter_device(self: device) -> device:
    """`with torch.device('meta'):` makes factories put their tensors there (Note [the default device])."""
    DEFAULT_DEVICE.append(None if self.type == "cpu" else self)
    return self


def _exit_device(self: device, *exc: object) -> None:
    DEFAULT_DEVICE.pop()


device.__enter__ = _enter_device
device.__exit__ = _exit_device


# Note [NumPy interop]
# As torch's Tensor, ours gives NumPy an `__array__` (which is `numpy()`: refused while the tensor
# requires grad), an `__array_wrap__` (NumPy's results come back as tensors, booleans as uint8)
# and a high `__array_priority__` (NumPy's operators defer to the tensor's), and no
# `__array_ufunc__`. So `np.exp(t)` is a tensor computed by NumPy, and `t + array`, which our
# operator declines (Note [operands]), is computed by NumPy with NumPy's promotion (float32 +
# float64 array is float64), only without grad: with grad it raises torch's RuntimeError.
# `array / t` is torch's reciprocal(t) * array, as torch defines it.


def track_views(counter: list, views: tuple) -> None:
    """Add weak references to `views` to their base's version counter, for in-place ops to find them (ops/shape.py,
    Note [views and in-place writes]); the generated entry points do the same inline for one view."""
    for view in views:
        counter.append(_weak(view))
    size = len(counter)
    if size >= 16 and (size - len(views)).bit_length() != size.bit_length():
        prune_views(counter)


def prune_views(counter: list) -> None:
    """Drop the references to dead views from a version counter (looked at each time its length reaches a power of
    two from 16 on), once at least half are dead: with more alive the list grows to the next power of two first,
    so that a base with 2^k - 1 live views and one view dying at a time is not scanned on every view made, and a
    counter costs O(1) a view however many live."""
    alive = [ref for ref in itertools.islice(counter, 1, None) if ref() is not None]
    if 2 * len(alive) <= len(counter) - 1:
        counter[1:] = alive


def live_views(base: Tensor) -> list[Tensor]:
    """The views of `base` still alive that were made in grad mode, or in no_grad of a base that requires grad."""
    counter = base._vc
    if type(counter) is not list or len(counter) == 1:
        return []
    return [view for ref in itertools.islice(counter, 1, None) if (view := ref()) is not None and view._base is base]


def has_views(tensor: Tensor) -> bool:
    """Whether views of `tensor`'s memory were tracked (some may have died since; a detached alias shares them)."""
    counter = tensor._vc
    return type(counter) is list and len(counter) > 1


class Tensor:
    """An n-dimensional array that can record the operations applied to it."""

    # __dict__: a script's own attributes, as on torch's tensors (Mamba marks `A_log._no_weight_decay = True`)
    __slots__ = ("_data", "_requires_grad", "grad_fn", "_output_nr", "_grad", "_vc", "_base", "_extra",
                 "__weakref__", "__dict__")
    __array_priority__ = 1000  # Note [NumPy interop]: NumPy's operators defer to ours, as to torch's

    # ---- construction ---------------------------------------------------------------------
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """`Tensor(data)` or `Tensor(2, 3)` (uninitialised float32), as torch's legacy constructor."""
        if len(args) == 1 and not isinstance(args[0], int):
            if isinstance(args[0], np.ndarray):  # torch's checks of an array it aliases (it copies after)
                checked_array(args[0], aliased=True)
            data = np.array(args[0], dtype=D.defaults.floating.np)
        else:
            data = np.zeros(tuple(args), dtype=D.defaults.floating.np)
        _init(self, data)

    # ---- array facts ----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return _size(Size, self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return _size(Size, self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    @property
    def dtype(self) -> D.dtype:
        data = self._data
        return D.FROM_NUMPY[data.dtype] if type(data) is _ndarray else D.of_array(data)

    @property
    def device(self) -> device:
        if type(self._data) is _ndarray:
            return CPU
        return device(*_xp.locate(self._data))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """Whether the tensor lives on the meta device (a shape and a dtype, no elements: retrograd/meta)."""
        return type(self._data) is not _ndarray and self.device.type == "meta"

    @property
    def layout(self) -> _layout.layout:
        return _layout.strided

    def element_size(self) -> int:
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def stride(self, dim: int | None = None) -> tuple | int:
        if self._data.size or any(self._data.strides):
            strides = tuple(s // self._data.itemsize for s in self._data.strides)
        else:  # NumPy makes an empty array with zero strides; torch lays it out row-major, a size 0 counted as 1
            strides, step = [], 1
            for n in reversed(self._data.shape):
                strides.insert(0, step)
                step *= max(n, 1)
            strides = tuple(strides)
        return strides if dim is None else strides[_wrap_dim(dim, self._data.ndim)]

    def data_ptr(self) -> int:
        if type(self._data) is not _ndarray and not _xp.has_data(self._data):
            return 0  # a meta tensor's, as torch's: no memory
        return self._data.__array_interface__["data"][0]

    def const_data_ptr(self) -> int:
        return self.data_ptr()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        """The DLPack capsule of the elements (np.from_dlpack(t) shares them), refused while the tensor requires
        grad, as torch's is."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple:
        return self._data.__dlpack_device__()

    def dim_order(self, *, ambiguity_check: bool = False) -> tuple[int, ...]:
        """The dims from the outermost in memory to the innermost (larger strides first); size-1 dims and equal
        strides keep their logical order, as torch's."""
        order, sizes, strides = list(range(self.ndim)), self._data.shape, self.stride()
        for i in range(1, len(order)):  # an insertion sort that swaps only dims it can tell apart
            j = i
            while j and sizes[order[j]] != 1 and sizes[order[j - 1]] != 1 and strides[order[j - 1]] < strides[order[j]]:
                order[j - 1], order[j] = order[j], order[j - 1]
                j -= 1
        return tuple(order)

    def is_set_to(self, tensor: Tensor) -> bool:
        """Whether both tensors show the same elements of one storage the same way (storage, offset, sizes, strides)."""
        return (self.untyped_storage() == tensor.untyped_storage() and self.storage_offset() == tensor.storage_offset()
                and self._data.shape == tensor._data.shape and self.stride() == tensor.stride())

    def is_distributed(self) -> bool:
        return False

    def to_dense(self, dtype: D.dtype | None = None, *, masked_grad: bool | None = None) -> Tensor:
        """A strided tensor is dense already: itself, or cast to dtype."""
        return self if dtype is None or dtype is self.dtype else self.to(dtype)

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def is_cpu(self) -> bool:
        return type(self._data) is _ndarray or self.device.type == "cpu"

    def get_device(self) -> int:
        """The accelerator's index; -1 for a CPU tensor."""
        index = self.device.index
        return -1 if index is None else index

    def storage_offset(self) -> int:
        """Where the first element lies in the storage, in elements (Note [storage of an array] in storage.py)."""
        return _storage.storage_offset_of(self._data)

    def untyped_storage(self) -> _storage.UntypedStorage:
        """The memory the elements live in, shared by the views of one base (torch.UntypedStorage)."""
        return _storage.untyped_storage_of(self._data)

    def storage(self) -> _storage.TypedStorage:
        """untyped_storage() as elements of this dtype (torch's deprecated TypedStorage, with its warning)."""
        return _storage.typed_storage_of(self._data, self.dtype)

    def is_shared(self) -> bool:
        """Whether the elements live in shared memory (after ``share_memory_()``, or a shared memory map)."""
        return _storage.is_shared_memory(self._data)

    def share_memory_(self) -> Tensor:
        """Move the elements into shared memory, which processes forked later write to in common (torch's CPU
        behaviour); views made before keep the memory they had, so a view is refused."""
        if self._base is not None:
            raise RuntimeError("retrograd moves a tensor's memory into shared memory only for a tensor that is "
                               "no view: call share_memory_() on its base")
        if not _storage.is_shared_memory(self._data):
            self._data = _storage.shared_copy(self._data)
        return self

    def is_nonzero(self) -> bool:
        """bool(self) for a one-element tensor, with torch's refusal of other sizes."""
        if self._data.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        return bool(self)

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002 - torch's name
        """Replace each element x by callable(x), a Python call per element (CPU tensors only, as torch)."""
        return self._map_elements("apply_", (), callable)

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element x by callable(x, y), y the element of `tensor` (broadcast to self) at its place."""
        return self._map_elements("map_", (tensor,), callable)

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element a by callable(a, b, c), b and c the elements of x and y (broadcast) at its place."""
        return self._map_elements("map2_", (x, y), callable)

    def _map_elements(self, name: str, others: tuple, fn: Callable[..., Any]) -> Tensor:
        """``apply_``, ``map_``, ``map2_``: fn on the Python numbers of self and others, in self's dtype."""
        if self._requires_grad or any(other._requires_grad for other in others):
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                               "instead.")
        if type(self._data) is not _ndarray:
            raise TypeError(f"{name} is only implemented on CPU tensors")
        columns = [t.expand(self.shape).reshape(-1).tolist() for t in (self, *others)]
        convert = (bool, int, float, complex)[self.dtype.category]
        values = [convert(fn(*items)) for items in zip(*columns)]
        self._data[...] = np.array(values, dtype=self._data.dtype).reshape(self._data.shape)
        return self  # torch counts no version for these

    def is_same_size(self, other: Tensor) -> bool:
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return self._data.shape == other._data.shape

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return D.widen(self._number_host()).reshape(()).item()

    def tolist(self) -> Any:
        return D.widen(self._host()).tolist()

    def _number_host(self) -> np.ndarray:
        """The one element's array on the host (item, bool): torch's RuntimeError for a tensor with no data."""
        data = self._data
        if type(data) is not _ndarray and not _xp.has_data(data):
            raise RuntimeError(f"Tensor.item() cannot be called on {self.device.type} tensors")
        return self._host()

    def _host(self) -> np.ndarray:
        """The elements as a NumPy array: the array itself on the CPU, a copy from another device."""
        data = self._data
        return data if type(data) is _ndarray else _xp.transfer(data, "cpu", None)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The array itself (shared memory), refused while the tensor requires grad and grad mode is on,
        as torch does."""
        if self._requires_grad and grad_mode._state.enabled and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        dtype = self._data.dtype
        if isinstance(dtype, np.dtype) and dtype.kind == "V":  # bfloat16, complex32: NumPy has neither
            raise TypeError(f"Got unsupported ScalarType {D.scalar_type_name(self.dtype)}")
        if type(self._data) is not _ndarray:
            where = self.device
            if where.type != "cpu":
                raise TypeError(f"can't convert {where} device type tensor to numpy. Use Tensor.cpu() to copy the "
                                "tensor to host memory first.")
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The tensor as NumPy sees it (np.asarray, a NumPy function's argument): `numpy()`, so refused
        while it requires grad, as torch's is (Note [NumPy interop])."""
        data = self.numpy()
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        return data.copy() if copy else data

    def __array_wrap__(self, array: np.ndarray) -> Tensor:
        """A NumPy function's result on tensors, as a tensor sharing its memory; booleans come back as
        uint8, as torch's do (Note [NumPy interop]). torch's takes the array alone, so NumPy 2 warns its
        DeprecationWarning that __array_wrap__ must accept context and return_scalar: so does ours."""
        return _wrap(array.astype(np.uint8) if array.dtype == np.bool_ else array)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element: Any) -> bool:
        """`element in tensor`: whether any element equals a tensor or a number (not iteration, which would compare
        whole rows), as torch's."""
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._number_host())

    def __float__(self) -> float:
        _warn_scalar_of_grad(self)
        return float(self._python_scalar())

    def __int__(self) -> int:
        return int(self._python_scalar())

    def __complex__(self) -> complex:
        _warn_scalar_of_grad(self)
        return complex(self._python_scalar())

    def _python_scalar(self) -> Any:
        """The one element, for float(), int() and complex(): torch raises a ValueError for any other count there
        (item's is a RuntimeError)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> int:
        if self.dtype.category >= 2 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        if transforms.stack:  # inside torch.func transforms: printed with their wrappers
            from .autograd.batched import wrapped_repr

            return wrapped_repr(self)
        return self._repr()

    def _repr(self, autograd_suffix: list[str] | None = None, show: Callable[[Tensor], str] = repr) -> str:
        """torch's text for this tensor; `autograd_suffix` replaces its own requires_grad / grad_fn item, `show`
        prints its tangent."""
        from ._printing import format_tensor  # loaded on the first repr

        dt = self.dtype
        if self._data.size == 0:
            shown = dt is not D.defaults.floating  # torch names every other dtype of an empty tensor
        else:
            shown = dt not in (D.defaults.floating, D.int64, D.bool_, D.default_complex())
        extras = []
        try:
            fn = self.grad_fn
        except RuntimeError:  # a view whose history torch refuses to regenerate: its repr says so
            extras.append("grad_fn=<Invalid>")
        else:
            if autograd_suffix is not None:
                extras.extend(autograd_suffix)
            elif fn is not None:
                extras.append(f"grad_fn=<{type(fn).__name__}>")  # torch prints the class name
            elif self._requires_grad:
                extras.append("requires_grad=True")
        if self._extra is not None and self._extra.get("fw_grad"):
            tangent = current_tangent(self)
            if tangent is not None:
                extras.append(f"tangent={show(tangent)}")
        data, where = self._data, None
        if type(data) is not _ndarray:  # another namespace's array: printed from a host copy
            place = _xp.locate(data)
            if not _xp.has_data(data):  # a meta tensor: its shape, and its dtype unless the default float
                from ._printing import format_without_data

                return format_without_data(data.shape, dtype_name=None if dt is D.defaults.floating else dt.name,
                                           extras=extras, device=str(device(*place)))
            data = _xp.transfer(data, "cpu", None)
            where = None if place[0] == "cpu" else str(device(*place))
        # complex32 printed as the complex64 it widens to exactly (Note [complex32])
        return format_tensor(D.widen(data), dtype_name=dt.name if shown else None, extras=extras, device=where)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """A plain 0-d tensor formats as its number; any other tensor (a Parameter, a meta tensor, more
        dims) as an object, which refuses a non-empty spec with TypeError, as torch's does."""
        if self._data.ndim == 0 and type(self) is Tensor and not self.is_meta:
            return format(self.detach().item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild, (self._data, self._requires_grad), self.__dict__ or None)

    def __deepcopy__(self, memo: dict) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        out = type(self).__new__(type(self))
        _init(out, self._deepcopied_data())
        out._requires_grad = self._requires_grad
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        if self.__dict__:  # the attributes a script set on it
            out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return out

    def _deepcopied_data(self) -> Any:
        """The array of a deep copy: NumPy's over a copy of the whole storage with the same strides and offset, as
        torch's deepcopy copies the storage; CuPy's arrays copy themselves, another namespace's (meta's) through
        asarray."""
        data = self._data
        if type(data) is np.ndarray:
            return _storage.copied_with_storage(data)
        return data.copy() if hasattr(data, "copy") else _xp.namespace(data).asarray(data, copy=True)

    # ---- autograd attributes --------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if self.grad_fn is not None:
            if not flag:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return
        if flag and self.dtype.category < 2:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if flag:
            self._check_inference_requires_grad()
        self._set_leaf_requires_grad(bool(flag))

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool")  # torch's words: deleting is setting it to nothing

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if requires_grad and self.dtype.category < 2:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")  # torch's wording here
        if requires_grad:
            self._check_inference_requires_grad()
        if self.grad_fn is None:
            self._set_leaf_requires_grad(bool(requires_grad))
        return self

    def _check_inference_requires_grad(self) -> None:
        if self._vc is NO_VERSION_COUNTER and not grad_mode._state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")

    def _set_leaf_requires_grad(self, flag: bool) -> None:
        """Set a leaf's flag. Its views that have no history follow it, as torch's views read their
        base's flag: they then require grad without an accumulator (gradients stop there), like views
        made in no_grad, and in-place ops on them are refused as on views of a leaf."""
        self._requires_grad = flag or self._made_in_no_grad()
        for view in live_views(self):
            if view.grad_fn is None:
                view._requires_grad = flag
                if flag:
                    view._extra_dict()["no_grad_view"] = True
                else:
                    view._extra_dict().pop("no_grad_view", None)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        if self.grad_fn is not None and not self.retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more information. (Triggered internally at "
                "/__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)",  # torch's C++ warning's suffix
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{D.CPP_TYPE_NAMES[value.dtype.name]}' to a tensor "
                    f"with grad_dtype '{D.SCALAR_TYPE_NAMES[self.dtype.name]}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    "specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of "
                    "a tensor and its gradient may break downstream systems that assume they match."
                )
            if type(value._data) is not type(self._data) and value.device.type != self.device.type:
                raise RuntimeError(f"attempting to assign a gradient with device type '{value.device.type}' to a "
                                   f"tensor with device type '{self.device.type}'. Please ensure that the gradient "
                                   "and the tensor are on the same device")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                                   f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                                   "tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def data(self) -> Tensor:
        """The same values without history and with a version counter of its own (unlike detach); an
        inference tensor's is one too."""
        out = _wrap(self._data)
        if self._vc is NO_VERSION_COUNTER:
            out._vc = NO_VERSION_COUNTER
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value.dtype.category < 2:
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data = value._data

    @data.deleter
    def data(self) -> None:
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    @property
    def _grad_fn(self) -> Any:
        """grad_fn under torch's private name; setting it to None detaches the tensor in place."""
        return self.grad_fn

    @_grad_fn.setter
    def _grad_fn(self, value: None) -> None:
        if value is not None:
            raise RuntimeError("_grad_fn can be only set to None")
        self.detach_()

    @_grad_fn.deleter
    def _grad_fn(self) -> None:
        raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")

    @property
    def _backward_hooks(self) -> dict | None:
        """The dict of hooks register_hook adds to, by handle id (None before the first). As torch's,
        it belongs to the tensor's current grad_fn: an in-place op that gives the tensor a new one
        starts afresh (the old hooks stay with the old node), and code may replace it or set None."""
        entry = None if self._extra is None else self._extra.get("hooks")
        return entry[1] if entry is not None and entry[0] is self.grad_fn else None

    @_backward_hooks.setter
    def _backward_hooks(self, hooks: dict | None) -> None:
        self._extra_dict()["hooks"] = (self.grad_fn, hooks)

    @_backward_hooks.deleter
    def _backward_hooks(self) -> None:
        raise RuntimeError("Deletion of _backwards_hooks not allowed!")

    @property
    def volatile(self) -> bool:
        """Removed from torch long ago: always False, with torch's warning."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value: bool) -> None:
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                      UserWarning, stacklevel=2)

    @property
    def retains_grad(self) -> bool:
        fn = self.grad_fn
        return fn is not None and fn._hookset is not None and self._output_nr in fn._hookset.retained

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor (or a view sharing its memory) has seen."""
        if self._vc is NO_VERSION_COUNTER:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_value()

    def is_inference(self) -> bool:
        """Made in inference mode (Note [inference tensors])."""
        return self._vc is NO_VERSION_COUNTER

    def _is_view(self) -> bool:
        """A view of another tensor's memory that autograd tracks as such (`_base` is that tensor)."""
        return self._base is not None

    def _version_value(self) -> int:
        return 0 if self._vc is None else self._vc[0]

    def _counter(self) -> list:
        """The version counter, shared with views and detached aliases (made on first need)."""
        if self._vc is None:
            self._vc = [0]
        return self._vc

    def _bump_version(self) -> None:
        """Count an in-place change (after the write, as torch does: an inference tensor is changed
        before the refusal outside inference mode)."""
        counter = self._counter()
        if counter is NO_VERSION_COUNTER:
            if not grad_mode._state.inference:
                raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                                   "make a clone to get a normal tensor before doing inplace update.See "
                                   "https://github.com/pytorch/rfcs/pull/17 for more details.")
            return
        counter[0] += 1

    def _accumulator(self) -> AccumulateGrad | None:
        """The AccumulateGrad node of this leaf, kept while some graph uses it (weakly referenced); None
        for a view made in no_grad (torch gives it none: gradients stop there)."""
        extra = self._extra
        if extra is None:
            extra = self._extra = {}
        ref = extra.get("acc")
        acc = ref() if ref is not None else None
        if acc is None:
            if "no_grad_view" in extra:  # _made_in_no_grad, inline: every recorded op on a leaf comes here
                return None
            acc = AccumulateGrad(self)
            extra["acc"] = weakref.ref(acc)
        return acc

    def _made_in_no_grad(self) -> bool:
        """A view made in no_grad of a tensor that requires grad: it requires grad whatever its own flag says."""
        return self._extra is not None and "no_grad_view" in self._extra

    def _extra_dict(self) -> dict:
        if self._extra is None:
            self._extra = {}
        return self._extra

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (its `_base`)."""
        return self._base is not None

    def is_conj(self) -> bool:
        """torch's conjugate bit (ops/complex.py, Note [conjugate and negative bits])."""
        return lazy_bits(self)[0]

    def is_neg(self) -> bool:
        """torch's negative bit (ops/complex.py, Note [conjugate and negative bits])."""
        return lazy_bits(self)[1]

    def detach(self) -> Tensor:
        """The same memory, version counter and conjugate/negative bits, cut from the graph (requires_grad=False)."""
        out = _wrap(self._data)
        out._vc = self._counter()
        return set_lazy_bits(out, lazy_bits(self)) if self._extra is not None else out

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these "
                               "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                               "torch/optim/optimizer.py as the solution.")
        self.grad_fn = None
        self._requires_grad = False
        if self._extra is not None:  # detached from forward AD too: its tangents go, as torch's do
            self._extra.pop("fw_grad", None)
        return self

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf in `.grad` after backward (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None:
            return
        fn.hooks().retained[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """hook(grad) runs when the gradient of this tensor is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self._backward_hooks
        if hooks is None:
            hooks = self._backward_hooks = HookDict()
            if self.grad_fn is not None:  # the node calls this dict's hooks for this output from now on
                self.grad_fn.hooks().tensor.setdefault(self._output_nr, []).append(hooks)
        return add_hook(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """hook(tensor) runs after a gradient was accumulated into this leaf's `.grad`."""
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        return self._extra_dict().setdefault("post_acc", HookDict()).add(hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's `.grad` (a vector-Jacobian product with `gradient`)."""
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

# layouts, devices and kinds of tensor retrograd has none of: torch's flags for them read False
for _flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_xpu", "is_mps",
              "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia"):
    setattr(Tensor, _flag, property(lambda self: False, doc=f"False: retrograd has no such tensors ({_flag})."))


def _warn_scalar_of_grad(tensor: Tensor) -> None:
    """torch's warning (once per process) for float()/complex() of a tensor that requires grad, while grad mode
    is on (LBFGS reads its closure's loss so under no_grad, silently)."""
    if tensor._requires_grad and grad_mode._state.enabled:
        warn_once_at_user("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                          "behavior.\nConsider using tensor.detach() first. (Triggered internally at "
                          "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)")


# Note [stale views]
# A view whose history torch refuses to regenerate after its base changed in place raises when its grad_fn is
# read (ops.shape, Note [view creation meta]). Its grad_fn slot is emptied and the object moves to a subclass of
# its class that has a __getattr__, reached for the empty slot only. Tensor itself has none: a class with a
# __getattr__ gets no specialised attribute reads from the interpreter, and every `x._data` on it costs about
# five times as much (5% of a Hessian-vector product).

_STALE_CLASSES: dict[type, type] = {}


def make_stale(view: Tensor) -> None:
    """Empty `view`'s grad_fn slot, the recorded value kept as `_extra["stale"]`: reading it raises torch's
    refusal from now on (Note [stale views])."""
    view._extra["stale"] = view.grad_fn
    del view.grad_fn
    cls = type(view)
    stale = _STALE_CLASSES.get(cls)
    if stale is None:
        stale = _STALE_CLASSES[cls] = type(cls.__name__, (cls,), {
            "__slots__": (), "__getattr__": _stale_getattr, "__module__": cls.__module__,
            "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
    view.__class__ = stale


def _stale_getattr(self: Tensor, name: str) -> Any:
    """Reached for an attribute a stale view lacks: its grad_fn raises the refusal (Note [stale views])."""
    if name == "grad_fn" and self._extra is not None and "stale" in self._extra:
        raise RuntimeError(self._view_rebase_message(indirect=True))  # bound by the op table (ops/__init__)
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


_HEAP_TYPE = 1 << 9  # CPython's Py_TPFLAGS_HEAPTYPE: a class made at run time (by a class statement)


def argument_type_name(value: object) -> str:
    """How torch's argument parser names an argument's type in its TypeErrors, CPython's tp_name: Tensor, a builtin
    or a class defined in Python bare (list, float, Fraction), an extension's with its module (numpy.ndarray)."""
    if isinstance(value, Tensor):
        return "Tensor"
    kind = type(value)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


def checked_array(array: np.ndarray, aliased: bool) -> None:
    """Refuse a NumPy array as a tensor's data where torch does: a dtype torch lacks, a negative stride (np.flip's
    views); a read-only array (np.broadcast_to's, an image's np.asarray) is warned about, once per process, where
    the tensor aliases it (`aliased`: from_numpy, as_tensor, the legacy constructors; not tensor(), which copies)."""
    D.from_numpy_dtype(array.dtype)
    if aliased and not array.flags.writeable:
        warn_once_at_user("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                          "This means writing to this tensor will result in undefined behavior. You may want to copy "
                          "the array to protect its data or make it writable before converting it to a tensor. This "
                          "type of warning will be suppressed for the rest of this program. (Triggered internally at "
                          "/__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:213.)")
    if any(stride < 0 for stride in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative strides "
                         "are not currently supported. (You can probably work around this by making a copy of your "
                         "array  with array.copy().) ")


def _init(t: Tensor, data: np.ndarray) -> None:
    t._data = data
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._base = None
    t._extra = None


def _array_of(data: Any) -> Any:
    """What a tensor holds for a forward's result that is not an ndarray: NumPy scalars become 0-d
    arrays, another namespace's arrays (CuPy) stay as they are."""
    return np.asarray(data) if isinstance(data, _generic) or not _xp.is_array(data) else data


def _wrap(data: Any) -> Tensor:
    """A new tensor around an array (NumPy scalars become 0-d arrays), with no history. The generated
    entry points write these fields inline (Op._run_source)."""
    if type(data) is not _ndarray:
        data = _array_of(data)
    t = _new(Tensor)
    t._data = data
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._base = None
    t._extra = None
    return t


def _wrap_many(arrays: tuple) -> tuple:
    return tuple(_wrap(a) for a in arrays)


def _rebuild(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = _wrap(data)
    t._requires_grad = requires_grad
    return t


def _takes_as_int(value: Any) -> bool:
    """Whether torch's argument parser takes `value` as an int: anything with __index__ (NumPy's integers, a
    one-element integer tensor) but a bool; not a float, which Python's int() would truncate."""
    return not isinstance(value, (bool, np.bool_)) and hasattr(type(value), "__index__")


def as_int(value: Any, argument: str) -> int:
    """`value` as torch's argument parser takes an int (_takes_as_int), else a TypeError naming the argument."""
    if type(value) is int:
        return value
    if not _takes_as_int(value):
        raise TypeError(f"argument '{argument}' must be int, not {type(value).__name__}")
    return operator.index(value)


def as_sizes(args: tuple, function: str, argument: str = "size") -> tuple[int, ...]:
    """A shape given as varargs `f(2, 3)` or as one tuple or list `f((2, 3))`, `f(torch.Size(...))`, its elements ints
    as torch's argument parser takes them: a float or a bool is refused with torch's TypeError, not truncated, and
    so is any other container (an array, a range, a tensor of sizes)."""
    if len(args) == 1 and type(args[0]) is not int:
        if isinstance(args[0], (tuple, list)):
            args = tuple(args[0])
        else:
            try:  # one size: a NumPy integer, a one-element integer tensor (not a bool, which has __index__ too)
                if _takes_as_int(args[0]):
                    return (operator.index(args[0]),)
            except TypeError:
                pass
            raise TypeError(f"{function}(): argument '{argument}' (position 1) must be tuple of ints, not "
                            f"{argument_type_name(args[0])}")
    return _ints_of(args, function, argument, 1)


def int_list(value: Any, function: str, argument: str, position: int | None = None) -> tuple[int, ...]:
    """An int-list parameter given as one value, a keyword or a function form's positional (`torch.flip(x, (1,))`):
    a tuple, list or torch.Size of ints. A bare number is refused as torch's parser refuses it: only a method
    whose one parameter is the list gathers varargs (`x.flip(1)`, as_sizes)."""
    if not isinstance(value, (tuple, list)):
        where = f"'{argument}'" if position is None else f"'{argument}' (position {position})"
        raise TypeError(f"{function}(): argument {where} must be tuple of ints, not {argument_type_name(value)}")
    return _ints_of(tuple(value), function, argument, position)


def _ints_of(values: tuple, function: str, argument: str, position: int | None) -> tuple[int, ...]:
    """The elements of an int list as ints. torch's parser types the list by its first element, so a float or
    bool there refuses the argument, and one further on fails as the list is unpacked (which takes a bool as an
    int), with another message."""
    if all(type(s) is int for s in values):
        return values
    for i, s in enumerate(values):
        if _takes_as_int(s) or (i and type(s) is bool):
            continue
        if i == 0:
            where = f"'{argument}'" if position is None else f"'{argument}' (position {position})"
            raise TypeError(f"{function}(): argument {where} must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos 0")
        raise TypeError(f"{function}(): argument '{argument}' failed to unpack the object at pos {i + 1} with error "
                        f"\"type must be tuple of ints,but got {type(s).__name__}\"")
    return tuple(map(operator.index, values))


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) as a non-negative index, with torch's IndexError otherwise."""
    if type(dim) is not int:
        dim = as_int(dim, "dim")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
