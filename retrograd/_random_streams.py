"""torch's CPU sampling arithmetic in NumPy: how ATen turns raw 32-bit Mersenne Twister words into
uniform, normal, integer and gamma samples (Note [torch's CPU random streams]). Pure functions of arrays (and
`sample_gamma`, of one alpha and two samplers); the generator that owns the words is `_creation.Generator`."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

# Note [torch's CPU random streams]
# torch's CPU generator is a 32-bit mt19937 seeded with init_genrand(seed mod 2**32); NumPy's MT19937 under
# legacy seeding (RandomState's) produces the same raw words, so retrograd's Generator holds one and draws a
# whole tensor's words in one `random_raw` call. ATen (core/TransformationHelper.h, core/DistributionsHelper.h,
# native/cpu/DistributionTemplates.h) turns words into values, one element after another in memory order; the
# functions here do the same arithmetic on whole arrays:
# - `random()` is one word, `random64()` two (the first is the high half).
# - uniform: float32 takes the low 24 bits of one word times 2**-24, float64 the low 53 bits of a random64 times
#   2**-53; the value is x * (to - from) + from, which the compiler fuses into one fma (`fma` here), in float32
#   for float32 (and half) tensors.
# - normal on a contiguous tensor of 16 or more elements (normal_fill): draw a uniform per element, then
#   Box-Muller on each block of 16 (the first 8 give the radius from log(1 - u), the last 8 the angle); when
#   the size is not a multiple of 16 the last 16 elements are drawn again and transformed as one more block.
#   For float32 on x86 builds with AVX2 (AVX-512 included) the block runs avx_mathfun's Cephes polynomials in
#   float32 with fused multiply-adds (`_log_ps`, `_sincos_ps`): reproduced operation by operation, they give
#   torch's floats bit for bit. float64 uses the C library's log, sin and cos (Note [float64 draws through the C
#   library]).
# - normal below 16 elements (or non-contiguous) is the scalar Box-Muller in double: each pair of uniforms
#   gives r cos(theta), and r sin(theta) is cached in the generator for the next scalar draw (it is part of the
#   state, as torch's `next_double_normal_sample`).
# - integers in [from, to): random() % range + from, or random64() when range >= 2**28; randperm is a Fisher-Yates
#   shuffle driven by random() % (n - i).
# - bernoulli(p) compares a uniform with p (double for a number p or a float64 p tensor, float for others).
#   torch on an Intel CPU with MKL draws bernoulli_(p) for a number p from MKL's own MCG31 stream instead (seeded
#   by one random()); retrograd follows the generic path that torch takes elsewhere (AMD, ARM). Dropout is
#   bernoulli_(1 - p) on empty_like(input), divided by 1 - p: the mask keeps a permuted input's layout, so it
#   is drawn in the input's memory order.
# - exponential_, cauchy_, geometric_ and log_normal_ transform one double uniform (log_normal_ one scalar normal)
#   per element; multinomial searches a double uniform per sample in the row's cumulative sums with replacement,
#   and otherwise takes the largest p / q for q drawn by exponential_.
# - _standard_gamma (and _sample_dirichlet, on float64 draws) runs `sample_gamma` on each element in turn:
#   Marsaglia and Tsang's rejection on double uniforms (random64) and scalar double normals (the cached sine
#   shared), alpha below 1 boosted by one more uniform, so a draw takes a varying number of words (`sample_gamma`).
# - poisson and binomial run `sample_poisson` and `sample_binomial` on each element in turn the same way (Hörmann's
#   transformed rejections on pairs of double uniforms, or a product of uniforms, or sums of geometric draws).
# - Kernels outside native/cpu (rrelu's, gamma's) are compiled without fma, so their multiply-add rounds twice.
# - A serial kernel walks a strided tensor in memory order, so in-place samplers on a transposed view draw in
#   that order (ops/random.py `_in_place`).

_F32, _F64 = np.float32, np.float64

# Note [float64 draws through the C library]
# torch's samplers transform double uniforms with the C library's log, log1p, exp, tan, sin and cos. NumPy's own
# float64 loops give the C library's results on x86-64 baseline and AVX2 (X86_V3) builds, but its AVX-512 (X86_V4)
# log, log1p, exp and tan are other implementations: an ulp away in 0.4% (log) to 7% (log1p) of random inputs,
# so a float64 randn or exponential_ differed from torch's in those elements on AVX-512 hosts. `libm` maps those
# four over the elements with `math`'s functions, which are the C library's: exact on every host, at some tens of
# ns an element. sin and cos agreed on all of 10^6 random angles at every level, and stay NumPy's.


def libm(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """fn, one of `math`'s functions (the C library's), of each element of the float64 array x (Note [float64
    draws through the C library]); where `math` raises (log(0), exp past the range), NumPy's inf or NaN."""
    values = x.ravel().tolist()
    try:
        return np.fromiter(map(fn, values), np.float64, x.size).reshape(x.shape)
    except (ValueError, OverflowError):
        numpy_fn = getattr(np, fn.__name__)
        with np.errstate(all="ignore"):
            return np.array([_or_numpy(fn, numpy_fn, v) for v in values], np.float64).reshape(x.shape)


