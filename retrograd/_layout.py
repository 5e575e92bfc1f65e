"""torch's tensor layouts. Every retrograd tensor is dense (`torch.strided`): NumPy arrays with strides. The sparse
layouts are out of scope, so only `strided` exists and `Tensor.layout` is always it."""

from __future__ import annotations


class layout:  # noqa: N801 - torch's name
    """A tensor layout (torch.strided)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
