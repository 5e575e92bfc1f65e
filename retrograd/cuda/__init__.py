"""torch.cuda as a CPU-only torch answers it: no device, seeding that seeds nothing, memory counters at zero.

Scripts written for GPUs start with `device = 'cuda' if torch.cuda.is_available() else 'cpu'` and a
seeding block; on retrograd (NumPy, the CPU) they take the CPU branch, exactly as they do on a torch
built without CUDA. Calls that need a device raise the AssertionError torch raises there.
"""

from __future__ import annotations

from typing import Any, NoReturn

from . import amp

__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name", "get_device_properties",
           "get_rng_state", "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state",
           "synchronize"]


def _no_device(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("retrograd has no CUDA device: torch.cuda.is_available() is False (tensors live in "
                         "NumPy arrays on the CPU)")


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Seeds the (absent) CUDA generators: nothing to do, as on a CPU-only torch."""


def manual_seed_all(seed: int) -> None:
    """Seeds every (absent) CUDA generator: nothing to do."""


def seed() -> None:
    """Reseeds the (absent) CUDA generator: nothing to do."""


def seed_all() -> None:
    """Reseeds every (absent) CUDA generator: nothing to do."""


def empty_cache() -> None:
    """Frees the (absent) CUDA cache: nothing to do."""


def memory_allocated(device: Any = None) -> int:
    return 0


def max_memory_allocated(device: Any = None) -> int:
    return 0


def memory_reserved(device: Any = None) -> int:
    return 0


def max_memory_reserved(device: Any = None) -> int:
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    """Nothing was counted."""


synchronize = current_device = get_device_name = get_device_properties = _no_device
get_rng_state = set_rng_state = set_device = _no_device
