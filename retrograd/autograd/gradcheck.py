"""gradcheck and gradgradcheck: analytic gradients against central finite differences.

The analytic Jacobian is built row by row with vector-Jacobian products (one per output
element); the numerical one column by column by perturbing each input element by +-eps.
Failures name the input and output that disagree and by how much.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytic and numerical gradients disagree."""


def _as_tuple(x: Any) -> tuple:
    from .._tensor import Tensor

    return (x,) if isinstance(x, Tensor) else tuple(x)


def _differentiable(outputs: tuple) -> list:
    return [o for o in outputs if hasattr(o, "_data") and o._data.dtype.kind in "fc"]


def _numerical_jacobian(fn: Callable, inputs: tuple, wrt: list[int], eps: float) -> list[list[np.ndarray]]:
    """J[i][o]: d outputs[o] / d inputs[i] as a (numel_in, numel_out) array, by central differences.

    The function runs with grad mode on: it may itself differentiate (gradgradcheck's VJP)."""
    outs = _differentiable(_as_tuple(fn(*inputs)))
    jac = [[np.zeros((inputs[i]._data.size, o._data.size), dtype=o._data.dtype) for o in outs] for i in wrt]
    for k, i in enumerate(wrt):
        data = inputs[i]._data
        for j in range(data.size):
            idx = np.unravel_index(j, data.shape)
            orig = data[idx].copy()
            data[idx] = orig + eps
            plus = [o._data.copy() for o in _differentiable(_as_tuple(fn(*inputs)))]
            data[idx] = orig - eps
            minus = [o._data.copy() for o in _differentiable(_as_tuple(fn(*inputs)))]
            data[idx] = orig
            for m, (p, q) in enumerate(zip(plus, minus)):
                jac[k][m][j] = ((p - q) / (2 * eps)).reshape(-1)
    return jac


def _analytic_jacobian(fn: Callable, inputs: tuple, wrt: list[int]) -> list[list[np.ndarray]]:
    """J[i][o] from one vector-Jacobian product per output element."""
    from .. import zeros_like
    from . import grad as autograd_grad

    outs = _differentiable(_as_tuple(fn(*inputs)))
    jac = [[np.zeros((inputs[i]._data.size, o._data.size), dtype=o._data.dtype) for o in outs] for i in wrt]
    targets = [inputs[i] for i in wrt]
    for m, o in enumerate(outs):
        if not o._requires_grad:
            continue
        for j in range(o._data.size):
            v = zeros_like(o)
            v._data.reshape(-1)[j] = 1
            grads = autograd_grad(o, targets, v, retain_graph=True, allow_unused=True)
            for k, g in enumerate(grads):
                if g is not None:
                    jac[k][m][:, j] = g._data.reshape(-1)
    return jac


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of `func` at `inputs` against finite differences (use float64 inputs)."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if hasattr(t, "_requires_grad") and t._requires_grad]
    for i in wrt:
        if inputs[i]._data.dtype not in (np.float64, np.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ", UserWarning, stacklevel=2)
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    numerical = _numerical_jacobian(func, inputs, wrt, eps)
    analytical = _analytic_jacobian(func, inputs, wrt) if check_backward_ad else numerical
    for k, i in enumerate(wrt):
        for m, (a, n) in enumerate(zip(analytical[k], numerical[k])):
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                diff = np.abs(a - n).max() if a.size else 0.0
                msg = (f"Jacobian mismatch for output {m} with respect to input {i},\n"
                       f"numerical:{n}\nanalytical:{a}\n(max abs difference {diff:.3e}, atol={atol}, rtol={rtol})")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Sequence | None = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of the function (inputs, v) -> VJP(func, inputs, v)."""
    from .. import randn_like
    from . import grad as autograd_grad

    inputs = _as_tuple(inputs)
    outs = _differentiable(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            v = randn_like(o)
            v._data[...] = rng.standard_normal(o._data.shape)
            v.requires_grad_(True)
            grad_outputs.append(v)
    grad_outputs = list(grad_outputs)
    n_in = len(inputs)
    wrt = [t for t in inputs if hasattr(t, "_requires_grad") and t._requires_grad]

    def vjp(*args: Any) -> tuple:
        ins, vs = args[:n_in], args[n_in:]
        res = _differentiable(_as_tuple(func(*ins)))
        targets = [t for t in ins if hasattr(t, "_requires_grad") and t._requires_grad]
        used = [(o, v) for o, v in zip(res, vs) if o._requires_grad]
        grads = autograd_grad([o for o, _ in used], targets, [v for _, v in used], create_graph=True,
                              allow_unused=True)
        from .. import zeros_like

        return tuple(zeros_like(t) if g is None else g for g, t in zip(grads, targets))

    del wrt
    return gradcheck(vjp, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
