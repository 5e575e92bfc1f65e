"""torch.onnx: importable so scripts that import it at the top run; exporting needs torch's tracer."""

from __future__ import annotations

from typing import Any, NoReturn


def export(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("retrograd cannot export ONNX: torch.onnx.export traces torch's C++ graph, which retrograd "
                       "does not have (export from torch with the same state_dict)")


def is_in_onnx_export() -> bool:
    return False
