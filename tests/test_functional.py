"""autograd.functional against torch: the documentation examples of vjp, jvp, jacobian, hessian,
vhp and hvp, every strategy and vectorize combination, create_graph and strict mode with torch's
errors, and Jacobians/Hessians of small networks to 1e-10 in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)


def t(lib, array, grad=False):
    return lib.tensor(np.asarray(array, dtype=np.float64), requires_grad=grad)


def structure(value):
    """Nesting, shapes, values (rounded) and requires_grad of a result, for comparison."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [structure(v) for v in value])
    return (tuple(value.shape), np.round(value.detach().numpy(), 10).tolist(), value.requires_grad)


def outcome(fn):
    try:
        return ("ok", structure(fn()))
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e))


def same(scenario):
    ours, theirs = outcome(lambda: scenario(retrograd)), outcome(lambda: scenario(torch))
    assert ours == theirs
    return ours


X4 = RNG.random((4, 4))
X22 = RNG.random((2, 2))
X42 = RNG.random((4, 2))
X2 = RNG.random(2)
Y2 = RNG.random(2)


# ---- the documentation examples -----------------------------------------------------------------

def exp_reducer(x):
    return x.exp().sum(dim=1)


def adder(x, y):
    return 2 * x + 3 * y


def pow_reducer(x):
    return x.pow(3).sum()


def pow_adder_reducer(x, y):
    return (2 * x.pow(2) + 3 * y.pow(2)).sum()


DOC_EXAMPLES = {
    "vjp": lambda L: L.autograd.functional.vjp(exp_reducer, t(L, X4), L.ones(4, dtype=L.float64)),
    "vjp_create_graph": lambda L: L.autograd.functional.vjp(exp_reducer, t(L, X4), L.ones(4, dtype=L.float64),
                                                            create_graph=True),
    "vjp_tuple": lambda L: L.autograd.functional.vjp(adder, (t(L, X2), t(L, Y2)), L.ones(2, dtype=L.float64)),
    "jvp": lambda L: L.autograd.functional.jvp(exp_reducer, t(L, X4), L.ones(4, 4, dtype=L.float64)),
    "jvp_tuple": lambda L: L.autograd.functional.jvp(adder, (t(L, X2), t(L, Y2)),
                                                     (L.ones(2, dtype=L.float64), L.ones(2, dtype=L.float64))),
    "jacobian": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X22)),
    "jacobian_create_graph": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X2.reshape(1, 2)),
                                                                      create_graph=True),
    "jacobian_tuple": lambda L: L.autograd.functional.jacobian(lambda x, y: x.exp() + y, (t(L, X2), t(L, Y2))),
    "jacobian_linear_vectorized": lambda L: L.autograd.functional.jacobian(
        lambda x: x @ t(L, [[2.0, -1.0], [0.0, 1.0]]).T + t(L, [1.0, 0.5]), t(L, X42, grad=True),
        vectorize=True),
    "hessian": lambda L: L.autograd.functional.hessian(pow_reducer, t(L, X22)),
    "hessian_tuple": lambda L: L.autograd.functional.hessian(pow_adder_reducer, (t(L, X2), t(L, Y2))),
    "vhp": lambda L: L.autograd.functional.vhp(pow_reducer, t(L, X22), L.ones(2, 2,
                                                                                             dtype=L.float64)),
    "vhp_tuple": lambda L: L.autograd.functional.vhp(pow_adder_reducer, (t(L, X2), t(L, Y2)),
                                                     (L.zeros(2, dtype=L.float64), L.ones(2, dtype=L.float64))),
    "hvp": lambda L: L.autograd.functional.hvp(pow_reducer, t(L, X22), L.ones(2, 2,
                                                                                             dtype=L.float64)),
    "hvp_tuple": lambda L: L.autograd.functional.hvp(pow_adder_reducer, (t(L, X2), t(L, Y2)),
                                                     (L.zeros(2, dtype=L.float64), L.ones(2, dtype=L.float64))),
}


@pytest.mark.parametrize("name", sorted(DOC_EXAMPLES))
def test_documentation_examples(name):
    assert same(DOC_EXAMPLES[name])[0] == "ok"


# ---- small networks: Jacobians and Hessians to 1e-10 ---------------------------------------------

W1, B1 = RNG.standard_normal((5, 3)), RNG.standard_normal(5)
W2, B2 = RNG.standard_normal((2, 5)), RNG.standard_normal(2)
INPUT = RNG.standard_normal((4, 3))
V = [RNG.standard_normal(a.shape) for a in (W1, B1, W2, B2)]


def network(L):
    w1, b1, w2, b2 = (t(L, a) for a in (W1, B1, W2, B2))

    def net(x):
        return L.nn.functional.linear(L.tanh(L.nn.functional.linear(x, w1, b1)), w2, b2)

    return net


def parameters_loss(L):
    x = t(L, INPUT)

    def loss(w1, b1, w2, b2):
        hidden = (x @ w1.t() + b1).sigmoid()
        return L.nn.functional.log_softmax(hidden @ w2.t() + b2, dim=1)[:, 0].sum()

    return loss


