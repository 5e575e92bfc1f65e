"""The one seam to the array library: which namespace computes on an array, and which arrays hold a device's tensors.

Forward code gets the namespace as its `xp` argument (ops/registry.py); the engine asks for it where it makes
arrays itself (autograd/graph.py); factories and transfers ask `backend(device type)` (Note [choosing a
namespace]). This module imports nothing of retrograd, so every layer may load it first.
"""

# Note [choosing a namespace]
# An array says which namespace computes on it: NumPy for an ndarray (tested first: the fast path), else the
# Python array API's `array.__array_namespace__()` (CuPy, array_api_strict, ...). Forward code computes with
# that `xp` only and makes new arrays with `device=x.device`, so a result stays in its inputs' namespace and
# on their device. Where no array exists yet (a factory's `device='cuda'`, a transfer), a torch device type
# picks a `Backend`: a namespace and the native device behind each index. 'cpu' is NumPy; 'cuda' is CuPy on
# the GPUs it sees, looked up on first use (never at `import retrograd`), and absent without CuPy or a GPU,
# as on a torch built without CUDA. `use(type, xp, devices)` puts another array-API library behind a device
# type for a block: the tests put array_api_strict's non-host devices behind 'cuda', whose arrays refuse
# NumPy's conversion as GPU arrays do, so every stray `np.` call on a tensor's array fails there. 'meta' is the
# package retrograd/meta, whose backend the package face `provide`s on first use: arrays of a shape and a dtype and
# no elements (`has_data` False), on one device without an index (`indexed` False).

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

_ndarray = np.ndarray
_NAMESPACE_OF_TYPE: dict[type, Any] = {}  # array types whose namespace a backend names (CuPy's)


def namespace(array: object) -> types.ModuleType:
    """The array namespace that computes on `array`: the Python array API's `__array_namespace__`."""
    if type(array) is _ndarray:
        return np
    known = _NAMESPACE_OF_TYPE.get(type(array))
    if known is not None:
        return known
    get = getattr(array, "__array_namespace__", None)
    return np if get is None else get()


def is_array(value: object) -> bool:
    """Whether `value` is an array of some namespace: NumPy's, a backend's (CuPy's arrays have no
    `__array_namespace__`), or any library's with the array API's `__array_namespace__`."""
    kind = type(value)
    return kind is _ndarray or kind in _NAMESPACE_OF_TYPE or hasattr(value, "__array_namespace__")


class Backend:
    """The arrays behind one torch device type: a namespace, the native device of each index, and the
    copies to and from host (NumPy) memory. `indexed`: its devices are numbered ('cuda:0'; meta's is not);
    `has_data`: its arrays hold elements (meta's hold a shape and a dtype only)."""

    indexed = True
    has_data = True

    def __init__(self, device_type: str, xp: Any, devices: Sequence[Any]) -> None:
        self.type = device_type
        self.xp = xp
        self.devices = tuple(devices)
        self.name = getattr(xp, "__name__", type(xp).__name__)  # torch.cuda.get_device_name

    def synchronize(self) -> None:
        """Wait for queued work (nothing is queued for an array API library in general)."""

    def index_of(self, array: Any) -> int | None:
        """The torch index of the device holding `array` (None: not one of ours)."""
        native = array.device
        for index, device in enumerate(self.devices):
            if device == native:
                return index
        return None

    def from_host(self, array: np.ndarray, index: int) -> Any:
        return self.xp.asarray(array, device=self.devices[index], copy=True)

    def draw(self, kind: str, shape: tuple[int, ...], dtype: np.dtype, index: int) -> Any:
        """`kind` ('random': uniform [0, 1), 'normal') samples drawn on the device by its own generator, or None
        where the library has none (the standard has no random numbers): then the host draws and copies."""
        return None

    def seed(self, seed: int) -> None:
        """Seed the device's own generators (Note [random numbers on a device])."""

    def to_host(self, array: Any) -> np.ndarray:
        """A NumPy copy of `array`, through the namespace's host device (the standard's `to_device`)."""
        host = self.xp.__array_namespace_info__().default_device()
        return np.array(array.to_device(host), copy=True)


class _CuPy(Backend):
    """CuPy's arrays on the GPUs it sees, computed on through array-api-compat's standard namespace for CuPy
    (CuPy's own functions take no `device=`): CuPy's own copies to and from the host."""

    def __init__(self, cupy: Any, standard: Any) -> None:
        count = cupy.cuda.runtime.getDeviceCount()
        super().__init__("cuda", standard, [cupy.cuda.Device(i) for i in range(count)])
        self.cupy = cupy
        self.generators: dict[int, Any] = {}
        _NAMESPACE_OF_TYPE[cupy.ndarray] = standard
        self.name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode() if count else "cupy"

    def synchronize(self) -> None:
        self.cupy.cuda.runtime.deviceSynchronize()

    def index_of(self, array: Any) -> int | None:
        return array.device.id

    def from_host(self, array: np.ndarray, index: int) -> Any:
        with self.cupy.cuda.Device(index):
            return self.cupy.asarray(array)

    def to_host(self, array: Any) -> np.ndarray:
        return array.get()

    def draw(self, kind: str, shape: tuple[int, ...], dtype: np.dtype, index: int) -> Any:
        native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
        with self.cupy.cuda.Device(index):
            found = self.generators.get(index)
            if found is None:  # unseeded: from the OS, as torch's CUDA generator without manual_seed
                found = self.generators[index] = self.cupy.random.default_rng()
            drawn = found.random(shape, dtype=native) if kind == "random" else found.standard_normal(shape, native)
            return drawn if native == dtype else drawn.astype(dtype)

    def seed(self, seed: int) -> None:
        for index in range(len(self.devices)):
            with self.cupy.cuda.Device(index):
                self.generators[index] = self.cupy.random.default_rng(seed)


