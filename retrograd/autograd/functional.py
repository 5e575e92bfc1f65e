"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a function at a point.

Each takes a function of tensors and the point (a tensor or a tuple of tensors) and returns
tensors of the same nesting as torch does. They run the ordinary engine: `jvp` and `hvp` with the
double-backward trick (the gradient of a VJP with respect to its cotangent is a JVP), `jacobian`
one VJP per output element, or, with `vectorize=True`, all of them in one batched backward pass
(or one batched forward-mode pass with `strategy="forward-mode"`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _creation, _tensor, autograd  # partly loaded while autograd loads (read at call time)
from . import forward_ad, grad_mode

if TYPE_CHECKING:
    from .._tensor import Tensor


def _is_tensor(value: Any) -> bool:
    return isinstance(value, _tensor.Tensor)  # the module bound at import, the class read now (no import per call)


def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether value was a tuple, value as a tuple), with torch's error for non-tensors."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    tensor = _tensor.Tensor
    for i, v in enumerate(values):
        if not isinstance(v, tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"{where} has type {type(v)}.")
    return is_tuple, values


def _unpack(result: Any, is_tuple: bool | tuple[bool, bool]) -> Any:
    """Undo _as_tuple on a result (one flag), or on a nested (outer, inner) result (two flags)."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            result = tuple(r[0] for r in result)
        return result if outer else result[0]
    return result if is_tuple else result[0]


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the function to see: views that keep the graph to the caller's
    tensors (create_graph), else detached copies; new objects also tell apart the inputs given
    from the same tensors captured by the function."""
    if create_graph:
        return tuple(t.view_as(t) if t.requires_grad else t.detach().requires_grad_(need_graph) for t in tensors)
    return tuple(t.detach().requires_grad_() if need_graph else t.detach() for t in tensors)


def _last_pass_mode(create_graph: bool) -> Any:
    """torch's `set_grad_enabled(create_graph or is_grad_enabled())` around a last pass: only
    create_graph can change the mode, so otherwise the block is empty (no thread-local writes)."""
    return grad_mode.enable_grad() if create_graph else contextlib.nullcontext()


def _finish(tensors: tuple, create_graph: bool) -> tuple:
    """Results without history unless the caller asked for a graph."""
    if create_graph:
        return tensors
    return tuple(_finish(t, False) if isinstance(t, tuple) else t.detach() for t in tensors)


def _check_v(v: tuple, like: tuple, like_is_tuple: bool) -> None:
    if len(v) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.shape != b.shape:
            prefix = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.shape} but got {a.shape}.")


_NOT_DIFFERENTIABLE = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed in "
               "a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect to "
                "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
}


def _require_grad(tensors: tuple, kind: str, strict: bool) -> None:
    """strict mode: every tensor must exist and depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
           retain_graph: bool | None = None, is_grads_batched: bool = False) -> tuple:
    """autograd.grad that skips outputs without a graph (None where an input is unused)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    for o in outputs:  # the usual call: every output has a graph, and goes to grad as it is
        if o is None or not o.requires_grad:
            kept = [k for k, o in enumerate(outputs) if o is not None and o.requires_grad]
            if not kept:
                return (None,) * len(inputs)
            outputs, grad_outputs = [outputs[k] for k in kept], [grad_outputs[k] for k in kept]
            break
    return autograd.grad(outputs, inputs, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                         allow_unused=True, is_grads_batched=is_grads_batched)


