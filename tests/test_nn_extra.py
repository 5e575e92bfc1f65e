"""The less common nn functionals and their modules against torch: argument errors (types and texts), the errors
of their undefined second derivatives, module reprs and state, and what the op database cannot express."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd


def failure(call, lib):
    with pytest.raises(Exception) as info:
        call(lib)
    return type(info.value).__name__, str(info.value)


LP = np.random.default_rng(0).normal(size=(6, 2, 4))
ERRORS = [
    lambda lib: lib.nn.functional.channel_shuffle(lib.ones(2, 6, 3), 4),
    lambda lib: lib.nn.functional.channel_shuffle(lib.ones(2, 6, 3), 0),
    lambda lib: lib.nn.functional.channel_shuffle(lib.ones(2, 6), 2),
    lambda lib: lib.nn.functional.pdist(lib.ones(2, 6, 3)),
    lambda lib: lib.nn.functional.pdist(lib.ones(2, 6), p=-1),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2, 1), lib.tensor([0])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([[1, 2]]), lib.ones(3, 2), lib.tensor([0])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([[1, 2]]), lib.ones(3, 2), [0]),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2)),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([[0]])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([[[1]]]), lib.ones(3, 2)),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]), mode="min"),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]), mode="max",
                                                scale_grad_by_freq=True),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]), mode="mean",
                                                per_sample_weights=lib.ones(2)),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(3, 2), lib.tensor([0]),
                                                per_sample_weights=lib.ones(3)),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2, 0]), lib.ones(3, 2), lib.tensor([1, 2])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2, 0], dtype=lib.int32), lib.ones(3, 2),
                                                lib.tensor([-1], dtype=lib.int32)),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2, 0]), lib.ones(3, 2), lib.tensor([0, 4]),
                                                include_last_offset=True),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2, 0]), lib.ones(3, 2), lib.tensor([0, 2, -1])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 2, 0]), lib.ones(3, 2), lib.tensor([0.0, 1.0])),
    lambda lib: lib.nn.functional.embedding_bag(lib.tensor([[1.0, 2.0]], dtype=lib.float64), lib.ones(3, 2)),
    lambda lib: lib.nn.functional.ctc_loss(lib.tensor(LP), lib.tensor([[1, 2, 2], [3, 1, 0]]), lib.tensor([7, 5]),
                                           lib.tensor([3, 2])),
    lambda lib: lib.nn.functional.ctc_loss(lib.tensor(LP), lib.tensor([[1, 2, 2], [3, 1, 0]]), lib.tensor([6, 5]),
                                           lib.tensor([4, 2])),
    lambda lib: lib.nn.functional.ctc_loss(lib.tensor(LP), lib.tensor([1, 2, 2]), lib.tensor([6, 5]),
                                           lib.tensor([3, 2])),
    lambda lib: lib.nn.functional.ctc_loss(lib.tensor(LP), lib.tensor([[1, 2, 2], [3, 1, 0]]), lib.tensor([6, 5]),
                                           lib.tensor([3, 2]), blank=4),
    lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3),
                                                                    margin=1.0),
    lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3),
                                                                    margin=0.0),
    lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(2, 3),
                                                                    reduction="max"),
    lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=-1.0),
    lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, 2, 3), lib.ones(4, 3), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, 3), lib.ones(4, 2), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, 3), lib.ones(4, 3), lib.tensor([0, 1]),
                                                       linear_bias=lib.ones(3)),
    lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(3), lib.ones(4, 2, 3), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.linear_cross_entropy(lib.ones(2, 3), lib.ones(4, 3), lib.ones(2, 4),
                                                       ignore_index=1),
    lambda lib: lib.nn.LinearCrossEntropyLoss(3, 4, weight=lib.ones(3)),
    lambda lib: lib.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=2.0),
    lambda lib: lib.nn.LinearCrossEntropyOptions(acc_policy="fast"),
    lambda lib: lib.nn.LinearCrossEntropyOptions(chunking_method="aspect_ratio:0"),
    lambda lib: lib.nn.LinearCrossEntropyOptions(batch_chunk_size=0),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 3),
                                                        _random_samples=lib.rand(2, 3)),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 3),
                                                        _random_samples=lib.rand(1, 3, 2)),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 3),
                                                        _random_samples=lib.rand(2, 4, 2)),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 3),
                                                        _random_samples=lib.rand(2, 3, 3)),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 3),
                                                        _random_samples=lib.rand(2, 3, 2, dtype=lib.float64)),
    lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(2, 3, 7, 6), 2, (4, 6)),
    lambda lib: lib.nn.functional.fractional_max_pool3d(lib.ones(1, 2, 4, 7, 6), 2, (3, 6, 5)),
    lambda lib: lib.nn.FractionalMaxPool2d(2),
    lambda lib: lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda lib: lib.nn.FractionalMaxPool3d(2, output_ratio=1.5),
    lambda lib: lib.nn.FractionalMaxPool3d(0, output_ratio=0.5),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 30]]]]), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]), 2,
                                               output_size=(9, 4)),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]), 2,
                                               output_size=(4, 4, 4)),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[[0, 1], [2, 3]]]]).int(), 2),
    lambda lib: lib.nn.functional.max_unpool2d(lib.ones(1, 1, 2, 2), lib.tensor([[[0, 1], [2, 3]]]), 2),
    lambda lib: lib.nn.functional.max_unpool1d(lib.ones(1, 2, 2), lib.tensor([[[0, 1], [2, 3]]]), 2,
                                               output_size=(9,)),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 3, 3, 3), lib.zeros(1, 2, 2, 2, 3), mode="bicubic",
                                              align_corners=False),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 3, 3), lib.zeros(1, 2, 2, 3), align_corners=False),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 3, 3), lib.zeros(2, 2, 2, 2), align_corners=False),
    lambda lib: lib.nn.functional.grid_sample(lib.ones(1, 2, 3, 3), lib.zeros(1, 2, 2, 2, 2), align_corners=False),
    # a forward hook that returns a tuple feeds it to the next ReLU(inplace=True): torch names the in-place function
    lambda lib: lib.nn.functional.relu((lib.ones(2),), inplace=True),
    lambda lib: lib.nn.functional.selu((lib.ones(2),), inplace=True),
    lambda lib: lib.nn.functional.relu6((lib.ones(2),), inplace=True),
    lambda lib: lib.nn.functional.relu6((lib.ones(2),)),
    lambda lib: lib.nn.functional.rrelu_((lib.ones(2),)),
    lambda lib: lib.nn.functional.threshold_((lib.ones(2),), 0.1, 0.0),
]


@pytest.mark.parametrize("call", ERRORS, ids=range(len(ERRORS)))
def test_argument_errors_match_torch(call):
    assert failure(call, retrograd) == failure(call, torch)


def test_decreasing_embedding_bag_offsets_are_refused_as_torchs_threaded_kernel():
    """Offsets that go down are undefined input to torch: its kernel checks them only when it runs on several
    threads, and on one it reads the bags it finds. retrograd refuses them with that check's words on any machine."""
    with pytest.raises(RuntimeError, match=r"Expected i < index_size to be true, but got false"):
        retrograd.nn.functional.embedding_bag(retrograd.tensor([1, 2, 0]), retrograd.ones(3, 2),
                                              retrograd.tensor([0, 2, 1]))


