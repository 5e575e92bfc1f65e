"""torch.utils.checkpoint: trade compute for memory by recomputing a segment's forward in backward.

`checkpoint(fn, *args, use_reentrant=False)` runs fn keeping none of the tensors its ops save for
backward: a saved_tensors_hooks pair stores an empty holder in their place, and the first holder
unpacked in a backward pass reruns fn (with the RNG state of the first run) to fill the holders
again, in the order they were saved (Note [nested checkpoints]). `use_reentrant=True` is torch's
older variant: fn runs without a graph inside a custom Function whose backward reruns it with a
graph and backpropagates through that.
"""

from __future__ import annotations

import contextlib
import traceback
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from .. import _creation
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.engine import current_graph_task_id, is_checkpoint_valid
from ..autograd.forward_ad import transforms
from ..autograd.function import Function
from ..autograd.graph import anomaly_trace, saved_tensors_hooks
from ..ops.registry import _PackedSaved, modified_message

# Note [nested checkpoints]
# torch's rules for non-reentrant checkpoints, which may nest and may run backward inside fn:
# 1. A saved tensor belongs to the innermost checkpoint running when it was saved.
# 2. A checkpoint's own tensor inputs are saved like any saved tensor, so inside another
#    checkpoint they belong to it: getting them back recomputes the outer checkpoint first.
# 3. A recomputation starts as if no checkpoint were running (its hooks go on top of the stack);
#    checkpoints it meets work as usual, each with a frame of its own.
# 4. Recomputed tensors belong to one backward pass (graph task): each is dropped as soon as it
#    is unpacked, even under retain_graph, and unpacking it again in that pass is an error;
#    another pass recomputes again.
# 5. Early stop: a recomputation stops once it has produced as many tensors as the first run
#    saved (set_checkpoint_early_stop(False) lets fn run to its end).
# 6. fn may run backward itself (autograd.grad inside the checkpoint): that pass recomputes the
#    part of fn run so far; holders it freed are skipped by later recomputations.

_early_stop_override: bool | None = None  # set by set_checkpoint_early_stop
_debug_override: bool | None = None       # set by set_checkpoint_debug_enabled

# torch's tip under a failed determinism check, less its advice for torch.compile (retrograd has none)
_TIP = ("\nTip: To see a more detailed error message, either pass `debug=True` to\n"
        "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
        "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
        "enable checkpoint\u2011debug mode globally.")


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Whether the checkpoints run inside stop their recomputation as soon as it has every tensor
    they need (the default); it is read when a checkpoint runs forward, not in backward."""
    global _early_stop_override
    previous, _early_stop_override = _early_stop_override, enable
    try:
        yield
    finally:
        _early_stop_override = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Inside, checkpoints run as with `debug=enabled` whatever they are passed (None: as passed)."""
    global _debug_override
    previous, _debug_override = _debug_override, enabled
    try:
        yield
    finally:
        _debug_override = previous


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce what the first run saved."""


class _StopRecomputation(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside a recomputation once every saved tensor is back (early stop)."""


@contextlib.contextmanager
def _rng_state(state: dict | None) -> Iterator[None]:
    """Run with the default generator in `state` (None: as it is), restoring it afterwards."""
    if state is None:
        yield
        return
    current = _creation.default_generator.get_state()
    _creation.default_generator.set_state(state)
    try:
        yield
    finally:
        _creation.default_generator.set_state(current)


@contextlib.contextmanager
def _autocast_as(state: dict | None) -> Iterator[None]:
    """Run with CPU autocast as it was around the first run (torch's checkpoint reenters it to recompute)."""
    outer = transforms.autocast
    transforms.autocast = state
    transforms.update()
    try:
        yield
    finally:
        transforms.autocast = outer
        transforms.update()


def _default_metadata(tensor: Tensor) -> dict:
    return {"shape": tensor.shape, "dtype": tensor.dtype, "device": tensor.device}


_METADATA = {"default": _default_metadata, "none": lambda tensor: None}


