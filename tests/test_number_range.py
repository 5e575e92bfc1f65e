"""Python numbers beyond a tensor's dtype (Note [numbers out of a dtype's range] in retrograd/_dtype.py) against
torch: arithmetic wraps an int operand around as C++ casts it; fills, bounds and other number arguments raise
torch's "value cannot be converted" error unless the number fits (a float16 or bfloat16 fill of one element is
not checked); tensor() checks each number it is given by its own type."""

from __future__ import annotations

import pytest
import torch
from dtype_sweep import assert_same_outcome, outcome

import retrograd

INTEGER = ("uint8", "int8", "int16", "int32", "int64")
NUMBERS = (300, -1, -129, 2**40, 70000, 1.0e10, -1.0, float("nan"), float("inf"), 2.5)


def _zeros(lib, dtype: str):
    return lib.zeros(4, dtype=getattr(lib, dtype))


def _mask(lib):
    return lib.tensor([True, False, True, False])


CASES = {  # each takes a library, a dtype name and a number
    "add": lambda lib, dt, v: _zeros(lib, dt) + v,
    "sub": lambda lib, dt, v: _zeros(lib, dt) - v,
    "rsub": lambda lib, dt, v: v - _zeros(lib, dt),
    "mul": lambda lib, dt, v: (_zeros(lib, dt) + 3) * v,
    "add_": lambda lib, dt, v: _zeros(lib, dt).add_(v),
    "remainder": lambda lib, dt, v: (_zeros(lib, dt) + 7) % v,
    "bitwise_and": lambda lib, dt, v: (_zeros(lib, dt) + 7) & v,
    "bitwise_xor": lambda lib, dt, v: (_zeros(lib, dt) + 7) ^ v,
    "fill_": lambda lib, dt, v: _zeros(lib, dt).fill_(v),
    "full": lambda lib, dt, v: lib.full((3,), v, dtype=getattr(lib, dt)),
    "new_full": lambda lib, dt, v: _zeros(lib, dt).new_full((2,), v),
    "masked_fill": lambda lib, dt, v: _zeros(lib, dt).masked_fill(_mask(lib), v),
    "where": lambda lib, dt, v: lib.where(_mask(lib), _zeros(lib, dt), v),
    "clamp": lambda lib, dt, v: _zeros(lib, dt).clamp(max=v),
    "index_fill": lambda lib, dt, v: _zeros(lib, dt).index_fill(0, lib.tensor([1]), v),
    "scatter value": lambda lib, dt, v: _zeros(lib, dt).scatter(0, lib.tensor([1]), v),
    "alpha": lambda lib, dt, v: lib.add(_zeros(lib, dt), _zeros(lib, dt), alpha=v),
    "setitem slice": lambda lib, dt, v: _zeros(lib, dt).__setitem__(slice(1, None), v),
    "setitem index": lambda lib, dt, v: _zeros(lib, dt).__setitem__(lib.tensor([1]), v),
    "tensor": lambda lib, dt, v: lib.tensor([1, v], dtype=getattr(lib, dt)),
    "0-d tensor": lambda lib, dt, v: lib.tensor(v, dtype=getattr(lib, dt)),
    "mixed tensor": lambda lib, dt, v: lib.tensor([[2.5], [v]], dtype=getattr(lib, dt)),  # each by its own type
    "fill_ one element": lambda lib, dt, v: lib.zeros(1, dtype=getattr(lib, dt)).fill_(v),
    "full one element": lambda lib, dt, v: lib.full((), v, dtype=getattr(lib, dt)),
}


def _run(case: str, lib, dt: str, v: object):
    result = CASES[case](lib, dt, v)
    return "set" if result is None else result


@pytest.mark.parametrize("dt", INTEGER)
@pytest.mark.parametrize("case", CASES)
def test_integer_dtypes_take_numbers_as_torch_does(case, dt):
    for v in NUMBERS:
        if type(v) is float and case in ("bitwise_and", "bitwise_xor", "remainder", "alpha", "mul", "add", "sub",
                                         "rsub", "add_"):
            continue  # a float operand makes the result float: nothing to convert
        assert_same_outcome(outcome(_run, case, retrograd, dt, v), outcome(_run, case, torch, dt, v),
                            f"{case} {dt} {v!r}")


@pytest.mark.parametrize("dt", ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"))
@pytest.mark.parametrize("case", ("fill_", "full", "masked_fill", "where", "setitem slice", "index_fill",
                                  "fill_ one element", "full one element"))
def test_floating_dtypes_refuse_numbers_beyond_their_largest_as_torch_does(case, dt):
    for v in (1.0e10, 1.0e39, -1.0e300, float("-inf"), float("nan"), 65504.0, 65520.0):
        assert_same_outcome(outcome(_run, case, retrograd, dt, v), outcome(_run, case, torch, dt, v),
                            f"{case} {dt} {v!r}")


def test_wrapped_operand_is_the_cpp_cast():
    assert retrograd._dtype.wrapped(300, retrograd.uint8.np) == 44
    assert retrograd._dtype.wrapped(-1, retrograd.uint8.np) == 255
    assert retrograd._dtype.wrapped(128, retrograd.int8.np) == -128
    assert retrograd._dtype.wrapped(-129, retrograd.int8.np) == 127
    assert retrograd._dtype.wrapped(2**40 + 5, retrograd.int32.np) == 5


DIVISIONS = {
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "fmod": lambda a, b: a.fmod(b),
    "div trunc": lambda a, b: a.div(b, rounding_mode="trunc"),
    "div floor": lambda a, b: a.div(b, rounding_mode="floor"),
}


@pytest.mark.parametrize("dt", ("uint8", "int32", "int64", "float32"))
@pytest.mark.parametrize("op", DIVISIONS)
def test_integer_division_by_zero_raises_as_torch_does(op, dt):
    def run(lib, divisor_is_tensor):
        a = lib.tensor([7, 9], dtype=getattr(lib, dt))
        b = lib.tensor([2, 0], dtype=getattr(lib, dt)) if divisor_is_tensor else 0
        return DIVISIONS[op](a, b)
    for divisor_is_tensor in (True, False):
        assert_same_outcome(outcome(run, retrograd, divisor_is_tensor), outcome(run, torch, divisor_is_tensor),
                            f"{op} {dt} by {'a tensor' if divisor_is_tensor else 'a number'} with a zero")


@pytest.mark.parametrize("v", (-1, 2**64 - 1, 2**64, -1.0, 2.0**65, float("inf"), float("nan"), 7))
def test_uint64_fills_take_numbers_as_torch_does(v):
    for case in ("full", "fill_"):
        assert_same_outcome(outcome(_run, case, retrograd, "uint64", v), outcome(_run, case, torch, "uint64", v),
                            f"{case} uint64 {v!r}")


@pytest.mark.parametrize("dt", ("uint8", "int64", "uint64", "float32", "float64"))
@pytest.mark.parametrize("v", (2**64, -(2**63) - 1, 2**63, -(2**63), -(2.0**63)))
def test_ints_beyond_64_bits_do_not_parse_as_torch(v, dt):
    for case in ("full", "fill_"):
        assert_same_outcome(outcome(_run, case, retrograd, dt, v), outcome(_run, case, torch, dt, v),
                            f"{case} {dt} {v!r}")
