"""retrograd: PyTorch's autograd in pure Python on NumPy. `import retrograd as torch`."""

from __future__ import annotations

import math as _math
import warnings
from typing import Any

from . import _dtype
from ._creation import (Generator, arange, as_tensor, default_generator, empty, empty_like, eye, from_numpy, full,
                        full_like, initial_seed, linspace, logspace, manual_seed, normal, ones, ones_like, rand,
                        rand_like, randint, randint_like, randn, randn_like, randperm, seed, tensor, zeros,
                        zeros_like)
from ._dtype import (bool_ as bool, complex64, complex128, dtype, float16, float32, float64, get_default_dtype,  # noqa: A004
                     int8, int16, int32, int64, set_default_dtype, uint8)
from ._tensor import Size, Tensor, device
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                                 set_grad_enabled)
from .ops import *  # noqa: F403 - the op table is the public namespace
from .ops import __all__ as _ops_all
from . import autograd  # noqa: E402
from . import ops as _ops  # noqa: E402
from . import linalg, nn  # noqa: E402
from . import optim, utils  # noqa: E402
from . import func  # noqa: E402
from . import _vmap_internals  # noqa: E402
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .func import vmap  # noqa: E402
from .serialization import load, save  # noqa: E402

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128
inf, nan, pi, e = _math.inf, _math.nan, _math.pi, _math.e  # torch's constants
__version__ = "0.1.0"


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


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


_ops.registry.finalize(_ops._formula_namespace())

# Note [floating-point warnings]: NumPy reports out-of-domain values (log(0), 0/0, sqrt(-1)) with a
# RuntimeWarning; torch computes the same inf/nan silently. A filter for warnings raised from
# retrograd's own frames silences them at no cost per op (np.errstate is a context manager on every
# call); the user's own NumPy code keeps its warnings. A user filter set later (`-W error`) wins.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"retrograd(\.|$)")
