"""nn.Parameter and nn.Buffer: tensors a Module registers when they are assigned as attributes."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a Module lists in `parameters()` (requires_grad=True by default).

    It shares memory with the tensor it wraps; computing with it gives plain Tensors.
    >>> p = Parameter(retrograd.zeros(3))
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        from .. import empty

        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor, got {type(data).__name__}")
        out = data.detach()  # same memory and version counter, no history
        out.__class__ = cls
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in __new__ (Tensor.__init__ would replace the data)."""

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild_parameter, (self._data, self._requires_grad))


def _rebuild_parameter(data: Any, requires_grad: bool) -> Parameter:
    from .._tensor import _wrap

    return Parameter(_wrap(data), requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    `persistent=False` keeps it out of the state_dict.
    """

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        from .. import empty

        source = (empty(0) if data is None else data).detach()
        out = object.__new__(cls)
        for slot in Tensor.__slots__:
            if slot != "__weakref__":
                setattr(out, slot, getattr(source, slot))
        out.persistent = persistent
        return out

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        """Everything happens in __new__."""
