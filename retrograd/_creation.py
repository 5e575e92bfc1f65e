"""Tensor creation: from data, filled, ranges and random, each with dtype= and requires_grad=.

Random numbers come from one NumPy generator that `manual_seed` resets (the streams differ from
torch's, so tests compare on identical inputs, not on seeds).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from . import _xp
from ._tensor import NO_VERSION_COUNTER, Tensor, _wrap, on_device, placement
from .autograd import grad_mode
from .autograd.forward_ad import transforms


class Generator:
    """A random-number generator (torch.Generator): `manual_seed`, and use as `generator=`."""

    def __init__(self, device: str = "cpu") -> None:
        self._numpy_rng: np.random.Generator | None = None
        self._seed = None

    @property
    def _rng(self) -> np.random.Generator:
        """The NumPy generator, seeded from the OS on first use unless manual_seed came first (made then,
        not at `import retrograd`: numpy.random is a tenth of the import's time)."""
        if self._numpy_rng is None:
            self._numpy_rng = np.random.default_rng()
        return self._numpy_rng

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self._numpy_rng = np.random.default_rng(int(seed))
        if self is default_generator:  # torch.manual_seed seeds the CUDA generators too
            _xp.seed_devices(int(seed))
        return self

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 tensor, as torch gives it (Note [generator state])."""
        state = self._rng.bit_generator.state
        words = (state["state"]["state"], state["state"]["inc"], state["has_uint32"], state["uinteger"])
        return _new(np.frombuffer(b"".join(w.to_bytes(n, "little") for w, n in zip(words, _STATE_FIELDS)),
                                  np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        if not isinstance(new_state, Tensor) or new_state.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != sum(_STATE_FIELDS):
            raise RuntimeError(f"Expected a retrograd generator state (NumPy's PCG64) of size {sum(_STATE_FIELDS)} "
                               f"but found the input RNG state size to be {new_state.numel()}")
        raw, words = new_state._data.tobytes(), []
        for n in _STATE_FIELDS:
            words.append(int.from_bytes(raw[:n], "little"))
            raw = raw[n:]
        self._rng.bit_generator.state = {"bit_generator": "PCG64", "state": {"state": words[0], "inc": words[1]},
                                         "has_uint32": words[2], "uinteger": words[3]}
        return self


# Note [generator state]
# torch's CPU generator is a Mersenne Twister whose state is 5056 bytes; retrograd's is NumPy's PCG64, so its
# state is its own 40 bytes (128-bit state and increment, the cached half-word flag and value), in a uint8
# tensor as torch's is: saved with a checkpoint and set back, it resumes the same stream. A state saved by
# torch does not fit and is refused by its size, as torch refuses a state of the wrong size.
_STATE_FIELDS = (16, 16, 4, 4)


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (reproducible within retrograd)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    s = int(np.random.SeedSequence().entropy % (2**63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, a uint8 tensor (Note [generator state])."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                    "'different' randomness flags on vmap or perform the randomness operation out of vmap")
LEGACY_RANDOMNESS_ERROR = ("vmap: We do not yet support calling random operations inside of vmap. Please perform "
                           "random operations outside of vmap as a workaround")


def _rng(generator: Generator | None) -> np.random.Generator:
    """The NumPy generator behind `generator`; every draw asks here, so inside a vmap level that
    refuses randomness (randomness='error', or torch's legacy _vmap) it raises torch's error."""
    for level in reversed(transforms.vmap):
        if level.randomness == "error":
            raise RuntimeError(RANDOMNESS_ERROR)
        if level.randomness == "legacy":
            raise RuntimeError(LEGACY_RANDOMNESS_ERROR)
    return (generator or default_generator)._rng


def _new(data: np.ndarray) -> Tensor:
    """A factory's new tensor: an inference tensor inside inference mode (Note [inference tensors])."""
    t = _wrap(data)
    if grad_mode._state.inference:
        t._vc = NO_VERSION_COUNTER
    return t


def _finish(data: np.ndarray, requires_grad: bool, device: Any = None) -> Tensor:
    """A factory's tensor around NumPy's `data`, copied to `device` when that is not the CPU."""
    if requires_grad and data.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t = _new(data if device is None else on_device(data, device))
    t._requires_grad = requires_grad
    return t


def _shape(size: Sequence) -> tuple[int, ...]:
    """Accept f(2, 3), f((2, 3)), f([2, 3]) and f(torch.Size([2, 3]))."""
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) and not (isinstance(s, Tensor) and s.ndim == 0):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {list(out)}")
    return out


def _np_dtype(dtype: D.dtype | None, default: D.dtype | None = None) -> np.dtype:
    if dtype is None:
        return (default or D.defaults.floating).np
    if isinstance(dtype, D.dtype):
        return dtype.np
    return D.from_numpy_dtype(np.dtype(dtype)).np


def _infer(data: Any, exact: bool = False) -> np.ndarray:
    """Nested Python data to an array with torch's dtypes (floats -> default, ints -> int64). With `exact`
    the caller casts to a dtype of its own, so Python numbers keep their full precision until then
    (tensor([0.3], dtype=float64) holds 0.3, not the float32 nearest to it)."""
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, np.ndarray):
        D.from_numpy_dtype(data.dtype)
        return data.copy()
    numpy_scalars = []
    if isinstance(data, (list, tuple)):
        flat = _flat(data)
        if any(isinstance(v, Tensor) for v in flat):
            data = _unwrap(data)
            flat = _flat(data)
        numpy_scalars = [v for v in flat if isinstance(v, np.generic)]
    arr = np.array(data)
    if arr.dtype == object:
        raise TypeError("can't convert data of mixed or ragged types to a tensor")
    kind = arr.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if exact:
        return arr
    if numpy_scalars:  # each NumPy scalar counts with its own dtype, Python numbers with torch's
        dtypes = [D.from_numpy_dtype(v.dtype) if isinstance(v, np.generic) else D.scalar_dtype(v) for v in flat]
        return arr.astype(functools.reduce(D.promote_types, dtypes).np)
    if kind == "f" and not _has_numpy_float(data):
        arr = arr.astype(D.defaults.floating.np)
    elif kind == "c" and not _has_numpy_float(data):
        arr = arr.astype(D.default_complex().np)
    elif kind in "iu" and arr.dtype != np.uint8 and not _has_numpy_float(data):
        arr = arr.astype(np.int64)
    if arr.size == 0 and kind == "f":
        arr = arr.astype(D.defaults.floating.np)
    return arr


