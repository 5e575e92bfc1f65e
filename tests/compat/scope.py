"""What is out of scope in PyTorch's autograd tests, decided from what a test touches.

Each category names torch machinery that retrograd does not have and does not mean to have, with
the reason. A test is out of scope when its source (or its parametrised name) matches a category's
pattern; everything else is in scope. The decision reads only the test file, never a run, so it is
the same under torch and under retrograd.
"""

from __future__ import annotations

import inspect
import re

# torch._C's names for the autograd engine (the running pass, grad and forward-AD switches, weak tensor references,
# node classes): retrograd._C has them, so tests that use them are in scope
AUTOGRAD_C = (r"is_grad_enabled|_set_grad_enabled|_current_graph_task_id|_current_graph_task_execution_order|"
              r"_will_engine_execute_node|_current_autograd_node|_set_fwd_grad_enabled|_WeakTensorRef|"
              r"_functions\.(?:AccumulateGrad|DelayedError|UndefinedGrad)|"
              r"_autograd\.(?:SavedTensor|_saved_tensors_hooks_is_enabled)")

CATEGORIES: list[tuple[str, str, str]] = [
    # (category, reason, pattern over the test's source and name)
    ("accelerators", "CUDA, MPS, XPU and multi-device tests: retrograd's run here is CPU-only",
     r"torch\.cuda|\.cuda\(|TEST_CUDA|[\"'](cuda|mps|xpu|meta)\b|torch\.mps|torch\.xpu|torch\.Stream|_accelerator|"
     r"DataParallel"),
    ("sparse and nested layouts", "retrograd tensors are dense NumPy arrays; no sparse, nested or jagged layouts",
     r"sparse|coalesce|torch\.nested|nested_tensor|jagged|mkldnn"),
    ("dispatcher and tensor subclasses", "torch's C++ dispatcher, dispatch modes, __torch_dispatch__/"
     "__torch_function__ subclasses, custom ops registered with torch.library, and torch._C beyond the autograd "
     "engine's functions that retrograd._C has",
     rf"torch\._C\b(?!\.(?:{AUTOGRAD_C})\b)|(?<!torch\.)_C\._|"
     r"TorchDispatchMode|TorchFunctionMode|__torch_dispatch__|__torch_function__|"
     r"no_dispatch|_python_dispatch|torch\.library|torch\.ops\b|LoggingTensor|logging_tensor|_subclasses|"
     r"FakeTensor|FlopCounterMode|_mode_utils|wrapper_subclass|torch\._ops|DispatchKey|_dispatch_|"
     r"create_selective_checkpoint_contexts|CheckpointPolicy"),
    ("compilers and C++ extensions", "torch.compile, TorchScript, FX, Dynamo and C++ extensions compile "
     "code for torch's runtime", r"torch\.jit|torch\.compile|torch\.fx|_dynamo|load_inline|cpp_extension|"
                                 r"torch\._inductor|torch\.export|torch\._functorch|torch\.func\.functional_call"),
    ("external profilers", "emit_nvtx and emit_itt annotate ranges for NVIDIA's and Intel's profilers",
     r"emit_nvtx|emit_itt"),
    ("multiprocessing and subprocesses", "tests that fork or start Python processes with torch imported",
     r"subprocess|multiprocessing|torch\.multiprocessing|\bmp\.|fork"),
    ("logging", "torch._logging (TORCH_LOGS) is torch's own logging configuration",
     r"make_logging_test|LoggingTestCase|torch\._logging"),
    ("storage and memory internals", "torch's C++ object handles (_cdata), weak references to storages and "
     "the CUDA memory allocator have no NumPy counterpart (storages and data pointers are in scope: retrograd has "
     "them)", r"_typed_storage\(|torch\.cuda\.memory|_cdata|StorageWeakRef|_weak_ref"),
    ("quantisation and float8", "quantised tensors and float8 dtypes (NumPy has no such types)",
     r"quantize|qint8|quint8|float8"),
]
_COMPILED = [(name, reason, re.compile(pattern)) for name, reason, pattern in CATEGORIES]


def source_of(test) -> str:
    """The body of the test function behind a (parametrised, device-bound) test method, without its decorators
    (a parametrisation's decorator names every variant), and the variant's own name."""
    fn = inspect.unwrap(getattr(test, "_compat_source", test))
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = ""
    return source[source.find("def "):] + "\n" + getattr(test, "__name__", "")


def category_of(test) -> str | None:
    """The out-of-scope category a test belongs to, or None when it is in scope."""
    text = source_of(test)
    for name, _, pattern in _COMPILED:
        if pattern.search(text):
            return name
    return None
