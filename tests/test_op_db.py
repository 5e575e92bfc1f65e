"""PyTorch's own operator database (OpInfo, `op_db` in the torch wheel), swept: for every public op it lists and up
to CAP of its sample inputs (float64 where the op takes it, CPU, torch's generator seeded), the op runs under torch
and under retrograd on the same values; outputs (values, shapes, dtypes), the VJP with one random cotangent and,
where torch supports it, the double backward must agree at torch's float64 tolerances (raised where the entry
declares its own for all of its tests, as torch's tests raise them: declared_tolerance).

Each entry's outcome is one of pass / missing (the name is not in retrograd) / raises (retrograd raises where torch
computes) / differs (a number, shape or dtype differs). tests/op_db_status.txt lists every entry that does not pass,
with its outcome and a reason; the test is strict both ways: an entry listed there that now passes fails too, so the
list only shrinks. `python -m tests.test_op_db` prints the counts and the entries whose outcome is not the listed one.
"""

from __future__ import annotations

import itertools
import sys
import types
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import DecorateInfo
from torch.testing._utils import wrapper_set_seed

import retrograd

CAP = 6  # sample inputs per entry: the first ones each sample function yields cover its shapes and arguments
STATUS_FILE = Path(__file__).with_name("op_db_status.txt")
OUTCOMES = ("pass", "missing", "raises", "differs")

# Ops whose outputs the sweep compares by shape, dtype and requires_grad only (their VJP depends on the values too).
# OpInfo calls each random op through wrapper_set_seed, which seeds torch's generator with 42 right before the call;
# the sweep's retrograd side seeds retrograd's the same way, and retrograd reproduces torch's CPU streams (Note
# [torch's CPU random streams] in retrograd/_random_streams.py), so the other random ops (uniform, normal, randn,
# randint, multinomial, bernoulli of a p tensor, rrelu, fractional max pooling, the low-rank SVD's random basis, ...)
# are compared by value, float64 draws at float64's tolerance (libm's log may differ from NumPy's by an ulp). These
# are not reproduced on every machine or have no values to compare:
UNINITIALISED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
                 "resize_", "resize_as_"}  # uninitialised memory
MKL_BERNOULLI = {  # bernoulli_ of a number p draws from MKL's own stream on Intel CPUs: the dropout masks
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout",
    "nn.functional.multi_head_attention_forward"}  # its one sample draws dropout (dropout_p=0.5, training)
RANDOM_OUTPUT = frozenset(UNINITIALISED | MKL_BERNOULLI)


def is_public(op) -> bool:
    """A documented dense op: not private (`_foo`, `torch.ops.aten...`), not a CUDA-only jiterator kernel, not one of
    torch.sparse's (sparse layouts are out of retrograd's scope: `Tensor.to_sparse` raises saying so)."""
    return ((not op.name.startswith("_") or op.name.startswith("__"))
            and not op.name.startswith(("torch.", "jiterator_", "sparse.")))


