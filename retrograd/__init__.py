"""retrograd: PyTorch's autograd in pure Python on NumPy. `import retrograd as torch`."""

from __future__ import annotations

import builtins as _builtins
import importlib as _importlib
import math as _math
import sys as _sys
import warnings
from typing import Any

from . import _dtype, _heap
from ._creation import (Generator, arange, as_tensor, bartlett_window, blackman_window, default_generator, empty,
                        asarray, empty_like, empty_permuted, from_dlpack, from_file, frombuffer, hamming_window,
                        hann_window, kaiser_window, to_dlpack,
                        empty_strided, eye, scalar_tensor, tril_indices, triu_indices,
                        from_numpy, full, full_like, get_rng_state, initial_seed, linspace, logspace, manual_seed, ones, ones_like, rand,
                        rand_like, randint, randint_like, randn, randn_like, randperm, seed, set_rng_state, tensor, zeros,
                        zeros_like)
from ._dtype import (bfloat16, bool_ as bool, complex32, complex64, complex128, dtype, finfo, iinfo, float16, float32, float64, get_default_dtype,  # noqa: A004
                     int8, int16, int32, int64, set_default_dtype, uint8, uint16, uint32, uint64)
from ._legacy import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
                      LongTensor, ShortTensor)
from ._layout import layout, strided
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
)
from . import _tensor, _xp
from ._tensor import Size, Tensor, device
from .storage import TypedStorage, UntypedStorage, is_storage
from ._warn import is_warn_always_enabled, set_warn_always
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                                 set_grad_enabled)
from .ops import *  # noqa: F403 - the op table is the public namespace
from .ops import __all__ as _ops_all
from .ops.linalg import REMOVED as _REMOVED
from .ops.complex import _conj, _neg_view
from .ops.nn_extra import _weight_norm, _weight_norm_interface, norm_except_dim
from .ops.random import _dirichlet_grad, _sample_dirichlet, _standard_gamma, _standard_gamma_grad
from .ops.reduction import _is_all_true, _is_any_true
from .ops.selection import _unique, _unique2
from . import autograd  # noqa: E402
from . import ops as _ops  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .autograd.forward_ad import transforms as _transforms  # noqa: E402

globals().update(_ops.nn.TOP_LEVEL)  # torch.embedding, torch.kl_div, ...: ATen's signatures (ops/nn.py)

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
chalf, cfloat, cdouble = complex32, complex64, complex128
inf, nan, pi, e = _math.inf, _math.nan, _math.pi, _math.e  # torch's constants
newaxis = None
from .version import __version__  # noqa: E402 - torch's format: "2.13.0+retrograd.0.1.0"

_xp.provide("meta", lambda: _importlib.import_module(".meta", __name__).BACKEND)  # retrograd/meta, on first use
_heap.keep_heap()  # glibc's heap stays mapped between steps (Note [heap kept between steps])


def resize_as_(input: Tensor, the_template: Tensor, **kwargs: Any) -> Tensor:
    """input resized in place to the_template's shape (``Tensor.resize_as_``; memory_format= is accepted)."""
    return input.resize_as_(the_template, **kwargs)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def typename(obj: Any) -> str:
    """A tensor's legacy type name (torch.FloatTensor), else the qualified name of obj's type, or of obj itself
    when it is a class or function."""
    if isinstance(obj, Tensor):
        return obj.type()
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    module = getattr(obj, "__module__", None) or named.__module__ or ""
    return named.__qualname__ if module in ("", "builtins") else f"{module}.{named.__qualname__}"


# Note [method forms]
# torch exposes many Tensor methods as functions too, the tensor first (`torch.exp_(x)` is `x.exp_()`,
# `torch.is_nonzero(x)` is `x.is_nonzero()`): each is written once here, calling the method, with torch's
# refusal of an input that is no tensor.
_METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "addmv_", "adjoint", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
    "fix_", "floor_", "frac_", "gcd_", "get_device", "i0_", "is_nonzero", "is_same_size", "is_signed", "lcm_",
    "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
    "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_")


def _method_form(name: str) -> Any:
    """torch.<name>(input, ...): input.<name>(...) (Note [method forms])."""

    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...): input.{name}(...)."
    return function


for _name in _METHOD_FORMS:
    globals()[_name] = _method_form(_name)


