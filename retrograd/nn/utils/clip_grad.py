"""Gradient clipping: rescale gradients to a maximum total norm, or clamp them elementwise."""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterable

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _vector_norm(t: Tensor, norm_type: float) -> Tensor:
    if norm_type == float("inf"):
        return t.abs().max()
    if norm_type == float("-inf"):
        return t.abs().min()
    return t.norm(norm_type)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The norm of the norms of `tensors` (as if they were concatenated into one vector)."""
    from ... import stack, tensor

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        total = _vector_norm(stack([_vector_norm(t.detach(), norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite and (total.isnan() | total.isinf()).item():
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients in place so that their total norm is at most max_norm; returns the norm before.

    >>> total = clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        from_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # read twice below
        if from_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients in place by max_norm / (total_norm + 1e-6), capped at 1: clip_grad_norm_'s second half,
    for a total norm computed elsewhere (get_total_norm over several groups, say)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """clip_grad_norm_ under its old name, deprecated as in torch."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place. With no gradient at all (before the
    first backward) it raises torch's RuntimeError: torch groups the gradients by device and dtype first, and its
    C++ grouping refuses an empty list, whether or not foreach is asked for."""
    clip_value = float(clip_value)
    grads = _grads(parameters)
    if not grads:
        raise RuntimeError("Expected !nested_tensorlist[0].empty() to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    with no_grad():
        for g in grads:
            g.clamp_(min=-clip_value, max=clip_value)
