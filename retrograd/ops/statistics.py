"""Rule table and composites: statistics of a tensor's values (OPS.md section D).

Rows: dist (the p-norm of a difference), renorm (each slice rescaled to a norm of at most maxnorm) and
logcumsumexp, with torch's derivatives. Composites, built from differentiable ops as torch builds them (so
their gradients and grad_fn names follow): cov, corrcoef, quantile, nanquantile and gradient. Counting ops
(bincount, histc, histogram, histogramdd) compute in NumPy and carry no gradient, as torch's.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _creation
from .. import _dtype as D
from .._tensor import Tensor, _wrap, _wrap_dim
from .._warn import user_stacklevel
from . import arrays as A
from .complex import complex as make_complex
from .indexing import index_add_op
from .pointwise import _refuse_kinds, conj, real, where
from .reduction import _dims, check_vector_norm_input, norm_backward, norm_jvp, return_type, vector_norm, vector_norm_op
from .registry import apply, defop, namespace
from .shape import cat

return_types_histogram = return_type("histogram", ("hist", "bin_edges"))
return_types_histogramdd = return_type("histogramdd", ("hist", "bin_edges"))

# ============================================================================================
# Rows: dist, renorm, logcumsumexp
# ============================================================================================


@defop("dist", inputs=("self", "other"), params=("p",), promote="binary",
       self="norm_backward(grad, self - other, result, p, None, False)",
       other="-norm_backward(grad, self - other, result, p, None, False)",
       jvp="norm_jvp(self_t - other_t, self - other, result, p, None, False)")
def dist_op(xp, a, b, p):
    return vector_norm_op.forward(xp, a - b, p, None, False)


# `dim` holds the dims each slice's norm reduces (every dim but torch's `dim`), so that vmap shifts them
@defop("renorm", params=("p", "dim", "maxnorm"), self="renorm_backward(grad, self, p, dim, maxnorm)",
       jvp="renorm_jvp(self, self_t, p, dim, maxnorm)")
def renorm_op(xp, x, p, dim, maxnorm):
    norm = vector_norm_op.forward(xp, x, p, dim, True)
    scale = maxnorm / (norm + 1e-7)
    return x * xp.where(norm > maxnorm, scale, xp.ones_like(scale))


@defop("logcumsumexp", params=("dim",), self="logcumsumexp_backward(grad, self, result, dim)",
       jvp="logcumsumexp_jvp(self, self_t, dim)")
def logcumsumexp_op(xp, x, dim):
    _refuse_kinds(x.dtype, "logcumsumexp_out_cpu", kinds="buib")
    if x.ndim == 0:
        return A.copy(xp, x)
    if D.kind(x) != "c":
        return A.accumulate(xp, "logaddexp", x, dim)

    def complex_logaddexp(a, b):  # NumPy's logaddexp takes no complex numbers
        top = xp.where(xp.real(a) >= xp.real(b), a, b)
        top = xp.where(xp.isfinite(top), top, 0)
        return top + xp.log(xp.exp(a - top) + xp.exp(b - top))

    return A.accumulate(xp, complex_logaddexp, x, dim)


def renorm_backward(grad: Tensor, self: Tensor, p: float, others: tuple, maxnorm: float) -> Tensor:
    """Gradient of renorm (torch's renorm_backward) with its slices' norms over `others`: where a slice was
    rescaled, the scale's own derivative through the slice's norm joins the scaled gradient."""
    norm = vector_norm(self, p, others, keepdim=True)
    projected = conj(self) * grad
    projected = (real(projected) if projected.is_complex() else projected).sum(others, keepdim=True)
    through_norm = norm_backward(projected, self, norm, p, others, True)
    inverse = (norm + 1e-7).reciprocal()
    factor = inverse * maxnorm
    return where(norm > maxnorm, factor * grad - (factor * inverse) * through_norm, grad)


def renorm_jvp(self: Tensor, self_t: Tensor, p: float, others: tuple, maxnorm: float) -> Tensor:
    """Tangent of renorm: where a slice was rescaled by maxnorm / (norm + 1e-7), that scale's own tangent too."""
    norm = vector_norm(self, p, others, keepdim=True)
    inverse = (norm + 1e-7).reciprocal()
    factor = inverse * maxnorm
    norm_t = norm_jvp(self_t, self, norm, p, others, True)
    return where(norm > maxnorm, factor * (self_t - self * norm_t * inverse), self_t)


def _reverse_logcumsumexp(x: Tensor, dim: int) -> Tensor:
    return logcumsumexp(x.flip(dim), dim).flip(dim)


def logcumsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: int) -> Tensor:
    """Gradient of logcumsumexp in log space (torch's, after TensorFlow's): the positive and negative parts of
    a real gradient are summed apart, so no exp overflows."""
    if grad.is_complex():
        return (_reverse_logcumsumexp(conj(grad).log() - result, dim) + self).exp().conj()
    lowest = float(namespace(grad._data).finfo(grad._data.dtype).min)
    log_abs = where(grad == 0, 1, grad).abs().log()  # the same values; no 0 / 0 in its own derivative where grad is 0
    positive = (_reverse_logcumsumexp(where(grad > 0, log_abs, lowest) - result, dim) + self).exp()
    negative = (_reverse_logcumsumexp(where(grad < 0, log_abs, lowest) - result, dim) + self).exp()
    return positive - negative