class _SavedInput:
    """A checkpoint's tensor input, saved as ops save theirs: through the saved_tensors_hooks in
    effect, if any (Note [nested checkpoints], rule 2), and checked for in-place changes."""

    def __init__(self, tensor: Tensor) -> None:
        hooks = transforms.saved_hooks
        self.tensor = _PackedSaved(tensor, hooks[-1], None) if hooks else tensor
        self.version = tensor._version_value()

    def unpack(self) -> Tensor:
        if type(self.tensor) is _PackedSaved:
            return self.tensor.unpack(None)
        if self.tensor._version_value() != self.version:
            raise RuntimeError(modified_message(self.tensor, self.version, None))
        return self.tensor


class _Holder:
    """Stands in for one tensor the first run saved: its recomputed value in each backward pass
    (by graph task id), None once unpacked there."""

    __slots__ = ("values", "__weakref__")

    def __init__(self) -> None:
        self.values: dict = {}


class _Frame:
    """One non-reentrant checkpointed call: what it needs to rerun fn, and a weak reference to a
    holder per saved tensor (a holder dies with the node that saved it)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng_state: dict | None, early_stop: bool,
                 metadata: Callable, recompute_context: Any, debug: bool) -> None:
        self.fn, self.kwargs, self.rng_state, self.early_stop = fn, kwargs, rng_state, early_stop
        self.autocast = transforms.autocast  # made during the first run: its autocast, for the recomputation
        self.inputs = [_SavedInput(a) if isinstance(a, Tensor) else a for a in args]
        self.metadata_of, self.recompute_context = metadata, recompute_context
        self.holders: list[weakref.ref] = []
        self.metadata: list = []                     # metadata_of each tensor the first run saved
        self.saved_count: dict = defaultdict(int)    # per backward pass, tensors its recomputation saved
        self.recomputed: set = set()                 # backward passes that recomputed
        self.forward_completed = False
        self.ignore_count_mismatch = False
        # debug: the metadata of each tensor saved, and where, in the first run and the latest recomputation
        self.log: tuple[list, list] | None = ([], []) if debug else None

    def pack(self, tensor: Tensor) -> _Holder:
        holder = _Holder()
        self.holders.append(weakref.ref(holder))
        self.metadata.append(self.metadata_of(tensor))
        if self.log is not None:
            self.log[0].append((_default_metadata(tensor), anomaly_trace()))
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        task = current_graph_task_id()
        if task == -1:  # outside backward: a key of its own, so every such unpack recomputes
            task = object()
        try:
            if task not in self.recomputed:
                self._recompute(task)
            value = holder.values.get(task)
            if value is None:
                raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                                      "already unpacked once. If you are calling ctx.saved_tensors in backward, make "
                                      "sure to do so only once. Otherwise please open an issue with details on your "
                                      "use case.")
        except CheckpointError as error:
            if self.log is None:
                raise
            raise CheckpointError(self._debug_report()) from error
        holder.values[task] = None
        return value

    def _recompute(self, task: object) -> None:
        args = [a.unpack() if isinstance(a, _SavedInput) else a for a in self.inputs]
        if self.log is not None:
            self.log[1].clear()
        hooks = saved_tensors_hooks(lambda tensor: self._pack_recomputed(task, tensor), lambda tensor: tensor)
        try:
            with hooks, grad_mode.enable_grad(), _rng_state(self.rng_state), _autocast_as(self.autocast), \
                    self.recompute_context:
                self.fn(*args, **self.kwargs)
        except _StopRecomputation:
            pass
        self.recomputed.add(task)
        self._check(task)

    def _pack_recomputed(self, task: object, tensor: Tensor) -> Tensor:
        """Put a tensor the recomputation saved in the holder of its twin from the first run; it is
        also saved, detached, for the recomputation's own graph (rule 6)."""
        tensor = tensor.detach() if tensor.requires_grad else tensor
        index = self.saved_count[task]
        self.saved_count[task] += 1
        if self.log is not None:
            self.log[1].append((_default_metadata(tensor), anomaly_trace()))
        if index >= len(self.holders):
            if not self.forward_completed:  # a backward inside fn, without early stop: fn saves more later
                self.ignore_count_mismatch = True
                return tensor
            raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation than "
                                  "during the original forward pass.\n" + _TIP)
        holder = self.holders[index]()
        if holder is not None:  # None: its node is gone (a backward inside fn already used it)
            holder.values[task] = tensor
        if self.early_stop and self.saved_count[task] == len(self.holders):
            raise _StopRecomputation
        return tensor

    def _check(self, task: object) -> None:
        """The determinism check: as many tensors saved as in the first run, with the same metadata."""
        if self.ignore_count_mismatch:
            return
        if self.saved_count[task] != len(self.holders):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                                  "original forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.holders)}\nNumber of tensors saved during recomputation: "
                                  f"{self.saved_count[task]}.\n" + _TIP)
        different = ""
        for index, (ref, metadata) in enumerate(zip(self.holders, self.metadata)):
            holder = ref()
            if holder is not None and metadata != (recomputed := self.metadata_of(holder.values[task])):
                different += f"tensor at position {index}:\nsaved metadata: {metadata}\nrecomputed metadata: " \
                             f"{recomputed}\n"
        if different:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                  f"different metadata than during the forward pass.\n{different}.\n" + _TIP)

    def _debug_report(self) -> str:
        """What debug=True adds to a checkpoint error: where each tensor was saved, in both runs."""
        def listing(log: list) -> str:
            return "".join(f"tensor {i}: {metadata}, saved at\n{''.join(traceback.format_list(record.frames))}\n"
                           for i, (metadata, record) in enumerate(log))

        return (" An error happened while unpacking tensors; listing the tensors saved in the original forward "
                "and in the latest recomputation\nbecause you passed `debug=True` to "
                "`torch.utils.checkpoint.checkpoint()`.\n\n1. Tensors saved during the original forward\n\n"
                f"{listing(self.log[0])}\n2. Tensors saved during the recomputation\n\n{listing(self.log[1])}\n"
                " ERROR: Detected non-determinism while running activation checkpointing\n\n You are seeing this "
                "error because you passed `debug=True` to checkpoint and\n tensors to be saved during the original "
                "forward and differ between those saved\n during recomputation. This can happen if different "
                "operators were ran in the\n original forward and in the recomputation.\n")


