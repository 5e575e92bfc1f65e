"""Grad modes: whether ops record the graph, per thread, as context managers and decorators."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class _State(threading.local):
    """Per-thread switches read on every op (class attributes are each thread's defaults)."""

    enabled = True
    inference = False
    tracer = None  # an autograd.trace recording this thread's backward passes


_state = _State()


def is_grad_enabled() -> bool:
    """True when ops on tensors that require grad record a graph (in this thread)."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _Mode:
    """Base of the grad-mode context managers: sets the mode on entry, restores it on exit.

    Each one also decorates functions (`@no_grad()` or `@no_grad`), as in torch.
    """

    def __new__(cls, func: Callable | None = None, *args: Any, **kwargs: Any) -> Any:
        self = super().__new__(cls)
        if callable(func) and not isinstance(func, bool):
            self.__init__()
            return self(func)
        return self

    def __init__(self) -> None:
        self._prev: list = []

    def _set(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._prev.append((_state.enabled, _state.inference))
        self._set()

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.inference = self._prev.pop()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self) -> _Mode:
        return type(self)()


class no_grad(_Mode):  # noqa: N801 - torch's name
    """Ops run without recording a graph: results have requires_grad=False."""

    def _set(self) -> None:
        _state.enabled = False


class enable_grad(_Mode):  # noqa: N801
    """Recording on again, e.g. inside a no_grad block."""

    def _set(self) -> None:
        _state.enabled = True


class set_grad_enabled(_Mode):  # noqa: N801
    """Recording on or off by a flag; takes effect at construction, as torch's does."""

    def __new__(cls, mode: bool) -> set_grad_enabled:
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self.mode = bool(mode)
        self._prev.append((_state.enabled, _state.inference))
        _state.enabled = self.mode

    def _set(self) -> None:
        _state.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self.mode)  # takes effect now; the with block's exit restores

    def __call__(self, func: Callable) -> Callable:
        _state.enabled, _state.inference = self._prev.pop()  # as a decorator it changes nothing now
        return super().__call__(func)


class inference_mode(_Mode):  # noqa: N801
    """Like no_grad, and tensors made inside are inference tensors (cannot be saved for backward)."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):
            self = object.__new__(cls)
            self.__init__()
            return self(mode)
        return object.__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self.mode = mode

    def _set(self) -> None:
        if self.mode:
            _state.enabled, _state.inference = False, True

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)