_UNUSED = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _zeros_for_unused(grads: tuple, like: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """None gradients become zeros (strict mode refuses them, and graph-less ones with create_graph)."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(_UNUSED[stage].format(i=i))
            g = _creation.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _start(func: Callable, inputs: Any, v: Any, name: str, create_graph: bool, strict: bool,
           v_like: str) -> tuple:
    """The common opening: prepared inputs, v checked against the inputs or the outputs, outputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _prepare(v, create_graph, need_graph=False)
        if v_like == "inputs":
            _check_v(v, inputs, is_inputs_tuple)
    elif v_like == "inputs" and (len(inputs) != 1 or inputs[0].numel() != 1):
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", name)
    _require_grad(outputs, "outputs", strict)
    if v_like == "outputs":
        if v is not None:
            _check_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`.

    >>> vjp(lambda x: x ** 2, torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _start(func, inputs, v, "vjp", create_graph, strict,
                                                                       "outputs")
    with _last_pass_mode(create_graph):
        grads = _grads(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_unused(grads, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(result, create_graph), is_inputs_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick.

    >>> jvp(lambda x: x ** 2, torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _start(func, inputs, v, "jvp", create_graph, strict,
                                                                       "inputs")
        # the VJP is linear in its cotangent u, so d(VJP)/du applied to v is J v whatever u is
        u = tuple(_creation.zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grads(outputs, inputs, u, create_graph=True)
        _require_grad(grad_inputs, "grad_inputs", strict)
    with _last_pass_mode(create_graph):
        grads = _grads(grad_inputs, u, v, create_graph=create_graph)
        result = _zeros_for_unused(grads, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(result, create_graph), is_outputs_tuple))


def _construct_standard_basis_for(tensors: tuple, numels: tuple) -> tuple:
    """One block per tensor of an N x N identity (N = total numel), shaped (N, tensor.numel()), in the
    tensor's dtype (torch's name: its tests call it)."""
    total = sum(numels)
    basis, start = [], 0
    for t, n in zip(tensors, numels):
        block = _creation.zeros((total, n), dtype=t.dtype)
        if n:
            block[start:start + n] = _eye(n, t)
        basis.append(block)
        start += n
    return tuple(basis)


def _eye(n: int, like: Tensor) -> Tensor:
    return _creation.eye(n, dtype=like.dtype)


def _jacobian_forward(func: Callable, inputs: Any, strict: bool, vectorize: bool) -> Any:
    """The Jacobian by forward mode: vmap over one dual-level pass per basis tangent."""
    from .batched import vmap

    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    numels = tuple(x.numel() for x in inputs)
    seen: dict = {}

    def push(*tangents: Tensor) -> tuple:
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t.view_as(x)) for x, t in zip(inputs, tangents))
            seen["is_tuple"], outs = _as_tuple(func(*duals), "outputs", "jacobian")
            unpacked = [forward_ad.unpack_dual(o) for o in outs]
        seen["outputs"] = [p for p, _ in unpacked]
        return tuple(t if t is not None else p.new_zeros(p.shape) for p, t in unpacked)

    pushed = vmap(push)(*_construct_standard_basis_for(inputs, numels))
    jac = []  # lists, not tuples, as torch returns them here
    for column, out in zip(pushed, seen["outputs"]):
        pieces = column.split(numels, dim=0)
        jac.append([p.permute(*range(1, p.ndim), 0).reshape(tuple(out.shape) + tuple(x.shape))
                    for p, x in zip(pieces, inputs)])
    return _unpack(jac, (seen["is_tuple"], is_inputs_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """The Jacobian of func at inputs: for each output and input, a tensor of shape
    output.shape + input.shape (tuples unpacked as torch does).

    >>> jacobian(lambda x: x ** 2, torch.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                             'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-'
                                      'mode"` are not supported together (yet). Please either set `create_graph=False` '
                                      'or `strategy="reverse-mode"`.')
        return _jacobian_forward(func, inputs, strict, vectorize)
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _require_grad(outputs, "outputs", strict)
        if vectorize:
            jac = _jacobian_vectorized(outputs, inputs, create_graph, strict)
        else:
            jac = tuple(_jacobian_rows(i, out, inputs, create_graph, strict) for i, out in enumerate(outputs))
        return _unpack(_finish(jac, create_graph), (is_outputs_tuple, is_inputs_tuple))


