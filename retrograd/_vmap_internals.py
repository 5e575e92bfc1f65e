"""torch._vmap_internals: torch's legacy vmap, which gradcheck's batched forward-mode check uses.

It is vmap (autograd/batched.py) with one difference torch keeps: a random operation inside it
always fails, with the legacy text (there is no randomness= choice).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .autograd.batched import _vmap_call


def _vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0) -> Callable:
    """Vectorise `func` over a dim of its inputs, refusing random operations (torch's legacy vmap)."""

    @functools.wraps(func)
    def wrapped(*args: Any) -> Any:
        return _vmap_call(func, in_dims, out_dims, "legacy", None, args, {})

    return wrapped
