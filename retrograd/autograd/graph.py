"""Graph nodes (what `tensor.grad_fn` points at), leaf accumulators and hooks.

A node knows the nodes that produced its inputs (`next_functions`, as (node, output_nr) pairs)
and how to turn gradients of its outputs into gradients of its inputs (`apply`). Leaves that
require grad get an `AccumulateGrad` node, which adds what arrives into `.grad`. Nodes hold no
reference back to their output tensors, so a graph is freed by reference counting alone.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import _tensor  # partly loaded while this module loads; read at call time
from .._xp import namespace
from .grad_mode import _state as _grad_state

if TYPE_CHECKING:
    from .._tensor import Tensor

NO_EDGE = (None, 0)

# Note [edges]
# torch shows a node's edges as `next_functions`, a tuple of (node, output_nr) pairs. Stored that
# way, recording an op would allocate one pair per input plus the tuple holding them, and every
# one of them is an object Python's garbage collector tracks and walks while the graph is alive
# (in a graph of small ops the collector's passes are a third of the forward). So a node keeps
# two parallel tuples instead: `_next_nodes` and `_next_nrs`, whose all-zero case (nearly every
# edge) is one shared constant; `next_functions` builds the pairs when asked.

# Note [sequence numbers]
# Every node is numbered as it is made (torch's sequence_nr, `_sequence_nr()`): the engine runs, among the
# nodes whose gradients are complete, the one made last (Note [execution order] in engine.py), and the
# profiler tags an op's event and its node's backward events with the number. A leaf's AccumulateGrad takes
# no number but UINT64_MAX, as in torch, and runs first. torch counts per thread from 0; here one count
# serves every thread, so numbers stay unique (a thread's nodes are numbered in the order it made them).
next_sequence_nr = itertools.count().__next__
ACCUMULATE_GRAD_SEQUENCE_NR = 2**64 - 1


class RemovableHandle:
    """Returned by register_hook; `remove()` unregisters the hook."""

    __slots__ = ("_hooks", "_key")

    def __init__(self, hooks: dict, key: object) -> None:
        self._hooks = weakref.ref(hooks) if hasattr(hooks, "__weakref__") else (lambda: hooks)
        self._key = key

    @property
    def id(self) -> object:
        """The hook's key in its dict."""
        return self._key

    def remove(self) -> None:
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self._key, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


_hook_ids = itertools.count()  # one count for every kind of hook, from 0, as torch's RemovableHandle.next_id


def add_hook(hooks: dict, fn: Callable) -> RemovableHandle:
    """Add `fn` to a dict of hooks (a HookDict, or any dict a user put in `Tensor._backward_hooks`)
    under a fresh id; the handle removes it."""
    key = next(_hook_ids)
    hooks[key] = fn
    return RemovableHandle(hooks, key)


class HookDict(OrderedDict):
    """An ordered dict of hooks (an OrderedDict, as torch's), that handles point at weakly."""

    __slots__ = ()

    def add(self, fn: Callable) -> RemovableHandle:
        return add_hook(self, fn)

    def __repr__(self) -> str:
        return repr(OrderedDict(self))  # printed as torch prints a module's hooks (the pruning tutorial does)


class HookSet:
    """The rarely used per-node extras (hooks, retain_grad, metadata), made on first use."""

    __slots__ = ("post", "pre", "tensor", "retained", "metadata", "output_meta")

    def __init__(self) -> None:
        self.post: HookDict | None = None
        self.pre: HookDict | None = None
        self.tensor: dict[int, list[dict]] = {}  # output -> hook dicts of its tensors (Tensor._backward_hooks)
        self.retained: dict[int, weakref.ref] = {}
        self.metadata: dict = {}
        self.output_meta: tuple | None = None  # (shape, dtype) of a one-output node's output, when known