def _flat(data: Any) -> list:
    out, stack = [], [data]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _unwrap(data: Any) -> Any:
    if isinstance(data, (list, tuple)):
        return [_unwrap(v) for v in data]
    if isinstance(data, Tensor):
        return data._data.tolist() if data.ndim else data._data.item()
    return data


def _has_numpy_float(data: Any) -> bool:
    return isinstance(data, np.generic)


def tensor(data: Any, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data` (floats are float32 by default, ints int64)."""
    arr = _infer(data, exact=dtype is not None)
    if dtype is not None:
        arr = arr.astype(_np_dtype(dtype))
    return _finish(np.ascontiguousarray(arr) if arr.ndim else arr.reshape(()), requires_grad, device)


def as_tensor(data: Any, dtype: D.dtype | None = None, device: Any = None) -> Tensor:
    """Like tensor(), but shares memory with a tensor or NumPy array of the right dtype."""
    if isinstance(data, Tensor):
        data = data if device is None else data.to(device)
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if device is not None and placement(device) != ("cpu", None):
        return tensor(data, dtype=dtype, device=device)
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == _np_dtype(dtype)):
        D.from_numpy_dtype(data.dtype)
        return _new(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (changes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    D.from_numpy_dtype(array.dtype)
    return _new(array)


def _filled(fill: Any, size: Sequence, dtype: D.dtype | None, requires_grad: bool, default: D.dtype | None = None,
            device: Any = None) -> Tensor:
    return _finish(np.full(_shape(size), fill, dtype=_np_dtype(dtype, default)), requires_grad, device)


def zeros(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          out: Any = None, layout: Any = None) -> Tensor:
    return _finish(np.zeros(_shape(size), dtype=_np_dtype(dtype)), requires_grad, device)


def ones(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
         out: Any = None, layout: Any = None) -> Tensor:
    return _finish(np.ones(_shape(size), dtype=_np_dtype(dtype)), requires_grad, device)


def empty(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          out: Any = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    return _finish(np.empty(_shape(size), dtype=_np_dtype(dtype)), requires_grad, device)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: D.dtype | None = None, device: Any = None,
                  requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the given strides (in elements) over memory of just the span they reach."""
    shape, np_dtype = _shape((size,)), np.dtype(_np_dtype(dtype))
    if len(stride) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(stride)})")
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    memory = np.empty(span, np_dtype)
    data = np.lib.stride_tricks.as_strided(memory, shape, tuple(s * np_dtype.itemsize for s in stride))
    return _finish(data, requires_grad, device)


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: D.dtype | None = None,
                   device: Any = None, requires_grad: bool = False, layout: Any = None,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` whose dims lie in memory in the order `physical_layout` (outermost first)."""
    shape, order = _shape((size,)), tuple(int(d) for d in physical_layout)
    if len(order) != len(shape):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(shape)} is not equal to len(physical_layout) = {len(order)}")
    if sorted(order) != list(range(len(shape))):
        raise RuntimeError(f"Dimension {order} in physical_layout is not a permutation of the dims")
    stride, step = [0] * len(shape), 1
    for d in reversed(order):
        stride[d], step = step, step * max(shape[d], 1)
    return empty_strided(shape, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def scalar_tensor(s: Any, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A 0-d tensor of `s`, of the default floating dtype unless `dtype` is given (whatever the type of `s`)."""
    return _filled(s.item() if isinstance(s, Tensor) else s, (), dtype, requires_grad, device=device)


def _triangle_indices(lower: bool) -> Any:
    """torch.tril_indices / triu_indices: the (row, column) coordinates of a row x col matrix's triangle, 2 x N."""
    name = "tril_indices" if lower else "triu_indices"

    def indices(row: int, col: int, offset: int = 0, *, dtype: D.dtype | None = None, device: Any = None,
                layout: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
        dtype = D.int64 if dtype is None else dtype
        if dtype.category > 1:
            raise NotImplementedError(f'"{name}" not implemented for \'{D.SCALAR_TYPE_NAMES[dtype.name]}\'')
        for what, n in (("row", row), ("col", col)):
            if n < 0:
                raise RuntimeError(f"{what} must be non-negative, got{n}")
        places = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
        return _finish(np.stack(places).astype(dtype.np, copy=False).reshape(2, -1), requires_grad, device)

    indices.__name__ = indices.__qualname__ = name
    indices.__doc__ = f"torch.{name}: the coordinates of the {'lower' if lower else 'upper'} triangle of a row x col " \
                      "matrix from diagonal `offset`, as a 2 x N tensor (rows, then columns)."
    return indices


tril_indices, triu_indices = _triangle_indices(True), _triangle_indices(False)


def full(size: Sequence[int], fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of `size` filled with fill_value (its dtype inferred from the value, as torch)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = D.scalar_dtype(fill_value) if dtype is None else None
    return _filled(fill_value, (size,) if not isinstance(size, int) else (size,), dtype, requires_grad, default,
                   device)


def eye(n: int, m: int | None = None, *, dtype: D.dtype | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, n if m is None else m, dtype=_np_dtype(dtype)), requires_grad, device)


def arange(start: float, end: float | None = None, step: float = 1, *, dtype: D.dtype | None = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """Values start, start+step, ... below end; int64 when all arguments are integers."""
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end, step)]  # np.int64 is an int
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in values) else D.defaults.floating
    n = max(int(np.ceil((values[1] - values[0]) / values[2])), 0)
    data = (values[0] + np.arange(n, dtype=np.float64 if dtype.category >= 2 else np.int64) * values[2])
    return _finish(data.astype(_np_dtype(dtype)), requires_grad, device)


