"""torch.masked: reductions and normalisations that leave out the elements where `mask` is False.

Masked-out elements are replaced by the operation's identity (0 for sum, 1 for prod, -inf for amax and
logsumexp, ...) through `where`, and the ordinary op runs on the result, as torch's strided implementation does
(torch/masked/_ops.py); so values, gradients (zero at masked-out elements) and grad_fn names are torch's. Where a
whole reduction is masked out, the result is the identity (or what torch computes: 0/0 = nan for mean and var).
Only strided tensors and boolean-like masks exist here: torch's sparse layouts and MaskedTensor do not.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

from .. import _creation
from .. import _dtype as D
from .. import ops as _ops
from .._tensor import Tensor

DimOrDims = int | Sequence[int] | None

_SMALL_INTEGERS = (D.uint8, D.bool_, D.int8, D.int16, D.int32)


def _reduction_identity(op_name: str, input: Tensor, *args: Any) -> Tensor | None:
    """The value that leaves the reduction unchanged, as a 0-d tensor of input's dtype (None for mean, var, std)."""
    dtype = input.dtype
    if op_name in ("sum", "cumsum"):
        return _creation.tensor(0, dtype=dtype)
    if op_name in ("prod", "cumprod"):
        return _creation.tensor(1, dtype=dtype)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if dtype.is_floating_point or dtype.is_complex:
            return _creation.tensor(-math.inf, dtype=dtype)
        return _creation.tensor(_integer_bound(op_name, dtype, min), dtype=dtype)
    if op_name in ("amin", "argmin"):
        if dtype.is_floating_point:
            return _creation.tensor(math.inf, dtype=dtype)
        return _creation.tensor(_integer_bound(op_name, dtype, max), dtype=dtype)
    if op_name == "norm":
        ord = args[0] if args else 2
        return _creation.tensor(math.inf if ord == -math.inf else 0, dtype=dtype)
    if op_name == "median":
        return _creation.tensor(math.nan, dtype=dtype if dtype.is_floating_point else D.float32)
    if op_name in ("mean", "var", "std"):
        return None
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _integer_bound(op_name: str, dtype: D.dtype, which: Any) -> int:
    import numpy as np

    if dtype is D.bool_:
        raise NotImplementedError(f"identity of {op_name} on {dtype} input")
    info = np.iinfo(dtype.np)
    return int(info.min if which is min else info.max)


def _canonical_dim(dim: DimOrDims, ndim: int) -> tuple[int, ...]:
    """dim as a sorted tuple of non-negative dims (None or () meaning all), with torch's errors."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = builtins.max(ndim, 1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input: Tensor, mask: Tensor | None) -> Tensor:
    """The mask broadcast to input's shape, as bool."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                             "input)")
        mask = _ops.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=D.bool_)


def _combine_input_and_mask(op_name: str, input: Tensor, mask: Tensor | None, *args: Any) -> Tensor:
    """input with its masked-out elements replaced by op's identity."""
    if mask is None:
        return input
    return _ops.where(_input_mask(input, mask), input, _reduction_identity(op_name, input, *args))


def _sum_dtype(input: Tensor, dtype: D.dtype | None) -> D.dtype:
    if dtype is not None:
        return dtype
    return D.int64 if input.dtype in _SMALL_INTEGERS else input.dtype


def sum(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
        mask: Tensor | None = None) -> Tensor:
    """The sum of the elements where mask is True (0 where none is)."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    return _ops.sum(_combine_input_and_mask("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The product of the elements where mask is True (1 where none is), one dim at a time as torch."""
    dtype = _sum_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input: Tensor, dim: int, *, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """Running sums along dim, masked-out elements counting as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ops.cumsum(_combine_input_and_mask("sum", input, mask), d, dtype=dtype).to(dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """Running products along dim, masked-out elements counting as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _ops.cumprod(_combine_input_and_mask("prod", input, mask), d, dtype=dtype).to(dtype=dtype)