def is_inference(input: Tensor) -> bool:
    """True for a tensor made in inference mode (an inference tensor)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.is_inference()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def numel(input: Tensor) -> int:
    return input.numel()


def result_type(tensor: Any, other: Any) -> dtype:  # noqa: F811 - torch's parameter name
    """The dtype an arithmetic op of tensor and other gives (torch.result_type)."""
    return _dtype.result_type(tensor, other)


def promote_types(a: dtype, b: dtype) -> dtype:
    return _dtype.promote_types(a, b)


def can_cast(from_: dtype, to: dtype) -> bool:
    return from_.category <= to.category


def set_printoptions(**kwargs: Any) -> None:
    from ._printing import set_printoptions as _set

    _set(**kwargs)


def get_printoptions() -> dict:
    from ._printing import get_printoptions as _get

    return _get()


def compile(model: Any = None, *, mode: str | None = None, options: dict | None = None, disable: bool = False,
            **settings: Any) -> Any:
    """torch.compile: retrograd runs the model eagerly (said once in a warning). A module comes back wrapped in an
    OptimizedModule as under torch (its state_dict keys begin with `_orig_mod.`), a function as it is; usable as
    a decorator too."""
    if model is None:
        return lambda fn: compile(fn, mode=mode, options=options, disable=disable, **settings)
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if disable:
        return model
    from .jit import warn_once_eager

    warn_once_eager("torch.compile")
    from .nn import Module

    if isinstance(model, Module):
        from ._dynamo import OptimizedModule

        return OptimizedModule(model)
    return model


_threads: list[int] = []


def set_num_threads(n: int) -> None:
    """The size of NumPy's BLAS thread pool, through threadpoolctl when it is installed (else only recorded)."""
    if not isinstance(n, _builtins.int) or n <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, but got {n}")
    _threads[:] = [n]
    try:
        import threadpoolctl
    except ImportError:
        return
    threadpoolctl.threadpool_limits(n)


def get_num_threads() -> int:
    """The number set by set_num_threads, else the CPU's core count (torch's default)."""
    import os

    return _threads[0] if _threads else (os.cpu_count() or 1)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    return device_type == "cpu" and _transforms.autocast is not None  # CPU autocast only (retrograd.amp)


def _deprecated_autocast_query(old: str, new: str, answer: Any) -> Any:
    """torch's deprecated autocast queries: the answer of the newer spelling, with torch's DeprecationWarning."""
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)
    return answer


def is_autocast_cpu_enabled() -> bool:
    return _deprecated_autocast_query("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')",
                                      is_autocast_enabled("cpu"))


def get_autocast_cpu_dtype() -> dtype:
    return _deprecated_autocast_query("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')", get_autocast_dtype("cpu"))


def get_autocast_gpu_dtype() -> dtype:
    return _deprecated_autocast_query("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')",
                                      get_autocast_dtype("cuda"))


def get_autocast_dtype(device_type: str) -> dtype:
    """The dtype autocast computes in on device_type: the active CPU autocast's, else torch's default for the
    device (bfloat16 on the CPU, float16 elsewhere)."""
    from .amp import autocast_dtype

    return autocast_dtype(device_type)


def get_device_module(device: Any = None) -> Any:
    """The module of a device type (retrograd.cuda for "cuda"); the CPU's, retrograd.cpu, when none is given, as
    where torch finds no accelerator."""
    import importlib

    kind = "cpu" if device is None else device.type if isinstance(device, _tensor.device) else _tensor.device(device).type
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")
    return importlib.import_module(f"{__name__}.{kind}")


def is_vulkan_available() -> bool:
    return False


def cudnn_is_acceptable(tensor: Tensor) -> bool:
    """False: no cuDNN here."""
    return False


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch's global switch of anomaly detection (autograd.set_detect_anomaly without the context)."""
    autograd.set_detect_anomaly(enabled, check_nan)


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (torch.cuda.OutOfMemoryError): raised when a device runs out of memory."""


class AcceleratorError(RuntimeError):
    """torch.AcceleratorError: an error an accelerator's runtime reports."""


def range(start: float, end: float, step: float = 1, *, dtype: dtype | None = None, **factory: Any) -> Tensor:  # noqa: A001
    """torch.range, deprecated: start to end *inclusive* by step, in the default float dtype unless dtype is given."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = _builtins.int(_math.floor((end - start) / step)) + 1
    return tensor([start + i * step for i in _builtins.range(count)], dtype=dtype or get_default_dtype(), **factory)


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in torch: the default float dtype from a legacy tensor type (torch.DoubleTensor or its name);
    a CUDA type is refused, as retrograd makes tensors on the CPU by default."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    name = t if isinstance(t, str) else f"torch.{getattr(t, '__name__', t)}"
    if name.startswith("torch.cuda."):
        raise NotImplementedError("retrograd makes tensors on the CPU by default; pass device= to place them")
    from ._legacy import TYPES

    legacy = TYPES.get(name.removeprefix("torch."))
    if legacy is None:
        raise TypeError(f"invalid type: '{name}'")
    set_default_dtype(legacy.dtype)


def set_flush_denormal(mode: bool) -> bool:
    """False: NumPy gives no control of the CPU's denormal flushing, so it is left as it is (torch answers whether
    it could set it)."""
    return False


def get_num_interop_threads() -> int:
    """The threads torch would run independent ops on; retrograd runs ops one after another (only recorded)."""
    return _threads_interop[0] if _threads_interop else get_num_threads()


def set_num_interop_threads(n: int) -> None:
    """Recorded for get_num_interop_threads (retrograd runs ops one after another)."""
    if not isinstance(n, _builtins.int) or n <= 0:
        raise RuntimeError("Expected positive number of threads")
    _threads_interop[:] = [n]


def init_num_threads() -> None:
    """torch's per-thread thread-pool setup: nothing to set up here."""


