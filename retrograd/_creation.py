"""Tensor creation: from data, filled, ranges and random, each with dtype= and requires_grad=.

Random numbers come from torch's CPU generator rebuilt on NumPy's mt19937: after `manual_seed(s)`
rand, randn, randint and randperm give torch's numbers (Note [torch's CPU random streams]).
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from . import _random_streams as S
from . import _xp
from ._memory_format import like_order
from ._tensor import (
    CPU,
    DEFAULT_DEVICE,
    NO_VERSION_COUNTER,
    Tensor,
    _warn_scalar_of_grad,
    _wrap,
    argument_type_name,
    as_sizes,
    checked_array,
    on_device,
    placement,
)
from ._tensor import device as _device
from ._warn import warn_once_at_user
from .autograd import grad_mode
from .autograd.forward_ad import composite, transforms
from .storage import mark_root


class Generator:
    """A random-number generator (torch.Generator): torch's CPU mt19937, so a seed gives torch's numbers
    (Note [torch's CPU random streams]); `manual_seed`, state, and use as `generator=`."""

    def __init__(self, device: str | _device = "cpu") -> None:
        self._device = _device(device)
        self._seed: int | None = _DEFAULT_SEED
        self._bits: np.random.MT19937 | None = None
        self._seeder: np.random.RandomState | None = None
        self._numpy_rng: np.random.Generator | None = None
        self._next_normal: float | None = None  # torch's cached second Box-Muller sample (double)
        self._next_float_normal: float | None = None  # torch's float cache: kept in the state, never drawn here

    @property
    def device(self) -> _device:
        """The device the generator was made for."""
        return self._device

    def _engine(self) -> np.random.MT19937:
        """The Mersenne Twister, seeded on first use (made then, not at `import retrograd`: numpy.random is a
        tenth of the import's time); the default generator's seed comes from the OS, as torch's does."""
        if self._bits is None:
            self._reseed(self._seed if self._seed is not None else _os_seed())
        return self._bits

    @property
    def _rng(self) -> np.random.Generator:
        """A NumPy generator on the same mt19937 words, for the draws torch's arithmetic is not reproduced for."""
        if self._numpy_rng is None:
            self._numpy_rng = np.random.Generator(self._engine())
        return self._numpy_rng

    def manual_seed(self, seed: int) -> Generator:
        """Seed with torch's init_genrand(seed mod 2**32); initial_seed() keeps the whole 64-bit seed."""
        self._reseed(int(seed) % 2**64)
        if self is default_generator:  # torch.manual_seed seeds the CUDA generators too
            _xp.seed_devices(int(seed))
        return self

    def _reseed(self, seed: int) -> None:
        if self._bits is None:  # one engine for the generator's life: seeding it again costs a microsecond
            self._bits = np.random.MT19937(0)
            self._seeder = np.random.RandomState(self._bits)
        self._seeder.seed(seed & 0xFFFFFFFF)  # RandomState's legacy seeding of an MT19937 is init_genrand
        self._seed = seed
        self._next_normal = self._next_float_normal = None

    def seed(self) -> int:
        """Reseed from the OS and return the seed."""
        return self.manual_seed(_os_seed())._seed

    def initial_seed(self) -> int:
        self._engine()
        return self._seed

    def get_state(self) -> Tensor:
        """The state as torch's 5056-byte uint8 tensor (Note [generator state])."""
        state = self._engine().state["state"]
        key, pos = state["key"], int(state["pos"])
        fresh = pos == _MT_N and int(key[0]) == self._seed & 0xFFFFFFFF
        out = np.zeros(_STATE_BYTES, np.uint8)
        header = np.array([self._seed, (1 << 32) | (_MT_N + 1 - pos), 0 if fresh else pos], np.uint64)  # left, seeded
        out[:24] = header.view(np.uint8)
        out[24:_NORMAL_AT] = key.astype(np.uint64).view(np.uint8)
        doubles = np.array([0.0, self._next_normal or 0.0, 0.0], np.float64)  # normal_x, normal_y, normal_rho
        out[_NORMAL_AT:_NORMAL_AT + 24] = doubles.view(np.uint8)
        out[_NORMAL_AT + 24] = self._next_normal is not None
        out[_NORMAL_AT + 32:_NORMAL_AT + 36] = np.array([self._next_float_normal or 0.0], np.float32).view(np.uint8)
        out[_NORMAL_AT + 36] = self._next_float_normal is not None
        return _new(out)

    def set_state(self, new_state: Tensor) -> Generator:
        if not isinstance(new_state, Tensor) or new_state.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {new_state.numel()}")
        raw = np.ascontiguousarray(new_state._data).reshape(-1)
        seed, left_seeded, _ = raw[:24].view(np.uint64)
        left, seeded = int(left_seeded & 0xFFFFFFFF), int(left_seeded >> 32) & 0xFF
        if not seeded or not 0 < left <= _MT_N:
            raise RuntimeError("Invalid mt19937 state")
        self._engine().state = {"bit_generator": "MT19937", "state": {
            "key": raw[24:_NORMAL_AT].view(np.uint64).astype(np.uint32), "pos": _MT_N + 1 - left}}
        self._seed = int(seed)
        normal = float(raw[_NORMAL_AT + 8:_NORMAL_AT + 16].view(np.float64)[0])
        self._next_normal = normal if raw[_NORMAL_AT + 24] else None
        float_normal = float(raw[_NORMAL_AT + 32:_NORMAL_AT + 36].view(np.float32)[0])
        self._next_float_normal = float_normal if raw[_NORMAL_AT + 36] else None
        return self

    # -- torch's draws (Note [torch's CPU random streams]); each returns a NumPy array ---------------------------

    def _words(self, n: int) -> np.ndarray:
        """n raw 32-bit words (random()), as uint64."""
        return self._engine().random_raw(n) if n else np.zeros(0, np.uint64)

    def _words64(self, n: int) -> np.ndarray:
        """n random64() values: two words each, the first the high half (Note [random64 in one pass])."""
        if _next64_high_first():
            return self._rng.integers(0, 2**64 - 1, endpoint=True, dtype=np.uint64, size=n)
        words = self._words(2 * n)
        return (words[0::2] << np.uint64(32)) | words[1::2]

    def _unit(self, n: int, double: bool) -> np.ndarray:
        """n uniform [0, 1) samples as torch draws them: float64 from 53 bits of random64, else float32."""
        return S.unit_float64(self._words64(n)) if double else S.unit_float32(self._words(n))

    def uniform(self, shape: tuple, dtype: np.dtype, low: float = 0.0, high: float = 1.0,
                fused: bool = True) -> np.ndarray:
        """uniform_(low, high) into a new array: x * (high - low) + low per element, a value rounded up to high
        in dtype replaced by low. The multiply-add is fused, as in torch's kernels built for AVX2; `fused=False`
        rounds twice, as kernels outside native/cpu do (rrelu's)."""
        dtype = np.dtype(dtype)
        if dtype.kind == "c":  # torch fills view_as_real: both parts of each element in turn
            return _as_complex(self.uniform((*shape, 2), np.finfo(dtype).dtype, low, high, fused), dtype)
        double = dtype == np.float64
        compute = np.float64 if double else np.float32
        low_c, high_c = compute(low), compute(high)
        x = self._unit(math.prod(shape), double)
        if (low, high) != (0, 1):
            x = S.fma(x, high_c - low_c, low_c) if fused else x * (high_c - low_c) + low_c
        values = x.astype(dtype, copy=False)
        return np.where(values == dtype.type(high), dtype.type(low), values).reshape(shape)

    def normal(self, shape: tuple, dtype: np.dtype, mean: float = 0.0, std: float = 1.0,
               contiguous: bool = True) -> np.ndarray:
        """normal_(mean, std) into a new array: normal_fill for 16 or more contiguous elements, the scalar
        Box-Muller (with the cached sample) otherwise."""
        dtype, n = np.dtype(dtype), math.prod(shape)
        if dtype.kind == "c":  # torch fills view_as_real, each part with half the variance
            return _as_complex(self.normal((*shape, 2), np.finfo(dtype).dtype, mean, std / math.sqrt(2), contiguous),
                               dtype)
        if n < 16 or not contiguous:
            return self._scalar_normals(n, mean, std).astype(dtype).reshape(shape)
        double = dtype == np.float64
        full = n - n % 16
        uniform = self._unit(n if dtype in (np.float32, np.float64) else full, double)  # half: in blocks only
        out = np.empty(n, np.float64 if double else np.float32)
        out[:full] = S.box_muller_blocks(uniform[:full], mean, std)
        if n % 16:
            out[n - 16:] = S.box_muller_blocks(self._unit(16, double), mean, std)
        return out.astype(dtype, copy=False).reshape(shape)

    def _scalar_normals(self, n: int, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
        """n float64 samples of normal_distribution<double>: pairs r cos, r sin, the unused sine cached."""
        cached = [] if self._next_normal is None else [self._next_normal]
        pairs = (n - len(cached) + 1) // 2
        u = self._unit(2 * pairs, True)
        values = np.concatenate([np.array(cached, np.float64), S.box_muller_pairs(u[0::2], u[1::2])])
        self._next_normal = float(values[n]) if values.size > n else None
        return values[:n] if (mean, std) == (0, 1) else S.fma(values[:n], std, mean)

    def gamma(self, alpha: np.ndarray, double: bool) -> np.ndarray:
        """_standard_gamma's draws (float64 values): torch's `sample_gamma` for each alpha."""
        with np.errstate(over="ignore"):  # float32 arithmetic on a tiny alpha overflows to inf, as in C
            return self._serial(lambda a, uniform, normal: S.sample_gamma(a, not double, uniform, normal), 6, alpha)

    def poisson(self, rates: np.ndarray) -> np.ndarray:
        """torch.poisson's draws (float64 values): torch's `sample_poisson` for each rate."""
        return self._serial(lambda rate, uniform, normal: S.sample_poisson(rate, uniform), 4, rates)

    def binomial(self, count: np.ndarray, prob: np.ndarray, double: bool) -> np.ndarray:
        """torch.binomial's draws (float64 values): torch's `sample_binomial` for each count and prob."""
        return self._serial(lambda n, p, uniform, normal: S.sample_binomial(n, p, not double, uniform), 4, count, prob)

    def _serial(self, sample: Callable, words_each: int, *parameters: np.ndarray) -> np.ndarray:
        """ATen's scalar samplers, run by cpu_serial_kernel on each element of the broadcast parameters in C order:
        `sample(*element's parameters, uniform, normal)` with the uniforms of uniform_real_distribution<double> and
        the normals of normal_distribution<double> (the cached sine shared with other scalar draws). A draw takes a
        varying number of words, so a chunk is read ahead and the engine then set just past the words used, also
        when a sampler raises part way, as torch's stream then stands."""
        broadcast = np.broadcast_arrays(*(np.asarray(p, np.float64) for p in parameters))
        rows = list(zip(*(b.reshape(-1).tolist() for b in broadcast)))
        engine, saved = self._engine(), self._engine().state
        words, taken = self._words(words_each * len(rows) + 8).tolist(), 0

        def uniform() -> float:  # uniform_real_distribution<double>: the low 53 bits of random64() times 2**-53
            nonlocal taken
            if taken + 2 > len(words):
                words.extend(self._words(len(words)).tolist())
            taken += 2
            return ((words[taken - 2] & 0x1FFFFF) << 32 | words[taken - 1]) * 2.0**-53

        def normal() -> float:  # normal_distribution<double>: Box-Muller on two uniforms, the sine cached
            if self._next_normal is not None:
                value, self._next_normal = self._next_normal, None
                return value
            u1, u2 = uniform(), uniform()
            radius, theta = math.sqrt(-2.0 * math.log1p(-u2)), 2.0 * math.pi * u1
            self._next_normal = radius * math.sin(theta)
            return radius * math.cos(theta)

        try:
            out = [sample(*row, uniform, normal) for row in rows]
        finally:
            engine.state = saved
            self._words(taken)
        return np.array(out, np.float64).reshape(broadcast[0].shape)

    def integers(self, low: int, high: int, shape: tuple) -> np.ndarray:
        """random_(low, high): random() % (high - low) + low, from random64() when the range is 2**28 or more."""
        span, n = high - low, math.prod(shape)
        words = self._words64(n) if span >= 1 << 28 else self._words(n)
        return ((words % np.uint64(span)) + np.uint64(low % 2**64)).view(np.int64).reshape(shape)

    def bits(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """random_() with no bounds: every value the dtype holds exactly, [0, 2**digits] for floats."""
        dtype, n = np.dtype(dtype), math.prod(shape)
        if dtype == np.bool_:
            return (self._words(n) & np.uint64(1)).astype(bool).reshape(shape)
        wide = dtype in (np.int64, np.float64)
        words = self._words64(n) if wide else self._words(n)
        modulus = 2 ** (np.finfo(dtype).nmant + 1) + 1 if dtype.kind == "f" else int(np.iinfo(dtype).max) + 1
        return (words % np.uint64(modulus)).astype(dtype).reshape(shape)

    def permutation(self, n: int) -> np.ndarray:
        """randperm(n): torch's Fisher-Yates shuffle, swapping i with i + random() % (n - i)."""
        offsets = (self._words(max(n - 1, 0)) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        order = list(range(n))
        for i, offset in enumerate(offsets):  # each swap depends on the ones before: no array form
            j = i + offset
            order[i], order[j] = order[j], order[i]
        return np.array(order, np.int64)

    def bernoulli(self, p: float | np.ndarray, shape: tuple) -> np.ndarray:
        """Booleans, True with probability p: a uniform below p, drawn in double for a number or a float64 p,
        in float32 for a float32 (or half) p array."""
        if not isinstance(p, np.ndarray):  # u < p for u = bits * 2**-53 is bits < ceil(p 2**53): no float pass
            bound, n = np.uint64(math.ceil(min(max(p, 0.0), 1.0) * 2.0**53)), math.prod(shape)
            out = np.empty(n, np.bool_)
            for start in range(0, n, _DRAW_BLOCK):  # the words a block at a time: no 8-byte array of n
                bits = self._words64(min(_DRAW_BLOCK, n - start))
                np.bitwise_and(bits, np.uint64(2**53 - 1), out=bits)
                np.less(bits, bound, out=out[start:start + _DRAW_BLOCK])
            return out.reshape(shape)
        single = p.dtype != np.float64
        u = self._unit(math.prod(shape), not single).reshape(shape)
        return u < (p.astype(np.float32) if single else p)

    def exponential(self, shape: tuple, lambd: float) -> np.ndarray:
        """exponential_(lambd) in float64: -1/lambd * log1p(-u)."""
        return (-1.0 / lambd) * S.libm(math.log1p, -self._unit(math.prod(shape), True)).reshape(shape)

    def log_normal(self, shape: tuple, mean: float, std: float) -> np.ndarray:
        """log_normal_(mean, std) in float64: exp of the scalar normal draws."""
        return S.libm(math.exp, self._scalar_normals(math.prod(shape), mean, std)).reshape(shape)

    def cauchy(self, shape: tuple, median: float, sigma: float) -> np.ndarray:
        """cauchy_(median, sigma) in float64: median + sigma * tan(pi * (u - 1/2))."""
        return median + sigma * S.libm(math.tan, np.pi * (self._unit(math.prod(shape), True) - 0.5)).reshape(shape)

    def geometric(self, shape: tuple, p: float) -> np.ndarray:
        """geometric_(p) in float64: ceil(log(u) / log1p(-p))."""
        return np.ceil(S.libm(math.log, self._unit(math.prod(shape), True)) / math.log1p(-p)).reshape(shape)


# Note [generator state]
# get_state gives torch's CPUGeneratorImplState, 5056 bytes: the initial seed (uint64), left and seeded (int32),
# next (uint64), the 624 mt19937 words each widened to uint64, three doubles of which the second holds the cached
# normal sample, its valid flag (int32 and padding), then the cached float sample and its flag. torch's `left`
# counts down to the next twist where NumPy's `pos` counts up (pos = 625 - left); torch's `next` is 0 right
# after seeding and equals pos otherwise, and a state whose first word is still the seed is read as just seeded.
# A state saved by torch sets retrograd's generator to the same stream, and the other way round.
_DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val: the seed of a new torch.Generator()
_MT_N = 624
_STATE_BYTES = 5056
_NORMAL_AT = 24 + 8 * _MT_N

# Note [random64 in one pass]
# torch's random64() is two mt19937 words, the first the high half. NumPy's Generator draws full-range uint64
# integers with MT19937's next_uint64, `(uint64_t)mt19937_next(state) << 32 | mt19937_next(state)`: the same two
# words in the same order when the compiler evaluates the left call first, and C leaves that order open. So the
# order is read once from a probe generator (on first use: numpy.random stays out of the import); where it
# holds, random64 values come from one `integers` call (one pass writing n values: 0.84 ms for 262,144 against
# 1.42 for `random_raw` of 2n words shifted and or-ed), otherwise from the raw words. Bernoulli draws
# (dropout) take them a block of _DRAW_BLOCK at a time, so no 8-byte-per-element temporary is made (at dropout's
# sizes a 4-8 MiB array, which glibc maps afresh and faults page by page every step once it lies above the mmap
# threshold).
_DRAW_BLOCK = 1 << 16


@functools.cache
def _next64_high_first() -> bool:
    """Whether NumPy's MT19937 next_uint64 puts its first word in the high half (Note [random64 in one pass])."""
    raw, whole = np.random.MT19937(0), np.random.Generator(np.random.MT19937(0))
    first, second = (int(w) for w in raw.random_raw(2))
    return int(whole.integers(0, 2**64 - 1, endpoint=True, dtype=np.uint64)) == first << 32 | second


def _os_seed() -> int:
    """A 64-bit seed from the OS's entropy, as torch's nondeterministic seed."""
    return int(np.random.SeedSequence().entropy % 2**64)


def _as_complex(parts: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """(*shape, 2) real and imaginary parts as a complex array of `dtype` and shape `shape`."""
    return parts.view(dtype)[..., 0]


default_generator = Generator()
default_generator._seed = None  # seeded from the OS on first use, as torch's default generator


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: draws then give torch's numbers for the same seed."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, torch's 5056-byte uint8 tensor (Note [generator state])."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)


RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                    "'different' randomness flags on vmap or perform the randomness operation out of vmap")
LEGACY_RANDOMNESS_ERROR = ("vmap: We do not yet support calling random operations inside of vmap. Please perform "
                           "random operations outside of vmap as a workaround")


def _torch_rng(generator: Generator | None) -> Generator:
    """The generator a draw uses (`generator` or the default one); every draw asks here, so inside a vmap
    level that refuses randomness (randomness='error', or torch's legacy _vmap) it raises torch's error."""
    for level in reversed(transforms.vmap):
        if level.randomness == "error":
            raise RuntimeError(RANDOMNESS_ERROR)
        if level.randomness == "legacy":
            raise RuntimeError(LEGACY_RANDOMNESS_ERROR)
    return generator or default_generator


def _rng(generator: Generator | None) -> np.random.Generator:
    """A NumPy generator on `generator`'s words, for draws whose torch arithmetic is not reproduced."""
    return _torch_rng(generator)._rng


def _new(data: np.ndarray) -> Tensor:
    """A factory's new tensor: an inference tensor inside inference mode (Note [inference tensors])."""
    t = _wrap(data)
    if grad_mode._state.inference:
        t._vc = NO_VERSION_COUNTER
    return t


def _finish(data: np.ndarray, requires_grad: bool, device: Any = None, pin_memory: bool = False) -> Tensor:
    """A factory's tensor around NumPy's `data`, copied to `device` when that is not the CPU. Pinned memory is an
    accelerator's allocator's, which torch refuses where it finds none, as here."""
    if pin_memory:
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator "
                           "is available on this system.")
    if requires_grad and D.kind(data) not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if device is None:  # the default device (Note [the default device]): None for the CPU
        device = DEFAULT_DEVICE[-1]
    t = _new(data if device is None or device is CPU else on_device(data, device))
    t._requires_grad = requires_grad
    return t


def _dataless(shape: tuple[int, ...], np_dtype: np.dtype, device: Any) -> Any:
    """A factory's array made from its shape and dtype alone where its device holds no data (meta: no host array of
    that size is made first, no random number drawn), else None."""
    device = DEFAULT_DEVICE[-1] if device is None else device  # Note [the default device]
    if device is None or device is CPU:
        return None
    where = placement(device)
    found = None if where[0] == "cpu" else _xp.backend(where[0])
    return None if found is None or found.has_data else found.xp.empty(shape, dtype=np_dtype)


def _shape(size: Sequence, function: str = "empty") -> tuple[int, ...]:
    """A factory's shape: f(2, 3), f((2, 3)), f([2, 3]) or f(torch.Size([2, 3])), none negative (`function`: the
    factory torch's TypeError names)."""
    out = as_sizes(size, function)
    if out and min(out) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {list(out)}")
    return out


def _np_dtype(dtype: D.dtype | None, default: D.dtype | None = None) -> np.dtype:
    """The NumPy dtype a factory makes its memory in (complex32's first memory warns, as torch's)."""
    if dtype is None:
        return (default or D.defaults.floating).np
    if dtype is D.complex32:
        D.warn_experimental_complex32()
    if isinstance(dtype, D.dtype):
        return dtype.np
    return D.from_numpy_dtype(np.dtype(dtype)).np


def _converted(array: np.ndarray, dtype: D.dtype | None, default: D.dtype | None = None) -> np.ndarray:
    """`array` as `dtype` (ours or NumPy's, None for `default` or the default float), complex32 too."""
    np_dtype = _np_dtype(dtype, default)
    return D.to_complex32(array) if np_dtype == D.NUMPY_COMPLEX32 else array.astype(np_dtype)


def _infer(data: Any, exact: bool = False) -> np.ndarray:
    """Nested Python data to an array with torch's dtypes (floats -> default, ints -> int64). With `exact`
    the caller casts to a dtype of its own, so Python numbers keep their full precision until then
    (tensor([0.3], dtype=float64) holds 0.3, not the float32 nearest to it)."""
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, np.ndarray):
        checked_array(data, aliased=False)
        return data.copy()
    typed, flat = [], []  # the values that count with a dtype of their own: NumPy scalars and arrays, tensors
    if isinstance(data, (list, tuple)):
        flat = _flat(data)
        typed = [v for v in flat if isinstance(v, (np.generic, np.ndarray, Tensor))]
        if any(isinstance(v, Tensor) for v in typed):
            data = _tensors_read(data)
        elif isinstance(first := _leading_sizes(data)[1], np.ndarray) and not first.ndim:  # a 0-d array first
            raise TypeError("len() of unsized object")
    try:
        arr = np.array(data)
    except ValueError:  # ragged
        arr = None
    if arr is None or arr.dtype.kind not in "biufc" or not exact and not typed and _beyond_int64(arr, flat):
        arr = _read_as_torch(data, infer=not exact)
    kind = arr.dtype.kind
    # torch's copy loop says it once per process for every array it meets (under set_warn_always, every time)
    for _ in range(sum(_arrays_met(v) for v in typed if isinstance(v, np.ndarray)) if arr.size else 0):
        warn_once_at_user("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider "
                          "converting the list to a single numpy.ndarray with numpy.array() before converting to a "
                          "tensor. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:252.)")
    if exact:
        return arr
    if typed:  # each NumPy scalar or array and each tensor counts with its own dtype, Python numbers with torch's
        return arr.astype(_inferred_dtype(flat).np)
    if kind == "f" and not _has_numpy_float(data):
        arr = arr.astype(D.defaults.floating.np)
    elif kind == "c" and not _has_numpy_float(data):
        arr = arr.astype(D.default_complex().np)
    elif kind in "iu" and arr.dtype != np.uint8 and not _has_numpy_float(data):
        arr = arr.astype(np.int64)
    if arr.size == 0 and kind == "f":
        arr = arr.astype(D.defaults.floating.np)
    return arr


# Note [data NumPy does not take]
# tensor() hands nested data to NumPy, which builds the array in one call. Where NumPy refuses (ragged lists),
# makes an array of objects or strings, or holds Python ints beyond int64 as uint64 or floats, the data is read
# again as torch reads it, for torch's error or its result: the sizes down the first items (a string is a
# sequence of itself, so too many dimensions), each value's dtype (nothing inferred from None, a dict, a set),
# then every sequence's length against those sizes and each number against the dtype (an int beyond int64
# overflows; a float beside it makes it a float). Nothing is read when a size is 0: torch makes the empty tensor.
_MAX_DIMS = 64


def _beyond_int64(arr: np.ndarray, flat: list) -> bool:
    """Whether NumPy held Python ints beyond int64 as uint64, or as floats beside other ints only (`flat`: the
    data's values, when it is nested)."""
    if arr.dtype.kind == "u":
        return True
    return arr.dtype.kind == "f" and not any(isinstance(v, float) for v in flat) and any(type(v) is int for v in flat)


def _is_sequence(value: Any, strings: bool = True) -> bool:
    """Whether torch reads `value` in nested data as a sequence: a list, tuple or array (not 0-d), and a string,
    which is a sequence of itself, where `strings` says so."""
    return isinstance(value, (list, tuple)) or isinstance(value, np.ndarray) and value.ndim > 0 or \
        strings and isinstance(value, (str, bytes))


def _read_as_torch(data: Any, infer: bool) -> np.ndarray:
    """Data NumPy does not take, read as torch reads it: torch's error, or its array (Note [data NumPy does not
    take]); `infer`: the dtype comes from the values (no dtype was given)."""
    if isinstance(data, (str, bytes)):  # a string given whole is a value of no dtype, not a sequence
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    sizes = _leading_sizes(data, strings=True)[0]
    dtype = _inferred_dtype(data) if infer else None
    if 0 in sizes:
        return np.zeros(sizes, (dtype or D.defaults.floating).np)
    _check_nesting(data, sizes, 0, dtype)
    return np.array(data, dtype=(dtype or D.float64).np)


def _inferred_dtype(value: Any) -> D.dtype:
    """torch's infer_scalar_type of nested data: its numbers' dtypes promoted (a tensor's, a NumPy value's and a
    Python number's torch default); a string or another object refused."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (np.generic, np.ndarray)):  # before the numbers: np.float64 is a float
        return D.from_numpy_dtype(value.dtype)
    if isinstance(value, (bool, int, float, complex)):
        return D.scalar_dtype(value)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(value).__name__}'")
    if isinstance(value, (list, tuple)):
        return functools.reduce(D.promote_types, map(_inferred_dtype, value)) if value else D.defaults.floating
    raise RuntimeError(f"Could not infer dtype of {type(value).__name__}")


def _check_nesting(value: Any, sizes: list, dim: int, dtype: D.dtype | None) -> None:
    """torch's checks as it copies nested data: a sequence of the size found at each dim, a number at the last."""
    if dim < len(sizes):
        if not _is_sequence(value):
            raise TypeError("not a sequence")
        if len(value) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(value)})")
        for item in value:
            _check_nesting(item, sizes, dim + 1, dtype)
        return
    integral = dtype is not None and dtype.category < 2
    if _is_sequence(value):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer" if integral else
                        f"must be real number, not {type(value).__name__}")
    if integral and type(value) is int and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")