def _jacobian_rows(i: int, out: Tensor, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One VJP per element of output i (torch's loop, used when vectorize=False), each with a one-hot
    cotangent: the same numbers as torch's backward from `out.reshape(-1)[j]` without recording a
    select node per row (a complex output takes torch's path, whose implicit gradient raises)."""
    from ..ops.shape import stack  # the op table loads after autograd
    rows: list[list] = [[] for _ in inputs]
    flat = out.reshape(-1) if out.is_complex() else None
    for j, index in enumerate(itertools.product(*map(range, out.shape))):
        if flat is not None:
            grads = _grads((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        else:
            one_hot = out.new_zeros(out.shape)
            one_hot._data[index] = 1  # a fresh tensor: no graph, no view, nothing else holds it
            grads = _grads((out,), inputs, (one_hot,), retain_graph=True, create_graph=create_graph)
        for k, (g, x) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. This "
                                       "is not allowed in strict mode.")
                g = _creation.zeros_like(x)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This is "
                                   "not allowed in strict mode when create_graph=True.")
            rows[k].append(g)
    return tuple((stack(r, 0) if r else x.new_zeros((0,) + tuple(x.shape))).view(tuple(out.shape) + tuple(x.shape))
                 for r, x in zip(rows, inputs))


def _jacobian_vectorized(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """Every VJP at once: one backward pass with the standard basis as a batch of cotangents."""
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                           "together. Please either set `strict=False` or `vectorize=False`.")
    numels = tuple(o.numel() for o in outputs)
    basis = _construct_standard_basis_for(outputs, numels)
    flat = tuple(o.reshape(-1) for o in outputs)
    grads = _grads(flat, inputs, basis, create_graph=create_graph, is_grads_batched=True)
    total = sum(numels)
    columns = [g if g is not None else x.new_zeros(x.shape).expand((total,) + tuple(x.shape))
               for g, x in zip(grads, inputs)]
    per_input = [[piece.view(tuple(o.shape) + tuple(x.shape)) for piece, o in zip(c.split(numels, dim=0), outputs)]
                 for c, x in zip(columns, inputs)]
    return tuple(zip(*per_input))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: the Jacobian of its gradient (tuples unpacked as torch does).

    >>> hessian(lambda x: (x ** 3).sum(), torch.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*x: Tensor) -> Tensor:
        out = func(*x)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _require_grad(outs, "outputs", strict)
        if is_tuple or not _is_tensor(out):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def gradient(*x: Tensor) -> Any:
        if outer_jacobian_strategy == "forward-mode":
            x = tuple(t.requires_grad_(True) for t in x)
        jac = jacobian(scalar, x, create_graph=True)
        _require_grad(jac if isinstance(jac, tuple) else (jac,), "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _unpack(result, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(outputs: tuple, is_tuple: bool, name: str) -> None:
    if is_tuple or not _is_tensor(outputs[0]):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for a scalar function: the gradient of (gradient . v).

    >>> vhp(lambda x: (x ** 3).sum(), torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _start(func, inputs, v, "vhp", create_graph, strict,
                                                                       "inputs")
        _scalar_output(outputs, is_outputs_tuple, "vhp")
        jac = _grads(outputs, inputs, create_graph=True)
        _require_grad(jac, "jacobian", strict)
    with _last_pass_mode(create_graph):
        grads = _grads(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_unused(grads, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(result, create_graph), is_inputs_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H v) for a scalar function, by the double-backward trick.

    >>> hvp(lambda x: (x ** 3).sum(), torch.tensor([1.0, 2.0]), torch.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _start(func, inputs, v, "hvp", create_graph, strict,
                                                                       "inputs")
        _scalar_output(outputs, is_outputs_tuple, "hvp")
        jac = _grads(outputs, inputs, create_graph=True)
        _require_grad(jac, "jacobian", strict)
        u = tuple(_creation.zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _grads(jac, inputs, u, create_graph=True)
        _require_grad(jac, "hessian", strict)
    with _last_pass_mode(create_graph):
        grads = _grads(double_back, u, v, create_graph=create_graph)
        result = _zeros_for_unused(grads, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(result, create_graph), is_inputs_tuple))


__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
