"""retrograd: PyTorch's autograd in pure Python on NumPy. `import retrograd as torch`."""

from __future__ import annotations

import builtins as _builtins
import math as _math
import sys as _sys
import warnings
from typing import Any

from . import _dtype
from ._creation import (Generator, arange, as_tensor, default_generator, empty, empty_like, empty_strided, eye,
                        from_numpy, full, full_like, initial_seed, linspace, logspace, manual_seed, normal, ones, ones_like, rand,
                        rand_like, randint, randint_like, randn, randn_like, randperm, seed, tensor, zeros,
                        zeros_like)
from ._dtype import (bool_ as bool, complex64, complex128, dtype, float16, float32, float64, get_default_dtype,  # noqa: A004
                     int8, int16, int32, int64, set_default_dtype, uint8)
from ._legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor,
                      LongTensor, ShortTensor)
from ._layout import layout, strided
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._tensor import Size, Tensor, device
from ._warn import is_warn_always_enabled, set_warn_always
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                                 set_grad_enabled)
from .ops import *  # noqa: F403 - the op table is the public namespace
from .ops import __all__ as _ops_all
from .ops.selection import _unique, _unique2
from . import autograd  # noqa: E402
from . import ops as _ops  # noqa: E402
from . import linalg, nn  # noqa: E402
from . import optim, testing, utils  # noqa: E402
from . import func  # noqa: E402
from . import _VF, _vmap_internals  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .func import vmap  # noqa: E402
from .serialization import load, save  # noqa: E402

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128
inf, nan, pi, e = _math.inf, _math.nan, _math.pi, _math.e  # torch's constants
from .version import __version__  # noqa: E402 - torch's format: "2.13.0+retrograd.0.1.0"


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


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


def result_type(a: Any, b: Any) -> dtype:
    from .ops.pointwise import _binary_dtype

    return _binary_dtype(a, b)


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


def compile(model: Any = None, **options: Any) -> Any:
    """torch.compile: retrograd runs the model eagerly (said once in a warning); usable as a decorator too."""
    if model is None:
        return lambda fn: compile(fn, **options)
    from .jit import warn_once_eager

    warn_once_eager("torch.compile")
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
    return False  # retrograd.amp.autocast never enables (see its docstring)


_flags = {"matmul_precision": "highest", "deterministic": False}


def set_float32_matmul_precision(precision: str) -> None:
    """Recorded for get_float32_matmul_precision; NumPy's float32 matmuls always use full precision."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}, expected one of highest, high, medium")
    _flags["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _flags["matmul_precision"]


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Recorded only: every retrograd kernel is deterministic already."""
    _flags["deterministic"] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    return _flags["deterministic"]


# torch's submodules that a script may reach as attributes without importing them, loaded on first use
_LAZY_SUBMODULES = {"accelerator", "amp", "backends", "cuda", "jit", "onnx", "version", "viz"}


def __getattr__(name: str) -> Any:
    """Load a lazy submodule; answer any other missing name by saying retrograd lacks torch's."""
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "autocast":
        from .amp import autocast

        return autocast
    raise AttributeError(f"retrograd does not support torch.{name} yet", name=name, obj=_sys.modules[__name__])


_ops.registry.finalize(_ops._formula_namespace())
for _name in _ops_all:  # Note [out=]: torch's functions take out= (rows take it themselves), methods do not
    if callable(globals()[_name]) and not isinstance(globals()[_name], _ops.registry.Op):
        globals()[_name] = _ops.registry.accepting_out(globals()[_name], _name)

# Note [floating-point warnings]: NumPy reports out-of-domain values (log(0), 0/0, sqrt(-1)) with a
# RuntimeWarning; torch computes the same inf/nan silently. A filter for warnings raised from
# retrograd's own frames silences them at no cost per op (np.errstate is a context manager on every
# call); the user's own NumPy code keeps its warnings. A user filter set later (`-W error`) wins.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"retrograd(\.|$)")
