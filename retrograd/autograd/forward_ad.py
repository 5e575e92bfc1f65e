"""Forward-mode AD: dual tensors that carry a tangent through every op of the table.

    with forward_ad.dual_level():
        y = f(forward_ad.make_dual(x, v))
        jvp = forward_ad.unpack_dual(y).tangent      # J_f(x) @ v, in one forward pass

Each op's JVP is the `jvp=` formula of its row, compiled by `registry.Op.compile` and run by
`registry.apply` on the inputs' tangents (see Note [dual levels]). Tangents are ordinary
retrograd tensors, so forward-over-reverse (a JVP of a backward) and reverse-over-forward (the
gradient of a tangent) compose. This module also holds `transforms`, the one switch that
`registry.apply` reads on every op: it stays off, and costs nothing, until a dual level is
open, vmap runs, saved-tensor hooks are set or a profiler records.
"""

from __future__ import annotations

import functools
import weakref
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .. import _creation  # partly loaded while autograd loads (read at call time)
from .grad_mode import _state as _grad_state

# Note [dual levels]
# A level is a number unique for the life of the process, so tangents of a level that has
# ended can never be mistaken for those of a new one. A tensor keeps its tangents in
# `_extra["fw_grad"]`, a dict level -> tangent. `transforms.levels` lists the levels whose
# tangents ops propagate now, outermost first. Levels nest (func.jvp inside func.jvp): the
# tangent of level L is computed by running L's JVP formula with only the levels opened
# before L visible, so the formula's own ops carry the outer tangents (the cross terms of
# nested dual numbers) and never perturb L itself. torch's public `dual_level` allows one
# level at a time; `func.jvp` nests freely.


class _Transforms:
    """What changes every op: open dual levels, running vmap levels, saved-tensor hooks, a profiler, CPU autocast."""

    active = False                   # the flag registry.apply checks; true iff one of the below is set
    changes_ops = False              # true iff one that changes what ops compute or record is set (all but the
    #                                  profiler, which only watches): registry.unrecorded_arrays reads it
    levels: tuple = ()               # visible dual levels (ints), outermost first
    vmap: tuple = ()                 # running vmap levels (batched.Level), outermost first
    saved_hooks: tuple = ()          # (pack, unpack) pairs of saved_tensors_hooks, innermost last
    profiler = None                  # the recording profiler (autograd/profiler.py, Note [profiler events])
    autocast: dict | None = None     # while torch.autocast('cpu') is on: {row name: dtype its inputs take}
    stack: tuple = ()                # running func transforms, outermost first (Note [printing inside transforms])

    def __init__(self) -> None:
        self.active = False  # an instance attribute: the interpreter specialises its read (every op reads it)
        self.changes_ops = False

    def update(self) -> None:
        self.changes_ops = bool(self.levels or self.vmap or self.saved_hooks or self.autocast)
        self.active = self.changes_ops or self.profiler is not None


transforms = _Transforms()


# Note [printing inside transforms]
# torch.func wraps a tensor once per transform it is seen through, and prints the wrappers nested,
# the innermost transform's outside: `GradTrackingTensor(lvl=2, value=\n    BatchedTensor(lvl=1,
# bdim=0, value=\n        tensor(...)\n    )\n)`, each numbered by its depth among the running
# transforms (vmap, grad, vjp and jvp alike), around the tensor as it is outside every transform.
# retrograd wraps nothing: vmap's tensors are BatchedTensors, and grad, vjp and jvp differentiate
# plain tensors. So `transforms.stack` keeps the running transforms in torch's order (vmap levels
# and `Tracking` entries), and a tensor prints a GradTrackingTensor for a grad or vjp whose inputs
# its graph reaches and for a jvp whose tangent it carries: the inputs and whatever was computed
# from them. torch also wraps what does not depend on them (a factory, a detached tensor, a result
# computed under no_grad or from closed-over tensors only); those print plain here.


class Tracking:
    """A running func.grad, vjp or jvp, as printing sees it: the aliases it differentiates (alias -> the
    tensor given), or the dual level whose tangents mark its tensors (Note [printing inside transforms])."""

    __slots__ = ("originals", "dual")

    def __init__(self, dual: int | None = None) -> None:
        self.originals: dict[int, tuple] = {}  # id(alias) -> (alias, the input it stands for)
        self.dual = dual


def push_transform(entry: object) -> None:
    """A transform starts: `entry` (a vmap level or a Tracking) becomes the innermost."""
    transforms.stack = transforms.stack + (entry,)


