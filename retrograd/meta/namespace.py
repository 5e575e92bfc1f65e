"""The array namespace of the meta device: `MetaArray` (a shape and a dtype) and the functions forward code calls
as `xp.<name>`, each answering an array of the result's shape and dtype without computing an element."""

# Note [meta arrays]
# A meta array holds a shape and a NumPy dtype. Elementwise functions (NumPy's ufuncs), `where`, `matmul`,
# `reshape`, `astype` and the creation functions find the result's shape by the shape rules (broadcasting, the
# matmul rule) and its dtype by running NumPy on 0-d zeros, so a meta tensor of any size costs nothing. Any other
# name runs NumPy's function of that name on zero-stride stand-ins (`np.broadcast_to(np.zeros((), dtype), shape)`,
# no memory of the input's size) under `np.errstate(all='ignore')`, and keeps only the result's shape and dtype.
# A write into a meta array checks the value's shape against the target's and stores nothing. Forward code that
# reads a value (`math.isnan(xp.sum(x))`, `if xp.any(...)`, `int(xp.max(counts))`) reads the stand-in's zero, as
# torch's meta kernels skip their data checks; the functions whose result's shape depends on the elements (nonzero,
# unique, bincount, a boolean mask) raise NotImplementedError, as torch's do, and so does NumPy's conversion. A
# tensor's own `.item()`, `bool()` and `.tolist()` raise torch's errors before reaching here.

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._xp import Backend

NO_DATA = "Cannot copy out of meta tensor; no data!"  # torch's NotImplementedError
DEVICE = "meta"


