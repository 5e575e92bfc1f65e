"""torch.autograd: backward(), grad(), custom Functions and grad modes."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import _creation, _tensor  # partly loaded while this package loads; read at call time
from .engine import _root_edge, is_multithreading_enabled, run_backward, set_multithreading_enabled
from .engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401 - torch's private name, used by checkpoint
from .grad_mode import (
    _force_original_view_tracking,  # noqa: F401 - torch's private name
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_view_replay_enabled,
    no_grad,
    set_grad_enabled,
)
from .graph import GradientEdge, edge_output_meta


def _tensors(value: Any) -> tuple:
    """A tensor, a GradientEdge or a sequence of them (or None) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, (_tensor.Tensor, GradientEdge)):
        return (value,)
    return tuple(value)


def _make_grads(outputs: Sequence, grads: Sequence, is_grads_batched: bool = False) -> list:
    """torch's _make_grads: implicit ones for scalar outputs, shape and dtype checks for given
    gradients. An output may be a GradientEdge, described by its node (Note [edge metadata])."""
    Tensor = _tensor.Tensor  # noqa: N806 - the class, bound once per call
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None and type(o) is Tensor and o._requires_grad:  # the usual loss: a 0-d float array's 1 directly
            data = o._data
            if type(data) is np.ndarray and not data.shape and data.dtype.kind == "f":
                out.append(_tensor._wrap(np.array(1, data.dtype)))
                continue
        if isinstance(o, GradientEdge):
            meta = edge_output_meta(o.node, o.output_nr)
            if meta is None:  # a hand-made edge of a one-output op node: a given gradient is taken as it is
                if g is None:
                    raise RuntimeError(f"grad can be implicitly created only for outputs of known shape: output[{i}] "
                                       f"is a GradientEdge of {o.node.name()} made by hand; take it with "
                                       "torch.autograd.graph.get_gradient_edge(tensor) or pass its gradient")
                out.append(g)
                continue
            shape, dtype = meta
            requires_grad = True
        else:
            shape, dtype, requires_grad = o._data.shape, None, o._requires_grad  # its dtype: read below where needed
        if g is None:
            if not requires_grad:
                out.append(None)
                continue
            if math.prod(shape) != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            dtype = dtype or o.dtype
            if not dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {dtype}")
            out.append(_creation.ones(shape, dtype=dtype, device=getattr(o, "device", None)))  # an edge: the CPU
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        grad_shape = g._data.shape[1:] if is_grads_batched else g._data.shape
        if grad_shape != shape:
            if isinstance(o, GradientEdge) and is_grads_batched:
                raise RuntimeError("Batched grads are not supported with GradientEdge")
            size = _tensor.Size
            shown = g._data.shape[2:] if is_grads_batched else grad_shape  # torch shows grad_output[i][0]'s [1:]
            mismatch = f"grad_output[{i}] has a shape of {size(shown)} and output[{i}] has a shape of {size(shape)}."
            if is_grads_batched:
                raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                                   "as the batch dimension. The sizes of the remaining dimensions are expected to "
                                   f"match the shape of corresponding output, but a mismatch was detected: {mismatch} "
                                   "If you only want some tensors in `grad_output` to be considered batched, consider "
                                   "using vmap.")
            raise RuntimeError(f"Mismatch in shape: {mismatch}")
        if dtype is not None or g._data.dtype != o._data.dtype:  # a tensor's gradient of its array dtype: as it is
            dtype = dtype or o.dtype
            if dtype.is_complex != (g.dtype.is_complex):
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                                   f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                                   f"output[{i}] has a dtype of {dtype}.")
            if g.dtype is not dtype:  # torch's engine casts a given gradient to its output's dtype
                g = g.to(dtype)
        out.append(g)
    return out


# Note [create_graph cycles]
# A graph keeps no reference from a node to the tensors it produced (an output saved for backward
# is kept as a SavedOutput: its data and version, not the tensor), and a leaf reaches its
# AccumulateGrad only through a weak reference. So every graph, including those that
# create_graph=True builds for higher derivatives, is freed by reference counting alone, as soon
# as the caller drops its tensors. The one cycle is torch's too: backward(create_graph=True)
# stores in leaf.grad a gradient whose graph leads back to the leaf (leaf -> .grad -> grad_fn ->
# ... -> AccumulateGrad -> leaf). As torch does, backward warns, and resetting .grad to None
# breaks the cycle; autograd.grad(create_graph=True) returns the gradient instead and makes none.

