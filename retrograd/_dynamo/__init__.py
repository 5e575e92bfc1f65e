"""torch._dynamo, the part scripts touch: retrograd compiles nothing and runs every model eagerly.

`torch.compile(module)` returns an `OptimizedModule` (eval_frame.py) that wraps the module as torch's does, so the
code around it sees what it sees under torch: state_dict keys that begin with `_orig_mod.`, attribute reads and
writes that reach the wrapped module. `config` takes the settings scripts write and refuses unknown names as torch
does; `reset`, `disable` and `mark_dynamic` have nothing to act on.
"""

from __future__ import annotations

from typing import Any

from ..compiler import disable, is_compiling, reset
from .eval_frame import OptimizedModule

__all__ = ["OptimizedModule", "config", "disable", "is_compiling", "mark_dynamic", "reset"]


class _Config:
    """torch._dynamo.config's common settings, with torch's defaults; nothing reads them here."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {
            "suppress_errors": False, "cache_size_limit": 8, "recompile_limit": 8,
            "accumulated_cache_size_limit": 256, "verbose": False, "capture_scalar_outputs": False,
            "capture_dynamic_output_shape_ops": False, "optimize_ddp": True, "automatic_dynamic_shapes": True,
            "assume_static_by_default": True})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")
        self._values[name] = value


config = _Config()


def mark_dynamic(tensor: Any, index: Any, **kwargs: Any) -> None:
    """A hint to the compiler about a dimension that varies: ignored, nothing is compiled."""
