"""Custom autograd Functions: user-written forward and backward, recorded as one graph node.

`class Exp(Function)` gets a node class named `ExpBackward`, as in torch; each `Exp.apply(x)`
creates one node, which doubles as the `ctx` that forward and backward share.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _creation  # partly loaded while autograd loads (read at call time)
from . import forward_ad, grad_mode
from .forward_ad import transforms
from .graph import NO_EDGE, Node, SavedTensor, edge_of


class FunctionCtx:
    """What forward and setup_context can record for backward (save_for_backward, marks, flags)."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for backward; they are checked against in-place changes when unpacked."""
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for jvp, which reads them as ctx.saved_tensors (None where not a tensor)."""
        from .._tensor import Tensor

        if not all(t is None or isinstance(t, Tensor) for t in tensors):
            raise AssertionError("save_for_forward expects all arguments to be tensors; you should save non-tensors "
                                 "as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """These outputs get requires_grad=False and no gradient flows back through them."""
        self._non_differentiable = {id(o) for o in outputs}

    def mark_dirty(self, *tensors: Any) -> None:
        """These inputs were modified in place by forward (and are returned as outputs)."""
        self._dirty = {id(t) for t in tensors}

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Deprecated and a no-op, as in torch (shared storages are tracked by themselves); torch's
        `@deprecated` decorator warns FutureWarning at the caller's line."""
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are automatically tracked. "
                      "Note that calls to `set_()` are not tracked", FutureWarning, stacklevel=2)

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
        self._kept = None
        self._non_differentiable: set = set()
        self._dirty: set = set()
        self._materialize = True
        self._materialize_non_diff_grads = True  # torch's private switch: False passes None for those outputs
        self._forward_saved: tuple | None = None  # while jvp runs: what forward saved for it
        self.needs_input_grad: tuple = ()

    def __repr__(self) -> str:
        """As torch prints a Function's node: a Python class of torch.autograd.function (ops' nodes print bare)."""
        return f"<torch.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    @property
    def saved_tensors(self) -> tuple:
        from ..ops.registry import (  # the op table loads after autograd's core
            FREED_MESSAGE,
            SavedOutput,
            modified_message,
        )

        if self._forward_saved is not None:  # inside jvp (torch: the tensors given to save_for_forward)
            return self._forward_saved
        if self._kept is None:
            if not self._to_save:
                return ()
            raise RuntimeError(FREED_MESSAGE)
        out = []
        for item, version in self._kept:
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
        from ..ops.registry import FREED_MESSAGE  # the op table loads after autograd's core

        if self._kept is None:
            if not self._to_save:
                return ()
            raise RuntimeError(FREED_MESSAGE)
        return tuple(SavedTensor._of(self, k, f"saved_tensors[{k}]") for k in range(len(self._kept)))

    def _register_saved_hooks(self, k: int, hooks: tuple) -> None:
        from ..ops.registry import register_function_saved_hooks  # the op table loads after autograd's core

        register_function_saved_hooks(self, k, hooks)

    @property
    def saved_variables(self) -> tuple:
        """The old name of saved_tensors (deprecated, as in torch)."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def apply(self, grads: list) -> list:
        if self._materialize:
            grads = [g if g is not None or dt is None or not (differentiable or self._materialize_non_diff_grads)
                     else _creation.zeros(shape, dtype=dt)
                     for g, (shape, dt), differentiable in zip(grads, self._out_meta, self._out_differentiable)]
        result = _user_backward(self._forward_cls)(self, *grads)
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
            from ..ops.registry import _fit  # the op table loads after autograd's core

            out.append(_fit(g, meta))
        return out

    def release(self) -> None:
        self._kept = None


def _user_backward(cls: type) -> Callable:
    """The Function's backward formula: `vjp` or `backward`, whichever it defines (not both)."""
    backward, vjp = cls.backward, cls.vjp
    if backward is not Function.backward and vjp is not Function.vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return vjp if vjp is not Function.vjp else backward