def _arrays_met(array: np.ndarray) -> int:
    """How many arrays torch's copy loop meets in an array inside a list: the array, then its rows' arrays (its
    last dimension's items are NumPy scalars)."""
    return 1 + (array.shape[0] * _arrays_met(array[0]) if array.ndim >= 2 else 0)


def _flat(data: Any) -> list:
    out, stack = [], [data]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _leading_sizes(data: Any, strings: bool = False) -> tuple[list[int], Any]:
    """The sizes torch reads down nested data's first items, and the item where they end (a tensor is a value)."""
    sizes, item = [], data
    while _is_sequence(item, strings):
        sizes.append(len(item))
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(item).__name__}'")
        if not len(item):
            break
        item = item[0]
    return sizes, item


def _tensors_read(data: Any, depth: int | None = None) -> Any:
    """Nested data with its tensors read as torch reads them: a tensor where the dims (found down the first
    items) end is a number, its one element (torch's ValueError for more, its warning if it requires grad, as
    float(t) gives); a tensor above that depth is a sequence of its rows, as an array there is."""
    if depth is None:
        depth = len(_leading_sizes(data)[0])
    if isinstance(data, Tensor):
        if depth:
            return data._data.tolist()
        _warn_scalar_of_grad(data)
        return data._python_scalar()
    if isinstance(data, (list, tuple)) and depth:
        return [_tensors_read(v, depth - 1) for v in data]
    return data


