"""torch.compiler: retrograd compiles nothing (torch.compile runs eagerly, retrograd/__init__.py), so the queries
answer as torch's do outside a compiled region and the markers for the compiler leave functions as they are."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends", "reset", "set_stance",
           "substitute_in_graph"]


def compile(*args: Any, **kwargs: Any) -> Any:  # noqa: A001 - torch's name
    """torch.compiler.compile: torch.compile."""
    from . import compile as compile_

    return compile_(*args, **kwargs)


def is_compiling() -> bool:
    """False: no code runs under a compiler here."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """The function as it is: it runs eagerly, as everything here does (usable as @disable or @disable(...))."""
    return fn if fn is not None else (lambda marked: marked)


def allow_in_graph(fn: Callable) -> Callable:
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    return fn


def substitute_in_graph(original_fn: Callable, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False) -> Callable:
    """A decorator torch's compiler uses to trace a Python version of original_fn; here original_fn stays in use."""
    return lambda substitute: substitute


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend: Any = None) -> Any:
    """A context manager and decorator choosing how torch.compile behaves; nothing changes here."""
    import contextlib

    return contextlib.nullcontext()


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """No compiler backend: retrograd runs models eagerly."""
    return []


def reset() -> None:
    """torch clears its compilation caches; there are none here."""


def cudagraph_mark_step_begin() -> None:
    """torch marks a new CUDA-graph step; no graphs are captured here."""
