"""OpInfo's samples with their tensors made a dtype retrograd holds in a NumPy type of its own (the unsigned ones,
complex32), run under torch and retrograd: both must raise the same error or compute the same tensors."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import numpy as np
import torch
from test_op_db import ENTRIES, RANDOM_OUTPUT, retrograd_op, tensors, to_retrograd, tolerance

SAMPLES = 3  # per entry and dtype


def outcome(fn, *args, **kwargs) -> tuple:
    """("ok", result) or ("raises", type name, first line of the message)."""
    try:
        return "ok", fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return "raises", type(error).__name__, str(error).strip().splitlines()[0] if str(error).strip() else ""


def values(t):
    """A tensor's values as NumPy holds them (bfloat16 widened to float32, complex32 to complex64: neither library's
    numpy() takes them)."""
    t = t.detach().resolve_conj().resolve_neg()
    name = str(t.dtype)
    return (t.float() if name == "torch.bfloat16" else t.cfloat() if name == "torch.complex32" else t).numpy()


def assert_same_outcome(ours: tuple, theirs: tuple, what: str, compare_values: bool = True,
                        exact: tuple = ()) -> None:
    """Both raise the same error, or both compute tensors of the same dtypes, shapes and values: those of an `exact`
    torch dtype bit for bit, others at torch.testing's tolerance for their dtype."""
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
        if compare_values:
            np.testing.assert_allclose(values(r), values(t), equal_nan=True, err_msg=what,
                                       **(dict(rtol=0, atol=0) if t.dtype in exact else tolerance(t.dtype)))


def converted(obj, convert: Callable, everywhere: bool):
    """A sample's arguments with `convert` applied to each tensor: the input alone, or `everywhere` in lists,
    tuples and dicts."""
    if isinstance(obj, torch.Tensor):
        return convert(obj)
    if isinstance(obj, (list, tuple)) and everywhere:
        return type(obj)(converted(o, convert, everywhere) for o in obj)
    if isinstance(obj, dict) and everywhere:
        return {k: converted(v, convert, everywhere) for k, v in obj.items()}
    return obj


def first_mismatch(name: str, sample_dtype: torch.dtype, convert: Callable, label: str = "",
                   exact: tuple = ()) -> str | None:
    """The first sample of entry `name` (drawn in `sample_dtype`, its tensors put through `convert`: the input
    alone, then every argument) on which the two libraries disagree, or None."""
    op = ENTRIES[name]
    fn = retrograd_op(op)
    for everywhere in (False, True):
        torch.manual_seed(0)
        for i, sample in enumerate(itertools.islice(op.sample_inputs("cpu", sample_dtype), SAMPLES)):
            args = [converted(sample.input, convert, True), *converted(list(sample.args), convert, everywhere)]
            kwargs = converted(sample.kwargs, convert, everywhere)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = outcome(op, *args, **kwargs)
                ours = outcome(fn, *to_retrograd(args), **to_retrograd(kwargs))
            what = f"{label}sample {i}{f' (all {sample_dtype} arguments)' if everywhere else ''}"
            try:
                assert_same_outcome(ours, theirs, what, compare_values=op.name not in RANDOM_OUTPUT, exact=exact)
            except AssertionError as error:
                return " ".join(str(error).split())[:300]
    return None
