"""utils.checkpoint against torch: the same values, gradients and node names, recomputation in
backward (counted), the RNG replayed, torch's determinism error, and the memory it saves
(measured with tracemalloc)."""

from __future__ import annotations

import gc
import tracemalloc
import warnings

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