def close(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            close(u, v)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("vectorize,strategy",
                         [(False, "reverse-mode"), (True, "reverse-mode"), (True, "forward-mode")])
def test_network_jacobian_matches_torch(vectorize, strategy):
    def scenario(L):
        return L.autograd.functional.jacobian(network(L), t(L, INPUT), vectorize=vectorize, strategy=strategy)

    close(scenario(retrograd), scenario(torch))


@pytest.mark.parametrize("vectorize,outer", [(False, "reverse-mode"), (True, "reverse-mode"), (True, "forward-mode")])
def test_network_hessian_matches_torch(vectorize, outer):
    def scenario(L):
        params = tuple(t(L, a) for a in (W1, B1, W2, B2))
        return L.autograd.functional.hessian(parameters_loss(L), params, vectorize=vectorize,
                                             outer_jacobian_strategy=outer)

    close(scenario(retrograd), scenario(torch))


def test_hvp_and_vhp_of_a_network_match_torch():
    def scenario(L):
        params = tuple(t(L, a) for a in (W1, B1, W2, B2))
        v = tuple(t(L, a) for a in V)
        return (L.autograd.functional.hvp(parameters_loss(L), params, v),
                L.autograd.functional.vhp(parameters_loss(L), params, v))

    close(scenario(retrograd), scenario(torch))


def test_create_graph_results_are_differentiable():
    def scenario(L):
        x = t(L, X4, grad=True)
        jac = L.autograd.functional.jacobian(exp_reducer, x, create_graph=True)
        (g,) = L.autograd.grad(jac.pow(2).sum(), x)
        return jac, g

    close(scenario(retrograd), scenario(torch))


# ---- errors --------------------------------------------------------------------------------------

ERRORS = {
    "not_a_tensor": lambda L: L.autograd.functional.vjp(exp_reducer, [1.0]),
    "not_a_tensor_in_tuple": lambda L: L.autograd.functional.jacobian(adder, (t(L, X2), 3)),
    "output_not_tensor": lambda L: L.autograd.functional.vjp(lambda x: 3, t(L, X2), t(L, X2)),
    "v_none_vjp": lambda L: L.autograd.functional.vjp(exp_reducer, t(L, X4)),
    "v_none_jvp": lambda L: L.autograd.functional.jvp(exp_reducer, t(L, X4)),
    "v_length": lambda L: L.autograd.functional.jvp(adder, (t(L, X2), t(L, Y2)), (t(L, X2),)),
    "v_single": lambda L: L.autograd.functional.vjp(exp_reducer, t(L, X4), (t(L, X2), t(L, X2))),
    "v_size": lambda L: L.autograd.functional.vjp(exp_reducer, t(L, X4), t(L, X2)),
    "v_size_entry": lambda L: L.autograd.functional.jvp(adder, (t(L, X2), t(L, Y2)), (t(L, X2), t(L, X4))),
    "strict_independent": lambda L: L.autograd.functional.vjp(lambda x, y: x * 2, (t(L, X2), t(L, Y2)),
                                                              t(L, X2), strict=True),
    "strict_no_grad_output": lambda L: L.autograd.functional.jacobian(lambda x: t(L, X2), t(L, X2), strict=True),
    "strict_jacobian": lambda L: L.autograd.functional.jacobian(lambda x, y: x * 2, (t(L, X2), t(L, Y2)),
                                                                strict=True),
    "strict_linear_hessian": lambda L: L.autograd.functional.hessian(lambda x: (x * 2).sum(), t(L, X2),
                                                                     strict=True),
    "strict_vectorize": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X4), strict=True,
                                                                 vectorize=True),
    "forward_create_graph": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X4), create_graph=True,
                                                                     strategy="forward-mode", vectorize=True),
    "forward_no_vectorize": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X4),
                                                                     strategy="forward-mode"),
    "bad_strategy": lambda L: L.autograd.functional.jacobian(exp_reducer, t(L, X4), strategy="sideways"),
    "hessian_not_scalar": lambda L: L.autograd.functional.hessian(exp_reducer, t(L, X4)),
    "hessian_tuple_output": lambda L: L.autograd.functional.hessian(lambda x: (x.sum(), x.sum()), t(L, X2)),
    "vhp_not_scalar": lambda L: L.autograd.functional.vhp(exp_reducer, t(L, X4), t(L, X4)),
    "hvp_tuple_output": lambda L: L.autograd.functional.hvp(lambda x: (x.sum(),), t(L, X2), t(L, X2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert same(ERRORS[name])[0] != "ok"


def test_strict_mode_passes_when_everything_depends_on_the_inputs():
    def cubic(x, y):
        return (x.pow(3) * y.pow(3)).sum()

    assert same(lambda L: L.autograd.functional.hessian(cubic, (t(L, X2), t(L, Y2)), strict=True))[0] == "ok"


def test_vectorized_jacobian_is_one_backward_pass():
    """vectorize=True runs the engine once, with a batch of cotangents (not one pass per row)."""
    from retrograd.autograd import engine

    calls = []
    original = engine.run_backward

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    engine.run_backward, saved = counting, engine.run_backward
    import retrograd.autograd as autograd_module

    autograd_module.run_backward, saved_module = counting, autograd_module.run_backward
    try:
        retrograd.autograd.functional.jacobian(network(retrograd), t(retrograd, INPUT), vectorize=True)
        vectorized = len(calls)
        calls.clear()
        retrograd.autograd.functional.jacobian(network(retrograd), t(retrograd, INPUT))
        looped = len(calls)
    finally:
        engine.run_backward = saved
        autograd_module.run_backward = saved_module
    assert vectorized == 1 and looped == INPUT.shape[0] * 2
