"""Higher derivatives against torch: seed 004's second derivative, third derivatives of every row
of the op database, gradient penalties that train, and graphs freed by reference counting alone
(Note [create_graph cycles])."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
from opdb import OpInfo, Sample
from opdb.linalg import invertible
from test_ops import CASES, _as_function, _random_like

import retrograd


def values(t, digits=10):
    return None if t is None else np.round(t.detach().numpy().astype(np.float64), digits).tolist()


# ---- seed 004 ------------------------------------------------------------------------------------

def test_seed_004_grad_examples():
    """The autograd.grad cell of seed 004: a sum, a vector output with grad_outputs, and the second
    derivative of x ** 2 through create_graph=True (2 everywhere)."""
    def cell(lib):
        x = lib.tensor(np.random.default_rng(4).random((3, 4)), dtype=lib.float32)
        x.requires_grad_()
        y = lib.sum(x)
        grad1 = lib.autograd.grad(outputs=y, inputs=x)
        y = x[:, 0] + x[:, 1]
        grad2 = lib.autograd.grad(outputs=y, inputs=x, grad_outputs=lib.ones_like(y))
        y = x ** 2
        grad3 = lib.autograd.grad(outputs=y, inputs=x, grad_outputs=lib.ones_like(y), create_graph=True)
        grad4 = lib.autograd.grad(outputs=grad3, inputs=x, grad_outputs=lib.ones_like(y))
        return [repr(g) for g in grad1 + grad2 + grad4], grad3[0].grad_fn.name(), grad3[0].requires_grad

    assert cell(retrograd) == cell(torch)


def test_seed_004_backward_example():
    def cell(lib):
        x = lib.tensor(1.0, requires_grad=True)
        y = lib.tensor(2.0, requires_grad=True)
        z = x ** 2 + y
        z.backward()
        return repr(z), repr(x.grad), repr(y.grad)

    assert cell(retrograd) == cell(torch)


# ---- third derivatives through the table --------------------------------------------------------

def second_order(lib, info: OpInfo, sample: Sample):
    """(inputs, s2) with s2(x) = <w2, d/dx <w1, d/dx <v, f(x)>>> for random v, w1, w2 (None when the
    row has no second derivative to take)."""
    fn, inputs = _as_function(info, sample, lib=lib)
    rng = np.random.default_rng(7)

    def s2(*xs):
        outs = [o for o in fn(*xs) if o.requires_grad]
        if not outs:
            return None
        g1 = lib.autograd.grad(outs, xs, [_random_like(np.random.default_rng(8), o, lib) for o in outs],
                               create_graph=True, allow_unused=True)
        level = np.random.default_rng(9)
        pairs = [(g, _random_like(level, x, lib)) for g, x in zip(g1, xs) if g is not None and g.requires_grad]
        if not pairs:
            return None
        s1 = sum((g * w).sum() for g, w in pairs)
        g2 = lib.autograd.grad(s1.real if s1.is_complex() else s1, xs, create_graph=True, allow_unused=True)
        level = np.random.default_rng(10)
        pairs = [(g, _random_like(level, x, lib)) for g, x in zip(g2, xs) if g is not None and g.requires_grad]
        if not pairs:
            return None
        total = sum((g * w).sum() for g, w in pairs)
        return total.real if total.is_complex() else total

    del rng
    return inputs, s2


def third_derivative(lib, info: OpInfo, sample: Sample):
    """The gradient of s2: a third-order VJP, zeros where an input is unused."""
    inputs, s2 = second_order(lib, info, sample)
    if not inputs:
        return None
    total = s2(*inputs)
    if total is None or not total.requires_grad:
        return None
    grads = lib.autograd.grad(total, inputs, allow_unused=True)
    return [np.zeros(tuple(x.shape)) if g is None else g.detach().numpy() for g, x in zip(grads, inputs)]


def finite_difference_third(info: OpInfo, sample: Sample, eps: float = 1e-6):
    """The gradient of s2 by central differences of retrograd's second-order function."""
    inputs, s2 = second_order(retrograd, info, sample)
    out = []
    for x in inputs:
        data = x.detach().numpy()
        grad = np.zeros(data.shape, dtype=data.dtype)
        for idx in np.ndindex(data.shape):
            original = data[idx]
            data[idx] = original + eps
            plus = float(s2(*inputs).real)
            data[idx] = original - eps
            minus = float(s2(*inputs).real)
            data[idx] = original
            grad[idx] = (plus - minus) / (2 * eps)
        out.append(grad)
    return out


