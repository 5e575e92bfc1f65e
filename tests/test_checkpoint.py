"""utils.checkpoint against torch: the same values, gradients and node names, recomputation in
backward (counted), the RNG replayed, torch's determinism error, and the memory it saves
(measured with tracemalloc)."""

from __future__ import annotations

import contextlib
import gc
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6))
W1 = RNG.standard_normal((6, 8))
W2 = RNG.standard_normal((8, 3))


def leaves(lib):
    return [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (X, W1, W2)]


def block(x, w1, w2):
    return ((x @ w1).tanh() @ w2).sigmoid()


def values(t):
    return np.round(t.detach().numpy(), 10).tolist()


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_values_gradients_and_node_names_match_torch(use_reentrant):
    def scenario(lib):
        x, w1, w2 = leaves(lib)
        calls = []

        def counted(*args):
            calls.append(1)
            return block(*args)

        y = lib.utils.checkpoint.checkpoint(counted, x, w1, w2, use_reentrant=use_reentrant)
        forward_calls = len(calls)
        (y * y).sum().backward()
        return (values(y), y.grad_fn.name(), forward_calls, len(calls),
                [values(t.grad) for t in (x, w1, w2)])

    ours, theirs = scenario(retrograd), scenario(torch)
    assert ours == theirs
    assert ours[2:4] == (1, 2)  # run once forward, once more in backward


def test_the_random_draws_of_the_first_run_are_replayed():
    def dropout_like(x):
        return x * (retrograd.rand(x.shape, dtype=x.dtype) > 0.5)

    x = retrograd.tensor(X, requires_grad=True)
    y = retrograd.utils.checkpoint.checkpoint(dropout_like, x, use_reentrant=False)
    mask = (y != 0).double()
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), mask.numpy())


def test_default_use_reentrant_warns_as_torch():
    def scenario(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), leaves(lib)[0])
        return y.grad_fn.name(), [str(w.message) for w in caught]

    assert scenario(retrograd) == scenario(torch)


def test_no_input_requires_grad_warns():
    def scenario(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), lib.ones(3), use_reentrant=True)
        return y.requires_grad, [str(w.message) for w in caught]

    assert scenario(retrograd) == scenario(torch)


@pytest.mark.parametrize("first,again", [
    (lambda t: t.sin(), lambda t: t.sin().exp()),      # more saved on recomputation: torch stops early, no error
    (lambda t: t.sin().exp(), lambda t: t.sin()),      # fewer
    (lambda t: t.sin(), lambda t: t[:2].sin()),        # other shapes
])
def test_recomputation_that_saves_differently_is_refused(first, again):
    def scenario(lib):
        state = {"calls": 0}

        def unstable(t):
            state["calls"] += 1
            return first(t) if state["calls"] == 1 else again(t)

        y = lib.utils.checkpoint.checkpoint(unstable, leaves(lib)[0], use_reentrant=False)
        try:
            y.sum().backward()
        except RuntimeError as e:
            return type(e).__name__, str(e).split("\n\n")[0]
        return "no error"

    assert scenario(retrograd) == scenario(torch)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential(use_reentrant):
    def scenario(lib):
        lib.manual_seed(0)
        layers = [lambda t: t.tanh(), lambda t: t * 2, lambda t: t.sin(), lambda t: t.exp(), lambda t: t - 1]
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint_sequential(layers, 2, x, use_reentrant=use_reentrant)
        y.sum().backward()
        return values(y), values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def deep(x, depth=30):
    for _ in range(depth):
        x = (x * 1.0001).sin()
    return x


