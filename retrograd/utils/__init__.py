"""torch.utils for retrograd: `data` (datasets and loaders); other submodules load on first use."""

from __future__ import annotations

import importlib
from types import ModuleType

from . import data


def __getattr__(name: str) -> ModuleType:
    """`retrograd.utils.checkpoint` and friends, imported when first touched (as torch's are by then)."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


__all__ = ["data"]
