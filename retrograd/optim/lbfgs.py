"""L-BFGS: a quasi-Newton method that calls the closure several times per step (torch's algorithm).

All parameters are treated as one flat vector x. Each iteration picks a direction d from the
gradient and the last `history_size` pairs (s = step taken, y = change of gradient) by the
two-loop recursion, then moves along it by `lr` or by a strong-Wolfe line search. The arithmetic
follows torch.optim.LBFGS step for step, keeping its 0-d tensors (in the parameters' dtype) where
it keeps them; only torch's fused multiply-add in `add(alpha=...)` rounds once where NumPy rounds twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .. import _creation as C
from .. import cat, view_as_real
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer

Scalar = float | Tensor  # torch keeps some step sizes and losses as 0-d tensors


def _cubic_interpolate(x1: Scalar, f1: Scalar, g1: Scalar, x2: Scalar, f2: Scalar, g2: Scalar,
                       bounds: tuple[Scalar, Scalar] | None = None) -> Scalar:
    """The minimiser, clamped to `bounds` (default [x1, x2]), of the cubic through two points with given slopes.

    Nocedal & Wright (2006), eq. 3.59; the middle of the bounds when the cubic has no minimum.
    """
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


class _Point(NamedTuple):
    """A trial step t along the search direction: the loss there, its flat gradient and slope along d."""

    t: Scalar
    f: Scalar
    g: Tensor
    gtd: Scalar


def _strong_wolfe(evaluate: Callable[[list[Tensor], Scalar, Tensor], tuple[float, Tensor]], x: list[Tensor],
                  t: Scalar, d: Tensor, f: float, g: Tensor, gtd: Tensor, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[float, Tensor, Scalar, int]:
    """A step along d meeting the strong Wolfe conditions (Nocedal & Wright, algorithms 3.5 and 3.6).

    First grows t until an interval holds an acceptable step, then shrinks the interval by cubic
    interpolation. Returns (loss, flat gradient, step, number of closure evaluations).
    """
    d_norm = d.abs().max()
    start = _Point(0, f, g, gtd)

    def trial(step: Scalar) -> _Point:
        f_new, g_new = evaluate(x, step, d)
        return _Point(step, f_new, g_new, g_new.dot(d))

    def sufficient_decrease(point: _Point) -> bool:
        return not point.f > f + c1 * point.t * gtd

    def curvature(point: _Point) -> bool:
        return bool(abs(point.gtd) <= -c2 * gtd)

    # bracketing: extrapolate until the step is acceptable or an interval must contain one
    prev, new = start, trial(t)
    evals, ls_iter = 1, 0
    bracket: list[_Point] = []
    done = False
    while ls_iter < max_ls:
        if not sufficient_decrease(new) or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if curvature(new):
            bracket, done = [new], True
            break
        if new.gtd >= 0:  # past a minimum along d
            bracket = [prev, new]
            break
        step = _cubic_interpolate(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                                  bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev, new = new, trial(step)
        evals += 1
        ls_iter += 1
    if ls_iter == max_ls:  # no interval found: zoom cannot run, the search ends at the better end
        bracket = [start, new]

    # zoom: shrink the interval [low, high] (low = the lower loss) around an acceptable step
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient_progress = False
    while not done and ls_iter < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        step = _cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f,
                                  bracket[1].gtd)
        step, insufficient_progress = _keep_off_the_ends(step, [p.t for p in bracket], insufficient_progress)
        new = trial(step)
        evals += 1
        ls_iter += 1
        if not sufficient_decrease(new) or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if curvature(new):
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _keep_off_the_ends(t: Scalar, ends: list[Scalar], insufficient_progress: bool) -> tuple[Scalar, bool]:
    """Move a trial step within 10% of the interval's width from an end back inside, when progress stalls.

    Returns the step and whether the next trial must also be moved (torch's `insuf_progress`).
    """
    lo, hi = min(ends), max(ends)
    eps = 0.1 * (hi - lo)
    if not min(hi - t, t - lo) < eps:
        return t, False
    if not (insufficient_progress or t >= hi or t <= lo):
        return t, True
    return (hi - eps if abs(t - hi) < abs(t - lo) else lo + eps), False


class LBFGS(Optimizer):
    """Limited-memory BFGS over all parameters as one vector; `step(closure)` re-evaluates the loss as needed.

    >>> optimizer = LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    >>> def closure():
    ...     optimizer.zero_grad()
    ...     loss = loss_fn(model(x), y)
    ...     loss.backward()
    ...     return loss
    >>> optimizer.step(closure)

    One parameter group only; the state (history, last direction) lives with the first parameter.
    """

    def __init__(self, params: Iterable[Any], lr: float | Tensor = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache: int | None = None

    def _numel(self) -> int:
        """The length of the flat vector (a complex parameter counts twice: real and imaginary parts)."""
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> Tensor:
        """All gradients as one new flat vector (zeros for a parameter without one)."""
        views = []
        for p in self._params:
            view = C.zeros(p.numel(), dtype=p.dtype) if p.grad is None else p.grad.reshape(-1)
            views.append(view_as_real(view).reshape(-1) if view.is_complex() else view)
        return cat(views, 0)

    def _add_grad(self, step_size: Scalar, update: Tensor) -> None:
        """x += step_size * update, update being a flat vector over all parameters."""
        offset = 0
        for p in self._params:
            target = view_as_real(p) if p.is_complex() else p
            numel = target.numel()
            target.add_(update[offset:offset + numel].view_as(target), alpha=step_size)
            offset += numel
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _directional_evaluate(self, closure: Callable[[], Any], x: list[Tensor], t: Scalar,
                              d: Tensor) -> tuple[float, Tensor]:
        """Loss and flat gradient at x + t * d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def _direction(self, state: dict, flat_grad: Tensor, prev_flat_grad: Tensor, d: Tensor, t: Scalar,
                   history_size: int) -> Tensor:
        """Record the last step's (s, y) pair if it keeps the curvature positive; return -H g (two-loop recursion)."""
        y = flat_grad.sub(prev_flat_grad)
        s = d.mul(t)
        ys = y.dot(s)
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:
            if len(old_dirs) == history_size:  # forget the oldest pair
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)  # the initial inverse Hessian is a multiple of the identity
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q.mul(state["H_diag"])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    @no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to `max_iter` L-BFGS iterations; returns the loss the closure gave first."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:  # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(state, flat_grad, prev_flat_grad, d, t, group["history_size"])
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            # the first step is scaled to at most 1 / |g|_1, as no curvature is known yet
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction any more
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def evaluate(x: list[Tensor], step: Scalar, direction: Tensor) -> tuple[float, Tensor]:
                    return self._directional_evaluate(closure, x, step, direction)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(evaluate, x_init, t, d, loss, flat_grad, gtd,
                                                                  max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                optimal = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                optimal = False
                if n_iter != max_iter:  # the last iteration's loss is left for the next step to evaluate
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    optimal = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or optimal:
                break
            if d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break  # the parameters or the loss stopped changing

        state.update(d=d, t=t, prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
