"""Grad modes: whether ops record the graph, per thread, as context managers and decorators.

Two switches, as in torch: grad mode (`is_grad_enabled`) and inference mode. Ops record a graph
only with grad mode on and inference mode off; inside inference mode nothing is recorded even
under enable_grad, and the tensors ops make are inference tensors (Note [inference tensors]).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import warnings
from collections.abc import Callable, Generator
from typing import Any


# Note [thread-local modes]
# Each thread has its own modes, as in torch (a thread started inside no_grad records), so they
# live in a threading.local. Reading one of its attributes costs about 45 ns against 3-6 ns for a
# plain object's (the interpreter cannot specialise threading.local's attribute hook), and a write
# as much; every op reads one or two. A plain object would be one thread's modes seen by all, and
# Python 3.11 has no hook at thread start or switch that could keep it right; a ContextVar reads in
# about 13 ns but follows asyncio tasks and Context.run rather than threads (torch's modes leak
# across tasks on one thread; a ContextVar's would not). So the modes stay thread-local, and the
# hot paths touch them as rarely as they can: the engine and the mode switches write only what
# changes, the backward pass reads the thread's state once. The generated backward (ops/registry.py,
# Note [scalar overloads]) reads and writes `enabled` and `formula` in the thread's own dict, which one
# access to `__dict__` gives (dict reads and writes then cost about 10 ns), so each thread's dict holds
# both from its start.
class _State(threading.local):
    """Per-thread switches read on every op (class attributes are each thread's defaults)."""

    def __init__(self) -> None:
        """Run in each thread at its first access: the two switches the generated backward reads from `__dict__`."""
        self.enabled = True
        self.formula = False

    grad = True  # torch's grad mode: what is_grad_enabled() says
    inference = False  # inference mode
    enabled = True  # recording: grad mode on and inference mode off (set only with grad and inference)
    tracer = None  # an autograd.trace recording this thread's backward passes
    view_replay = False  # views record how to remake them, for all views (shape.py, Note [view replay])
    formula = False  # a rule's derivative formula is recording: numbers take Scalar overloads (Note [scalar overloads])
    fw_grad = True  # forward AD on: tangents are seen and computed (torch's fw_grad mode, _set_fwd_grad_enabled)


_state = _State()


def _set_modes(grad: bool, inference: bool) -> None:
    """Set both switches and the recording flag ops read."""
    _state.grad = grad
    _state.inference = inference
    _state.enabled = grad and not inference


def is_grad_enabled() -> bool:
    """True when grad mode is on (in this thread); ops record only outside inference mode too."""
    return _state.grad


def is_inference_mode_enabled() -> bool:
    """True inside an enabled inference_mode block (in this thread)."""
    return _state.inference


def _set_grad_enabled(mode: bool) -> None:
    """Grad mode on or off now, inference mode unchanged (torch._C._set_grad_enabled)."""
    mode = bool(mode)
    state = _state
    if state.grad is not mode:  # a thread-local write costs as much as a read (Note [thread-local modes])
        state.grad = mode
        state.enabled = mode and not state.inference


# ---- decorators: torch.utils._contextlib ---------------------------------------------------------

def _wrap_generator(ctx_factory: Callable, func: Callable) -> Callable:
    """A generator function whose every step (start, send, throw, close) runs inside a fresh context
    from `ctx_factory`, while its caller keeps its own mode between steps."""

    @functools.wraps(func)
    def generator_context(*args: Any, **kwargs: Any) -> Generator:
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


class _DecoratorContextManager:
    """A context manager that also decorates functions and generator functions (torch's base class)."""

    def __call__(self, orig_func: Callable) -> Callable:
        func = orig_func
        if inspect.isclass(orig_func):
            warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You should only "
                          "decorate functions or methods. To preserve the current behavior of class decoration, you "
                          "can directly decorate the `__init__` method and nothing else.", FutureWarning, stacklevel=2)

            def func(*args: Any, **kwargs: Any) -> Any:
                return orig_func(*args, **kwargs)

        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def decorate_context(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return decorate_context

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def clone(self) -> _DecoratorContextManager:
        """A fresh context for one decorated call (subclasses with parameters override it)."""
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Decorates without parentheses too: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


# ---- the modes -------------------------------------------------------------------------------------

class no_grad(_NoParamDecoratorContextManager):  # noqa: N801 - torch's name
    """Ops run without recording a graph: results have requires_grad=False."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _state.grad
        _set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self.prev)


class enable_grad(_NoParamDecoratorContextManager):  # noqa: N801
    """Grad mode on again, e.g. inside a no_grad block."""

    def __enter__(self) -> None:
        self.prev = _state.grad
        _set_grad_enabled(True)

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self.prev)


class _Switch(_DecoratorContextManager):
    """A mode set by a flag: it takes effect at construction, as torch's do, and a block or a decorated
    function restores what was before. Subclasses name how to read and set the mode."""

    @staticmethod
    def _get() -> bool:
        raise NotImplementedError

    @staticmethod
    def _set(mode: bool) -> None:
        raise NotImplementedError

    def __init__(self, mode: bool) -> None:
        self.prev = self._get()
        self.mode = mode
        self._set(mode)

    def __call__(self, orig_func: Callable) -> Callable:
        self._set(self.prev)  # as a decorator it changes nothing now
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        self._set(self.mode)

    def __exit__(self, *exc: object) -> None:
        self._set(self.prev)

    def clone(self) -> _Switch:
        return type(self)(self.mode)


class set_grad_enabled(_Switch):  # noqa: N801
    """Grad mode on or off by a flag; takes effect at construction, as torch's does."""

    _get, _set = staticmethod(is_grad_enabled), staticmethod(_set_grad_enabled)

    def __repr__(self) -> str:
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


def is_view_replay_enabled() -> bool:
    """True when every view records how to remake it, so an in-place write regenerates a view's history
    by replaying its view ops (ViewBackward0, ...) rather than as as_strided (Note [view replay])."""
    return _state.view_replay


def _set_view_replay_enabled(mode: bool) -> None:
    _state.view_replay = bool(mode)


class _force_original_view_tracking(_Switch):  # noqa: N801
    """View replay on or off by a flag (torch's private switch, for backends that cannot as_strided)."""

    _get, _set = staticmethod(is_view_replay_enabled), staticmethod(_set_view_replay_enabled)


class inference_mode(_DecoratorContextManager):  # noqa: N801
    """Inference mode on (grad mode off) or, with mode=False, off (grad mode on): nothing is recorded
    inside, and the tensors made inside are inference tensors (Note [inference tensors])."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # @inference_mode without parentheses

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self._prev = (_state.grad, _state.inference)
        _set_modes(not self.mode, self.mode)

    def __exit__(self, *exc: object) -> None:
        _set_modes(*self._prev)

    def clone(self) -> inference_mode:
        return type(self)(self.mode)
