"""The one seam to the array library: which namespace (NumPy today, CuPy tomorrow) computes on an array.

Forward code gets it as its `xp` argument (ops/registry.py); the engine asks for it where it makes
arrays itself (autograd/graph.py). This module imports nothing of retrograd, so both may load it first.
"""

from __future__ import annotations

import types

import numpy as np

_ndarray = np.ndarray


def namespace(array: object) -> types.ModuleType:
    """The array namespace that computes on `array`: the Python array API's `__array_namespace__`."""
    if type(array) is _ndarray:
        return np
    get = getattr(array, "__array_namespace__", None)
    return np if get is None else get()
