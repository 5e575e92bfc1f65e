"""Every row of the op database, checked against torch and finite differences (no per-op code)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd
from opdb import C, Dt, OpInfo, Sample, all_ops

OPS = all_ops()
TOL = {"float32": (1e-5, 1e-4), "float64": (1e-10, 1e-7)}  # (atol, rtol), written once per dtype


def _cases() -> list:
    cases = []
    for info in OPS:
        rng = np.random.default_rng(abs(hash(info.name + "".join(info.aliases))) % 2**32)
        for sample in info.samples(rng):
            cases.append(pytest.param(info, sample, id=f"{info.aliases[0] if info.aliases else info.name}-{sample.name}"))
    return cases


CASES = _cases()


def convert(lib, value, dtype: str, grad: bool = True):
    """Build one library's argument from a sample value (arrays -> tensors that require grad)."""
    if isinstance(value, np.ndarray):
        arr = value.astype(dtype if value.dtype.kind == "f" else value.dtype.name.replace("float64", dtype), order="K")
        t = lib.from_numpy(arr.copy(order="K"))
        if grad and t.dtype.is_floating_point or grad and t.dtype.is_complex:
            t.requires_grad_(True)
        return t
    if isinstance(value, C):
        return lib.from_numpy(value.array.copy())
    if isinstance(value, Dt):
        return getattr(lib, value.name)
    if isinstance(value, list):
        return [convert(lib, v, dtype, grad) for v in value]
    if isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        return tuple(convert(lib, v, dtype, grad) for v in value)
    return value


def build(lib, sample: Sample, dtype: str, grad: bool = True):
    args = [convert(lib, a, dtype, grad) for a in sample.args]
    kwargs = {k: convert(lib, v, dtype, grad) for k, v in sample.kwargs.items()}
    return args, kwargs


def leaves(args, kwargs) -> list:
    out = []
    for v in list(args) + list(kwargs.values()):
        vs = v if isinstance(v, (list, tuple)) else [v]
        out += [t for t in vs if hasattr(t, "requires_grad") and t.requires_grad]
    return out


def tensor_outputs(info: OpInfo, result) -> list:
    if info.outputs is not None:
        return list(info.outputs(result))
    if isinstance(result, (tuple, list)):
        return [r for r in result if hasattr(r, "dtype")]
    return [result]


def run(lib, info: OpInfo, sample: Sample, dtype: str, grad: bool = True):
    args, kwargs = build(lib, sample, dtype, grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = info.resolve(lib)(*args, **kwargs)
    return args, kwargs, tensor_outputs(info, result)


def assert_close(ours, theirs, dtype: str, what: str, info: OpInfo) -> None:
    atol, rtol = TOL[dtype]
    atol, rtol = info.atol or atol, info.rtol or rtol
    a = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    b = theirs.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("info,sample", CASES)
def test_forward(info: OpInfo, sample: Sample, dtype: str) -> None:
    _, _, ours = run(retrograd, info, sample, dtype)
    _, _, theirs = run(torch, info, sample, dtype)
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        assert str(o.dtype) == str(t.dtype), f"output {i} dtype {o.dtype} != torch {t.dtype}"
        assert tuple(o.shape) == tuple(t.shape)
        assert_close(o, t, dtype, f"output {i}", info)
        assert o.requires_grad == t.requires_grad, f"output {i} requires_grad"
        if not info.skip_grad_fn:
            assert (o.grad_fn and o.grad_fn.name()) == (t.grad_fn and t.grad_fn.name()), f"output {i} grad_fn"
    if info.method:
        args, kwargs = build(retrograd, sample, dtype)
        first = args[0]
        if isinstance(first, retrograd.Tensor):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = getattr(first, info.name.split(".")[-1])(*args[1:], **kwargs)
            for o, t in zip(tensor_outputs(info, res), theirs):
                assert_close(o, t, dtype, "method form", info)


def _differentiable_outputs(outs: list) -> list[int]:
    return [i for i, o in enumerate(outs) if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("info,sample", [c for c in CASES if c.values[0].differentiable])
def test_backward(info: OpInfo, sample: Sample, dtype: str) -> None:
    """A VJP with a random cotangent, compared with torch's."""
    args, kwargs, ours = run(retrograd, info, sample, dtype)
    targs, tkwargs, theirs = run(torch, info, sample, dtype)
    idx = _differentiable_outputs(theirs)
    assert idx == _differentiable_outputs(ours)
    if not idx:
        return
    rng = np.random.default_rng(1)
    cot = [rng.standard_normal(tuple(theirs[i].shape)).astype(dtype) for i in idx]
    ins, tins = leaves(args, kwargs), leaves(targs, tkwargs)
    g_ours = retrograd.autograd.grad([ours[i] for i in idx], ins, [retrograd.tensor(c) for c in cot],
                                     allow_unused=True)
    g_theirs = torch.autograd.grad([theirs[i] for i in idx], tins, [torch.tensor(c) for c in cot],
                                   allow_unused=True)
    for k, (a, b) in enumerate(zip(g_ours, g_theirs)):
        if b is None:
            assert a is None or not np.any(a.numpy()), f"input {k}: torch has no gradient"
            continue
        assert a is not None, f"input {k}: no gradient, torch has one"
        assert str(a.dtype) == str(b.dtype), f"input {k}: grad dtype"
        assert_close(a, b, dtype, f"grad of input {k}", info)


def _as_function(info: OpInfo, sample: Sample):
    """A function of the differentiable inputs only (float64), for gradcheck."""
    args, kwargs = build(retrograd, sample, "float64")
    slots = []
    for pos, v in enumerate(list(args) + list(kwargs.values())):
        if isinstance(v, list):
            slots += [(pos, j) for j, t in enumerate(v) if getattr(t, "requires_grad", False)]
        elif getattr(v, "requires_grad", False):
            slots.append((pos, None))
    keys = list(kwargs)
    n_args = len(args)
    fn_target = info.resolve(retrograd)

    def fn(*xs):
        vals = list(args) + [kwargs[k] for k in keys]
        vals = [list(v) if isinstance(v, list) else v for v in vals]
        for (pos, j), x in zip(slots, xs):
            if j is None:
                vals[pos] = x
            else:
                vals[pos][j] = x
        out = fn_target(*vals[:n_args], **dict(zip(keys, vals[n_args:])))
        outs = tensor_outputs(info, out)
        return tuple(o for o in outs if o.dtype.is_floating_point or o.dtype.is_complex)

    inputs = []
    for pos, j in slots:
        v = (list(args) + [kwargs[k] for k in keys])[pos]
        inputs.append(v if j is None else v[j])
    return fn, inputs


@pytest.mark.parametrize("info,sample", [c for c in CASES if c.values[0].differentiable and c.values[1].gradcheck])
def test_gradcheck(info: OpInfo, sample: Sample) -> None:
    fn, inputs = _as_function(info, sample)
    if not inputs:
        return
    assert retrograd.autograd.gradcheck(fn, inputs, eps=info.fd_eps, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("info,sample", [c for c in CASES if c.values[0].differentiable and c.values[0].gradgrad
                                         and c.values[1].gradcheck])
def test_gradgradcheck(info: OpInfo, sample: Sample) -> None:
    fn, inputs = _as_function(info, sample)
    if not inputs:
        return
    assert retrograd.autograd.gradgradcheck(fn, inputs, eps=info.fd_eps, atol=1e-5, rtol=1e-3)
