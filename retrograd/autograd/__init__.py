"""torch.autograd: backward(), grad(), custom Functions and grad modes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _creation, _tensor  # partly loaded while this package loads; read at call time
from .engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401 - torch's private name, used by checkpoint
from .engine import run_backward
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)


def _tensors(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, _tensor.Tensor):
        return (value,)
    return tuple(value)


def _make_grads(outputs: Sequence, grads: Sequence, is_grads_batched: bool = False) -> list:
    """torch's _make_grads: implicit ones for scalar outputs, shape checks for given gradients."""
    Tensor = _tensor.Tensor  # noqa: N806 - the class, bound once per call
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o._requires_grad and o._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if o._data.dtype.kind not in "fc":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {o.dtype}")
            if not o._requires_grad:
                out.append(None)
            elif type(o) is Tensor and not o._data.ndim:  # a plain 0-d loss: its 1 directly
                out.append(_tensor._wrap(o._data.dtype.type(1)))
            else:
                out.append(_creation.ones_like(o))
            continue
        if not isinstance(g, Tensor):
            g = _creation.tensor(g, dtype=o.dtype)
        shape = g._data.shape[1:] if is_grads_batched else g._data.shape
        if shape != o._data.shape:
            size = _tensor.Size
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {size(g._data.shape)} and "
                               f"output[{i}] has a shape of {size(o._data.shape)}.")
        if (o._data.dtype.kind == "c") != (g._data.dtype.kind == "c"):
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] "
                               f"has a dtype of {o.dtype}.")
        if g._data.dtype != o._data.dtype:  # torch's engine casts a given gradient to its output's dtype
            g = g.to(o.dtype)
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
    """Accumulate the gradients of `tensors` (weighted by grad_tensors) into the leaves' `.grad`."""
    outputs = _tensors(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = list(_tensors(grad_tensors)) if grad_tensors is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} tensors and {len(outputs)} gradients")
    input_list = _tensors(inputs) if inputs is not None else None
    if input_list is not None and len(input_list) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    grads = _make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        from .._warn import warn_once

        warn_once(CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=3)  # Note [create_graph cycles]
    run_backward(outputs, grads, retain_graph, create_graph, inputs=input_list, capture=False)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, returned (no `.grad` is touched)."""
    outs = _tensors(outputs)
    ins = _tensors(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    for t in ins:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    gos = list(_tensors(grad_outputs)) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gos)} and {len(outs)}")
    gos = _make_grads(outs, gos, is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        from .batched import batched_grad

        result = batched_grad(outs, ins, gos, retain_graph, create_graph)
    else:
        result = run_backward(outs, gos, retain_graph, create_graph, inputs=ins, capture=True)
    for i, g in enumerate(result):
        if g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
    if materialize_grads:
        result = [_creation.zeros_like(t) if g is None else g for t, g in zip(ins, result)]
    if not create_graph:
        result = [g if g is None or g.grad_fn is None else g.detach() for g in result]
    return tuple(result)


from . import forward_ad, functional, graph  # noqa: E402
from .anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402
from .function import Function, FunctionCtx, once_differentiable  # noqa: E402
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402
from .graph import SavedTensor  # noqa: E402
from .trace import trace  # noqa: E402

__all__ = [
    "Function",
    "FunctionCtx",
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
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
    "trace",
]
