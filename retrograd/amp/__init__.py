"""torch.amp: mixed precision's GradScaler and autocast, as far as a CPU-only NumPy engine can honour them.

GradScaler is torch's loss-scaling algorithm in full for the device "cpu" (scale the loss, unscale the
gradients, skip the step when one is inf or NaN, grow or back off the scale); for "cuda" it disables
itself with torch's warning, as torch does where CUDA is absent. autocast is a no-op when disabled or
asked for "cuda" (torch warns and disables there too); on the CPU it casts the inputs of torch's
listed ops to bfloat16 (or float16) or to float32 (Note [autocast on the CPU]).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.forward_ad import transforms
from ..autograd.grad_mode import no_grad

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

_DEVICES = ("cpu", "cuda")


def is_autocast_available(device_type: str) -> bool:
    return device_type in _DEVICES


def autocast_dtype(device_type: str) -> Any:
    """torch.get_autocast_dtype: the dtype of the innermost autocast block on the device (enabled or not, as in
    torch), else torch's default there."""
    for block in reversed(_open_blocks):
        if block.device == device_type and block.fast_dtype is not None:
            return block.fast_dtype
    return D.bfloat16 if device_type == "cpu" else D.float16


class GradScaler:
    """Dynamic loss scaling: `scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            enabled = False
        if not 0.0 < backoff_factor < 1.0 or growth_factor <= 1.0:
            raise AssertionError("The backoff factor must be < 1.0 and the growth factor > 1.0.")
        self._device, self._enabled = device, enabled
        self._scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._found_inf: dict[int, bool] = {}  # per optimizer (by id) unscaled since the last update()

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor, or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, Iterable):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale in place and note whether any is inf or NaN."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inverse = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(inverse)
                        found_inf = found_inf or not bool(p.grad.isfinite().all())
        self._found_inf[id(optimizer)] = found_inf

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """optimizer.step(), after unscaling, unless a gradient is inf or NaN (then the step is skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        return None if self._found_inf[id(optimizer)] else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off the scale after a skipped step; grow it after growth_interval good steps in a row."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf.clear()

    def state_dict(self) -> dict[str, Any]:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]


# Note [autocast on the CPU]
# torch's CPU autocast casts the floating inputs (float64 excepted) of the ops on its lower-precision list to
# the autocast dtype (bfloat16 by default) and those of its float32 list to float32; other ops run on what
# they are given. Here the cast is made per row of the rule table, in the choke point's transform path
# (registry._transformed_apply: nothing is paid while autocast is off), for the rows that torch's listed
# ops are made of: linear and matmul (mm, mv, dot, bmm, addmm, addbmm, baddbmm, matmul's rows),
# convolutions and prelu in lower precision; cross entropy, losses with rows of their own (nll_loss, mse,
# smooth l1, huber, binary cross entropy, margins...), prod, cdist, trace, the pads, 3-d pooling, the FFTs
# and some of linalg in float32. torch's other listed composites (l1_loss, kl_div, cosine_embedding_loss...)
# are not cast: their rows run on what they are given.
_LOWER_PRECISION_ROWS = ("mm", "mv", "dot", "vdot", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "matmul_nd",
                         "matmul_vec_mat", "matmul_folded_clone", "matmul_folded_transpose", "convolution", "prelu",
                         "_scaled_dot_product_flash_attention_for_cpu")
_FLOAT32_ROWS = ("avg_pool3d", "binary_cross_entropy", "binary_cross_entropy_with_logits", "polar", "prod_all",
                 "prod_dim", "cdist", "trace", "cholesky", "cholesky_inverse", "cholesky_solve", "linalg_pinv",
                 "max_pool3d_with_indices", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
                 "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss",
                 "nll_loss", "nll_loss2d", "smooth_l1_loss", "huber_loss", "soft_margin_loss", "multi_margin_loss",
                 "multilabel_margin_loss", "_ctc_loss", "fft_r2c", "fft_c2c", "fft_c2r",
                 "cross_entropy")  # a composite here: ops/nn.py casts its input (registry.autocast_input)


class autocast:  # noqa: N801 - torch's name
    """`with torch.autocast(device_type, dtype=None, enabled=True)`: a context manager and a decorator; on the
    CPU, torch's listed ops compute in `dtype` (bfloat16 by default) or float32 (Note [autocast on the CPU])."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            enabled = False
        dtype = D.bfloat16 if dtype is None and device_type == "cpu" else dtype
        if enabled and dtype not in (D.bfloat16, D.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.", stacklevel=2)
            enabled = False
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled
        self._outer: list = []

    def __enter__(self) -> autocast:
        _open_blocks.append(self)
        self._outer.append(transforms.autocast)
        transforms.autocast = {**dict.fromkeys(_LOWER_PRECISION_ROWS, self.fast_dtype),
                               **dict.fromkeys(_FLOAT32_ROWS, D.float32)} if self._enabled else None
        transforms.update()
        return self

    def __exit__(self, *exc: object) -> None:
        transforms.autocast = self._outer.pop()
        transforms.update()
        _open_blocks.remove(self)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return wrapper


_open_blocks: list[autocast] = []  # the autocast blocks entered and not yet left, innermost last


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """`value` with each floating tensor on `device_type` other than float64 cast to `dtype`, containers inside."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None) -> Callable:
    """Decorate a custom Function's forward for autocast: inside an autocast block on `device_type` it runs in
    that block's state, or, with `cast_inputs`, with autocast off and its floating inputs cast to that dtype.
    The state is noted on ctx for custom_bwd."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = autocast_dtype(device_type)
        enabled = device_type == "cpu" and transforms.autocast is not None
        ctx._fwd_used_autocast = enabled and cast_inputs is None
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))

    return forward


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorate a custom Function's backward to run in the autocast state its forward ran in (custom_fwd)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return backward

