# ruff: noqa: N999 - torch's module name
"""torch._VF: the ATen functions that torch's Python wrappers (torch.unique, ...) call by name."""

from .ops.nn_extra import _pack_padded_sequence, _pad_packed_sequence
from .ops.selection import unique_dim

__all__ = ["_pack_padded_sequence", "_pad_packed_sequence", "unique_dim"]
