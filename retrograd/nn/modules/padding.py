"""Padding layers: constant (zero), reflection, replication and circular padding in 1-D, 2-D and 3-D, through
`functional.pad`. `padding` is one int for every side or torch's tuple (left, right[, top, bottom[, front, back]])."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .module import Module


class _PadNd(Module):
    n_dims: int
    mode: str

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (list, tuple)) else (padding,) * (2 * self.n_dims)
        if self.mode == "constant":
            self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}" if self.mode == "constant" else f"{self.padding}"


class _ZeroPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _padding_classes(kind: str, mode: str, base: type = _PadNd) -> tuple[type, ...]:
    """<kind>Pad1d, 2d and 3d."""
    return tuple(type(f"{kind}Pad{n}d", (base,), {"mode": mode, "n_dims": n, "__module__": __name__,
                                                  "__doc__": f"{kind} padding of the last {n} dimension(s)."})
                 for n in (1, 2, 3))


ConstantPad1d, ConstantPad2d, ConstantPad3d = _padding_classes("Constant", "constant")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _padding_classes("Reflection", "reflect")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _padding_classes("Replication", "replicate")
CircularPad1d, CircularPad2d, CircularPad3d = _padding_classes("Circular", "circular")
ZeroPad1d, ZeroPad2d, ZeroPad3d = _padding_classes("Zero", "constant", _ZeroPadNd)

__all__ = [f"{kind}Pad{n}d" for kind in ("Constant", "Reflection", "Replication", "Circular", "Zero")
           for n in (1, 2, 3)]
