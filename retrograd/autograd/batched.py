"""vmap: batched tensors, the batching rules of the op table, and the per-op loop fallback.

Also `batched_grad`, the one vectorised backward pass behind `autograd.grad(is_grads_batched=
True)`, `jacobian(vectorize=True)` and `func.jacrev`: the engine runs once, inside vmap, with a
batch of cotangents, and every node's formulas run batched.
"""

from __future__ import annotations

import functools
import math
import textwrap
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .. import _creation
from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..ops.linalg import matmul
from ..ops.nn_extra import weight_norm_of
from ..ops.pointwise import where_op
from ..ops.registry import apply
from ..ops.shape import cat, stack
from . import forward_ad
from .forward_ad import transforms

_new = object.__new__

# Note [batched tensors]
# Under vmap a function sees BatchedTensors: tensors of the per-example ("logical") shape that
# stand for the whole batch. Each wraps one plain ("physical") tensor holding the batch: one
# leading dim per vmap level it is batched at (outermost level first; size 1 where it is only
# broadcast along that level), then the logical dims. An op on a BatchedTensor goes to its
# batching rule (`dispatch`), which re-expresses the op on the physical tensors (dims shifted
# past the batch dims, batch dims aligned) and calls it once, through apply, on plain tensors.
# So autograd records, and forward AD differentiates, the physical computation: a graph never
# holds a BatchedTensor, and vmap composes with grad, vjp and jvp in any order.
#
# A BatchedTensor's `_data` is a `_BatchedView` of its first example: the code outside the op
# table (argument checks, shape logic) reads its shape and dtype as for any tensor, but whatever
# reads its values (or passes a derived array into an op) raises, instead of silently working on
# one example. The same view, passed as an op parameter (an index or a mask), tells `dispatch`
# that the parameter is batched.
#
# Rules exist for the elementwise families (pointwise, activations, complex, special functions,
# numeric helpers; scalar and array parameters broadcast), reductions and every op with `dim`
# parameters (dims shifted), shape ops (view/reshape/expand/permute/squeeze/t, their copies and
# the backward helpers select/slice_backward), matmul (mm, mv, dot, bmm, outer, batched matmul),
# linear algebra (leading dims are NumPy's batch; solves pad their operands to one batch rank),
# indexing (index, index_put, gather, scatter, scatter_add, masked_fill, take, embedding), the
# losses (elementwise ones reduce after; nll_loss folds the vmap dims into its batch dim N),
# convolution (the vmap dims fold into N when only the input is batched, into the groups when the
# weight is: each example's channels and filters a group of their own, as torch's rule does),
# pooling, padding and resampling with their backwards (the vmap dims are more leading planes),
# layer/group norm and weight norm (its norm over every dim but one, composed so as not to span the
# vmap dims). Any other op falls back to a loop: it runs once per example on slices of the
# physical tensors and the results are stacked (with torch's performance warning); correct for
# every op whose output shape does not depend on data. tests/test_vmap_rules.py counts the ops
# that still loop.


class Level:
    """One running vmap: its batch size and randomness mode; levels are ordered by `id`."""

    __slots__ = ("id", "size", "randomness")

    _next = 0

    def __init__(self, size: int, randomness: str = "error") -> None:
        Level._next += 1
        self.id = Level._next
        self.size = size
        self.randomness = randomness

    def __repr__(self) -> str:
        return f"Level({self.id}, size={self.size})"

    @staticmethod
    def draw_per_example(draw: Callable[[tuple], Tensor], shape: tuple) -> Tensor:
        """A random draw's `draw(shape)` inside the running vmaps (Note [random factories under vmap]); reached
        through a running level, so the factories below this module need not import it."""
        levels = [level for level in transforms.vmap if level.randomness == "different"]
        return make(draw(tuple(level.size for level in levels) + tuple(shape)), levels)

    @staticmethod
    def draw_per_example_from(draw: Callable[[Tensor], Tensor], t: Tensor) -> Tensor:
        """A random draw from a tensor parameter inside the running vmaps (Note [random samplers under vmap]):
        `draw` of t's physical tensor with one leading dim per 'different' level (expanded where t is not batched
        there; t is batched at no other level), batched back at those levels."""
        levels = [level for level in transforms.vmap if level.randomness == "different"]
        return make(draw(align(t, levels, full=True)), levels)


def push_level(size: int, randomness: str = "error") -> Level:
    """Start a vmap level of `size` examples."""
    level = Level(size, randomness)
    transforms.vmap = transforms.vmap + (level,)
    transforms.update()
    forward_ad.push_transform(level)
    return level


def pop_level(level: Level) -> None:
    transforms.vmap = tuple(lv for lv in transforms.vmap if lv is not level)
    transforms.update()
    forward_ad.pop_transform(level)


def _sorted(levels: Any) -> tuple:
    return tuple(sorted(levels, key=lambda lv: lv.id))


# --------------------------------------------------------------------------------------------
# The batched tensor and its guarded data
# --------------------------------------------------------------------------------------------

ITEM_MESSAGE = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() "
                "on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring "
                "somewhere inside PyTorch internals, please file a bug report.")
CONTROL_FLOW_MESSAGE = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
                        "flow. We don't support that yet, please file an issue at "
                        "https://github.com/pytorch/pytorch/issues .")


def _values_error(what: str) -> RuntimeError:
    return RuntimeError(f"vmap: {what} reads the values of a batched tensor outside the op table, so it has no "
                        "batching rule; rewrite it with tensor operations or compute it outside vmap.")


def _dynamic_shape_error(name: str) -> RuntimeError:
    return RuntimeError(f"vmap: We do not support batching operators that can output dynamic shape. Attempted to vmap "
                        f"over aten::{name}. Please file an issue at https://github.com/pytorch/pytorch/issues if you "
                        "need this feature.")