def _or_numpy(fn: Callable[[float], float], numpy_fn: Any, value: float) -> float:
    try:
        return fn(value)
    except (ValueError, OverflowError):
        return float(numpy_fn(value))


def fma(a: Any, b: Any, c: Any, xp: Any = np) -> Any:
    """a * b + c rounded once, in a's dtype (a float dtype), as a fused multiply-add gives; b and c arrays or
    numbers, the arrays of namespace `xp` (grid_sample's kernel rounds so too, ops/conv.py)."""
    if a.dtype != xp.float64:  # the float64 product of two narrower values is exact; the sum is rounded once
        total = xp.astype(a, xp.float64)
        total *= _wide(b, xp)
        total += _wide(c, xp)
        return xp.astype(total, a.dtype)
    b, c = _wide(b, xp), _wide(c, xp)
    product = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    product_error = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo  # Dekker: exact
    total = product + c
    total_error = (product - (total - (total - product))) + (c - (total - product))  # Knuth's two-sum
    return total + (total_error + product_error)


def _wide(value: Any, xp: Any) -> Any:
    """An array as float64, a number (a NumPy scalar too) as a Python float: float64 arithmetic either way."""
    return xp.astype(value, xp.float64, copy=False) if getattr(value, "ndim", 0) else float(value)


def _split(x: Any) -> tuple[Any, Any]:
    """Veltkamp's split of float64 x into two halves of 26 bits whose product terms are exact."""
    scaled = x * 134217729.0
    high = scaled - (scaled - x)
    return high, x - high


def unit_float32(words: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) float32 from 32-bit words: the low 24 bits times 2**-24."""
    return (words & np.uint64(0xFFFFFF)).astype(_F32) * _F32(2.0**-24)


def unit_float64(words64: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) float64 from 64-bit words: the low 53 bits times 2**-53."""
    return (words64 & np.uint64(2**53 - 1)).astype(_F64) * 2.0**-53


_LOG_COEFFICIENTS = [_F32(v) for v in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                       1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                       3.3333331174e-1)]


def _log_ps(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's log256_ps for positive float32 x (Cephes: exponent and a degree-8 polynomial)."""
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    mantissa = ((bits & ~0x7F800000) | np.int32(0x3F000000)).view(_F32)  # in [0.5, 1)
    small = mantissa < _F32(0.707106781186547524)
    exponent = exponent - small.astype(_F32)
    m = (mantissa - _F32(1)) + np.where(small, mantissa, _F32(0))
    z = m * m
    m_wide = m.astype(_F64)  # each fma's multiplier, widened once
    y = np.full_like(m, _LOG_COEFFICIENTS[0])
    for coefficient in _LOG_COEFFICIENTS[1:]:
        y = fma(y, m_wide, coefficient)
    y = fma(y * m, z.astype(_F64), exponent * _F32(-2.12194440e-4))
    y = y - z * _F32(0.5)
    return fma(exponent, _F32(0.693359375), m + y)


def _sincos_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's sincos256_ps for non-negative float32 x (Cephes: reduce by pi/4, two polynomials)."""
    octant = ((x * _F32(1.27323954473516)).astype(np.int32) + 1) & ~1
    y = octant.astype(_F32)
    for step in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):  # x - y * pi/4, in three parts
        x = fma(y, _F32(step), x)
    z = x * x
    z_wide = z.astype(_F64)  # each fma's multiplier, widened once
    cosine = fma(fma(np.full_like(z, _F32(2.443315711809948e-5)), z_wide, _F32(-1.388731625493765e-3)), z_wide,
                 _F32(4.166664568298827e-2))
    cosine = fma(cosine * z, z_wide, -(z * _F32(0.5))) + _F32(1)
    sine = fma(np.full_like(z, _F32(-1.9515295891e-4)), z_wide, _F32(8.3321608736e-3))
    sine = fma(fma(sine, z_wide, _F32(-1.6666654611e-1)) * z, x, x)
    first = (octant & 2) == 0
    sin, cos = np.where(first, sine, cosine), np.where(first, cosine, sine)
    return np.where(octant & 4, -sin, sin), np.where(~(octant - 2) & 4, -cos, cos)


