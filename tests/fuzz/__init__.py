"""Differential fuzzer: hypothesis draws short programs over a curated list of common ops; each program runs in
torch and in retrograd on identical inputs and the two traces (values, dtypes, shapes, requires_grad/is_leaf flags,
grad_fn names, exception types, first and second derivatives) must agree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

# ---- the curated op list: name -> (arity, function(lib, *values)) ----
UNARY: dict[str, Callable[..., Any]] = {
    "neg": lambda lib, x: -x,
    "exp": lambda lib, x: x.exp(),
    "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(),
    "sin": lambda lib, x: x.sin(),
    "cos": lambda lib, x: lib.cos(x),
    "relu": lambda lib, x: x.relu(),
    "abs": lambda lib, x: x.abs(),
    "square": lambda lib, x: lib.square(x),
    "pow3": lambda lib, x: x ** 3,
    "softplus": lambda lib, x: lib.nn.functional.softplus(x),
    "gelu": lambda lib, x: lib.nn.functional.gelu(x),
    "log1p_abs": lambda lib, x: x.abs().log1p(),
    "sqrt_shift": lambda lib, x: (x * x + 1).sqrt(),
    "clamp": lambda lib, x: x.clamp(-0.5, 0.5),
    "scale": lambda lib, x: x * 2.5 - 1,
    "sum": lambda lib, x: x.sum(),
    "mean": lambda lib, x: x.mean(),
    "sum_last": lambda lib, x: x.sum(dim=-1),
    "sum_first_keep": lambda lib, x: x.sum(dim=0, keepdim=True),
    "mean_last": lambda lib, x: x.mean(-1),
    "amax_last": lambda lib, x: x.amax(dim=-1),
    "max_all": lambda lib, x: x.max(),
    "max_dim": lambda lib, x: x.max(dim=0).values,
    "norm": lambda lib, x: x.norm(),
    "logsumexp": lambda lib, x: x.logsumexp(dim=-1),
    "softmax": lambda lib, x: x.softmax(dim=-1),
    "log_softmax": lambda lib, x: x.log_softmax(dim=-1),
    "cumsum": lambda lib, x: x.cumsum(dim=0),
    "permute_rev": lambda lib, x: x.permute(tuple(reversed(range(x.dim())))),
    "transpose": lambda lib, x: x.transpose(0, -1),
    "reshape_flat": lambda lib, x: x.reshape(-1),
    "unsqueeze": lambda lib, x: x.unsqueeze(0),
    "squeeze": lambda lib, x: x.squeeze(),
    "flip": lambda lib, x: x.flip(0),
    "slice": lambda lib, x: x[..., 1:],
    "index_dup": lambda lib, x: x[[0, 0, -1]],
    "expand": lambda lib, x: x.expand(2, *x.shape),
    "clone": lambda lib, x: x.clone(),
    "detach": lambda lib, x: x.detach(),
    "inplace_mul": lambda lib, x: x.mul_(1.5),
    "inplace_sigmoid": lambda lib, x: x.sigmoid_(),
    "clone_inplace_add": lambda lib, x: x.clone().add_(1),
    # NumPy scalars as operands count as Python numbers (Note [operands]): they must not promote
    "mul_np64": lambda lib, x: x * np.float64(1.5),
    "add_np32": lambda lib, x: np.float32(0.5) + x,
    "rsub_npint": lambda lib, x: np.int64(2) - x,
    "div_np64": lambda lib, x: x / np.float64(3.0),
    "pow_np64": lambda lib, x: (x * x + 1) ** np.float64(0.5),
}
BINARY: dict[str, Callable[..., Any]] = {
    "add": lambda lib, x, y: x + y,
    "sub": lambda lib, x, y: lib.sub(x, y, alpha=2),
    "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / (y * y + 1),
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "minimum": lambda lib, x, y: lib.minimum(x, y),
    "matmul": lambda lib, x, y: x @ y.to(x.dtype),  # mixed-dtype empty matmul: torch returns, retrograd raises
    "where": lambda lib, x, y: lib.where(x > 0, x, y),
    "cat": lambda lib, x, y: lib.cat([x, y]),
    "stack": lambda lib, x, y: lib.stack([x, y]),
    "inplace_add": lambda lib, x, y: x.add_(y),
    "clone_inplace_mul": lambda lib, x, y: x.clone().mul_(y),
}
OPS = sorted(UNARY) + sorted(BINARY)
VIEWS = {"permute_rev", "transpose", "reshape_flat", "unsqueeze", "squeeze", "slice", "expand"}
SAME_MEMORY = VIEWS | {"detach", "inplace_mul", "inplace_sigmoid", "inplace_add"}  # the result shares x's memory
INPLACE = {"inplace_mul", "inplace_sigmoid", "inplace_add"}
# Left out: once memory seen by a view made under no_grad is written in place (under no_grad, or through its base
# or another view), torch raises "A view was created in no_grad mode and its base or another view of its base has
# been modified inplace with grad mode enabled" the next time that view's grad_fn is read or the view is used with
# grad enabled. retrograd raises the same (tests/test_views_inplace.py checks the usual cases), but the fuzzer does
# not generate such writes (recorded as skipped in both traces), except an in-place step with grad enabled on such a
# view itself, which both libraries refuse at once.


@dataclass(frozen=True)
class Step:
    """One program step: the op, the pool indices it reads (taken modulo the pool size), and whether it runs
    under no_grad."""

    op: str
    a: int
    b: int
    no_grad: bool

    def __repr__(self) -> str:
        return f"Step({self.op!r}, {self.a}, {self.b}, {self.no_grad})"


@dataclass(frozen=True)
class Program:
    """Leaf inputs (shape, dtype, requires_grad) with seeded values, then the steps."""

    inputs: tuple[tuple[tuple[int, ...], str, bool], ...]
    seed: int
    steps: tuple[Step, ...]


# ---- hypothesis strategies ----
shapes = st.lists(st.sampled_from([0, 1, 2, 3]), min_size=0, max_size=3).map(tuple)
leaf_inputs = st.tuples(shapes, st.sampled_from(["float32", "float64"]), st.booleans())
steps = st.builds(Step, st.sampled_from(OPS), st.integers(0, 7), st.integers(0, 7),
                  st.sampled_from([False, False, False, True]))
programs = st.builds(Program, st.lists(leaf_inputs, min_size=1, max_size=3).map(tuple), st.integers(0, 2**16),
                     st.lists(steps, min_size=2, max_size=6).map(tuple))


# ---- running one program in one library ----
def _record(value: Any) -> tuple:
    grad_fn = value.grad_fn.name() if value.grad_fn is not None else None
    return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape), value.requires_grad, value.is_leaf,
            grad_fn, value.detach().clone().numpy())


def run(program: Program, lib: Any) -> list[tuple]:
    """Run `program` with `lib` (torch or retrograd); returns the trace: one record per step, then the first and
    second derivatives, ending at the first exception (recorded by type name)."""
    rng = np.random.default_rng(program.seed)
    pool = [lib.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=rg)
            for shape, dtype, rg in program.inputs]
    leaves = [t for t in pool if t.requires_grad]
    memory = list(range(len(pool)))  # which input's memory each pool entry shares (decided by op, not by library)
    no_grad_views: set[int] = set()  # pool entries that are views made under no_grad (or views of those)
    tainted: set[int] = set()  # memories seen by such a view
    trace: list[tuple] = []
    try:
        for step in program.steps:
            a, b = step.a % len(pool), step.b % len(pool)
            x, y = pool[a], pool[b]
            if step.op in INPLACE and memory[a] in tainted and (step.no_grad or a not in no_grad_views):
                trace.append(("skipped", step.op))
                continue
            fn = UNARY.get(step.op) or BINARY[step.op]
            args = (x,) if step.op in UNARY else (x, y)
            if step.no_grad:
                with lib.no_grad():
                    out = fn(lib, *args)
            else:
                out = fn(lib, *args)
            memory.append(memory[a] if step.op in SAME_MEMORY else len(pool))
            if step.op in VIEWS and (step.no_grad or a in no_grad_views):
                no_grad_views.add(len(pool))
                tainted.add(memory[a])
            pool.append(out)
            trace.append(_record(out))
        trace.extend(_derivatives(lib, pool, leaves))
    except Exception as err:  # noqa: BLE001 - the exception type is part of the compared trace
        trace.append(("raise", type(err).__name__))
    return trace


def _derivatives(lib: Any, pool: list, leaves: list) -> list[tuple]:
    differentiable = [v for v in pool if v.requires_grad]
    if not differentiable or not leaves:
        return []
    loss = sum(v.sum() for v in differentiable)
    grads = lib.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
    trace = [("grad", None) if g is None else _record(g) for g in grads]
    second = [g for g in grads if g is not None and g.requires_grad]
    if second:
        total = sum((g * g).sum() for g in second)
        trace += [_second_order_record(g, leaf)
                  for g, leaf in zip(lib.autograd.grad(total, leaves, allow_unused=True), leaves)]
    return trace


def _second_order_record(grad: Any, leaf: Any) -> tuple:
    # Known difference (README Limits): where the second-order path exists but carries only zeros (relu/amax
    # backward differentiated again), torch returns a zeros tensor and retrograd may return None; None reads as
    # zeros here. Values are compared with the tolerance, as a second derivative that is zero in exact arithmetic
    # (softmax's, |x|'s) comes out as rounding noise in either library, noise that grows as 1/|x| for |x|'s: in
    # float32 these records get a wider absolute tolerance (compare).
    values = np.zeros(tuple(leaf.shape)) if grad is None else grad.detach().clone().numpy()
    return ("grad2", str(leaf.dtype).split(".")[-1], tuple(leaf.shape), False, True, None, values)


def compare(expected: list[tuple], got: list[tuple], single_precision: bool = False) -> str | None:
    """The first difference between torch's trace and retrograd's, described in words; None when they agree.
    With `single_precision` (some input is float32), float64 values are compared at float32's tolerance too: they
    may come through float32 steps (a float64 leaf's gradient through a float32 one), where the order in which the
    engine sums gradients (not specified by torch) changes the last float32 bits."""
    def meta(record: tuple) -> tuple:
        return record[:-1] if record[0] in ("tensor", "grad2") else record

    for i, (e, g) in enumerate(zip(expected, got)):
        if meta(e) != meta(g):
            return f"record {i}: torch {meta(e)} vs retrograd {meta(g)}"
        if e[0] in ("tensor", "grad2"):
            loose = single_precision or e[1] == "float32"
            tol = {"rtol": 1e-4, "atol": 1e-5} if loose else {"rtol": 1e-9, "atol": 1e-11}
            if loose and e[0] == "grad2":
                tol["atol"] = 1e-3
            if not np.allclose(g[-1], e[-1], equal_nan=True, **tol):
                return f"record {i}: values differ: torch {e[-1]!r} vs retrograd {g[-1]!r}"
    if len(expected) != len(got):
        return f"trace lengths differ: torch {len(expected)} records vs retrograd {len(got)}"
    return None


def check(program: Program) -> str | None:
    """Run `program` in both libraries and return the first difference (None when they agree)."""
    import torch

    import retrograd

    single = any(dtype == "float32" for _, dtype, _ in program.inputs)
    return compare(run(program, torch), run(program, retrograd), single_precision=single)
