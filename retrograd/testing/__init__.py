"""torch.testing: make_tensor (random test inputs) and assert_close (comparison with torch's default
tolerances per dtype and its failure messages)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import _creation, empty, finfo, randint, view_as_real
from .. import _dtype as D
from .._tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

# (rtol, atol) torch uses when neither is given; exact for integers and booleans
_TOLERANCES = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
               "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}
_NUMBER_DTYPES = {float: D.float64, complex: D.complex128}  # Python numbers compare in double precision


def make_tensor(*shape: Any, dtype: D.dtype, device: Any = None, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of `shape` with values drawn uniformly from [low, high), by default [-9, 9) for floating dtypes
    (a complex one's parts drawn apart) and [-9, 10) for integers, clamped to the dtype's range. It draws as
    torch's does (randint, or uniform_ into an empty tensor) from the global generator, so the numbers and the
    generator's state after it are torch's; non-contiguous is every other element of a wider last dim."""
    size = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence) else tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    floating = dtype.category >= 2
    if requires_grad and not floating:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(size) > 1
    if noncontiguous:
        size = (*size[:-1], 2 * size[-1])
    if floating:
        info = finfo(dtype)
        low, high = _bounds(dtype, low, high, info.min, info.max, -9, 9)
        result = empty(size, dtype=dtype, device=device)
        drawn = view_as_real(result) if dtype.category == 3 else result  # a complex one's parts interleaved
        if high - low >= info.max:  # uniform_ takes a range up to the dtype's max: drawn at half scale
            drawn.uniform_(low / 2, high / 2).mul_(2)
        else:
            drawn.uniform_(low, high)
    else:
        limits = (0, 2, 0, 2) if dtype is D.bool_ else (*_integer_limits(dtype), -9, 10)
        low, high = _bounds(dtype, low, high, *limits)
        result = randint(low, high, size, dtype=dtype, device=device)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if not floating else finfo(dtype).tiny
    if floating:
        result.requires_grad = requires_grad
    return result


def _integer_limits(dtype: D.dtype) -> tuple[int, int]:
    """[lowest, highest + 1) of an integer dtype; int64's highest itself, as torch's make_tensor takes it."""
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max) + (dtype is not D.int64)


def _bounds(dtype: D.dtype, low: float | None, high: float | None, lowest: float, highest: float,
            default_low: float, default_high: float) -> tuple[float, float]:
    """make_tensor's [low, high): the defaults for None, torch's checks and warning, clamped to the dtype's range
    and rounded up to integers for integer and bool dtypes."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype.category >= 2:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                      "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                      FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (math.ceil(low), math.ceil(high)) if dtype.category < 2 else (low, high)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless actual and expected (tensors, numbers, or sequences and mappings of
    them) are close: |actual - expected| <= atol + rtol * |expected| elementwise, with torch's defaults
    per dtype, after checking shape, dtype (if check_dtype) and strides (if check_stride)."""
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    failure = _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_stride, ())
    if failure is not None:
        text, path = failure
        if path:
            text += f"\n\nThe failure occurred for item {''.join(f'[{p!r}]' for p in path)}"
        raise AssertionError(msg(text) if callable(msg) else msg if msg is not None else text)


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool, check_dtype: bool,
             check_stride: bool, path: tuple) -> tuple[str, tuple] | None:
    """The failure message and where it occurred, or None when actual and expected are close."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if set(actual) != set(expected):
            return (f"The keys of the mappings do not match:\n{sorted(map(repr, actual))}\n"
                    f"{sorted(map(repr, expected))}"), path
        for key in expected:
            failure = _compare(actual[key], expected[key], rtol, atol, equal_nan, check_dtype, check_stride,
                               path + (key,))
            if failure is not None:
                return failure
        return None
    if isinstance(expected, Sequence) and not isinstance(expected, str) and isinstance(actual, Sequence):
        if len(actual) != len(expected):
            return f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path
        for i, (a, e) in enumerate(zip(actual, expected)):
            failure = _compare(a, e, rtol, atol, equal_nan, check_dtype, check_stride, path + (i,))
            if failure is not None:
                return failure
        return None
    a, e = (v if isinstance(v, Tensor) else _creation.tensor(v, dtype=_NUMBER_DTYPES.get(type(v)))
            for v in (actual, expected))
    for attribute, mine, theirs in (("shape", a.shape, e.shape), ("dtype", a.dtype, e.dtype)):
        if mine != theirs and (attribute == "shape" or check_dtype):
            return f"The values for attribute '{attribute}' do not match: {mine} != {theirs}.", path
    if check_stride and a.stride() != e.stride():
        return f"The values for attribute 'stride()' do not match: {a.stride()} != {e.stride()}.", path
    rt, at = (rtol, atol) if rtol is not None else _TOLERANCES.get(D.promote_types(a.dtype, e.dtype).name, (0.0, 0.0))
    mismatch = _mismatches(a._data, e._data, rt, at, equal_nan)
    if not mismatch.any():
        return None
    return _describe(a._data, e._data, mismatch, rt, at), path


def _mismatches(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    wide = np.complex128 if "c" in (actual.dtype.kind, expected.dtype.kind) else np.float64
    a, e = actual.astype(wide), expected.astype(wide)
    with np.errstate(all="ignore"):
        close = (a == e) | (np.abs(a - e) <= atol + rtol * np.abs(e))
    if equal_nan:
        close |= np.isnan(a) & np.isnan(e)
    return ~close


def _describe(actual: np.ndarray, expected: np.ndarray, mismatch: np.ndarray, rtol: float, atol: float) -> str:
    """torch's failure message: the greatest differences (computed in the inputs' floating dtype, the
    default one for integers) and where they are."""
    exact = rtol == 0 and atol == 0
    wide = np.result_type(actual, expected)
    if wide.kind not in "fc":
        wide = D.defaults.floating.np
    a, e = actual.astype(wide), expected.astype(wide)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        rel_diff = abs_diff / np.abs(e)
    integral = actual.dtype.kind in "iub" and expected.dtype.kind in "iub"

    def number(v: float) -> str:
        return str(int(v)) if integral and math.isfinite(v) else str(float(v))

    allowed = (lambda tol: "") if exact else (lambda tol: f" (up to {tol} allowed)")
    what = "equal" if exact else "close"
    if actual.ndim == 0:
        return (f"Scalars are not {what}!\n\nExpected {expected.item()} but got {actual.item()}.\n"
                f"Absolute difference: {number(abs_diff.item())}{allowed(atol)}\n"
                f"Relative difference: {float(rel_diff.item())}{allowed(rtol)}")
    lines = [f"Tensor-likes are not {what}!", "", f"Mismatched elements: {int(mismatch.sum())} / {mismatch.size} "
             f"({np.floor(mismatch.mean() * 1000) / 10}%)"]
    for label, diff, tol, fmt in (("absolute", abs_diff, atol, number), ("relative", rel_diff, rtol, float)):
        masked = np.where(mismatch, np.nan_to_num(diff, nan=-1.0, posinf=np.inf), -np.inf)
        where = np.unravel_index(int(np.argmax(masked)), diff.shape) if diff.ndim else ()
        value = diff[where] if diff.ndim else diff.item()
        place = f" at index {tuple(int(i) for i in where)}" if diff.ndim else ""
        lines.append(f"Greatest {label} difference: {fmt(value)}{place}{allowed(tol)}")
    return "\n".join(lines)