def entry_id(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


ENTRIES = {entry_id(op): op for op in op_db if is_public(op)}


def read_status() -> dict[str, tuple[str, str]]:
    """entry -> (outcome, reason) for the entries that do not pass."""
    status = {}
    for line in STATUS_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, outcome, reason = line.split(maxsplit=2)
            assert outcome in OUTCOMES[1:], f"{name}: unknown outcome {outcome}"
            assert name not in status, f"{name} listed twice"
            status[name] = (outcome, reason)
    return status


# ----------------------------------------------------------------------------------------------------------------
# torch objects as retrograd's


def resolve(lib, name: str):
    """lib's op for an OpInfo name, where torch keeps it: a function of the module tree (`nn.functional.relu`), else
    a Tensor method (`float`, `cdouble`, `__radd__`: torch.cdouble is a dtype, Tensor.cdouble the op; `cauchy`:
    Tensor.cauchy_)."""
    target = torch
    for part in name.split("."):
        target = getattr(target, part, None)
    if not callable(target):  # OpInfo names the random in-place draws without their "_" (`uniform`: uniform_)
        return getattr(lib.Tensor, name if hasattr(torch.Tensor, name) else name + "_")
    target = lib
    for part in name.split("."):
        target = getattr(target, part)
    return target


_TORCH_MODULES = {"torch": retrograd, "torch.nn": retrograd.nn, "torch.nn.functional": retrograd.nn.functional,
                  "torch.linalg": retrograd.linalg}


def to_retrograd(obj):
    """obj with each torch tensor a retrograd tensor of the same values, dtype and requires_grad (a leaf), and torch's
    dtypes, memory formats, devices, sizes, functions and nn modules retrograd's (those of the same name)."""
    if isinstance(obj, torch.nn.Parameter):
        return retrograd.nn.Parameter(to_retrograd(obj.detach()), obj.requires_grad)
    if isinstance(obj, torch.Tensor):
        if obj._base is not None and not obj._base.is_conj() and not obj._base.is_neg():
            # a view (as_strided's partial views read the memory around it): the same view of the same base
            base = obj._base
            view = to_retrograd(base).as_strided(obj.shape, obj.stride(), obj.storage_offset() - base.storage_offset())
            return view.requires_grad_() if obj.requires_grad and not view.requires_grad else view
        t = retrograd.tensor(torch_array(obj), dtype=to_retrograd(obj.dtype))
        return t.requires_grad_() if obj.requires_grad else t
    if isinstance(obj, (torch.dtype, torch.memory_format, torch.layout)):
        return getattr(retrograd, str(obj).split(".")[-1])
    if isinstance(obj, torch.device):
        return retrograd.device(str(obj))
    if isinstance(obj, torch.Size):
        return retrograd.Size(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_retrograd(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_retrograd(v) for k, v in obj.items()}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and (obj.__module__ or "").startswith("torch"):
        return resolve(retrograd, torch_path(obj))
    if isinstance(obj, torch.nn.Module):  # a module given as an argument (a loss's distance_function)
        module = object.__new__(getattr(retrograd.nn, type(obj).__name__))
        retrograd.nn.Module.__init__(module)
        for name, value in vars(obj).items():  # its settings, then its parameters, buffers and submodules
            if not name.startswith("_"):
                object.__setattr__(module, name, to_retrograd(value))
        for table in ("_parameters", "_buffers", "_modules"):
            getattr(module, table).update(to_retrograd(getattr(obj, table)))
        return module
    return obj


def torch_path(fn) -> str:
    """The dotted path under torch of one of torch's functions, Python or builtin: where a public namespace holds it
    (torch.linalg.norm is torch._C._linalg.linalg_norm), else in the module that defines it."""
    for space in ("", "nn.functional", "linalg", "special", "fft"):
        namespace = torch
        for part in filter(None, space.split(".")):
            namespace = getattr(namespace, part)
        name = next((name for name, value in vars(namespace).items() if value is fn), None)
        if name is not None:
            return f"{space}.{name}".lstrip(".")
    return f"{fn.__module__.removeprefix('torch').lstrip('.')}.{fn.__name__}".lstrip(".")


def retrograd_op(op):
    """The callable that runs op's samples in retrograd. Where OpInfo wraps the op in a lambda (`x.float(*a)`,
    `torch.randn(...)`), the same code runs with retrograd in place of torch's modules; an aten operator
    (`torch.ops.aten.slice.Tensor`) is found under the same path in retrograd.ops; otherwise the op is found by
    name (a Tensor method is called unbound with the sample's input first), or, for a helper of torch's test
    suite that calls aten operators (`max_pool2d_backward`), its code runs with retrograd in place of torch."""
    fn = op.op
    if isinstance(fn, torch._ops.OpOverload):
        target = retrograd.ops
        for part in str(fn).split("."):
            target = getattr(target, part)
        return target
    if isinstance(fn, types.FunctionType) and fn.__name__ == "<lambda>":
        resolve(retrograd, op.name)  # AttributeError: missing, whatever the lambda calls
        return _with_retrograd(fn)
    try:
        return resolve(retrograd, op.name)
    except AttributeError:
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
            return _with_retrograd(fn)
        raise


def _with_retrograd(fn: types.FunctionType) -> types.FunctionType:
    """fn's code with retrograd's modules where its globals and closure hold torch's, and retrograd's seeding wrapper
    where its globals hold OpInfo's."""
    glob = {k: _TORCH_MODULES.get(v.__name__, v) if isinstance(v, types.ModuleType) else
            retrograd_wrapper_set_seed if v is wrapper_set_seed else v for k, v in fn.__globals__.items()}
    closure = None if fn.__closure__ is None else tuple(
        types.CellType(to_retrograd(c.cell_contents)) for c in fn.__closure__)
    return types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, closure)


def retrograd_wrapper_set_seed(op, *args, **kwargs):
    """OpInfo's wrapper_set_seed (the wrapper of its random ops' samples) for retrograd: op(*args, **kwargs) right
    after seeding retrograd's generator with 42, as OpInfo's seeds torch's, and the state put back after."""
    with retrograd.random.fork_rng():
        retrograd.manual_seed(42)
        return op(*args, **kwargs)


# ----------------------------------------------------------------------------------------------------------------
# one sample


def tensors(out) -> list:
    """The tensors in a (nested) output, in order."""
    if isinstance(out, (torch.Tensor, retrograd.Tensor)):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return []


def tolerance(dtype: torch.dtype, override: dict | None = None) -> dict:
    """torch.testing.assert_close's defaults for dtype, each raised to the entry's own override where it declares one
    (as torch's TestCase.assertEqual takes the larger of the default and the override)."""
    if dtype in (torch.float64, torch.complex128):
        default = dict(rtol=1e-7, atol=1e-7)
    elif dtype in (torch.float32, torch.complex64):
        default = dict(rtol=1.3e-6, atol=1e-5)
    elif dtype in (torch.float16, torch.bfloat16):
        default = dict(rtol=1.6e-2, atol=1e-5)
    else:
        return dict(rtol=0, atol=0)
    return {k: max(v, (override or {}).get(k, 0)) for k, v in default.items()}


def declared_tolerance(op, dtype: torch.dtype) -> dict:
    """The tolerance op's OpInfo entry declares for every one of its CPU tests at dtype: a precisionOverride (atol)
    or toleranceOverride among its decorators, bare or in a DecorateInfo that names no test class or test (torch
    applies those to all of the op's tests; the ones naming a test are for that test only). {} where none."""
    found = {}
    for decorator in op.decorators:
        infos = ([decorator] if not isinstance(decorator, DecorateInfo) else
                 decorator.decorators if decorator.cls_name is decorator.test_name is None
                 and decorator.is_active(None, None, "cpu", dtype, {}) else [])
        for info in infos:
            if isinstance(info, toleranceOverride) and dtype in info.d:
                found = dict(rtol=info.d[dtype].rtol, atol=info.d[dtype].atol)
            elif isinstance(info, precisionOverride) and dtype in info.d and not found:
                found = dict(atol=info.d[dtype])
    return found


def torch_array(t: torch.Tensor) -> np.ndarray:
    """t's values (a gradient may be one of torch's ZeroTensors, which has no storage)."""
    t = t.detach()
    if t._is_zerotensor():
        return np.zeros(tuple(t.shape), dtype=str(t.dtype).split(".")[-1])
    # NumPy has no bfloat16 nor complex32: compared as the float32 and complex64 they widen to
    t = t.float() if t.dtype == torch.bfloat16 else t.cfloat() if t.dtype == torch.complex32 else t
    return t.resolve_conj().resolve_neg().numpy()


def our_array(t: retrograd.Tensor) -> np.ndarray:
    """t's values (bfloat16 and complex32 as the float32 and complex64 they widen to, as torch_array)."""
    t = t.detach()
    return (t.float() if t.dtype is retrograd.bfloat16 else t.cfloat() if t.dtype is retrograd.complex32 else t).numpy()


def assert_same(ours, theirs, what: str, values: bool = True, override: dict | None = None) -> None:
    """ours (retrograd) agrees with theirs (torch): shape, dtype and values (at `tolerance`, given the entry's
    override). A None gradient equals a zero one."""
    if theirs is None or ours is None:
        zero = ((theirs is None or not torch_array(theirs).any()) and
                (ours is None or not our_array(ours).any()))
        assert zero, f"{what}: None in one library only"
        return
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    assert str(ours.dtype) == str(theirs.dtype), f"{what}: dtype {ours.dtype} vs {theirs.dtype}"
    if values:
        np.testing.assert_allclose(our_array(ours), torch_array(theirs), equal_nan=True, err_msg=what,
                                   **tolerance(theirs.dtype, override))


def cotangents(outputs: list, rng: np.random.Generator) -> list[np.ndarray]:
    """A random cotangent for each torch output (complex for a complex output)."""
    cots = []
    for o in outputs:
        c = rng.normal(size=tuple(o.shape))
        if o.is_complex():
            c = c + 1j * rng.normal(size=tuple(o.shape))
        cots.append(c.astype(str(o.dtype).split(".")[-1].replace("bfloat16", "float32").replace("complex32",
                                                                                               "complex64")))
    return cots


def differentiable(out: list) -> list[int]:
    return [i for i, o in enumerate(out) if o.requires_grad and (o.is_floating_point() or o.is_complex())]


def run_sample(op, fn, sample, rng, override: dict) -> None:
    """Forward, VJP and (where torch has it) double backward of one sample, retrograd against torch, at torch's
    tolerances raised to `override` (the entry's declared_tolerance)."""
    targs = (sample.input, *sample.args)
    try:
        tout = op(*targs, **sample.kwargs)
        tout = sample.output_process_fn_grad(tout)
    except Exception:  # noqa: BLE001 - a sample torch itself refuses says nothing about retrograd
        return
    rargs, rkw = to_retrograd(targs), to_retrograd(sample.kwargs)
    rout = sample.output_process_fn_grad(fn(*rargs, **rkw))
    random = op.name in RANDOM_OUTPUT or sample.kwargs.get("dropout_p", 0) > 0  # attention's dropout: MKL_BERNOULLI
    tts, rts = tensors(tout), tensors(rout)
    assert len(tts) == len(rts), f"{len(rts)} output tensors vs {len(tts)}"
    if not tts:
        assert rout == tout, f"output {rout!r} vs {tout!r}"
    for i, (a, b) in enumerate(zip(rts, tts)):
        assert_same(a, b, f"output {i}", values=not random, override=override)
        assert a.requires_grad == b.requires_grad, f"output {i}: requires_grad {a.requires_grad} vs {b.requires_grad}"
    live = differentiable(tts)
    tins = [t for t in tensors([targs, sample.kwargs]) if t.requires_grad]
    rins = [t for t in tensors([rargs, rkw]) if t.requires_grad]
    if random or not live or not tins:
        return
    gradgrad = op.supports_gradgrad
    cots = cotangents([tts[i] for i in live], rng)
    try:
        tg = torch.autograd.grad([tts[i] for i in live], tins,
                                 [torch.tensor(c, dtype=tts[i].dtype) for c, i in zip(cots, live)],
                                 allow_unused=True, create_graph=gradgrad)
    except Exception:  # noqa: BLE001 - torch has no backward for this sample
        return
    rg = retrograd.autograd.grad([rts[i] for i in live], rins,
                                 [retrograd.tensor(c, dtype=rts[i].dtype) for c, i in zip(cots, live)],
                                 allow_unused=True, create_graph=gradgrad)
    for i, (a, b) in enumerate(zip(rg, tg)):
        assert_same(a, b, f"gradient of input {i}", override=override)
    # torch may mark a gradient as requiring grad where it depends on no input (a bias's gradient, an output of
    # the same backward node as the others): retrograd's gradients that do not require grad count as constants,
    # and the second derivatives must still agree
    second = [i for i, g in enumerate(tg) if g is not None and g.requires_grad]
    if not gradgrad or not second:
        return
    cots2 = cotangents([tg[i] for i in second], rng)
    try:
        tgg = torch.autograd.grad([tg[i] for i in second], tins, [torch.tensor(c) for c in cots2], allow_unused=True)
    except Exception:  # noqa: BLE001
        return
    live2 = [k for k, i in enumerate(second) if rg[i] is not None and rg[i].requires_grad]
    rgg = [None] * len(rins) if not live2 else retrograd.autograd.grad(
        [rg[second[k]] for k in live2], rins, [retrograd.tensor(cots2[k]) for k in live2], allow_unused=True)
    for i, (a, b) in enumerate(zip(rgg, tgg)):
        assert_same(a, b, f"second derivative of input {i}", override=override)


def sweep_dtype(op) -> torch.dtype:
    """float64 where the op takes it; else the first dtype of its own that the sweep can represent."""
    supported = op.supported_dtypes("cpu")
    for dtype in (torch.float64, torch.complex128, torch.int64, torch.int32, torch.bool, torch.float32):
        if dtype in supported:
            return dtype
    return next(iter(supported), torch.float64)  # a CUDA-only op: its samples still say what it computes


def outcome(op) -> tuple[str, str]:
    """(outcome, detail) of one OpInfo entry over its first CAP samples."""
    try:
        fn = retrograd_op(op)
    except AttributeError as error:
        return "missing", str(error)
    torch.manual_seed(0)  # the database draws its samples from torch's generator
    rng = np.random.default_rng(0)
    dtype = sweep_dtype(op)
    override = declared_tolerance(op, dtype)
    samples = op.sample_inputs("cpu", dtype, requires_grad=op.supports_autograd and dtype.is_floating_point)
    for i, sample in enumerate(itertools.islice(samples, CAP)):
        try:
            run_sample(op, fn, sample, rng, override)
        except AssertionError as error:
            return "differs", f"sample {i}: {str(error).strip().splitlines()[0]}"
        except Exception as error:  # noqa: BLE001 - any exception retrograd raises where torch computed
            return "raises", f"sample {i}: {type(error).__name__}: {str(error).strip()[:200]}"
    return "pass", ""


STATUS = read_status()


def test_status_file_names_only_swept_entries():
    assert not set(STATUS) - set(ENTRIES), "entries in op_db_status.txt that op_db does not list"


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_op_database_entry_matches_torch(name):
    got, detail = outcome(ENTRIES[name])
    expected, reason = STATUS.get(name, ("pass", ""))
    if got == expected == "pass":
        return
    assert got == expected, f"listed as {expected} ({reason}), got {got}: {detail}"
    pytest.xfail(f"{expected}: {reason}")


def main() -> None:
    """Print the sweep's counts (by entry and by op name) and the entries whose outcome is not the listed one."""
    warnings.simplefilter("ignore")  # the deprecation notices torch's and retrograd's ops give alike
    results = {}
    for name, op in sorted(ENTRIES.items()):
        results[name] = outcome(op)
        expected = STATUS.get(name, ("pass", ""))[0]
        if results[name][0] != expected:
            print(f"{name:45} {results[name][0]:8} (listed {expected}) {results[name][1]}")
    by_entry = Counter(o for o, _ in results.values())
    by_op: dict[str, str] = {}
    for name, (o, _) in results.items():  # an op passes when all its variants pass; else its worst outcome counts
        op_name = ENTRIES[name].name
        by_op[op_name] = max(by_op.get(op_name, "pass"), o, key=OUTCOMES.index)
    ops = Counter(by_op.values())
    print(f"{len(results)} entries: " + ", ".join(f"{by_entry[o]} {o}" for o in OUTCOMES))
    print(f"{len(by_op)} ops: " + ", ".join(f"{ops[o]} {o}" for o in OUTCOMES))
    if "-v" in sys.argv:
        for name, (o, detail) in results.items():
            if o != "pass":
                print(f"{name} {o} {detail}")


if __name__ == "__main__":
    main()
