"""The calls torch's OpInfo sweep (tests/test_op_db.py) found raising in retrograd where torch computes, and the ops it
found missing that are now built, each against torch 2.13: values, gradients (float64, finite differences too) and
grad_fn names, and the errors torch gives next to them (types and texts)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)
A23, A3, A4 = RNG.normal(size=(2, 3)), RNG.normal(size=3), RNG.normal(size=(1, 3))
B322 = RNG.normal(size=(3, 2, 2))

# (name, fn(lib, *tensors), float64 inputs that require grad): each runs in both libraries on the same values
CASES = [
    ("max of a 0-d other", lambda L, x, y: L.max(x, y), [A3, np.array(0.25)]),
    ("min of a 0-d other", lambda L, x, y: L.min(x, y), [A3, np.array(0.25)]),
    ("cosine_similarity of 0-d", lambda L, x, y: L.nn.functional.cosine_similarity(x, y, dim=0),
     [np.array(1.5), np.array(-2.0)]),
    ("cosine_similarity of 1-d", lambda L, x, y: L.nn.functional.cosine_similarity(x, y, dim=0), [A3, A3[::-1].copy()]),
    ("normalize 0-d", lambda L, x: L.nn.functional.normalize(x, p=1.2, dim=0), [np.array(-0.5)]),
    ("unfold of an empty batch", lambda L, x: L.nn.functional.unfold(x, 2, padding=1), [np.zeros((0, 2, 3, 3))]),
    ("fold of an empty batch", lambda L, x: L.nn.functional.fold(x, (4, 4), 2), [np.zeros((0, 8, 9))]),
    ("multi_margin_loss of 0-d", lambda L, x: L.nn.functional.multi_margin_loss(x, L.tensor(0)), [np.array(1.5)]),
    ("multi_margin_loss, 1-element target", lambda L, x: L.nn.functional.multi_margin_loss(
        x, L.tensor([2]), reduction="none"), [A3]),
    ("multi_margin_loss, 0-d target", lambda L, x: L.nn.functional.multi_margin_loss(x, L.tensor(1)), [A3]),
    ("multilabel_margin_loss of 0-d", lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([0])),
     [np.array(1.5)]),
    ("multilabel_margin_loss of 1-d", lambda L, x: L.nn.functional.multilabel_margin_loss(
        x, L.tensor([2, 0, -1]), reduction="none"), [A3]),
    ("batch_norm of an empty input", lambda L, x, w, b: L.nn.functional.batch_norm(
        x, L.zeros(2, dtype=L.float64), L.ones(2, dtype=L.float64), w, b, training=True),
     [np.zeros((0, 3)), A3, A3]),
    ("gather with int32 index", lambda L, x: L.gather(x, 1, L.tensor([[0, 2], [1, 1]], dtype=L.int32)), [A23]),
    ("gather with an empty index", lambda L, x: L.gather(x, 1, L.tensor([[]], dtype=L.uint8)), [A23]),
    ("gather of 0-d with a 1-d index", lambda L, x: L.gather(x, 0, L.tensor([0, 0])), [np.array(2.5)]),
    ("scatter with int32 index", lambda L, x, s: L.scatter(x, 0, L.tensor([[1, 0, 1]], dtype=L.int32), s),
     [A23, A4]),
    ("scatter_add with int32 index", lambda L, x, s: L.scatter_add(x, 0, L.tensor([[1, 0, 1]], dtype=L.int32), s),
     [A23, A4]),
    ("take_along_dim, negative indices", lambda L, x: L.take_along_dim(x, L.tensor([[-3, -1], [0, -2]]), 1), [A23]),
    ("tensordot, size-1 contracted dim", lambda L, a, b: L.tensordot(a, b, ([0], [2])), [A4, B322]),
    ("tensordot, size-1 contracted dim of b", lambda L, a, b: L.tensordot(a, b, ([0], [0])), [A23, A4]),
    ("norm p='nuc'", lambda L, x: L.norm(x, p="nuc"), [A23]),
    # ops the sweep found missing
    ("deg2rad", lambda L, x: L.deg2rad(x), [A23]),
    ("rad2deg method", lambda L, x: x.rad2deg(), [A23]),
    ("sinc", lambda L, x: L.sinc(x), [A23]),
    ("float_power", lambda L, x: L.float_power(x.abs(), 2.5), [A23]),
    ("float_power of a tensor exponent", lambda L, x, y: L.float_power(x.abs(), y), [A3, A3]),
    ("inner", lambda L, x, y: L.inner(x, y), [A23, A3]),
    ("inner with 0-d", lambda L, x, y: L.inner(x, y), [np.array(2.0), A23]),
    ("fill with a 0-d tensor", lambda L, x, v: L.fill(x, v), [A23, np.array(2.0)]),
    ("diff with prepend and append", lambda L, x, p, a: L.diff(x, n=2, dim=0, prepend=p, append=a), [A23, A4, A4]),
    ("trapezoid at points", lambda L, y, x: L.trapezoid(y, x), [A23, np.array([0.0, 1.0, 3.0])]),
    ("trapezoid with dx", lambda L, y: L.trapezoid(y, dx=0.5, dim=0), [A23]),
    ("trapz at points of y's shape", lambda L, y, x: L.trapz(y, x), [A23, A23 + np.array([0.0, 1.0, 2.0])]),
    ("cumulative_trapezoid at points", lambda L, y, x: L.cumulative_trapezoid(y, x), [A23, np.array([0.0, 1.0, 3.0])]),
    ("cumulative_trapezoid with dx", lambda L, y: L.cumulative_trapezoid(y, dx=2.0), [A23]),
    ("diagflat", lambda L, x: L.diagflat(x, 1), [A23]),
    ("hsplit", lambda L, x: L.hsplit(x, 3)[1], [A23]),
    ("vsplit at indices", lambda L, x: x.vsplit([1])[1], [A23]),
    ("dsplit", lambda L, x: L.dsplit(x, 2)[0], [B322]),
    ("meshgrid xy", lambda L, x, y: L.meshgrid(x, y, indexing="xy")[1], [A3, A23[0, :2]]),
    ("cartesian_prod", lambda L, x, y: L.cartesian_prod(x, y), [A3, A23[0, :2]]),
    ("broadcast_tensors", lambda L, x, y: L.broadcast_tensors(x, y)[1], [A23, A3]),
    ("sum_to_size", lambda L, x: x.sum_to_size(1, 2, 1), [B322]),
    ("addr", lambda L, c, a, b: L.addr(c, a, b, beta=0.5, alpha=2.0), [A23, A23[:, 0], A3]),
    ("addr, broadcast input", lambda L, c, a, b: c.addr(a, b), [A3, A23[:, 0], A3]),
]


def run(lib, fn, arrays):
    inputs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    return inputs, fn(lib, *inputs)


@pytest.mark.parametrize("name,fn,arrays", CASES, ids=[c[0] for c in CASES])
def test_call_computes_as_torch(name, fn, arrays):
    (tin, tout), (rin, rout) = run(torch, fn, arrays), run(retrograd, fn, arrays)
    assert tuple(rout.shape) == tuple(tout.shape) and str(rout.dtype) == str(tout.dtype)
    np.testing.assert_allclose(rout.detach().numpy(), tout.detach().numpy(), rtol=1e-7, atol=1e-7)
    assert type(rout.grad_fn).__name__ == type(tout.grad_fn).__name__
    cot = RNG.normal(size=tuple(tout.shape))
    tg = torch.autograd.grad(tout, tin, torch.tensor(cot), allow_unused=True)
    rg = retrograd.autograd.grad(rout, rin, retrograd.tensor(cot), allow_unused=True)
    for a, b in zip(rg, tg):
        if b is None:
            assert a is None or not a.numpy().any()
            continue
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-7)
    if all(a.size for a in arrays):
        assert retrograd.autograd.gradcheck(lambda *t: fn(retrograd, *t), tuple(rin))


ERRORS = [
    ("gather with a float index", lambda L: L.gather(L.zeros(2, 3), 1, L.tensor([[0.0]]))),
    ("take_along_dim with int32 indices", lambda L: L.take_along_dim(L.zeros(2, 3), L.tensor([[0]], dtype=L.int32), 1)),
    ("tensordot with unequal dims", lambda L: L.tensordot(L.zeros(3, 3), L.zeros(2, 3), ([0], [0]))),
    ("multi_margin_loss, target too long", lambda L: L.nn.functional.multi_margin_loss(L.zeros(3), L.tensor([0, 1]))),
    ("multi_margin_loss, empty classes", lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 0), L.tensor([0, 0]))),
    ("multi_margin_loss of 3-d", lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3, 4), L.tensor([0, 1]))),
    ("multilabel_margin_loss, 0-d target of a vector",
     lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(3), L.tensor(0))),
    ("norm p='fro' over three dims", lambda L: L.norm(L.zeros(3, 2, 2), p="fro", dim=(0, 1, 2))),
    ("hsplit of 0-d", lambda L: L.hsplit(L.tensor(1.0), 2)),
    ("hsplit, sections not dividing", lambda L: L.hsplit(L.zeros(4, 6), 4)),
    ("vsplit of a vector", lambda L: L.vsplit(L.zeros(3), 1)),
    ("dsplit, sections not dividing", lambda L: L.dsplit(L.zeros(2, 2, 3), 2)),
    ("positive of bool", lambda L: L.positive(L.tensor([True]))),
    ("meshgrid of nothing", lambda L: L.meshgrid(indexing="ij")),
    ("meshgrid indexing", lambda L: L.meshgrid(L.ones(2), indexing="foo")),
    ("meshgrid of two dtypes", lambda L: L.meshgrid(L.arange(3), L.arange(2.0), indexing="ij")),
    ("meshgrid of two dtypes before indexing", lambda L: L.meshgrid([L.ones(3), L.ones(2, dtype=L.int32)],
                                                                      indexing="foo")),
    ("cartesian_prod of two dtypes", lambda L: L.cartesian_prod(L.arange(3), L.arange(2, dtype=L.int32))),
    ("cartesian_prod of 2-d", lambda L: L.cartesian_prod(L.ones(2, 2))),
    ("diff of 0-d", lambda L: L.diff(L.tensor(1.0))),
    ("diff of negative order", lambda L: L.diff(L.ones(3), n=-1)),
    ("trapezoid, x of the wrong length", lambda L: L.trapezoid(L.ones(2, 3), L.ones(5))),
    ("fill with a vector", lambda L: L.fill(L.ones(2), L.ones(2))),
    ("inner, last dims differ", lambda L: L.inner(L.ones(2, 3), L.ones(4))),
    ("addr of a matrix", lambda L: L.addr(L.ones(2, 3), L.ones(2, 1), L.ones(3))),
    ("addr, input not broadcastable", lambda L: L.addr(L.ones(2, 4), L.ones(2), L.ones(3))),
    ("sum_to_size, not expandable", lambda L: L.ones(3).sum_to_size(2)),
    ("linspace of a 1-d start", lambda L: L.linspace(L.tensor([1.0]), 3, 4)),
    ("logspace of a 2-d end", lambda L: L.logspace(1, L.ones(2, 2), 4)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_as_torch(name, fn):
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value), match=f"^{__import__('re').escape(str(theirs.value))}$"):
        fn(retrograd)


def test_identities_and_empty_integrals_as_torch():
    for lib in (torch, retrograd):
        x = lib.ones(2, 3)
        assert lib.positive(x) is x and lib.resolve_neg(x) is x and lib.broadcast_tensors(x, lib.ones(3))[0] is x
        assert lib.trapezoid(lib.ones(3, 0)).shape == (3,) and lib.cumulative_trapezoid(lib.ones(3, 0)).shape == (3, 0)
        assert str(lib.trapezoid(lib.tensor([1, 2, 3])).dtype) == "torch.float32"
        assert lib.diff(lib.tensor([True, False, False])).tolist() == [True, False]
        assert str(lib.float_power(lib.tensor([1, 2]), 2).dtype) == "torch.float64"
        assert str(lib.float_power(lib.ones(2), 2 + 1j).dtype) == "torch.complex128"
        assert lib.cartesian_prod(lib.ones(3)).shape == (3,)
        assert type(lib.zero_(lib.ones(2, requires_grad=True).clone()).grad_fn).__name__ == "ZeroBackward0"


def test_factories_take_device_and_tensor_bounds():
    for lib in (torch, retrograd):
        x = lib.ones(2, dtype=lib.float64)
        made = [x.new_zeros((2, 3), device="cpu"), x.new_ones(2, device="cpu", layout=lib.strided),
                x.new_full((2,), 3.0, device="cpu"), x.new_empty((1,), device="cpu", pin_memory=False),
                x.new_empty_strided((2, 2), (2, 1), device="cpu"), lib.normal(1.5, 0.3, (2, 3), device="cpu"),
                lib.linspace(lib.tensor(-2.0), lib.tensor(3.0), 5, dtype=lib.float64),
                lib.logspace(lib.tensor(0.0), 2, 3, dtype=lib.float64)]
        assert [tuple(m.shape) for m in made] == [(2, 3), (2,), (2,), (1,), (2, 2), (2, 3), (5,), (3,)]
        assert [str(m.dtype) for m in made[:5]] == ["torch.float64"] * 5
        assert x.layout is lib.strided and repr(lib.strided) == "torch.strided"
    np.testing.assert_allclose(retrograd.linspace(retrograd.tensor(-2.0), 3.0, 5).numpy(),
                               torch.linspace(torch.tensor(-2.0), 3.0, 5).numpy())
