"""The backward trace shows what ran, with the table's own rule text and the real gradients."""

import numpy as np

import retrograd as R


def test_trace_of_seed_001_matches_grads() -> None:
    x, y = R.ones(5), R.zeros(3)
    w = R.tensor([[0.1, 0.2, -0.3]] * 5, requires_grad=True)
    b = R.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = R.nn.functional.binary_cross_entropy_with_logits(R.matmul(x, w) + b, y)
    with R.autograd.trace(names={"w": w, "b": b}) as t:
        loss.backward()
    names = [s.node for s in t.steps]
    assert names[0] == "BinaryCrossEntropyWithLogitsBackward0" and "AddBackward0" in names
    add = next(s for s in t.steps if s.node == "AddBackward0")
    assert add.rules == R.ops.pointwise.add_op.vjp_src  # the rule text is the table's own
    accumulated = {s.accumulated.split(".grad")[0]: s for s in t.steps if s.accumulated}
    assert set(accumulated) == {"w", "b"}
    b_value = np.array(eval(accumulated["b"].accumulated.split("= ")[1]))
    np.testing.assert_allclose(b_value, b.grad.numpy(), atol=1e-4)
    assert "accumulated: w.grad" in str(t)


def test_trace_reports_broadcast_sums_and_is_off_afterwards() -> None:
    a = R.tensor([[1.0], [2.0]], requires_grad=True)
    c = R.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with R.autograd.trace() as t:
        (a * c).sum().backward()
    mul = next(s for s in t.steps if s.node == "MulBackward0")
    assert {e.input: e.summed_from for e in mul.passed} == {"self": (2, 3), "other": (2, 3)}
    assert "summed from [2, 3] by broadcasting" in str(t)
    assert R.autograd.grad_mode._state.tracer is None
    n = len(t.steps)
    (a * c).sum().backward()
    assert len(t.steps) == n  # nothing recorded outside the block


def test_trace_to_graph_has_gradient_edges() -> None:
    a = R.tensor([1.0, 2.0], requires_grad=True)
    with R.autograd.trace(names={"a": a}) as t:
        (a.exp() * 2).sum().backward()
    dot = t.to_graph().source
    assert "ExpBackward0" in dot and "->" in dot and "a.grad" in dot