# Samples at singular points are left to test_det_third_derivative_is_the_same_through_singular_points: there
# torch's third derivative (1.88 against the exact 1.73 on one CPU) and finite differences of our second one
# both depend on how LAPACK rounds a zero pivot.
THIRD_ORDER = [c for c in CASES if c.values[0].differentiable and c.values[0].gradgrad and c.values[1].gradcheck
               and "singular" not in c.values[1].name]


@pytest.mark.parametrize("info,sample", THIRD_ORDER)
def test_third_derivative_matches_torch(info: OpInfo, sample: Sample):
    """Every row differentiated three times (create_graph all the way) equals torch's third
    derivative; where torch has none, or where the two disagree, central differences of the
    second derivative decide."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = third_derivative(retrograd, info, sample)
        try:
            theirs = third_derivative(torch, info, sample)
        except (RuntimeError, NotImplementedError) as e:
            if "not implemented" not in str(e):
                raise
            theirs = "torch has no third derivative here"
    if ours is None or theirs is None:  # no graph left at third order: the derivative is zero
        assert all(np.allclose(g, 0, atol=1e-10) for g in (ours or theirs or []) if not isinstance(g, str))
        return
    if not isinstance(theirs, str) and all(np.allclose(a, b, rtol=1e-7, atol=1e-8) for a, b in zip(ours, theirs)):
        return
    numerical = finite_difference_third(info, sample)
    for k, (a, n) in enumerate(zip(ours, numerical)):
        np.testing.assert_allclose(a, n, rtol=1e-3, atol=1e-4, err_msg=f"input {k}: third derivative")


AT_SINGULAR_DET = [c for c in CASES if "det" in c.values[0].name and "singular" in c.values[1].name]


@pytest.mark.parametrize("info,sample", AT_SINGULAR_DET)
def test_det_third_derivative_is_the_same_through_singular_points(info: OpInfo, sample: Sample):
    """det of a 3x3 matrix is a cubic polynomial of its entries, so its third derivative is one constant
    everywhere: at a singular matrix it equals the third derivative at an invertible one, with the same
    directions (s2 draws them from fixed seeds)."""
    elsewhere = Sample((invertible(np.random.default_rng(0), *sample.args[0].shape),), name="invertible")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at_singular, at_invertible = (third_derivative(retrograd, info, s) for s in (sample, elsewhere))
    for a, b in zip(at_singular, at_invertible):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_grad_of_grad_of_grad_of_a_composition():
    def scenario(lib):
        x = lib.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
        y = (x.sin() * x.exp() + x.tanh() ** 3).sum()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x, create_graph=True)
        (g4,) = lib.autograd.grad(g3.sum(), x)
        return [values(g) for g in (g1, g2, g3, g4)]

    assert scenario(retrograd) == scenario(torch)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 5, 3, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [False, True])
def test_nll_loss_double_backward_graph_as_torch(shape, reduction, ignore):
    """The gradient of nll_loss under create_graph is torch's NllLoss[2D]BackwardBackward0 node, with an
    edge to the input although it has no derivative there (so it requires grad, as in torch), and its
    derivative with respect to the incoming gradient is nll_loss again."""
    rng = np.random.default_rng(3)
    x_data = rng.standard_normal(shape)
    target_data = rng.integers(0, 5, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if ignore and target_data.ndim:
        target_data.flat[0] = 1

    def scenario(lib):
        x = lib.tensor(x_data, requires_grad=True)
        loss = lib.nn.functional.nll_loss(x, lib.tensor(target_data), ignore_index=1 if ignore else -100,
                                          reduction=reduction)
        seed = lib.ones_like(loss, requires_grad=True)
        (g,) = lib.autograd.grad(loss, x, seed, create_graph=True)
        edges = [None if n is None else n.name() for n, _ in g.grad_fn.next_functions]
        (gg,) = lib.autograd.grad((g * lib.tensor(x_data)).sum(), seed)
        return g.grad_fn.name(), g.requires_grad, edges, values(g), values(gg)

    assert repr(scenario(retrograd)) == repr(scenario(torch))  # repr: nan (every target ignored) equals nan


# ---- activations' double-backward graphs ---------------------------------------------------------

ACTIVATIONS = {  # name: the call, on (functional module, input); in-place forms on a clone
    "relu": lambda F, x: F.relu(x), "threshold": lambda F, x: F.threshold(x, 0.1, 20.0),
    "hardtanh": lambda F, x: F.hardtanh(x), "relu6": lambda F, x: F.relu6(x),
    "hardtanh_": lambda F, x: F.hardtanh(x.clone(), inplace=True),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2), "leaky_relu_": lambda F, x: F.leaky_relu(x.clone(), 0.2, True),
    "softshrink": lambda F, x: F.softshrink(x), "hardshrink": lambda F, x: F.hardshrink(x),
    "elu": lambda F, x: F.elu(x), "elu_": lambda F, x: F.elu(x.clone(), inplace=True),
    "selu": lambda F, x: F.selu(x), "celu": lambda F, x: F.celu(x, 0.7),
    "gelu": lambda F, x: F.gelu(x), "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "softplus": lambda F, x: F.softplus(x, 2.0, 1.0), "hardswish": lambda F, x: F.hardswish(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x), "glu": lambda F, x: F.glu(x),
    "prelu": lambda F, x: F.prelu(x, x.new_tensor([0.25]).requires_grad_()),
    "rrelu": lambda F, x: F.rrelu(x), "rrelu_": lambda F, x: F.rrelu(x.clone(), 0.1, 0.2, inplace=True),
    "rrelu_training_one_slope": lambda F, x: F.rrelu(x, 0.2, 0.2, training=True),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),  # NotImplemented: the second gradient raises
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_double_backward_graph_as_torch(name):
    """An activation's gradient under create_graph is torch's XxxBackwardBackward0 node and requires grad
    (also where the second derivative is zero), and the second gradient is torch's: zeros, not None."""
    def scenario(lib):
        x = lib.tensor([0.5, -1.5, 2.0, -0.2, 0.7, 3.5], requires_grad=True)
        (g,) = lib.autograd.grad(ACTIVATIONS[name](lib.nn.functional, x).sum(), x, create_graph=True)
        try:
            (gg,) = lib.autograd.grad((g * lib.tensor([1.0, 2.0, -1.0, 0.5, 3.0, 1.5])).sum(), x, allow_unused=True)
        except RuntimeError as e:
            return g.requires_grad, type(g.grad_fn).__name__, str(e)
        return g.requires_grad, type(g.grad_fn).__name__, values(gg)

    (ours, ours_gg), (theirs, theirs_gg) = [(r[:2], r[2]) for r in (scenario(retrograd), scenario(torch))]
    assert ours == theirs
    assert type(ours_gg) is type(theirs_gg)
    assert not isinstance(ours_gg, list) and ours_gg == theirs_gg or np.allclose(ours_gg, theirs_gg, 1e-5, 1e-6)