def pop_transform(entry: object) -> None:
    transforms.stack = tuple(e for e in transforms.stack if e is not entry)


def composite(aten: str) -> Callable[[Callable], Callable]:
    """Mark a public function torch implements as a composite op (`aten::linear`, `aten::matmul`) or a creation
    function (`aten::zeros`): while a profiler records, a call runs inside an event of that name, around the events
    of the rows it runs (Note [profiler events] in autograd/profiler.py); otherwise the function runs as it is.
    The undecorated function is `__wrapped__`, for a composite that calls another without its event."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args: object, **kwargs: object) -> object:
            profiler = transforms.profiler
            if profiler is None:
                return fn(*args, **kwargs)
            return profiler.run_composite(aten, fn, args, kwargs)

        return run

    return decorate


class _Level:
    """An open dual level: its id and the tensors that received a tangent in it (to clear them)."""

    __slots__ = ("id", "holders")

    def __init__(self, level_id: int) -> None:
        self.id = level_id
        self.holders: list = []


_open: list[_Level] = []    # every open level, outermost first
_public: list[_Level] = []  # the levels opened through dual_level / enter_dual_level
_counter = [0]
_current_level = -1  # torch's: the index of the open public level, -1 when none is open


def _push_level() -> int:
    """Open a new (possibly nested) dual level and return its id."""
    _counter[0] += 1
    level = _Level(_counter[0])
    _open.append(level)
    transforms.levels = transforms.levels + (level.id,)
    transforms.update()
    return level.id


def _pop_level(level_id: int) -> None:
    """Close a level: its tangents disappear from every tensor that got one."""
    level = next(lv for lv in _open if lv.id == level_id)
    _open.remove(level)
    transforms.levels = tuple(t for t in transforms.levels if t != level_id)
    transforms.update()
    for ref in level.holders:
        t = ref()
        if t is not None and t._extra is not None:
            tangents = t._extra.get("fw_grad")
            if tangents is not None:
                tangents.pop(level_id, None)


def enter_dual_level() -> int:
    """Open the dual level that make_dual and unpack_dual use by default; returns its index (0)."""
    if _public:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    global _current_level
    level_id = _push_level()
    _public.append(next(lv for lv in _open if lv.id == level_id))
    _current_level = len(_public) - 1
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the current dual level: every tangent it gave is dropped."""
    if not _public or (level is not None and level != len(_public) - 1):
        raise RuntimeError("Dual level must be a positive number." if not _public else
                           "Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    global _current_level
    _pop_level(_public.pop().id)
    _current_level = len(_public) - 1


class dual_level:  # noqa: N801 - torch's name
    """Context manager for forward AD: tangents given by make_dual inside it live until it exits.

    >>> with dual_level():
    ...     y = make_dual(x, v).exp()
    ...     unpack_dual(y).tangent   # exp(x) * v
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


def _public_index(level_id: int) -> int:
    """The index torch shows for a level: its place among the public levels (func.jvp's count on)."""
    return next((k for k, lv in enumerate(_public) if lv.id == level_id), len(_public))


def _level_id(level: int | None, what: str) -> int | None:
    if level is None:
        return _public[-1].id if _public else None
    if 0 <= level < len(_public):
        return _public[level].id
    raise RuntimeError(f"Invalid level given to {what}")


# ---- tangent storage ------------------------------------------------------------------------

# Note [tangents of views]
# As in torch, a view's tangent is the same view of its base's tangent, so a write through either
# updates both. The base here is the view's forward base (forward_base: `_extra["fw_base"]`, set by
# registry._mark_views only when it is not the view's `_base`, None on a view that is not forward
# differentiable): its base, or the nearest view up the chain that is not forward differentiable
# (make_dual's and unpack_dual's outputs, which carry or drop a tangent of their own).
# A view made before its base had a tangent takes the view of it when first asked (get_tangent). An
# in-place op writes its new tangent into the tangent already there (write_tangent); a view without
# one first gives its forward base a zero tangent, so `base[0] = dual` gives `base` a tangent. Under
# vmap a batched tangent makes that zero tangent batched too (zeros laid out like the base in every
# example), and the view's tangent is the same view of each example (as_strided of a batched tensor).


def forward_base(tensor: Any) -> Any:
    """The forward base of a view (Note [tangents of views]): its base unless its `_extra` names another, None for
    a tensor that is no forward-differentiable view (`_extra["fw_base"]` None)."""
    base = tensor._base
    extra = tensor._extra
    return base if extra is None or base is None else extra.get("fw_base", base)


def get_tangent(tensor: Any, level_id: int) -> Any:
    """The tangent of `tensor` at level `level_id`, or None (always None in inference mode, which turns
    forward AD off as torch's does, and while forward AD is switched off by _set_fwd_grad_enabled)."""
    if _grad_state.inference or not _grad_state.fw_grad:
        return None
    extra = getattr(tensor, "_extra", None)
    if extra is None:
        fw_base = getattr(tensor, "_base", None)  # a view made the usual way: its forward base is its base
        if fw_base is None:
            return None
        tangent = None
    else:
        tangents = extra.get("fw_grad")
        tangent = None if tangents is None else tangents.get(level_id)
        fw_base = None if tangent is not None else forward_base(tensor)
    if fw_base is not None:
        base_tangent = get_tangent(fw_base, level_id)
        if base_tangent is not None:
            from ..ops import shape

            with hidden_levels(level_id):
                tangent = shape.view_of_tangent(tensor, fw_base, base_tangent)
            if tangent is not None:
                set_tangent(tensor, level_id, tangent)
    return tangent


def write_tangent(tensor: Any, level_id: int, tangent: Any) -> bool:
    """Give `tensor` the new tangent an in-place op computed for it (Note [tangents of views]): True
    when done; False when `tensor` was only handed it (an expanded tangent, one batched by vmap where
    the tangent there is not), so that its base's tangent must follow out of place, through CopySlices
    (shape.rebase_view)."""
    from ..ops import shape

    batched = _batched().is_batched
    current = get_tangent(tensor, level_id)
    base = forward_base(tensor)
    if current is None and base is not None and shape.same_layout(tensor, base) and (
            batched(tangent) or shape.same_layout(tangent, base)):
        set_tangent(base, level_id, tangent)  # the view is all of its base: both share the new tangent, as in torch
        set_tangent(tensor, level_id, tangent)
        return True
    if current is None and base is not None:
        with hidden_levels(level_id):
            zeros = shape.zeros_batched_like(base, tangent) if batched(tangent) else shape.zeros_laid_out_like(base)
        set_tangent(base, level_id, zeros)
        current = get_tangent(tensor, level_id)
    levels_of = _batched().levels_of
    if current is not None and set(levels_of(tangent)) - set(levels_of(current)):
        set_tangent(tensor, level_id, tangent)  # batched where the tangent there is not: handed over
        return base is None
    if current is None or not shape.is_writable_in_place(current):
        set_tangent(tensor, level_id, tangent)
        return base is None
    if current is not tangent:
        with hidden_levels(level_id):
            current.copy_(tangent.clone())  # the new tangent may read the memory it replaces
    return True


def set_tangent(tensor: Any, level_id: int, tangent: Any) -> None:
    """Give `tensor` a tangent at level `level_id` (dropped when the level closes)."""
    tangents = tensor._extra_dict().setdefault("fw_grad", {})
    if level_id not in tangents:
        level = next((lv for lv in _open if lv.id == level_id), None)
        if level is not None:
            level.holders.append(weakref.ref(tensor))
    tangents[level_id] = tangent


def current_tangent(tensor: Any) -> Any:
    """The tangent unpack_dual would give `tensor` now (at the open public level), or None."""
    return get_tangent(tensor, _public[-1].id) if _public else None


def tangents_of(tensor: Any) -> dict | None:
    """All tangents of a tensor (level -> tangent), or None."""
    extra = getattr(tensor, "_extra", None)
    return None if extra is None else extra.get("fw_grad")


class only_levels:  # noqa: N801
    """Run with only the given dual levels visible."""

    __slots__ = ("levels", "prev")

    def __init__(self, levels: tuple) -> None:
        self.levels = levels

    def __enter__(self) -> None:
        self.prev = transforms.levels
        transforms.levels = self.levels
        transforms.update()

    def __exit__(self, *exc: object) -> None:
        transforms.levels = self.prev
        transforms.update()


class hidden_levels:  # noqa: N801
    """Run with only the dual levels opened before `level_id` visible (Note [dual levels]);
    with level_id=None, with no dual level visible at all."""

    __slots__ = ("level_id", "prev")

    def __init__(self, level_id: int | None = None) -> None:
        self.level_id = level_id

    def __enter__(self) -> None:
        self.prev = transforms.levels
        keep = () if self.level_id is None else tuple(lv for lv in self.prev if lv < self.level_id)
        transforms.levels = keep
        transforms.update()

    def __exit__(self, *exc: object) -> None:
        transforms.levels = self.prev
        transforms.update()


def _is_fwd_grad_enabled() -> bool:
    """Whether forward AD is on in this thread (torch's private switch; on unless _set_fwd_grad_enabled(False))."""
    return _grad_state.fw_grad


class _set_fwd_grad_enabled:  # noqa: N801 - torch's name
    """Switch forward AD on or off in this thread, now and until the with block (if any) ends: while off, tensors
    show no tangent and ops compute none."""

    def __init__(self, mode: bool) -> None:
        self.prev = _grad_state.fw_grad
        _grad_state.fw_grad = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _grad_state.fw_grad = self.prev


# ---- public API -----------------------------------------------------------------------------

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A view of `tensor` whose tangent at the current dual level is `tangent` (not copied).

    >>> with dual_level():
    ...     d = make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
    """
    level_id = _level_id(level, "_make_dual")
    if level_id is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    return make_dual_at(tensor, tangent, level_id)


def make_dual_at(tensor: Any, tangent: Any, level_id: int) -> Any:
    """make_dual at an internal level id (func.jvp opens levels of its own)."""
    from .._tensor import lazy_bits, set_lazy_bits  # the tensor class loads after autograd's core
    from ..ops import shape  # the op table loads after autograd's core

    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if get_tangent(tangent, level_id) is not None:
        raise RuntimeError("Setting a forward grad that itself has a forward gradient at the same level"
                           f"{_public_index(level_id)} is not supported.")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    batched = _batched()
    if batched.is_batched(tensor):
        return batched.make_dual(tensor, tangent, level_id)
    with hidden_levels(level_id):  # the view must not carry tensor's own tangent of this level
        dual = shape.view(tensor, tuple(tensor.shape))
    dual._extra_dict()["fw_base"] = None  # not a forward-differentiable view (Note [tangents of views])
    if not _grad_state.inference:  # inference mode turns forward AD off
        if batched.is_batched(tangent):  # torch copies a tangent laid out otherwise than the primal
            tangent = tangent if shape.is_contiguous_layout(tensor) else tangent.clone()
        elif not shape.same_storage_layout(tangent, tensor) or lazy_bits(tangent) != lazy_bits(tensor):
            # torch's has_same_meta also compares conjugate and negative bits (ops/complex.py, Note [conjugate
            # and negative bits]): the copy takes the primal's
            tangent = set_lazy_bits(shape.zeros_laid_out_like(tensor).copy_(tangent), lazy_bits(tensor))
        set_tangent(dual, level_id, tangent)
    return dual


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent): a view of `tensor` without its tangent, and the tangent (None if none).

    >>> with dual_level():
    ...     p, t = unpack_dual(make_dual(x, v).sin())   # sin(x), cos(x) * v
    """
    level_id = _level_id(level, "_unpack_dual")
    if level_id is None:
        return UnpackedDualTensor(tensor, None)
    return unpack_dual_at(tensor, level_id)


def unpack_dual_at(tensor: Any, level_id: int) -> UnpackedDualTensor:
    """unpack_dual at an internal level id."""
    from ..ops.registry import apply  # the op table loads after autograd's core

    batched = _batched()
    if batched.is_batched(tensor):
        return batched.unpack_dual(tensor, level_id)
    tangent = get_tangent(tensor, level_id)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with hidden_levels(level_id):
        primal = apply(_identity_op(), (tensor,), (tuple(tensor.shape),))
    primal._extra_dict()["fw_base"] = None  # not a forward-differentiable view (Note [tangents of views])
    return UnpackedDualTensor(primal, tangent)


def _batched() -> Any:
    from . import batched

    return batched


_IDENTITY: list = []


def _identity_op() -> Any:
    """The view unpack_dual returns, recorded as torch's `torch::autograd::Identity` node."""
    if not _IDENTITY:
        from ..ops.shape import view_op  # the op table loads after autograd's core

        op = view_op.alias("_unpack_dual_primal", "Identity")
        op.node_class.name = lambda self: "torch::autograd::Identity"
        _IDENTITY.append(op)
    return _IDENTITY[0]


# ---- custom Functions -----------------------------------------------------------------------

def function_apply(cls: type, ctx: Any, args: tuple, kwargs: dict) -> Any:
    """Function.apply while a transform is in use: vmap goes to the Function's own rule; forward
    runs with no dual level visible (as in torch), then `jvp` gives the outputs' tangents, and
    saved-tensor hooks pack what ctx saved."""
    from ..ops.registry import pack_function_saved  # the op table loads after autograd's core

    if transforms.vmap:
        out = _batched().function_vmap(cls, args, kwargs)
        if out is not NotImplemented:
            return out
    state = (transforms.levels, transforms.vmap)
    transforms.levels = transforms.vmap = ()
    transforms.update()
    try:
        out, raw = cls._run(ctx, args, kwargs)
    finally:
        transforms.levels, transforms.vmap = state
        transforms.update()
    for level_id in transforms.levels:
        function_jvp(cls, ctx, args, out if isinstance(out, tuple) else (out,), raw, level_id)
    if transforms.saved_hooks and ctx._kept:
        pack_function_saved(ctx)
    return out


def function_jvp(cls: type, ctx: Any, args: tuple, outputs: tuple, raw: tuple, level_id: int) -> None:
    """Tangents of a custom Function's outputs at one level, from its `jvp` staticmethod, with
    torch's checks (custom_function.cpp, _process_forward_mode_AD).

    jvp(ctx, *input_tangents) gets a tangent per tensor input (zeros where a differentiable one
    has none), None for the other inputs, and returns one tangent per output (None for those that
    are not differentiable). An output that is a view of an input needs a tangent that is a view of
    that input's tangent; an input modified in place needs its tangent modified in place."""
    from .._tensor import Tensor

    tangents = [get_tangent(a, level_id) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    versions = [None if t is None else t._version_value() for t in tangents]
    given = [t if t is not None or not isinstance(a, Tensor) or not ctx._materialize or not _differentiable(a)
             else _creation.zeros_like(a) for a, t in zip(args, tangents)]
    ctx._forward_saved = getattr(ctx, "saved_for_forward", ())
    try:
        with hidden_levels(level_id):
            result = cls.jvp(ctx, *given)
    finally:
        ctx._forward_saved = None
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outputs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients (expected {len(outputs)} "
                           f"but got {len(result)})")
    bases = {id(_view_base(a)): i for i, a in enumerate(args) if isinstance(a, Tensor)}
    for i, (out, out_raw, grad) in enumerate(zip(outputs, raw, result)):
        if not isinstance(out_raw, Tensor):
            continue
        if grad is not None and not isinstance(grad, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(grad).__name__}) for grad output {i}.")
        if id(out_raw) in ctx._non_differentiable or not _differentiable(out_raw):
            if grad is not None:
                raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but  the corresponding "
                                   "forward output is not a differentiable Tensor.You should return None at that "
                                   "position instead.")
            continue
        if grad is None:
            continue
        if id(out_raw) in ctx._dirty:
            k = next((k for k, a in enumerate(args) if a is out_raw), None)
            if k is None:
                raise RuntimeError("Only input Tensors should be given to ctx.mark_dirty(). If a Tensor is not an "
                                   "input, there is no need to pass it to mark_dirty().")
            if tangents[k] is not None:
                if grad._version_value() == versions[k]:
                    raise RuntimeError("An inplace custom Function is not modifying the forward mode gradients "
                                       "inplace. If the forward is modifying an input inplace, then the jvp function "
                                       "must modify the corresponding gradient inplace.")
                if grad is not tangents[k]:
                    raise RuntimeError("An inplace custom Function is not returning the forward mode gradients "
                                       "as-is. If the forward is modifying an input inplace, then the jvp function "
                                       "must modify the gradient inplace and return it as-is.")
                continue
        elif out._base is not None and id(out._base) in bases:
            _check_view_tangent(get_tangent(args[bases[id(out._base)]], level_id), grad)
        set_tangent(out, level_id, grad)


def _differentiable(t: Any) -> bool:
    return t.is_floating_point() or t.is_complex()


def _view_base(t: Any) -> Any:
    return t if t._base is None else t._base


def _check_view_tangent(input_tangent: Any, tangent: Any) -> None:
    """A Function's output is a view of an input with a tangent: its tangent must be a view of that tangent."""
    if input_tangent is None:
        return
    if tangent._base is None:
        raise RuntimeError("A custom Function's forward is returning a view (or an input as-is) but the jvp is not "
                           "returning a view.")
    if input_tangent._base is not None:
        if input_tangent._base is not tangent._base:
            raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view of the same "
                               "base as the given grad input.")
    elif tangent._base is not input_tangent:
        raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view of the given "
                           "grad input.")


__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]
