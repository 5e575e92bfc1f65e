"""Adam, with amsgrad, maximize and decoupled weight decay (AdamW, adamw.py), in torch's arithmetic order."""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import _creation as C
from .. import float32, float64, maximum, sqrt
from .._tensor import Tensor
from .._xp import namespace
from ..autograd.forward_ad import transforms
from ..ops.inplace import mark_written
from .optimizer import Optimizer, _check_adam_family, _next_step, _saved_copy


class Adam(Optimizer):
    """Adaptive moments: p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""

    _complex_as_real = True  # torch updates a complex parameter as pairs of reals (Note [complex parameters])

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_family(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        if not state:
            state["step"] = C.tensor(0.0, dtype=float32, device="cpu")
            state["exp_avg"] = C.zeros_like(param)
            state["exp_avg_sq"] = C.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = C.zeros_like(param)
        max_exp_avg_sq = state["max_exp_avg_sq"] if group["amsgrad"] else None
        tensors = (param, grad, state["exp_avg"], state["exp_avg_sq"], max_exp_avg_sq)
        arrays = _arrays(tensors, state["step"], group)
        if arrays is None:
            _adam_step(_TENSOR_OPS, *tensors, _next_step(state), group)
            return
        count = state["step"]._data
        count += 1  # _next_step's add_(1), on the counter's array
        mark_written(state["step"])
        _adam_step(namespace(arrays[0]), *arrays, float(count), group)
        for tensor, writes in zip(tensors, _writes(group)):
            for _ in range(writes):
                mark_written(tensor)


# Note [Adam on arrays]
# Adam's update is a dozen array operations per parameter, and users' programs (the GPT's AdamW) run it for
# every parameter every step: on small parameters the tensor ops' dispatch would be most of its cost. So the
# arithmetic is written once, in _adam_step, with Python's operators and two namespace functions (sqrt,
# maximum), and runs on whichever operands it is given:
# - the tensors' arrays, in their own namespace (NumPy's, or CuPy's or array_api_strict's behind 'cuda'),
#   when nothing needs the tensor ops (_arrays): no forward-mode or vmap level, no saved-tensor hooks or
#   profiler, differentiable=False, hyper-parameters that are Python numbers, and every array a float32 or
#   float64 array of the parameter's type, dtype and shape (NumPy's C-contiguous and writeable). The step then
#   counts each tensor's in-place writes on its version counter (_writes) and updates its live views, as the
#   tensor ops would.
# - the tensors themselves otherwise (differentiable=True, forward-mode tangents, tensor hyper-parameters, other
#   dtypes), with retrograd's ops: `x *= c` is mul_, `x += y` add_, `x[...] = y` a copy.
# Both run the same operations on the same operands (NumPy's in-place operators are its ufuncs with out=, the
# ones the unrecorded tensor ops call), so they give the same bits and the same version counts. NAdam and RAdam
# begin their steps with the same _update_moments, on tensors.


def _adam_step(xp: Any, param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any, step: float,
               group: dict) -> None:
    """One Adam step on arrays or tensors (Note [Adam on arrays]), writing param and the moments in place
    (max_exp_avg_sq is None without amsgrad)."""
    beta1, beta2 = group["betas"]
    _update_moments(param, grad, exp_avg, exp_avg_sq, group)
    step_size = group["lr"] / (1 - beta1**step)
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    second = exp_avg_sq
    if max_exp_avg_sq is not None:
        max_exp_avg_sq[...] = xp.maximum(_saved_copy(max_exp_avg_sq, group), exp_avg_sq)
        second = max_exp_avg_sq
    denom = xp.sqrt(second) / bias_correction2_sqrt
    denom += group["eps"]
    param += exp_avg / denom * -step_size


def _update_moments(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, group: dict) -> Any:
    """How Adam, NAdam and RAdam begin a step, in place on arrays or tensors: decoupled weight decay (one write to
    param), then the running means of the direction (one write: torch's lerp_) and of its
    square (two: mul_ and addcmul_). Returns the direction (the gradient after maximize and L2 weight decay)."""
    beta1, beta2 = group["betas"]
    weight_decay = group["weight_decay"]
    decoupled = group.get("decoupled_weight_decay", False)
    if weight_decay != 0 and decoupled:
        param *= 1 - group["lr"] * weight_decay
    if group.get("maximize"):
        grad = -grad
    if weight_decay != 0 and not decoupled:
        grad = grad + param * weight_decay
    if 1 - beta1 < 0.5:  # lerp_'s rounding: from the nearer end (beta1 = 0 keeps exactly the gradient)
        exp_avg += (grad - exp_avg) * (1 - beta1)
    else:
        exp_avg[...] = grad - (grad - exp_avg) * beta1
    exp_avg_sq *= beta2
    exp_avg_sq += grad * grad * (1 - beta2)
    return grad


def _writes(group: dict) -> tuple[int, ...]:
    """How many in-place writes _adam_step makes to each of param, grad, exp_avg, exp_avg_sq and max_exp_avg_sq:
    what each tensor's version counter counts."""
    decoupled = group["weight_decay"] != 0 and group.get("decoupled_weight_decay", False)
    return 2 if decoupled else 1, 0, 1, 2, 1 if group["amsgrad"] else 0


_TENSOR_OPS = types.SimpleNamespace(sqrt=sqrt, maximum=maximum)  # _adam_step's namespace on tensors
_NUMBERS = (int, float)


def _arrays(tensors: tuple, step: Tensor, group: dict) -> tuple | None:
    """The tensors' arrays (None for a None), when Adam's step may run on them and the step counter on its array
    (Note [Adam on arrays]); None where the tensor ops run it."""
    beta1, beta2 = group["betas"]
    if transforms.active or group.get("differentiable") or not (
            type(group["lr"]) in _NUMBERS and type(beta1) in _NUMBERS and type(beta2) in _NUMBERS
            and type(group["eps"]) in _NUMBERS and type(group["weight_decay"]) in _NUMBERS):
        return None
    param = tensors[0]
    if param.dtype is not float32 and param.dtype is not float64:
        return None
    p = param._data
    kind, dtype, shape = type(p), p.dtype, p.shape
    arrays = [t._data if t is not None else None for t in tensors]
    for a in arrays:
        if a is not None and (type(a) is not kind or a.dtype != dtype or a.shape != shape
                              or kind is np.ndarray and not (a.flags.c_contiguous and a.flags.writeable)):
            return None
    count = step._data
    if type(count) is not np.ndarray or count.ndim or not count.flags.writeable:
        return None
    return arrays