def _has_numpy_float(data: Any) -> bool:
    return isinstance(data, np.generic)


def tensor(data: Any, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of `data` (floats are float32 by default, ints int64)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr = _infer(data, exact=dtype is not None)
    if dtype is not None and not isinstance(data, (Tensor, np.ndarray)):
        if arr.size and arr.dtype.kind == "f" and dtype.np.kind in "iu" and not _floats_fit(arr, dtype):
            arr = _infer(_floats_truncated(_tensors_read(data), dtype), exact=True)
        _check_numbers(arr, dtype)
    if dtype is not None:
        arr = _converted(arr, dtype)
    return _finish(np.ascontiguousarray(arr) if arr.ndim else arr.reshape(()), requires_grad, device, pin_memory)


def _check_numbers(arr: np.ndarray, dtype: D.dtype) -> None:
    """torch's checks of Python numbers made an integer dtype (Note [numbers out of a dtype's range] in _dtype.py):
    ints of its range (an unsigned dtype also takes negative ones whose magnitude fits: they wrap around), finite
    floats of its range; a uint64 takes non-negative ints only (Python's own conversion to unsigned)."""
    if dtype is D.uint64:
        if arr.dtype.kind == "f":
            raise TypeError("an integer is required")
        if arr.dtype.kind == "i" and (arr < 0).any():
            raise OverflowError("can't convert negative int to unsigned")
        return
    if not arr.size or dtype.np.kind not in "iu" or arr.dtype.kind not in "iuf":
        return
    info = np.iinfo(dtype.np)
    if arr.dtype.kind == "f":
        fits = _floats_fit(arr, dtype)
    elif dtype is D.int64:  # ints beyond int64 failed when the array was made
        fits = True
    else:
        fits = (-info.max if info.min == 0 else info.min) <= arr.min() and arr.max() <= info.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def _floats_fit(arr: np.ndarray, dtype: D.dtype) -> bool:
    """Whether every float of `arr` is finite and within the integer dtype's range."""
    info = np.iinfo(dtype.np)
    return bool(np.isfinite(arr).all() and info.min <= arr.min() and arr.max() <= info.max)


def _floats_truncated(data: Any, dtype: D.dtype) -> Any:
    """Nested numbers for an integer dtype with each float checked and truncated, ints kept: a list that mixes
    them reads as floats, but torch converts each number by its own type, so `-1` wraps in a uint8 while `-1.0`
    is out of range."""
    if isinstance(data, (list, tuple)):
        return [_floats_truncated(v, dtype) for v in data]
    if isinstance(data, (float, np.floating)):
        if not _floats_fit(np.array(data), dtype):
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        return int(data)
    return data


def as_tensor(data: Any, *, dtype: D.dtype | None = None, device: Any = None) -> Tensor:
    """Like tensor(), but shares memory with a tensor or NumPy array of the right dtype."""
    device = DEFAULT_DEVICE[-1] if device is None else device  # Note [the default device]
    if isinstance(data, Tensor):
        data = data if device is None else data.to(device)
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    if device is not None and placement(device) != ("cpu", None):
        return tensor(data, dtype=dtype, device=device)
    if isinstance(data, np.ndarray):
        checked_array(data, aliased=True)  # torch aliases it first, then casts
        if dtype is None or data.dtype == _np_dtype(dtype):
            return _new(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (changes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {argument_type_name(array)})")
    checked_array(array, aliased=True)
    mark_root(array)
    return _new(array)


# Note [factory events]
# torch's factories allocate, then fill in place: `aten::randn` holds `aten::empty` and `aten::normal_`, and a
# _like factory's allocation is `aten::empty_like` around `aten::empty_strided`. NumPy makes a filled array in
# one call, and that is what a factory runs while no profiler records. While one records, `_made` makes the
# array as torch does, each event around its own work: an empty array, then the values written into it.

_FILL_ARITY = {"zero_": 1, "fill_": 2, "uniform_": 4, "normal_": 4, "random_": 4}  # each fill's arguments, self first


def _made(shape: tuple, dtype: np.dtype, fill: str | None, values: Callable[[], np.ndarray]) -> np.ndarray:
    """The array `values()` makes (of `shape` and NumPy `dtype`), allocated and then filled by the in-place op
    `fill` (`"normal_"`; None: nothing to fill) while a profiler records (Note [factory events])."""
    profiler = transforms.profiler
    if profiler is None:
        return values()
    outer = profiler.innermost()
    allocation = ["aten::empty_like", "aten::empty_strided"] if outer.endswith("_like") else ["aten::empty"]
    if outer in allocation:  # empty() and empty_like() are the allocation's own events
        del allocation[:allocation.index(outer) + 1]
    shapes = profiler.record_shapes
    events = [profiler.begin(name, [list(shape) if name == "aten::empty_like" else []] + [[]] * 5 if shapes else None)
              for name in allocation]
    try:
        out = np.empty(shape, dtype)
    finally:
        if events:
            profiler.end(events[0])
    if fill is None:
        return out
    event = profiler.begin("aten::" + fill, [list(shape)] + [[]] * (_FILL_ARITY[fill] - 1) if shapes else None)
    try:
        out[...] = values()
    finally:
        profiler.end(event)
    return out


def _filled(fill: Any, size: Sequence, dtype: D.dtype | None, requires_grad: bool, default: D.dtype | None = None,
            device: Any = None, pin_memory: bool = False) -> Tensor:
    np_dtype, shape = _np_dtype(dtype, default), _shape(size)
    fill = D.checked(fill, np_dtype, halves=math.prod(shape) != 1)  # Note [numbers out of a dtype's range]
    if (data := _dataless(shape, np_dtype, device)) is not None:
        return _finish(data, requires_grad, device, pin_memory)
    if np_dtype == D.NUMPY_COMPLEX32:  # NumPy would write the number into both parts (Note [complex32])
        return _finish(D.to_complex32(np.full(shape, fill, np.complex64)), requires_grad, device, pin_memory)
    return _finish(_made(shape, np_dtype, "fill_", lambda: np.full(shape, fill, dtype=np_dtype)), requires_grad,
                   device, pin_memory)


def _size_by_keyword(factory: Callable) -> Callable:
    """torch's `f(*size, ...)` factories (zeros, ones, empty, rand, randn) also take the size as `size=`:
    `zeros(size=(2, 3))`, as torch's argument parser reads its `IntArrayRef size`."""
    name = factory.__name__

    @functools.wraps(factory)
    def taking_size(*size: Any, **options: Any) -> Tensor:
        if "size" in options:
            if size:
                raise TypeError(f"{name}() got multiple values for argument 'size'")
            size = (options.pop("size"),)
            if not isinstance(size[0], (tuple, list)):  # by name, one int is not a size (torch.Size is a tuple)
                raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {argument_type_name(size[0])}")
        return factory(*size, **options)

    return taking_size


@composite("aten::zeros")
@_size_by_keyword
def zeros(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None, pin_memory: bool = False) -> Tensor:
    shape, np_dtype = _shape(size, "zeros"), _np_dtype(dtype)
    data = _dataless(shape, np_dtype, device)
    return _finish(_made(shape, np_dtype, "zero_", lambda: np.zeros(shape, np_dtype)) if data is None else data,
                   requires_grad, device, pin_memory)


@composite("aten::ones")
@_size_by_keyword
def ones(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
         layout: Any = None, pin_memory: bool = False) -> Tensor:
    if dtype is D.complex32:  # NumPy would write 1 into both parts (Note [complex32])
        return _filled(1, size, dtype, requires_grad, device=device, pin_memory=pin_memory)
    shape, np_dtype = _shape(size, "ones"), _np_dtype(dtype)
    data = _dataless(shape, np_dtype, device)
    return _finish(_made(shape, np_dtype, "fill_", lambda: np.ones(shape, np_dtype)) if data is None else data,
                   requires_grad, device, pin_memory)


@composite("aten::empty")
@_size_by_keyword
def empty(*size: Any, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
          layout: Any = None, memory_format: Any = None, pin_memory: bool = False) -> Tensor:
    shape, np_dtype = _shape(size), _np_dtype(dtype)
    data = _dataless(shape, np_dtype, device)
    return _finish(np.empty(shape, dtype=np_dtype) if data is None else data, requires_grad, device, pin_memory)


@composite("aten::empty_strided")
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
    return _finish(data, requires_grad, device, pin_memory)


@composite("aten::empty_permuted")
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
    return empty_strided(shape, stride, dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory)


@composite("aten::scalar_tensor")
def scalar_tensor(s: Any, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A 0-d tensor of `s`, of the default floating dtype unless `dtype` is given (whatever the type of `s`)."""
    return _filled(s.item() if isinstance(s, Tensor) else s, (), dtype, requires_grad, device=device,
                   pin_memory=pin_memory)


def _triangle_indices(lower: bool) -> Any:
    """torch.tril_indices / triu_indices: the (row, column) coordinates of a row x col matrix's triangle, 2 x N."""
    name = "tril_indices" if lower else "triu_indices"

    def indices(row: int, col: int, offset: int = 0, *, dtype: D.dtype | None = None, device: Any = None,
                layout: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
        dtype = D.int64 if dtype is None else dtype
        if dtype.category > 1 or dtype in D.UNSIGNED_WIDE:
            raise NotImplementedError(f'"{name}" not implemented for \'{D.SCALAR_TYPE_NAMES[dtype.name]}\'')
        for what, n in (("row", row), ("col", col)):
            if n < 0:
                raise RuntimeError(f"{what} must be non-negative, got{n}")
        places = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
        return _finish(np.stack(places).astype(dtype.np, copy=False).reshape(2, -1), requires_grad, device, pin_memory)

    indices.__name__ = indices.__qualname__ = name
    indices.__doc__ = f"torch.{name}: the coordinates of the {'lower' if lower else 'upper'} triangle of a row x col " \
                      "matrix from diagonal `offset`, as a 2 x N tensor (rows, then columns)."
    return composite("aten::" + name)(indices)


tril_indices, triu_indices = _triangle_indices(True), _triangle_indices(False)


@composite("aten::full")
def full(size: Sequence[int], fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
         requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A tensor of `size` filled with fill_value (its dtype inferred from the value, as torch)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = D.scalar_dtype(fill_value) if dtype is None else None
    return _filled(fill_value, (size,) if not isinstance(size, int) else (size,), dtype, requires_grad, default,
                   device, pin_memory)


@composite("aten::eye")
def eye(n: int, m: int | None = None, *, dtype: D.dtype | None = None, device: Any = None,
        requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    D.refuse_unsigned("eye", dtype)
    D.refuse_complex32("eye", dtype)
    return _finish(np.eye(n, n if m is None else m, dtype=_np_dtype(dtype)), requires_grad, device, pin_memory)


@composite("aten::arange")
def arange(start: float, end: float | None = None, step: float = 1, *, dtype: D.dtype | None = None,
           device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Values start, start+step, ... below end; int64 when all arguments are integers."""
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end, step)]  # np.int64 is an int
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in values) else D.defaults.floating
    D.refuse_unsigned("arange_cpu", dtype)
    D.refuse_complex32("arange_cpu", dtype)
    n = max(int(np.ceil((values[1] - values[0]) / values[2])), 0)
    data = (values[0] + np.arange(n, dtype=np.float64 if dtype.category >= 2 else np.int64) * values[2])
    return _finish(data.astype(_np_dtype(dtype)), requires_grad, device, pin_memory)


def _bounds(name: str, start: Any, end: Any) -> tuple:
    """linspace/logspace's start and end as numbers: each may be a 0-d tensor (torch's Tensor overloads)."""
    for what, value in (("start", start), ("end", end)):
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {what} with "
                               f"{value.ndim} dimension(s).")
    return tuple(v.item() if isinstance(v, Tensor) else v for v in (start, end))


@composite("aten::linspace")
def linspace(start: float | Tensor, end: float | Tensor, steps: int, *, dtype: D.dtype | None = None,
             device: Any = None, requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    start, end = _bounds("linspace", start, end)
    D.refuse_unsigned("linspace_cpu", dtype)
    D.refuse_complex32("linspace_cpu", dtype if steps > 1 else None)  # one value or none: a fill
    np_dtype = _np_dtype(dtype)
    if np_dtype in (np.float32, np.float64) and not any(isinstance(v, complex) for v in (start, end)):
        return _finish(_linspace_in(start, end, steps, np_dtype), requires_grad, device, pin_memory)
    return _finish(_converted(np.linspace(start, end, steps, dtype=np.float64), dtype), requires_grad, device,
                   pin_memory)


# Note [linspace's rounding]
# torch's CPU linspace computes in the tensor's dtype: step = (end - start) / (steps - 1) rounded there, then the
# first half of the points counts up from start (start + step * i) and the second half down from end
# (end - step * (steps - 1 - i)), each a fused multiply-add, so both ends are exact. NumPy's float64 linspace
# rounded to float32 is one ulp off in about a third of the points (and float64's own differs in a few), which
# affine_grid's base grid, built on linspace, carries into every sampling coordinate.
def _linspace_in(start: float, end: float, steps: int, np_dtype: np.dtype) -> np.ndarray:
    """torch's float32 / float64 linspace values (Note [linspace's rounding])."""
    first, last = np_dtype.type(start), np_dtype.type(end)
    if steps <= 1:
        return np.full(steps, first, dtype=np_dtype)
    step = (last - first) / np_dtype.type(steps - 1)
    counts = np.arange(steps, dtype=np_dtype)
    half = steps // 2
    return np.concatenate([S.fma(counts[:half], step, first), S.fma(counts[steps - half - 1::-1], -step, last)])


@composite("aten::logspace")
def logspace(start: float | Tensor, end: float | Tensor, steps: int, base: float = 10.0, *,
             dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
    start, end = _bounds("logspace", start, end)
    D.refuse_unsigned("logspace_cpu", dtype)
    D.refuse_complex32("logspace_cpu", dtype if steps > 1 else None)
    return _finish(_converted(np.logspace(start, end, steps, base=base), dtype), requires_grad, device, pin_memory)


@composite("aten::rand")
@_size_by_keyword
def rand(*size: Any, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
         requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1) (torch's numbers for the same seed)."""
    D.refuse_integral("check_uniform_bounds", dtype)  # (checked before the kernel looks at the size)
    drawn = _device_draw("random", size, generator, dtype, device, requires_grad)
    if drawn is not None:
        return drawn
    rng, np_dtype = _torch_rng(generator), _np_dtype(dtype)
    return _per_example(_shape(size, "rand"), lambda shape: _finish(_made(
        shape, np_dtype, "uniform_", lambda: rng.uniform(shape, np_dtype)), requires_grad, device, pin_memory))


@composite("aten::randn")
@_size_by_keyword
def randn(*size: Any, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
          requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Standard normal samples (torch's numbers for the same seed)."""
    if math.prod(_shape(size, "randn")):  # torch's normal kernel leaves an empty tensor alone
        D.refuse_integral("normal_kernel_cpu", dtype)
    drawn = _device_draw("normal", size, generator, dtype, device, requires_grad)
    if drawn is not None:
        return drawn
    rng, np_dtype = _torch_rng(generator), _np_dtype(dtype)
    return _per_example(_shape(size, "randn"), lambda shape: _finish(_made(
        shape, np_dtype, "normal_", lambda: rng.normal(shape, np_dtype)), requires_grad, device, pin_memory))


# Note [random factories under vmap]
# As torch's batching rules for rand, randn and randint (and their _like forms): inside vmap(randomness='different')
# a factory draws one sample per example, the sizes of every running level whose randomness is 'different' leading
# the shape (outermost first), and answers it batched at those levels; 'same' draws one sample for all examples
# (an unbatched tensor); 'error' refuses (_torch_rng).
def _per_example(shape: tuple, draw: Callable[[tuple], Tensor]) -> Tensor:
    """draw(shape), or one draw per example inside vmap (Note [random factories under vmap]); dropout's masks too."""
    if not (transforms.vmap and any(level.randomness == "different" for level in transforms.vmap)):
        return draw(shape)
    return transforms.vmap[-1].draw_per_example(draw, shape)


def _device_draw(kind: str, size: Sequence, generator: Generator | None, dtype: D.dtype | None, device: Any,
                 requires_grad: bool) -> Tensor | None:
    """Samples drawn by a device's own generator (Note [random numbers on a device] in _xp.py), or None: on the
    CPU, with an explicit generator, or where the backend has none."""
    device = DEFAULT_DEVICE[-1] if device is None else device
    if device is None:
        return None
    where = placement(device)
    if where[0] == "cpu":
        return None
    found = _xp.backend(where[0])
    if generator is not None and found.has_data:  # an explicit generator draws on the host (meta draws nothing)
        return None
    _torch_rng(None)  # vmap's randomness checks
    drawn = found.draw(kind, _shape(size), _np_dtype(dtype), where[1])
    if drawn is None:
        return None
    t = _new(drawn)
    t._requires_grad = requires_grad
    return t


@composite("aten::randint")
def randint(low: int, high: int | Sequence[int] | None = None, size: Sequence[int] = (), *,
            generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
            requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """Integers uniform in [low, high) (int64 by default); `randint(high, size)` is torch's other
    overload, with low = 0."""
    if high is None or isinstance(high, Sequence):
        low, high, size = 0, low, size if high is None else high
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _shape((size,)) if not isinstance(size, int) else (size,)
    rng, np_dtype = _torch_rng(generator), _np_dtype(dtype, D.int64)
    if (data := _dataless(shape, np_dtype, device)) is not None:
        return _finish(data, requires_grad, device, pin_memory)
    return _per_example(shape, lambda shape: _finish(_made(
        shape, np_dtype, "random_", lambda: rng.integers(int(low), int(high), shape).astype(np_dtype)),
        requires_grad, device, pin_memory))


@composite("aten::randperm")
def randperm(n: int, *, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (torch's for the same seed)."""
    D.refuse_unsigned("randperm", dtype)
    if (data := _dataless((n,), _np_dtype(dtype, D.int64), device)) is not None:
        return _finish(data, requires_grad, device, pin_memory)
    return _finish(_torch_rng(generator).permutation(n).astype(_np_dtype(dtype, D.int64)), requires_grad, device,
                   pin_memory)


def _where(input: Tensor, device: Any) -> Any:
    """A `_like` factory's device: the one asked for, else input's (CPU, which _finish tests by identity, for NumPy's
    arrays), never the default device (Note [the default device])."""
    if device is not None:
        return device
    return CPU if type(input._data) is np.ndarray else input.device


def _like(fn: Any, numpy_fn: Any, fill: str | None) -> Any:
    """`fn`'s `_like` factory; `numpy_fn` (np.zeros, ...) makes the array itself for a NumPy input of one of
    NumPy's own dtypes (not bfloat16 nor complex32) when no dtype or device is asked for: the usual call, at
    a third of the checks, its in-place `fill` named for the profiler (Note [factory events])."""
    fn = fn.__wrapped__

    def like(input: Tensor, *, dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
             memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
        data = input._data
        if dtype is None and device is None and type(data) is np.ndarray and data.dtype.isbuiltin == 1:
            np_dtype = data.dtype
            return _laid_like(input, memory_format, lambda shape: _finish(
                _made(shape, np_dtype, fill, lambda: numpy_fn(shape, np_dtype)), requires_grad, CPU, pin_memory))
        return _laid_like(input, memory_format, lambda shape: fn(
            shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=_where(input, device),
            pin_memory=pin_memory))

    return _named_like(like, fn)


def _laid_like(input: Tensor, memory_format: Any, make: Callable[[tuple[int, ...]], Tensor]) -> Tensor:
    """make(shape) for a _like factory, laid out in memory as `memory_format` asks (preserve_format, the default,
    keeps a transposed input's layout, as torch's empty_like): made with its dims in that order, so that draws
    fill memory in torch's order, then its dims put back (the same leaf, its array a permuted view)."""
    order = like_order(input._data, memory_format)
    shape = tuple(input.shape)
    if order == tuple(range(len(shape))):
        return make(shape)
    out = make(tuple(shape[d] for d in order))
    out._data = out._data.transpose(tuple(int(d) for d in np.argsort(order)))
    return out


def _drawn_like(fn: Any) -> Any:
    """`fn`'s `_like` draw (rand_like, randn_like), from `generator` as torch's, laid out as the input (normal draws
    into a permuted layout by torch's scalar sampler: its vectorised normal_fill takes contiguous tensors only)."""
    fn = fn.__wrapped__

    def like(input: Tensor, *, generator: Generator | None = None, dtype: D.dtype | None = None, device: Any = None,
             requires_grad: bool = False, memory_format: Any = None, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
        dtype = dtype or input.dtype
        if fn is randn.__wrapped__ and device is None and type(input._data) is np.ndarray and \
                (dtype.is_floating_point or dtype.is_complex) and \
                like_order(input._data, memory_format) != tuple(range(input.ndim)):
            rng, np_dtype = _torch_rng(generator), _np_dtype(dtype)
            return _laid_like(input, memory_format, lambda shape: _finish(_made(
                shape, np_dtype, "normal_", lambda: rng.normal(shape, np_dtype, contiguous=False)), requires_grad,
                pin_memory=pin_memory))
        return _laid_like(input, memory_format, lambda shape: fn(
            shape, generator=generator, dtype=dtype, requires_grad=requires_grad, device=_where(input, device),
            pin_memory=pin_memory))

    return _named_like(like, fn)


def _named_like(like: Callable, fn: Callable) -> Callable:
    """`like` named and documented as `fn`'s _like factory, which a profiler records as torch's `aten::zeros_like`,
    not the `aten::zeros` it calls."""
    like.__name__ = like.__qualname__ = fn.__name__ + "_like"
    like.__doc__ = f"{fn.__name__}() with the shape (and by default the dtype) of `input`."
    return composite(f"aten::{like.__name__}")(like)


zeros_like = _like(zeros, np.zeros, "zero_")
ones_like = _like(ones, np.ones, "fill_")
empty_like = _like(empty, np.empty, None)
rand_like = _drawn_like(rand)
randn_like = _drawn_like(randn)


@composite("aten::full_like")
def full_like(input: Tensor, fill_value: Any, *, dtype: D.dtype | None = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None, layout: Any = None,
              pin_memory: bool = False) -> Tensor:
    return _laid_like(input, memory_format, lambda shape: full.__wrapped__(
        shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad, device=_where(input, device),
        pin_memory=pin_memory))


@composite("aten::randint_like")
def randint_like(input: Tensor, low: int, high: int | None = None, *, generator: Generator | None = None,
                 dtype: D.dtype | None = None, device: Any = None, requires_grad: bool = False,
                 memory_format: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    return _laid_like(input, memory_format, lambda shape: randint.__wrapped__(
        low, high, shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad,
        device=_where(input, device), pin_memory=pin_memory))


# ---- window functions --------------------------------------------------------------------------------------
# Note [window functions]
# torch.hann_window and its siblings are ATen factories (torch.signal.windows builds its own from public
# ops): a leaf computed as torch's kernels compute it, an arange of the window's dtype worked on in place one
# op at a time (in float32 for float16 and bfloat16, the value rounded to the dtype after each op and each
# number the op takes rounded to it before, which is why torch's float16 Hann window of 3 points ends in
# 0.7505), kaiser_window in one pass. A periodic
# window is the symmetric one of one point more, less its last.

def _window(name: str, length: Any, periodic: bool, dtype: D.dtype | None, layout: Any, device: Any,
            requires_grad: bool, pin_memory: bool, shape: Any) -> Tensor:
    """The window `shape(points, rounded, period)` computes, after torch's checks of the length and dtype."""
    if type(length) is not int:
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not {type(length).__name__}")
    dtype = dtype or D.defaults.floating
    if layout is not None and getattr(layout, "name", "strided") != "strided":
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {_options(dtype, requires_grad, layout)}")
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_options(dtype, requires_grad)}")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    if dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{D.scalar_type_name(dtype)}'")
    if length <= 1:
        return _finish(np.ones(length, dtype.np), requires_grad, device, pin_memory)
    points = length + 1 if periodic else length
    opmath = np.float64 if dtype is D.float64 else np.float32

    def rounded(values: np.ndarray | float) -> np.ndarray:
        """values (an op's result, or a number it takes) in the window's dtype, then back in the dtype its arithmetic
        runs in."""
        return np.asarray(values).astype(dtype.np).astype(opmath)

    window = shape(np.arange(points, dtype=opmath), rounded, points - 1)
    return _finish(window[:length].astype(dtype.np), requires_grad, device, pin_memory)


def _options(dtype: D.dtype, requires_grad: bool, layout: Any = None) -> str:
    """torch's printout of a factory's TensorOptions, as its window checks show them."""
    flag = "true" if requires_grad else "false (default)"
    shown = "Strided (default)" if layout is None or layout.name == "strided" else "Sparse"
    return (f"TensorOptions(dtype={D.CPP_TYPE_NAMES[dtype.name]}, device=cpu, layout={shown}, requires_grad={flag}, "
            "pinned_memory=false, memory_format=(nullopt))")


def _hamming(alpha: float, beta: float) -> Any:
    """The Hamming family's shape: alpha - beta cos(2 pi n / period), op by op as torch's kernel."""
    return lambda n, r, period: r(r(r(np.cos(r(n * r(2 * math.pi / period)))) * r(-beta)) + r(alpha))


def _blackman(n: np.ndarray, r: Any, period: int) -> np.ndarray:
    """0.42 - 0.5 cos(2 pi n / period) + 0.08 cos(4 pi n / period), op by op as torch's kernel."""
    angle = r(n * r(math.pi / period))
    return r(r(r(r(np.cos(r(angle * 4))) * r(0.08)) - r(r(np.cos(r(angle * 2))) * 0.5)) + r(0.42))


def _bartlett(n: np.ndarray, r: Any, period: int) -> np.ndarray:
    """The triangle 2n / period rising to the middle and 2 - 2n / period after it."""
    window = r(n * r(2.0 / period))
    half = period // 2 + 1
    window[half:] = r(-window[half:] + 2)
    return window


def _kaiser(beta: float) -> Any:
    """I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = period / 2, in one pass as torch's kernel."""
    return lambda n, r, period: np.i0(beta * np.sqrt(np.abs(1 - ((n - period / 2) / (period / 2)) ** 2))) / np.i0(beta)


@composite("aten::hamming_window")
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: D.dtype | None = None, layout: Any = None, device: Any = None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """alpha - beta cos(2 pi n / period) (Note [window functions])."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad, pin_memory,
                   _hamming(alpha, beta))


@composite("aten::hann_window")
def hann_window(window_length: int, periodic: bool = True, *, dtype: D.dtype | None = None, layout: Any = None,
                device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / period): the Hamming window with alpha = beta = 0.5 (Note [window functions])."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad, pin_memory,
                   _hamming(0.5, 0.5))


@composite("aten::blackman_window")
def blackman_window(window_length: int, periodic: bool = True, *, dtype: D.dtype | None = None, layout: Any = None,
                    device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / period) + 0.08 cos(4 pi n / period) (Note [window functions])."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, pin_memory,
                   _blackman)


@composite("aten::bartlett_window")
def bartlett_window(window_length: int, periodic: bool = True, *, dtype: D.dtype | None = None, layout: Any = None,
                    device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The triangular window, 0 at both ends of the period and 1 in its middle (Note [window functions])."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, pin_memory,
                   _bartlett)


@composite("aten::kaiser_window")
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: D.dtype | None = None,
                  layout: Any = None, device: Any = None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """The Kaiser window of shape parameter beta, through the Bessel function I0 (Note [window functions])."""
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, pin_memory,
                   _kaiser(beta))


# ---- asarray, frombuffer -----------------------------------------------------------------------------------

def frombuffer(buffer: Any, *, dtype: D.dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over an object's buffer (bytes, bytearray, array.array, mmap), sharing its memory; a read-only
    buffer (bytes) gives a tensor NumPy refuses to write to, where torch writes through it."""
    try:
        length = memoryview(buffer).nbytes
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         "bytes) minus 1")
    size = dtype.itemsize
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    if memoryview(buffer).readonly:
        warn_once_at_user("The given buffer is not writable, and PyTorch does not support non-writable tensors. "
                          "This means you can write to the underlying (supposedly non-writable) buffer using the "
                          "tensor. You may want to copy the buffer to protect its data or make it writable before "
                          "converting it to a tensor. This type of warning will be suppressed for the rest of this "
                          "program. (Triggered internally at "
                          "/__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:1556.)")
    return _finish(np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset), requires_grad)


def asarray(obj: Any, *, dtype: D.dtype | None = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """obj as a tensor, sharing its memory where it can: a tensor itself (cast or moved when dtype or device
    differ), a NumPy array's or a buffer's memory, else a copy of a sequence or number; copy=True always copies,
    copy=False refuses to."""
    if isinstance(obj, Tensor) or isinstance(obj, np.ndarray):
        given = obj.dtype if isinstance(obj, Tensor) else D.from_numpy_dtype(obj.dtype)
        if copy is False and dtype is not None and dtype is not given:
            raise ValueError(f"can't alias tensor with dtype '{D.scalar_type_name(given)}' into dtype "
                             f"'{D.scalar_type_name(dtype)}'.")
        result = obj if isinstance(obj, Tensor) else from_numpy(obj)
        if dtype is not None and dtype is not given or device is not None:
            result = result.to(device=device, dtype=dtype)
        if copy and result.data_ptr() == (obj.data_ptr() if isinstance(obj, Tensor) else obj.ctypes.data):
            result = result.clone()
    elif _has_buffer(obj) and not isinstance(obj, np.generic):
        result = frombuffer(obj, dtype=dtype or D.defaults.floating)
        result = result.clone() if copy else result
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        if result.dtype.category < 2:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        result.requires_grad_()
    return result


def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


# ---- DLPack and files ----------------------------------------------------------------------------------

def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of an object that speaks DLPack (a NumPy array, another library's tensor), or
    of a DLPack capsule (to_dlpack's)."""
    source = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
    result = from_numpy(np.from_dlpack(source, copy=copy))
    return result if device is None else result.to(device)


class _Capsule:
    """A DLPack capsule in the shape NumPy's from_dlpack takes: an object that hands it over."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return 1, 0  # kDLCPU


def to_dlpack(tensor: Tensor) -> Any:
    """The DLPack capsule of a tensor's elements (shared, not copied), whether it requires grad or not, as torch's."""
    return tensor._data.__dlpack__()


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype: D.dtype | None = None,
              layout: Any = None, device: Any = None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The first `size` elements of a file of raw elements: mapped into memory when shared (writes reach the file),
    else read into memory of their own."""
    np_dtype = _np_dtype(dtype)
    needed, have = size * np_dtype.itemsize, os.path.getsize(filename)
    if have < needed:
        raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size <{needed}>")
    if shared and size:
        data = np.memmap(filename, dtype=np_dtype, mode="r+", shape=(size,)).view(np.ndarray)  # a plain array
    else:
        data = np.fromfile(filename, dtype=np_dtype, count=size)
    return _finish(data, requires_grad, device)
