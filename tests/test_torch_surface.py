"""The CPU-only answers torch gives on a machine without accelerators, against torch 2.13 itself: torch.cuda,
torch.backends, torch.accelerator, torch.amp (GradScaler's whole algorithm on the CPU), torch.compile / jit /
onnx, threads, torch.__version__, and a missing name that says so."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)


@pytest.mark.parametrize("expr", [
    "lib.cuda.is_available()", "lib.cuda.device_count()", "lib.cuda.manual_seed(1)", "lib.cuda.manual_seed_all(1)",
    "lib.cuda.seed()", "lib.cuda.seed_all()", "lib.cuda.empty_cache()", "lib.cuda.is_initialized()",
    "lib.cuda.memory_allocated()", "lib.cuda.max_memory_allocated()", "lib.cuda.is_bf16_supported()",
    "lib.backends.cudnn.enabled", "lib.backends.cudnn.benchmark", "lib.backends.cudnn.deterministic",
    "lib.backends.cudnn.allow_tf32", "lib.backends.cudnn.is_available()", "lib.backends.cuda.matmul.allow_tf32",
    "lib.backends.cuda.is_built()", "lib.backends.mps.is_available()", "lib.backends.mps.is_built()",
    "lib.backends.opt_einsum.is_available()", "lib.backends.opt_einsum.get_opt_einsum()",
    "lib.backends.opt_einsum.enabled", "lib.backends.opt_einsum.strategy",
    "lib.accelerator.is_available()", "lib.accelerator.device_count()", "lib.accelerator.current_accelerator()",
    "lib.is_autocast_enabled()", "lib.version.cuda",
])
def test_cpu_only_answers_are_torchs(expr):
    assert eval(expr, {"lib": retrograd}) == eval(expr, {"lib": torch})


@pytest.mark.parametrize("call", ["synchronize", "current_device", "get_device_name", "get_rng_state"])
def test_calls_that_need_a_device_raise_as_torch(call):
    for lib in LIBS:
        with pytest.raises(AssertionError):
            getattr(lib.cuda, call)()


def test_backend_flags_can_be_set_and_read():
    import retrograd.backends.cudnn as cudnn
    cudnn.benchmark = True
    assert retrograd.backends.cudnn.benchmark is True
    cudnn.benchmark = False
    retrograd.backends.cuda.matmul.allow_tf32 = True
    assert retrograd.backends.cuda.matmul.allow_tf32
    retrograd.backends.cuda.matmul.allow_tf32 = False


def scaled_training(lib, **scaler_options):
    """Five steps of a tiny model under GradScaler('cpu'); the third has an inf gradient (the step is skipped)."""
    lib.manual_seed(0)
    w = lib.nn.Parameter(lib.tensor([[0.5, -1.0], [1.5, 0.25]]))
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2, **scaler_options)
    x = lib.tensor([[1.0, 2.0], [3.0, -1.0]])
    trace = []
    for step in range(5):
        opt.zero_grad()
        loss = (x @ w).square().mean() * (float("inf") if step == 2 else 1.0)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grad = w.grad.clone()
        scaler.step(opt)
        scaler.update()
        trace.append((grad.tolist(), w.detach().tolist(), scaler.get_scale()))
    return trace, scaler.state_dict(), scaler.is_enabled()


def test_grad_scaler_on_the_cpu_matches_torch_step_by_step():
    (ours, our_state, our_enabled), (theirs, their_state, their_enabled) = scaled_training(retrograd), \
        scaled_training(torch)
    assert (our_state, our_enabled) == (their_state, their_enabled)
    assert [scale for _, _, scale in ours] == [scale for _, _, scale in theirs] == [8.0, 16.0, 8.0, 8.0, 16.0]
    for (our_grad, our_w, _), (their_grad, their_w, _) in zip(ours, theirs):  # float32 steps: rounding may differ
        np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, equal_nan=True)
        np.testing.assert_allclose(our_w, their_w, rtol=1e-6)
    assert ours[2][1] == ours[1][1]  # the step with an inf gradient was skipped


def test_grad_scaler_unscale_twice_and_empty_state_dict_errors():
    for lib in LIBS:
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(w.sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            scaler.load_state_dict({})


def test_cuda_scalers_and_autocast_disable_themselves_with_torchs_warnings():
    def messages(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scaler = lib.cuda.amp.GradScaler()
            with lib.autocast("cuda"), lib.amp.autocast("cuda"):
                pass
            with lib.autocast("cpu", enabled=False):
                pass
            loss = lib.ones(1, requires_grad=True).sum()
        return [(w.category.__name__, str(w.message)) for w in caught], scaler.is_enabled(), \
            scaler.scale(loss) is loss, scaler.get_scale()

    assert messages(retrograd) == messages(torch)


def test_autocast_refuses_unknown_devices():
    for lib in LIBS:
        with pytest.raises(RuntimeError):  # torch's text here is its device-string parser's
            lib.autocast("tpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        retrograd.autocast("tpu")


def test_version_compares_as_torchs():
    for other in ("2.0", "2.13", "2.13.0", "1.8.1", "2.14", (2, 0), (2, 13, 1), "3"):
        assert [retrograd.__version__ >= other, retrograd.__version__ < other] == \
               [torch.__version__ >= other, torch.__version__ < other], other
    assert retrograd.__version__.startswith("2.13.0+retrograd.")


def test_compile_and_jit_run_eagerly_and_say_so_once():
    model = retrograd.nn.Linear(2, 1)
    retrograd.jit._warned.clear()  # said once per process: start from none said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert retrograd.compile(model)._orig_mod is model
        assert retrograd.compile(model, mode="max-autotune")._orig_mod is model
        assert retrograd.compile(mode="reduce-overhead")(model)._orig_mod is model
        assert retrograd.compile(model, disable=True) is model
        assert model.compile() is None
        assert retrograd.jit.script(model) is model
        assert retrograd.jit.trace(model, retrograd.ones(1, 2)) is model
    assert sorted(str(w.message) for w in caught) == [f"retrograd runs torch.{api} code eagerly: nothing is compiled"
                                                      for api in ("compile", "jit.script", "jit.trace",
                                                                  "nn.Module.compile")]
    assert not retrograd.jit.is_scripting()
    with pytest.raises(RuntimeError, match="cannot export ONNX"):
        retrograd.onnx.export(model, retrograd.ones(1, 2), "model.onnx")


def _compiled_module_facts(lib):
    """What code around torch.compile(module) sees: the wrapper's type, keys, attribute routing and modes."""
    import copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
        compiled = lib.compile(model)
        facts = [type(compiled).__name__, isinstance(compiled, lib._dynamo.eval_frame.OptimizedModule),
                 list(compiled.state_dict()), [name for name, _ in compiled.named_parameters()], len(compiled),
                 list(compiled._modules), compiled._orig_mod is model, repr(compiled)]
        compiled.eval()
        facts += [model.training, compiled.training]
        compiled.train()
        facts += [model.training]
        compiled.scale = 3
        facts += [model.scale, "scale" in compiled.__dict__, compiled.scale]
        del compiled.scale
        facts += [hasattr(model, "scale"), type(copy.deepcopy(compiled)).__name__]
        compiled.load_state_dict(compiled.state_dict())
        for bad in (lambda: lib.compile(model, mode="default", options={}),
                    lambda: setattr(lib._dynamo.config, "no_such_setting", 1)):
            with pytest.raises((RuntimeError, AttributeError)) as error:
                bad()
            facts.append((error.type, str(error.value)))
        lib._dynamo.config.suppress_errors = True
        facts += [lib._dynamo.config.suppress_errors, lib._dynamo.config.cache_size_limit, lib._dynamo.reset()]
        lib._dynamo.config.suppress_errors = False
    return facts