class Node:
    """A step of the backward graph; subclasses define `apply(grads) -> grads of inputs`."""

    # the edges to the nodes that produced the inputs, as two parallel tuples (Note [edges])
    __slots__ = ("_next_nodes", "_next_nrs", "_hookset", "_trace", "_seq", "__weakref__")
    _out_meta: tuple | None = None  # (shape, dtype) of each output of a multi-output node; None for one output
    # True where apply(grads, wanted) takes the edges whose gradients are wanted (Note [gradients not asked for])
    _takes_wanted = False

    def __init__(self) -> None:
        self._hookset = None
        self._trace = anomaly_trace() if anomaly.enabled else None
        self._seq = next_sequence_nr()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def name(self) -> str:
        """The node's name as torch reports it, e.g. 'MulBackward0'."""
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """(node, output_nr) per input: the node that produced it, None for an input that wants no gradient."""
        return tuple(zip(self._next_nodes, self._next_nrs))

    @next_functions.setter
    def next_functions(self, edges: Sequence[tuple]) -> None:
        self._next_nodes = tuple([node for node, _ in edges])
        self._next_nrs = tuple([nr for _, nr in edges])

    def apply(self, grads: list) -> list:
        raise NotImplementedError

    def _sequence_nr(self) -> int:
        """The node's number in the order nodes were made (Note [sequence numbers])."""
        return self._seq

    def _set_sequence_nr(self, sequence_nr: int) -> None:
        self._seq = int(sequence_nr)

    def release(self) -> None:
        """Free what was saved for backward (called after use unless retain_graph)."""

    def hooks(self) -> HookSet:
        if self._hookset is None:
            self._hookset = HookSet()
        return self._hookset

    @property
    def metadata(self) -> dict:
        return self.hooks().metadata

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """fn(grad_inputs, grad_outputs) runs after this node; it may return new grad_inputs."""
        hs = self.hooks()
        if hs.post is None:
            hs.post = HookDict()
        return hs.post.add(fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """fn(grad_outputs) runs before this node; it may return new grad_outputs."""
        hs = self.hooks()
        if hs.pre is None:
            hs.pre = HookDict()
        return hs.pre.add(fn)

    def __call__(self, *grads: Any) -> Any:
        """Apply the node to one gradient per output, as torch's `grad_fn(...)` does."""
        expected = len(self._out_meta) if self._out_meta else 1
        if len(grads) != expected:
            raise TypeError(f"expected {expected} arguments, got {len(grads)} instead")
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else tuple(out)


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into `variable.grad`."""

    __slots__ = ("variable",)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __init__(self, variable: Tensor) -> None:
        self._hookset = None  # Node.__init__'s fields, set here: a leaf's accumulator is made every forward
        self._trace = anomaly_trace() if anomaly.enabled else None
        self._seq = ACCUMULATE_GRAD_SEQUENCE_NR
        self.variable = variable
        self._next_nodes = self._next_nrs = ()

    def apply(self, grads: list) -> list:
        accumulate_into(self.variable, grads[0])
        return []


def accumulate_into(tensor: Tensor, grad: Tensor | None) -> None:
    """torch's accumulation: the first gradient is stored, later ones are added (in place
    when no graph is being built, so `.grad` keeps its identity as in torch)."""
    if grad is None:
        return
    old = tensor._grad
    if old is None:
        if _grad_state.enabled:  # a differentiable copy (CopyBackwards), as torch stores it
            tensor._grad = _copy_of(grad, tensor._data, differentiable=True)
        elif _obeys_layout(grad._data, tensor._data) and _stealable(grad):
            tensor._grad = grad
        else:
            tensor._grad = _copy_of(grad, tensor._data)
    elif _grad_state.enabled:
        tensor._grad = old + grad
    else:
        old._data += grad._data
    extra = tensor._extra  # its post-accumulate hooks (register_post_accumulate_grad_hook)
    hooks = None if extra is None else extra.get("post_acc")
    if hooks:
        for fn in list(hooks.values()):
            if fn(tensor) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def sum_gradients(old: Tensor, new: Tensor) -> Tensor:
    """old + new, two gradients meeting in the engine's buffer of a node: added into old's memory when nothing
    records the sum and nothing but that buffer refers to old or its array (torch's InputBuffer accumulates in
    place too), as an LSTM's recurrent weight gathers one gradient per time step; else a new tensor. References
    counted: the buffer's, the argument's and getrefcount's own (for the array: old's, `data`'s, getrefcount's)."""
    data, other = old._data, new._data
    if (not _grad_state.enabled and type(old) is type(new) is _tensor.Tensor and old._extra is None
            and new._extra is None and old._base is None and old.grad_fn is None and type(data) is type(other)
            and getattr(data, "base", True) is None and data.dtype == other.dtype and data.shape == other.shape
            and data.dtype.kind in "fc" and data.dtype.itemsize >= 4  # NumPy's own sum (not half's, not complex32's)
            and getattr(getattr(data, "flags", None), "writeable", True)
            and sys.getrefcount(old) <= 3 and sys.getrefcount(data) <= 3):
        data += other
        return old
    return old + new


def _stealable(grad: Tensor) -> bool:
    """True when nothing but the engine refers to `grad` or its memory, so `.grad` may keep it
    without a copy (torch's rule too). References counted here: the engine's list, the argument
    of accumulate_into, the argument of _stealable and getrefcount's own (plus `data`/`base`).
    A whole-array view of an otherwise unreferenced array (a reshape of a fresh gradient) is kept
    as well; the caller also checks torch's layout contract (`_obeys_layout`)."""
    data = grad._data
    if grad.grad_fn is not None or sys.getrefcount(grad) > 4:
        return False
    base = getattr(data, "base", None)  # array API arrays without NumPy's views have none
    if base is None:
        return sys.getrefcount(data) <= 3
    owner = grad._base  # the tensor the view was taken of, if it still wraps the same array
    allowed = 4 if owner is not None and owner._data is base else 3
    if (type(base) is type(data) and base.base is None and base.size == data.size
            and sys.getrefcount(base) <= allowed and sys.getrefcount(data) <= 3):
        grad._base = grad._extra = None  # the kept gradient stands alone: no view history
        return True
    return False


def _obeys_layout(grad: Any, variable: Any) -> bool:
    """torch's layout contract for a stored gradient: the strides `_copy_of` would give it (the
    variable's own when it is dense), ignoring dims of size 1; any array API array without a layout obeys."""
    if not hasattr(variable, "flags"):
        return True
    flags = variable.flags
    dense = flags.c_contiguous or flags.f_contiguous
    if dense and grad.strides == variable.strides:  # the common case, decided without a loop
        return True
    target = variable.strides if dense else namespace(variable).empty_like(variable).strides
    return all(g == t for n, g, t in zip(grad.shape, grad.strides, target) if n != 1)


def _copy_of(grad: Tensor, variable: Any, differentiable: bool = False) -> Tensor:
    """A copy of `grad` laid out like `variable` (torch's clone_obey_contract); under create_graph
    it is recorded (copy_, CopyBackwards), so the stored gradient has torch's grad_fn."""
    copy = _tensor._wrap(namespace(variable).empty_like(variable, dtype=grad._data.dtype))
    if differentiable:
        return copy.copy_(grad)
    copy._data[...] = grad._data
    return copy


def edge_of(tensor: Tensor) -> tuple:
    """The (node, output_nr) edge that receives the gradient of `tensor`."""
    fn = tensor.grad_fn
    if fn is not None:
        return (fn, tensor._output_nr)
    return (tensor._accumulator(), 0)


# Anomaly mode lives here because node creation is where it records forward tracebacks.
class _Anomaly:
    def __init__(self) -> None:  # instance attributes: the interpreter specialises their reads (every node reads one)
        self.enabled = False
        self.check_nan = True


anomaly = _Anomaly()


_PACKAGE = __file__[: -len(os.path.join("autograd", "graph.py"))]  # retrograd's own directory


# the node the engine is running in this thread, while anomaly mode is on: the parent of nodes made by its backward
running_node: contextvars.ContextVar[Node | None] = contextvars.ContextVar("running_node", default=None)


class AnomalyRecord(NamedTuple):
    """What anomaly mode keeps on a node: the forward call's frames, and the node whose backward
    made it (None for a node made by a forward pass)."""

    frames: list
    parent: Node | None


def anomaly_trace() -> AnomalyRecord:
    """The stack of the forward call being recorded, without retrograd's own frames (torch's trace
    shows the caller's code only); source lines are read only if the trace is ever shown."""
    import traceback

    frames = traceback.StackSummary.extract(traceback.walk_stack(sys._getframe(1)), lookup_lines=False)
    return AnomalyRecord([f for f in reversed(frames) if not f.filename.startswith(_PACKAGE)], running_node.get())


# --------------------------------------------------------------------------------------------
# Saved-tensor hooks
# --------------------------------------------------------------------------------------------

_hooks_disabled: list[str] = []  # messages of the open disable_saved_tensors_hooks blocks


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Inside, every tensor an op saves for backward goes through pack_hook, and whatever it
    returned through unpack_hook when backward needs it (the innermost pair applies).

    >>> with saved_tensors_hooks(lambda x: x.detach().clone(), lambda x: x):
    ...     y = a * b   # a and b are saved as clones
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        from .forward_ad import transforms

        if _hooks_disabled:
            raise RuntimeError(_hooks_disabled[-1])
        transforms.saved_hooks = transforms.saved_hooks + ((self.pack_hook, self.unpack_hook),)
        transforms.update()
        return self

    def __exit__(self, *exc: object) -> None:
        from .forward_ad import transforms

        transforms.saved_hooks = transforms.saved_hooks[:-1]
        transforms.update()


class _SavedState:
    """What in-place writes must know while saved-tensor hooks are on (Tensor._check_inplace calls
    before_inplace_write then): the tensor about to be written, so that an in-place op that saves it
    packs its value from before the write (a snapshot, as torch packs a clone), and the open
    allow_mutation_on_saved_tensors context, which keeps the saved values a write would change."""

    inplace_target: tuple[Tensor, int] | None = None  # (tensor, its version before the write)
    mutation: _AllowMutationContext | None = None


saved_state = _SavedState()


def before_inplace_write(tensor: Tensor) -> None:
    """An in-place op is about to write into `tensor` (only called while saved-tensor hooks are on)."""
    saved_state.inplace_target = (tensor, tensor._version_value())
    if saved_state.mutation is not None:
        saved_state.mutation.keep_originals(tensor)


# Note [allow mutation on saved tensors]
# Inside allow_mutation_on_saved_tensors, saved tensors go through a pack hook that hands back a
# handle (one per tensor object and version: the same tensor saved twice shares it) and keeps the
# tensor as the handle's original. Before any in-place write, every saved tensor that aliases the
# written one at its current version (same version counter, which views share, and same version) is
# cloned once, and the clone replaces the original: backward unpacks the handle to the clone. The
# tables are weak on handles, so entries go when the nodes that saved them are freed.


class _Handle:
    """What the pack hook of allow_mutation_on_saved_tensors returns for one saved tensor."""

    __slots__ = ("__weakref__",)


class _AllowMutationContext:
    """The state of one allow_mutation_on_saved_tensors block (torch's _AllowMutationOnSavedContext):
    `original` and `cloned` map handles to tensors, `tid_to_weakhandle` maps (tensor, counter, version)
    to handles, `sid_to_tid` maps (counter, version) to the tensors saved at it."""

    def __init__(self) -> None:
        self.cloned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.original: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.sid_to_tid: dict[tuple, set] = {}

    def pack(self, tensor: Tensor) -> _Handle:
        counter = tensor._counter()
        sid = (id(counter), counter[0])
        tid = (id(tensor), *sid)
        self.sid_to_tid.setdefault(sid, set()).add(tid)
        handle = self.tid_to_weakhandle.get(tid)
        if handle is None:
            handle = self.tid_to_weakhandle[tid] = _Handle()
            self.original[handle] = tensor
        return handle

    def unpack(self, handle: _Handle) -> Tensor:
        if saved_state.mutation is not self:
            raise AssertionError(_OUTSIDE_MUTATION_CONTEXT)
        tensor = self.cloned.get(handle)
        if tensor is None:
            tensor = self.original.get(handle)
            if tensor is None:
                raise AssertionError(_OUTSIDE_MUTATION_CONTEXT)
        return tensor

    def keep_originals(self, tensor: Tensor) -> None:
        """Clone, once, every saved tensor that a write into `tensor` would change."""
        counter = tensor._counter()
        for tid in self.sid_to_tid.get((id(counter), counter[0]), ()):
            handle = self.tid_to_weakhandle.get(tid)
            if handle is None or handle in self.cloned:  # freed by a backward since, or already kept
                continue
            self.cloned[handle] = self.original.pop(handle).clone()

    def clear(self) -> None:
        self.cloned.clear()
        self.original.clear()
        self.tid_to_weakhandle.clear()
        self.sid_to_tid.clear()


_OUTSIDE_MUTATION_CONTEXT = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                             "in which the graph was originally recorded.")  # (sic: torch's text)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationContext]:
    """Inside, tensors saved for backward may be changed in place: the value saved is cloned before the
    first write and backward uses the clone. Run forward and backward inside the same block
    (Note [allow mutation on saved tensors]).

    >>> with allow_mutation_on_saved_tensors():
    ...     b = a.clone(); out = (b ** 2).sum(); b.sin_(); out.backward()
    """
    context = _AllowMutationContext()
    with saved_tensors_hooks(context.pack, context.unpack):
        if saved_state.mutation is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        saved_state.mutation = context
        try:
            yield context
        finally:
            context.clear()
            saved_state.mutation = None


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Saved tensors are kept on the CPU and moved back to their device for backward (everything
    is on the CPU here, so they are kept as they are)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(lambda t: (t.device, t.cpu()), lambda packed: packed[1].to(packed[0]))


