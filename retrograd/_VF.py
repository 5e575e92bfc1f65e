# ruff: noqa: N999 - torch's module name
"""torch._VF: the ATen functions that torch's Python wrappers (torch.unique, ...) call by name."""

from .ops.selection import unique_dim

__all__ = ["unique_dim"]