def logcumsumexp_jvp(self: Tensor, self_t: Tensor, dim: int) -> Tensor:
    """Tangent of logcumsumexp: the running softmax-weighted mean of the tangent."""
    weights = (self - real(self).amax(dim, keepdim=True)).exp() if self.numel() else self.exp()
    totals = weights.cumsum(dim)
    return (weights * self_t).cumsum(dim) / where(totals == 0, 1e-13, totals)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other (broadcast)."""
    if D.result_type(input, other).category < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{D.scalar_type_name(D.result_type(input, other))} instead.")
    return apply(dist_op, (input, other), (float(p),))


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along dim rescaled so that its p-norm is at most maxnorm."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    check_vector_norm_input(input)
    dim = _wrap_dim(dim, input.ndim)
    return apply(renorm_op, (input,), (float(p), tuple(d for d in range(input.ndim) if d != dim), maxnorm))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along dim, computed without overflow."""
    return apply(logcumsumexp_op, (input,), (_wrap_dim(dim, max(input.ndim, 1)),))


# ============================================================================================
# Covariance and correlation
# ============================================================================================


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the variables in input's rows (observations in its columns), optionally weighted."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is D.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view(1, -1) if input.ndim < 2 else input
    observations = x.shape[1]
    w = None
    for name, weights, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if weights is None:
            continue
        if weights.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{weights.ndim} dimensions")
        if (weights.dtype.category < 2) != integral or weights.dtype is D.bool_ or weights.is_complex():
            raise RuntimeError(f"cov(): expected {name} to have {'integral' if integral else 'floating point'} "
                               f"dtype but got {name} with {D.scalar_type_name(weights.dtype)} dtype")
        if weights.numel() != observations:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {weights.numel()} != {observations}")
        if observations and A.reduce(namespace(weights._data), "any", weights._data < 0):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = weights if w is None else w * weights
    total = w.sum() if w is not None else _creation.tensor(observations)
    if w is not None and not bool(total._data != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    mean = (x * w if w is not None else x).sum(1) / total
    if w is not None and correction != 0 and aweights is not None:
        dof = total - correction * (w * aweights).sum() / total
    else:
        dof = total - correction
    if bool(dof._data <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations. (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                      "Correlation.cpp:129.)", UserWarning, stacklevel=user_stacklevel())
        dof = _creation.zeros_like(dof)
    centred = x - mean.unsqueeze(1)
    return (centred @ (centred * w if w is not None else centred).t().conj()).true_divide(dof).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in input's rows (clipped to [-1, 1])."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c  # NaN for a covariance of 0, inf or NaN, else 1
    d = c.diagonal()
    stddev = (real(d) if d.is_complex() else d).sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c.is_complex():
        return make_complex(real(c).clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ============================================================================================
# Quantiles
# ============================================================================================

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Tensor | float, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    """torch's quantile_compute: sort along dim, read the values at each q's rank and interpolate between the
    two around it; NaN makes quantile NaN, nanquantile ranks only the numbers."""
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if A.reduce(namespace(q._data), "any", (q._data < 0) | (q._data > 1)):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
        q = _creation.tensor(q, dtype=input.dtype, device=input.device)
    ranked = input.numel() if dim is None or input.ndim == 0 else input.shape[_wrap_dim(dim, input.ndim)]
    if ranked > 2 ** 24:  # torch's limit on the values ranked: beyond it a float32 rank is not exact
        raise RuntimeError("quantile() input tensor is too large")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if dim is None:
        reduced = [1] * input.ndim if keepdim else []
        ranked = input.flatten().sort()[0]
    else:
        dim = _wrap_dim(dim, max(input.ndim, 1))
        reduced = list(input.shape)
        if reduced:
            reduced[dim] = 1
            if not keepdim:
                del reduced[dim]
        ranked = input.unsqueeze(-1).transpose(dim, -1).sort()[0]
    ranked = ranked.view(*reduced, ranked.shape[-1])
    numbers = ranked.isnan().logical_not()
    if ignore_nan:
        ranks = q.reshape(-1) * (numbers.sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        last = ranked.shape[-1] - 1
        ranks = (q.reshape(-1) * last).masked_fill(numbers.logical_not().any(-1, keepdim=True), last)
    ranks = {"lower": ranks.floor, "higher": ranks.ceil, "nearest": ranks.round}.get(interpolation, lambda: ranks)()
    below = ranks.long()
    values = ranked.gather(-1, below)  # a new tensor: torch finishes it in place (LerpBackward1, SqueezeBackward4)
    if interpolation in ("linear", "midpoint"):
        weights = _creation.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        values.lerp_(ranked.gather(-1, ranks.ceil().long()), weights)
    if q.ndim == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def quantile(input: Tensor, q: Tensor | float, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of input (along dim, else of all elements); q's values lead the result's shape."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q: Tensor | float, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """quantile ignoring NaN (NaN only where a slice holds nothing else)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


# ============================================================================================
# Numerical gradient
# ============================================================================================


def _gradient_dims(input: Tensor, spacing: object, dim: int | Sequence[int] | None, edge_order: int) -> tuple:
    """The dims torch.gradient differentiates along and one spacing (a number or coordinates) per dim."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    _dims(dims, input.ndim)  # torch's error for a dim given twice
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            given = f"'self.dim() = {input.ndim}', since dim argument was not given" if dim is None else \
                f"'dim = {dim}'"
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to {given}, but got a list of length {len(spacing)}")
        return dims, tuple(spacing)
    return dims, (spacing,) * len(dims)


def gradient(input: Tensor, *, spacing: object = 1, dim: int | Sequence[int] | None = None,
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """Estimated derivatives of input along each dim: central differences inside, one-sided ones of order
    edge_order at the ends; spacing a number per dim or the coordinates of the samples (torch.gradient)."""
    dims, spacings = _gradient_dims(input, 1 if spacing is None else spacing, dim, edge_order)
    return tuple(_gradient_along(input, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(x: Tensor, d: int, h: object, edge_order: int) -> Tensor:
    """One dim's estimate: uniform spacing h, or samples at coordinates h (torch's gradient_helper)."""
    def part(start: int, stop: int | None = None) -> Tensor:
        """The slice [start:stop] of x along d."""
        return x[(slice(None),) * d + (slice(start, stop),)]

    if not isinstance(h, Tensor):
        center = (part(2) - part(0, -2)) / h
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(-1) - part(-2, -1)) / h
        else:
            first = (part(0, 1) * -1.5 + part(1, 2) * 2 + part(2, 3) * -0.5) / h
            last = (part(-3, -2) * 0.5 + part(-2, -1) * -2 + part(-1) * 1.5) / h
        return cat([first, center / 2, last], d)
    shape = [1] * x.ndim
    shape[d] = -1
    dx = h.diff(1, 0)
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * part(0, -2) + b * part(1, -1) + c * part(2)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / dx[0]
        last = (part(-1) - part(-2, -1)) / dx[-1]
    else:
        a0 = -(2.0 * dx[0] + dx[1]) / (dx[0] * (dx[0] + dx[1]))
        b0 = (dx[0] + dx[1]) / (dx[0] * dx[1])
        c0 = -dx[0] / (dx[1] * (dx[0] + dx[1]))
        first = a0 * part(0, 1) + b0 * part(1, 2) + c0 * part(2, 3)
        a1 = dx[-1] / (dx[-2] * (dx[-1] + dx[-2]))
        b1 = -(dx[-1] + dx[-2]) / (dx[-1] * dx[-2])
        c1 = (2 * dx[-1] + dx[-2]) / (dx[-1] * (dx[-1] + dx[-2]))
        last = a1 * part(-3, -2) + b1 * part(-2, -1) + c1 * part(-1)
    return cat([first, center, last], d)


# ============================================================================================
# Counting: bincount and histograms (no gradient)
# ============================================================================================


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in the 1-d input (summing weights instead, if given)."""
    data = input._data
    xp = namespace(data)
    _refuse_kinds(data.dtype, "bincount_cpu", kinds="bfc")
    D.refuse_unsigned("bincount_cpu", input.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if data.ndim != 1 or A.reduce(xp, "any", data < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != data.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = minlength  # NumPy's bincount lengthens to the largest value itself
    if xp is not np and data.shape[0]:
        length = builtins.max(minlength, int(A.reduce(xp, "max", data)) + 1)
    if weights is None:
        return _wrap(A.astype(xp, count_bins(xp, data, length), xp.int64))
    # torch sums float and double weights in their dtype, any other (half, integers, bool) in double
    dtype = weights._data.dtype if weights.dtype in (D.float32, D.float64) else D.native(xp, np.float64)
    return _wrap(A.astype(xp, count_bins(xp, data, length, A.astype(xp, weights._data, D.native(xp, np.float64))),
                          dtype))


def _linspace_edges(xp, low: float, high: float, bins: int, dtype: object, device: object) -> object:
    """bins + 1 equal-width edges from low to high, as torch's linspace computes them (from both ends)."""
    step = (high - low) / bins
    i = A.astype(xp, xp.arange(bins + 1, device=device), D.native(xp, np.float64))
    return A.astype(xp, xp.where(i < (bins + 1) // 2, low + step * i, high - step * (bins - i)), dtype)


def _bin_index(xp, values, edges, equal_width: bool):
    """Each value's bin, -1 outside [first edge, last edge] (NaN too); the last edge belongs to the last bin.
    Equal-width bins find the index arithmetically, then correct it against the edges by one either way (torch's
    local search); others by binary search."""
    count = edges.shape[0] - 1
    low, high = edges[0], edges[-1]
    inside = (values >= low) & (values <= high)
    if equal_width:
        with np.errstate(invalid="ignore"):
            guess = xp.where(inside, (values - low) * count / (high - low), xp.zeros_like(values))
            pos = xp.clip(A.astype(xp, guess, xp.int64), 0, count)
        pos = xp.where((pos > 0) & (values < xp.take(edges, pos)), pos - 1, pos)
        pos = xp.where((pos < count) & (values >= xp.take(edges, xp.minimum(pos + 1, count))), pos + 1, pos)
    else:
        pos = A.astype(xp, xp.searchsorted(edges, values, side="right"), xp.int64) - 1
    return xp.where(inside, xp.minimum(pos, count - 1), -1)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002 - torch's names
    """Counts of input's elements in `bins` equal bins over [min, max] (the data's range when both are 0)."""
    data = input._data
    xp = namespace(data)
    _refuse_kinds(data.dtype, "histogram_cpu", kinds="buic")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low == high and data.size:
        low, high = float(A.reduce(xp, "min", data)), float(A.reduce(xp, "max", data))
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    low, high = (xp.asarray(v, dtype=data.dtype, device=data.device) for v in (low, high))  # in input's precision
    values = A.reshape(xp, data, -1)
    values = values[(values >= low) & (values <= high)]
    pos = xp.minimum(A.astype(xp, (values - low) * bins / (high - low), xp.int64), bins - 1)  # no local search
    return _wrap(A.astype(xp, count_bins(xp, pos, bins), data.dtype))


def count_bins(xp, pos, bins: int, weights=None):
    """How many of the 1-d integer positions fall in each of range(bins), or the sum of their float64 weights
    (NumPy's bincount; the standard has none: the positions' sorted order, binary-searched for each bin's first,
    or index_add's scatter of the weights)."""
    if xp is np:
        return np.bincount(pos, weights, minlength=bins)
    if weights is not None:
        return index_add_op.forward(xp, xp.zeros(bins, dtype=weights.dtype, device=pos.device), weights, 0, pos, 1)
    starts = xp.searchsorted(xp.sort(pos), xp.arange(bins + 1, dtype=pos.dtype, device=pos.device))
    return xp.diff(starts)


def histogramdd(input: Tensor, bins: int | Sequence[int] | Sequence[Tensor], *,
                range: Sequence[float] | None = None, weight: Tensor | None = None,  # noqa: A002
                density: bool = False) -> tuple:
    """A histogram of the points in input's rows (its last dim the coordinates): counts (or summed weights, or
    a density) in bins given per coordinate as a count or as edges, and the edges."""
    data = input._data
    xp, device = namespace(data), data.device
    _refuse_kinds(data.dtype, "histogramdd", kinds="buic")
    if data.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    n = data.shape[-1]
    points = A.reshape(xp, data, (math.prod(data.shape[:-1]), n))
    if isinstance(bins, int):
        bins = [bins] * n
    if len(bins) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if weight is not None and tuple(weight.shape) != data.shape[:-1]:
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(data.shape)} and weight with shape {list(weight.shape)}")
    edges, index = [], []
    for k, b in enumerate(bins):
        column = points[:, k]
        if isinstance(b, Tensor):
            if b.dtype is not input.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                                   f"but got input with dtype {D.CPP_TYPE_NAMES[input.dtype.name]} and bins for "
                                   f"dimension {k} with dtype {D.CPP_TYPE_NAMES[b.dtype.name]}")
            if b.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {b.ndim} "
                                   f"dimensions in the bins tensor for dimension {k}")
            e = b._data
            equal = False
        else:
            if b <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension {k}")
            if range is not None:
                low, high = float(range[2 * k]), float(range[2 * k + 1])
                if low > high:
                    raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max "
                                       f"{high:g} for dimension {k}")
            elif column.shape[0]:
                low, high = float(A.reduce(xp, "min", column)), float(A.reduce(xp, "max", column))
            else:  # no values: torch's edges span [0, 1]
                low, high = 0.0, 1.0
            if low == high:
                low, high = low - 0.5, high + 0.5
            if not (math.isfinite(low) and math.isfinite(high)):
                raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{low:g}, {high:g}] is not finite")
            e = _linspace_edges(xp, low, high, b, data.dtype, device)
            equal = True
        edges.append(e)
        index.append(_bin_index(xp, column, e, equal) if e.shape[0] > 1 else
                     xp.full(column.shape, -1, dtype=xp.int64, device=device))
    shape = tuple(builtins.max(e.shape[0] - 1, 0) for e in edges)
    counted = xp.ones(points.shape[0], dtype=xp.bool, device=device)
    flat = xp.zeros(points.shape[0], dtype=xp.int64, device=device)
    for i, size in zip(index, shape):  # row-major flat bins (NumPy's ravel_multi_index)
        counted, flat = counted & (i >= 0), flat * size + i
    flat = flat[counted]
    float64 = D.native(xp, np.float64)
    w = None if weight is None else A.astype(xp, A.reshape(xp, weight._data, -1)[counted], float64)
    hist = A.astype(xp, A.reshape(xp, count_bins(xp, flat, math.prod(shape), w), shape), data.dtype)
    if density:
        volumes = xp.ones(shape, dtype=data.dtype, device=device)
        for k, e in enumerate(edges):
            volumes = volumes * A.reshape(xp, xp.diff(e), [-1 if j == k else 1 for j in builtins.range(n)])
        hist = hist / (A.reduce(xp, "sum", hist) * volumes)
    return return_types_histogramdd(_wrap(A.astype(xp, hist, data.dtype)), tuple(_wrap(e) for e in edges))


def histogram(input: Tensor, bins: int | Tensor = 100, *, range: Sequence[float] | None = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> tuple:
    """A histogram of input's elements: counts (or summed weights, or a density) in `bins` equal bins over range
    (the data's when not given) or between the given edges, and the edges."""
    hist, edges = histogramdd(input.reshape(-1, 1), [bins], range=range,
                              weight=None if weight is None else weight.reshape(-1), density=density)
    return return_types_histogram(hist, edges[0])


__all__ = ["bincount", "corrcoef", "cov", "dist", "gradient", "histc", "histogram", "histogramdd", "logcumsumexp",
           "nanquantile", "quantile", "renorm"]
METHODS = ["bincount", "corrcoef", "cov", "dist", "histc", "histogram", "logcumsumexp", "nanquantile", "quantile",
           "renorm"]
INPLACE = ["renorm"]
