"""retrograd.viz.draw_graph: the backward graph as Graphviz, named as torch names it; a real PNG is rendered."""

import os
import re
import sys

import numpy as np
import pytest
import torch

import retrograd
from retrograd import viz

graphviz = pytest.importorskip("graphviz")


def seed_001(lib):
    """Seed 001's one-layer net."""
    x = lib.ones(5)
    y = lib.zeros(3)
    w = lib.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), requires_grad=True)
    b = lib.tensor([0.1, -0.2, 0.3], requires_grad=True)
    z = lib.matmul(x, w) + b
    return lib.nn.functional.binary_cross_entropy_with_logits(z, y), w, b


def torch_node_names(tensor):
    names, stack, seen = [], [tensor.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.append(type(fn).__name__)
        stack.extend(child for child, _ in fn.next_functions)
    return sorted(names)


def labels(dot):
    """The label of every node in the DOT text, keyed by node id."""
    found = re.findall(r'^\s*(\S+) \[label=(?:"((?:[^"\\]|\\.)*)"|([^\s\]]+))', dot.source, flags=re.M)
    return {node: quoted or bare for node, quoted, bare in found}


def small_net(lib):
    x = lib.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5))
    w = lib.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), requires_grad=True)
    b = lib.tensor([0.1, -0.2, 0.3], requires_grad=True)
    return (lib.relu(x.mm(w) + b) * w.sum()).mean(), w, b


def test_graph_nodes_and_edges_are_torchs():
    loss, w, b = small_net(retrograd)
    t_loss, _, _ = small_net(torch)
    dot = viz.draw_graph(loss, params={"w": w, "b": b})
    assert isinstance(dot, graphviz.Digraph)
    found = labels(dot)
    assert sorted(v for v in found.values() if "\n" not in v) == torch_node_names(t_loss)
    assert sorted(v for v in found.values() if "\n" in v) == sorted(["\n ()", "b\n (3)", "w\n (5, 3)"])
    edges = re.findall(r"^\s*(\S+) -> (\S+)", dot.source, flags=re.M)
    named = sorted((found[a], found[c]) for a, c in edges)
    expected = [("AccumulateGrad", "MmBackward0"), ("AccumulateGrad", "SumBackward0"),
                ("AccumulateGrad", "AddBackward0"), ("AddBackward0", "ReluBackward0"), ("MmBackward0", "AddBackward0"),
                ("MeanBackward0", "\n ()"), ("MulBackward0", "MeanBackward0"), ("ReluBackward0", "MulBackward0"),
                ("SumBackward0", "MulBackward0"), ("b\n (3)", "AccumulateGrad"), ("w\n (5, 3)", "AccumulateGrad")]
    assert named == sorted(expected)
    assert "fillcolor=lightblue" in dot.source and "fillcolor=darkolivegreen1" in dot.source


def test_seed_001_picture():
    loss, w, b = seed_001(retrograd)
    found = list(labels(viz.draw_graph(loss, params={"w": w, "b": b})).values())
    assert "BinaryCrossEntropyWithLogitsBackward0" in found and "AddBackward0" in found
    assert found.count("AccumulateGrad") == 2 and "w\n (5, 3)" in found and "b\n (3)" in found


def test_saved_tensors_are_shown_on_request():
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    plain = viz.draw_graph(y)
    saved = viz.draw_graph(y, show_saved=True)
    assert "orange" not in plain.source
    assert saved.source.count("fillcolor=orange") >= 2
    assert "self\\n (2)" in saved.source.replace("\n", "\\n") or "self\n (2)" in saved.source


class Square(retrograd.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def test_custom_functions_and_several_outputs():
    x = retrograd.ones(3, requires_grad=True)
    a, b = Square.apply(x), x.sin()
    dot = viz.draw_graph([a, b], params={"x": x})
    found = list(labels(dot).values())
    assert "SquareBackward" in found and "SinBackward0" in found and found.count("x\n (3)") == 1
    assert "saved[0]\n (3)" in found  # custom Functions always show what they saved, as torchviz does


def test_deep_graph_needs_no_recursion():
    x = retrograd.ones(1, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    dot = viz.draw_graph(y)
    assert dot.source.count("MulBackward0") == 3000


def test_missing_graphviz_package_is_explained(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match="pip install graphviz"):
        viz.draw_graph(retrograd.ones(1, requires_grad=True) * 2)


def test_missing_dot_program_is_explained(monkeypatch, tmp_path):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    assert not viz.can_render()
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        viz.render_graph(viz.draw_graph(retrograd.ones(1, requires_grad=True) * 2), tmp_path / "g.png")


def test_renders_a_png(tmp_path):
    if not viz.can_render():
        if os.environ.get("CI"):
            pytest.fail("CI must render the graph: the Graphviz program 'dot' is missing (make's setup installs it)")
        pytest.skip("the Graphviz program 'dot' is not installed")
    loss, w, b = seed_001(retrograd)
    path = viz.render_graph(viz.draw_graph(loss, params={"w": w, "b": b}), tmp_path / "graph.png")
    assert path == tmp_path / "graph.png"
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.png"]