def _dynamic_shape(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """An op whose output shape depends on the values (unique): torch refuses it under vmap."""
    raise _dynamic_shape_error(op.name)


def _every_example(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """_is_all_true / _is_any_true: one unbatched answer over every example, as torch's rule gives (a check that
    fails for any example fails)."""
    return _apply(op, (align(args[0], levels, full=True),), params)


def _refused(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    raise RuntimeError(f"vmap: {op.name} works on each example's memory layout (storage offsets and strides), so "
                       "it has no batching rule; compute it outside vmap.")


class _BatchedView(np.ndarray):
    """BatchedTensor._data: shape, dtype and strides of one example (Note [batched tensors]).

    Code outside the op table may still check argument values: NumPy ufuncs, astype and copy stay
    batched (they give views like this one), and whole-array any/all/min/max and boolean-mask
    selection see every example at once, which is what a check needs (it fails if any example is
    invalid). Anything else that reads values raises."""

    levels: tuple | None = None   # set on views of a batch; None on arrays derived by other means
    physical: np.ndarray | None = None

    def _whole(self) -> np.ndarray:
        if self.levels is None:
            raise _values_error("an array derived from a batched tensor")
        return self.physical

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or "out" in kwargs:
            raise _values_error(f"numpy.{ufunc.__name__}.{method}")
        views = [x for x in inputs if type(x) is _BatchedView]
        for v in views:
            v._whole()
        levels = _sorted({lv.id: lv for v in views for lv in v.levels}.values())
        ndim = max(np.ndim(x) for x in inputs)
        arrays = [_align_params((x,), levels, ndim)[0] if type(x) is _BatchedView else x for x in inputs]
        result = ufunc(*[x.view(np.ndarray) if isinstance(x, np.ndarray) else x for x in arrays], **kwargs)
        return tuple(batch_view(r, levels) for r in result) if isinstance(result, tuple) else \
            batch_view(result, levels)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func in (np.shape, np.ndim, np.size, np.result_type):
            return super().__array_function__(func, types, args, kwargs)
        if func in (np.nonzero, np.argwhere, np.flatnonzero, np.unique):
            raise _dynamic_shape_error(func.__name__)
        raise _values_error(f"numpy.{func.__name__}")

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> _BatchedView:
        return batch_view(self._whole().astype(dtype, *args, **kwargs), self.levels)

    def copy(self, *args: Any, **kwargs: Any) -> _BatchedView:
        return batch_view(self._whole().copy(), self.levels)

    def __getitem__(self, key: Any) -> Any:
        if type(key) is _BatchedView and key.dtype == bool:  # a check's selection, over every example
            self._whole(), key._whole()
            levels = _sorted({lv.id: lv for lv in self.levels + key.levels}.values())
            ndim = max(self.ndim, key.ndim)
            data, mask = (_align_params((v,), levels, ndim, full=True)[0].view(np.ndarray) for v in (self, key))
            return data[mask]
        raise _values_error("ndarray.__getitem__")

    def __repr__(self) -> str:
        return f"<values of a batched tensor, shape {self.shape}>"

    def __bool__(self) -> bool:
        raise RuntimeError(CONTROL_FLOW_MESSAGE)


def _whole_reduction(name: str) -> Callable:
    def method(self: _BatchedView, axis: Any = None, *args: Any, **kwargs: Any) -> Any:
        if axis is not None or args or kwargs:
            raise _values_error(f"ndarray.{name} along an axis")
        return getattr(self._whole().view(np.ndarray), name)()

    method.__name__ = name
    return method


for _name in ("any", "all", "min", "max"):
    setattr(_BatchedView, _name, _whole_reduction(_name))


def batch_view(physical: np.ndarray, levels: Sequence[Level]) -> np.ndarray:
    """The _BatchedView of a physical array whose leading dims are `levels` (sorted)."""
    k = len(levels)
    if all(physical.shape[:k]):
        view = physical[(0,) * k + (Ellipsis,)].view(_BatchedView)
    else:
        view = np.empty(physical.shape[k:], physical.dtype).view(_BatchedView)
    view.levels = tuple(levels)
    view.physical = physical
    return view


def _refuse(name: str) -> Callable:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if name in ("item", "__float__", "__int__", "__index__", "__complex__"):
            raise RuntimeError(ITEM_MESSAGE)
        if name == "nonzero":
            raise _dynamic_shape_error(name)
        raise _values_error(f"ndarray.{name}")

    method.__name__ = name
    return method


for _name in ("item", "tolist", "tobytes", "__float__", "__int__", "__index__", "__complex__", "__setitem__",
              "__iter__", "argmax", "argmin", "argsort", "sort", "sum", "prod", "mean", "std", "var", "cumsum",
              "cumprod", "nonzero", "fill", "round", "clip", "dot", "take", "put", "repeat", "searchsorted", "trace",
              "diagonal", "compress", "choose"):
    setattr(_BatchedView, _name, _refuse(_name))


class BatchedTensor(Tensor):
    """A tensor seen inside vmap: logical shape outside, the whole batch in `_physical`."""

    __slots__ = ("_physical", "_levels")

    def __repr__(self) -> str:
        return wrapped_repr(self)

    __str__ = __repr__

    def item(self) -> Any:
        raise RuntimeError(ITEM_MESSAGE)

    def tolist(self) -> Any:
        raise RuntimeError(ITEM_MESSAGE)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __bool__(self) -> bool:
        raise RuntimeError(CONTROL_FLOW_MESSAGE)

    def __float__(self) -> float:
        raise RuntimeError(ITEM_MESSAGE)

    __int__ = __index__ = __complex__ = __float__

    def detach(self) -> Tensor:
        return make(self._physical.detach(), self._levels)

    @property
    def data(self) -> Tensor:
        return make(self._physical.data, self._levels)

    @property
    def _version(self) -> int:
        return self._physical._version_value()

    def _check_inplace(self, inputs: Iterable = (), memory: bool = True) -> None:
        self._physical._check_inplace(memory=memory)  # the inputs are logical tensors: not compared

    def _become(self, result: Tensor) -> Tensor:
        """An in-place op writes the whole batch into the physical tensor."""
        extra = set(levels_of(result)) - set(self._levels)
        if extra:
            raise RuntimeError("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
                               "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
                               "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
                               "use out-of-place operators instead of inplace: e.g. instead of x.add_(y), do "
                               "x = x.add(y)")
        physical = self._physical
        aligned = align(result, self._levels, ndim=self.ndim)
        if aligned.shape != physical.shape:
            aligned = aligned.expand(physical.shape)
        physical._become(aligned)
        return self


def _new_batched(name: str) -> Callable:
    """Tensor.new_zeros / new_ones / new_empty / new_full on a batched tensor: a new tensor for each example,
    batched alike (torch's batching rule), so that a write of batched values into it stays each example's."""
    plain = getattr(Tensor, name)

    def method(self: BatchedTensor, *args: Any, **kwargs: Any) -> Tensor:
        size, rest = (args[:-1], args[-1:]) if name in ("new_full", "new_empty_strided") else (args, ())
        if "size" in kwargs:
            size = kwargs.pop("size")
        batch, size = tuple(level.size for level in self._levels), _creation._shape(size)
        if name == "new_empty_strided":  # each example a storage of its own, one after the other
            (stride,) = rest
            span = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
            rest = (tuple(math.prod(batch[i + 1:]) * span for i in range(len(batch))) + tuple(stride),)
        return make(plain(self._physical, batch + size, *rest, **kwargs), self._levels)

    method.__name__ = name
    return method


for _name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_empty_strided"):
    setattr(BatchedTensor, _name, _new_batched(_name))


def wrapped_repr(t: Tensor) -> str:
    """`t` printed as torch prints it inside the running transforms (Note [printing inside transforms]): a
    wrapper per transform it is seen through, the innermost's outside. The batch dims of the physical tensor
    lead, so each BatchedTensor's bdim is 0 (torch keeps a non-zero in_dim's)."""
    physical = t._physical if type(t) is BatchedTensor else t
    own = levels_of(t)
    headers = []
    for depth, entry in enumerate(transforms.stack, 1):
        if type(entry) is Level:
            if entry in own:
                headers.append(f"BatchedTensor(lvl={depth}, bdim=0, value=")
        elif _tracked(physical, entry):
            headers.append(f"GradTrackingTensor(lvl={depth}, value=")
    text = _outside_repr(physical)
    for header in headers:
        text = f"{header}\n{textwrap.indent(text, '    ')}\n)"
    return text


def _outside_repr(t: Tensor) -> str:
    """The text of `t` outside every transform: no wrappers, its autograd suffix there, its tangent alike."""
    physical = t._physical if type(t) is BatchedTensor else t
    return physical._repr(_outside_suffix(physical), _outside_repr)


def _reaches(t: Tensor, wanted: Callable[[Tensor], bool], nodes: set | frozenset = frozenset()) -> bool:
    """Whether `t`, a leaf its graph reaches, satisfies `wanted`, or its graph passes one of `nodes` (ids)."""
    if wanted(t):
        return True
    seen: set = set()
    stack = [t.grad_fn] if t.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if id(node) in nodes or variable is not None and wanted(variable):
            return True
        stack.extend(child for child in node._next_nodes if child is not None)
    return False


def _tracked(physical: Tensor, entry: forward_ad.Tracking) -> bool:
    """Whether a running grad/vjp sees `physical` (its graph reaches the inputs' aliases), or a jvp does (it carries
    the jvp's tangent)."""
    if entry.dual is not None:
        tangents = forward_ad.tangents_of(physical)
        return bool(tangents) and entry.dual in tangents
    views = {id(alias.grad_fn) for alias, _ in entry.originals.values() if alias.grad_fn is not None}
    return _reaches(physical, lambda leaf: id(leaf) in entry.originals, views)


def _outside_suffix(physical: Tensor) -> list[str]:
    """The autograd suffix of the tensor outside every transform: an input's own; `requires_grad=True` or
    the grad_fn when the graph reaches a tensor that requires grad out there, nothing otherwise."""
    entries = [e for e in transforms.stack if type(e) is not Level and e.dual is None]
    for entry in entries:
        alias = entry.originals.get(id(physical))
        if alias is not None:
            original = alias[1]
            return _outside_suffix(original._physical if type(original) is BatchedTensor else original)
    aliases = {key for entry in entries for key in entry.originals}
    if not _reaches(physical, lambda leaf: leaf._requires_grad and leaf.grad_fn is None and id(leaf) not in aliases):
        return []
    return [f"grad_fn=<{type(physical.grad_fn).__name__}>" if physical.grad_fn is not None else "requires_grad=True"]


def make(physical: Tensor, levels: Sequence[Level]) -> Tensor:
    """The BatchedTensor at `levels` (sorted) whose leading physical dims are those levels."""
    if not levels:
        return physical
    t = _new(BatchedTensor)
    t._data = batch_view(physical._data, levels)
    t._physical = physical
    t._levels = tuple(levels)
    t._requires_grad = False  # as in torch: autograd sees the physical tensors, not these
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._base = None
    t._extra = None
    return t


def is_batched(t: Any) -> bool:
    return type(t) is BatchedTensor


def levels_of(t: Any) -> tuple:
    return t._levels if type(t) is BatchedTensor else ()


def align(t: Tensor, levels: Sequence[Level], ndim: int | None = None, full: bool = False) -> Tensor:
    """The physical tensor of `t` laid out for `levels`: one leading dim per level (size 1 where t
    is not batched there, the level's size if `full`), then t's logical dims, padded on the left
    with size-1 dims to `ndim`. `t` must not be batched at levels outside `levels`."""
    own = levels_of(t)
    physical = t._physical if own else t
    logical = physical.shape[len(own):]
    pad = (ndim if ndim is not None else len(logical)) - len(logical)
    shape = []
    it = iter(physical.shape[:len(own)])
    own_ids = {lv.id for lv in own}
    for level in levels:
        shape.append(next(it) if level.id in own_ids else 1)
    target = tuple(shape) + (1,) * pad + tuple(logical)
    if target != tuple(physical.shape):
        physical = physical.reshape(target)
    if full:
        sizes = tuple(lv.size for lv in levels) + target[len(levels):]
        if sizes != target:
            physical = physical.expand(sizes)
    return physical


def to_physical(t: Any, levels: Sequence[Level]) -> Any:
    """Exit `levels` from `t`: a tensor of logical shape (sizes of levels..., *t.shape), still
    batched at t's other levels (t is expanded along the levels it is not batched at)."""
    own = levels_of(t)
    ids = {lv.id for lv in levels}
    rest = tuple(lv for lv in own if lv.id not in ids)
    order = _sorted(rest + tuple(levels))
    physical = align(t, order, full=False)
    k = len(rest)
    position = {lv.id: i for i, lv in enumerate(order)}
    perm = [position[lv.id] for lv in rest] + [position[lv.id] for lv in levels]
    perm += list(range(len(order), physical.ndim))
    if perm != list(range(physical.ndim)):
        physical = physical.permute(perm)
    sizes = tuple(physical.shape[:k]) + tuple(lv.size for lv in levels) + tuple(physical.shape[k + len(levels):])
    if sizes != tuple(physical.shape):
        physical = physical.expand(sizes)
    return make(physical, rest)


def from_physical(t: Any, levels: Sequence[Level]) -> Tensor:
    """Enter `levels` (sorted): t's leading logical dims become the batch dims of those levels."""
    own = levels_of(t)
    if not own:
        return make(t, tuple(levels))
    physical = t._physical
    order = _sorted(own + tuple(levels))
    current = own + tuple(levels)  # the physical order now
    perm = [current.index(lv) for lv in order] + list(range(len(order), physical.ndim))
    if perm != list(range(physical.ndim)):
        physical = physical.permute(perm)
    return make(physical, order)


def make_dual(tensor: BatchedTensor, tangent: Tensor, level_id: int) -> Tensor:
    """forward_ad.make_dual of a batched primal: the tangent goes on the physical tensor, in its
    layout (it may stay batched at levels the primal is not batched at)."""
    levels = tensor._levels
    physical = align(tensor, levels, full=True)
    return make(forward_ad.make_dual_at(physical, to_physical(tangent, levels), level_id), levels)


def unpack_dual(tensor: BatchedTensor, level_id: int) -> Any:
    """forward_ad.unpack_dual of a batched tensor: both parts batched as the tensor is."""
    primal, tangent = forward_ad.unpack_dual_at(tensor._physical, level_id)
    levels = tensor._levels
    return forward_ad.UnpackedDualTensor(make(primal, levels), None if tangent is None else
                                         from_physical(tangent, levels))


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

def _param_levels(param: Any, found: dict) -> None:
    if type(param) is _BatchedView:
        if param.levels is None:
            raise _values_error("an array derived from a batched tensor")
        for lv in param.levels:
            found[lv.id] = lv
    elif type(param) is tuple or type(param) is list:
        for p in param:
            _param_levels(p, found)


def dispatch(op: Any, args: tuple, params: tuple) -> Any:
    """Run `op` through its batching rule if an input or parameter is batched, else NotImplemented."""
    inputs = args[0] if op.variadic else args
    if any(_holds_batch(t) for t in inputs):
        inputs = [rewrap(t) for t in inputs]
        args = (inputs,) if op.variadic else tuple(inputs)
    found: dict = {}
    for t in inputs:
        if type(t) is BatchedTensor:
            for lv in t._levels:
                found[lv.id] = lv
    for p in params:
        _param_levels(p, found)
    if not found:
        return NotImplemented
    levels = tuple(found[i] for i in sorted(found))
    if transforms.levels and any(_tangent_crosses(t, levels) for t in inputs):
        lifted = [lift(t, levels) if _tangent_crosses(t, levels) else t for t in inputs]
        args = (lifted,) if op.variadic else tuple(lifted)
    rule = _RULE_CACHE.get(op)
    if rule is None:
        rule = _RULE_CACHE[op] = _rule_for(op)
    return rule(op, args, params, levels)


def _holds_batch(t: Any) -> bool:
    """A plain tensor around batched values (made from a BatchedTensor's data by NumPy code)."""
    return type(t) is Tensor and type(t._data) is _BatchedView and t._data.levels is not None


def rewrap(t: Any) -> Any:
    """Such a tensor as the BatchedTensor it stands for (anything else as it is)."""
    if not _holds_batch(t):
        return t
    from .._tensor import _wrap

    return make(_wrap(t._data.physical), t._data.levels)


def _tangent_crosses(t: Any, levels: tuple) -> bool:
    """Whether a tangent of `t` is batched at one of `levels` that t itself is not batched at: then
    aligning t's physical tensor must move that tangent's batch dim too (`lift`)."""
    if not isinstance(t, Tensor):
        return False
    own = levels_of(t)
    tangents = forward_ad.tangents_of(t._physical if own else t)
    if not tangents:
        return False
    own_ids = {lv.id for lv in own}
    wanted = {lv.id for lv in levels} - own_ids
    return any(lvl in transforms.levels and any(lv.id in wanted for lv in levels_of(tan))
               for lvl, tan in tangents.items())


def lift(t: Tensor, levels: tuple) -> Tensor:
    """`t` as a BatchedTensor at `levels` (it must not be batched elsewhere): expanded along the
    levels it is not batched at, with its tangents moved into the new physical layout."""
    own = levels_of(t)
    tangents = forward_ad.tangents_of(t._physical if own else t) or {}
    visible = {lvl: tan for lvl, tan in tangents.items() if lvl in transforms.levels}
    if not visible:
        return make(align(t, levels, full=True), levels)
    with forward_ad.hidden_levels():
        physical = align(t, levels, full=True)
    if physical is not (t._physical if own else t):
        for lvl, tan in visible.items():
            forward_ad.set_tangent(physical, lvl, to_physical(from_physical(tan, own), levels))
    return make(physical, levels)


def _wrap_outputs(out: Any, levels: tuple) -> Any:
    if isinstance(out, tuple):
        return type(out)(*(make(o, levels) for o in out)) if hasattr(out, "_fields") else \
            tuple(make(o, levels) for o in out)
    return make(out, levels)


def _apply(op: Any, args: Any, params: tuple) -> Any:
    return apply(op, args, params)


def _copy(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """copy_(self, src) (src already expanded to self's logical shape): src is written into every example,
    so it takes self's batch dims, repeated along the levels it is not batched at."""
    dst, src = args
    physical = align(dst, levels, dst.ndim, full=True)
    return make(_apply(op, (physical, align(src, levels, dst.ndim, full=True)), params), levels)


# ---- elementwise ------------------------------------------------------------------------------

def _elementwise(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Broadcasting ops: batched operands get their batch dims in front of the common logical
    rank; plain operands broadcast from the right as they are."""
    ndims = [a.ndim for a in args if isinstance(a, Tensor)] + _array_ndims(params)
    n = max(ndims) if ndims else 0
    args = _common_dtype(op, args)
    physical = tuple(align(a, levels, n) if type(a) is BatchedTensor else a for a in args)
    return _wrap_outputs(_apply(op, physical, _align_params(params, levels, n)), levels)


def _array_ndims(params: tuple) -> list:
    return [p.ndim for p in params if isinstance(p, np.ndarray)]


def _align_params(params: tuple, levels: tuple, ndim: int | None, full: bool = False) -> tuple:
    """Batched array parameters laid out like align() lays out tensors."""
    out = []
    for p in params:
        if type(p) is _BatchedView:
            out.append(align(make(_plain(p.physical), p.levels), levels, ndim, full)._data)
        elif type(p) is tuple and any(type(q) is _BatchedView for q in p):
            out.append(tuple(_align_params(p, levels, ndim, full)))
        else:
            out.append(p)
    return tuple(out)


def _plain(array: np.ndarray) -> Tensor:
    from .._tensor import _wrap

    return _wrap(array)


def _common_dtype(op: Any, args: tuple) -> tuple:
    """Cast tensor operands to the dtype torch promotes their logical shapes to (a batched 0-d
    tensor is not 0-d physically, which would change NumPy's promotion)."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if op.promote is None or len({a.dtype for a in tensors}) < 2:
        return args
    target = D.result_type(*args)  # the logical ndim of batched operands decides their tier
    if op.promote == "float" and target.category < 2:
        target = D.defaults.floating
    return tuple(a.to(target) if isinstance(a, Tensor) and a.dtype is not target else a for a in args)


# ---- ops along dims -------------------------------------------------------------------------

DIM_PARAMS = ("dim", "dims", "dim0", "dim1", "dim2", "dimension")  # "dimension": unfold's, as torch names it
EXTRA_OUTPUT_DIMS = {"unsqueeze": 1, "unsqueeze_copy": 1, "stack": 1, "diag_embed": 1}  # their dims index the output


def _shift(value: Any, k: int, ndim: int) -> Any:
    """A logical dim (or dims, or None for all) as physical dims behind k batch dims."""
    if value is None:
        return tuple(range(k, k + ndim))
    if isinstance(value, (tuple, list)):
        return type(value)(_wrap_dim(d, max(ndim, 1)) + k for d in value)
    return _wrap_dim(value, max(ndim, 1)) + k if ndim else value + k


def _along_dims(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Ops that act along `dim` parameters: every operand gets all batch dims, dims shift past them."""
    k = len(levels)
    inputs = args[0] if op.variadic else args
    first = next(a for a in inputs if isinstance(a, Tensor))
    dim_values = [p for name, p in zip(op.params, params) if name in DIM_PARAMS]
    ndim = first.ndim + EXTRA_OUTPUT_DIMS.get(op.name, 0)
    if any(isinstance(d, (tuple, list)) and not d for d in dim_values) or ndim == 0 and (
            op.variadic or op.name == "unfold" or any(isinstance(a, Tensor) and a.ndim for a in args)):
        return _loop(op, args, params, levels)  # an empty dim list, or 0-d examples whose result is not 0-d
    if ndim == 0:  # numbers: dim 0 of each as a vector of one, the results numbers again (torch's 0-d semantics)
        sizes = tuple(lv.size for lv in levels)
        physical = tuple(align(a, levels, full=True).unsqueeze(-1) if isinstance(a, Tensor) else a for a in args)
        out = _apply(op, physical, tuple(_shift(p, k, 1) if name in DIM_PARAMS else p
                                         for name, p in zip(op.params, params)))
        if isinstance(out, tuple):
            parts = tuple(o.reshape(sizes) for o in out)
            return _wrap_outputs(type(out)(*parts) if hasattr(out, "_fields") else parts, levels)
        return make(out.reshape(sizes), levels)
    physical = [align(a, levels, full=True) if isinstance(a, Tensor) else a for a in inputs]
    new = tuple(_shift(p, k, ndim) if name in DIM_PARAMS else p for name, p in zip(op.params, params))
    return _wrap_outputs(_apply(op, (physical,) if op.variadic else tuple(physical), new), levels)


def _with_sizes(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """select_backward / slice_backward: the input size they rebuild gets the batch dims too."""
    k = len(levels)
    (g,) = args
    sizes = tuple(lv.size for lv in levels)
    ndim = len(params[0])
    if ndim == 0:
        return _loop(op, args, params, levels)
    new = tuple(sizes + tuple(p) if name == "input_sizes" else _shift(p, k, ndim) if name in DIM_PARAMS else p
                for name, p in zip(op.params, params))
    return _wrap_outputs(_apply(op, (align(g, levels, full=True),), new), levels)


def _whole(reduce: str) -> Callable:
    """sum()/mean()/max()/min() of everything: the same reduction over the logical dims."""
    def rule(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
        x = args[0]
        p = align(x, levels, full=True)
        dims = tuple(range(len(levels), p.ndim))
        if not dims:
            return make(p.clone() if reduce != "sum" or params[0] is None else p.to(_dtype_of(params[0])), levels)
        if reduce == "sum":
            out = p.sum(dims) if params[0] is None else p.sum(dims, dtype=_dtype_of(params[0]))
        else:
            out = getattr(p, reduce)(dims)
        return make(out, levels)

    return rule


def _dtype_of(np_dtype: Any) -> Any:
    return D.FROM_NUMPY[np.dtype(np_dtype)]


# ---- shape ops --------------------------------------------------------------------------------

def _reshape(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    p = align(args[0], levels)
    return make(p.reshape(tuple(p.shape[:len(levels)]) + tuple(params[0])), levels)


def _expand(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    target = tuple(params[0])
    p = align(args[0], levels, ndim=len(target))
    return make(p.expand(tuple(p.shape[:len(levels)]) + target), levels)


def _permute(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    k = len(levels)
    p = align(args[0], levels)
    return make(_apply(op, (p,), (tuple(range(k)) + tuple(d + k for d in params[0]),)), levels)  # permute(_copy)


def _t(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    k = len(levels)
    p = align(args[0], levels)
    return make(p.transpose(k, k + 1) if args[0].ndim == 2 else p.view(tuple(p.shape)), levels)


def _squeeze_all(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    k = len(levels)
    x = args[0]
    p = align(x, levels)
    dims = tuple(d + k for d, n in enumerate(x.shape) if n == 1)
    return make(p.squeeze(dims) if dims else p.view(tuple(p.shape)), levels)


def _squeeze_dim(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """squeeze(dim) as squeeze(dims) of the one shifted dim: torch's rule calls squeeze.dims (SqueezeBackward2)."""
    x = args[0]
    if x.ndim == 0:
        return _along_dims(op, args, params, levels)
    return make(align(x, levels).squeeze((_shift(params[0], len(levels), x.ndim),)), levels)


# ---- matmul ------------------------------------------------------------------------------------

def _matmul(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """mm, mv, dot, bmm and matmul: vectors become matrices, batch dims broadcast in front."""
    a, b = args
    if op.name == "outer":
        return a.unsqueeze(-1) * b.unsqueeze(-2)
    va, vb = a.ndim == 1, b.ndim == 1
    a2 = a.unsqueeze(0) if va else a
    b2 = b.unsqueeze(-1) if vb else b
    n = max(a2.ndim, b2.ndim)
    pa = align(a2, levels, n) if type(a2) is BatchedTensor else a2
    pb = align(b2, levels, n) if type(b2) is BatchedTensor else b2
    out = make(matmul(pa, pb), levels)
    if va:
        out = out.squeeze(-2)
    if vb:
        out = out.squeeze(-1)
    return out


# ---- indexing -----------------------------------------------------------------------------------

def _advanced_positions(key: tuple) -> list[int]:
    return [i for i, k in enumerate(key) if isinstance(k, np.ndarray)]


def _index(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """x[key] with a plain key: the key skips the batch dims; NumPy moves the result of
    non-adjacent advanced indices to the front, so it is moved back behind the batch dims."""
    key = params[0]
    if _key_batched(key):
        return _loop(op, args, params, levels)
    k = len(levels)
    p = align(args[0], levels, full=True)
    out = _apply(op, (p,), ((slice(None),) * k + tuple(key),))
    adv = _advanced_positions(key)
    if adv and adv != list(range(adv[0], adv[-1] + 1)):
        width = np.broadcast_shapes(*(np.nonzero(key[i])[0].shape if key[i].dtype == bool else key[i].shape
                                      for i in adv))
        out = out.movedim(tuple(range(len(width), len(width) + k)), tuple(range(k)))
    return make(out, levels)


def _key_batched(key: Any) -> bool:
    return any(type(k) is _BatchedView for k in key)


def _index_put(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """x[key] = values (accumulating or not) with a plain key whose advanced indices are adjacent."""
    key, accumulate = params
    adv = _advanced_positions(key)
    if _key_batched(key) or (adv and adv != list(range(adv[0], adv[-1] + 1))):
        return _loop(op, args, params, levels)
    x, values = args
    k = len(levels)
    p = align(x, levels, full=True)
    region = np.empty(x.shape, dtype=bool)[tuple(key)].shape
    if isinstance(values, Tensor):
        values = align(values.to(x.dtype) if values.dtype is not x.dtype else values, levels, len(region))
    return make(_apply(op, (p, values), ((slice(None),) * k + tuple(key), accumulate)), levels)


def _gather_scatter(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """gather / scatter / scatter_add / scatter_reduce / index_reduce: the index gets the batch dims like the
    tensors."""
    k = len(levels)
    physical = tuple(align(a, levels, full=True) if isinstance(a, Tensor) else a for a in args)
    new = []
    for name, p in zip(op.params, params):
        if name == "dim":
            p = p + k
        elif name == "index" and type(p) is _BatchedView:
            p = _align_params((p,), levels, None, full=True)[0]
        elif name == "index":
            p = np.broadcast_to(p, tuple(lv.size for lv in levels) + p.shape)
        new.append(p)
    return make(_apply(op, physical, tuple(new)), levels)


def _arg_extreme(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """argmax / argmin: with dim=None they index the flattened tensor, so flatten the logical dims."""
    dim, keepdim = params
    if dim is not None:
        return _along_dims(op, args, params, levels)
    k = len(levels)
    x = args[0]
    p = align(x, levels, full=True)
    flat = p.reshape(tuple(p.shape[:k]) + (-1,))
    out = _apply(op, (flat,), (k, False))
    return make(out.reshape(tuple(out.shape) + (1,) * x.ndim) if keepdim else out, levels)


def _einsum(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """One einsum step: each level gets a label of its own on the batched operands and the output."""
    (equation,) = params
    inputs, output = equation.split("->")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in equation]
    lead = "".join(spare[:len(levels)])
    labels = inputs.split(",")
    physical, new_labels = [], []
    for a, lab in zip(args, labels + [""] * (len(args) - len(labels))):
        if type(a) is BatchedTensor:
            physical.append(align(a, levels, full=True))
            new_labels.append(lead + lab)
        else:
            physical.append(a)
            new_labels.append(lab)
    new_labels = new_labels[:len(labels)]
    return make(_apply(op, tuple(physical), (f"{','.join(new_labels)}->{lead}{output}",)), levels)


def _trailing_matrices(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Linear algebra on the trailing one or two dims of its operands (matrices, vectors of reflector scales,
    a solve's right-hand sides): NumPy treats leading dims as a batch, so every operand gets all vmap dims."""
    physical = tuple(align(a, levels, full=True) if isinstance(a, Tensor) else a for a in args)
    return _wrap_outputs(_apply(op, physical, params), levels)


def _solve(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Solves of two operands whose batch dims broadcast: both get every vmap dim, then padded to one batch rank
    (a `vector` right-hand side has one trailing dim, matrices two)."""
    a, b = args
    trailing = 1 if dict(zip(op.params, params)).get("vector") else 2
    batch = max(a.ndim - 2, b.ndim - trailing)
    physical = (align(a, levels, batch + 2, full=True), align(b, levels, batch + trailing, full=True))
    out = _apply(op, physical, params)
    if op.name == "linalg_solve_ex":  # its info has A's batch shape, not the broadcast one
        solution, info = out
        return make(solution, levels), make(info.reshape(tuple(info.shape[:len(levels)]) + tuple(a.shape[:-2])), levels)
    if op.name == "linalg_lstsq":  # the outputs its driver does not compute are one empty tensor: one per example
        sizes = tuple(lv.size for lv in levels)
        out = tuple(o if o.numel() else o.expand(sizes + tuple(o.shape)) for o in out)
    return _wrap_outputs(out, levels)


def _attention(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Scaled dot-product attention: the vmap dims lead query, key and value; an additive mask broadcasts from
    the right, or gets them too where it is batched."""
    q = args[0]
    dropout_p, is_causal, mask, *rest = params
    physical = tuple(align(a, levels, q.ndim, full=True) for a in args)
    if type(mask) is _BatchedView:
        mask = _align_params((mask,), levels, q.ndim, full=True)[0]
    return _wrap_outputs(_apply(op, physical, (dropout_p, is_causal, mask, *rest)), levels)


def _lu_solve(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """lu_solve: LU and B broadcast their batch dims in front of the matrices, the pivots (a parameter)
    those of LU."""
    n = max(a.ndim for a in args)
    physical = tuple(align(a, levels, n) if type(a) is BatchedTensor else a for a in args)
    return make(_apply(op, physical, _align_params(params, levels, n - 1)), levels)


def _lu_unpack(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """lu_unpack: the pivots (a parameter) batched as LU is; a part not unpacked stays one empty tensor."""
    factors = align(args[0], levels, full=True)
    pivots, unpack_data, unpack_pivots = _align_params(params, levels, None, full=True)
    if unpack_pivots:
        pivots = np.broadcast_to(pivots, tuple(factors.shape[:-2]) + pivots.shape[-1:])
    p, lower, upper = _apply(op, (factors,), (pivots, unpack_data, unpack_pivots))
    data = (make(lower, levels), make(upper, levels)) if unpack_data else (lower, upper)
    return (make(p, levels) if unpack_pivots else p,) + data


def _repeat(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    (repeats,) = params
    k = len(levels)
    p = align(args[0], levels, ndim=len(repeats), full=True)
    return make(_apply(op, (p,), ((1,) * k + tuple(repeats),)), levels)


def _roll(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """roll along dims shifts them past the batch dims; a roll of the flattened example (no dims) rolls each
    example's flattening, the last dim of the physical tensor seen as (batch dims, elements)."""
    shifts, dims = params
    if dims:
        return _along_dims(op, args, params, levels)
    k = len(levels)
    p = align(args[0], levels, full=True)
    rolled = _apply(op, (p.reshape(tuple(p.shape[:k]) + (-1,)),), (shifts, (k,)))
    return make(rolled.reshape(tuple(p.shape)), levels)


def _composite(build: Callable) -> Callable:
    """A rule that re-expresses the op with other (batched) ops: build(*inputs, *params)."""
    def rule(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
        return build(*args, *params)

    return rule


def _scaled_sum(product: Callable) -> Callable:
    """addmm / addmv / baddbmm / addbmm: beta * self + alpha * product(a, b)."""
    def build(self: Tensor, a: Tensor, b: Tensor, beta: complex, alpha: complex, *layout: bool) -> Tensor:
        out = product(a, b)
        out = out if alpha == 1 else out * alpha
        return out if beta == 0 else (self if beta == 1 else self * beta) + out

    return _composite(build)


def _weight_norm_interface(v: Tensor, g: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """(v g / ||v||, ||v||) from batched ops: the op's norm spans every dim but `dim`, so shifting `dim` past the
    vmap dims (the rule for ops along dims) would take the norm across the examples too."""
    norms = weight_norm_of(v, dim)
    return v * (g / norms), norms


def _masked_fill(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """x.masked_fill(mask, value) is where(mask, value, x), an elementwise op (value a number: a param)."""
    (x,), (mask, value) = args, params
    if not isinstance(value, Tensor):
        value = _creation.full((), value, dtype=x.dtype)
    elif value.dtype is not x.dtype:
        value = value.to(x.dtype)
    return _elementwise(where_op, (value, x), (mask,), levels)


# ---- convolution and pooling ----------------------------------------------------------------------

def _into_rows(t: Any, levels: tuple) -> Tensor:
    """(*vmap, N, ...) as (vmap * N, ...): the examples as more rows of a batch dim."""
    p = align(t, levels, full=True)
    return p.reshape((math.prod(p.shape[:len(levels) + 1]),) + tuple(p.shape[len(levels) + 1:]))


def _into_channels(t: Any, levels: tuple) -> Tensor:
    """(*vmap, N, C, ...) as (N, vmap * C, ...): the examples as more channel groups."""
    p = align(t, levels, full=True).movedim(len(levels), 0)
    return p.reshape((p.shape[0], math.prod(p.shape[1:len(levels) + 2])) + tuple(p.shape[len(levels) + 2:]))


def _from_channels(t: Tensor, levels: tuple) -> Tensor:
    """The inverse of _into_channels."""
    sizes = tuple(lv.size for lv in levels)
    out = t.reshape((t.shape[0],) + sizes + (t.shape[1] // math.prod(sizes),) + tuple(t.shape[2:]))
    return make(out.movedim(0, len(levels)), levels)


def _into_filters(t: Any, levels: tuple) -> Tensor | None:
    """A weight (*vmap, F, ...) as (vmap * F, ...), or a bias (*vmap, F) as (vmap * F,): one filter group per
    example."""
    return None if t is None else _into_rows(t, levels)


def _convolution(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """convolution: an input batched alone folds the vmap dims into its batch dim N; with a batched weight or bias
    (an ensemble) they fold into the groups: each example's channels and filters become groups of their own."""
    x, w, b = args
    win, groups, transposed, output_padding = params
    count = math.prod(lv.size for lv in levels)
    if count == 0:
        return _loop(op, args, params, levels)
    if type(w) is not BatchedTensor and type(b) is not BatchedTensor:
        out = _apply(op, (_into_rows(x, levels), w, b), params)
        return make(out.reshape(tuple(lv.size for lv in levels) + (x.shape[0],) + tuple(out.shape[1:])), levels)
    out = _apply(op, (_into_channels(x, levels), _into_filters(w, levels), _into_filters(b, levels)),
                 (win, groups * count, transposed, output_padding))
    return _from_channels(out, levels)


def _convolution_backward(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """convolution_backward: folded as the convolution is, into the groups (each example's weight and bias
    gradients stay its own); into N when only the input's gradient is wanted from a weight not batched."""
    g, x, w = args
    win, groups, transposed, output_padding, mask = params
    sizes = tuple(lv.size for lv in levels)
    if math.prod(sizes) == 0:
        return _loop(op, args, params, levels)
    if type(w) is not BatchedTensor and not mask[1] and not mask[2]:
        dx, dw, db = _apply(op, (_into_rows(g, levels), _into_rows(x, levels), w), params)
        return make(dx.reshape(sizes + tuple(x.shape)), levels), dw, db
    dx, dw, db = _apply(op, (_into_channels(g, levels), _into_channels(x, levels), _into_filters(w, levels)),
                        (win, groups * math.prod(sizes), transposed, output_padding, mask))
    return (_from_channels(dx, levels), make(dw.reshape(sizes + tuple(w.shape)), levels),
            make(db.reshape(sizes + (-1,)), levels))


def _convolution_weight(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """The weight gradient of a convolution alone: folded into the groups, as convolution_backward."""
    g, x = args
    win, groups = params
    sizes = tuple(lv.size for lv in levels)
    dw = _apply(op, (_into_channels(g, levels), _into_channels(x, levels)), (win, groups * math.prod(sizes)))
    return make(dw.reshape(sizes + (dw.shape[0] // math.prod(sizes),) + tuple(dw.shape[1:])), levels)


def _batch_rows(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Ops whose every operand leads with one batch dim N, each row on its own (grid sampling): the vmap dims
    fold into N."""
    sizes = tuple(lv.size for lv in levels)
    if math.prod(sizes) == 0:
        return _loop(op, args, params, levels)
    out = _apply(op, tuple(_into_rows(a, levels) if isinstance(a, Tensor) else a for a in args), params)
    return make(out.reshape(sizes + (out.shape[0] // math.prod(sizes),) + tuple(out.shape[1:])), levels)


SHAPE_PARAMS = ("input_shape", "output_shape")  # whole shapes (the vmap sizes go in front); others are spatial


def _planes(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Ops on the trailing (spatial) dims of a tensor whose leading dims are any batch of planes (pooling,
    padding, resampling, im2col, and their backwards): the vmap dims are more leading dims. An index array
    parameter (per-plane flat indices) gets them too, a whole-shape parameter their sizes."""
    sizes = tuple(lv.size for lv in levels)
    physical = tuple(align(a, levels, full=True) if isinstance(a, Tensor) else a for a in args)
    new = []
    for name, p in zip(op.params, params):
        if name in SHAPE_PARAMS:
            p = sizes + tuple(p)
        elif type(p) is _BatchedView:
            p = _align_params((p,), levels, None, full=True)[0]
        elif name == "indices" and isinstance(p, np.ndarray):
            p = np.broadcast_to(p, sizes + p.shape)
        new.append(p)
    return _wrap_outputs(_apply(op, physical, tuple(new)), levels)


# ---- normalisation and lookups --------------------------------------------------------------------

def _norm(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """native layer norm: the vmap dims lead its layout and its dims shift; group norm: they fold into N. A
    batched weight or bias scales and shifts after the norm without them."""
    x, w, b = args
    axes, eps = params
    if type(w) is BatchedTensor or type(b) is BatchedTensor:
        y = _norm(op, (x, None, None), params, levels)
        y = y if w is None else y * w.reshape(axes.affine)
        return y if b is None else y + b.reshape(axes.affine)
    sizes = tuple(lv.size for lv in levels)
    if op.name == "native_group_norm":
        axes = axes._replace(layout=(math.prod(sizes) * axes.layout[0],) + tuple(axes.layout[1:]))
    else:
        axes = axes._replace(layout=sizes + tuple(axes.layout), dims=tuple(d + len(levels) for d in axes.dims))
    return make(_apply(op, (align(x, levels, full=True), w, b), (axes, eps)), levels)


def _full_index(index: np.ndarray, levels: tuple) -> np.ndarray:
    """An index parameter with every vmap dim in front (broadcast where it is not batched)."""
    if type(index) is _BatchedView:
        return _align_params((index,), levels, None, full=True)[0].view(np.ndarray)
    return np.broadcast_to(index, tuple(lv.size for lv in levels) + index.shape)


def _offsets(count: int, length: int, ndim: int, levels: tuple) -> np.ndarray:
    """Where each example's rows start once the examples' tables are stacked: (*vmap sizes, 1, ...)."""
    return (np.arange(count) * length).reshape(tuple(lv.size for lv in levels) + (1,) * ndim)


def _embedding(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """embedding: batched indices look up a shared table as they are; a batched table (an ensemble) is
    stacked, each example's indices offset to its own rows."""
    (w,), (indices, padding_idx, by_freq) = args, params
    count = math.prod(lv.size for lv in levels)
    if by_freq or type(w) is BatchedTensor and padding_idx is not None or count == 0:
        return _loop(op, args, params, levels)  # per-example frequencies, padding rows: each table its own
    index = _full_index(indices, levels)
    if type(w) is not BatchedTensor:
        return make(_apply(op, (w,), (index, padding_idx, by_freq)), levels)
    table = align(w, levels, full=True).reshape((count * w.shape[0],) + tuple(w.shape[1:]))
    return make(_apply(op, (table,), (index + _offsets(count, w.shape[0], indices.ndim, levels), None, False)),
                levels)


def _embedding_backward(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """embedding's backward for a batch of gradients: each example adds into its own stacked table."""
    (g,), (indices, num_weights, padding_idx, by_freq) = args, params
    sizes = tuple(lv.size for lv in levels)
    count = math.prod(sizes)
    if by_freq or padding_idx is not None or count == 0:
        return _loop(op, args, params, levels)
    index = _full_index(indices, levels) + _offsets(count, num_weights, indices.ndim, levels)
    out = _apply(op, (align(g, levels, full=True),), (index, count * num_weights, None, False))
    return make(out.reshape(sizes + (num_weights,) + tuple(out.shape[1:])), levels)


def _take(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """take: flat indices into each example, offset to its part of the whole batch flattened."""
    (x,), (index,) = args, params
    count, numel = math.prod(lv.size for lv in levels), math.prod(x.shape)
    if count == 0 or numel == 0:
        return _loop(op, args, params, levels)
    index = _full_index(index, levels)
    index = np.where(index < 0, index + numel, index) + _offsets(count, numel, index.ndim - len(levels), levels)
    return make(_apply(op, (align(x, levels, full=True),), (index,)), levels)


# ---- losses ---------------------------------------------------------------------------------------

def _loss(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """Elementwise losses (mse, bce, huber, ...): the unreduced loss is elementwise; mean or sum the logical dims."""
    at = op.params.index("reduction")
    reduction = params[at]
    out = _elementwise(op, args, params[:at] + ("none",) + params[at + 1:], levels)
    if reduction == "mean":
        return out.mean()
    if reduction == "sum":
        return out.sum()
    return out


def _nll_loss(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """nll_loss (2d) and its backward: the vmap dims fold into the loss's batch dim (N), the loss runs
    unreduced, and each example's reduction follows with batched ops (a 'mean' divides by that example's
    total weight)."""
    target, weight, reduction, ignore_index = params
    if type(weight) is _BatchedView:
        return _loop(op, args, params, levels)
    sizes = tuple(lv.size for lv in levels)
    x = args[-1]  # self; the backward's grad_output comes first
    t = _align_params((target,), levels, None, full=True)[0] if type(target) is _BatchedView else \
        np.broadcast_to(target, sizes + target.shape)
    rows = math.prod(t.shape[:len(levels) + 1])
    flat_x = align(x, levels, full=True).reshape((rows,) + tuple(x.shape[1:] if x.ndim > 1 else x.shape))
    flat_t = t.reshape((rows,) + t.shape[len(levels) + 1:])
    if op.name.endswith("_backward"):
        g = args[0]
        if reduction != "none":  # each example's grad_output, spread over its samples as the reduction did
            g = (g if reduction == "sum" else g / _total_weight(flat_t, weight, ignore_index, levels, g.dtype))
            g = g.reshape((1,) * len(target.shape)).expand(target.shape)
        flat_g = align(g, levels, full=True).reshape(tuple(flat_t.shape))
        out = _apply(op, (flat_g, flat_x), (flat_t, weight, "none", ignore_index))
        return make(out.reshape(sizes + tuple(x.shape)), levels)
    loss = make(_apply(op, (flat_x,), (flat_t, weight, "none", ignore_index)).reshape(sizes + target.shape), levels)
    if reduction == "none":
        return loss
    if reduction == "sum" or weight is None and ignore_index is None:
        return loss.sum() if reduction == "sum" else loss.mean()
    return loss.sum() / _total_weight(flat_t, weight, ignore_index, levels, x.dtype)


def _total_weight(flat_target: np.ndarray, weight: Any, ignore_index: int | None, levels: tuple,
                  dtype: Any) -> Tensor:
    """Each example's sum of its samples' class weights (0 for an ignored target): a 'mean' nll_loss's divisor."""
    valid = np.ones(flat_target.shape, bool) if ignore_index is None else flat_target != ignore_index
    w = valid.astype(float) if weight is None else np.where(valid, weight[np.where(valid, flat_target, 0)], 0)
    return make(_plain(w.reshape(tuple(lv.size for lv in levels) + (-1,)).sum(-1).astype(D.native(np, dtype))),
                levels)


# ---- the fallback -------------------------------------------------------------------------------------

def _loop(op: Any, args: tuple, params: tuple, levels: tuple) -> Any:
    """No batching rule: run the op once per example (on slices of the physical tensors, so
    autograd still sees one graph) and stack the results."""
    warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                  f"{op.name}. Please file us an issue on GitHub so that we can prioritize its implementation.",
                  UserWarning, stacklevel=4)
    sizes = tuple(lv.size for lv in levels)
    count = math.prod(sizes)
    if count == 0:
        raise RuntimeError(f"vmap: the fallback for {op.name} cannot run over a batch of size 0")

    def examples(value: Any) -> list:
        if type(value) is BatchedTensor:
            p = align(value, levels, full=True)
            return list(p.reshape((count,) + tuple(p.shape[len(levels):])).unbind(0))
        if type(value) is _BatchedView:
            p = _align_params((value,), levels, None, full=True)[0]
            return list(p.reshape((count,) + p.shape[len(levels):]))
        if type(value) is list:
            columns = [examples(v) for v in value]
            return [[c[i] for c in columns] for i in range(count)]
        if type(value) is tuple and any(type(v) is _BatchedView for v in value):
            columns = [examples(v) for v in value]
            return [tuple(c[i] for c in columns) for i in range(count)]
        return [value] * count

    arg_columns = [examples(a) for a in args]
    param_columns = [examples(p) for p in params]
    results = [_apply(op, tuple(c[i] for c in arg_columns), tuple(c[i] for c in param_columns))
               for i in range(count)]
    first = results[0]
    if isinstance(first, tuple):
        outs = tuple(_stack_examples(stack, [r[j] for r in results], sizes, op) for j in range(len(first)))
        return _wrap_outputs(type(first)(*outs) if hasattr(first, "_fields") else outs, levels)
    return make(_stack_examples(stack, results, sizes, op), levels)


def _stack_examples(stack: Callable, tensors: list, sizes: tuple, op: Any) -> Tensor:
    if len({t.shape for t in tensors}) > 1:
        raise RuntimeError(f"vmap: We do not support batching operators that can output dynamic shape. Attempted to "
                           f"vmap over {op.name}. Please file an issue at https://github.com/pytorch/pytorch/issues "
                           "if you need this feature.")
    out = stack(tensors, 0)
    return out.reshape(sizes + tuple(out.shape[1:]))


# ---- choosing a rule ---------------------------------------------------------------------------------

ELEMENTWISE_FAMILIES = ("retrograd.ops.pointwise", "retrograd.ops.activation", "retrograd.ops.complex",
                        "retrograd.ops.special", "retrograd.ops.numeric")
NOT_ELEMENTWISE = {"prelu", "prelu_kernel_backward", "glu", "nll_loss"}
RULES: dict[str, Callable] = {
    "sum_all": _whole("sum"), "mean_all": _whole("mean"), "max_all": _whole("amax"), "min_all": _whole("amin"),
    "view": _reshape, "_unsafe_view": _reshape, "expand": _expand, "permute": _permute, "permute_copy": _permute,
    "_unpack_dual_primal": _reshape,  # unpack_dual's view (forward_ad._identity_op), made on its first use
    "t": _t,
    "squeeze": _squeeze_all, "squeeze_dim": _squeeze_dim, "select_backward": _with_sizes, "slice_backward": _with_sizes,
    "clone": _elementwise, "_to_copy": _elementwise, "copy_": _copy,
    "mm": _matmul, "mv": _matmul, "dot": _matmul, "bmm": _matmul, "outer": _matmul, "matmul_nd": _matmul,
    "matmul_vec_mat": _matmul,
    "index": _index, "index_put": _index_put, "copy_slices_put": _index_put, "gather": _gather_scatter,
    "scatter": _gather_scatter, "scatter_add": _gather_scatter, "masked_fill": _masked_fill,
    "mse_loss": _loss, "binary_cross_entropy_with_logits": _loss, "binary_cross_entropy": _loss, "huber_loss": _loss,
    "smooth_l1_loss": _loss, "soft_margin_loss": _loss,
    **dict.fromkeys(("nll_loss", "nll_loss2d", "nll_loss_backward", "nll_loss2d_backward"), _nll_loss),
    "convolution": _convolution, "convolution_backward": _convolution_backward,
    "convolution_weight": _convolution_weight,
    **dict.fromkeys(("max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool_backward",
                     "max_pool2d_with_indices_backward", "pick", "avg_pool2d", "avg_pool3d", "avg_pool_backward",
                     "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
                     "fractional_max_pool2d_backward", "fractional_max_pool3d_backward", "max_unpool2d", "max_unpool3d",
                     "im2col", "col2im", "constant_pad_nd", "gather_dims", "scatter_dims", "separable_map",
                     "circular_pad", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d",
                     "replication_pad2d", "replication_pad3d", "upsample_nearest1d", "upsample_nearest2d",
                     "upsample_nearest3d", "upsample_nearest_exact1d", "upsample_nearest_exact2d",
                     "upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d",
                     "upsample_trilinear3d", "upsample_bilinear2d_aa", "upsample_bicubic2d_aa", "upsample_lanczos2d_aa",
                     "pixel_shuffle", "pixel_unshuffle"), _planes),
    "_reshape_alias": _reshape, "view_copy": _reshape, "expand_copy": _expand, "t_copy": _t,
    "squeeze_copy": _squeeze_all,
    "alias_copy": _elementwise, "native_layer_norm": _norm, "native_group_norm": _norm, "embedding": _embedding,
    "embedding_dense_backward": _embedding_backward, "take": _take, "grid_sampler_2d": _batch_rows,
    "grid_sampler_3d": _batch_rows, "_scaled_dot_product_flash_attention_for_cpu": _attention,
    "linalg_lstsq": _solve, "addr": _scaled_sum(lambda a, b: a.outer(b)), "native_dropout_backward": _elementwise,
    "_thnn_fused_lstm_cell": _elementwise,  # its gates split along the last dim, which batch dims in front leave alone
    **dict.fromkeys(("cholesky", "cholesky_inverse", "geqrf", "linalg_eig", "linalg_householder_product",
                     "linalg_ldl_factor_ex", "matrix_power_zero", "ormqr"), _trailing_matrices),
    **dict.fromkeys(("cholesky_solve", "linalg_solve_ex", "linalg_solve_triangular", "triangular_solve"), _solve),
    "copy_slices": _loop, "as_strided": _refused, "as_strided_copy": _refused,
    "as_strided_scatter": _refused,
    "alias": _elementwise, "repeat": _repeat, "roll": _roll, "einsum": _einsum,
    **dict.fromkeys(("fake_quantize_per_tensor_affine_cachemask", "fake_quantize_per_channel_affine_cachemask",
                     "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"), _elementwise),
    "_is_all_true": _every_example, "_is_any_true": _every_example,
    "diagonal_backward": _with_sizes, "unfold_backward": _with_sizes,
    "scatter_reduce": _gather_scatter, "index_reduce": _gather_scatter, "scatter_value": _gather_scatter,
    "scatter_reduce_legacy": _gather_scatter,
    "argmax": _arg_extreme, "argmin": _arg_extreme,
    **dict.fromkeys(("_unique", "_unique2", "unique_dim", "unique_consecutive"), _dynamic_shape),
    "vdot": _composite(lambda a, b: (a.conj() * b).sum()),
    "_weight_norm_interface": _composite(_weight_norm_interface),
    "trace": _composite(lambda x: x.diagonal(0, 0, 1).sum()),
    "prod_all": _composite(lambda x, dtype: x.reshape(-1).prod(0) if dtype is None else
                           x.reshape(-1).prod(0, dtype=_dtype_of(dtype))),
    "addmm": _scaled_sum(lambda a, b: a.mm(b)), "addmv": _scaled_sum(lambda a, b: a.mv(b)),
    "baddbmm": _scaled_sum(lambda a, b: a.bmm(b)), "addbmm": _scaled_sum(lambda a, b: a.bmm(b).sum(0)),
    "linalg_lu_solve": _lu_solve, "lu_unpack": _lu_unpack,
    **dict.fromkeys(("linalg_cholesky_ex", "linalg_det", "linalg_eigh", "linalg_inv_ex", "linalg_lu",
                     "linalg_lu_factor_ex", "linalg_matrix_exp", "linalg_pinv", "linalg_qr", "linalg_slogdet",
                     "linalg_svd", "tril", "triu"), _trailing_matrices),
}
_RULE_CACHE: dict = {}


def _rule_for(op: Any) -> Callable:
    rule = RULES.get(op.name)
    if rule is not None:
        return rule
    module = getattr(op.forward, "__module__", "")
    has_dims = any(p in DIM_PARAMS for p in op.params)
    if module in ELEMENTWISE_FAMILIES and not has_dims and op.name not in NOT_ELEMENTWISE:
        return _elementwise
    if has_dims and not op.name.endswith("_backward"):
        return _along_dims
    return _loop


def batching_rule(op: Any) -> str:
    """The name of the rule vmap uses for `op` ('_loop' when it has none)."""
    return _rule_for(op).__qualname__.split(".")[0]


# --------------------------------------------------------------------------------------------
# Custom Functions under vmap
# --------------------------------------------------------------------------------------------

class VmapInfo:
    """What a Function's `vmap` staticmethod learns about the level: batch size and randomness."""

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size = batch_size
        self.randomness = randomness


def function_vmap(cls: type, args: tuple, kwargs: dict) -> Any:
    """Function.apply on batched arguments: the Function's own `vmap` rule, one level at a time
    (innermost first; the rule sees that level's batch dim, outer levels stay batched), or, with
    generate_vmap_rule=True, the Function applied per example and the results stacked."""
    levels = _sorted({lv.id: lv for a in args for lv in levels_of(a)}.values())
    if not levels:
        return NotImplemented
    level = levels[-1]
    if "vmap" in _own_attributes(cls):
        peeled = [to_physical(a, (level,)) if any(lv is level for lv in levels_of(a)) else a for a in args]
        in_dims = tuple(0 if any(lv is level for lv in levels_of(a)) else None for a in args)
        outputs, out_dims = cls.vmap(VmapInfo(level.size, level.randomness), in_dims, *peeled, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        dims = (out_dims,) * len(outs) if not isinstance(out_dims, tuple) else out_dims
        wrapped = tuple(o if d is None else from_physical(o.movedim(d, 0), (level,)) for o, d in zip(outs, dims))
        return wrapped[0] if single else wrapped
    if not cls.generate_vmap_rule:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please override "
                           "and implement the vmap staticmethod or set generate_vmap_rule=True. For more details, "
                           "please see https://pytorch.org/docs/main/notes/extending.func.html")
    peeled = [to_physical(a, (level,)) if any(lv is level for lv in levels_of(a)) else a for a in args]
    batchedness = [any(lv is level for lv in levels_of(a)) for a in args]
    results = [cls.apply(*[a[i] if b else a for a, b in zip(peeled, batchedness)], **kwargs) for i in range(level.size)]
    if isinstance(results[0], tuple):
        return tuple(from_physical(stack([r[j] for r in results]), (level,)) for j in range(len(results[0])))
    return from_physical(stack(results), (level,))


def _own_attributes(cls: type) -> set:
    """Names a Function subclass defines itself (not inherited from Function)."""
    from .function import Function

    names: set = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(vars(klass))
    return names


# --------------------------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------------------------

def _flatten(tree: Any) -> tuple[list, Any]:
    """Leaves of nested tuples/lists/dicts, and the structure to rebuild them."""
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        leaves, specs = [], []
        for v in tree:
            sub, spec = _flatten(v)
            leaves += sub
            specs.append(spec)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for key in tree:
            sub, spec = _flatten(tree[key])
            leaves += sub
            specs.append((key, spec))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(leaves: list, spec: Any) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        kind, children = s
        if kind is dict:
            return {key: build(c) for key, c in children}
        return kind(build(c) for c in children)

    return build(spec)


def _spec_text(spec: Any, indent: int = 0) -> str:
    """A structure as torch's pytree TreeSpec prints: a dict's keys as its context, children after the first on
    lines of their own, indented two more per level."""
    if spec is None:
        return "*"
    kind, children = spec
    context = repr([key for key, _ in children]) if kind is dict else "None"
    parts = [_spec_text(c, indent + 2) for c in ([c for _, c in children] if kind is dict else children)]
    body = ",".join(parts[:1] + ["\n" + " " * (indent + 2) + part for part in parts[1:]])
    return f"TreeSpec({kind.__name__}, {context}, [{body}])"


def broadcast_prefix(prefix: Any, tree: Any, what: str, context: str) -> list:
    """One value per leaf of `tree`, from `prefix` (a value, or a structure matching the tree's top); torch's error,
    naming both whole structures, where some level does not match."""
    values = _broadcast(prefix, tree)
    if values is None:
        whole = {"in_dims": "inputs", "out_dims": "outputs"}[what]
        raise ValueError(f"{context}: {what} is not compatible with the structure of `{whole}`. {what} has "
                         f"structure {_spec_text(_flatten(prefix)[1])} but {whole} has structure "
                         f"{_spec_text(_flatten(tree)[1])}.")
    return values


def _broadcast(prefix: Any, tree: Any) -> list | None:
    """broadcast_prefix's values, or None where the structures differ."""
    leaves, spec = _flatten(tree)
    if isinstance(prefix, (tuple, list, dict)) and not hasattr(prefix, "_fields"):
        if spec is None or not _same_top(prefix, tree):
            return None
        out: list = []
        items = prefix.values() if isinstance(prefix, dict) else prefix
        subtrees = tree.values() if isinstance(tree, dict) else tree
        for p, sub in zip(items, subtrees):
            found = _broadcast(p, sub)
            if found is None:
                return None
            out += found
        return out
    return [prefix] * len(leaves)


def _same_top(prefix: Any, tree: Any) -> bool:
    if isinstance(prefix, dict):
        return isinstance(tree, dict) and list(prefix) == list(tree)
    return isinstance(tree, (tuple, list)) and isinstance(prefix, list) == isinstance(tree, list) and \
        len(prefix) == len(tree)  # a tuple and a list are different pytree nodes, as in torch's pytree


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """Vectorise `func` over a dim of its inputs: `vmap(f)(xs)` is `stack([f(x) for x in xs])`,
    computed in one batched pass (Note [batched tensors]).

    >>> vmap(torch.dot)(torch.randn(5, 3), torch.randn(5, 3)).shape
    torch.Size([5])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapped


def _name(func: Callable) -> str:
    return getattr(func, "__name__", None) or getattr(func, "name", None) or repr(func)


def _vmap_call(func: Callable, in_dims: Any, out_dims: Any, randomness: str, chunk_size: int | None,
               args: tuple, kwargs: dict) -> Any:
    name = _name(func)
    context = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{context}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{context}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                         f"structure {_spec_text(_flatten(in_dims)[1])} but inputs has structure "
                         f"{_spec_text(_flatten(args)[1])}.")
    leaves, spec = _flatten(args)
    dims = broadcast_prefix(in_dims, args, "in_dims", context)
    size = None
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{context}: Got in_dim={d} for an input but in_dim must be either an integer dimension "
                             "or None.")
        if not isinstance(x, Tensor):
            raise ValueError(f"{context}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        n = x.ndim
        if not -n <= d < n:
            raise ValueError(f"{context}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    size = sizes[0]
    if chunk_size is not None and chunk_size < size:
        return _chunked(func, leaves, dims, spec, out_dims, randomness, chunk_size, size, kwargs)
    level = push_level(size, randomness)
    try:
        batched = [x if d is None else from_physical(x if d == 0 else x.movedim(d, 0), (level,))
                   for x, d in zip(leaves, dims)]
        out = func(*_unflatten(batched, spec), **kwargs)
        return _unwrap_outputs(out, level, out_dims, name)
    finally:
        pop_level(level)


def _unwrap_outputs(out: Any, level: Level, out_dims: Any, name: str) -> Any:
    context = f"vmap({name}, ..., out_dims={out_dims})(<inputs>)"
    leaves, spec = _flatten(out)
    if isinstance(out_dims, (tuple, list)) and not _same_top(out_dims, out):
        raise ValueError(f"{context}: out_dims is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {_spec_text(_flatten(tuple(out_dims))[1])} but outputs has structure "
                         f"{_spec_text(spec)}.")
    dims = broadcast_prefix(out_dims, out, "out_dims", context)
    result = []
    for o, d in zip([rewrap(x) for x in leaves], dims):
        if d is None:
            if any(lv is level for lv in levels_of(o)):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            result.append(o)
            continue
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you mean "
                             "to set out_dims= to None for output?")
        physical = to_physical(o, (level,))
        result.append(physical if d == 0 else physical.movedim(0, d))  # torch hands back the tensor itself
    return _unflatten(result, spec)


def _chunked(func: Callable, leaves: list, dims: list, spec: Any, out_dims: Any, randomness: str, chunk_size: int,
             size: int, kwargs: dict) -> Any:
    """vmap over chunks of at most `chunk_size` examples, outputs concatenated along out_dims."""
    starts = range(0, size, chunk_size)
    pieces = []
    for start in starts:
        chunk = [x if d is None else x.narrow(d, start, min(chunk_size, size - start)) for x, d in zip(leaves, dims)]
        in_dims = tuple(_unflatten(dims, spec))
        fn = vmap(lambda *a: func(*a, **kwargs), in_dims, out_dims, randomness)
        pieces.append(fn(*_unflatten(chunk, spec)))
    out_leaves = [_flatten(p)[0] for p in pieces]
    _, out_spec = _flatten(pieces[0])
    odims = broadcast_prefix(out_dims, pieces[0], "out_dims", "vmap")
    joined = [cat([p[i] for p in out_leaves], d) if d is not None else out_leaves[0][i] for i, d in enumerate(odims)]
    return _unflatten(joined, out_spec)


# --------------------------------------------------------------------------------------------
# One vectorised backward pass
# --------------------------------------------------------------------------------------------

def batched_grad(outputs: Sequence, inputs: Sequence, grad_outputs: Sequence, retain_graph: bool,
                 create_graph: bool) -> list:
    """autograd.grad with a batch of cotangents (dim 0 of each grad_output): the engine runs once,
    inside vmap, so every node's formulas run on batched gradients."""
    from .engine import run_backward

    sizes = {g.shape[0] for g in grad_outputs if g is not None}
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{[g.shape[0] for g in grad_outputs if g is not None]} for the mapped dimension")
    level = push_level(sizes.pop() if sizes else 1)
    try:
        gos = [None if g is None else from_physical(g, (level,)) for g in grad_outputs]
        grads = run_backward(outputs, gos, retain_graph, create_graph, inputs=inputs, capture=True)
        return [None if g is None else to_physical(g, (level,)) for g in grads]
    finally:
        pop_level(level)