def retained_bytes(run) -> int:
    """Bytes still allocated after run() returns (what the graph keeps alive for backward)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = run()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def test_checkpoint_saves_memory():
    """A 30-layer chain of 256x256 float64 activations: without checkpoint the graph keeps every
    intermediate alive until backward; with it, only the input and output remain."""
    x = retrograd.tensor(RNG.standard_normal((256, 256)), requires_grad=True)
    plain = retained_bytes(lambda: deep(x))
    saved = retained_bytes(lambda: retrograd.utils.checkpoint.checkpoint(deep, x, use_reentrant=False))
    activation = 256 * 256 * 8
    assert plain > 30 * activation  # the graph holds the saved intermediates
    assert saved < 3 * activation   # the output, and small bookkeeping
    y = retrograd.utils.checkpoint.checkpoint(deep, x, use_reentrant=False)
    y.sum().backward()
    g = x.grad.clone()
    x.grad = None
    deep(x).sum().backward()
    assert np.allclose(g.numpy(), x.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_context_fn_wraps_both_runs():
    import contextlib

    log = []

    def context_fn():
        @contextlib.contextmanager
        def tag(name):
            log.append(f"enter {name}")
            yield
            log.append(f"exit {name}")

        return tag("forward"), tag("recompute")

    def scenario(lib):
        log.clear()
        x = lib.tensor(X, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False, context_fn=context_fn)
        y.backward()
        return list(log), values(x.grad)

    assert scenario(retrograd) == scenario(torch)


# ---- nested checkpoints, early stop, backward inside the checkpoint -----------------------------

def nested_scenarios(lib, early_stop):
    """Checkpoints nested in each other and in autograd.grad, around a function that does or does not
    run backward itself: values, gradients, and how often each function started and finished (which
    shows every recomputation and where early stop cut it)."""
    calls: dict = {}

    def c(fn):
        return lambda x: lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)

    def grad(fn):
        def wrapper(x):
            with lib.enable_grad():
                (g,) = lib.autograd.grad(fn(x), (x,), create_graph=True)
            return g

        return wrapper

    def counted(name, body):
        def fn(x):
            calls[name] = calls.get(name, 0) + 1
            out = body(x)
            calls[name + " finished"] = calls.get(name + " finished", 0) + 1
            return out

        return fn

    def with_inner_backward(x):
        a = x.sin().exp().sin()
        lib.autograd.grad(a, x)
        return x.sin()

    results = []
    with lib.utils.checkpoint.set_checkpoint_early_stop(early_stop):
        for name, body in [("plain", lambda x: x.sin().exp().sin()), ("inner backward", with_inner_backward)]:
            f = counted(name, body)
            for wrapped in (c(f), c(c(f)), grad(c(f)), grad(c(c(f))), grad(c(grad(c(f)))), c(grad(grad(c(f))))):
                x = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
                calls.clear()
                y = wrapped(x)
                forward_calls = dict(calls)
                y.backward()
                results.append((round(y.item(), 12), round(x.grad.item(), 12), forward_calls, dict(calls)))
    return results


@pytest.mark.parametrize("early_stop", [True, False])
def test_nested_checkpoints_recompute_as_torch(early_stop):
    assert nested_scenarios(retrograd, early_stop) == nested_scenarios(torch, early_stop)


def test_early_stop_is_fixed_when_the_checkpoint_runs_forward():
    def scenario(lib):
        finished = []

        def fn(x):
            y = x.sin().cos()
            finished.append(1)
            return y.clone()

        counts = []
        for early_stop in (True, False):
            x = lib.tensor(1.0, requires_grad=True)
            with lib.utils.checkpoint.set_checkpoint_early_stop(early_stop):
                y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
            finished.clear()
            y.backward()  # outside the context manager: its value at forward counts
            counts.append(len(finished))
        return counts

    assert scenario(retrograd) == scenario(torch) == [0, 1]


@pytest.mark.parametrize("debug", [False, True])
def test_graphs_with_checkpoints_are_freed_by_reference_counting(debug):
    """No reference cycle through the checkpoint's frame, holders, hooks or debug log: the graph dies
    as soon as the last tensor goes (torch's check_graph_dies, without gc)."""
    class Marker:
        pass

    def scenario(lib, debug):
        x = lib.tensor(0.3, requires_grad=True)

        def fn(t):
            inner = lib.utils.checkpoint.checkpoint(lambda u: u.sin().exp(), t * 2, use_reentrant=False, debug=debug)
            return inner.cos()

        y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, debug=debug)
        lib.autograd.grad(y, x, create_graph=True)
        refs, node = [], y.grad_fn
        while node is not None:
            marker = Marker()
            node.metadata["marker"] = marker
            refs.append(weakref.ref(marker))
            node = next((n for n, _ in node.next_functions if n is not None and n.next_functions), None)
        del y, node, marker
        return len(refs), sum(r() is not None for r in refs)

    ours = scenario(retrograd, debug)
    # torch's debug mode logs through LoggingTensorMode, whose records upset pytest's log capture in
    # later tests, so torch runs this graph without it
    assert ours == scenario(torch, False)
    assert ours[0] > 0 and ours[1] == 0


