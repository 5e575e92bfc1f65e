"""torch._C._autograd: the SavedTensor type of `grad_fn._raw_saved_*`, and whether saved-tensor hooks may be set."""

from __future__ import annotations

from ..autograd import graph
from ..autograd.graph import SavedTensor

__all__ = ["SavedTensor"]


def _saved_tensors_hooks_is_enabled() -> bool:
    """False inside torch.autograd.graph.disable_saved_tensors_hooks."""
    return not graph._hooks_disabled
