"""torch.jit: TorchScript compiles for torch's runtime; retrograd runs the Python code as it is.

`script` and `trace` return what they are given (a module or function that runs eagerly), with one
warning saying so; the decorators that steer the compiler (`ignore`, `unused`, `export`) change
nothing; `save` and `load` of TorchScript archives raise, since there is no TorchScript here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")
_warned: set[str] = set()


def warn_once_eager(api: str) -> None:
    """Say once per API that retrograd runs the code eagerly instead of compiling it."""
    if api not in _warned:
        _warned.add(api)
        warnings.warn(f"retrograd runs {api} code eagerly: nothing is compiled", UserWarning, stacklevel=3)


def script(obj: T, *args: Any, **kwargs: Any) -> T:
    warn_once_eager("torch.jit.script")
    return obj


def trace(func: T, example_inputs: Any = None, *args: Any, **kwargs: Any) -> T:
    warn_once_eager("torch.jit.trace")
    return func


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn: Callable) -> Callable:
    return fn


def export(fn: Callable) -> Callable:
    return fn


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def save(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("retrograd has no TorchScript: torch.jit.save cannot write an archive (use torch.save of a "
                       "state_dict)")


def load(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("retrograd has no TorchScript: torch.jit.load cannot read an archive (use torch.load of a "
                       "state_dict)")