_threads_interop: list[int] = []


_flags = {"matmul_precision": "highest", "deterministic": False, "warn_only": False}


def set_default_device(device: Any) -> None:
    """The device factories put tensors on when no `device=` is given (None: the CPU; Note [the default device]
    in _tensor.py). A device this machine lacks is accepted, as torch accepts it; making a tensor there raises."""
    where = None if device is None else _tensor.device(device)
    _tensor.DEFAULT_DEVICE[0] = None if where is None or where.type == "cpu" else where


def get_default_device() -> device:
    """The device factories use now: the innermost `with torch.device(...)`'s, else set_default_device's; a CUDA
    device without an index names the current one (torch's AssertionError without CUDA)."""
    where = _tensor.DEFAULT_DEVICE[-1]
    if where is None:
        return _tensor.CPU
    if where.type == "cuda" and where.index is None:
        from . import cuda as _cuda  # a lazy submodule (Note [lazy submodules])

        return _tensor.device("cuda", _cuda.current_device())
    return where


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded for get_float32_matmul_precision; NumPy's float32 matmuls always use full precision."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}, expected one of highest, high, medium")
    _flags["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _flags["matmul_precision"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded only: every retrograd kernel is deterministic already."""
    _flags["deterministic"] = _builtins.bool(mode)  # `bool` here is torch.bool
    _flags["warn_only"] = _builtins.bool(mode) and warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _flags["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _flags["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """torch's other spelling of use_deterministic_algorithms: "default" or 0, "warn" or 1, "error" or 2."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    return 0 if not _flags["deterministic"] else 1 if _flags["warn_only"] else 2


# Note [lazy submodules]
# torch's submodules are attributes of `torch` without an import of their own (`torch.nn.Linear` after
# `import torch`), yet most programs use a few of them, and loading every family made `import retrograd`
# twice as slow. The op table, Tensor and autograd load with the package; the families below load when a
# script first touches them, through the module __getattr__ (PEP 562), and then stay as ordinary
# attributes. `import retrograd.nn`, `from retrograd import nn` and pickles naming their classes import
# them as usual. Optional extras and new subsystems load this way too: never at `import retrograd`.
_LAZY_SUBMODULES = {"_C", "_VF", "_dynamo", "_vmap_internals", "accelerator", "amp", "backends", "compiler", "cpu",
                    "cuda", "datasets", "distributed", "distributions", "fft", "func", "jit", "linalg", "masked",
                    "multiprocessing", "nn", "onnx", "optim", "profiler", "random", "serialization", "signal", "special",
                    "testing", "utils", "version", "viz"}
_LAZY_NAMES = {"GradScaler": "amp", "autocast": "amp", "load": "serialization", "lobpcg": "_lobpcg",
               "save": "serialization",
               "vmap": "func"}  # name: module


def __getattr__(name: str) -> Any:
    """Load a lazy submodule or one of its names (Note [lazy submodules]); answer any other missing name by
    saying retrograd lacks torch's."""
    if name in _LAZY_SUBMODULES or name in _LAZY_NAMES:
        import importlib

        module = importlib.import_module(f"{__name__}.{_LAZY_NAMES.get(name, name)}")
        value = getattr(module, name) if name in _LAZY_NAMES else module
        globals()[name] = value
        return value
    if name.startswith("_foreach_"):
        from . import _foreach

        if hasattr(_foreach, name):
            globals()[name] = value = getattr(_foreach, name)
            return value
    raise AttributeError(f"retrograd does not support torch.{name} yet", name=name, obj=_sys.modules[__name__])


def __dir__() -> list[str]:
    """The loaded names and the lazy ones (Note [lazy submodules]), for dir(), help() and completion."""
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_NAMES))


_ops.registry.finalize(_ops._formula_namespace())
globals().update(_REMOVED)  # torch.symeig and the rest removed in 1.9: torch's names, not in its __all__
for _name in _ops_all:  # Note [out=]: torch's functions take out= (rows take it themselves), methods do not
    if callable(globals()[_name]) and not isinstance(globals()[_name], _ops.registry.Op):
        globals()[_name] = _ops.registry.accepting_out(globals()[_name], _name)
for _name in ("zeros", "ones", "empty", "full", "eye", "arange", "linspace", "logspace", "rand", "randn", "randint",
              "randperm"):  # the factories torch gives out= (Note [out=])
    globals()[_name] = _ops.registry.accepting_out(globals()[_name], _name, factory=True)

# Note [floating-point warnings]: NumPy reports out-of-domain values (log(0), 0/0, sqrt(-1)) with a
# RuntimeWarning; torch computes the same inf/nan silently. A filter for warnings raised from
# retrograd's own frames silences them at no cost per op (np.errstate is a context manager on every
# call); the user's own NumPy code keeps its warnings. A user filter set later (`-W error`) wins.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"retrograd(\.|$)")
