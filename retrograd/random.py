"""torch.random: the default generator's seeding and state, and fork_rng, which runs a block on a copy of the
random state and puts the state back after it (retrograd has only the CPU generator to fork)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ._creation import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Within the block, draw from the default generator as usual; after it, the state is as it was before."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
