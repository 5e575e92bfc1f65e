"""torch's internal network entry points against torch where the op database and the OpInfo sweep do not reach:
native_batch_norm / native_layer_norm / native_group_norm (their statistics, running-statistics updates, gradients
through group norm's statistics), F.multi_head_attention_forward without dropout (values and gradients, masks,
separate projections, static keys), and torch.ops.aten's operators (overloads, unknown names)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3, 5))


def both(make):
    """make(lib, tensor) in both libraries, on float64 leaves that require grad."""
    return [make(lib, lambda a, grad=True, lib=lib: lib.tensor(a, requires_grad=grad)) for lib in (retrograd, torch)]


def assert_close(ours, theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_statistics_and_running_updates_are_torchs(training):
    w, b, rm, rv = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3), RNG.uniform(0.5, 2, size=3)
    runs = both(lambda lib, t: (t(rm, False), t(rv, False),
                                lib.native_batch_norm(t(X), t(w), t(b), t(rm, False), t(rv, False), training, 0.3,
                                                      1e-5)))
    for (ours_rm, ours_rv, ours), (theirs_rm, theirs_rv, theirs) in [runs]:
        for a, c in zip(ours, theirs):
            assert a.shape == c.shape and a.requires_grad == c.requires_grad
            assert_close(a, c)
        assert_close(ours_rm, theirs_rm)
        assert_close(ours_rv, theirs_rv)


def test_native_layer_norm_statistics_are_torchs():
    bias = RNG.normal(size=(3, 5))
    ours, theirs = both(lambda lib, t: lib.native_layer_norm(t(X), (3, 5), None, t(bias), 1e-3))
    for a, c in zip(ours, theirs):
        assert a.shape == c.shape and a.requires_grad == c.requires_grad
        assert_close(a, c)


def test_native_group_norm_gradients_through_its_statistics_are_torchs():
    def run(lib, t):
        x = t(X.reshape(2, 6, 5))
        out, mean, rstd = lib.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5)
        loss = (out * out.detach().cos()).sum() + (mean * 3).sum() + rstd.square().sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        return (out, mean, rstd, g, *lib.autograd.grad(g.sin().sum(), x))

    for a, c in zip(*both(run)):
        assert_close(a, c)


def test_native_group_norm_refuses_a_wrong_element_count():
    with pytest.raises(RuntimeError, match="Expected input to have 60 elements"):
        retrograd.native_group_norm(retrograd.ones(2, 6, 4), None, None, 2, 6, 5, 3, 1e-5)


def _attention(lib, t, *, separate=False, static=False, masks=False, zero_attn=False, batched=True):
    e, heads, length, batch = 4, 2, 3, 2
    shape = (length, batch, e) if batched else (length, e)
    q, k, v = (t(RNG.normal(size=shape)) for _ in range(3))
    weights = dict(q_proj_weight=t(RNG.normal(size=(e, e))), k_proj_weight=t(RNG.normal(size=(e, e))),
                   v_proj_weight=t(RNG.normal(size=(e, e)))) if separate else {}
    extra = {}
    if static:
        extra = dict(static_k=t(RNG.normal(size=(batch * heads, 5, e // heads))),
                     static_v=t(RNG.normal(size=(batch * heads, 5, e // heads))))
    if masks:
        extra.update(attn_mask=t(RNG.normal(size=(length, length)), False),  # bias_k and bias_v add a key
                     key_padding_mask=lib.tensor([[False, True, False], [False, False, True]]))
    out, attn = lib.nn.functional.multi_head_attention_forward(
        q, k, v, e, heads, None if separate else t(RNG.normal(size=(3 * e, e))), t(RNG.normal(size=3 * e)),
        t(RNG.normal(size=(1, 1, e))) if masks else None, t(RNG.normal(size=(1, 1, e))) if masks else None,
        zero_attn, 0.0, t(RNG.normal(size=(e, e))), t(RNG.normal(size=e)), use_separate_proj_weight=separate,
        average_attn_weights=not masks, **weights, **extra)
    inputs = [q, k, v, *weights.values()]
    return out, attn, *lib.autograd.grad((out.sin().sum() + attn.cos().sum()), inputs, allow_unused=True)


@pytest.mark.parametrize("options", [{}, {"separate": True}, {"masks": True}, {"zero_attn": True},
                                     {"batched": False}, {"static": True}])
def test_multi_head_attention_forward_is_torchs(options):
    global RNG
    results = []
    for lib in (retrograd, torch):
        RNG = np.random.default_rng(1)
        results.append(_attention(lib, lambda a, grad=True, lib=lib: lib.tensor(a, requires_grad=grad), **options))
    for a, c in zip(*results):
        if a is None or c is None:
            assert (a is None or not a.detach().numpy().any()) and (c is None or not c.detach().numpy().any())
            continue
        assert_close(a, c)


def test_multi_head_attention_forward_checks_the_embedding_size():
    x = retrograd.ones(3, 2, 4)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6, but got 4"):
        retrograd.nn.functional.multi_head_attention_forward(x, x, x, 6, 2, retrograd.ones(12, 4), None, None,
                                                              None, False, 0.0, retrograd.ones(4, 4), None)


def test_aten_operators_and_their_overloads():
    x = np.arange(12.0).reshape(3, 4)
    for lib in (retrograd, torch):
        assert lib.ops.aten.slice.Tensor(lib.tensor(x), 1, -3, 100, 2).tolist() == x[:, 1::2].tolist()
        assert lib.ops.aten.slice(lib.tensor(x), 0, 5).shape == (0, 4)
    mask = RNG.uniform(size=(3, 4)) > 0.5
    ours, theirs = both(lambda lib, t: lib.ops.aten.native_dropout_backward.default(t(x), lib.tensor(mask), 2.0))
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__ == "NativeDropoutBackwardBackward0"
    assert_close(ours, theirs)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        retrograd.ops.aten.slice(retrograd.tensor(x), 0, 0, 2, 0)
    with pytest.raises(AttributeError, match="torch.ops.aten.no_such_op"):
        retrograd.ops.aten.no_such_op  # noqa: B018
