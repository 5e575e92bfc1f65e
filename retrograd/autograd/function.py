"""Custom autograd Functions: user-written forward and backward, recorded as one graph node.

`class Exp(Function)` gets a node class named `ExpBackward`, as in torch; each `Exp.apply(x)`
creates one node, which doubles as the `ctx` that forward and backward share.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from . import forward_ad, grad_mode
from .forward_ad import transforms
from .graph import NO_EDGE, Node, SavedTensor, edge_of


class FunctionCtx:
    """What forward and setup_context can record for backward (save_for_backward, marks, flags)."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for backward; they are checked against in-place changes when unpacked."""
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self.saved_for_forward = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """These outputs get requires_grad=False and no gradient flows back through them."""
        self._non_differentiable = {id(o) for o in outputs}

    def mark_dirty(self, *tensors: Any) -> None:
        """These inputs were modified in place by forward (and are returned as outputs)."""
        self._dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        """Whether undefined output gradients reach backward as zeros (True) or None."""
        self._materialize = value


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    _forward_cls: type
    _packed = False  # True in the classes of ctxs whose saved tensors went through saved-tensor hooks

    def __init__(self) -> None:
        super().__init__()
        self._to_save = ()
        self._saved = None
        self._non_differentiable: set = set()
        self._dirty: set = set()
        self._materialize = True
        self.needs_input_grad: tuple = ()

    @property
    def saved_tensors(self) -> tuple:
        from ..ops.registry import FREED_MESSAGE, SavedOutput, modified_message

        if self._saved is None:
            if not self._to_save:
                return ()
            raise RuntimeError(FREED_MESSAGE)
        out = []
        for item, version in self._saved:
            if type(item) is SavedOutput:
                out.append(item.unpack(self))
                continue
            if item is not None and version is not None and item._version_value() != version:
                raise RuntimeError(modified_message(item, version, self))
            out.append(item)
        return tuple(out)

    @property
    def _raw_saved_tensors(self) -> tuple:
        """What save_for_backward kept, as SavedTensors (one pair of saved-tensor hooks each)."""
        from ..ops.registry import FREED_MESSAGE

        if self._saved is None:
            if not self._to_save:
                return ()
            raise RuntimeError(FREED_MESSAGE)
        return tuple(SavedTensor._of(self, k, f"saved_tensors[{k}]") for k in range(len(self._saved)))

    def _register_saved_hooks(self, k: int, hooks: tuple) -> None:
        from ..ops.registry import register_function_saved_hooks

        register_function_saved_hooks(self, k, hooks)

    @property
    def saved_variables(self) -> tuple:
        """The old name of saved_tensors (deprecated, as in torch)."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def apply(self, grads: list) -> list:
        from .. import zeros

        if self._materialize:
            grads = [zeros(shape, dtype=dt) if g is None else g for g, (shape, dt) in zip(grads, self._out_meta)]
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self.next_functions)
        if len(result) != expected:
            if len(result) > expected and all(r is None for r in result[expected:]):
                result = result[:expected]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                                   f"{expected}, got {len(result)})")
        out = []
        for i, (g, meta, (node, _)) in enumerate(zip(result, self._in_meta, self.next_functions)):
            if meta is None:
                if g is not None and not self._input_was_tensor[i]:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                out.append(None)
                continue
            if g is None or node is None:
                out.append(None)
                continue
            shape, dtype = meta
            try:
                ok = np.broadcast_shapes(shape, g._data.shape) == g._data.shape
            except ValueError:
                ok = False
            if not ok:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                                   f"{list(g._data.shape)} but expected shape compatible with {list(shape)}")
            from ..ops.registry import _fit

            out.append(_fit(g, meta))
        return out

    def release(self) -> None:
        self._saved = None


class FunctionMeta(type):
    """Gives every Function subclass its node class, named `<Name>Backward` as in torch."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom differentiable operations; call them with `MyFn.apply(...)`.

    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, i):
    ...         result = i.exp()
    ...         ctx.save_for_backward(result)
    ...         return result
    ...     @staticmethod
    ...     def backward(ctx, grad_output):
    ...         result, = ctx.saved_tensors
    ...         return grad_output * result
    """

    generate_vmap_rule = False

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = cls._backward_cls()
        if transforms.active:  # forward AD, vmap or saved-tensor hooks in use (registry's Note [transforms])
            return forward_ad.function_apply(cls, ctx, args, kwargs)
        return cls._run(ctx, args, kwargs)

    @classmethod
    def _run(cls, ctx: Any, args: tuple, kwargs: dict) -> Any:
        """Run forward and record ctx as the outputs' node (apply without transforms)."""
        from .._tensor import Tensor
        from ..ops.registry import IN_CUSTOM_FUNCTION

        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        uses_setup = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if uses_setup:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, output)
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        # an input returned as it is becomes a view of itself, so its own history is untouched
        outputs = tuple(_alias(o) if isinstance(o, Tensor) and any(o is a for a in args) and id(o) not in ctx._dirty
                        else o for o in outputs)
        for o in outputs:  # views it returns refuse in-place writes (shape.py, Note [view creation meta]), but
            # for the inputs it wrote in place (torch rebases those as any in-place write to a view)
            if isinstance(o, Tensor) and o._base is not None and id(o) not in ctx._dirty \
                    and id(o) not in ctx._non_differentiable and o._data.dtype.kind in "fc":
                o._extra["creation_meta"] = IN_CUSTOM_FUNCTION
        record = grad_mode._state.enabled and any(ctx.needs_input_grad)
        if record:
            ctx.next_functions = tuple(edge_of(a) if isinstance(a, Tensor) and a._requires_grad else NO_EDGE
                                       for a in args)
            ctx._in_meta = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a._requires_grad else None
                                 for a in args)
            ctx._input_was_tensor = tuple(isinstance(a, Tensor) for a in args)
            ctx._out_meta = tuple((o._data.shape, o.dtype) if isinstance(o, Tensor) else ((), None) for o in outputs)
            for i, o in enumerate(outputs):
                if not isinstance(o, Tensor):
                    continue
                if id(o) in ctx._non_differentiable:
                    o._requires_grad = False
                    continue
                if id(o) in ctx._dirty:
                    o._check_inplace()
                    o._bump_version()
                o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
        else:
            for o in outputs:
                if isinstance(o, Tensor) and id(o) in ctx._dirty:
                    o._bump_version()
        ctx._saved = _pack_saved(ctx._to_save, outputs) if record else None
        if not record:
            ctx._to_save = ()
        return outputs[0] if single else outputs


def _alias(t: Any) -> Any:
    """An input returned as it is: a view of it made without recording (torch's view_as(self) in no_grad)."""
    from ..ops.shape import alias_op

    with grad_mode.no_grad():
        return alias_op(t)


def _pack_saved(tensors: tuple, outputs: tuple) -> list:
    """Saved inputs keep their version; saved outputs avoid a node -> tensor -> node cycle."""
    from ..ops.registry import SavedOutput

    packed = []
    for t in tensors:
        if t is None:
            packed.append((None, None))
        elif any(t is o for o in outputs) and t.grad_fn is not None:
            packed.append((SavedOutput(t), None))
        else:
            packed.append((t, t._version_value()))
    return packed


def once_differentiable(fn: Callable) -> Callable:
    """Mark a backward as not itself differentiable: it runs without recording a graph."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with grad_mode.no_grad():
            return fn(ctx, *args)

    return wrapper
