"""Every row of the op database, checked against torch and finite differences (no per-op code)."""

from __future__ import annotations

import contextlib
import warnings
import zlib

import numpy as np
import pytest
import torch
from opdb import C, Dt, OpInfo, Sample, all_ops

import retrograd
import retrograd.func  # noqa: F401 - vmap for the per-row checks

OPS = all_ops()
TOL = {"float32": (1e-5, 1e-4), "float64": (1e-10, 1e-7)}  # (atol, rtol), written once per dtype


def _cases() -> list:
    cases = []
    for info in OPS:
        # a stable seed per row: str's hash() changes with every process (PYTHONHASHSEED), which drew new
        # samples on every run and now and then an ill-conditioned one
        rng = np.random.default_rng(zlib.crc32((info.name + "".join(info.aliases)).encode()))
        for sample in info.samples(rng):
            name = info.aliases[0] if info.aliases else info.name
            cases.append(pytest.param(info, sample, id=f"{name}-{sample.name}"))
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
    a = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    b = theirs.detach().numpy()
    if b.dtype in (np.float32, np.complex64):  # a float32 result (integer inputs) is judged as float32
        dtype = "float32"
    atol, rtol = TOL[dtype]
    atol, rtol = info.atol or atol, info.rtol or rtol
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    if dtype == "float32" and b.size and np.isfinite(b).any():
        # float32 elements that come from cancellation (linear-algebra gradients) carry rounding of the
        # array's largest values, and torch's MKL rounds differently from run to run: judge them normwise
        atol = max(atol, TOL["float32"][0] * float(np.nanmax(np.abs(b[np.isfinite(b)]))))
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


def _as_function(info: OpInfo, sample: Sample, lib=retrograd, floating_only: bool = True):
    """A function of the differentiable inputs only (float64), for gradcheck."""
    args, kwargs = build(lib, sample, "float64")
    slots = []
    for pos, v in enumerate(list(args) + list(kwargs.values())):
        if isinstance(v, list):
            slots += [(pos, j) for j, t in enumerate(v) if getattr(t, "requires_grad", False)]
        elif getattr(v, "requires_grad", False):
            slots.append((pos, None))
    keys = list(kwargs)
    n_args = len(args)
    fn_target = info.resolve(lib)

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
        return tuple(o for o in outs if not floating_only or o.dtype.is_floating_point or o.dtype.is_complex)

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


# --------------------------------------------------------------------------------------------
# Forward mode and vmap, for every row
# --------------------------------------------------------------------------------------------


def _random_like(rng, t, lib):
    """A random tensor of t's shape and dtype in `lib` (complex gets a random imaginary part)."""
    values = rng.standard_normal(tuple(t.shape))
    if t.dtype.is_complex:
        values = values + 1j * rng.standard_normal(tuple(t.shape))
    return lib.from_numpy(np.asarray(values).astype(str(t.dtype).split(".")[-1]))


def _torch_jvp(info: OpInfo, sample: Sample, tangents: list):
    """torch's forward-mode tangents for the row, or None where torch has no forward AD for it."""
    import torch.autograd.forward_ad as fw

    fn, inputs = _as_function(info, sample, lib=torch)
    try:
        with fw.dual_level():
            outs = fn(*[fw.make_dual(x.detach(), torch.from_numpy(t.numpy().copy())) for x, t in zip(inputs, tangents)])
            tangents = [fw.unpack_dual(o).tangent for o in outs]
    except Exception:  # noqa: BLE001 - torch has no (working) forward AD for this call
        return None
    return [None if t is None or t._is_zerotensor() else t.detach().clone() for t in tangents]