class disable_saved_tensors_hooks:  # noqa: N801
    """Inside, setting saved-tensor hooks (or entering while some are set) raises `error_message`."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        from .forward_ad import transforms

        if transforms.saved_hooks:
            raise RuntimeError(self.error_message)
        _hooks_disabled.append(self.error_message)

    def __exit__(self, *exc: object) -> None:
        _hooks_disabled.pop()


class SavedTensor:
    """One value a node saved for backward, as `grad_fn._raw_saved_<name>` hands it out: its own pair
    of saved-tensor hooks can be set with `register_hooks`. Only nodes make them."""

    __slots__ = ("_node", "_slot", "_name")

    def __new__(cls, *args: object, **kwargs: object) -> SavedTensor:
        raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")

    @classmethod
    def _of(cls, node: Node, slot: object, name: str) -> SavedTensor:
        """The saved value `slot` of `node`, shown as `name` (the node interprets `slot`)."""
        saved = object.__new__(cls)
        saved._node, saved._slot, saved._name = node, slot, name
        return saved

    def register_hooks(self, *hooks: Any) -> None:
        """register_hooks(pack_hook, unpack_hook): pack the saved tensor now, unpack it when it is used."""
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            invoked = ", ".join(repr(a) for a in (self, *hooks))
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, "
                            f"arg1: collections.abc.Callable) -> None\n\nInvoked with: {invoked}")
        self._node._register_saved_hooks(self._slot, hooks)

    def __repr__(self) -> str:
        return f"<SavedTensor {self._name} of {self._node.name()}>"


SAVED_NONE_MESSAGE = "Calling register_hooks on a saved tensor with value None is forbidden"
SAVED_HOOKS_SET_MESSAGE = ("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
                           "pair of hooks is allowed at a time.")
SAVED_FREED_MESSAGE = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are "
    "freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
    "the graph a second time or if you need to access saved variables after calling backward."
)


class GradientEdge(NamedTuple):
    """Where the gradient of a tensor goes: a node and which of its outputs."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge of the graph that receives `tensor`'s gradient (its AccumulateGrad for a leaf).

    The edge can stand for the tensor in autograd.grad and backward, as an output or an input; as
    an output, its shape and dtype are needed (Note [edge metadata])."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    node, nr = edge_of(tensor)
    if type(node) is not AccumulateGrad and not node._out_meta:
        node.hooks().output_meta = (tensor._data.shape, tensor.dtype)
    return GradientEdge(node, nr)


