"""Where the MLP step's time goes beyond the NumPy floor: `python -m benchmarks.gap`.

Workload 3 compares retrograd's training step (784-512-256-10, ReLU, cross-entropy, SGD) with the
same step written by hand in NumPy (`floor.py`). This runs the two steps alternately in one process,
on the suite's data, single-threaded BLAS, and times them phase by phase: each layer's forward, each
layer's backward, the SGD update. Alternating in one process keeps the two sides under the same
load, which separate processes on a shared machine do not.

A phase of retrograd's backward is the engine's time from one node to the next (the node's VJP with
the engine's bookkeeping around it), charged to the layer its node belongs to: AddmmBackward0 and
the TBackward0 and AccumulateGrad nodes under it to their linear layer, ReluBackward0 to its ReLU.
The engine's set-up before the first node goes with the cross-entropy's backward; what runs after
the last node has its own row, and so does the step's return, where the floor frees its
intermediate arrays and gradients (retrograd frees them as the engine releases each node, and
in SGD, which drops `.grad`). Prints the median of each phase over the steps, the difference and
its share of the whole gap.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from typing import Any

from .harness import THREAD_VARIABLES  # NumPy, and with it the BLAS, loads in measure(), after main() sets these

AFTER_LAST_NODE = "backward: after the last node"
RETURN = "return (freeing the step's arrays)"


class _NodeClock:
    """An engine tracer that stamps the time each node finishes, with the phase its node belongs to."""

    def __init__(self, phase_of: dict, marks: list) -> None:
        self.phase_of, self.marks = phase_of, marks

    def node_starting(self, node: Any) -> None:
        """The clock reads each node's end only."""

    def node_ran(self, node: Any, grads: list, outs: list | None) -> None:
        self.marks.append((self.phase_of[node], time.perf_counter()))

    def node_finished(self, node: Any) -> None:
        """Adding into the next nodes' buffers counts as the engine's time, between nodes."""

    def note_sum(self, from_shape: tuple, to_shape: tuple) -> None:
        """Broadcast sums are part of their node's time here."""


def _backward_phases(root: Any) -> dict:
    """Each node of the MLP's backward graph, by the floor's phase name: walking down from the loss,
    an AddmmBackward0 opens the next linear layer (3, 2, 1), a ReluBackward0 the next ReLU (2, 1),
    and every other node belongs to the layer it was reached from."""
    phase_of = {root: "backward: cross-entropy"}
    counters = {"AddmmBackward0": ("linear", 3), "ReluBackward0": ("relu", 2)}
    stack = [root]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None or child in phase_of:
                continue
            kind = counters.get(type(child).__name__)
            if kind is None:
                phase_of[child] = phase_of[node]
            else:
                name, number = kind
                phase_of[child] = f"backward: {name} {number}"
                counters[type(child).__name__] = (name, number - 1)
            stack.append(child)
    return phase_of


def _durations(start: float, marks: list) -> dict[str, float]:
    """Seconds per phase from (phase, time it ended) stamps taken in order from `start`; phase None
    marks time that is not the step's."""
    out: dict[str, float] = defaultdict(float)
    for phase, stamp in marks:
        if phase is not None:
            out[phase] += stamp - start
        start = stamp
    return out


def _retrograd_step(torch: Any, params: list, x: Any, target: Any, mark: Any, marks: list) -> None:
    """The suite's retrograd step (workloads.mlp_step) with a stamp after each phase."""
    from retrograd.autograd import grad_mode

    from .workloads import RETROGRAD, Lib, sgd

    nnf = torch.nn.functional
    h = nnf.linear(x, params[0], params[1])
    mark("forward: linear 1")
    h = nnf.relu(h)
    mark("forward: relu 1")
    h = nnf.linear(h, params[2], params[3])
    mark("forward: linear 2")
    h = nnf.relu(h)
    mark("forward: relu 2")
    logits = nnf.linear(h, params[4], params[5])
    mark("forward: linear 3")
    loss = nnf.cross_entropy(logits, target)
    mark("forward: cross-entropy")
    state = grad_mode._state
    state.tracer = _NodeClock(_backward_phases(loss.grad_fn), marks)
    mark(None)  # the walk above is the tool's, not the step's
    try:
        loss.backward()
    finally:
        state.tracer = None
    del loss, logits, h
    mark(AFTER_LAST_NODE)
    sgd(Lib(RETROGRAD), params)
    mark("SGD")


def measure(batch: int = 64, steps: int = 300, warmup: int = 10) -> tuple[list[str], dict, dict]:
    """Phase order and the median seconds of each phase for the floor and for retrograd."""
    import numpy as np

    import retrograd

    from . import floor
    from .workloads import LEARNING_RATE, mlp_data

    arrays, batches = mlp_data()
    x, target = batches[f"step, batch {batch}"]
    floor_params = [a.copy() for a in arrays]
    params = [retrograd.tensor(a.copy(), requires_grad=True) for a in arrays]
    tx, ttarget = retrograd.tensor(x), retrograd.tensor(target)
    runs: dict[str, list] = {"floor": [], "retrograd": []}
    order: list[str] = []
    for step in range(warmup + steps):
        for side in runs:
            marks: list = []

            def mark(phase: str | None, marks: list = marks) -> None:
                marks.append((phase, time.perf_counter()))

            start = time.perf_counter()
            if side == "floor":
                floor.mlp_step(floor_params, x, target, LEARNING_RATE, mark)
            else:
                _retrograd_step(retrograd, params, tx, ttarget, mark, marks)
            mark(RETURN)
            if step >= warmup:
                runs[side].append(_durations(start, marks))
            for phase, _ in marks:
                if phase is not None and phase not in order:
                    order.append(phase)
    medians = {side: {phase: float(np.median([r.get(phase, 0.0) for r in rs])) for phase in order}
               for side, rs in runs.items()}
    totals = {side: float(np.median([sum(r.values()) for r in rs])) for side, rs in runs.items()}
    return order, medians, totals


def table(order: list[str], medians: dict, totals: dict) -> str:
    """The phases as a Markdown table, µs, with each difference's share of the step's gap."""
    gap = sum(medians["retrograd"].values()) - sum(medians["floor"].values())
    lines = ["| phase | NumPy floor µs | retrograd µs | difference µs | share of the gap |",
             "|---|---:|---:|---:|---:|"]
    for phase in order:
        f, r = medians["floor"][phase] * 1e6, medians["retrograd"][phase] * 1e6
        share = f"{(r - f) / (gap * 1e6):.0%}" if gap > 0 else ""
        lines.append(f"| {phase} | {f:.0f} | {r:.0f} | {r - f:+.0f} | {share} |")
    f, r = totals["floor"] * 1e6, totals["retrograd"] * 1e6
    lines.append(f"| whole step (median of totals) | {f:.0f} | {r:.0f} | {r - f:+.0f} | ratio {r / f:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64, choices=(64, 1024), help="batch size (64)")
    parser.add_argument("--steps", type=int, default=300, help="timed steps of each side (300)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (10)")
    args = parser.parse_args(argv)
    for variable in THREAD_VARIABLES:  # as in the suite; read when NumPy loads its BLAS
        os.environ.setdefault(variable, "1")
    threads = ", ".join(f"{v}={os.environ[v]}" for v in THREAD_VARIABLES)
    print(f"MLP step, batch {args.batch}: {args.steps} steps of each side, alternating in one process ({threads})\n")
    print(table(*measure(args.batch, args.steps, args.warmup)))


if __name__ == "__main__":
    main()
