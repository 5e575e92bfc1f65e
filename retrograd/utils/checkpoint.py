"""torch.utils.checkpoint: trade compute for memory by recomputing a segment's forward in backward.

`checkpoint(fn, *args, use_reentrant=False)` runs fn keeping none of the tensors its ops save for
backward: a saved_tensors_hooks pair stores a ticket in their place, and the first ticket unpacked
in backward reruns fn (with the RNG state of the first run) to produce every saved tensor again,
in the same order. `use_reentrant=True` is torch's older variant: fn runs without a graph inside a
custom Function whose backward reruns it with a graph and backpropagates through that.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from .. import _creation
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks


def _rng_state() -> dict:
    return _creation.default_generator.get_state()


def _set_rng_state(state: dict) -> None:
    _creation.default_generator.set_state(state)


class _Recomputed(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside the recomputation once every saved tensor is back, to stop it early."""


class _Recomputation:
    """One checkpointed call: tickets handed out in forward, tensors recomputed on first need."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng_state: dict | None, check: bool,
                 recompute_context: Any) -> None:
        self.fn, self.args, self.kwargs, self.rng_state, self.check = fn, args, kwargs, rng_state, check
        self.recompute_context = recompute_context
        self.metadata: list[tuple] = []   # (shape, dtype) of each tensor saved in the first run
        self.recomputed: list | None = None

    def pack(self, tensor: Tensor) -> int:
        self.metadata.append((tuple(tensor.shape), tensor.dtype))
        return len(self.metadata) - 1

    def unpack(self, ticket: int) -> Tensor:
        if self.recomputed is None:
            self._recompute()
        return self.recomputed[ticket]

    def _recompute(self) -> None:
        """Rerun fn until it has saved as many tensors as the first run did (then stop, as torch)."""
        saved: list = []

        def keep(tensor: Tensor) -> Tensor:
            saved.append(tensor)
            if len(saved) == len(self.metadata):
                raise _Recomputed
            return tensor

        state = _rng_state() if self.rng_state is not None else None
        if self.rng_state is not None:
            _set_rng_state(self.rng_state)
        try:
            with grad_mode.enable_grad(), self.recompute_context, saved_tensors_hooks(keep, lambda t: t):
                self.fn(*self.args, **self.kwargs)
        except _Recomputed:
            pass
        finally:
            if state is not None:
                _set_rng_state(state)
        if self.check:
            self._check(saved)
        self.recomputed = saved

    def _check(self, saved: list) -> None:
        """torch's default determinism check: the recomputation saves at least as many tensors
        (torch stops it once it has them all), with the same metadata."""
        tip = ("\n\nTip: To see a more detailed error message, either pass `debug=True` to "
               "`torch.utils.checkpoint.checkpoint(...)`.")
        if len(saved) < len(self.metadata):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the original "
                                  f"forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.metadata)}\nNumber of tensors saved during recomputation: {len(saved)}."
                                  + tip)
        different = [i for i, (t, meta) in enumerate(zip(saved, self.metadata)) if (tuple(t.shape), t.dtype) != meta]
        if different:
            lines = "".join(f"tensor at position {i}:\nsaved metadata: {_metadata(*self.metadata[i])}\nrecomputed "
                            f"metadata: {_metadata(tuple(saved[i].shape), saved[i].dtype)}\n" for i in different)
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                                  f"metadata than during the forward pass.\n{lines}." + tip)


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce what the first run saved."""


def _metadata(shape: tuple, dtype: object) -> str:
    return f"{{'shape': torch.Size({list(shape)}), 'dtype': {dtype}, 'device': device(type='cpu')}}"


class CheckpointFunction(Function):
    """The reentrant variant: forward without a graph, backward by recomputing with one."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.rng_state = _rng_state() if preserve_rng_state else None
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = list(args)
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_positions])
        return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        from ..autograd import backward

        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_positions, ctx.saved_tensors):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        state = _rng_state() if ctx.rng_state is not None else None
        if ctx.rng_state is not None:
            _set_rng_state(ctx.rng_state)
        try:
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            if state is not None:
                _set_rng_state(state)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None, context_fn: Callable | None = None,
               determinism_check: str = "default", debug: bool = False, preserve_rng_state: bool = True,
               **kwargs: Any) -> Any:
    """Run `function(*args, **kwargs)` without keeping what its ops save for backward; backward
    recomputes it. Memory for the segment's activations is traded for one more forward.
    `context_fn` returns two context managers, entered around the first run and the recomputation.

    >>> y = checkpoint(block, x, use_reentrant=False)   # block's intermediates are not kept
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not None or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    forward_context, recompute_context = context_fn() if context_fn is not None else (nullcontext(), nullcontext())
    frame = _Recomputation(function, args, kwargs, _rng_state() if preserve_rng_state else None,
                           determinism_check == "default", recompute_context)
    with forward_context, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Tensor:
    """Run a sequence of functions (or a Sequential) in `segments` chunks, checkpointing all but
    the last chunk.

    >>> out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)

    def run(start: int, end: int) -> Callable:
        def forward(x: Tensor) -> Tensor:
            for fn in functions[start:end + 1]:
                x = fn(x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)


__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]
