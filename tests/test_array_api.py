"""The op database behind the array seam with another array-API library: array_api_strict's arrays stand behind
'cuda' (Note [choosing a namespace] in retrograd/_xp.py), on its non-host devices, whose arrays refuse NumPy's
conversion as a GPU's do, so any `np.` call on a tensor's array fails here. Every op is run forward, backward and
double backward there and compared with the same op on NumPy's arrays (checked against torch by test_ops.py).

Ops whose forward needs functions the array API standard lacks are listed in NUMPY_ONLY with the reason; the list
is strict: a listed op that passes fails the test, to be taken off the list.
"""

from __future__ import annotations

import warnings
import zlib
from collections import defaultdict

import array_api_strict
import numpy as np
import pytest
from opdb import C, Dt, OpInfo, Sample, all_ops

import retrograd
from retrograd import _xp

DEVICES = (array_api_strict.Device("device1"), array_api_strict.Device("device2"))

# op name -> why its forward needs NumPy (functions the standard does not have)
NUMPY_ONLY: dict[str, str] = {}


def _rows() -> dict[str, list[OpInfo]]:
    rows = defaultdict(list)
    for info in all_ops():
        rows[info.aliases[0] if info.aliases else info.name].append(info)
    return dict(rows)


ROWS = _rows()


@pytest.fixture
def strict_cuda():
    """array_api_strict's device1 and device2 behind cuda:0 and cuda:1 for the test."""
    with _xp.use("cuda", array_api_strict, DEVICES):
        yield


def _convert(value, device):
    """A sample value as a float64 tensor on `device` (arrays that may require grad become leaves there)."""
    if isinstance(value, np.ndarray):
        t = retrograd.from_numpy(value.copy()).to(device)
        return t.requires_grad_() if t.dtype.is_floating_point or t.dtype.is_complex else t
    if isinstance(value, C):
        return retrograd.from_numpy(value.array.copy()).to(device)
    if isinstance(value, Dt):
        return getattr(retrograd, value.name)
    if isinstance(value, list):
        return [_convert(v, device) for v in value]
    if isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        return tuple(_convert(v, device) for v in value)
    return value


def _tensors(values) -> list:
    out = []
    for v in values:
        vs = v if isinstance(v, (list, tuple)) else [v]
        out += [t for t in vs if isinstance(t, retrograd.Tensor)]
    return out


def _host(t) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().numpy()


def _run(info: OpInfo, sample: Sample, device: str) -> list:
    """Forward results, gradients and second gradients of one sample on `device`, as NumPy arrays."""
    retrograd.manual_seed(0)  # random ops draw the same numbers on both devices
    args = [_convert(a, device) for a in sample.args]
    kwargs = {k: _convert(v, device) for k, v in sample.kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = info.resolve(retrograd)(*args, **kwargs)
    outs = list(info.outputs(result)) if info.outputs else [
        r for r in (result if isinstance(result, (tuple, list)) else [result]) if isinstance(r, retrograd.Tensor)]
    found = [_host(o) for o in outs]
    leaves = [t for t in _tensors([*args, *kwargs.values()]) if t.requires_grad]
    outs = [o for o in outs if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]
    if not (info.differentiable and leaves and outs):
        return found
    rng = np.random.default_rng(1)
    cotangents = [retrograd.from_numpy(rng.standard_normal(tuple(o.shape)).astype(str(o.dtype)[6:])).to(device)
                  for o in outs]
    grads = retrograd.autograd.grad(outs, leaves, cotangents, allow_unused=True, create_graph=info.gradgrad)
    found += [_host(g) for g in grads]
    second = [g for g in grads if g is not None and g.requires_grad]
    if info.gradgrad and second:
        weights = [retrograd.from_numpy(rng.standard_normal(tuple(g.shape)).astype(str(g.dtype)[6:])).to(device)
                   for g in second]
        found += [_host(g) for g in retrograd.autograd.grad(second, leaves, weights, allow_unused=True)]
    return found


def _samples(info: OpInfo) -> list[Sample]:
    # float64 samples: the seed test_ops.py uses, so the same values
    rng = np.random.default_rng(zlib.crc32((info.name + "".join(info.aliases)).encode()))
    return info.samples(rng)


def _check(name: str) -> None:
    for info in ROWS[name]:
        for sample in _samples(info):
            expected = _run(info, sample, "cpu")
            found = _run(info, sample, "cuda")
            assert len(found) == len(expected), f"{sample.name}: {len(found)} results, NumPy gives {len(expected)}"
            for k, (a, b) in enumerate(zip(found, expected)):
                if b is None:
                    assert a is None or not np.any(a), f"{sample.name}: result {k} is not None"
                    continue
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True,
                                           err_msg=f"{sample.name}: result {k}")


@pytest.mark.usefixtures("strict_cuda")
@pytest.mark.parametrize("name", sorted(ROWS))
def test_op_behind_the_seam(name: str) -> None:
    if name not in NUMPY_ONLY:
        _check(name)
        return
    try:
        _check(name)
    except AssertionError:  # wrong numbers are never the listed reason
        raise
    except Exception:  # noqa: BLE001 - the listed reason: a function the standard lacks
        pytest.xfail(NUMPY_ONLY[name])
    pytest.fail(f"{name} runs behind the seam now: take it off NUMPY_ONLY")
