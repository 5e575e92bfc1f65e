"""Pictures of the backward graph: `draw_graph(tensor)` returns a graphviz.Digraph, as torchviz draws it.

Grey boxes are backward nodes named as `grad_fn.name()` (AddBackward0, AccumulateGrad, ...); blue
boxes are the leaves that will receive `.grad`, labelled with their name (from `params`) and
shape; the green box is the output; orange boxes (show_saved=True) are the tensors a node saved
for backward. Building the graph needs only the `graphviz` Python package (pip install
'retrograd[demo]'); `render_graph` writes an image and needs the Graphviz program `dot`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._tensor import Tensor

_NODE_STYLE = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1", height="0.2",
                   fontname="monospace")
_LEAF, _SAVED, _OUTPUT = "lightblue", "orange", "darkolivegreen1"


def _digraph() -> Any:
    try:
        import graphviz
    except ImportError as error:
        raise ImportError("draw_graph needs the graphviz Python package: pip install graphviz "
                          "(or pip install 'retrograd[demo]')") from error
    return graphviz.Digraph(node_attr=_NODE_STYLE, graph_attr=dict(size="12,12"))


def _shape_text(t: Tensor) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ")"


def _saved_tensors(node: Any) -> list[tuple[str, Tensor]]:
    """(name, tensor) for what a backward node keeps for its gradient formulas: the inputs its
    formulas read (named as in the rule table) and its result, or a custom Function's saved_tensors."""
    op = getattr(node, "op", None)
    try:
        if op is None:
            tensors = getattr(node, "saved_tensors", ())
            return [(f"saved[{i}]", t) for i, t in enumerate(tensors) if isinstance(t, Tensor)]
        saved = node._unpack_saved() if op.saves_inputs else []
        pairs = [(op.inputs[i], t) for i, t in zip(op.saves_inputs, saved) if isinstance(t, Tensor)]
        results = getattr(node, "_result", None) or ()
        return pairs + [("result" if len(results) == 1 else f"result[{i}]", r.unpack(node))
                        for i, r in enumerate(results)]
    except (RuntimeError, AttributeError, TypeError):  # freed by a backward pass, or a node kind we cannot read
        return []


def draw_graph(tensor: Tensor | Iterable[Tensor], params: dict[str, Tensor] | None = None,
               show_saved: bool = False) -> Any:
    """The backward graph that ends at `tensor` (or at each of several tensors), as a graphviz.Digraph.

    `params` names the leaves, e.g. `dict(model.named_parameters())`. The DOT text is `.source`;
    `.render(...)` or `render_graph` writes an image (needs the Graphviz program).
    >>> dot = draw_graph(loss, params={"w": w, "b": b})
    >>> print(dot.source)
    """
    names = {id(t): name for name, t in (params or {}).items()}
    dot = _digraph()
    drawn: set[int] = set()

    def tensor_label(t: Tensor, name: str | None = None) -> str:
        return f"{name if name is not None else names.get(id(t), '')}\n {_shape_text(t)}"

    def add_saved(node: Any) -> None:
        for name, t in _saved_tensors(node):
            key = f"saved{id(node)}_{name}"
            dot.node(key, tensor_label(t, name), fillcolor=_SAVED)
            dot.edge(key, str(id(node)), dir="none")

    stack: list[Any] = []

    def visit(node: Any) -> None:
        if node is not None and id(node) not in drawn:
            drawn.add(id(node))
            stack.append(node)

    outputs = [tensor] if isinstance(tensor, Tensor) else list(tensor)
    for out in outputs:
        dot.node(f"out{id(out)}", tensor_label(out), fillcolor=_OUTPUT)
        if out.grad_fn is not None:
            dot.edge(str(id(out.grad_fn)), f"out{id(out)}")
            visit(out.grad_fn)
    while stack:  # an explicit stack: deep graphs do not hit the recursion limit
        node = stack.pop()
        dot.node(str(id(node)), type(node).__name__)
        variable = getattr(node, "variable", None)
        if isinstance(variable, Tensor):  # AccumulateGrad: draw the leaf it fills
            dot.node(f"leaf{id(variable)}", tensor_label(variable), fillcolor=_LEAF)
            dot.edge(f"leaf{id(variable)}", str(id(node)))
        if show_saved or getattr(node, "op", None) is None:
            add_saved(node)
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                dot.edge(str(id(child)), str(id(node)))
                visit(child)
    rows = len(dot.body)
    size = max(12.0, rows * 0.15)
    dot.graph_attr.update(size=f"{size},{size}")
    return dot


def can_render() -> bool:
    """True when the Graphviz program `dot`, which turns DOT text into images, is installed."""
    return shutil.which("dot") is not None


def render_graph(dot: Any, path: str | Path, format: str = "png") -> Path:  # noqa: A002 - graphviz's name
    """Write `dot` as an image at `path` (suffix added from `format`); a clear error if Graphviz is missing."""
    if not can_render():
        raise RuntimeError("rendering a graph needs the Graphviz program 'dot', which is not installed: on "
                           "Debian/Ubuntu `apt-get install graphviz`, on macOS `brew install graphviz`. The DOT text "
                           "(draw_graph(...).source) needs no program.")
    path = Path(path)
    stem = path.with_suffix("") if path.suffix == f".{format}" else path
    return Path(dot.render(filename=stem.name, directory=str(stem.parent), format=format, cleanup=True))


__all__ = ["can_render", "draw_graph", "render_graph"]