@pytest.mark.parametrize("info,sample", [c for c in CASES if c.values[0].differentiable])
def test_forward_ad(info: OpInfo, sample: Sample) -> None:
    """The row's JVP against central finite differences (away from kinks) and torch's forward AD."""
    fw = retrograd.autograd.forward_ad
    fn, inputs = _as_function(info, sample)
    if not inputs:
        return
    rng = np.random.default_rng(2)
    tangents = [_random_like(rng, x, retrograd) for x in inputs]
    if not info.forward_ad:
        with pytest.raises(NotImplementedError, match="Trying to use forward AD"), fw.dual_level():
            fn(*[fw.make_dual(x, t) for x, t in zip(inputs, tangents)])
        return
    with fw.dual_level():
        outs = fn(*[fw.make_dual(x, t) for x, t in zip(inputs, tangents)])
        ours = [fw.unpack_dual(o).tangent for o in outs]
    for k, (o, t) in enumerate(zip(outs, ours)):
        if not o.requires_grad:
            assert t is None, f"output {k} is not differentiable but has a tangent"
            ours[k] = None
        elif t is not None:
            assert t.shape == o.shape and t.dtype == o.dtype, "tangent shape/dtype differ from the output's"
    ours = [retrograd.zeros_like(o) if t is None else t for o, t in zip(outs, ours)]
    differentiable = [o.requires_grad for o in outs]
    numerical = [None] * len(outs)
    if sample.gradcheck:  # central differences, for double-precision outputs away from kinks
        eps = info.fd_eps
        with retrograd.no_grad():
            plus = fn(*[x + eps * t for x, t in zip(inputs, tangents)])
            minus = fn(*[x - eps * t for x, t in zip(inputs, tangents)])
        for k, (t, p, m) in enumerate(zip(ours, plus, minus)):
            if differentiable[k] and p.dtype in (retrograd.float64, retrograd.complex128):
                numerical[k] = (p.numpy() - m.numpy()) / (2 * eps)
                np.testing.assert_allclose(t.detach().numpy(), numerical[k], atol=1e-5, rtol=1e-3,
                                           err_msg=f"output {k}: JVP vs finite differences")
    theirs = _torch_jvp(info, sample, tangents)
    for k, (a, b) in enumerate(zip(ours, theirs or ())):
        if not differentiable[k]:
            continue
        b = torch.zeros(tuple(a.shape), dtype=getattr(torch, str(a.dtype).split(".")[-1])) if b is None else b
        if numerical[k] is not None and not np.allclose(b.numpy(), numerical[k], atol=1e-5, rtol=1e-3):
            continue  # torch's own JVP disagrees with finite differences here; they decide
        assert_close(a, b, "float64", f"output {k}: JVP vs torch", info)


@contextlib.contextmanager
def _no_batching_xfail(info: OpInfo):
    """An op that has no batching rule and cannot use the loop fallback (its Python code reads
    tensor values outside the op table, or it depends on memory layout): vmap refuses it loudly,
    and the test reports an expected failure naming the op."""
    try:
        yield
    except RuntimeError as e:
        if "no batching rule" not in str(e):
            raise
        pytest.xfail(f"{info.name} cannot be batched: {e}")


def _examples(info: OpInfo, sample: Sample, count: int) -> list:
    """`count` samples like `sample` (same shapes and constants, other float values)."""
    rng = np.random.default_rng(3)
    others = [next(s for s in info.samples(rng) if s.name == sample.name) for _ in range(count - 1)]
    return [sample] + others


def _stack_inputs(per_example: list) -> list:
    return [retrograd.stack([inputs[i].detach() for inputs in per_example]) for i in range(len(per_example[0]))]


# vmap refusals where torch behaves otherwise, each a known difference (README, Limits)
VMAP_REFUSALS_DIFFERING = {
    ("argwhere", "2d"): "torch batches argwhere with its slow per-example fallback; retrograd refuses",
    ("nonzero", "as_tuple"): "torch names aten::nonzero_numpy ('Batching rule not implemented'), retrograd "
                             "aten::nonzero ('dynamic shape')",
}


@pytest.mark.parametrize("info,sample", CASES)
def test_vmap(info: OpInfo, sample: Sample) -> None:
    """vmap over a batch of 3 examples gives what a Python loop over them gives."""
    examples = _examples(info, sample, 3)
    fn, _ = _as_function(info, examples[0], floating_only=False)
    per_example = [_as_function(info, s, floating_only=False)[1] for s in examples]
    if not per_example[0]:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        looped = [fn(*[x.detach() for x in inputs]) for inputs in per_example]
        with _no_batching_xfail(info):
            try:
                batched = retrograd.func.vmap(fn)(*_stack_inputs(per_example))
            except RuntimeError as e:  # torch refuses ops whose output shape depends on values, random draws
                refusals = ("dynamic shape", "random operation", "we do not yet support",  # and some ops, so
                            "were not batched")  # (batch norm writing a batch into unbatched running statistics)
                if not any(words in str(e) for words in refusals):
                    raise
                torch_fn, _ = _as_function(info, examples[0], torch, floating_only=False)
                torch_inputs = [torch.stack([torch.from_numpy(x.detach().numpy()) for x in column])
                                for column in zip(*per_example)]
                try:
                    torch.func.vmap(torch_fn)(*torch_inputs)
                except RuntimeError as theirs:
                    if str(e) == str(theirs):
                        return
                    difference = f"torch refuses it in other words: {theirs}"
                else:
                    difference = "torch batches it with its slow per-example fallback; retrograd refuses"
                known = VMAP_REFUSALS_DIFFERING.get((info.name, sample.name))
                assert known, f"vmap of {info.name}: {difference}"
                pytest.xfail(f"{info.name} ({sample.name}): {known}")
    assert len(batched) == len(looped[0])
    for k, out in enumerate(batched):
        expected = retrograd.stack([r[k] for r in looped])
        assert out.shape == expected.shape and out.dtype == expected.dtype, f"output {k}: shape/dtype"
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12, rtol=1e-10,
                                   equal_nan=True, err_msg=f"output {k}: vmap vs loop")


