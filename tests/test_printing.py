"""Tests for retrograd._printing, using torch's own repr as the oracle."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

_PATH = Path(__file__).resolve().parents[1] / "retrograd" / "_printing.py"
_NAME = "_retrograd_printing_under_test"
_SPEC = importlib.util.spec_from_file_location(_NAME, _PATH)
printing = importlib.util.module_from_spec(_SPEC)
sys.modules[_NAME] = printing  # dataclasses needs the module registered
_SPEC.loader.exec_module(printing)
format_tensor = printing.format_tensor

DTYPES = [
    np.bool_,
    np.uint8,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
]
FLOAT_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]
DEFAULT_DTYPES = {torch.float32, torch.complex64, torch.int64, torch.bool}
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(autouse=True)
def _reset_options():
    """Restore default print options in both libraries around every test."""
    torch.set_printoptions(profile="default", sci_mode=None)
    printing.set_printoptions(profile="default", sci_mode=None)
    yield
    torch.set_printoptions(profile="default", sci_mode=None)
    printing.set_printoptions(profile="default", sci_mode=None)


def _dtype_name(t: torch.Tensor) -> str | None:
    """The dtype name torch shows in the repr of ``t``, or None when hidden."""
    shown = t.dtype != torch.float32 if t.numel() == 0 else t.dtype not in DEFAULT_DTYPES
    return str(t.dtype).removeprefix("torch.") if shown else None


def _extras(t: torch.Tensor) -> list[str]:
    """The autograd suffixes torch shows for ``t``."""
    if t.grad_fn is not None:
        return [f"grad_fn=<{type(t.grad_fn).__name__}>"]
    return ["requires_grad=True"] if t.requires_grad else []


def _check(a: np.ndarray, requires_grad: bool = False) -> None:
    """Assert format_tensor(a) equals repr of the same data as a torch tensor."""
    t = torch.from_numpy(a.copy())
    if requires_grad:
        t.requires_grad_()
    expected = repr(t)
    got = format_tensor(a, dtype_name=_dtype_name(t), extras=_extras(t))
    assert got == expected, f"\n{got}\n!=\n{expected}"
    assert str(t) == expected


def _set_both(**options) -> None:
    torch.set_printoptions(**options)
    printing.set_printoptions(**options)


def _arr(values, dtype) -> np.ndarray:
    return np.array(values, dtype=dtype)


NAN, INF = math.nan, math.inf
HAND_PICKED = [
    _arr(27.0, np.float32),
    _arr(-0.0, np.float32),
    _arr(0.5, np.float64),
    _arr(NAN, np.float32),
    _arr(-INF, np.float16),
    _arr(1e-7, np.float32),
    _arr(7, np.int64),
    _arr(-7, np.int8),
    _arr(True, np.bool_),
    _arr(1 + 2j, np.complex64),
    _arr(-0.0 - 0.0j, np.complex128),
    _arr([], np.float32),
    _arr([], np.int64),
    _arr([], np.bool_),
    _arr([], np.complex64),
    np.zeros((0, 3), np.float32),
    np.zeros((2, 0, 3), np.float64),
    np.zeros((0,), np.float16),
    _arr([1.0, 2.0], np.float32),
    _arr([1.0, 2.5], np.float32),
    _arr([0.0, 0.0], np.float32),
    _arr([-0.0, 1.0], np.float32),
    _arr([-0.0, 1.5], np.float32),
    _arr([NAN, 1.0], np.float32),
    _arr([NAN, INF, -INF], np.float32),
    _arr([NAN, INF, 1.25], np.float64),
    _arr([204.8, 1.0, 0.1], np.float32),
    _arr([1e8, 1.0], np.float32),
    _arr([1e9, 2.0], np.float32),
    _arr([1e8, 2e5], np.float32),
    _arr([1e-4, 1e-3], np.float64),
    _arr([1e-4, 1e-3], np.float32),
    _arr([1e3, 1.0, -2.5], np.float64),
    _arr([1e-4, 1.0], np.float32),
    _arr([1e-5, 1.0], np.float32),
    _arr([1000.0, 1.0], np.float64),
    _arr([1001.0, 1.0], np.float64),
    _arr([1e300, 1e-300], np.float64),
    _arr([5e-324, 1.0], np.float64),
    _arr([9.99996, 1.0], np.float32),
    _arr([0.1, 0.2, 0.3], np.float16),
    _arr([65504.0, -65504.0, 1.0], np.float16),
    _arr([6e-8, 1.0], np.float16),
    _arr([True, False], np.bool_),
    _arr([[True], [True]], np.bool_),
    _arr([0, 255, 7], np.uint8),
    _arr([-128, 127], np.int8),
    _arr([2**62, -(2**63)], np.int64),
    _arr([1 + 2j, 3 - 1j], np.complex64),
    _arr([1.5 + 2j, 3 - 1e-5j], np.complex128),
    _arr([complex(NAN, INF), complex(-0.0, -0.0), 0j], np.complex64),
    _arr([1e10 + 1j, -1 - 1e-6j], np.complex128),
    np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    np.arange(24, dtype=np.int64).reshape(2, 1, 3, 1, 4) - 12,
    np.ones((1, 1, 1), np.float64),
    np.linspace(-3, 3, 7).reshape(7, 1),
    np.arange(2000, dtype=np.int64),
    np.arange(1000, dtype=np.float32),
    np.arange(1001, dtype=np.float32),
    np.arange(1001, dtype=np.float32) / 7,
    np.arange(10000, dtype=np.float64).reshape(100, 100) ** 2,
    np.arange(10000, dtype=np.complex64).reshape(10, 10, 100) * (1 - 2j),
    np.arange(4 * 400, dtype=np.int16).reshape(4, 400),
    np.arange(2 * 2 * 2 * 200, dtype=np.float16).reshape(2, 2, 2, 200),
    np.random.default_rng(0).standard_normal((3, 30)).astype(np.float32),
    np.random.default_rng(1).standard_normal((2, 3, 25)),
    np.random.default_rng(2).standard_normal(40).astype(np.complex64) * (1 + 1j),
    np.random.default_rng(3).integers(-(10**9), 10**9, (5, 20)),
    np.random.default_rng(4).standard_normal((50, 50)).astype(np.float32) * 1e5,
    np.arange(12, dtype=np.float32).reshape(3, 4).T,  # non-contiguous
    np.arange(10, dtype=np.float64)[::-2],  # negative stride
    np.broadcast_to(np.arange(3, dtype=np.int32), (4, 3)),  # zero stride
]


@pytest.mark.parametrize("a", HAND_PICKED, ids=lambda a: f"{a.dtype}{a.shape}")
def test_hand_picked(a):
    _check(a)


@pytest.mark.parametrize("a", [a for a in HAND_PICKED if a.dtype.kind in "fc"])
def test_hand_picked_requires_grad(a):
    _check(a, requires_grad=True)


def test_grad_fn_suffix_and_dtype_order():
    t = torch.ones(2, 2, dtype=torch.float64, requires_grad=True) * 3
    got = format_tensor(t.detach().numpy(), dtype_name="float64", extras=_extras(t))
    assert got == repr(t)
    assert got == ("tensor([[3., 3.],\n        [3., 3.]], dtype=torch.float64, grad_fn=<MulBackward0>)")


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.complex128])
def test_suffix_wrapping(dtype):
    for width in range(10, 100):
        _set_both(linewidth=width)
        for n in range(1, 8):
            a = np.arange(n, dtype=dtype) * 1.5
            leaf = torch.from_numpy(a.copy()).requires_grad_()
            _check(a, requires_grad=True)
            t = leaf * 2
            got = format_tensor(a * 2, dtype_name=_dtype_name(t), extras=["grad_fn=<MulBackward0>"])
            assert got == repr(t)


def test_documented_examples():
    assert format_tensor(_arr([1.0, 2.0], np.float32), dtype_name=None) == ("tensor([1., 2.])")
    assert format_tensor(_arr([True, False], np.bool_), dtype_name=None) == ("tensor([ True, False])")
    assert format_tensor(_arr(27.0, np.float32), dtype_name=None) == "tensor(27.)"
    assert format_tensor(_arr([204.8, 0.1], np.float32), dtype_name=None) == ("tensor([2.0480e+02, 1.0000e-01])")
    assert format_tensor(np.zeros((0, 3), np.int64), dtype_name="int64") == (
        "tensor([], size=(0, 3), dtype=torch.int64)"
    )
    assert format_tensor(np.zeros(0, np.float32), dtype_name=None) == "tensor([])"


@st.composite
def arrays(draw, max_side=6, max_dims=4):
    """Arrays of every supported dtype with interesting values and shapes."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, max_side=max_side))
    if draw(st.booleans()):
        shape = tuple(min(s, 1) for s in shape)  # size-0 and size-1 dims
    if dtype.kind == "b":
        return draw(hnp.arrays(dtype, shape))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        bound = draw(st.sampled_from([10, 1000, int(info.max)]))
        low, high = max(int(info.min), -bound), min(int(info.max), bound)
        return draw(hnp.arrays(dtype, shape, elements=st.integers(low, high)))
    scale = draw(st.sampled_from([1e-6, 1e-3, 1.0, 1e3, 1e6, 1e10]))
    real = st.one_of(
        st.integers(-100, 100).map(float),
        st.floats(-10, 10).map(lambda x: x * scale),
        st.floats(-1e10, 1e10),
        st.floats(1e-6, 1e-3),
        st.sampled_from([0.0, -0.0, NAN, INF, -INF, 0.5, -1.0]),
    )
    if dtype.kind == "c":
        values = np.empty(shape, np.complex128)
        values.real = draw(hnp.arrays(np.float64, shape, elements=real))
        values.imag = draw(hnp.arrays(np.float64, shape, elements=real))
    else:
        values = draw(hnp.arrays(np.float64, shape, elements=real))
    with np.errstate(over="ignore"):
        return np.asarray(values).astype(dtype)