class MetaArray:
    """An array of the meta device: a shape and a NumPy dtype, no elements (Note [meta arrays])."""

    __slots__ = ("shape", "dtype")
    __array_ufunc__ = None  # NumPy's functions refuse it rather than compute on an object array
    device = DEVICE

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    def __array_namespace__(self, api_version: str | None = None) -> types.ModuleType:
        return namespace

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        raise NotImplementedError(NO_DATA)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def T(self) -> MetaArray:  # noqa: N802 - the array API's name
        return MetaArray(self.shape[::-1], self.dtype)

    @property
    def mT(self) -> MetaArray:  # noqa: N802 - the array API's name
        return MetaArray(self.shape[:-2] + self.shape[:-3:-1], self.dtype)

    def to_device(self, device: Any, stream: Any = None) -> MetaArray:
        if device != DEVICE:
            raise NotImplementedError(NO_DATA)
        return self

    def __getitem__(self, key: Any) -> MetaArray:
        for index in key if isinstance(key, tuple) else (key,):
            if type(index) is MetaArray and index.dtype == np.bool_:
                _data_dependent("boolean indexing")()
        return _kept(_stand_in(self)[_stand_ins(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        """Check that `value` broadcasts to the written place; store nothing (there is no data)."""
        target = _stand_in(self)[_stand_ins(key)]
        np.broadcast_shapes(np.shape(value) if not isinstance(value, MetaArray) else value.shape, target.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __bool__(self) -> bool:
        """False: forward code that tests a value (a NaN check) reads the stand-in's zero (Note [meta arrays])."""
        return False

    def __float__(self) -> float:
        return 0.0

    def __complex__(self) -> complex:
        return 0j

    def __int__(self) -> int:
        return 0

    __index__ = __int__


def _stand_in(array: MetaArray) -> np.ndarray:
    """A zero-stride NumPy array of `array`'s shape and dtype: no memory of its size."""
    return np.broadcast_to(np.zeros((), array.dtype), array.shape)


def _stand_ins(value: Any) -> Any:
    """`value` with its meta arrays (inside lists and tuples too) as stand-ins."""
    if type(value) is MetaArray:
        return _stand_in(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_stand_ins(v) for v in value)
    return value


def _kept(result: Any) -> Any:
    """A NumPy result's shapes and dtypes as meta arrays (inside tuples and lists too); anything else as it is."""
    if isinstance(result, (np.ndarray, np.generic)):
        return MetaArray(np.shape(result), result.dtype)
    if isinstance(result, (list, tuple)):
        return type(result)(_kept(r) for r in result)
    return result


def _no_host_arrays(args: Sequence) -> None:
    """Refuse a NumPy array of one or more dims beside meta arrays: a CPU tensor's (0-d ones count as numbers)."""
    for a in args:
        if isinstance(a, np.ndarray) and a.ndim:
            raise TypeError("an array of the CPU given to a meta array's function")


def _without_device(kwargs: dict) -> dict:
    kwargs.pop("device", None)
    return kwargs


def _through_numpy(function: Callable) -> Callable:
    """NumPy's `function` on stand-ins, keeping the result's shapes and dtypes (Note [meta arrays])."""

    def call(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return _kept(function(*_stand_ins(args), **_stand_ins(_without_device(kwargs))))

    call.__name__ = call.__qualname__ = getattr(function, "__name__", "function")
    return call


def _joining(function: Callable) -> Callable:
    """NumPy's joining `function` (concat, stack) on stand-ins, refusing a CPU array among the meta ones."""
    through = _through_numpy(function)

    def call(arrays: Sequence, /, *args: Any, **kwargs: Any) -> Any:
        _no_host_arrays(arrays)
        return through(arrays, *args, **kwargs)

    call.__name__ = call.__qualname__ = function.__name__
    return call


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shapes broadcast together, with the RuntimeError torch's meta kernels give where they do not."""
    common = [1] * max(map(len, shapes), default=0)
    for position, shape in enumerate(shapes):
        for dim in range(-1, -1 - len(shape), -1):
            if common[dim] == 1:
                common[dim] = shape[dim]
            elif shape[dim] != 1 and shape[dim] != common[dim]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[dim]} at {dim}! Mismatching "
                                   f"argument at index {position} had torch.Size({list(shape)}); but expected shape "
                                   f"should be broadcastable to {common}")
    return tuple(common)


def _elementwise(ufunc: np.ufunc) -> Callable:
    """A ufunc by the broadcasting rule, its dtype from NumPy on 0-d zeros (Note [meta arrays])."""

    def call(*args: Any, **kwargs: Any) -> Any:
        _no_host_arrays(args)
        shape = _broadcast(*(a.shape for a in args if type(a) is MetaArray))
        kwargs.pop("out", None)
        zeros = [np.zeros((), a.dtype) if type(a) is MetaArray else a for a in args]
        with np.errstate(all="ignore"):
            result = ufunc(*zeros, **kwargs)
        if isinstance(result, tuple):
            return tuple(MetaArray(shape, r.dtype) for r in result)
        return MetaArray(shape, np.result_type(result))

    call.__name__ = call.__qualname__ = ufunc.__name__
    return call


def where(condition: Any, x1: Any, x2: Any) -> MetaArray:
    """The broadcast shape of the three; the dtype NumPy gives for the values."""
    args = (condition, x1, x2)
    _no_host_arrays(args)
    shape = _broadcast(*(a.shape for a in args if type(a) is MetaArray))
    zeros = [np.zeros((), a.dtype) if type(a) is MetaArray else a for a in (x1, x2)]
    return MetaArray(shape, np.where(True, *zeros).dtype)


def matmul(x1: MetaArray, x2: MetaArray) -> MetaArray:
    """The matmul rule on the shapes (a 1-d operand gains and loses a dim); NumPy's error words for a mismatch."""
    _no_host_arrays((x1, x2))
    a, b = x1.shape, x2.shape
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    left, right = (a if len(a) > 1 else (1, *a)), (b if len(b) > 1 else (*b, 1))
    if left[-1] != right[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {right[-2]} is different from {left[-1]})")
    shape = np.broadcast_shapes(left[:-2], right[:-2]) + (left[-2],) * (len(a) > 1) + (right[-1],) * (len(b) > 1)
    return MetaArray(shape, np.result_type(x1.dtype, x2.dtype))


def reshape(x: MetaArray, shape: Sequence[int], copy: bool | None = None) -> MetaArray:
    """`x` in `shape` (one -1 inferred), NumPy's ValueError where the sizes differ."""
    shape = tuple(int(s) for s in shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape = tuple((x.size // known if known else 0) if s == -1 else s for s in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    return MetaArray(shape, x.dtype)


def astype(x: MetaArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> MetaArray:
    return MetaArray(x.shape, dtype)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> MetaArray:
    """A meta array of `obj`'s shape and dtype (a meta array, a NumPy array or Python data)."""
    if type(obj) is MetaArray:
        return obj if dtype is None else MetaArray(obj.shape, dtype)
    found = np.asarray(obj, dtype=dtype)
    return MetaArray(found.shape, found.dtype)


def _shape_of(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)


def empty(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> MetaArray:
    return MetaArray(_shape_of(shape), np.float64 if dtype is None else dtype)


zeros = ones = empty


def full(shape: int | Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None) -> MetaArray:
    return MetaArray(_shape_of(shape), np.asarray(fill_value).dtype if dtype is None else dtype)


def empty_like(x: MetaArray, /, *, dtype: Any = None, device: Any = None) -> MetaArray:
    return MetaArray(x.shape, x.dtype if dtype is None else dtype)


zeros_like = ones_like = empty_like


def full_like(x: MetaArray, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> MetaArray:
    return MetaArray(x.shape, x.dtype if dtype is None else dtype)


def _data_dependent(name: str) -> Callable:
    """A function whose result's shape depends on the elements: refused, as torch's meta kernels refuse them."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{name}: the shape of its result depends on the elements, and a meta tensor has "
                                  "none")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


class _Namespace(types.ModuleType):
    """A namespace whose names missing here are NumPy's (or a NumPy submodule's) through the meta rules: ufuncs by
    broadcasting, other functions on stand-ins, constants and dtypes as NumPy's (Note [meta arrays])."""

    def __init__(self, name: str, numpy_module: types.ModuleType, own: dict) -> None:
        super().__init__(name)
        self._numpy = numpy_module
        self.__dict__.update(own)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._numpy, name)  # NumPy's AttributeError for a name it lacks
        if isinstance(found, np.ufunc):
            found = _elementwise(found)
        elif isinstance(found, types.ModuleType):
            found = _Namespace(f"{self.__name__}.{name}", found, {})
        elif callable(found) and not isinstance(found, type):
            found = _through_numpy(found)
        setattr(self, name, found)
        return found


_OWN = {name: globals()[name] for name in ("where", "matmul", "reshape", "astype", "asarray", "empty", "zeros",
                                           "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like")}
_OWN.update((name, _joining(getattr(np, name))) for name in ("concat", "concatenate", "stack"))
_OWN.update((name, _data_dependent(name)) for name in ("nonzero", "unique_values", "unique_counts",
                                                          "unique_inverse", "unique_all", "bincount"))
namespace = _Namespace("retrograd.meta.namespace", np, _OWN)

def _binary(ufunc: np.ufunc, reflected: bool) -> Callable:
    """An operator method of MetaArray by `ufunc`'s meta rule (`a + b` is namespace.add(a, b))."""
    call = getattr(namespace, ufunc.__name__)
    return (lambda self, other: call(other, self)) if reflected else (lambda self, other: call(self, other))


def _unary(ufunc: np.ufunc) -> Callable:
    call = getattr(namespace, ufunc.__name__)
    return lambda self: call(self)


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.divide),
                      ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                      ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("lshift", np.left_shift),
                      ("rshift", np.right_shift)):
    setattr(MetaArray, f"__{_name}__", _binary(_ufunc, reflected=False))
    setattr(MetaArray, f"__r{_name}__", _binary(_ufunc, reflected=True))
for _name, _ufunc in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                      ("gt", np.greater), ("ge", np.greater_equal)):
    setattr(MetaArray, f"__{_name}__", _binary(_ufunc, reflected=False))
for _name, _ufunc in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute), ("invert", np.invert)):
    setattr(MetaArray, f"__{_name}__", _unary(_ufunc))
MetaArray.__matmul__ = matmul
MetaArray.__rmatmul__ = lambda self, other: matmul(other, self)
MetaArray.__hash__ = object.__hash__


class MetaBackend(Backend):
    """The meta device type behind the array seam: one device with no index (torch's `device(type='meta')`), whose
    arrays are made from a host array's shape and dtype alone and copy nothing out."""

    indexed = False
    has_data = False

    def __init__(self) -> None:
        super().__init__(DEVICE, namespace, [DEVICE])

    def index_of(self, array: Any) -> int | None:
        return 0 if type(array) is MetaArray else None

    def from_host(self, array: np.ndarray, index: int) -> MetaArray:
        return MetaArray(array.shape, array.dtype)

    def to_host(self, array: Any) -> np.ndarray:
        raise NotImplementedError(NO_DATA)

    def draw(self, kind: str, shape: tuple[int, ...], dtype: np.dtype, index: int) -> MetaArray:
        """No samples: the generators stay as they were, as torch's on meta."""
        return MetaArray(shape, dtype)
