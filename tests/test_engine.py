"""The engine against torch: queued callbacks, reentrant backward, GradientEdges as outputs and
inputs, multi-grad hooks, the order and values of hooks, retain_grad across in-place ops, the
legacy Variable and the errors of grad(), backward() and tensor attributes."""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

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


def both(scenario):
    assert scenario(retrograd) == scenario(torch)


# ---- callbacks and reentrant backward ---------------------------------------------------------

def test_queued_callbacks_run_at_the_end_of_their_backward():
    """A callback runs after every node of the backward that queued it, callbacks queued by callbacks
    too, and one queued in a reentrant backward runs when that inner backward ends."""
    def scenario(lib):
        log = []

        def queue(fn):
            lib.autograd.Variable._execution_engine.queue_callback(fn)

        class Inner(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                log.append("inner backward")
                queue(lambda: log.append("inner callback"))
                return g

        class Outer(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                log.append("outer backward")
                queue(lambda: (log.append("outer callback"), queue(lambda: log.append("queued by a callback"))))
                leaf = g.detach().requires_grad_()
                with lib.enable_grad():
                    Inner.apply(leaf).sum().backward()
                log.append("after the inner backward")
                return g * 2

        x = lib.ones(2, requires_grad=True)
        (Outer.apply(x) * 3).sum().backward()
        return log, values(x.grad), outcome(lambda: queue(lambda: None))

    both(scenario)


@pytest.mark.parametrize("depth", [5, 100])
def test_deep_reentrant_backward(depth):
    """Each level's backward runs another backward; past the engine's depth limit the inner ones run on
    a fresh thread, with the caller's grad mode, and the results are the same."""
    def scenario(lib):
        levels = []

        class Reenter(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                with lib.enable_grad():
                    ctx.x = lib.autograd.Variable(x.detach(), requires_grad=True) - 1
                return ctx.x.detach()

            @staticmethod
            def backward(ctx, g):
                levels.append(lib.is_grad_enabled())
                if ctx.x < 0:
                    return g
                with lib.enable_grad():
                    Reenter.apply(ctx.x).sum().backward()
                return g * 2

        v = lib.tensor(float(depth), requires_grad=True)
        Reenter.apply(v).sum().backward()
        return len(levels), set(levels), values(v.grad)

    both(scenario)


def test_reentrant_error_reaches_the_caller_from_a_fresh_thread():
    def scenario(lib):
        class Fail(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                raise ValueError("deep failure")

        class Reenter(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, n):
                ctx.n = n
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                leaf = g.detach().requires_grad_()
                with lib.enable_grad():
                    inner = Reenter.apply(leaf, ctx.n - 1) if ctx.n else Fail.apply(leaf)
                inner.sum().backward()
                return g, None

        x = lib.ones(1, requires_grad=True)
        return outcome(lambda: Reenter.apply(x, 40).sum().backward())

    both(scenario)


# ---- Variable and the multithreading flag ---------------------------------------------------

def test_variable_makes_tensors():
    def scenario(lib):
        Variable = lib.autograd.Variable  # noqa: N806 - torch's name
        x = lib.ones(2)
        v = Variable(x, requires_grad=True)
        x.add_(1)  # the same memory and version counter
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            volatile = Variable(x, volatile=True)
        return (type(v) is lib.Tensor, isinstance(x, Variable), isinstance(3, Variable), values(v), v._version,
                v.requires_grad, v.is_leaf, Variable(x * 2).requires_grad, values(Variable()), values(volatile),
                [str(w.message) for w in caught], outcome(lambda: Variable(3)),
                outcome(lambda: Variable(lib.ones(2, dtype=lib.int64), requires_grad=True)))

    both(scenario)


def test_set_multithreading_enabled():
    def scenario(lib):
        seen = []
        with lib.autograd.set_multithreading_enabled(False):
            seen.append(lib.autograd.is_multithreading_enabled())
            lib.autograd.set_multithreading_enabled(True)
            seen.append(lib.autograd.is_multithreading_enabled())
        seen.append(lib.autograd.is_multithreading_enabled())
        lib.autograd.set_multithreading_enabled(False)
        seen.append(lib.autograd.is_multithreading_enabled())
        other = []
        thread = threading.Thread(target=lambda: other.append(lib.autograd.is_multithreading_enabled()))
        thread.start()
        thread.join()
        lib.autograd.set_multithreading_enabled(True)
        return seen, other, lib.autograd.is_multithreading_enabled()

    both(scenario)


# ---- GradientEdge -----------------------------------------------------------------------------

def test_grad_and_backward_to_gradient_edges():
    """An edge stands for the tensor it was taken from, even after an in-place op moved the tensor on."""
    def scenario(lib):
        GradientEdge = lib.autograd.graph.GradientEdge  # noqa: N806
        get_edge = lib.autograd.graph.get_gradient_edge
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        x = leaf.clone()
        old_x = get_edge(x)
        x *= 3
        y = lib.tensor([0.5, 4.0], requires_grad=True)
        out = (x * y).sum()
        by_edge = lib.autograd.grad(out, (old_x, x, get_edge(leaf), GradientEdge(y.grad_fn, 0) if y.grad_fn else
                                          get_edge(y)), retain_graph=True)
        lib.autograd.backward(out, inputs=(old_x, y))
        unused = lib.tensor([1.0, 1.0], requires_grad=True).clone()
        materialized = outcome(lambda: lib.autograd.grad((x * 2).sum(), (get_edge(unused), x), allow_unused=True,
                                                         materialize_grads=True))
        return ([values(g) for g in by_edge], values(leaf.grad), values(y.grad), materialized,
                type(old_x).__name__, old_x.node.name(), old_x.output_nr)

    both(scenario)


def test_gradient_edge_as_an_output():
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        tmp = x.sin().cos()
        total = tmp.sum()
        out = total.exp().sin().sum()
        edge, total_edge = lib.autograd.graph.get_gradient_edge(tmp), lib.autograd.graph.get_gradient_edge(total)
        (g_tmp,) = lib.autograd.grad(out, (edge,), retain_graph=True)
        (g_x,) = lib.autograd.grad(edge, (x,), grad_outputs=(g_tmp,), retain_graph=True)
        (g_ref,) = lib.autograd.grad(out, (x,), retain_graph=True)
        (g_scalar,) = lib.autograd.grad(total_edge, (x,), retain_graph=True)
        errors = [outcome(lambda: lib.autograd.grad(edge, (x,), retain_graph=True)),
                  outcome(lambda: lib.autograd.grad(edge, (x,), grad_outputs=lib.ones(4, dtype=lib.float64),
                                                    retain_graph=True)),
                  outcome(lambda: lib.autograd.grad(edge, (x,), grad_outputs=lib.ones(2, dtype=lib.complex128),
                                                    retain_graph=True))]
        return values(g_x), values(g_ref), values(g_scalar), errors

    both(scenario)


def test_hand_made_gradient_edge_as_an_output():
    """GradientEdge(node, nr) built by hand works as an output with its gradient given; retrograd's
    one-output op nodes keep no output shape (Note [edge metadata]), so its implicit gradient is refused."""
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    edge = retrograd.autograd.graph.GradientEdge(y.grad_fn, 0)
    (g,) = retrograd.autograd.grad(edge, (x,), grad_outputs=(retrograd.tensor([1.0, 0.5]),), retain_graph=True)
    assert values(g) == [3.0, 1.5]
    with pytest.raises(RuntimeError, match="get_gradient_edge"):
        retrograd.autograd.grad(retrograd.autograd.graph.GradientEdge((x * 2).sum().grad_fn, 0), (x,))


# ---- multi-grad hooks -------------------------------------------------------------------------

def test_multi_grad_hook_all_and_any():
    def scenario(lib):
        ts = [lib.rand(2, requires_grad=True) for _ in range(4)]
        seen = []
        handle = lib.autograd.graph.register_multi_grad_hook(ts, lambda gs: seen.append([g is not None for g in gs]))
        any_seen = []
        lib.autograd.graph.register_multi_grad_hook(ts, lambda g: any_seen.append(values(g) is not None), mode="any")
        out = (ts[1] * ts[2]).sum()
        out.backward(retain_graph=True)
        out.backward(inputs=(ts[1],), retain_graph=True)
        leaf_error = outcome(lambda: lib.autograd.grad(out, (ts[2], ts[3]), allow_unused=True, retain_graph=True))
        handle.remove()
        out.backward(retain_graph=True)
        return (seen, any_seen, leaf_error,
                outcome(lambda: lib.autograd.graph.register_multi_grad_hook(ts, print, mode="foo")))

    both(scenario)


def test_multi_grad_hook_counts_each_thread_s_backward_apart():
    def scenario(lib):
        ts = [lib.rand(2, requires_grad=True) for _ in range(3)]
        calls = []
        lock = threading.Lock()

        def hook(grads):
            with lock:
                calls.append([g is not None for g in grads])

        lib.autograd.graph.register_multi_grad_hook(ts, hook)
        out = (ts[0] * ts[1]).sum()
        threads = [threading.Thread(target=lambda: out.backward(inputs=(ts[0], ts[1]), retain_graph=True))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return calls

    both(scenario)


# ---- hooks: order and values --------------------------------------------------------------------

def test_hook_order_around_accumulation_and_module_hooks():
    """torch's order: accumulators as soon as their gradient is complete; on each, the tensor hooks,
    the node's pre-hooks, the accumulation with its post-accumulate hooks, then the node's post-hooks."""
    def scenario(lib):
        lib.manual_seed(0)
        order = []
        x = lib.randn(4, 3, requires_grad=True)
        module = lib.nn.Linear(3, 2)
        module.register_full_backward_hook(lambda *_: order.append("module hook"))
        loss = module(x).sum()
        stack, count = [loss.grad_fn], 0
        while stack:
            node = stack.pop()
            count += 1
            label = f"{node.name()}_{count}"
            node.register_prehook(lambda _, label=label: order.append(f"pre {label}"))
            node.register_hook(lambda _1, _2, label=label: order.append(f"post {label}"))
            stack.extend(n for n, _ in reversed(node.next_functions) if n is not None)
        for name, t in [("x", x), ("weight", module.weight), ("bias", module.bias)]:
            t.register_hook(lambda _, name=name: order.append(f"tensor hook {name}"))
            t.register_post_accumulate_grad_hook(lambda _, name=name: order.append(f"post-accumulate {name}"))
        loss.backward()
        return order

    both(scenario)


def test_accumulator_hooks_change_the_stored_gradient_in_torchs_order():
    def scenario(lib):
        t = lib.tensor([1.0, 2.0], requires_grad=True)
        acc = t.view_as(t).grad_fn.next_functions[0][0]
        t.register_hook(lambda g: g.sub(2.0))
        acc.register_prehook(lambda gs: (gs[0].div(5.0),))

        def post_accumulate(tensor):
            tensor.grad.add_(0.5)

        t.register_post_accumulate_grad_hook(post_accumulate)
        acc.register_hook(lambda grad_in, grad_out: setattr(t, "grad", grad_out[0].mul(10)))
        t.sum().backward()
        bad = lib.rand(2, requires_grad=True)
        bad.register_post_accumulate_grad_hook(lambda tensor: tensor.grad)
        wrong = lib.rand(2, requires_grad=True)
        wrong.register_hook(lambda g: 1)
        return (values(t.grad), outcome(lambda: bad.sum().backward()),
                outcome(lambda: wrong.sum().backward()))

    both(scenario)


def test_grad_runs_tensor_hooks_of_inputs_but_not_their_nodes():
    """autograd.grad hands over a wanted input's gradient: tensor hooks run (and change it) when the
    input's node is not otherwise needed; when it is, the gradient is taken before any hook."""
    def scenario(lib):
        log = []
        a = lib.tensor(1.0, requires_grad=True)
        b = a * 2
        c = b * 2
        b.register_hook(lambda g: (log.append(("tensor hook b", values(g))), g * 10)[1])
        b.grad_fn.register_prehook(lambda gs: (log.append(("prehook", values(gs[0]))), (gs[0] * 3,))[1])
        b.grad_fn.register_hook(lambda gi, go: log.append("posthook"))
        a.register_hook(lambda g: (log.append(("tensor hook a", values(g))), g * 7)[1])
        acc = b.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda gs: log.append("accumulator prehook"))
        acc.register_hook(lambda gi, go: log.append(("accumulator posthook", len(gi), len(go))))
        results = []
        for call in (lambda: lib.autograd.grad(c, (b,), retain_graph=True),
                     lambda: lib.autograd.grad(c, (a, b), retain_graph=True),
                     lambda: c.backward(retain_graph=True),
                     lambda: c.backward(inputs=(b,), retain_graph=True)):
            log.clear()
            got = call()
            results.append((None if got is None else [values(g) for g in got], list(log), values(a.grad),
                            b.retains_grad, values(b.grad) if b.retains_grad else None))
        return results

    both(scenario)


def test_tensor_hooks_see_missing_gradients_of_multi_output_nodes():
    def scenario(lib):
        seen = []
        x = lib.randn(4, requires_grad=True)
        parts = x.unbind()
        parts[0].register_hook(lambda g: seen.append(values(g)))
        parts[0].backward()
        parts[2].backward()
        return seen, values(x.grad), parts[0].retains_grad

    both(scenario)


def test_prehooks_run_after_tensor_hooks():
    def scenario(lib):
        log = []

        def tensor_hook(g):
            log.append(1)
            return g * 3

        def node_prehook(gs):
            log.append(2)
            return tuple(g * 2 for g in gs)

        a = lib.tensor(1.0, requires_grad=True)
        b = a.clone()
        b.grad_fn.register_prehook(node_prehook)
        b.register_hook(tensor_hook)
        b.grad_fn.register_prehook(node_prehook)
        acc = b.grad_fn.next_functions[0][0]
        a.register_hook(tensor_hook)
        acc.register_prehook(node_prehook)
        a.register_hook(tensor_hook)
        b.sum().backward(retain_graph=True)
        first = (list(log), values(a.grad))
        log.clear()
        grads = lib.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
        second = (list(log), values(grads[0]))
        log.clear()
        b.sum().backward(inputs=(b,))
        return first, second, list(log), values(b.grad)

    both(scenario)


def test_retain_grad_follows_in_place_ops():
    def scenario(lib):
        a = lib.tensor([1.0], requires_grad=True).clone()
        a.retain_grad()
        a.mul_(2)
        a.mul_(2)
        a.sum().backward()
        base = lib.tensor([1.0], requires_grad=True).clone()
        view, view2 = base[:], base[:]
        view.retain_grad()
        view2.retain_grad()
        view.mul_(2)
        (view + view2).sum().backward()
        b = lib.rand(3, 3, requires_grad=True)
        var, mean = lib.var_mean(b, dim=0)
        var.retain_grad()
        mean.retain_grad()
        var.mul_(2)
        (var + mean).sum().backward()
        return values(a.grad), values(view.grad), values(view2.grad), values(var.grad), values(mean.grad)

    both(scenario)


def test_reading_a_non_leafs_grad_warns_in_torchs_words():
    """The warning's text is torch's up to where torch adds its C++ source location."""
    def scenario(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grad = (lib.ones(2, requires_grad=True) * 2).grad
        return grad, [(w.category.__name__, str(w.message).split(" (Triggered internally")[0]) for w in caught]

    both(scenario)


# ---- errors and attributes ------------------------------------------------------------------------

def test_backward_and_grad_errors():
    def scenario(lib):
        a = lib.zeros(1, requires_grad=True)
        b = a * 0.5j
        x = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        y = x ** 2
        s = lib.tensor(0.5, requires_grad=True)
        ds = lib.autograd.grad(s * s, s, create_graph=True)
        return [outcome(lambda: b.backward()), outcome(lambda: lib.autograd.grad(b, a)),
                outcome(lambda: lib.autograd.grad(x.clone(), (x,), (lib.ones(2, 2),), is_grads_batched=True)),
                outcome(lambda: lib.autograd.grad(x.sum(), [])), outcome(lambda: x.sum().backward(inputs=[])),
                outcome(lambda: lib.autograd.grad(x.sum(), x, 3)),
                outcome(lambda: lib.autograd.grad(x.sum(), x, allow_unused=False, materialize_grads=True)),
                outcome(lambda: y.grad_fn(x.detach(), x.detach())), outcome(lambda: y.grad_fn()),
                values(y.grad_fn(lib.ones(2, 2))),
                values(lib.autograd.grad(ds, s, create_graph=True, allow_unused=True, materialize_grads=True)[0]),
                outcome(lambda: lib.autograd.grad(x.sum(), {"x": x}, retain_graph=True)["x"].shape)]

    both(scenario)


def test_tensor_attribute_errors_and_deletion():
    def scenario(lib):
        x = lib.randn(3, requires_grad=True)
        x.sum().backward()
        results = []
        del x.grad
        results.append(x.grad)

        def attempt(code):
            return outcome(lambda: exec(code, {"x": x, "lib": lib}))

        for code in ["del x.data", "x.data = None", "del x.requires_grad", "x.requires_grad = 1",
                     "del x._grad_fn", "del x._backward_hooks", "x.data = lib.tensor([1, 2, 3])",
                     "x._grad_fn = 1"]:
            results.append(attempt(code))
        y = x * 2
        results.append(y._grad_fn.name())
        y._grad_fn = None
        results.append((y.requires_grad, y.grad_fn))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.append(x.volatile)
            x.volatile = True
        results.append([str(w.message) for w in caught])
        results.append(lib.autograd.torch.is_tensor(x))
        return results

    both(scenario)


def test_backward_hooks_dict():
    """Tensor._backward_hooks holds the register_hook hooks; code may replace it or set None."""
    def scenario(lib):
        log = []
        leaf = lib.randn(3, requires_grad=True)
        before = leaf._backward_hooks
        leaf.register_hook(lambda g: log.append("registered"))
        mid = leaf * 2
        mid.register_hook(lambda g: log.append("mid"))
        kinds = (before, isinstance(leaf._backward_hooks, OrderedDict), len(mid._backward_hooks))
        replaced = OrderedDict()
        leaf._backward_hooks = replaced
        leaf._backward_hooks["mine"] = lambda g: log.append("replaced")
        mid._backward_hooks = None  # the node keeps the dict it had: "mid" still runs
        mid.register_hook(lambda g: log.append("mid again"))
        moved = lib.randn(3, requires_grad=True) * 1
        moved.register_hook(lambda g: log.append("before the in-place op"))
        moved.mul_(2)
        in_place = moved._backward_hooks
        moved.register_hook(lambda g: log.append("after the in-place op"))
        plain = lib.randn(3)
        plain._backward_hooks = OrderedDict(never=lambda g: log.append("never"))
        (mid + plain + moved).sum().backward()
        return kinds, log, leaf._backward_hooks is replaced, len(mid._backward_hooks), in_place

    both(scenario)


def test_anomaly_reports_nodes_made_in_backward():
    """A node made by a backward without anomaly mode has no forward information; one made with it
    names the node whose backward made it; a warning turned into an error is printed instead."""
    def scenario(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.clone() / 0

        class Outer(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sum(0, keepdim=True)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return Twice.apply(g.expand(3) * x)

        reports = []
        for anomaly_in_forward in (False, True):
            x = lib.ones(3, requires_grad=True)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                with lib.autograd.set_detect_anomaly(anomaly_in_forward):
                    (gx,) = lib.autograd.grad(Outer.apply(x), (x,), create_graph=True)
                error = outcome(lambda: _backward_with_anomaly(lib, gx.sum()))
            reports.append((error, [str(w.message).split(" Traceback")[0].split(" (Triggered")[0]
                                    for w in caught if w.category is UserWarning]))
        return reports

    both(scenario)


def _backward_with_anomaly(lib, loss):
    with lib.autograd.detect_anomaly():
        loss.backward()


def test_resize_function():
    def scenario(lib):
        import importlib

        functions = importlib.import_module(f"{lib.__name__}.autograd._functions")
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = functions.Resize.apply(x, (3, 2))
        (y * lib.arange(6.0).view(3, 2)).sum().backward()
        return y.grad_fn.name(), values(y), values(x.grad), outcome(lambda: functions.Resize.apply(x, (4,)))

    both(scenario)


def test_views_follow_their_leaf_requires_grad():
    """A view taken before its base required grad requires grad with it, has no accumulator (its
    gradients stop there) and refuses in-place ops; it follows the base back to False too."""
    def scenario(lib):
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        b = a[:]
        before = b.requires_grad
        a.requires_grad = True
        c = b * 2
        c.sum().backward()
        refused = outcome(lambda: b.add_(5))
        a.requires_grad_(False)
        return (before, b.requires_grad, b.is_leaf, [n for n, _ in c.grad_fn.next_functions], a.grad, refused,
                b.requires_grad, outcome(lambda: b.add_(1) is b))

    both(scenario)


def test_hooks_of_a_view_modified_in_place():
    """An in-place op on a view reads the view's gradient from its base's history, as torch's
    CopySlices does: hooks registered on the view before the op run only for what other consumers
    of the old view send; the view's new history takes new hooks."""
    def scenario(lib):
        log = []
        base = lib.tensor([1.0, 2.0], requires_grad=True).clone()
        view, view2 = base[:1], base[:]
        used_before = view * 3
        view.register_hook(lambda g: log.append(("view, before", values(g))))
        view2.register_hook(lambda g: log.append(("view2, before", values(g))))
        view.mul_(2)
        view2.grad_fn  # torch regenerates a view's history when it is read (here it was regenerated by mul_)
        view2.register_hook(lambda g: log.append(("view2, after", values(g))))
        (view.sum() + view2.sum() * 5 + used_before.sum()).backward()
        return log  # independent branches run in torch's order, the node made last first (Note [execution order])

    both(scenario)


def test_gradients_not_asked_for_are_not_computed():
    """Note [gradients not asked for]: autograd.grad(out, [x]) runs no formula for another input that requires
    grad; igamma has no derivative for `a` (torch raises there), so asking only for x's must work as in torch, and
    a node's post-hook sees None for the input not asked for, as torch's does."""
    def run(lib):
        a = lib.tensor([1.5, 2.0], dtype=lib.float64, requires_grad=True)
        x = lib.tensor([0.5, 3.0], dtype=lib.float64, requires_grad=True)
        y = lib.igamma(a, x) * a
        seen = []
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append([g is None for g in grad_inputs]))
        (gx,) = lib.autograd.grad(y.sum(), [x])
        return gx.detach().numpy(), seen

    got, expected = run(retrograd), run(torch)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12)
    assert got[1] == expected[1] == [[False, True]]
    with pytest.raises(NotImplementedError):  # asked for, a's gradient still raises as torch's does
        a = retrograd.tensor([1.5], dtype=retrograd.float64, requires_grad=True)
        retrograd.autograd.grad(retrograd.igamma(a, retrograd.tensor([0.5], dtype=retrograd.float64)).sum(), [a])


# ---- sequence numbers and execution order (Note [sequence numbers], Note [execution order]) ------------

def test_nodes_are_numbered_in_the_order_they_are_made():
    """Each node takes the next number as it is made, custom Functions' too; a leaf's accumulator carries
    UINT64_MAX; `_set_sequence_nr` renumbers. Compared as differences, as each library counts from where it is."""
    def scenario(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a.exp()
        nodes = [b.grad_fn, (b * a).grad_fn, Twice.apply(b).grad_fn, b[0].grad_fn, b.sum().grad_fn]
        first = nodes[0]._sequence_nr()
        accumulator = b.grad_fn.next_functions[0][0]
        nodes[1]._set_sequence_nr(first + 100)
        return [node._sequence_nr() - first for node in nodes], accumulator._sequence_nr()

    both(scenario)


def test_ready_nodes_run_newest_first():
    """Among the nodes whose gradients are complete, the one made last runs first, whatever the order of the
    roots or of a node's inputs: hooks fire, and gradients meeting at a leaf are summed, in torch's order."""
    def scenario(lib):
        log = []
        a = lib.tensor(1.5, requires_grad=True)
        outs = [a.sin(), a.cos(), a.exp(), a * 3]
        for name, out in zip("sin cos exp mul".split(), outs):
            out.register_hook(lambda g, name=name: log.append(name))
        mixed = outs[1] + outs[3] * outs[0]  # inputs used out of the order they were made
        lib.autograd.backward([outs[2], mixed, outs[0]], [lib.tensor(1.0)] * 3)
        return log, values(a.grad)

    both(scenario)


def test_double_backward_through_an_in_place_op_on_a_freed_view():
    """A view's in-place op saved its result; once the view is gone the result unpacks with the op's own node.
    Its base's CopySlices, made after that node, runs first in the double backward, as in torch."""
    def scenario(lib, op):
        a = lib.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=lib.float64, requires_grad=True)
        b = a * 1
        view = b[0]
        getattr(view, op)()
        del view
        (g,) = lib.autograd.grad((b ** 2).sum(), a, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), a)
        return h.detach().numpy()

    for op in ("relu_", "sigmoid_", "tanh_", "exp_"):
        np.testing.assert_allclose(scenario(retrograd, op), scenario(torch, op), rtol=1e-12)


def test_gradients_meeting_at_a_node_are_summed_without_touching_what_others_hold():
    """The engine adds a second gradient into the first one's memory only when nothing else refers to it
    (graph.sum_gradients): a gradient a custom backward also keeps keeps its value, and the sums are torch's."""
    def run(lib):
        kept = []

        class Keep(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                out = g * 2
                kept.append((out, out.detach().clone()))
                return out

        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * 1.5  # its node receives three gradients, the first one kept by Keep (made last, it runs first)
        (y * 4 + lib.sin(y) + Keep.apply(y) * 3).sum().backward()
        assert all(lib.equal(value, copy) for value, copy in kept)
        return x.grad.numpy()

    np.testing.assert_allclose(run(retrograd), run(torch), rtol=1e-6)
