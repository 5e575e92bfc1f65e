"""torch.nn.init: fill a tensor in place with the initial values layers use (torch's formulas), and torch's
deprecated names without the trailing underscore (`nn.init.normal`), which warn as torch's do.

Every function draws from retrograd's generator (`generator=` or the default one), writes with
`copy_` under no_grad so a Parameter keeps its identity, and returns the tensor.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _creation
from .._tensor import Tensor, _wrap
from ..autograd.grad_mode import no_grad

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (e.g. sqrt(2) for relu)."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write `values` into `tensor` in place without recording history."""
    with no_grad():
        tensor.copy_(_wrap(np.asarray(values, dtype=tensor._data.dtype).reshape(tensor._data.shape)))
    return tensor


def _rng(generator: _creation.Generator | None) -> _creation.Generator:
    return _creation._torch_rng(generator)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: _creation.Generator | None = None) -> Tensor:
    """Values drawn uniformly from [a, b), as `Tensor.uniform_` draws them (torch's numbers for the same seed)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: _creation.Generator | None = None
            ) -> Tensor:
    """Values drawn from N(mean, std^2), as `Tensor.normal_` draws them (torch's numbers for the same seed)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: _creation.Generator | None = None) -> Tensor:
    """Values from N(mean, std^2) restricted to [a, b], by torch's two rejection samplers: redraw the
    whole tensor's normals where a value fell outside when most of the mass is inside, else uniform
    candidates in [a, b] accepted by the density's ratio to its peak."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    rng, shape, dtype = _rng(generator), tensor._data.shape, tensor._data.dtype
    if _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std) > 0.3:
        low, high = dtype.type(a), dtype.type(b)
        result = rng.normal(shape, dtype, mean, std)
        while ((result < low) | (result > high)).any():
            outside = (result < low) | (result > high)
            result = np.where(outside, rng.normal(shape, dtype, mean, std), result)
        return _fill(tensor, result)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_density(x: np.ndarray) -> np.ndarray:
        return ((x - dtype.type(mean)) / dtype.type(std)) ** 2 * dtype.type(-0.5) - dtype.type(log_peak)

    result = rng.uniform(shape, dtype, a, b)
    pending = np.log(rng.uniform(shape, dtype)) > log_density(result)
    while pending.any():
        candidates = rng.uniform(shape, dtype, a, b)
        result = np.where(pending, candidates, result)
        pending = np.where(pending, np.log(rng.uniform(shape, dtype)) > log_density(candidates), pending)
    return _fill(tensor, result)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Every element set to val."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor._data.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The identity of a convolution: a one at the centre of each (out, in) kernel, per group."""
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tensor._data.shape
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    values = np.zeros(shape)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d, *centre)] = 1
    return _fill(tensor, values)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = int(np.prod(tensor._data.shape[2:])) if tensor.ndim > 2 else 1
    return tensor._data.shape[1] * receptive, tensor._data.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: _creation.Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: _creation.Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: _creation.Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan) (Linear and Conv use a=sqrt(5))."""
    if 0 in tensor._data.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: _creation.Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tensor._data.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: _creation.Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one, times gain."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor._data.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal((rows, cols), tensor._data.dtype)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: _creation.Generator | None = None
            ) -> Tensor:
    """A 2-D matrix from N(0, std^2) with a fraction `sparsity` of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor._data.shape
    values = _rng(generator).normal((rows, cols), tensor._data.dtype, 0.0, std)
    zeros = int(math.ceil(sparsity * rows))
    for c in range(cols):  # torch draws these permutations from the default generator, whatever `generator` is
        values[_creation.default_generator.permutation(rows)[:zeros], c] = 0
    return _fill(tensor, values)


def _make_deprecate(method: Callable) -> Callable:
    """torch's old name without the trailing underscore: the same fill, with torch's FutureWarning."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__doc__ = f"{old_name}(...): deprecated in favor of torch.nn.init.{new_name}."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)


__all__ = ["calculate_gain", "constant_", "dirac_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_",
           "ones_", "orthogonal_", "sparse_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_",
           "zeros_"]