def _find_cupy() -> Backend | None:
    """CuPy behind 'cuda' when it and array-api-compat import and CuPy sees a GPU; None otherwise."""
    try:
        import array_api_compat.cupy
        import cupy

        found = _CuPy(cupy, array_api_compat.cupy)
    except Exception:  # noqa: BLE001 - no CuPy, or a CuPy without a driver or a GPU: no CUDA, as torch says
        return None
    return found if found.devices else None


_NOT_LOOKED_UP = object()
_backends: dict[str, Any] = {}  # each device type's backend (None: none on this machine) once looked up
_finders: dict[str, Callable[[], Backend | None]] = {"cuda": _find_cupy}  # how to look one up, on first use
_seed: int | None = None  # the last manual_seed, for a backend looked up later (Note [random numbers on a device])


def backend(device_type: str) -> Backend | None:
    """The backend of a non-CPU device type, or None where this machine has none."""
    found = _backends.get(device_type, _NOT_LOOKED_UP)
    if found is _NOT_LOOKED_UP:
        finder = _finders.get(device_type)
        found = _backends[device_type] = None if finder is None else finder()
        if found is not None and _seed is not None:
            found.seed(_seed)
    return found


def provide(device_type: str, finder: Callable[[], Backend | None]) -> None:
    """Look up `device_type`'s backend by `finder` on its first use (the package face provides the meta device's
    this way, so that neither `import retrograd` nor the core loads retrograd/meta)."""
    _finders[device_type] = finder


def namespaces() -> list[Any]:
    """The namespaces behind device types now (CuPy's once looked up)."""
    return [found.xp for found in _backends.values() if isinstance(found, Backend)]


def locate(array: Any) -> tuple[str, int | None]:
    """The torch device (type, index) holding `array`: ('cpu', None) for NumPy's arrays."""
    if type(array) is _ndarray:
        return "cpu", None
    xp = namespace(array)
    for found in _backends.values():
        if isinstance(found, Backend) and found.xp is xp:
            index = found.index_of(array)
            if index is not None:
                return found.type, index if found.indexed else None
    return "cpu", None


def has_data(array: Any) -> bool:
    """Whether `array` holds elements (a meta array holds a shape and a dtype only)."""
    if type(array) is _ndarray:
        return True
    xp = namespace(array)
    return next((found.has_data for found in _backends.values() if isinstance(found, Backend) and found.xp is xp),
                True)


def transfer(array: Any, device_type: str, index: int | None) -> Any:
    """`array` on the torch device (type, index), copied there if it lives elsewhere; the caller has checked
    that the device type has a backend."""
    here = locate(array)
    if here == (device_type, index):
        return array
    host = array if here[0] == "cpu" else _backends[here[0]].to_host(array)
    if device_type == "cpu":
        return host
    if host.dtype.kind == "V" and _backends[device_type].has_data:  # ml_dtypes' bfloat16, a NumPy type only (Note
        # [bfloat16] in _dtype.py); a meta array keeps any dtype
        raise RuntimeError(no_bfloat16(_backends[device_type].xp))
    return _backends[device_type].from_host(host, index)


def no_bfloat16(xp: Any) -> str:
    """The error for a bfloat16 array asked of namespace `xp`: retrograd's bfloat16 is ml_dtypes' NumPy type."""
    return (f"bfloat16 tensors are NumPy arrays of ml_dtypes' type: {getattr(xp, '__name__', xp)} has no bfloat16; "
            "keep them on the CPU")


# Note [random numbers on a device]
# A backend with its own random generator (CuPy's) draws a device's random tensors there, as torch's CUDA
# generator does: copying host draws to a GPU costs more than the training step that uses them (dropout
# masks). Its streams differ from the CPU's, as torch's CUDA streams do; `manual_seed` seeds both.
# A backend without one (array_api_strict) gets the host's draws, copied.


def seed_devices(seed: int) -> None:
    """Seed the generators of every backend looked up so far (a later one is seeded when first used)."""
    global _seed
    _seed = seed
    for found in _backends.values():
        if isinstance(found, Backend):
            found.seed(seed)


@contextlib.contextmanager
def use(device_type: str, xp: Any, devices: Sequence[Any]) -> Iterator[Backend]:
    """Put `xp`'s arrays on `devices` behind `device_type` for the block (the tests' stand-in for a GPU)."""
    before = _backends.get(device_type, _NOT_LOOKED_UP)
    _backends[device_type] = found = Backend(device_type, xp, devices)
    try:
        yield found
    finally:
        _backends[device_type] = before