@pytest.mark.parametrize("info,sample", [c for c in CASES if c.values[0].differentiable])
def test_batched_backward(info: OpInfo, sample: Sample) -> None:
    """One vectorised backward with a batch of cotangents (is_grads_batched) equals one backward
    per cotangent: the row's VJP formulas run under vmap."""
    fn, inputs = _as_function(info, sample)
    if not inputs:
        return
    outs = fn(*inputs)
    used = [o for o in outs if o.requires_grad]
    if not used:
        return
    rng = np.random.default_rng(4)
    cotangents = [retrograd.stack([_random_like(rng, o, retrograd) for _ in range(3)]) for o in used]
    with warnings.catch_warnings(), _no_batching_xfail(info):
        warnings.simplefilter("ignore")
        batched = retrograd.autograd.grad(used, inputs, cotangents, retain_graph=True, allow_unused=True,
                                          is_grads_batched=True)
    for b in range(3):
        single = retrograd.autograd.grad(used, inputs, [c[b] for c in cotangents], retain_graph=True,
                                         allow_unused=True)
        for k, (g_all, g) in enumerate(zip(batched, single)):
            if g is None:
                assert g_all is None or not np.any(g_all[b].numpy()), f"input {k}: unexpected gradient"
                continue
            np.testing.assert_allclose(g_all[b].numpy(), g.numpy(), atol=1e-12, rtol=1e-10,
                                       err_msg=f"input {k}, cotangent {b}: batched vs single backward")


def test_one_call_forwards_are_read_off_the_bytecode():
    """Note [one-call forwards]: only a forward that is `return xp.<name>(<inputs in order>)` with no params
    gets NumPy's function called directly by its entry point."""
    from retrograd.ops.registry import OPS

    assert OPS["mul"].numpy_function is np.multiply
    assert OPS["tanh"].numpy_function is np.tanh
    assert OPS["add"].numpy_function is None  # alpha is a param
    assert OPS["relu"].numpy_function is None  # more than the one call (a cast after it)
    assert OPS["cat"].numpy_function is None  # variadic


@pytest.mark.parametrize("wanted", ["both", "input", "weight"])
def test_formulas_sharing_a_call_make_it_once(monkeypatch, wanted):
    """Note [shared gradient calls]: prelu's two gradients index one prelu_kernel_backward call, made once
    whichever of them is wanted, and the gradients still match torch's."""
    from retrograd.ops import activation

    calls = []
    activation.prelu_kernel_backward.compile()  # rows compile on first use: wrap the compiled entry point
    run = activation.prelu_kernel_backward.run
    monkeypatch.setattr(activation.prelu_kernel_backward, "run",
                        lambda args, params: calls.append(1) or run(args, params))
    values = np.linspace(-2, 2, 24).reshape(2, 3, 4)
    grads = []
    for lib in (torch, retrograd):
        x = lib.tensor(values, requires_grad=wanted in ("both", "input"))
        w = lib.tensor([0.25, -0.5, 2.0], dtype=lib.float64, requires_grad=wanted in ("both", "weight"))
        lib.nn.functional.prelu(x, w).pow(2).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy() for t in (x, w)])
    assert calls == [1]
    for expected, got in zip(*grads):
        assert (expected is None) == (got is None)
        if expected is not None:
            np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("call", ["x.sum()", "x.sum(dim=None)", "torch.sum(x, None)", "x.sum(None, keepdim=True)",
                                  "x.sum(dim=())", "x.mean()", "x.mean(dim=None)", "torch.mean(x, None, True)",
                                  "x.mean(dim=[])", "x.sum(dtype=torch.float64)"])
def test_reductions_name_the_overload_torch_takes(call):
    """dim=None passed explicitly takes torch's dim-list overload (SumBackward1, MeanBackward1); left out, the
    whole-tensor one (SumBackward0, MeanBackward0)."""
    def grad_fn_name(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 1
        out = eval(call, {"x": x, "torch": lib})
        return out.grad_fn.name(), tuple(out.shape), out.tolist()

    assert grad_fn_name(retrograd) == grad_fn_name(torch)
