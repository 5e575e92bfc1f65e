"""glibc's heap kept between training steps (Note [heap kept between steps]): set once at `import retrograd`."""

from __future__ import annotations

import ctypes
import os

# Note [heap kept between steps]
# NumPy allocates every array's data with malloc, and a training step makes hundreds of megabytes of arrays that
# die within the step. glibc's malloc serves arrays below its mmap threshold from the heap and gives the heap's
# free top back to the OS whenever it exceeds the trim threshold; both thresholds are dynamic (the mmap threshold
# rises to the largest mmapped block freed so far, at most 32 MiB, the trim threshold to twice that), so a step's
# memory is returned at the end of its backward and faulted in again, page by page, in the next forward. Measured
# on the GPT steps (workloads 8 and 9): 8,000-21,000 minor faults a step, 20-45 ms of system time in a 190 ms step,
# where torch's own step faults 0-2,000 times; the count depends on the heap's history (which arrays were the
# largest freed so far), not on any one op. glibc's `mallopt` fixes both thresholds instead: arrays under 32 MiB
# come from the heap, and up to 256 MiB of free top stays mapped, so the next step reuses the same pages (the GPT
# steps: 6 faults, no system time). It is set once, at import, only where the C library is glibc and the user has
# not chosen malloc's thresholds through its environment variables; `RETROGRAD_KEEP_HEAP=0` leaves malloc as it
# was. The cost: a process keeps up to 256 MiB of freed heap resident instead of returning it.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_MMAP_THRESHOLD = 32 << 20  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
_TRIM_THRESHOLD = 256 << 20
_MALLOC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def keep_heap() -> bool:
    """Fix glibc's mmap and trim thresholds (Note [heap kept between steps]); whether they were set."""
    if os.environ.get("RETROGRAD_KEEP_HEAP") == "0" or any(name in os.environ for name in _MALLOC_VARIABLES):
        return False
    try:
        libc = ctypes.CDLL(None)
    except (OSError, TypeError):  # no C library to open by name (Windows)
        return False
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):  # glibc's thresholds only
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
