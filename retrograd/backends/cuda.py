"""torch.backends.cuda: CUDA matmul and attention flags with torch's defaults; CUDA is never built in."""

import contextlib
import warnings
from collections.abc import Iterator
from types import SimpleNamespace

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                         allow_bf16_reduced_precision_reduction=True)
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    return False


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = enabled


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = enabled


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = enabled


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = enabled


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> contextlib.AbstractContextManager:
    """torch's deprecated context manager (a FutureWarning): only the attention backends enabled here for the block,
    the flags restored after; nn.attention.sdpa_kernel is its successor."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=2)
    return _sdp_flags({"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient,
                       "cudnn": enable_cudnn})


@contextlib.contextmanager
def _sdp_flags(flags: dict) -> Iterator[dict]:
    """The attention backends' flags set to `flags` for a block, restored after (sdp_kernel, nn.attention's
    sdpa_kernel)."""
    previous = dict(_sdp)
    _sdp.update({name: bool(on) for name, on in flags.items()})
    try:
        yield {}
    finally:
        _sdp.update(previous)