class CheckpointFunction(Function):
    """The reentrant variant: forward without a graph, backward by recomputing with one."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
        ctx.run_function = run_function
        ctx.rng_state = _creation.default_generator.get_state() if preserve_rng_state else None
        ctx.autocast = transforms.autocast
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_positions])
        return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        from ..autograd import backward

        if not is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_positions, ctx.saved_tensors):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        with _rng_state(ctx.rng_state), _autocast_as(ctx.autocast), grad_mode.enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


def noop_context_fn() -> tuple:
    """checkpoint's default context_fn: nothing around either run."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run `function(*args, **kwargs)` without keeping what its ops save for backward; backward
    recomputes it. Memory for the segment's activations is traded for one more forward.
    `context_fn` returns two context managers, entered around the first run and the recomputation;
    `determinism_check="none"` compares only how many tensors the two runs saved, not their shapes;
    `early_stop=False` lets the recomputation run to the end; `debug=True` makes a failed check say
    where each run saved its tensors. Only `preserve_rng_state` applies to `use_reentrant=True`.

    >>> y = checkpoint(block, x, use_reentrant=False)   # block's intermediates are not kept
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)

    debug = debug if _debug_override is None else _debug_override
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _METADATA:
        raise ValueError(f"determinism_check should be one of {list(_METADATA)}, but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    rng_state = _creation.default_generator.get_state() if preserve_rng_state else None
    if not grad_mode.is_grad_enabled():  # nothing will be saved
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, rng_state,
                   early_stop if _early_stop_override is None else _early_stop_override,
                   _METADATA[determinism_check], recompute_context, debug)
    finished = False
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        output = function(*args, **kwargs)
        finished = True
    if not finished:
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn suppressed an "
                           "exception raised during the checkpointed forward. This is not supported because "
                           "checkpoint cannot return a value for a failed forward.")
    frame.forward_completed = True
    return output


def checkpoint_sequential(functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Tensor:
    """Run a sequence of functions (or a Sequential) in `segments` chunks, checkpointing all but
    the last chunk.

    >>> out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    """
    from ..nn import Sequential

    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start: int, end: int) -> Callable:
        def forward(x: Tensor) -> Tensor:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)


__all__ = ["CheckpointError", "CheckpointFunction", "checkpoint", "checkpoint_sequential", "noop_context_fn",
           "set_checkpoint_debug_enabled", "set_checkpoint_early_stop"]
