"""torch._foreach_*: one op applied across lists of tensors, as torch's optimizers and EMA code call them.

Each is the tensor op in a loop over the lists, so values, dtypes, in-place writes and the op's own errors are
the op's; the lists' checks (a list of tensors, equal lengths, a number per tensor) raise torch's errors. The
in-place forms return the list they were given. Under autograd each output carries its own op's node, where
torch groups a call's outputs under one `Foreach...Backward` node (README Limits).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from ._tensor import Tensor
from .ops.reduction import vector_norm

UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 neg reciprocal "
         "round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()
BINARY = "add sub mul div maximum minimum clamp_min clamp_max pow".split()  # a second operand per tensor
WITH_ALPHA = {"add", "sub"}
NUMBER_FORM = {"maximum": "clamp_min", "minimum": "clamp_max"}  # the tensor op that takes a number instead


def _tensors(name: str, value: Any, position: int = 1, arg: str = "self") -> list[Tensor]:
    """`value` as a non-empty list of tensors, else torch's argument error."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, Tensor) for t in value):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be tuple of Tensors, not "
                        f"{type(value).__name__}")
    if not value:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(value)


def _paired(tensors: list[Tensor], others: list[Tensor]) -> list[Tensor]:
    if len(others) != len(tensors):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and {len(others)}")
    return others


def _per_tensor(name: str, tensors: list[Tensor], other: Any, args: tuple) -> list:
    """The second operand for each tensor: a list of tensors or of numbers pairs up, a number or 0-d tensor repeats."""
    if isinstance(other, (list, tuple)):
        if all(isinstance(o, Tensor) for o in other):
            return _paired(tensors, list(other))
        if all(isinstance(o, numbers.Number) for o in other):
            if len(other) != len(tensors):
                raise RuntimeError("Tensor list must have same number of elements as scalar list.")
            return list(other)
    elif isinstance(other, Tensor):
        if other.ndim != 0:
            raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.ndim} dimensions and "
                               f"{other.numel()} elements.")
        return [other] * len(tensors)
    elif isinstance(other, numbers.Number):
        return [other] * len(tensors)
    got = ", ".join(type(a).__name__ for a in args)
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:")


def _unary(op: str, inplace: bool) -> Callable:
    name = f"_foreach_{op}{'_' * inplace}"

    def foreach(self: list[Tensor]) -> Any:
        results = tuple(getattr(t, op + "_" * inplace)() for t in _tensors(name, self))
        return self if inplace else results

    return _named(foreach, name, f"`Tensor.{op}{'_' * inplace}` of each tensor.")


def _binary(op: str, inplace: bool) -> Callable:
    name = f"_foreach_{op}{'_' * inplace}"
    method = op + "_" * inplace
    by_number = NUMBER_FORM.get(op, op) + "_" * inplace

    def foreach(self: Any, other: Any, **alpha: Any) -> Any:
        if op == "pow" and not inplace and isinstance(self, numbers.Number):  # a number to each tensor's power
            return tuple(t.__rpow__(self) for t in _tensors(name, other, 2, "exponent"))
        if alpha and (op not in WITH_ALPHA or set(alpha) != {"alpha"}):
            raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(alpha))}'")
        tensors = _tensors(name, self)
        results = tuple(getattr(t, method if isinstance(o, Tensor) else by_number)(o, **alpha)
                        for t, o in zip(tensors, _per_tensor(name, tensors, other, (self, other))))
        return self if inplace else results

    return _named(foreach, name, f"`Tensor.{method}` of each tensor with its own or a shared second operand.")


