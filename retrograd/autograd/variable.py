"""torch.autograd.Variable: the pre-0.4 wrapper, kept by torch as an alias that makes tensors.

`Variable(t, requires_grad=True)` is `t.detach().requires_grad_(True)`, every tensor is an
instance of Variable, and `Variable._execution_engine` is where torch exposes its engine to
Python (queue_callback).
"""

from __future__ import annotations

import warnings
from typing import Any

from .engine import ImperativeEngine


class VariableMeta(type):
    """Makes `isinstance(t, Variable)` true for every tensor."""

    def __instancecheck__(cls, other: Any) -> bool:
        from .._tensor import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """Calling it returns a tensor: `data` detached (same memory and version counter), with the
    requested requires_grad."""

    _execution_engine = ImperativeEngine()

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:
        from .. import _creation
        from .._tensor import Tensor

        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = _creation.empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            if out.dtype.category < 2:
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
            out.requires_grad_(True)
        return out
