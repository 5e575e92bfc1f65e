"""torch.utils.hooks: the handle hook registrations return, and the marker for hooks a saved tensor may drop."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..autograd.graph import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f: Callable) -> Callable:
    """Mark `f` as a hook that is not saved with its tensor, which silences warn_if_has_hooks for it."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor: Any) -> None:
    """Warn for each backward hook on `tensor` that saving it will lose (unless marked unserializable)."""
    for hook in (tensor._backward_hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this "
                          "warning", stacklevel=2)
