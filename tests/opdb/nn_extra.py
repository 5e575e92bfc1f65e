"""Op database rows: the less common nn functionals (retrograd/ops/nn_extra.py): channel_shuffle, pdist,
embedding_bag, ctc_loss, triplet_margin_with_distance_loss, linear_cross_entropy and fake quantization.

torch declares no second derivative of pdist and ctc_loss and no forward AD of pdist, embedding_bag and ctc_loss;
their rows say so (tests/test_nn_extra.py checks the errors). ctc_loss's gradient is torch's, correct through
a log_softmax (Note [ctc gradient]), so its row takes logits and applies log_softmax first.
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, distinct, rand


def F(name: str) -> str:
    return f"nn.functional.{name}"


def embedding_bag_samples(rng):
    flat = C(np.array([1, 2, 4, 5, 4, 3, 2, 9]))
    offsets = C(np.array([0, 3, 3, 5]))
    grid = C(np.array([[1, 3, 0], [3, 3, 4]]))
    return [Sample((grid, rand(rng, 6, 3)), name="2d_mean"),
            Sample((flat, rand(rng, 10, 2), offsets), {"mode": "sum"}, "offsets_sum_empty_bag"),
            Sample((flat, rand(rng, 10, 2), offsets), {"mode": "mean", "padding_idx": 4}, "mean_padding"),
            Sample((flat, distinct(rng, 10, 2), offsets), {"mode": "max"}, "max"),
            Sample((flat, rand(rng, 10, 2), C(np.array([0, 3, 8]))), {"mode": "sum", "include_last_offset": True,
                                                                      "per_sample_weights": rand(rng, 8)},
                   "per_sample_weights")]
    # scale_grad_by_freq: torch 2.13's CPU kernel divides by the frequency of another index (see
    # tests/test_nn_extra.py); retrograd by each index's own, as documented and as F.embedding does


def ctc_call(m, logits, *args, **kwargs):
    return m.nn.functional.ctc_loss(logits.log_softmax(-1), *args, **kwargs)


def ctc_samples(rng):
    padded, lengths = C(np.array([[1, 2, 2], [3, 1, 0]])), (C(np.array([6, 5])), C(np.array([3, 2])))
    return [Sample((rand(rng, 6, 2, 4), padded, *lengths), name="mean"),
            Sample((rand(rng, 6, 2, 4), padded, *lengths), {"reduction": "none"}, "none"),
            Sample((rand(rng, 6, 2, 4), C(np.array([1, 3, 3, 1, 0])), [6, 5], [3, 2]),
                   {"reduction": "sum", "blank": 2}, "concatenated_blank2"),
            Sample((rand(rng, 5, 4), C(np.array([1, 1])), C(np.array(5)), C(np.array(2))), name="unbatched"),
            Sample((rand(rng, 2, 2, 4), padded, [2, 2], [3, 1]), {"reduction": "none", "zero_infinity": True},
                   "zero_infinity")]


def distance_call(m, anchor, positive, negative, **kwargs):
    return m.nn.functional.triplet_margin_with_distance_loss(
        anchor, positive, negative, distance_function=lambda a, b: 1 - m.nn.functional.cosine_similarity(a, b),
        **kwargs)


def linear_cross_entropy_samples(rng):
    return [Sample((rand(rng, 4, 3), rand(rng, 5, 3), C(np.array([0, 4, 2, 4]))), name="indices"),
            Sample((rand(rng, 4, 3), rand(rng, 5, 3), C(np.array([0, 4, 2, 1]))),
                   {"linear_bias": rand(rng, 5), "label_smoothing": 0.1, "reduction": "sum"}, "bias_smoothing"),
            Sample((rand(rng, 2, 3), rand(rng, 4, 2, 3), C(np.array([[0, 3], [1, 1]]))),
                   {"reduction": "none", "ignore_index": 1}, "k_dimensional"),
            Sample((rand(rng, 3), rand(rng, 4, 3), C(np.array([0.1, 0.2, 0.3, 0.4]))), name="unbatched_probs")]


def fractional_call(name):
    def call(m, x, samples, *args, **kwargs):
        return getattr(m.nn.functional, name)(x, *args, _random_samples=samples.to(x.dtype), **kwargs)
    return call


def fractional_samples(rng):
    return [Sample((distinct(rng, 2, 3, 7, 6), C(rng.uniform(size=(2, 3, 2))), 2), {"output_size": (4, 3)}, "size"),
            Sample((distinct(rng, 3, 5, 7), C(rng.uniform(size=(1, 3, 2))), (2, 3)),
                   {"output_ratio": (0.5, 0.5), "return_indices": True}, "ratio_unbatched_indices")]


def fractional3d_samples(rng):
    return [Sample((distinct(rng, 1, 2, 5, 6, 5), C(rng.uniform(size=(1, 2, 3))), (2, 3, 2)),
                   {"output_size": (3, 2, 3)}, "size")]


def pooled_indices(rng, lead: tuple, pooled: tuple, kernel: int) -> np.ndarray:
    """Flat indices that max pooling with `kernel` (stride = kernel) could give: one element of each window."""
    size = [n * kernel for n in pooled]
    coords = np.indices(pooled)
    flat = 0
    for c, n in zip(coords, size):
        flat = flat * n + c * kernel + rng.integers(0, kernel, size=(*lead, *pooled))
    return flat


def unpool_samples(d):
    def samples(rng):
        pooled = (2, 3, 1)[:d]
        return [Sample((rand(rng, 2, 3, *pooled), C(pooled_indices(rng, (2, 3), pooled, 2)), 2), name="default"),
                Sample((rand(rng, 3, *pooled), C(pooled_indices(rng, (3,), pooled, 2)), 2, None, 0,
                        [2 * n + 1 for n in pooled]), name="unbatched_output_size")]
    return samples


OPS = [
    *[OpInfo(F(name), samples, call=fractional_call(name), outputs=lambda r: r if isinstance(r, tuple) else (r,))
      for name, samples in [("fractional_max_pool2d", fractional_samples),
                            ("fractional_max_pool3d", fractional3d_samples),
                            ("fractional_max_pool2d_with_indices", fractional_samples),
                            ("fractional_max_pool3d_with_indices", fractional3d_samples)]],
    OpInfo(F("max_unpool1d"), unpool_samples(1)),
    OpInfo(F("max_unpool2d"), unpool_samples(2)),
    OpInfo(F("max_unpool3d"), unpool_samples(3)),
    # the straight-through gradient (grad where the value was in range) is torch's, not the derivative of the
    # rounding: compared with torch's backward only; torch declares no forward AD
    OpInfo("fake_quantize_per_tensor_affine",
           lambda rng: [Sample((rand(rng, 4, 5), 0.125, 2, -8, 7), name="numbers", gradcheck=False),
                        Sample((rand(rng, 3, 4), C(np.array(0.25, np.float32)), C(np.array(-1, np.int32)), -4, 3),
                               name="tensor_qparams", gradcheck=False)], forward_ad=False),
    OpInfo("fake_quantize_per_channel_affine",
           lambda rng: [Sample((rand(rng, 3, 4, 2), C(np.array([0.1, 0.2, 0.3, 0.05], np.float32)),
                                C(np.array([0, 1, -1, 2], np.int32)), 1, -8, 7), name="int_zero_points",
                               gradcheck=False),
                        Sample((rand(rng, 2, 3), C(np.array([0.5, 0.25], np.float32)),
                                C(np.array([0.5, -1.0], np.float32)), 0, -4, 3), name="float_zero_points",
                               gradcheck=False)], forward_ad=False),
    OpInfo(F("channel_shuffle"), lambda rng: [Sample((rand(rng, 2, 6, 3), 3), name="3d"),
                                              Sample((rand(rng, 1, 4, 2, 2), 2), name="4d")],
           aliases=("native_channel_shuffle",)),
    OpInfo(F("pdist"), lambda rng: [Sample((rand(rng, 5, 3),), name="p2"),
                                    Sample((rand(rng, 4, 3), 1.0), name="p1"),
                                    Sample((rand(rng, 4, 3), 3.0), name="p3"),
                                    Sample((rand(rng, 4, 3), float("inf")), name="pinf")],
           gradgrad=False, forward_ad=False, aliases=("pdist",)),
    OpInfo(F("embedding_bag"), embedding_bag_samples, forward_ad=False),
    OpInfo(F("ctc_loss"), ctc_samples, call=ctc_call, gradgrad=False, forward_ad=False),
    OpInfo(F("triplet_margin_with_distance_loss"),
           lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 4, 3), rand(rng, 4, 3)), name="pairwise"),
                        Sample((rand(rng, 4, 3), rand(rng, 4, 3), rand(rng, 4, 3)),
                               {"margin": 3.0, "swap": True, "reduction": "none"}, "swap")]),
    OpInfo(F("triplet_margin_with_distance_loss"),
           lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 4, 3), rand(rng, 4, 3)), {"margin": 0.5}, "cosine")],
           call=distance_call),
    OpInfo(F("linear_cross_entropy"), linear_cross_entropy_samples),
]
