"""torch._C, the part Python code reaches for autograd: the engine's view of the running backward pass, grad and
forward-AD switches, weak tensor references, and the node classes of `_functions` and `_autograd`.

torch._C is torch's C++ extension; everything else in it (the dispatcher, TorchScript, storages) has no counterpart
here and stays missing, so code that needs it fails at the name.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..autograd import engine, grad_mode
from ..autograd.forward_ad import _set_fwd_grad_enabled as _forward_ad_switch
from ..autograd.graph import Node
from ..ops.linalg import _LinAlgError  # noqa: F401 - torch._C._LinAlgError, torch.linalg.LinAlgError's own name
from . import _autograd, _functions

__all__ = ["_autograd", "_functions", "is_grad_enabled"]

is_grad_enabled = grad_mode.is_grad_enabled
_current_graph_task_id = engine.current_graph_task_id
_will_engine_execute_node = engine.will_engine_execute_node
_current_graph_task_execution_order = engine.current_execution_order


def _current_autograd_node() -> Node | None:
    """The node the running backward pass is running, None outside backward."""
    return engine.current_autograd_node()


def _set_grad_enabled(mode: bool) -> None:
    """Switch grad mode on or off in this thread (torch.set_grad_enabled's function form)."""
    grad_mode.set_grad_enabled(mode)


def _set_fwd_grad_enabled(mode: bool) -> None:
    """Switch forward AD on or off in this thread."""
    _forward_ad_switch(mode)


class _WeakTensorRef:
    """A weak reference to a tensor that says whether the tensor is gone (tests of what keeps tensors alive)."""

    def __init__(self, tensor: Any) -> None:
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        return self._ref() is None