def _bounds(name: str, start: Any, end: Any) -> tuple:
    """linspace/logspace's start and end as numbers: each may be a 0-d tensor (torch's Tensor overloads)."""
    for what, value in (("start", start), ("end", end)):
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {what} with "
                               f"{value.ndim} dimension(s).")
    return tuple(v.item() if isinstance(v, Tensor) else v for v in (start, end))


def linspace(start: float | Tensor, end: float | Tensor, steps: int, *, dtype: D.dtype | None = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    start, end = _bounds("linspace", start, end)
    return _finish(np.linspace(start, end, steps, dtype=np.float64).astype(_np_dtype(dtype)), requires_grad, device)


def logspace(start: float | Tensor, end: float | Tensor, steps: int, base: float = 10.0, *,
             dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    start, end = _bounds("logspace", start, end)
    return _finish(np.logspace(start, end, steps, base=base).astype(_np_dtype(dtype)), requires_grad, device)


def rand(*size: Any, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples from [0, 1)."""
    drawn = _device_draw("random", size, generator, dtype, device, requires_grad)
    if drawn is not None:
        return drawn
    return _finish(_rng(generator).random(_shape(size)).astype(_np_dtype(dtype)), requires_grad, device)


def randn(*size: Any, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    drawn = _device_draw("normal", size, generator, dtype, device, requires_grad)
    if drawn is not None:
        return drawn
    return _finish(_rng(generator).standard_normal(_shape(size)).astype(_np_dtype(dtype)), requires_grad, device)


def _device_draw(kind: str, size: Sequence, generator: Generator | None, dtype: D.dtype | None, device: Any,
                 requires_grad: bool) -> Tensor | None:
    """Samples drawn by a device's own generator (Note [random numbers on a device] in _xp.py), or None: on the
    CPU, with an explicit generator, or where the backend has none."""
    if device is None or generator is not None:
        return None
    where = placement(device)
    if where[0] == "cpu":
        return None
    _rng(None)  # vmap's randomness checks
    drawn = _xp.backend(where[0]).draw(kind, _shape(size), _np_dtype(dtype), where[1])
    if drawn is None:
        return None
    t = _new(drawn)
    t._requires_grad = requires_grad
    return t


def randint(low: int, high: int | Sequence[int] | None = None, size: Sequence[int] = (), *,
            generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Integers uniform in [low, high) (int64 by default); `randint(high, size)` is torch's other
    overload, with low = 0."""
    if high is None or isinstance(high, Sequence):
        low, high, size = 0, low, size if high is None else high
    data = _rng(generator).integers(low, high, size=_shape((size,)) if not isinstance(size, int) else (size,))
    return _finish(data.astype(_np_dtype(dtype, D.int64)), requires_grad, device)


def randperm(n: int, *, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return _finish(_rng(generator).permutation(n).astype(_np_dtype(dtype, D.int64)), requires_grad, device)


def normal(mean: float | Tensor = 0.0, std: float | Tensor = 1.0, size: Sequence[int] | None = None, *,
           generator: Generator | None = None, dtype: D.dtype | None = None) -> Tensor:
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    out_dtype = mean.dtype if isinstance(mean, Tensor) else (std.dtype if isinstance(std, Tensor) else dtype)
    return _finish(_rng(generator).normal(m, s, size=shape).astype(_np_dtype(out_dtype)), False)


def _where(input: Tensor, device: Any) -> Any:
    """A `_like` factory's device: the one asked for, else input's (None, no transfer, for NumPy's arrays)."""
    return device if device is not None or type(input._data) is np.ndarray else input.device


def _like(fn: Any) -> Any:
    def like(input: Tensor, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
             memory_format: Any = None, layout: Any = None) -> Tensor:
        return fn(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                  device=_where(input, device))

    like.__name__ = fn.__name__ + "_like"
    like.__doc__ = f"{fn.__name__}() with the shape (and by default the dtype) of `input`."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input: Tensor, fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=_where(input, device))


def randint_like(input: Tensor, low: int, high: int | None = None, *, dtype: D.dtype | None = None,
                 device: Any = None, requires_grad: bool = False) -> Tensor:
    return randint(low, high, input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                   device=_where(input, device))