class Error(Node):
    """A node whose backward raises: what once_differentiable attaches to a backward's outputs."""

    __slots__ = ("message", "_out_meta")

    def __init__(self, message: str, inputs: tuple) -> None:
        super().__init__()
        self.message = message
        self.next_functions = tuple(NO_EDGE if t is None else edge_of(t) for t in inputs)
        self._out_meta = tuple(((), None) if t is None else (t._data.shape, t.dtype) for t in inputs) \
            if len(inputs) != 1 else None

    def name(self) -> str:
        return "torch::autograd::Error"

    def apply(self, grads: list) -> list:
        raise RuntimeError(self.message)


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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

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

    @staticmethod
    def vmap(info: Any, in_dims: tuple, *args: Any) -> Any:
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap staticmethod "
                                  "or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.setup_context is not Function.setup_context:  # setup_context sees forward's defaults too
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, {}
        if cls.setup_context is Function.setup_context and any(getattr(entry, "randomness", None) != "legacy"
                                                               for entry in transforms.stack):
            # a torch.func transform runs (torch's legacy _vmap, gradcheck's batched check, runs the Function)
            raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
                               "jacrev, ...), it must override the setup_context staticmethod. For more details, "
                               "please see https://pytorch.org/docs/main/notes/extending.func.html")
        ctx = cls._backward_cls()
        if transforms.active:  # forward AD, vmap or saved-tensor hooks in use (registry's Note [transforms])
            return forward_ad.function_apply(cls, ctx, args, kwargs)
        return cls._run(ctx, args, kwargs)[0]

    @classmethod
    def _run(cls, ctx: Any, args: tuple, kwargs: dict) -> tuple:
        """Run forward and record ctx as the outputs' node (apply without transforms). Returns what
        apply returns and, for forward AD, forward's own outputs (before inputs returned as they are
        became views of them)."""
        from .._tensor import Tensor
        from ..ops.registry import IN_CUSTOM_FUNCTION  # the op table loads after autograd's core

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
        raw = (output,) if single else output
        if ctx._dirty and not ctx._dirty <= {id(o) for o in raw}:
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
        record = grad_mode._state.enabled and any(ctx.needs_input_grad)
        if record:
            ctx.next_functions = tuple(edge_of(a) if isinstance(a, Tensor) and a._requires_grad else NO_EDGE
                                       for a in args)
            ctx._in_meta = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) and a._requires_grad else None
                                 for a in args)
            ctx._input_was_tensor = tuple(isinstance(a, Tensor) for a in args)
            ctx._out_meta = tuple((o._data.shape, o.dtype) if isinstance(o, Tensor) else ((), None) for o in raw)
        outputs = tuple(_set_history(ctx, o, i, args, len(raw), record) if isinstance(o, Tensor) else o
                        for i, o in enumerate(raw))
        for o in outputs:  # views it returns refuse in-place writes (shape.py, Note [view creation meta]), but
            # for the inputs it wrote in place (torch rebases those as any in-place write to a view)
            if isinstance(o, Tensor) and o._base is not None and id(o) not in ctx._dirty \
                    and id(o) not in ctx._non_differentiable and o.dtype.category >= 2:
                o._extra_dict()["creation_meta"] = IN_CUSTOM_FUNCTION
        if record:
            ctx._out_differentiable = tuple(isinstance(o, Tensor) and o.grad_fn is ctx for o in outputs)
        ctx._kept = _pack_saved(ctx._to_save, outputs) if record else None
        if not record:
            ctx._to_save = ()
        return (outputs[0] if single else outputs), raw


def _set_history(ctx: Any, out: Any, output_nr: int, args: tuple, n_outputs: int, record: bool) -> Any:
    """torch's treatment of one tensor forward returned: the tensor apply returns, with `ctx` as its
    node when it is differentiable. An input returned as it is comes back as a view of it (torch's
    view_as under no_grad), so its own history is untouched; an input marked dirty keeps its identity
    and gets the node in place of its old history."""
    is_input = any(out is a for a in args)
    dirty = id(out) in ctx._dirty
    if not (record and id(out) not in ctx._non_differentiable and (out.is_floating_point() or out.is_complex())):
        if dirty:
            out._bump_version()
        if not out._requires_grad:
            return _view_of_self(out) if is_input and not dirty else out
        if is_input:
            return out.detach()
        if out._base is None:
            out.detach_()
        return out
    if dirty:
        if out._requires_grad and out.grad_fn is None and out._base is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if not is_input:
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                          "mutated should be passed to ctx.mark_dirty().", stacklevel=4)
        if out._base is not None and n_outputs > 1:
            raise RuntimeError(_DIRTY_VIEW_MESSAGE)
        out._check_inplace()
        out._bump_version()
        out.grad_fn, out._output_nr, out._requires_grad = ctx, output_nr, True
        from .._tensor import has_views  # Tensor and the op table load after autograd's core
        from ..ops.shape import rebase_view

        if out._base is not None or has_views(out):  # a view, or a base that may have views
            rebase_view(out)
        return out
    if is_input:
        out = _view_of_self(out)
    out.grad_fn, out._output_nr, out._requires_grad = ctx, output_nr, True
    return out


_DIRTY_VIEW_MESSAGE = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more "
    "than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is "
    "not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it "
    "into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change.")


def _view_of_self(t: Any) -> Any:
    """t.view_as(t) made with no gradient and no tangent recorded (torch's _view_as_self_with_no_grad)."""
    with grad_mode.no_grad(), forward_ad.hidden_levels():
        return t.view_as(t)


class InplaceFunction(Function):
    """A Function that may work in place when made with inplace=True (torch's legacy helper)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


def _pack_saved(tensors: tuple, outputs: tuple) -> list:
    """Saved inputs keep their version; saved outputs avoid a node -> tensor -> node cycle. Anything but a tensor
    or None is refused, as torch refuses it once forward has returned."""
    from .._tensor import Tensor, argument_type_name  # _tensor imports autograd at its top
    from ..ops.registry import SavedOutput  # the op table loads after autograd's core

    packed = []
    for i, t in enumerate(tensors):
        if t is None:
            packed.append((None, None))
        elif not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                            f"{argument_type_name(t)}")
        elif any(t is o for o in outputs) and t.grad_fn is not None:
            packed.append((SavedOutput(t), None))
        else:
            packed.append((t, t._version_value()))
    return packed


def once_differentiable(fn: Callable) -> Callable:
    """Mark a backward as not itself differentiable: it runs without recording a graph, and when
    it runs under create_graph its outputs lead to a node that raises if differentiated."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        from .._tensor import Tensor

        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode._state.enabled or not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        aliases = tuple(None if o is None else o.detach().requires_grad_() for o in ((outputs,) if single else outputs))
        node = Error("trying to differentiate twice a function that was marked with @once_differentiable", aliases)
        wrapped = []
        for output_nr, a in enumerate(aliases):
            out = None
            if a is not None:
                out = a.detach()
                out.grad_fn, out._output_nr, out._requires_grad = node, output_nr, True
            wrapped.append(out)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper
