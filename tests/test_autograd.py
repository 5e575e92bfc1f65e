"""Autograd behaviour, scenario by scenario, against torch.

Each scenario is a function of the library module (`torch` or `retrograd`) returning a list of
observations (values as lists, flags, grad_fn names, exception types and messages); both
libraries must observe exactly the same things.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
import torch

import retrograd


def observe(value):
    """A comparable record of a value: tensors become (dtype, shape, rounded values)."""
    if hasattr(value, "detach") and hasattr(value, "dtype"):
        arr = value.detach().numpy()
        return ("tensor", str(value.dtype), tuple(value.shape), np.round(arr.astype(np.float64), 5).tolist())
    if isinstance(value, (list, tuple)):
        return [observe(v) for v in value]
    if type(value).__name__ in ("dtype", "Size", "device"):
        return str(value)
    return value


def raises(fn) -> tuple:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what we compare
        return (type(e).__name__, str(e).split("\n")[0])
    return ("no error",)


SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def stored_gradient_layout(L):
    """AccumulateGrad's layout contract: .grad has the leaf's strides (a copy when the incoming gradient
    has others) and keeps a fresh gradient's memory as torch does (the recorded copy under create_graph
    is checked in test_higher_order.py, where torch's once-per-process warning is expected)."""
    w = L.ones(3, 2, requires_grad=True)
    (L.ones(4, 2) @ w.t()).sum().backward()
    wt = L.ones(2, 3).t().requires_grad_()
    (wt * 2).sum().backward()
    v = L.ones(6, requires_grad=True)
    g = L.ones(2, 3)
    v.view(2, 3).backward(g)
    v.grad.add_(1.0)
    return [w.grad.stride(), w.grad.is_contiguous(), wt.grad.stride(), g]


@scenario
def in_place_comparisons(L):
    """eq_ and kin write the comparison in self's dtype, recorded with zero gradients (EqBackward1 for a
    tensor, LtBackward0 for a number); leaves and shapes that do not broadcast into self are refused."""
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.eq_(L.tensor([2.0, 0.0, 6.0]))
    z = x * 2
    z.lt_(3.5)
    (z.sum() + y.sum()).backward()
    ints = L.tensor([1, 2, 3])
    ints.ge_(2)
    floats = L.tensor([1.0, 2.0, 3.0])
    floats.greater_(1.5).less_equal_(0.5)
    names = [None if f is None else f.name() for f, _ in y.grad_fn.next_functions]
    return [y, y.grad_fn.name(), names, z, z.grad_fn.name(), x.grad, ints, floats, raises(lambda: x.gt_(1)),
            raises(lambda: floats.le_(L.ones(2, 3)))]


@scenario
def random_sampling(L):
    """The in-place samplers on a tensor that requires grad: torch's nodes, dtypes, zero gradients, errors
    (draws differ between libraries, so only point masses and facts about the draws are compared)."""
    x = L.rand(3, requires_grad=True)
    samples = [(x * 1).normal_(), (x * 1).normal_(2.0, 3.0), (x * 1).uniform_(-1, 1), (x * 1).exponential_(),
               (x * 1).random_(), (x * 1).random_(5), (x * 1).random_(2, 5), (x * 1).bernoulli_(0.3),
               (x * 1).bernoulli_(L.full((3,), 0.5)), L.bernoulli(x), L.bernoulli(x, 0.3), L.normal(x, x)]
    sum(s.sum() for s in samples[:-2] + samples[-1:]).backward()
    ints = L.zeros(4, dtype=L.int64).random_(10)
    floats = L.zeros(1000).uniform_(-1, 1)
    misuse = [lambda: x.normal_(), lambda: L.zeros(3, dtype=L.int64).normal_(), lambda: L.zeros(3).uniform_(2, 1),
              lambda: L.zeros(3, dtype=L.int64).exponential_(), lambda: L.zeros(3).bernoulli_(1.5),
              lambda: L.multinomial(L.tensor([-1.0, 2.0]), 1), lambda: L.multinomial(L.tensor([1.0, 2.0]), 3),
              lambda: L.func.vmap(L.bernoulli)(L.rand(2, 3)), lambda: L.bernoulli(x, 0.3).sum().backward()]
    return [[(str(s.dtype), s.grad_fn.name()) for s in samples], x.grad, str(ints.dtype),
            bool(((ints >= 0) & (ints < 10)).all()), bool(((floats >= -1) & (floats < 1)).all()),
            L.multinomial(L.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), 1), L.bernoulli(L.tensor([0.0, 1.0])),
            L.func.vmap(L.bernoulli, randomness="different")(L.ones(2, 3)), [raises(f) for f in misuse]]


@scenario
def accumulation_and_zeroing(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    g = x.grad
    y.backward()
    return [first, x.grad, x.grad is g, x.is_leaf, y.is_leaf, y.requires_grad]


@scenario
def backward_twice_raises(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    return [raises(y.backward)]


@scenario
def non_scalar_needs_gradient(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    return [raises(lambda: (x * 2).backward())]


@scenario
def output_without_grad(L):
    x = L.tensor([1.0, 2.0])
    return [raises(lambda: (x * 2).sum().backward())]


@scenario
def integer_requires_grad(L):
    return [raises(lambda: L.tensor([1, 2], requires_grad=True)),
            raises(lambda: L.ones(2, dtype=L.int64).requires_grad_()),
            raises(lambda: L.zeros(2, dtype=L.int64, requires_grad=True))]


@scenario
def inplace_on_leaf(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    out = [raises(lambda: x.add_(1))]
    with L.no_grad():
        x.add_(1)
    return out + [x, x.requires_grad, x.is_leaf]


@scenario
def saved_tensor_modified(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    return [raises(lambda: y.sum().backward()), y._version]


@scenario
def saved_input_modified(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    b = a * a
    a.mul_(3)
    return [raises(lambda: b.sum().backward())]


@scenario
def saved_only_when_needed(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * 2  # the scalar needs no gradient, so y is not saved: changing y later is fine
    y.add_(1)
    z.sum().backward()
    b = L.tensor([3.0, 4.0])
    w = x * 1
    v = w * b  # b is read by w's formula: changing b breaks backward
    b.add_(1)
    return [x.grad, raises(lambda: v.sum().backward())]


@scenario
def inplace_keeps_history(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 2
    y.mul_(w)
    y += 1
    y.sum().backward()
    return [y, y.grad_fn.name(), x.grad, w.grad, y._version]


@scenario
def setitem_records(L):
    w = L.tensor(2.0, requires_grad=True)
    y = L.zeros(3)
    y[0] = w
    y[1] = w * 3
    z = L.zeros(3)
    z[[2]] = w
    (y.sum() + z.sum()).backward()
    return [y, y.grad_fn.name(), z.grad_fn.name(), w.grad]


@scenario
def inputs_restricts_accumulation(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    return [a.grad, b.grad]


@scenario
def backward_inputs_non_leaf(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    h = a * 3
    (h * h).sum().backward(inputs=[h])
    return [h.grad, a.grad]


@scenario
def autograd_grad_errors(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    u = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([1.0, 2.0])
    return [raises(lambda: L.autograd.grad((x * 2).sum(), [x, u])),
            raises(lambda: L.autograd.grad((x * 2).sum(), [x, c])),
            L.autograd.grad((x * 2).sum(), [x, u], allow_unused=True),
            L.autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)]


@scenario
def autograd_grad_leaves_grad_alone(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (g,) = L.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = L.autograd.grad(g.sum(), x)
    return [g, gg, x.grad, g.requires_grad, gg.requires_grad]


@scenario
def third_derivative(L):
    x = L.tensor([0.5, -1.5], requires_grad=True)
    y = (x.sin() * x.exp()).sum()
    (g1,) = L.autograd.grad(y, x, create_graph=True)
    (g2,) = L.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = L.autograd.grad(g2.sum(), x)
    return [g1, g2, g3]


@scenario
def hooks(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h1 = x.register_hook(lambda g: seen.append(g.clone()) or g * 10)
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    h1.remove()
    x.grad = None
    (x * 2).sum().backward()
    return [seen, x.grad]


@scenario
def retain_grad(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    z = (y * y).sum()
    z.backward()
    return [y.grad, x.grad, y.retains_grad, x.retains_grad,
            raises(lambda: L.tensor([1.0]).retain_grad()),
            raises(lambda: L.tensor([1.0]).register_hook(lambda g: g))]


@scenario
def detach_shares_memory(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    with L.no_grad():
        d.mul_(3)
    return [x, d.requires_grad, d.is_leaf, x._version, d._version]


@scenario
def requires_grad_flags(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    return [raises(lambda: setattr(y, "requires_grad", False)), y.requires_grad,
            L.tensor([1.0]).requires_grad_().requires_grad]


@scenario
def grad_modes(L):
    x = L.tensor([1.0], requires_grad=True)
    out = []
    with L.no_grad():
        out.append((x * 2).requires_grad)
        with L.enable_grad():
            out.append((x * 2).requires_grad)
    with L.set_grad_enabled(False):
        out.append((x * 2).requires_grad)
    out.append(L.is_grad_enabled())

    @L.no_grad()
    def f(t):
        return t * 2

    out.append(f(x).requires_grad)
    with L.inference_mode():
        out.append((x * 2).requires_grad)
    L.set_grad_enabled(False)
    out.append((x * 2).requires_grad)
    L.set_grad_enabled(True)
    out.append((x * 2).requires_grad)
    return out


@scenario
def next_functions(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 2) * x ** 2
    fn = y.grad_fn
    return [fn.name(), [(n.name() if n is not None else None, i) for n, i in fn.next_functions],
            [(n.name() if n is not None else None, i) for n, i in fn.next_functions[0][0].next_functions]]


@scenario
def masked_fill_edges(L):
    """A number value is no input of MaskedFillBackward0 (one edge); a 0-d tensor value is one of
    MaskedFillBackward1's (two edges), whether or not it requires grad."""
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    mask = L.tensor([True, False, True])
    fills = [x.masked_fill(mask, 2.5), x.masked_fill(mask, L.tensor(2.5)),
             x.masked_fill(mask, L.tensor(2.5, requires_grad=True)), (x * 1).masked_fill_(mask, 1)]
    return [[y.grad_fn.name(), [(n.name() if n is not None else None, i) for n, i in y.grad_fn.next_functions]]
            for y in fills]


@scenario
def broadcasting_grads(L):
    a = L.tensor([[1.0], [2.0]], requires_grad=True)
    b = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = L.tensor(2.0, dtype=L.float64, requires_grad=True)
    y = (a * b + c).sum()
    y.backward()
    return [y, a.grad, b.grad, c.grad]


@scenario
def dtype_promotion(L):
    f = L.tensor([1.0, 2.0])
    i = L.tensor([1, 2])
    d = L.tensor([1.0, 2.0], dtype=L.float64)
    return [(i * 2.5).dtype, (i + 1).dtype, (f + d).dtype, (f + L.tensor(1.0, dtype=L.float64)).dtype,
            (i / i).dtype, (i > 1).dtype, (L.tensor([True]) + 1).dtype, (f * True).dtype,
            (i.to(L.int32) + L.tensor(1)).dtype, L.tensor(3).dtype, L.tensor(3.0).dtype]


@scenario
def shape_errors(L):
    a = L.ones(2, 3)
    return [raises(lambda: a + L.ones(3, 2)), raises(lambda: a @ L.ones(2, 3)),
            raises(lambda: a.view(4)), raises(lambda: a.sum(2)), raises(lambda: L.mm(a, L.ones(4, 1)))]


@scenario
def custom_function(L):
    class MulAdd(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            return x * y + k

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x * ctx.k, None

    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([3.0, 4.0], requires_grad=True)
    out = MulAdd.apply(x, y, 2.0)
    out.sum().backward()
    return [out, out.grad_fn.name(), x.grad, y.grad]


@scenario
def custom_function_errors(L):
    class Bad(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class BadShape(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return L.ones(5)

    x = L.tensor([1.0, 2.0], requires_grad=True)
    return [raises(lambda: Bad.apply(x, x).sum().backward()),
            raises(lambda: BadShape.apply(x).sum().backward())]


@scenario
def custom_function_setup_context(L):
    class Cube(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    x = L.tensor([1.0, -2.0], requires_grad=True)
    y = Cube.apply(x)
    (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = L.autograd.grad(g.sum(), x)
    return [y, g, gg, y.grad_fn.name()]


@scenario
def custom_function_marks(L):
    class SortLike(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = L.tensor([1, 0])
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            ctx.needs = ctx.needs_input_grad
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return None if g is None else g * 2

    x = L.tensor([1.0, 2.0], requires_grad=True)
    y, idx = SortLike.apply(x)
    y.sum().backward()
    return [x.grad, idx.requires_grad, y.grad_fn.needs]


@scenario
def leaf_grad_is_not_aliased(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([1.0, 2.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad.zero_()
    v = L.ones(2)
    c = L.tensor([1.0, 2.0], requires_grad=True)
    (c * 1).backward(v)
    v.mul_(5)
    return [a.grad, b.grad, c.grad]


@scenario
def matmul_shapes(L):
    out = []
    for sa, sb in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                   ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((5, 1, 2, 3), (4, 3, 2)), ((2, 3), (6, 3, 4))]:
        a = L.arange(int(np.prod(sa)), dtype=L.float64).reshape(sa).requires_grad_()
        b = (L.arange(int(np.prod(sb)), dtype=L.float64).reshape(sb) / 7).requires_grad_()
        y = a @ b
        (y * y).sum().backward()
        out.append([y, y.grad_fn.name(), a.grad, b.grad])
    return out


@scenario
def indexing_duplicates(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x[[0, 0, 1]]
    y.sum().backward()
    m = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    z = m[:, 0] * 2 + m[1]
    z.sum().backward()
    return [x.grad, y.grad_fn.name(), z.grad_fn.name(), m.grad, m[0, 1].grad_fn.name()]


@scenario
def max_ties(L):
    x = L.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    y = L.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    v, i = y.max(1)
    v.sum().backward()
    return [x.grad, y.grad, i, v.grad_fn.name()]


@scenario
def reprs(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    return [repr(x), repr(x + 1), repr(x.sum()), repr(L.tensor([1, 2])), repr(L.tensor(1.5, dtype=L.float64)),
            repr(L.zeros(0, 3)), str(x.shape), repr(x.dtype), str(x.device), x.size(1), x.dim(), x.numel(),
            x.tolist(), x.sum().item(), repr(L.ones(2, dtype=L.bool))]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_torch(name: str) -> None:
    ours = observe(SCENARIOS[name](retrograd))
    theirs = observe(SCENARIOS[name](torch))
    assert ours == theirs


# ---- properties with no torch counterpart to compare against -----------------------------------


def test_long_chain_backward_no_recursion() -> None:
    x = retrograd.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.item() == 1.0


def test_graph_freed_without_gc() -> None:
    gc.disable()
    try:
        x = retrograd.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).tanh()
        node = weakref.ref(y.grad_fn)
        saved = weakref.ref(y.grad_fn.next_functions[0][0])
        y.sum().backward()
        del y
        assert node() is None and saved() is None
        z = x * 2
        probe = weakref.ref(z.grad_fn)
        del z  # never backpropagated: still freed by reference counting
        assert probe() is None
    finally:
        gc.enable()


def test_saved_tensors_released_after_backward() -> None:
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    big = retrograd.ones(1000) * 2
    y = (x.sum() * big).sum()
    node = y.grad_fn.next_functions[0][0]
    assert node._kept is not None
    y.backward()
    assert node._kept is None


def test_grad_mode_is_thread_local() -> None:
    seen = {}

    def worker() -> None:
        seen["thread"] = retrograd.is_grad_enabled()

    with retrograd.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not retrograd.is_grad_enabled()
    assert seen["thread"] is True


def test_from_numpy_shares_memory() -> None:
    a = np.zeros(3, dtype=np.float32)
    t = retrograd.from_numpy(a)
    a[0] = 5
    t[1] = 7
    assert t.tolist() == [5.0, 7.0, 0.0] and a.tolist() == [5.0, 7.0, 0.0]


def test_gradients_against_finite_differences() -> None:
    """A small network's gradient in float64 against central differences."""
    rng = np.random.default_rng(0)
    w = retrograd.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    x = retrograd.tensor(rng.standard_normal((5, 4)))
    target = retrograd.tensor([0, 2, 1, 1, 0])

    def loss(w):
        return retrograd.nn.functional.cross_entropy((x @ w).tanh(), target)

    assert retrograd.autograd.gradcheck(loss, (w,))
