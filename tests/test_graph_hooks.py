"""autograd.graph against torch: saved-tensor hooks (pack/unpack, save_on_cpu, disabling), node
hooks and pre-hooks, gradient edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e))


def values(t):
    return None if t is None else np.round(t.detach().numpy().astype(float), 6).tolist()


def test_documentation_example_packs_and_unpacks_in_torchs_order():
    """torch.autograd.graph.saved_tensors_hooks's docstring: printing pack and unpack hooks."""
    def scenario(lib):
        log = []

        def pack_hook(x):
            log.append(("Packing", repr(x)))
            return x.detach()

        def unpack_hook(x):
            log.append(("Unpacking", repr(x)))
            return x

        a = lib.ones(5, requires_grad=True)
        b = lib.ones(5, requires_grad=True) * 2
        with lib.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = a * b
        y.sum().backward()
        return log, values(a.grad)

    assert scenario(retrograd) == scenario(torch)


def test_hooks_see_saved_outputs_and_custom_function_saves():
    def scenario(lib):
        log = []
        x = lib.tensor([0.5, 1.5], requires_grad=True)

        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                ctx.save_for_backward(t)
                return t * t

            @staticmethod
            def backward(ctx, g):
                (t,) = ctx.saved_tensors
                return 2 * g * t

        with lib.autograd.graph.saved_tensors_hooks(lambda t: (log.append(("pack", values(t))), t)[1],
                                                    lambda t: (log.append(("unpack", values(t))), t)[1]):
            y = x.exp()            # saves its result
            z = Square.apply(y)    # saves its input through ctx
        z.sum().backward()
        return log, values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def test_hooks_can_store_something_else():
    """A pack hook may return any object; the unpack hook rebuilds the tensor from it."""
    def scenario(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(), lambda a: lib.from_numpy(a)):
            y = (x * x).sin()
        y.sum().backward()
        return values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def test_innermost_hooks_apply():
    def scenario(lib):
        log = []
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (log.append("outer"), t)[1], lambda t: t):
            y = x.exp()
            with lib.autograd.graph.saved_tensors_hooks(lambda t: (log.append("inner"), t)[1], lambda t: t):
                z = y.sin()
        (z + y).sum().backward()
        return log, values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def test_hook_errors():
    def modifies(lib):
        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
            (a * 2).exp()

    def not_a_tensor(lib):
        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 5, lambda t: 5):
            y = a.exp()
        y.sum().backward()

    def disabled(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

    def disabled_inside(lib):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with lib.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
                pass

    for scenario in (modifies, not_a_tensor, disabled, disabled_inside):
        assert outcome(lambda s=scenario: s(retrograd)) == outcome(lambda s=scenario: s(torch))


def test_save_on_cpu_gives_the_same_gradients():
    def scenario(lib):
        x = lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.save_on_cpu():
            y = (x @ x).tanh() * x
        y.sum().backward()
        return values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def test_freed_graph_with_hooks_raises_torchs_error():
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (x * x).sum()
        y.backward()
        y.backward()

    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


def test_node_hooks_and_prehooks():
    def scenario(lib):
        log = []
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = x * 2
        z = y.exp()
        h1 = z.grad_fn.register_prehook(lambda grad_outputs: (log.append(("pre", values(grad_outputs[0]))),
                                                              (grad_outputs[0] * 10,))[1])
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (
            log.append(("post", values(grad_inputs[0]), values(grad_outputs[0]))), (grad_inputs[0] + 1, None))[1])
        z.sum().backward(retain_graph=True)
        first = values(x.grad)
        h1.remove()
        x.grad = None
        z.sum().backward()
        return log, first, values(x.grad), z.grad_fn.name(), isinstance(z.grad_fn, lib.autograd.graph.Node)

    assert scenario(retrograd) == scenario(torch)


def test_gradient_edge_and_increment_version():
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        edge = lib.autograd.graph.get_gradient_edge(y)
        leaf_edge = lib.autograd.graph.get_gradient_edge(x)
        lib.autograd.graph.increment_version(y)
        return (edge.node is y.grad_fn, edge.output_nr, leaf_edge.node.name(),
                outcome(lambda: y.sum().backward())[0])

    assert scenario(retrograd) == scenario(torch)


def test_gradient_edge_of_a_tensor_without_grad():
    assert outcome(lambda: retrograd.autograd.graph.get_gradient_edge(retrograd.ones(2))) == \
        outcome(lambda: torch.autograd.graph.get_gradient_edge(torch.ones(2)))


@pytest.mark.parametrize("create_graph", [False, True])
def test_hooks_and_double_backward(create_graph):
    def scenario(lib):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (x ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=create_graph)
        return values(g), g.requires_grad

    assert scenario(retrograd) == scenario(torch)


def test_node_hook_returning_the_wrong_number_of_gradients():
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0],))
        y.sum().backward()

    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


@pytest.mark.parametrize("method", ["exp_", "tanh_", "sigmoid_"])
def test_saved_hooks_unpack_the_result_of_an_inplace_op(method):
    """An in-place op that saves its result (exp_: grad * result) packs it once and unpacks it once, as torch
    does: taking over the written tensor must not drop what the hooks packed."""
    def scenario(lib):
        calls = []
        x = lib.tensor([0.5, 1.0, -2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: calls.append("pack") or t,
                                                    lambda t: calls.append("unpack") or t):
            y = getattr(x.clone(), method)()
        y.sum().backward()
        return calls, x.grad.tolist()

    ours, theirs = scenario(retrograd), scenario(torch)
    assert ours[0] == theirs[0] == ["pack", "unpack"]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