# ---- errors ------------------------------------------------------------------------------------

def make_unpack_twice(lib):
    class ReadsSavedTwice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors
            ctx.saved_tensors
            return g * 2

    return ReadsSavedTwice


def flaky(lib, first, again):
    """A function that saves differently the second time it runs (the recomputation)."""
    runs = []

    def fn(t):
        runs.append(1)
        return first(t) if len(runs) == 1 else again(t)

    return fn


@contextlib.contextmanager
def swallows_errors():
    try:
        yield
    except ZeroDivisionError:
        pass


def two_nullcontexts():
    return contextlib.nullcontext(), contextlib.nullcontext()


def more_saved_without_early_stop(lib, cp, x):
    with cp.set_checkpoint_early_stop(False):
        y = cp.checkpoint(flaky(lib, lambda t: t.sin(), lambda t: t.sin().exp()), x, use_reentrant=False)
    y.sum().backward()


CHECKPOINT_ERRORS = {
    "reentrant under autograd.grad": lambda lib, cp, x: lib.autograd.grad(
        cp.checkpoint(lambda t: t.exp(), x, use_reentrant=True).sum(), x),
    "reentrant under backward(inputs=)": lambda lib, cp, x: cp.checkpoint(
        lambda t: t.exp(), x, use_reentrant=True).sum().backward(inputs=[x]),
    "saved tensor unpacked twice": lambda lib, cp, x: cp.checkpoint(
        lambda t: make_unpack_twice(lib).apply(t.sin()), x, use_reentrant=False).sum().backward(),
    "more saved without early stop": more_saved_without_early_stop,
    "fewer saved, determinism_check='none'": lambda lib, cp, x: cp.checkpoint(
        flaky(lib, lambda t: t.sin().exp(), lambda t: t.sin()), x, use_reentrant=False,
        determinism_check="none").sum().backward(),
    "unknown determinism_check": lambda lib, cp, x: cp.checkpoint(
        lambda t: t, x, use_reentrant=False, determinism_check="shapes"),
    "debug with a context_fn": lambda lib, cp, x: cp.checkpoint(
        lambda t: t, x, use_reentrant=False, debug=True, context_fn=two_nullcontexts),
    "keyword arguments, reentrant": lambda lib, cp, x: cp.checkpoint(
        lambda t, a=1: t, x, use_reentrant=True, a=2),
    "debug, reentrant": lambda lib, cp, x: cp.checkpoint(lambda t: t, x, use_reentrant=True, debug=True),
    "keyword arguments, sequential": lambda lib, cp, x: cp.checkpoint_sequential(
        [lambda t: t], 1, x, use_reentrant=False, foo=1),
    "forward context swallowed the error": lambda lib, cp, x: cp.checkpoint(
        lambda t: 1 / 0, x, use_reentrant=False, context_fn=lambda: (swallows_errors(), contextlib.nullcontext())),
    "input modified in place": lambda lib, cp, x: (
        lambda a: (cp.checkpoint(lambda t: t.exp(), a, use_reentrant=False), a.mul_(2))[0])(x * 1).sum().backward(),
}


@pytest.mark.parametrize("name", CHECKPOINT_ERRORS)
def test_checkpoint_errors_match_torch(name):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        try:
            CHECKPOINT_ERRORS[name](lib, lib.utils.checkpoint, x)
        except Exception as e:
            # torch's tip ends with advice for torch.compile, which retrograd does not have
            return type(e).__name__, str(e).split("\n\nIf this error occurs under torch.compile")[0]
        return "no error"

    ours = scenario(retrograd)
    assert ours == scenario(torch)
    assert ours != "no error"


def test_reentrant_checkpoint_works_again_after_the_error():
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        flags = []
        y = x * 2
        y.register_hook(lambda g: flags.append(lib.autograd._is_checkpoint_valid()))
        y.sum().backward(retain_graph=True)
        lib.autograd.grad(y.sum(), x, retain_graph=True)
        y.sum().backward(inputs=[x])
        with pytest.raises(RuntimeError):
            lib.autograd.grad(lib.utils.checkpoint.checkpoint(lib.exp, x, use_reentrant=True).sum(), x)
        lib.utils.checkpoint.checkpoint(lib.exp, x, use_reentrant=True).sum().backward()
        return flags, lib.autograd._is_checkpoint_valid(), values(x.grad)

    assert scenario(retrograd) == scenario(torch)


