"""torch.nn.utils.stateless: the pre-2.0 home of functional_call, kept by torch as a deprecated alias."""

from __future__ import annotations

import warnings
from typing import Any

from ..modules.module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """torch.func.functional_call, with torch's deprecation warning."""
    from ...func import functional_call as func_functional_call

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return func_functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
