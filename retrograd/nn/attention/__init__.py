"""torch.nn.attention: the choice of kernel for F.scaled_dot_product_attention.

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v)

retrograd has one kernel, the math one (NumPy), so every backend is accepted and the attention
runs the same whichever is chosen; `sdpa_kernel` sets and restores the flags
`torch.backends.cuda.*_sdp_enabled()` report, as torch's does. torch's submodules `bias`
(causal masks) and `flex_attention` are not built: using them raises saying so.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from typing import Any

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

WARN_FOR_UNFUSED_KERNELS = False  # torch warns why a fused kernel could not run; retrograd has none


class SDPBackend(enum.Enum):
    """The backends of scaled dot product attention, torch's members and values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value


# backend: the name of the flag torch.backends.cuda reports for it
_FLAGS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash", SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
          SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False) -> Iterator[dict]:
    """Enable only `backends` for the block (torch.backends.cuda's flags), then restore the flags; retrograd's
    one math kernel runs whichever is enabled. `set_priority` (an order among them) changes nothing here."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    with _cuda._sdp_flags({flag: backend in chosen for backend, flag in _FLAGS.items()}) as context:
        yield context


_FLASH_IMPLS = ["FA3", "FA4"]  # torch's names; neither is built here


def list_flash_attention_impls() -> list[str]:
    """The flash-attention implementations torch knows (none of them is built into retrograd)."""
    return list(_FLASH_IMPLS)


def current_flash_attention_impl() -> str | None:
    return None


def register_flash_attention_impl(impl: str, *, register_fn: Any) -> None:
    raise NotImplementedError("retrograd has no flash-attention kernels: register_flash_attention_impl is not built")


def activate_flash_attention_impl(impl: str) -> None:
    if impl not in _FLASH_IMPLS:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: {_FLASH_IMPLS}")
    raise NotImplementedError(f"retrograd has no flash-attention kernels: {impl} cannot be activated")


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Nothing to restore: no implementation can be activated."""


def __getattr__(name: str) -> Any:
    """torch's submodules that are not built say so."""
    if name in ("bias", "flex_attention", "experimental", "varlen"):
        raise AttributeError(f"retrograd does not build torch.nn.attention.{name} (only SDPBackend and sdpa_kernel)",
                             name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