_CHUNK = 1 << 15  # elements transformed at a time: the temporaries stay in cache


def box_muller_blocks(uniform: np.ndarray, mean: float, std: float) -> np.ndarray:
    """normal_fill's transform of uniforms in blocks of 16 (8 radii, 8 angles), in uniform's dtype."""
    if uniform.size <= _CHUNK:
        return _box_muller_chunk(uniform, mean, std)
    return np.concatenate([_box_muller_chunk(uniform[i:i + _CHUNK], mean, std)
                           for i in range(0, uniform.size, _CHUNK)])


def _box_muller_chunk(uniform: np.ndarray, mean: float, std: float) -> np.ndarray:
    dtype = uniform.dtype.type
    blocks = uniform.reshape(-1, 2, 8)
    u1, u2 = dtype(1) - blocks[:, 0], blocks[:, 1]
    if dtype is _F32:
        radius = np.sqrt(_F32(-2) * _log_ps(u1))
        sin, cos = _sincos_ps(_F32(2.0 * np.pi) * u2)
    else:
        radius = np.sqrt(-2 * libm(math.log, u1))
        theta = 2.0 * np.pi * u2
        sin, cos = np.sin(theta), np.cos(theta)
    pairs = np.stack([radius * cos, radius * sin], axis=1).reshape(-1)
    return pairs if (mean, std) == (0, 1) else fma(pairs, dtype(std), dtype(mean))


_THIRD_F, _SQUEEZE_F = float(_F32(1.0) / _F32(3.0)), float(_F32(0.0331))  # the C++ source's 1.0f / 3.0f, 0.0331f
_TINY_F, _TINY_D = float(np.finfo(_F32).tiny), float(np.finfo(_F64).tiny)


def sample_gamma(alpha: float, single: bool, uniform: Callable[[], float], normal: Callable[[], float]) -> float:
    """One Gamma(alpha, 1) draw as ATen's `sample_gamma` makes it (native/Distributions.h): Marsaglia and Tsang's
    rejection from double uniforms and normals, alpha below 1 boosted by one uniform. alpha's own arithmetic is in
    float32 when `single` (a float tensor's scalar_t), the rest in double, and the result is at least the dtype's
    tiny (so a NaN or negative alpha gives tiny, as torch's `std::max` does). Python's math is libm's, as torch's."""
    rounded = (lambda v: float(_F32(v))) if single else float
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return _TINY_F if single else _TINY_D
        try:
            scale *= math.pow(1.0 - uniform(), rounded(1.0 / alpha))
        except OverflowError:
            scale = math.inf
        alpha = rounded(alpha + 1.0)
    d = rounded(alpha - _THIRD_F)
    c = 1.0 / math.sqrt(9.0 * d) if d > 0 else (math.inf if d == 0 else math.nan)
    while True:
        x = normal()
        y = 1.0 + c * x
        while y <= 0:
            x = normal()
            y = 1.0 + c * x
        v = y * y * y
        u = 1.0 - uniform()
        xx = x * x
        log_v = math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)
        if u < 1.0 - _SQUEEZE_F * xx * xx or math.log(u) < 0.5 * xx + d * (1.0 - v + log_v):
            sample = rounded(scale * d * v)
            tiny = _TINY_F if single else _TINY_D
            return sample if tiny < sample else tiny


def _floor_int64(value: float) -> int:
    """C's (int64_t) floor(value) on x86: out of range, infinite or NaN gives INT64_MIN (cvttsd2si)."""
    return math.floor(value) if -(2.0**63) <= value < 2.0**63 else -(2**63)


def sample_poisson(rate: float, uniform: Callable[[], float]) -> int:
    """One Poisson(rate) draw as ATen's `sample_poisson` makes it (native/Distributions.cpp, NumPy's legacy
    algorithms): from rate 10 Hörmann's transformed rejection (PTRS) on pairs of double uniforms, below it the
    product of uniforms until it falls to exp(-rate). A negative or NaN rate raises torch's error."""
    if not rate >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if rate == 0:
        return 0
    if rate < 10:
        count, product, floor = 0, 1.0, math.exp(-rate)
        while True:
            product *= uniform()
            if product <= floor:
                return count
            count += 1
    root, log_rate = math.sqrt(rate), math.log(rate)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        if us == 0:  # u = -1/2: C divides by zero into k = INT64_MIN, which the tests below reject
            continue
        k = _floor_int64((2 * a / us + b) * u + rate + 0.43)
        if us >= 0.07 and v <= vr:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if _c_log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b) <= -rate + k * log_rate - math.lgamma(k + 1.0):
            return k