def test_compiled_module_is_wrapped_as_torch_wraps_it():
    assert _compiled_module_facts(retrograd) == _compiled_module_facts(torch)


def test_num_threads():
    before = retrograd.get_num_threads()
    retrograd.set_num_threads(1)
    assert retrograd.get_num_threads() == 1
    retrograd.set_num_threads(before)
    with pytest.raises(RuntimeError):
        retrograd.set_num_threads(0)


@pytest.mark.parametrize("call, out_dtype", [
    ("lib.zeros(2, 3, out=out)", "int64"), ("lib.ones(4, out=out)", "float64"), ("lib.full((2,), 7, out=out)", "int32"),
    ("lib.eye(3, out=out)", "float32"), ("lib.arange(5, out=out)", "float64"),
    ("lib.arange(0, 1, 0.25, out=out)", "float32"),
    ("lib.linspace(0, 1, 5, out=out)", "float64"), ("lib.logspace(0, 2, 3, out=out)", "float32"),
    ("lib.rand(3, out=out)", "float64"), ("lib.randn(2, 2, out=out)", "float32"), ("lib.randn(5, out=out)", "float64"),
    ("lib.randint(10, (4,), out=out)", "int64"), ("lib.randint(3, 9, (6,), out=out)", "int32"),
    ("lib.randperm(6, out=out)", "int64"),
])
def test_factories_write_into_out_in_its_dtype(call, out_dtype):
    """torch's factories take out=: the values made in out's dtype (random ones drawn as such), out resized and
    returned; the seeded numbers are torch's."""
    results = []
    for lib in LIBS:
        lib.manual_seed(5)
        out = lib.empty(0, dtype=getattr(lib, out_dtype))
        result = eval(call, {"lib": lib, "out": out})
        assert result is out
        results.append(out)
    assert str(results[1].dtype) == str(results[0].dtype) and results[1].shape == results[0].shape
    np.testing.assert_allclose(results[1].numpy(), results[0].numpy(), rtol=1e-6)


