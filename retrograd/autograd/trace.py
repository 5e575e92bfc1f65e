"""Watch a backward pass: which node ran, the rule it applied, and the gradients it passed on::

    with retrograd.autograd.trace(names={"w": w, "b": b}) as t:
        loss.backward()
    print(t)          # a table, one row per node in execution order
    t.to_graph()      # the backward graph with the gradient on every edge (Graphviz)

The rule text comes from the rule table itself (`OpNode.rule_sources`), not from a second copy.
The engine looks at one thread-local attribute per node; with no trace active nothing else runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import grad_mode


@dataclass
class Edge:
    """One gradient a node passed on: to which input, its shape and value, and broadcast sums."""

    input: str
    target: str
    target_id: int
    shape: tuple
    value: str
    summed_from: tuple | None = None


@dataclass
class Step:
    """One node of the backward pass, in execution order."""

    index: int
    node: str
    node_id: int
    rules: dict[str, str]
    received: list[tuple[tuple, str]]
    passed: list[Edge] = field(default_factory=list)
    accumulated: str | None = None


def _short(t: Any, limit: int = 6) -> str:
    """A tensor's values on one line, abbreviated for big tensors."""
    if t is None:
        return "None"
    arr = np.asarray(t._data)
    with np.printoptions(precision=4, threshold=limit, edgeitems=2, linewidth=10_000, suppress=True):
        return " ".join(np.array2string(arr, separator=", ").split())


class trace:  # noqa: N801 - used like torch's context managers
    """Record every node a backward pass (backward() or autograd.grad()) runs in this thread."""

    def __init__(self, names: dict[str, Any] | None = None) -> None:
        self.steps: list[Step] = []
        self._names = {id(t): n for n, t in (names or {}).items()}
        self._pending_sums: list[tuple[tuple, tuple]] = []
        self._prev = None

    def __enter__(self) -> trace:
        self._prev = getattr(grad_mode._state, "tracer", None)
        grad_mode._state.tracer = self
        return self

    def __exit__(self, *exc: object) -> None:
        grad_mode._state.tracer = self._prev

    # ---- called by the engine and by the broadcast reduction ---------------------------------
    def node_starting(self, node: Any) -> None:
        """Nothing to note before a node runs (a profiler's tracer times it from here)."""

    def node_finished(self, node: Any) -> None:
        """Nothing to note once a node's gradients are added into the next nodes' inputs (a profiler ends its event)."""

    def note_sum(self, from_shape: tuple, to_shape: tuple) -> None:
        self._pending_sums.append((tuple(from_shape), tuple(to_shape)))

    def node_ran(self, node: Any, grads: list, outs: list | None) -> None:
        from .graph import AccumulateGrad

        step = Step(len(self.steps), node.name(), id(node), self._rules(node),
                    [(tuple(g.shape), _short(g)) if g is not None else ((), "None") for g in grads])
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            step.accumulated = f"{self.label(leaf)}.grad = {_short(leaf._grad)}"
        else:
            names = list(getattr(getattr(node, "op", None), "inputs", ())) or [f"input{i}" for i in
                                                                                range(len(node.next_functions))]
            sums = list(self._pending_sums)  # in input order; each is claimed by the first edge it fits
            for i, ((child, _), g) in enumerate(zip(node.next_functions, outs or ())):
                if child is None or g is None:
                    continue
                in_meta = getattr(node, "_in_meta", None)
                summed = None
                if in_meta and i < len(in_meta) and isinstance(in_meta[i], tuple):
                    for k, (frm, to) in enumerate(sums):
                        if to == tuple(g.shape):
                            summed = frm
                            del sums[k]
                            break
                step.passed.append(Edge(names[i] if i < len(names) else f"input{i}", self.node_label(child),
                                        id(child), tuple(g.shape), _short(g), summed))
        self._pending_sums = []
        self.steps.append(step)

    # ---- presentation ------------------------------------------------------------------------
    def label(self, tensor: Any) -> str:
        return self._names.get(id(tensor), f"leaf{list(tensor.shape)}")

    def node_label(self, node: Any) -> str:
        from .graph import AccumulateGrad

        if isinstance(node, AccumulateGrad):
            return f"AccumulateGrad({self.label(node.variable)})"
        return node.name()

    @staticmethod
    def _rules(node: Any) -> dict[str, str]:
        from .graph import AccumulateGrad

        if isinstance(node, AccumulateGrad):
            return {"grad": ".grad += grad"}
        sources = getattr(node, "rule_sources", None)
        if sources is not None:
            return sources()
        return {"*": f"user backward of {type(node).__name__}"}

    def __str__(self) -> str:
        lines = []
        for s in self.steps:
            received = "; ".join(f"{list(shape)} {value}" for shape, value in s.received)
            lines.append(f"[{s.index}] {s.node}  <- grad {received}")
            for name, rule in s.rules.items():
                lines.append(f"      rule  {name}: {rule}")
            for e in s.passed:
                note = f"  (summed from {list(e.summed_from)} by broadcasting)" if e.summed_from else ""
                lines.append(f"      -> {e.input} to {e.target}: {list(e.shape)} {e.value}{note}")
            if s.accumulated:
                lines.append(f"      accumulated: {s.accumulated}")
        return "\n".join(lines)

    __repr__ = __str__

    def to_graph(self) -> Any:
        """The traced backward graph with the gradient on every edge, as a graphviz.Digraph."""
        import graphviz

        dot = graphviz.Digraph(graph_attr={"rankdir": "TB"}, node_attr={"shape": "box", "fontsize": "10"})
        for s in self.steps:
            label = s.node if not s.accumulated else s.accumulated
            dot.node(str(s.index), label, fillcolor="lightblue" if s.accumulated else "white", style="filled")
        index_of = {s.node_id: s.index for s in self.steps}
        for s in self.steps:
            for e in s.passed:
                target = index_of.get(e.target_id)
                if target is not None:
                    note = f"\nsum from {list(e.summed_from)}" if e.summed_from else ""
                    dot.edge(str(s.index), str(target), label=f"{e.input}: {e.value}{note}", fontsize="9")
        return dot