_STIRLING_TAILS = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                   0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                   0.00925546218271273, 0.00833056343336287)


def _c_log(x: float) -> float:
    """C's log: -inf at 0 and nan below, where Python's raises."""
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _stirling_approx_tail(k: float) -> float:
    """log k! less Stirling's approximation: a table to 9, its series beyond."""
    if k <= 9:
        return _STIRLING_TAILS[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def sample_binomial(count: float, prob: float, single: bool, uniform: Callable[[], float]) -> float:
    """One Binomial(count, prob) draw as ATen's `sample_binomial` makes it (native/Distributions.h, after
    TensorFlow's): for the smaller of prob and 1 - prob, Hörmann's BTRS when count times it is 10 or more, else
    inversion by sums of geometric draws; double uniforms, the parameters' own arithmetic in float32 when `single`
    (a float tensor's scalar_t), as torch rounds it."""
    rounded = _rounding(single)
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if rounded(count * prob) >= 10.0:
            return _btrs(count, prob, single, uniform)
        return _binomial_inversion(count, prob, rounded, uniform)
    if prob > 0.5:
        q = rounded(1.0 - prob)
        if rounded(count * q) >= 10.0:
            return rounded(count - _btrs(count, q, single, uniform))
        return rounded(count - _binomial_inversion(count, q, rounded, uniform))
    return math.nan


def _binomial_inversion(count: float, prob: float, rounded: Callable, uniform: Callable[[], float]) -> float:
    """The number of geometric(prob) waiting times that fit in count trials."""
    geom_sum, num_geom = 0.0, 0.0
    logprob = rounded(math.log1p(-prob))
    while True:
        geom = _c_log(uniform()) / logprob
        geom_sum += math.ceil(geom) if math.isfinite(geom) else geom
        if geom_sum > count:
            return num_geom
        num_geom = rounded(num_geom + 1)


@functools.lru_cache(maxsize=64)
def _btrs_constants(count: float, prob: float, single: bool) -> tuple:
    """BTRS's constants for one (count, prob), computed once for the many draws that usually share them."""
    rounded = _rounding(single)
    stddev = rounded(math.sqrt(rounded(rounded(count * prob) * rounded(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = rounded(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = rounded(prob / rounded(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(rounded(rounded(count + 1) * prob))
    mode_term = (m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
    return (b, a, c, v_r, r, alpha, m, mode_term, rounded(count + 1), _stirling_approx_tail(m),
            _stirling_approx_tail(count - m))


def _btrs(count: float, prob: float, single: bool, uniform: Callable[[], float]) -> float:
    """Hörmann's transformed rejection with squeeze (BTRS) as torch writes it, the log of the ratio included."""
    b, a, c, v_r, r, alpha, m, mode_term, count_plus_one, tail_m, tail_rest = _btrs_constants(count, prob, single)
    # float32 arithmetic on whole numbers below 2**24 is exact, so only a fractional or huge count needs rounding
    rounded = _rounding(single and not (count.is_integer() and count < 2**24))
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        if us == 0:  # u = -1/2: C divides by zero into k = -inf, rejected
            continue
        k = rounded(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        left = rounded(count - k)  # scalar_t arithmetic
        bound = (mode_term + count_plus_one * math.log((count - m + 1) / rounded(left + 1))
                 + (k + 0.5) * math.log(r * rounded(left + 1) / rounded(k + 1))
                 + tail_m + tail_rest - _stirling_approx_tail(k) - _stirling_approx_tail(left))
        if _c_log(v * alpha / (a / (us * us) + b)) <= bound:
            return k


def _rounding(single: bool) -> Callable[[float], float]:
    """Rounding to a float tensor's scalar_t (float32) when `single`, else nothing (double)."""
    return (lambda v: float(_F32(v))) if single else float


def box_muller_pairs(u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """normal_distribution<double>'s scalar transform: r cos(theta), r sin(theta) for each pair, interleaved."""
    radius = np.sqrt(-2.0 * libm(math.log1p, -u2))
    theta = 2.0 * np.pi * u1
    return np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1).reshape(-1)
