"""DataLoader workers, run in the calling process with torch's seeds, worker info and order.

# Note [workers in one process]
# torch's DataLoader with num_workers=N forks N processes: each seeds Python's `random` and torch's generator with
# base_seed + its id and NumPy's global generator with a SeedSequence of both, sees its own `get_worker_info()`,
# runs `worker_init_fn(id)`, and takes batch k of a map-style dataset when k % N is its id; an iterable dataset is
# iterated by every worker on its own, the workers' batches coming round-robin until each ends. Here the workers are
# the same program run in turn in one process: each keeps its three random states and swaps them in while it
# fetches, so a dataset that draws random numbers (augmentations) or shards by worker id gives torch's batches in
# torch's order. What is not reproduced is the parallelism: NumPy work of this size gains little from processes.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _creation as C


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` tells code running in a DataLoader worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_current: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The running worker's id, count, seed and dataset; None outside a worker (in the main program)."""
    return _current


def _random_states() -> tuple:
    return random.getstate(), C.default_generator.get_state(), np.random.get_state()


def _set_random_states(states: tuple) -> None:
    random.setstate(states[0])
    C.default_generator.set_state(states[1])
    np.random.set_state(states[2])


class Workers:
    """N workers of one loader, each with its own random states (Note [workers in one process])."""

    def __init__(self, count: int, base_seed: int, dataset: Any, init_fn: Callable[[int], None] | None) -> None:
        self.infos = [WorkerInfo(i, count, base_seed + i, dataset) for i in range(count)]
        self.states = [(random.Random(info.seed).getstate(), C.Generator().manual_seed(info.seed).get_state(),
                        np.random.RandomState(np.random.SeedSequence(
                            [info.id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]).generate_state(4)).get_state())
                       for info in self.infos]
        if init_fn is not None:
            for info in self.infos:
                self.run(info.id, init_fn, info.id)

    def run(self, worker_id: int, function: Callable, *args: Any) -> Any:
        """`function(*args)` as worker `worker_id` runs it: its random states and worker info in place."""
        global _current
        main = _random_states()
        _set_random_states(self.states[worker_id])
        _current = self.infos[worker_id]
        try:
            return function(*args)
        except StopIteration:
            raise
        except Exception as error:
            raise _in_worker(error, worker_id) from None
        finally:
            _current = None
            self.states[worker_id] = _random_states()
            _set_random_states(main)


def _in_worker(error: Exception, worker_id: int) -> Exception:
    """The error as torch re-raises a worker's: its type, a message naming the worker, the original traceback."""
    message = (f"Caught {type(error).__name__} in DataLoader worker process {worker_id}.\nOriginal "
               f"{''.join(traceback.format_exception(error))}")
    try:
        return type(error)(message)
    except Exception:
        return RuntimeError(message)