def test_a_missing_name_says_so():
    with pytest.raises(AttributeError, match=r"^retrograd does not support torch\.quantize_per_tensor yet$"):
        retrograd.quantize_per_tensor  # noqa: B018
    assert not hasattr(retrograd, "no_such_thing")


DEVICE_BLOCK = """
import random
import numpy as np
import torch
import torch.backends.cudnn as cudnn
from torch.cuda.amp import GradScaler

device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.manual_seed(1); torch.cuda.manual_seed_all(1); random.seed(1); np.random.seed(1)
cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision('high')
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'  # nanoGPT's
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
print(device, torch.cuda.device_count(), torch.backends.mps.is_available(), torch.__version__ >= '2.0',
      torch.version.cuda, torch.get_float32_matmul_precision(), ptdtype)
"""


def test_a_gpu_scripts_setup_block_runs_unchanged(tmp_path):
    script = tmp_path / "setup_block.py"
    script.write_text(DEVICE_BLOCK)
    outputs = [subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
               for command in ([sys.executable, str(script)], [sys.executable, "-m", "retrograd.run", str(script)])]
    assert [o.returncode for o in outputs] == [0, 0], outputs[1].stderr
    assert outputs[0].stdout == outputs[1].stdout == "cpu 0 False True None high torch.float16\n"


def test_every_public_op_has_a_signature_and_a_docstring():
    """help() and inspect.signature work for every public op; a table op's are generated from its row."""
    import inspect

    missing = [name for name in retrograd.ops.__all__
               if not inspect.getdoc(getattr(retrograd, name)) or inspect.signature(getattr(retrograd, name)) is None]
    assert missing == []
    assert str(inspect.signature(retrograd.tanh)) == "(input, *, out=None)"
    assert str(inspect.signature(retrograd.atan2)).startswith("(input")
    taking_out = [name for name in retrograd.ops.__all__ + ["zeros", "randn", "arange"]
                  if callable(getattr(retrograd, name)) and not isinstance(getattr(retrograd, name), type)]
    without_out = [name for name in taking_out if "out" not in inspect.signature(getattr(retrograd, name)).parameters]
    assert without_out == [], "every function that takes out= shows it (Note [out=])"
    assert str(inspect.signature(retrograd.cat)) == ("(tensors: 'Sequence[Tensor]', dim: 'int' = 0, *, "
                                                     "out: 'Tensor | None' = None) -> 'Tensor'")
    doc = inspect.getdoc(retrograd.tanh)
    assert doc.startswith("tanh(input) -> Tensor") and "TanhBackward0" in doc and "tanh_backward(grad, result)" in doc