# Note [edge metadata]
# torch keeps the shape and dtype of every node's outputs (`_input_metadata`) and reads them when a
# GradientEdge is an output of grad()/backward() (for the implicit gradient of a scalar and the shape
# checks). Here a leaf's accumulator has its variable and a multi-output node its `_out_meta`; a
# one-output op node keeps nothing (one write less per recorded op), so get_gradient_edge, which has
# the tensor, notes it on the node.

def edge_output_meta(node: Node, output_nr: int) -> tuple | None:
    """(shape, dtype) of the output `output_nr` of `node`, or None when the node keeps none."""
    if type(node) is AccumulateGrad:
        return node.variable._data.shape, node.variable.dtype
    if node._out_meta:
        return node._out_meta[output_nr]
    return node._hookset.output_meta if node._hookset is not None else None


class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: removing it removes the hook from every tensor."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *, mode: str = "all") -> RemovableHandle:
    """Run `fn` once per backward pass for a group of tensors.

    mode="all": after the gradients of all of them that this pass computes, with the list of their
    gradients (None for the ones the pass does not reach). mode="any": after the first one, with
    that gradient. Each backward pass (graph task) is counted on its own, so passes on several
    threads do not mix.
    """
    from .engine import current_graph_task_id, will_engine_execute_node

    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        fired: set[int] = set()

        def any_hook(grad: Tensor) -> None:
            task = current_graph_task_id()
            with lock:
                if task in fired:
                    return
                fired.add(task)
            fn(grad)

        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))

    nodes = [edge_of(t)[0] for t in tensors]  # held here, so a leaf keeps the same accumulator
    pending: dict[int, tuple[int, list]] = {}  # graph task -> (gradients still to come, gradients so far)

    def all_hook(index: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            task = current_graph_task_id()
            with lock:
                if task not in pending:
                    pending[task] = (sum(map(will_engine_execute_node, nodes)), [None] * len(nodes))
                left, grads = pending[task]
                grads[index] = grad
                pending[task] = (left - 1, grads)
                done = left == 1
                if done:
                    del pending[task]
            if done:
                fn(grads)

        return hook

    return _MultiHandle(tuple(t.register_hook(all_hook(i)) for i, t in enumerate(tensors)))


def move_retains_grad(tensor: Tensor, old_node: Node | None, old_nr: int) -> None:
    """After an in-place op gave `tensor` a new grad_fn, its retain_grad follows it to the new node,
    as torch's retains_grad hook does (the hooks registered with register_hook stay on the old one)."""
    hs = old_node._hookset if old_node is not None else None
    if hs is None or hs.retained.get(old_nr) is None or hs.retained[old_nr]() is not tensor:
        return
    del hs.retained[old_nr]
    tensor.grad_fn.hooks().retained[tensor._output_nr] = weakref.ref(tensor)


def increment_version(tensor: Tensor | Sequence[Tensor]) -> None:
    """Mark `tensor` (or each of several) as modified in place, so saved copies of it become stale; an
    inference tensor has no version to count, and torch lets it be."""
    for t in (tensor,) if isinstance(tensor, _tensor.Tensor) else tensor:
        if not t.is_inference():
            t._bump_version()
