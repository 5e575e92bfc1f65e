"""torch's unsigned dtypes uint16, uint32 and uint64 (Note [unsigned dtypes] in retrograd/ops/unsigned.py) against
torch: the dtypes' attributes and promotion, making, converting, printing and saving tensors of them, and every op of
PyTorch's OpInfo database that takes int64, run on its samples converted to each unsigned dtype: where torch computes,
retrograd computes the same values and dtype; where torch raises, retrograd raises the same error type and text.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from test_op_db import ENTRIES, retrograd_op, tensors, to_retrograd

import retrograd

UNSIGNED = ("uint16", "uint32", "uint64")
OTHERS = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128")
SAMPLES = 3  # per entry and dtype


def outcome(fn, *args, **kwargs) -> tuple:
    """("ok", result) or ("raises", type name, first line of the message)."""
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return "raises", type(error).__name__, str(error).strip().splitlines()[0] if str(error).strip() else ""


def assert_same_outcome(ours: tuple, theirs: tuple, what: str) -> None:
    """Both raise the same error, or both compute tensors of the same dtypes, shapes and values."""
    assert ours[0] == theirs[0], f"{what}: retrograd {ours[1:] if ours[0] == 'raises' else 'computes'}, torch " \
                                 f"{theirs[1:] if theirs[0] == 'raises' else 'computes'}"
    if ours[0] == "raises":
        assert ours[1:] == theirs[1:], f"{what}: {ours[1:]} vs {theirs[1:]}"
        return
    rts, tts = tensors(ours[1]), tensors(theirs[1])
    assert len(rts) == len(tts), f"{what}: {len(rts)} tensors vs {len(tts)}"
    if not tts:
        assert ours[1] == theirs[1], f"{what}: {ours[1]!r} vs {theirs[1]!r}"
    for r, t in zip(rts, tts):
        assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} vs {t.dtype}"
        assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} vs {tuple(t.shape)}"
        np.testing.assert_allclose(r.detach().resolve_conj().numpy(), t.detach().resolve_conj().numpy(),
                                   rtol=1e-7, atol=1e-7, equal_nan=True, err_msg=what)


# ----------------------------------------------------------------------------------------------------------------
# the dtypes


@pytest.mark.parametrize("name", UNSIGNED)
def test_dtype_attributes_match_torch(name):
    ours, theirs = getattr(retrograd, name), getattr(torch, name)
    assert repr(ours) == repr(theirs) == f"torch.{name}"
    for attr in ("itemsize", "is_signed", "is_floating_point", "is_complex"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert (retrograd.iinfo(ours).min, retrograd.iinfo(ours).max) == (torch.iinfo(theirs).min, torch.iinfo(theirs).max)
    assert repr(retrograd.iinfo(ours)) == repr(torch.iinfo(theirs))
    assert_same_outcome(outcome(retrograd.finfo, ours), outcome(torch.finfo, theirs), "finfo")


@pytest.mark.parametrize("name", UNSIGNED)
def test_promote_types_matches_torch_for_every_pair(name):
    for other in (*OTHERS, "bfloat16", *UNSIGNED):
        for a, b in ((name, other), (other, name)):
            theirs = outcome(torch.promote_types, getattr(torch, a), getattr(torch, b))
            ours = outcome(retrograd.promote_types, getattr(retrograd, a), getattr(retrograd, b))
            if theirs[0] == "ok":
                assert ours[0] == "ok" and str(ours[1]) == str(theirs[1]), f"{a}, {b}: {ours} vs {theirs}"
            else:
                assert ours == theirs, f"{a}, {b}"


OPERANDS = {  # operands of result_type with a uint64 vector, as code making each in either library
    "int": "1", "bool": "True", "float": "1.5", "complex": "1j", "0-d long": "L.tensor(1)",
    "0-d float": "L.tensor(1.5)", "0-d bool": "L.tensor(True)", "0-d uint16": "L.tensor(1, dtype=L.uint16)",
    "long": "L.tensor([1, 2])", "float32": "L.tensor([1., 2.])", "uint16": "L.tensor([1], dtype=L.uint16)",
    "complex64": "L.tensor([1j])"}


@pytest.mark.parametrize("operand", sorted(OPERANDS))
def test_result_type_with_a_uint64_tensor_matches_torch(operand):
    results = []
    for L in (retrograd, torch):
        u, other = L.tensor([1, 2], dtype=L.uint64), eval(OPERANDS[operand])  # noqa: S307 - our own table
        results.append([outcome(L.result_type, *pair) for pair in ((u, other), (other, u))])
    for ours, theirs in zip(*results):
        assert_same_outcome(ours, theirs, operand) if ours[0] == "raises" else \
            (str(ours[1]) == str(theirs[1])) or pytest.fail(f"{operand}: {ours[1]} vs {theirs[1]}")


# ----------------------------------------------------------------------------------------------------------------
# OpInfo's ops on unsigned tensors

INT_ENTRIES = sorted(name for name, op in ENTRIES.items() if torch.int64 in op.supported_dtypes("cpu"))


def as_unsigned(obj, dtype: torch.dtype, everywhere: bool):
    """A sample's arguments with int64 tensors as `dtype` (their absolute values): the input only, or `everywhere`."""
    if isinstance(obj, torch.Tensor):
        return obj.abs().to(dtype) if obj.dtype == torch.int64 else obj
    if isinstance(obj, (list, tuple)) and everywhere:
        return type(obj)(as_unsigned(o, dtype, everywhere) for o in obj)
    if isinstance(obj, dict) and everywhere:
        return {k: as_unsigned(v, dtype, everywhere) for k, v in obj.items()}
    return obj


def unsigned_mismatch(name: str) -> str | None:
    """The first sample of entry `name` on which the two libraries disagree once made unsigned, or None."""
    op = ENTRIES[name]
    fn = retrograd_op(op)
    for dtype, everywhere in itertools.product((torch.uint16, torch.uint32, torch.uint64), (False, True)):
        torch.manual_seed(0)
        for i, sample in enumerate(itertools.islice(op.sample_inputs("cpu", torch.int64), SAMPLES)):
            args = [as_unsigned(sample.input, dtype, True), *as_unsigned(list(sample.args), dtype, everywhere)]
            kwargs = as_unsigned(sample.kwargs, dtype, everywhere)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = outcome(op, *args, **kwargs)
                ours = outcome(fn, *to_retrograd(args), **to_retrograd(kwargs))
            try:
                assert_same_outcome(ours, theirs, f"{dtype} sample {i}{' (all int64 arguments)' if everywhere else ''}")
            except AssertionError as error:
                return str(error).splitlines()[0]
    return None