def _extremum(name: str, input: Tensor, dim: DimOrDims, keepdim: bool | None, dtype: D.dtype | None,
              mask: Tensor | None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask(name, input, mask)
    return getattr(_ops, name)(masked, _canonical_dim(dim, masked.ndim), bool(keepdim)).to(dtype=dtype)


def amax(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The largest element where mask is True (-inf where none is)."""
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The smallest element where mask is True (inf where none is)."""
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the largest element where mask is True, in input's dtype unless dtype is given (torch's)."""
    dtype = input.dtype if dtype is None else dtype
    return _ops.argmax(_combine_input_and_mask("argmax", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the smallest element where mask is True, in input's dtype unless dtype is given (torch's)."""
    dtype = input.dtype if dtype is None else dtype
    return _ops.argmin(_combine_input_and_mask("argmin", input, mask), dim, bool(keepdim)).to(dtype=dtype)


def mean(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False, dtype: D.dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The sum of the unmasked elements over their count (nan where none is)."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a floating point or "
                         f"complex dtype. Got: {dtype}")
    if mask is None:
        count = sum(_creation.ones(tuple(input.shape), dtype=D.int64), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=bool(keepdim))
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype: D.dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The median of the unmasked elements along dim (nanmedian with masked-out elements as nan)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=D.float32)
    output = _ops.nanmedian(_combine_input_and_mask("median", input, mask), d, keepdim).values
    if is_float:
        return output
    if not _ops.isnan(output).any():
        return output.to(dtype=dtype)
    raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")


def logsumexp(input: Tensor, dim: DimOrDims = None, *, keepdim: bool = False, dtype: D.dtype | None = None,
              mask: Tensor | None = None) -> Tensor:
    """log of the sum of exp of the unmasked elements (-inf where none is)."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    return _ops.logsumexp(_combine_input_and_mask("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype: D.dtype | None = None, input_mask: Tensor | None = None,
              other_mask: Tensor | None = None) -> Tensor:
    """log(exp(input) + exp(other)), each operand's masked-out elements counting as -inf."""
    dtype = input.dtype if dtype is None else dtype
    return _ops.logaddexp(_combine_input_and_mask("logaddexp", input, input_mask),
                          _combine_input_and_mask("logaddexp", other, other_mask)).to(dtype=dtype)


def norm(input: Tensor, ord: float | None = 2.0, dim: DimOrDims = None, *, keepdim: bool | None = False,
         dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The vector ord-norm of the unmasked elements."""
    from .. import linalg

    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("norm", input, mask, ord)
    return linalg.vector_norm(masked, ord, _canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input: Tensor, dim: DimOrDims, unbiased: bool | None, correction_opt: float | None,
             keepdim: bool | None, dtype: D.dtype | None, mask: Tensor | None, take_sqrt: bool) -> Tensor:
    """torch's masked variance: squared deviations from the masked mean over (count - correction), floored at 0."""
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0 if unbiased is None or unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else D.float32
    compute_dtype = dtype if dtype.is_floating_point or dtype.is_complex else D.float32
    if mask is None:
        count = sum(_creation.ones(tuple(input.shape), dtype=D.int64), dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype)
        inmask = None
    else:
        inmask = _input_mask(input, mask)
        count = inmask.sum(dim=dim, keepdim=True)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    x = _ops.subtract(input, _ops.divide(sample_total, count))
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real = {D.complex64: D.float32, D.complex128: D.float64}.get(compute_dtype, compute_dtype)
        count = _ops.subtract(count.to(real), correction)
        count = _ops.maximum(count, count.new_zeros([]))
    output = _ops.divide(total, count).to(dtype=dtype)
    return _ops.sqrt(output) if take_sqrt else output


def var(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *, correction: float | None = None,
        keepdim: bool | None = False, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The variance of the unmasked elements (correction 1 unless unbiased=False or correction= says otherwise)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *, correction: int | None = None,
        keepdim: bool | None = False, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The standard deviation of the unmasked elements."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def _softmax_family(name: str, identity: str, input: Tensor, dim: int, dtype: D.dtype | None,
                    mask: Tensor | None) -> Tensor:
    from ..nn import functional as F

    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return getattr(F, name)(_combine_input_and_mask(identity, input, mask), d, dtype=dtype)


def softmax(input: Tensor, dim: int, *, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """softmax over the unmasked elements (masked-out ones get 0; a fully masked slice gives nan)."""
    return _softmax_family("softmax", "amax", input, dim, dtype, mask)


def log_softmax(input: Tensor, dim: int, *, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """log_softmax over the unmasked elements (masked-out ones get -inf)."""
    return _softmax_family("log_softmax", "amax", input, dim, dtype, mask)


def softmin(input: Tensor, dim: int, *, dtype: D.dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """softmin over the unmasked elements."""
    return _softmax_family("softmin", "amin", input, dim, dtype, mask)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype: D.dtype | None = None,
              mask: Tensor | None = None) -> Tensor:
    """input over the ord-norm of its unmasked elements along dim (at least eps); masked-out elements give 0."""
    dtype = input.dtype if dtype is None else dtype
    masked = _combine_input_and_mask("sum", input, mask)
    denominator = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return _ops.divide(masked, _ops.maximum(denominator, denominator.new_full([], eps)))


__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp", "mean",
           "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]
