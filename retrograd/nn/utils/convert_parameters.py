"""parameters_to_vector / vector_to_parameters: all parameters as one flat vector and back."""

from __future__ import annotations

from collections.abc import Iterable

from ..._tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated (differentiable, like torch.cat)."""
    from ... import cat

    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Replace each parameter's data by the matching slice of `vec`."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].reshape(param.shape).data
        pointer += n
