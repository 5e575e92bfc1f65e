"""torch.cuda: CuPy's GPUs where CuPy is installed and sees one (`pip install retrograd[cuda]`), else the
answers of a torch built without CUDA.

Scripts written for GPUs start with `device = 'cuda' if torch.cuda.is_available() else 'cpu'` and a
seeding block. With CuPy and a GPU, 'cuda' tensors hold CuPy arrays (retrograd/_xp.py, Note [choosing a
namespace]). Without them the scripts take the CPU branch, exactly as on a torch built without CUDA, and
calls that need a device raise the AssertionError torch raises there. `rand`/`randn` on a GPU (dropout masks,
`rand_like`) draw from CuPy's generator there, seeded by `torch.manual_seed` and the CUDA seeding calls, its
streams not the CPU's, as in torch (Note [random numbers on a device]); other random ops draw on the host.
Memory counters stay at zero (CuPy's pool is not read).
"""

from __future__ import annotations

from typing import Any, NoReturn

from .. import _xp
from . import amp

__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name", "get_device_properties",
           "get_rng_state", "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
           "memory_reserved", "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state",
           "synchronize"]


def _no_device(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("Torch not compiled with CUDA enabled")  # torch's words on a CPU-only build


def _backend() -> _xp.Backend:
    found = _xp.backend("cuda")
    if found is None:
        _no_device()
    return found


def is_available() -> bool:
    return _xp.backend("cuda") is not None


def device_count() -> int:
    found = _xp.backend("cuda")
    return 0 if found is None else len(found.devices)


def is_initialized() -> bool:
    return is_available()


def current_device() -> int:
    _backend()
    return 0


def synchronize(device: Any = None) -> None:
    """Wait for the GPU's queued work (CuPy's device synchronize)."""
    _backend().synchronize()


def get_device_name(device: Any = None) -> str:
    return _backend().name


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Seeds the GPUs' generators (CuPy's; every GPU's, where torch seeds the current one); without a GPU
    there is none to seed, as on a CPU-only torch."""
    _xp.seed_devices(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every GPU's generator (none without a GPU)."""
    _xp.seed_devices(int(seed))


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


get_device_properties = get_rng_state = set_rng_state = set_device = _no_device