@pytest.mark.parametrize("expr", [
    "repr(lib.finfo(lib.float32))", "repr(lib.finfo(lib.float64))", "repr(lib.finfo(lib.float16))",
    "repr(lib.finfo())", "repr(lib.finfo(lib.complex64))", "lib.finfo(lib.complex128).dtype",
    "[getattr(lib.finfo(d), a) for d in (lib.float16, lib.float32, lib.float64) for a in "
    "('bits', 'eps', 'max', 'min', 'tiny', 'smallest_normal', 'resolution', 'dtype')]",
    "[(i.bits, i.min, i.max, i.dtype, repr(i)) for i in map(lib.iinfo, (lib.uint8, lib.int8, lib.int16, lib.int32, "
    "lib.int64))]",
    "lib.full((2,), lib.finfo(lib.float32).min).tolist()",
])
def test_finfo_and_iinfo_are_torchs(expr):
    assert eval(expr, {"lib": retrograd}) == eval(expr, {"lib": torch})


@pytest.mark.parametrize("expr", ["lib.finfo(lib.int32)", "lib.iinfo(lib.float32)", "lib.iinfo(lib.bool)",
                                  "lib.iinfo(lib.complex64)"])
def test_finfo_and_iinfo_refuse_the_other_kind_in_torchs_words(expr):
    errors = []
    for lib in LIBS:
        with pytest.raises(TypeError) as e:
            eval(expr, {"lib": lib})
        errors.append(str(e.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("expr", [
    "repr(lib.device('cuda:1'))", "str(lib.device('cuda:1'))", "lib.device('cuda').type", "lib.device('cuda:0').index",
    "repr(lib.device('cpu', 0))", "str(lib.device('mps'))",
    "lib.device('cpu:0') == lib.device('cpu')", "lib.device('cuda') == 'cuda'", "lib.ones(1).device == 'cpu'",
    "lib.ones(1).device == lib.device('cpu')", "{lib.device('cpu'): 1}.get(lib.device('cpu'))",
    "repr(lib.get_default_device())", "lib.set_default_device('cpu')", "lib.set_default_device(None)",
    "lib.ones(2).is_pinned()", "lib.nn.ReLU().cuda() is not None",
    "lib.zeros(2, device=lib.device('cpu')).tolist()", "lib.ones(2).to('cpu', non_blocking=True).tolist()",
])
def test_devices_are_values_a_script_can_build_as_in_torch(expr):
    assert eval(expr, {"lib": retrograd}) == eval(expr, {"lib": torch})


@pytest.mark.parametrize(("expr", "error"), [
    ("lib.ones(2, device='cuda')", AssertionError), ("lib.tensor([1.0], device='cuda:0')", AssertionError),
    ("lib.zeros_like(lib.ones(2), device='cuda')", AssertionError), ("lib.arange(3, device=0)", RuntimeError),
    ("lib.full((2,), 1.0, device='cuda')", AssertionError), ("lib.ones(2).to('cuda')", AssertionError),
    ("lib.ones(2).cuda()", AssertionError), ("lib.nn.Linear(2, 2).cuda()", AssertionError),
    ("lib.nn.Linear(2, 2).to(lib.device('cuda'))", AssertionError), ("lib.ones(2).pin_memory()", RuntimeError),
    ("lib.device('tpu')", RuntimeError), ("lib.set_default_device('tpu')", RuntimeError),
    ("lib.device(0)", RuntimeError), ("lib.ones(2, device='tpu:0')", RuntimeError),
])
def test_a_cuda_tensor_is_refused_as_a_cpu_only_torch_refuses_it(expr, error):
    messages = []
    for lib in LIBS:
        with pytest.raises(error) as e:
            eval(expr, {"lib": lib})
        messages.append(str(e.value))
    assert messages[0] == messages[1]


def test_deterministic_algorithms_flag_reads_back():
    for lib in LIBS:
        lib.use_deterministic_algorithms(True)
        assert lib.are_deterministic_algorithms_enabled() is True
        lib.use_deterministic_algorithms(False)
        assert lib.are_deterministic_algorithms_enabled() is False


def test_rng_state_saved_and_set_back_replays_the_stream():
    """torch.get_rng_state / set_rng_state, Generator.get_state / set_state and torch.random.fork_rng: a uint8
    state that, set back, draws the same numbers again (each library its own stream)."""
    for lib in LIBS:
        lib.manual_seed(7)
        state = lib.get_rng_state()
        assert state.dtype is lib.uint8 and state.dim() == 1
        first = lib.randn(4)
        lib.set_rng_state(state)
        assert lib.equal(lib.randn(4), first)
        lib.set_rng_state(state)
        with lib.random.fork_rng():
            forked = lib.randn(4)
        assert lib.equal(forked, first) and lib.equal(lib.randn(4), first)
        with lib.random.fork_rng(enabled=False):
            lib.randn(4)
        assert not lib.equal(lib.randn(4), first)
        g = lib.Generator().manual_seed(3)
        g_state = g.get_state()
        drawn = lib.rand(3, generator=g)
        assert g.set_state(g_state) is g and lib.equal(lib.rand(3, generator=g), drawn)
        assert lib.random.initial_seed() == 7


def test_a_wrong_rng_state_is_refused():
    for lib in LIBS:
        with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
            lib.Generator().set_state(lib.zeros(5056))
        with pytest.raises(RuntimeError, match="^Expected a CPUGeneratorImplState of size 5056 but found the input "
                                               "RNG state size to be 10$"):
            lib.set_rng_state(lib.zeros(10, dtype=lib.uint8))
        with pytest.raises(RuntimeError, match="^Invalid mt19937 state$"):
            lib.set_rng_state(lib.zeros(5056, dtype=lib.uint8))


def test_bfloat16_is_a_name_a_script_can_use():
    """torch.bfloat16 exists with torch's attributes (nanoGPT puts it in a dict on every run); its tensors are
    tested in test_bfloat16.py."""
    lib = retrograd
    assert repr(lib.bfloat16) == repr(torch.bfloat16) == "torch.bfloat16"
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(lib.bfloat16, attr) == getattr(torch.bfloat16, attr)
    ptdtype = {"float32": lib.float32, "bfloat16": lib.bfloat16, "float16": lib.float16}["float16"]
    assert ptdtype is lib.float16 and lib.bfloat16 != lib.float16
    assert lib.nn.ReLU().bfloat16() is not None  # nothing to convert, as in torch


def _custom_fwd_bwd_facts(lib):
    """A custom Function under CPU autocast with torch.amp.custom_fwd/custom_bwd: the dtypes forward and backward
    compute in, with and without cast_inputs, inside and outside autocast."""
    seen = []

    class MatMul(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu")
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            out = a.mm(b)
            seen.append(("forward", str(out.dtype), ctx._fwd_used_autocast, str(ctx._dtype)))
            return out

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append(("backward", str(g.mm(b.t()).dtype)))
            return g.mm(b.t()), a.t().mm(g)

    class Double(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
        def forward(ctx, a):
            seen.append(("cast forward", str(a.dtype), lib.is_autocast_enabled("cpu")))
            return a * 2

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    a = lib.ones(3, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = MatMul.apply(a, a * 2)
            doubled = Double.apply(a.to(lib.bfloat16))
        out.float().sum().backward()
        seen += [str(out.dtype), str(doubled.dtype), str(MatMul.apply(a, a).dtype)]
    with pytest.raises(ValueError) as error:
        lib.amp.custom_fwd(lambda ctx: None, device_type=1)
    return seen + [str(error.value)]


def test_custom_fwd_and_bwd_follow_torchs_autocast_state():
    assert _custom_fwd_bwd_facts(retrograd) == _custom_fwd_bwd_facts(torch)