@SETTINGS
@given(arrays())
def test_random_arrays(a):
    _check(a)


@SETTINGS
@given(arrays(), st.booleans())
def test_random_arrays_views(a, grad):
    view = a.T if a.ndim else a
    if view.ndim and view.shape[0] > 1:
        view = view[::-1]
    _check(view, requires_grad=grad and a.dtype.kind in "fc")


@SETTINGS
@given(
    arrays(max_side=12),
    st.integers(0, 8),
    st.sampled_from([0, 1, 5, 20, 100, 1000]),
    st.integers(0, 4),
    st.integers(1, 120),
    st.sampled_from([None, True, False]),
)
def test_random_options(a, precision, threshold, edgeitems, linewidth, sci_mode):
    _set_both(
        precision=precision,
        threshold=threshold,
        edgeitems=edgeitems,
        linewidth=linewidth,
        sci_mode=sci_mode,
    )
    _check(a, requires_grad=a.dtype.kind in "fc")


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(DTYPES),
    st.sampled_from([(1001,), (2000,), (7, 200), (40, 40), (3, 4, 100), (2, 600)]),
    st.integers(0, 2**32 - 1),
)
def test_large_arrays_summarized(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 9)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    if np.dtype(dtype).kind in "iub":
        values = rng.integers(0, 100, shape)
    with np.errstate(over="ignore"):
        a = values.astype(dtype)
    _check(a)


@pytest.mark.parametrize("profile", ["default", "short", "full"])
def test_profiles(profile):
    _set_both(profile=profile)
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
    for a in [
        np.arange(1500, dtype=np.float32) / 3,
        np.random.default_rng(5).standard_normal((4, 5)),
        np.arange(3000, dtype=np.int64).reshape(30, 100),
    ]:
        _check(a)


def test_get_and_set_printoptions():
    assert printing.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    _set_both(sci_mode=True)
    _set_both(precision=2, edgeitems=1)  # sci_mode is reset to None
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
    assert printing.get_printoptions()["sci_mode"] is None
    _set_both(profile="short", precision=6, sci_mode=False)
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
    saved = printing.get_printoptions()
    printing.set_printoptions(profile="default")
    printing.set_printoptions(**saved)
    assert printing.get_printoptions() == saved


@pytest.mark.parametrize("sci_mode", [True, False])
def test_forced_sci_mode(sci_mode):
    _set_both(sci_mode=sci_mode)
    for a in HAND_PICKED:
        _check(a)


@pytest.mark.parametrize("edgeitems", [0, 1])
def test_edgeitems_small(edgeitems):
    _set_both(edgeitems=edgeitems, threshold=4)
    for a in HAND_PICKED:
        _check(a)