# torch has no forward mode for these backwards (NotImplementedError); retrograd's rows have one
NO_TORCH_FORWARD_OVER_REVERSE = {"rrelu_", "hardsigmoid"}


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if n not in NO_TORCH_FORWARD_OVER_REVERSE])
def test_activation_forward_over_reverse_as_torch(name):
    """The tangent of a gradient taken under create_graph (a Hessian-vector product in forward mode) runs
    forward mode through the activation's backward row, its JVP, which the op database's forward-mode
    checks, made on the activation itself, do not reach."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([0.5, -1.5, 2.0, -0.2, 0.7, 3.5], requires_grad=True),
                             lib.tensor([1.0, -1.0, 0.5, 2.0, -0.5, 1.0]))
            y = ACTIVATIONS[name](lib.nn.functional, x)
            y = (y * lib.tensor([1.0, 2.0, -1.0, 0.5, 3.0, 1.5])[:y.shape[0]]).pow(2).sum()  # glu halves x
            (g,) = lib.autograd.grad(y, x, create_graph=True)
            return values(fw.unpack_dual(g).tangent)

    np.testing.assert_allclose(scenario(retrograd), scenario(torch), rtol=1e-5, atol=1e-6)


def test_rrelu_training_gradient_is_the_drawn_slopes():
    """In training rrelu draws a slope in [lower, upper] per negative element (from retrograd's generator, so
    not torch's numbers): the output is input * slope, and its gradient, also under create_graph, the slopes."""
    x = retrograd.tensor(np.linspace(-2.0, 2.0, 41), requires_grad=True)
    y = retrograd.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    (g,) = retrograd.autograd.grad(y.sum(), x, create_graph=True)
    slopes = g.detach().numpy()
    negative = x.detach().numpy() <= 0
    assert ((slopes[negative] >= 0.1) & (slopes[negative] <= 0.3)).all() and (slopes[~negative] == 1).all()
    assert np.allclose(y.detach().numpy(), x.detach().numpy() * slopes)
    assert type(g.grad_fn).__name__ == "RreluWithNoiseBackwardBackward0"


# ---- gradient penalties ------------------------------------------------------------------------------

def gradient_penalty_training(lib, steps=5):
    """A critic trained with a WGAN-GP style penalty: the loss reads the gradient of the critic
    with respect to its input (create_graph=True), so the update differentiates through it."""
    rng = np.random.default_rng(11)
    w1 = lib.tensor(rng.standard_normal((4, 8)) * 0.5, dtype=lib.float64, requires_grad=True)
    w2 = lib.tensor(rng.standard_normal((8, 1)) * 0.5, dtype=lib.float64, requires_grad=True)
    real = lib.tensor(rng.standard_normal((16, 4)) + 1, dtype=lib.float64)
    fake = lib.tensor(rng.standard_normal((16, 4)), dtype=lib.float64)
    alpha = lib.tensor(rng.random((16, 1)), dtype=lib.float64)
    history = []
    for _ in range(steps):
        def critic(x):
            return (x @ w1).tanh() @ w2

        mixed = (alpha * real + (1 - alpha) * fake).requires_grad_()
        (g,) = lib.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
        penalty = ((g.pow(2).sum(1) + 1e-12).sqrt() - 1).pow(2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
        w1.grad = w2.grad = None
        loss.backward()
        with lib.no_grad():
            w1 -= 0.05 * w1.grad
            w2 -= 0.05 * w2.grad
        history.append(penalty.item())
    return history, values(w1), values(w2)


def test_gradient_penalty_trains_as_in_torch():
    ours, theirs = gradient_penalty_training(retrograd), gradient_penalty_training(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-10, atol=1e-12)
    assert ours[0][-1] < ours[0][0]  # the penalty goes down: the second-order term trains


# ---- Note [create_graph cycles] -----------------------------------------------------------------

@pytest.fixture
def gc_off():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_create_graph_results_free_their_graph_without_gc(gc_off):
    w = retrograd.tensor([0.5, -0.25, 1.0], dtype=retrograd.float64, requires_grad=True)
    nodes = []
    for _ in range(3):
        x = retrograd.tensor([1.0, 2.0, 3.0], dtype=retrograd.float64, requires_grad=True)
        y = ((x * w).tanh() ** 2).sum()
        (g,) = retrograd.autograd.grad(y, x, create_graph=True)
        penalty = (g * g).sum()
        nodes.append(weakref.ref(g.grad_fn))
        nodes.append(weakref.ref(penalty.grad_fn))
        (dw,) = retrograd.autograd.grad(penalty, w)
        del x, y, g, penalty, dw
    assert all(ref() is None for ref in nodes)  # freed by reference counting, gc never ran


def test_backward_create_graph_cycle_warns_and_breaks_with_grad_none(gc_off):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        was = lib.is_warn_always_enabled()
        lib.set_warn_always(True)  # torch warns once per process: an earlier test may have used up its warning
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (x * x * x).sum().backward(create_graph=True)
        finally:
            lib.set_warn_always(was)
        nodes = [x.grad.grad_fn.name()] + [None if f is None else f.name() for f, _ in x.grad.grad_fn.next_functions]
        return [str(w.message) for w in caught], values(x.grad), x.grad.requires_grad, nodes, x

    messages, grad, needs_grad, nodes, x = scenario(retrograd)
    expected = scenario(torch)
    assert (grad, needs_grad, nodes) == expected[1:4]  # .grad is a recorded copy: torch::autograd::CopyBackwards
    assert len(messages) == 1 and messages[0].startswith("Using backward() with create_graph=True will create a "
                                                         "reference cycle between the parameter and its gradient")
    assert expected[0][0].startswith(messages[0])
    node = weakref.ref(x.grad.grad_fn)
    assert node() is not None
    x.grad = None  # breaks leaf -> .grad -> graph -> AccumulateGrad -> leaf
    assert node() is None


def test_double_backward_memory_is_steady(gc_off):
    """Many gradient-penalty steps with gc disabled: nothing accumulates."""
    import tracemalloc

    w = retrograd.tensor(np.random.default_rng(0).standard_normal((64, 64)), requires_grad=True)

    def step():
        x = retrograd.tensor(np.random.default_rng(1).standard_normal((32, 64)), requires_grad=True)
        (g,) = retrograd.autograd.grad((x @ w).tanh().sum(), x, create_graph=True)
        (g * g).sum().backward()
        w.grad = None

    for _ in range(3):
        step()
    tracemalloc.start()
    step()
    first = tracemalloc.get_traced_memory()[0]
    for _ in range(20):
        step()
    last = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert last - first < 64 * 64 * 8  # less than one weight matrix after 20 more steps


# ---- the nodes of derivative formulas (Note [scalar overloads]) ------------------------------------

def _graph_names(fn) -> tuple | None:
    """The tree of node names below `fn` (edges in order; None for an edge to nothing)."""
    if fn is None:
        return None
    return type(fn).__name__, tuple(_graph_names(child) for child, _ in fn.next_functions)


FORMULA_GRAPHS = {  # numbers in a formula take the Scalar overloads; a number the user gave is a tensor
    "x ** 2": lambda lib, x: x ** 2, "x ** 3": lambda lib, x: x ** 3, "x ** 0.5": lambda lib, x: x ** 0.5,
    "x ** -1": lambda lib, x: x ** -1, "x ** x": lambda lib, x: x ** x, "2 ** x": lambda lib, x: 2 ** x,
    "x * 0.5": lambda lib, x: (x * 0.5) ** 2, "x / 4": lambda lib, x: (x / 4) ** 2,
    "sqrt": lambda lib, x: x.sqrt(), "log2": lambda lib, x: x.log2(), "exp2": lambda lib, x: x.exp2(),
    "expm1": lambda lib, x: x.expm1(), "log1p": lambda lib, x: x.log1p(), "square": lambda lib, x: x.square(),
    "atan": lambda lib, x: x.atan(), "sinc": lambda lib, x: x.sinc(), "logit": lambda lib, x: x.logit(),
    "rsqrt": lambda lib, x: x.rsqrt(), "cos": lambda lib, x: x.cos(), "tan": lambda lib, x: x.tan(),
    "asin": lambda lib, x: x.asin(), "acos": lambda lib, x: x.acos(), "asinh": lambda lib, x: x.asinh(),
    "acosh": lambda lib, x: (x + 1.5).acosh(), "atanh": lambda lib, x: x.atanh(), "erf": lambda lib, x: x.erf(),
    "erfc": lambda lib, x: x.erfc(), "erfinv": lambda lib, x: x.erfinv(),
    "silu": lambda lib, x: lib.nn.functional.silu(x), "hypot": lambda lib, x: lib.hypot(x, x * 0.5 + 1),
    "logaddexp": lambda lib, x: lib.logaddexp(x, 2 * x), "addcmul": lambda lib, x: lib.addcmul(x, x, x, value=0.5),
}


@pytest.mark.parametrize("name", list(FORMULA_GRAPHS))
def test_formula_nodes_take_torchs_overloads(name):
    """Under create_graph, a gradient's graph has torch's nodes: `n * self.pow(n - 1)` in pow's formula is
    MulBackward1 (C++ takes mul's Scalar overload), `1 + x` AddBackward1, `1 - x` SubBackward0 (C++ fills a
    tensor), while the saved 0.5 of a user's `x * 0.5` is a tensor in torch, so its formula's product is
    MulBackward0; the values agree too."""
    def scenario(lib):
        x = lib.tensor([0.3, 0.6, 0.7, 0.9], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(FORMULA_GRAPHS[name](lib, x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return _graph_names(g.grad_fn), values(g), values(gg)

    ours, theirs = scenario(retrograd), scenario(torch)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1:], theirs[1:], rtol=1e-10)


def test_scalar_overload_nodes_show_torchs_edges_and_saved_values():
    """MulBackward1 (mul's Scalar overload) has one edge and saves the number itself, as torch's does."""
    def scenario(lib):
        x = lib.tensor([1.5, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
        scaled = g.grad_fn.next_functions[1][0]
        return type(scaled).__name__, len(scaled.next_functions), scaled._saved_other

    assert scenario(retrograd) == scenario(torch)
