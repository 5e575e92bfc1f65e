"""torch.multiprocessing: Python's multiprocessing, with torch's additions (spawn, sharing strategies).

For example::

    import torch.multiprocessing as mp
    mp.spawn(train, args=(world_size,), nprocs=world_size)   # train(rank, world_size) in each process

Every name of Python's `multiprocessing` is here (Process, Queue, Pool, get_context,
set_start_method, cpu_count, ...), plus `spawn` / `start_processes` (`fn(i, *args)` in each of
nprocs processes; a child's exception comes back as ProcessRaisedException with its traceback) and
the sharing-strategy calls.

What differs from torch: torch moves a CPU tensor put on a Queue into shared memory, so the
receiver sees the sender's storage and later in-place writes on either side. retrograd tensors
pass by pickling: the receiver gets a copy (same values, dtype, shape, requires_grad), and writes
on one side are not seen on the other. `set_sharing_strategy` is recorded and checked as torch's,
and changes nothing. Under `python -m retrograd.run`, children started by "spawn" or "forkserver"
answer `import torch` with retrograd too (retrograd/run.py).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 - Python's multiprocessing is the public namespace, as in torch

from .spawn import ProcessContext, ProcessExitedException, ProcessRaisedException, spawn, start_processes

SpawnContext = ProcessContext  # torch's older name

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
           "ProcessContext", "ProcessExitedException", "ProcessRaisedException", *multiprocessing.__all__]

# torch's strategies for CPU tensors: file descriptors (its default) where the OS allows, else named files
_all_sharing_strategies = {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform == "darwin" else "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy torch would use to share CPU tensors (tensors pass by copy here: see the docstring)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    return _all_sharing_strategies