def test_unpacking_outside_backward_recomputes_every_time():
    def scenario(lib):
        runs = []

        def fn(t):
            runs.append(1)
            return make_unpack_twice(lib).apply(t.sin())

        y = lib.utils.checkpoint.checkpoint(fn, lib.tensor([1.0], requires_grad=True), use_reentrant=False)
        y.grad_fn.saved_tensors
        y.grad_fn.saved_tensors
        return len(runs)

    assert scenario(retrograd) == scenario(torch) == 3


def test_debug_shows_where_each_run_saved_its_tensors():
    def scenario(lib, **override):
        fn = flaky(lib, lambda t: t.sin().exp(), lambda t: t.sin() * lib.tensor([1.0, 2.0]))
        x = lib.tensor([0.5], requires_grad=True)
        with lib.utils.checkpoint.set_checkpoint_debug_enabled(override.get("enabled")):
            y = lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=False, debug=override.get("debug", True))
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as caught:
            y.sum().backward()
        return str(caught.value), type(caught.value.__cause__).__name__

    for override in ({}, {"enabled": True, "debug": False}):
        ours, theirs = scenario(retrograd, **override), scenario(torch, **override)
        sentence = "You are seeing this error because you passed `debug=True` to checkpoint"
        assert sentence in ours[0] and sentence in theirs[0]
        assert ours[1] == theirs[1] == "CheckpointError"  # the plain error is the cause
        assert "t.sin() * lib.tensor([1.0, 2.0])" in ours[0]  # the line of the recomputation that saved
    ours, theirs = scenario(retrograd, enabled=False), scenario(torch, enabled=False)
    assert ours[0].split("\n\nIf this error")[0] == theirs[0].split("\n\nIf this error")[0]


# ---- what saved-tensor hooks give back ----------------------------------------------------------

def test_a_hooked_saved_input_comes_back_with_its_history():
    """Whatever the unpack hook returns, a saved input that required grad is attached again to the node
    that made it (or a leaf to its AccumulateGrad), as torch's SavedVariable does: the recomputed
    values of a checkpoint differentiate through the original graph."""
    def scenario(lib):
        seen = []

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_backward(a, b)
                return a ** 3 * b

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                seen.append([(t.requires_grad, t.is_leaf, t.grad_fn and t.grad_fn.name()) for t in (a, b)])
                return g * 3 * a ** 2 * b, g * a ** 3

        x = lib.tensor([0.5, -1.5], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 1, lambda t: t * 1):
            y = Cube.apply(x * 1, w)
        (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        gx.sum().backward()
        return seen, values(gx), values(x.grad), values(w.grad)

    assert scenario(retrograd) == scenario(torch)


TRANSFORMS = {
    "grad": lambda F, f, x: F.grad(f)(x),
    "vjp": lambda F, f, x: F.vjp(f, x)[1](x.sum()),
    "jacrev": lambda F, f, x: F.jacrev(f)(x),
    "vmap of grad": lambda F, f, x: F.vmap(F.grad(f))(x.expand(3, 6)),
    "jvp": lambda F, f, x: F.jvp(f, (x,), (x,)),
    "vmap": lambda F, f, x: F.vmap(f)(x.expand(3, 6)),
    "jacfwd": lambda F, f, x: F.jacfwd(f)(x),
}


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_checkpoint_inside_func_transforms_as_torch(use_reentrant, transform):
    """A checkpoint without reentry sets saved-tensor hooks, which torch.func's grad, vjp and jacrev refuse (jvp,
    vmap and jacfwd compute); a reentrant one is an autograd.Function without setup_context, which every
    transform refuses."""
    def scenario(lib):
        def f(x):
            return lib.utils.checkpoint.checkpoint(lambda y: y.sin() * 2, x, use_reentrant=use_reentrant).sum()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = TRANSFORMS[transform](lib.func, f, lib.tensor(X[0]))
            except RuntimeError as e:
                return type(e).__name__, str(e)
        return [values(t) for t in (out if isinstance(out, tuple) else (out,))]

    assert scenario(retrograd) == scenario(torch)


def test_func_grad_refuses_saved_tensor_hooks_set_outside():
    def scenario(lib):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with pytest.raises(RuntimeError) as error:
                lib.func.grad(lambda x: x.sin().sum())(lib.tensor(X[0]))
        return str(error.value)

    assert scenario(retrograd) == scenario(torch)