def _pointwise(op: str, inplace: bool) -> Callable:
    name = f"_foreach_{op}{'_' * inplace}"

    def foreach(self: list[Tensor], tensor1: list[Tensor], tensor2: list[Tensor], value: Any = 1) -> Any:
        tensors = _tensors(name, self)
        first = _paired(tensors, _tensors(name, tensor1, 2, "tensor1"))
        second = _paired(tensors, _tensors(name, tensor2, 3, "tensor2"))
        if isinstance(value, Tensor):  # one number per tensor
            if value.ndim != 1 or value.numel() != len(tensors):
                raise RuntimeError(f"Expected length of scalars to match input of length {len(tensors)} but got "
                                   f"{value.numel()} instead.")
            value = value.tolist()
        values = _per_tensor(name, tensors, value, (self, tensor1, tensor2, value))
        method = getattr(Tensor, op + "_" * inplace)
        results = tuple(method(t, a, b, value=v) for t, a, b, v in zip(tensors, first, second, values))
        return self if inplace else results

    return _named(foreach, name, f"`Tensor.{op}{'_' * inplace}` of each tensor with its own two factors.")


def _lerp(inplace: bool) -> Callable:
    name = f"_foreach_lerp{'_' * inplace}"

    def foreach(self: list[Tensor], tensors1: list[Tensor], weight: Any) -> Any:
        tensors = _tensors(name, self)
        ends = _paired(tensors, _tensors(name, tensors1, 2, "tensors1"))
        weights = _per_tensor(name, tensors, weight, (self, tensors1, weight))
        results = tuple(getattr(t, "lerp" + "_" * inplace)(e, w) for t, e, w in zip(tensors, ends, weights))
        return self if inplace else results

    return _named(foreach, name, "`Tensor.lerp` of each tensor towards its end (an EMA's update in place).")


def _named(function: Callable, name: str, doc: str) -> Callable:
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _foreach_norm(self: list[Tensor], ord: float = 2, dtype: Any = None) -> tuple[Tensor, ...]:  # noqa: A002
    """`linalg.vector_norm` of each tensor."""
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _tensors("_foreach_norm", self))


def _foreach_powsum(self: list[Tensor], ord: float = 2, dtype: Any = None) -> tuple[Tensor, ...]:  # noqa: A002
    """The sum of |x| ** ord of each tensor: its norm before the root."""
    return tuple((t if dtype is None else t.to(dtype)).abs().pow(ord).sum() for t in _tensors("_foreach_powsum", self))


def _foreach_max(self: list[Tensor]) -> tuple[Tensor, ...]:
    """The largest element of each tensor."""
    tensors = _tensors("_foreach_max", self)
    if any(t.numel() == 0 for t in tensors):
        raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over zero elements is "
                           "undefined.")
    return tuple(t.max() for t in tensors)


def _foreach_mm(self: list[Tensor], mat2: list[Tensor]) -> tuple[Tensor, ...]:
    """The matrix product of each pair."""
    tensors = _tensors("_foreach_mm", self)
    return tuple(t.mm(m) for t, m in zip(tensors, _paired(tensors, _tensors("_foreach_mm", mat2, 2, "mat2"))))


def _foreach_clone(self: list[Tensor], *, memory_format: Any = None) -> tuple[Tensor, ...]:
    """A copy of each tensor."""
    return tuple(t.clone() for t in _tensors("_foreach_clone", self))


def _foreach_zero_(self: list[Tensor]) -> list[Tensor]:
    """Zero each tensor in place."""
    for t in _tensors("_foreach_zero_", self):
        t.zero_()
    return self


def _foreach_copy_(self: list[Tensor], src: list[Tensor], non_blocking: bool = False) -> list[Tensor]:
    """Copy each source into its tensor in place."""
    tensors = _tensors("_foreach_copy_", self)
    for t, s in zip(tensors, _paired(tensors, _tensors("_foreach_copy_", src, 2, "src"))):
        t.copy_(s)
    return self


for _inplace in (False, True):
    for _function in ([_unary(op, _inplace) for op in UNARY] + [_binary(op, _inplace) for op in BINARY]
                      + [_pointwise(op, _inplace) for op in ("addcmul", "addcdiv")] + [_lerp(_inplace)]):
        globals()[_function.__name__] = _function
del _inplace, _function
