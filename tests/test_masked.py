"""torch.masked against torch: values (NaN where torch gives NaN), dtypes, grad_fn names and gradients of every
reduction and normalisation on strided tensors, with a broadcast mask, a fully masked row and no mask; and
finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4))
MASK = np.array([[True, False, True, True], [False, False, False, False], [True, True, False, True]])
ROW_MASK = np.array([True, False, True, True])  # broadcast over the rows

CASES = [
    ("sum", (), {"dim": 1}), ("sum", (), {}), ("sum", (), {"dim": (0, 1), "keepdim": True}),
    ("prod", (), {"dim": 1}), ("prod", (), {}),
    ("cumsum", (1,), {}), ("cumprod", (0,), {}),
    ("amax", (), {"dim": 1}), ("amin", (), {"dim": 0, "keepdim": True}),
    ("argmax", (), {"dim": 1}), ("argmin", (), {"dim": 0}),
    ("mean", (), {"dim": 1}), ("mean", (), {}),
    ("median", (), {"dim": 1}),
    ("norm", (2.0,), {"dim": 1}), ("norm", (1.0,), {}), ("norm", (float("inf"),), {"dim": 1}),
    ("var", (), {"dim": 1}), ("var", (1,), {"unbiased": False}), ("std", (), {"dim": 1, "correction": 0}),
    ("std", (), {"dim": 0, "keepdim": True}),
    ("softmax", (1,), {}), ("log_softmax", (1,), {}), ("softmin", (0,), {}),
    ("normalize", (2.0, 1), {}),
    ("logsumexp", (), {"dim": 1}),
]


def run(lib, name, args, kwargs, mask):
    x = lib.tensor(X, requires_grad=True)
    m = None if mask is None else lib.tensor(mask)
    out = getattr(lib.masked, name)(x, *args, **kwargs, mask=m)
    grad = None
    if out.requires_grad:
        weights = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        finite = lib.tensor(np.isfinite(out.detach().numpy()))
        (grad,) = lib.autograd.grad((out * weights).where(finite, 0).sum(), x)
    return out, grad


@pytest.mark.parametrize("mask", [MASK, ROW_MASK, None], ids=["mask", "broadcast", "none"])
@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(name, args, kwargs, mask):
    ours, our_grad = run(retrograd, name, args, kwargs, mask)
    theirs, their_grad = run(torch, name, args, kwargs, mask)
    assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    if their_grad is None:
        assert our_grad is None
    else:
        np.testing.assert_allclose(our_grad.numpy(), their_grad.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)


def test_logaddexp_with_two_masks():
    y = rng.normal(size=(3, 4))
    outs = []
    for lib in (torch, retrograd):
        a, b = lib.tensor(X, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = lib.masked.logaddexp(a, b, input_mask=lib.tensor(MASK), other_mask=lib.tensor(ROW_MASK))
        finite = lib.tensor(np.isfinite(out.detach().numpy()))
        grads = lib.autograd.grad(out.where(finite, 0).sum(), (a, b))
        outs.append((out.detach().numpy(), [g.numpy() for g in grads], type(out.grad_fn).__name__))
    (a, ga, na), (b, gb, nb) = outs
    assert na == nb
    np.testing.assert_allclose(a, b, rtol=1e-12)
    for p, q in zip(ga, gb):
        np.testing.assert_allclose(p, q, rtol=1e-12)


@pytest.mark.parametrize("name,args,kwargs", [("sum", (), {"dim": 1}), ("prod", (), {"dim": 1}),
                                              ("mean", (), {"dim": 0}), ("var", (), {"dim": 1}),
                                              ("softmax", (1,), {}), ("normalize", (2.0, 1), {}),
                                              ("logsumexp", (), {"dim": 0}), ("cumprod", (1,), {})])
def test_gradients_against_finite_differences(name, args, kwargs):
    mask = retrograd.tensor(np.array([[True, False, True, True], [True, True, False, True], [False, True, True, True]]))
    x = retrograd.tensor(X, requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda t: getattr(retrograd.masked, name)(t, *args, **kwargs, mask=mask),
                                        (x,))


def test_errors_match_torch():
    def failure(lib, call):
        with pytest.raises(Exception) as info:
            call(lib)
        return type(info.value).__name__, str(info.value)

    for call in [lambda lib: lib.masked.sum(lib.ones(2, 3), dim=(1, 1), mask=lib.ones(2, 3).bool()),
                 lambda lib: lib.masked.sum(lib.ones(2, 3), dim=2, mask=lib.ones(2, 3).bool()),
                 lambda lib: lib.masked.sum(lib.ones(3), mask=lib.ones(2, 3).bool()),
                 lambda lib: lib.masked.mean(lib.ones(2, 3).long(), mask=lib.ones(2, 3).bool()),
                 lambda lib: lib.masked.median(lib.ones(2, 3).long(), mask=lib.zeros(2, 3).bool())]:
        assert failure(retrograd, call) == failure(torch, call)
