"""nn.Parameter and nn.Buffer: tensors a Module registers when they are assigned as attributes; and
UninitializedParameter and UninitializedBuffer, the shapeless placeholders a lazy module holds until its first
forward."""

from __future__ import annotations

from typing import Any

from .._memory_format import preserve_format
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
        return (_rebuild_parameter, (self._data, self._requires_grad), self.__dict__ or None)

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new Parameter around a clone of the data in its layout (a channels_last weight stays channels_last), with
        no grad and none of the attributes set on this one: torch's Parameter.__deepcopy__ (an EMA's copy of a model
        that has trained has no grads)."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.data.clone(memory_format=preserve_format), self.requires_grad)
        return memo[id(self)]


def _rebuild_parameter(data: Any, requires_grad: bool) -> Parameter:
    from .._tensor import _wrap

    return Parameter(_wrap(data), requires_grad)


class UninitializedTensorMixin:
    """What a lazy module's placeholders share: no shape until `materialize(shape)` turns them into their
    `cls_to_become` (a Parameter, or a plain Tensor for a buffer) of that shape."""

    __slots__ = ()
    cls_to_become: type

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Become a `cls_to_become` of `shape` (empty values; the module initialises them), in `dtype` or the
        one kept."""
        from .. import empty

        self.data = empty(shape, dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (type(self), (self.requires_grad, None, self.dtype))

    def __deepcopy__(self, memo: dict) -> Any:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, None, self.dtype)
        return memo[id(self)]


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, until its first forward): it keeps a dtype and
    requires_grad, and `materialize(shape)` turns it into an ordinary (uninitialised) Parameter of that shape."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        from .. import empty

        return super().__new__(cls, empty(0, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        """Everything happens in __new__."""


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy norm layer's running statistics): `materialize(shape)` turns it
    into a plain Tensor of that shape."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None, persistent: bool = True
                ) -> UninitializedBuffer:
        from .. import empty

        out = empty(0, dtype=dtype).requires_grad_(requires_grad)
        out.__class__ = cls
        return out

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None, persistent: bool = True
                 ) -> None:
        """Everything happens in __new__."""


def is_lazy(param: Any) -> bool:
    """Whether `param` is a lazy module's placeholder (an UninitializedParameter or UninitializedBuffer)."""
    return isinstance(param, UninitializedTensorMixin)


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