CREATE_GRAPH_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak."
)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
             grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulate the gradients of `tensors` (weighted by grad_tensors) into the leaves' `.grad`.

    `tensors` and `inputs` may be GradientEdges (torch.autograd.graph.get_gradient_edge); a dict of
    inputs stands for its values."""
    outputs = _tensors(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = list(_tensors(grad_tensors)) if grad_tensors is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} tensors and {len(outputs)} gradients")
    input_list = _inputs(inputs, "backward") if inputs is not None else None
    grads = _make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        from .._warn import warn_once

        warn_once(CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=3)  # Note [create_graph cycles]
    run_backward(outputs, grads, retain_graph, create_graph, inputs=input_list, capture=False)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple | dict:
    """The gradients of `outputs` with respect to `inputs`, returned (no `.grad` is touched).

    `outputs` and `inputs` may be GradientEdges; for a dict of inputs the result is a dict with the
    same keys."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _tensors(outputs)
    ins = _inputs(inputs, "grad")
    gos = list(_tensors(grad_outputs)) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gos)} and {len(outs)}")
    gos = _make_grads(outs, gos, is_grads_batched)
    if any(not isinstance(t, GradientEdge) and not t._requires_grad for t in ins):
        for i, out in enumerate(outs):  # torch's engine checks the outputs first
            _root_edge(i, out)
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        from .batched import batched_grad

        result = batched_grad(outs, ins, gos, retain_graph, create_graph)
    else:
        result = run_backward(outs, gos, retain_graph, create_graph, inputs=ins, capture=True)
    if not allow_unused:
        for i, g in enumerate(result):
            if g is None:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
    if materialize_grads:
        if any(g is None and isinstance(t, GradientEdge) for t, g in zip(ins, result)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        result = [_creation.zeros_like(t, requires_grad=create_graph) if g is None else g for t, g in zip(ins, result)]
    if not create_graph:
        result = [g if g is None or g.grad_fn is None else g.detach() for g in result]
    if type(inputs) is dict:
        return dict(zip(inputs, result))
    return tuple(result)


def _inputs(inputs: Any, caller: str) -> tuple:
    """The `inputs` of grad() or backward() as a tuple: a tensor, a GradientEdge, a sequence of
    them, or a dict of tensors (its values)."""
    if isinstance(inputs, _tensor.Tensor):  # the usual call, without the Mapping test (an ABC's is slow)
        return (inputs,)
    if type(inputs) is dict:
        inputs = tuple(inputs.values())
    elif type(inputs) is not tuple and isinstance(inputs, Mapping):  # a tuple (functional's call) needs no ABC test
        raise TypeError(f"`inputs` argument to `{caller}()` must be a dict, not {type(inputs).__name__}. Other "
                        "Mapping types are not supported.")
    found = _tensors(inputs)
    if not found:
        raise RuntimeError(f"`inputs` argument to `{caller}()` cannot be empty.")
    return found


from . import forward_ad, functional, graph  # noqa: E402
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402
from .function import Function, FunctionCtx, once_differentiable  # noqa: E402
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402
from .graph import SavedTensor  # noqa: E402
from .trace import trace  # noqa: E402
from .variable import Variable  # noqa: E402

torch = sys.modules["retrograd"]  # torch.autograd.torch is torch (its module imports torch), used by old code

__all__ = [
    "Function",
    "FunctionCtx",
    "Variable",
    "GradcheckError",
    "SavedTensor",
    "backward",
    "gradcheck",
    "gradgradcheck",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "graph",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_multithreading_enabled",
    "is_view_replay_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
    "trace",
]


def _profiler_enabled() -> bool:
    """Whether a profiler is recording."""
    return forward_ad.transforms.profiler is not None


def __getattr__(name: str) -> Any:
    """torch.autograd.profiler without an import of its own, loaded on first use (the package's Note [lazy
    submodules])."""
    if name in ("profiler", "profiler_util", "kineto_available"):
        import importlib

        module = importlib.import_module(f"{__name__}.{'profiler' if name == 'kineto_available' else name}")
        return getattr(module, name) if name == "kineto_available" else module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