@pytest.mark.parametrize("name,call", [
    ("pdist", lambda lib, x: lib.nn.functional.pdist(x)),
    ("ctc_loss", lambda lib, x: lib.nn.functional.ctc_loss(x.reshape(2, 2, 3).log_softmax(2), lib.tensor([[1], [1]]),
                                                           [2, 2], [1, 1]).exp()),
])
def test_undefined_second_derivatives_raise_as_in_torch(name, call):
    """torch declares no derivative of pdist's and ctc_loss's backward: differentiating their gradient raises."""
    def second(lib):
        x = lib.tensor(np.arange(12.0).reshape(4, 3) / 7, requires_grad=True)
        (g,) = lib.autograd.grad(call(lib, x).sum(), x, create_graph=True)
        return type(g.grad_fn).__name__, failure(lambda _: g.sum().backward(), lib)

    assert second(retrograd) == second(torch)


def test_embedding_bag_scales_gradients_by_each_indexs_frequency():
    """scale_grad_by_freq divides each index's gradient by how often it occurs in the batch, as F.embedding does
    (torch 2.13's CPU embedding_bag kernel divides by the frequency of the index at the position of the group's
    rank in the sorted indices instead, a bug retrograd does not copy); checked against torch's F.embedding."""
    indices = [[2, 2, 1], [4, 0, 0]]
    weight = np.random.default_rng(1).normal(size=(6, 3))
    w_t = torch.tensor(weight, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(indices), w_t, scale_grad_by_freq=True).sum(1).sum().backward()
    w_r = retrograd.tensor(weight, requires_grad=True)
    retrograd.nn.functional.embedding_bag(retrograd.tensor(indices), w_r, mode="sum",
                                          scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w_r.grad.numpy(), w_t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_empty_bags_match_torch(mode):
    """An empty bag (two equal offsets) gives zeros and passes no gradient."""
    def bags(lib):
        weight = lib.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
        out = lib.nn.functional.embedding_bag(lib.tensor([1, 2, 3]), weight, lib.tensor([0, 0, 3, 3]), mode=mode)
        (out * lib.arange(8.0).reshape(4, 2)).sum().backward()
        return out.detach().numpy(), weight.grad.numpy()

    for ours, theirs in zip(bags(retrograd), bags(torch)):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("offsets,include_last_offset", [([], False), ([0], True)])
def test_embedding_bag_without_bags_is_empty(offsets, include_last_offset):
    """No offsets (or only the closing one) make no bags, whatever the input holds: a (0, D) result, as torch's
    forward gives (its backward there crashes the process, so torch is not run here)."""
    weight = retrograd.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    out = retrograd.nn.functional.embedding_bag(retrograd.tensor([1, 2, 3]), weight, retrograd.tensor(
        offsets, dtype=retrograd.long), include_last_offset=include_last_offset)
    out.sum().backward()
    assert tuple(out.shape) == (0, 2)
    np.testing.assert_array_equal(weight.grad.numpy(), np.zeros((4, 2)))


def test_modules_match_torch():
    rng = np.random.default_rng(2)
    cases = [
        (lambda lib: lib.nn.EmbeddingBag(10, 3, mode="max", padding_idx=-2),
         lambda lib: (lib.tensor([1, 8, 4, 5, 4]), lib.tensor([0, 2]))),
        (lambda lib: lib.nn.EmbeddingBag(10, 3, mode="sum", max_norm=1.0, include_last_offset=True),
         lambda lib: (lib.tensor([1, 8, 4, 5, 4]), lib.tensor([0, 2, 5]), lib.tensor(rng.normal(size=5)))),
        (lambda lib: lib.nn.ChannelShuffle(2), lambda lib: (lib.tensor(rng.normal(size=(1, 4, 2))),)),
        (lambda lib: lib.nn.FractionalMaxPool2d((2, 3), output_ratio=(0.5, 0.7), _random_samples=lib.tensor(
            np.full((1, 2, 2), 0.3))), lambda lib: (lib.tensor(rng.normal(size=(1, 2, 6, 7))),)),
        (lambda lib: lib.nn.MaxUnpool2d(2, stride=1, padding=0),
         lambda lib: (lib.tensor(rng.normal(size=(1, 1, 2, 2))), lib.tensor([[[[0, 2], [4, 8]]]]))),
        (lambda lib: lib.nn.CTCLoss(blank=1, zero_infinity=True),
         lambda lib: (lib.tensor(LP).log_softmax(2), lib.tensor([[2, 2, 3], [3, 0, 0]]), [6, 2], [3, 2])),
        (lambda lib: lib.nn.TripletMarginWithDistanceLoss(swap=True),
         lambda lib: tuple(lib.tensor(rng.normal(size=(3, 4))) for _ in range(3))),
        (lambda lib: lib.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, ignore_index=1),
         lambda lib: (lib.tensor(rng.normal(size=(5, 3))), lib.tensor([[0, 1], [2, 3], [1, 1], [0, 0], [3, 2]]))),
        (lambda lib: lib.nn.PairwiseDistance(p=1.0, keepdim=True),
         lambda lib: (lib.tensor(rng.normal(size=(3, 4))), lib.tensor(rng.normal(size=(3, 4))))),
        (lambda lib: lib.nn.CosineSimilarity(dim=0),
         lambda lib: (lib.tensor(rng.normal(size=(3, 4))), lib.tensor(rng.normal(size=(3, 4))))),
    ]
    for make, inputs in cases:
        tm, rm = make(torch).double(), make(retrograd).double()
        assert repr(rm) == repr(tm)
        assert list(rm.state_dict()) == list(tm.state_dict())
        rm.load_state_dict({k: retrograd.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        state = rng.bit_generator.state
        t_out = tm(*inputs(torch))
        rng.bit_generator.state = state
        r_out = rm(*inputs(retrograd))
        np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        for t_p, r_p in zip(tm.parameters(), rm.parameters()):  # max_norm renormalises in place: compare after
            np.testing.assert_allclose(r_p.detach().numpy(), t_p.detach().numpy(), rtol=1e-12)


def test_linear_cross_entropy_options_are_accepted_and_warn_as_torch():
    """The chunked path's options change only torch's memory use: retrograd computes the reference path, and
    warns as torch does where torch would ignore them."""
    def run(lib):
        x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        w = lib.tensor(np.linspace(-2, 1, 12).reshape(4, 3))
        options = lib.nn.LinearCrossEntropyOptions(batch_chunk_size=1, chunking_method=None)
        with pytest.warns(UserWarning) as warned:
            loss = lib.nn.functional.linear_cross_entropy(x, w, lib.tensor([0, 3]), label_smoothing=0.2,
                                                          options=options)
        loss.backward()
        return loss.item(), x.grad.numpy(), str(warned[0].message)

    (a, ga, wa), (b, gb, wb) = run(retrograd), run(torch)
    assert wa == wb
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_affine_grid_and_grid_sample_round_as_torch(dtype):
    """affine_grid's base grid comes from torch's linspace in theta's dtype and each point sums its three (or four)
    products in order; the image kernel of grid_sample rounds the unnormalised coordinate and bilinear's sum as
    fused multiply-adds (Note [grid_sample's fused multiply-adds]). Off by an ulp, a coordinate meant for a pixel
    centre falls to one side of it and the grid's gradient takes the other neighbours: a spatial transformer starts
    at the identity, on exactly those centres, which are compared exactly; the random thetas to a few ulps."""
    rng = np.random.default_rng(0)
    for size in [(3, 2, 12, 24), (2, 1, 7, 5), (2, 1, 3, 4, 6)]:
        d = len(size) - 2
        theta = np.concatenate([np.eye(d, d + 1)[None], rng.normal(size=(size[0] - 1, d, d + 1))]).astype(dtype)
        x = (1000 * rng.random(size)).astype(dtype)
        for align_corners in (False, True):
            results = []
            for lib in (retrograd, torch):
                grid = lib.nn.functional.affine_grid(lib.tensor(theta, requires_grad=True), size,
                                                     align_corners=align_corners)
                results.append([(0, grid.detach().numpy())])
                for mode in ("bilinear", "nearest"):
                    for padding_mode in ("zeros", "border", "reflection"):
                        out = lib.nn.functional.grid_sample(lib.tensor(x), grid, mode=mode, padding_mode=padding_mode,
                                                            align_corners=align_corners)
                        results[-1].append((0, out.detach().numpy()))
                        if mode == "bilinear" and d == 2:  # the identity's slopes: torch's neighbours, not rounding
                            (g,) = lib.autograd.grad(out[:1].sum(), grid)
                            results[-1].append((1e-3, g[:1].numpy()))
            for (rtol, ours), (_, theirs) in zip(*results):
                np.testing.assert_allclose(ours[:1], theirs[:1], rtol=rtol, atol=0)
                # the random thetas: torch's own sums of products round by the host's kernels (a fused
                # multiply-add where the CPU has one), so an ulp either way of the grid, carried through the samples
                near = {"float32": 1e-5, "float64": 1e-13}[dtype] * np.abs(theirs[1:]).max(initial=0)
                np.testing.assert_allclose(ours[1:], theirs[1:], rtol=0, atol=near)


def test_affine_grid_saves_its_size_not_the_grid():
    """torch's AffineGridGeneratorBackward0 saves the size and align_corners, nothing freed by backward: a grid
    reused by several losses takes a backward from each without retain_graph, with torch's gradient."""
    grads, saved = [], []
    for lib in (torch, retrograd):
        theta = lib.tensor(np.random.default_rng(1).normal(size=(2, 2, 3)), requires_grad=True)
        grid = lib.nn.functional.affine_grid(theta, (2, 1, 4, 5), align_corners=False)
        saved.append((grid.grad_fn._saved_size, grid.grad_fn._saved_align_corners))
        (grid ** 2).sum().backward()
        grid.sum().backward()
        grads.append(theta.grad.numpy())
    assert saved[1] == saved[0]
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
