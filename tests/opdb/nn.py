"""Op database rows: the nn family (OPS.md I): convolution, pooling, padding, resampling, normalisation,
dropout, embedding, attention and the losses.

Shapes are small on purpose (gradcheck builds full Jacobians). Max-type samples use `distinct` values so
no window has a tie within finite-difference reach; random ops are compared through `call=` with their
randomness switched off (p=0, p=1, eval mode) or through statistics that do not depend on the mask.
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, distinct, noncontig, positive, rand


def F(name: str) -> str:
    return f"nn.functional.{name}"


# ============================================================================================
# Convolution, fold/unfold
# ============================================================================================


def conv2d_samples(rng):
    return [
        Sample((rand(rng, 2, 3, 5, 5), rand(rng, 4, 3, 3, 3), rand(rng, 4)), name="bias"),
        Sample((rand(rng, 2, 3, 6, 5), rand(rng, 4, 3, 3, 3)), {"stride": 2, "padding": 1}, "stride_padding"),
        Sample((rand(rng, 1, 4, 6, 5), rand(rng, 6, 2, 2, 3)), {"dilation": (2, 1), "groups": 2, "padding": (1, 2)},
               "dilation_groups"),
        Sample((rand(rng, 1, 2, 4, 5), rand(rng, 3, 2, 2, 3)), {"padding": "same"}, "same_even_kernel"),
        Sample((rand(rng, 1, 2, 4, 4), rand(rng, 3, 2, 3, 3)), {"padding": "valid", "stride": (1, 2)}, "valid"),
        Sample((rand(rng, 2, 4, 4), rand(rng, 3, 2, 2, 2), rand(rng, 3)), name="unbatched"),
        Sample((noncontig(rand(rng, 1, 2, 4, 4)), rand(rng, 2, 2, 3, 3)), {"padding": 1}, "noncontig"),
    ]


def conv1d_samples(rng):
    return [
        Sample((rand(rng, 2, 3, 7), rand(rng, 4, 3, 3), rand(rng, 4)), {"stride": 2, "padding": 1}, "stride"),
        Sample((rand(rng, 2, 4, 6), rand(rng, 4, 2, 2)), {"groups": 2, "dilation": 2}, "groups_dilation"),
        Sample((rand(rng, 3, 7), rand(rng, 2, 3, 4)), {"padding": "same"}, "unbatched_same"),
    ]


def conv3d_samples(rng):
    return [Sample((rand(rng, 1, 2, 3, 4, 3), rand(rng, 2, 2, 2, 2, 2), rand(rng, 2)), {"padding": (1, 0, 1)}, "pad"),
            Sample((rand(rng, 1, 2, 4, 3, 3), rand(rng, 2, 1, 2, 2, 2)), {"stride": (2, 1, 1), "groups": 2}, "groups")]


def conv_transpose2d_samples(rng):
    return [
        Sample((rand(rng, 2, 3, 3, 3), rand(rng, 3, 2, 3, 3), rand(rng, 2)),
               {"stride": 2, "padding": 1, "output_padding": 1}, "stride_output_padding"),
        Sample((rand(rng, 1, 4, 3, 2), rand(rng, 4, 1, 2, 2)), {"groups": 2, "dilation": (2, 1)}, "groups_dilation"),
        Sample((rand(rng, 2, 3, 3), rand(rng, 2, 2, 2, 2)), name="unbatched"),
    ]


def conv_transpose1d_samples(rng):
    return [Sample((rand(rng, 2, 3, 4), rand(rng, 3, 2, 3), rand(rng, 2)), {"stride": 3, "padding": 1,
                                                                           "output_padding": 2}, "stride")]


def conv_transpose3d_samples(rng):
    return [Sample((rand(rng, 1, 2, 2, 3, 2), rand(rng, 2, 2, 2, 2, 2)), {"stride": (1, 2, 1)}, "stride")]


def unfold_samples(rng):
    return [Sample((rand(rng, 2, 3, 4, 5), (2, 3)), {"dilation": (1, 2), "padding": 1, "stride": (2, 1)}, "all"),
            Sample((rand(rng, 2, 3, 3), 2), name="unbatched")]


def fold_samples(rng):
    return [Sample((rand(rng, 2, 12, 6), (3, 4), 2), name="overlapping"),
            Sample((rand(rng, 2, 18, 12), (5, 6), (2, 3)), {"dilation": (1, 2), "padding": 1, "stride": (2, 1)}, "all"),
            Sample((rand(rng, 8, 4), 4, 2), {"stride": 2}, "unbatched")]


# ============================================================================================
# Pooling
# ============================================================================================


def max_pool2d_samples(rng):
    return [
        Sample((distinct(rng, 2, 3, 5, 5), 2), name="k2"),
        Sample((distinct(rng, 2, 2, 7, 6), 3, 2, 1), name="overlap_padding"),
        Sample((distinct(rng, 1, 2, 7, 6), 2, 2, 1), {"dilation": 2, "ceil_mode": True}, "dilation_ceil"),
        Sample((distinct(rng, 2, 5, 4), (2, 3), (1, 2)), {"return_indices": True}, "unbatched_indices"),
    ]


def max_pool1d_samples(rng):
    return [Sample((distinct(rng, 2, 3, 8), 3, 2, 1), {"ceil_mode": True}, "ceil"),
            Sample((distinct(rng, 2, 7), 2), {"return_indices": True}, "indices")]


def max_pool3d_samples(rng):
    return [Sample((distinct(rng, 1, 2, 3, 4, 3), 2, 1), name="k2s1"),
            Sample((distinct(rng, 1, 1, 4, 4, 4), 3, 2, 1), {"return_indices": True}, "padding_indices")]


def avg_pool2d_samples(rng):
    return [
        Sample((rand(rng, 2, 3, 4, 4), 2), name="k2"),
        Sample((rand(rng, 2, 2, 7, 6), 3, 2, 1), name="padding"),
        Sample((rand(rng, 1, 2, 8, 6), 3, 2, 1), {"ceil_mode": True, "count_include_pad": False}, "ceil_exclude_pad"),
        Sample((rand(rng, 1, 2, 8, 6), 3, 2, 1), {"ceil_mode": True}, "ceil_include_pad"),
        Sample((rand(rng, 2, 4, 6), 2), {"divisor_override": 3}, "unbatched_divisor"),
    ]


def avg_pool1d_samples(rng):
    return [Sample((rand(rng, 2, 3, 8), 3, 2, 1), {"ceil_mode": True}, "ceil"),
            Sample((rand(rng, 2, 7), 2), {"count_include_pad": False, "padding": 1}, "exclude_pad")]


def avg_pool3d_samples(rng):
    return [Sample((rand(rng, 1, 2, 3, 4, 3), 2, 1, 1), name="padding")]


def adaptive_avg_samples(d):
    shapes = {1: (2, 3, 7), 2: (2, 3, 7, 6), 3: (1, 2, 5, 4, 3)}
    outs = {1: [4, 3, 1], 2: [(3, 4), (None, 2), 1], 3: [(2, 3, 2), 1]}

    def samples(rng):
        out = [Sample((rand(rng, *shapes[d]), o), name=f"out{o}".replace(" ", "")) for o in outs[d]]
        return out + [Sample((rand(rng, *shapes[d][1:]), outs[d][0]), name="unbatched")]
    return samples


def adaptive_max_samples(d):
    shapes = {1: (2, 3, 7), 2: (2, 3, 7, 6), 3: (1, 2, 5, 4, 3)}
    outs = {1: 3, 2: (3, 4), 3: (2, 3, 2)}

    def samples(rng):
        return [Sample((distinct(rng, *shapes[d]), outs[d]), name="overlapping"),
                Sample((distinct(rng, *shapes[d]), outs[d]), {"return_indices": True}, "indices"),
                Sample((distinct(rng, *shapes[d][1:]), outs[d]), name="unbatched")]
    return samples


# ============================================================================================
# Padding, resampling, pixel shuffles
# ============================================================================================


def pad_samples(rng):
    out = [Sample((rand(rng, 2, 3, 4), (1, 2)), {"value": 0.5}, "constant_1d"),
           Sample((rand(rng, 2, 3, 4, 5), (-1, 2, 1, -2)), name="constant_negative"),
           Sample((rand(rng, 2, 3, 4), (1, 0, 0, 1, 2, 1)), name="constant_3d")]
    for mode in ("reflect", "replicate", "circular"):
        out += [Sample((rand(rng, 2, 3, 4), (2, 1)), {"mode": mode}, f"{mode}_1d"),
                Sample((rand(rng, 2, 3, 4, 5), (1, 2, 2, 1)), {"mode": mode}, f"{mode}_2d"),
                Sample((rand(rng, 1, 2, 3, 4, 3), (1, 1, 2, 0, 1, 2)), {"mode": mode}, f"{mode}_3d")]
    return out


def interpolate_samples(rng):
    out = []
    for mode in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        corners = [None] if mode.startswith("nearest") else [False, True]
        for ac in corners:
            tag = f"{mode}_{'corners' if ac else 'centers'}"
            out += [Sample((rand(rng, 1, 2, 3, 4),), {"scale_factor": 2, "mode": mode, "align_corners": ac},
                           f"{tag}_x2"),
                    Sample((rand(rng, 1, 2, 4, 5),), {"size": (3, 7), "mode": mode, "align_corners": ac},
                           f"{tag}_size"),
                    Sample((rand(rng, 1, 2, 4, 3),), {"scale_factor": (1.7, 0.6), "mode": mode, "align_corners": ac},
                           f"{tag}_fractional")]
    return out + [
        Sample((rand(rng, 2, 3, 4),), {"scale_factor": 2.5, "mode": "linear"}, "linear"),
        Sample((rand(rng, 2, 3, 4),), {"scale_factor": 1.5}, "nearest_1d"),
        Sample((rand(rng, 1, 2, 2, 3, 2),), {"size": (3, 4, 3), "mode": "trilinear", "align_corners": True},
               "trilinear"),
        Sample((rand(rng, 1, 2, 2, 3, 2),), {"scale_factor": 2}, "nearest_3d"),
        Sample((rand(rng, 1, 2, 5, 7),), {"size": (2, 3), "mode": "area"}, "area"),
        Sample((rand(rng, 1, 2, 4, 4),), {"scale_factor": 0.5, "mode": "bilinear", "recompute_scale_factor": True},
               "recompute"),
    ]


# ============================================================================================
# Rows
# ============================================================================================

OPS = [
    OpInfo(F("conv2d"), conv2d_samples),
    OpInfo(F("conv1d"), conv1d_samples),
    OpInfo(F("conv3d"), conv3d_samples),
    OpInfo(F("conv_transpose2d"), conv_transpose2d_samples),
    OpInfo(F("conv_transpose1d"), conv_transpose1d_samples),
    OpInfo(F("conv_transpose3d"), conv_transpose3d_samples),
    OpInfo("conv2d", lambda rng: conv2d_samples(rng)[:1]),
    OpInfo(F("unfold"), unfold_samples),
    OpInfo(F("fold"), fold_samples),
    OpInfo(F("max_pool2d"), max_pool2d_samples),
    OpInfo(F("max_pool1d"), max_pool1d_samples),
    OpInfo(F("max_pool3d"), max_pool3d_samples),
    OpInfo(F("max_pool1d_with_indices"), lambda rng: max_pool1d_samples(rng)[:1]),
    OpInfo(F("max_pool2d_with_indices"), lambda rng: max_pool2d_samples(rng)[1:2]),
    OpInfo(F("max_pool3d_with_indices"), lambda rng: max_pool3d_samples(rng)[:1]),
    OpInfo(F("avg_pool2d"), avg_pool2d_samples),
    OpInfo(F("avg_pool1d"), avg_pool1d_samples),
    OpInfo(F("avg_pool3d"), avg_pool3d_samples),
    OpInfo(F("adaptive_avg_pool1d"), adaptive_avg_samples(1)),
    OpInfo(F("adaptive_avg_pool2d"), adaptive_avg_samples(2)),
    OpInfo(F("adaptive_avg_pool3d"), adaptive_avg_samples(3)),
    OpInfo(F("adaptive_max_pool1d"), adaptive_max_samples(1)),
    OpInfo(F("adaptive_max_pool2d"), adaptive_max_samples(2)),
    OpInfo(F("adaptive_max_pool3d"), adaptive_max_samples(3)),
    OpInfo(F("adaptive_max_pool1d_with_indices"), lambda rng: adaptive_max_samples(1)(rng)[:1]),
    OpInfo(F("adaptive_max_pool2d_with_indices"), lambda rng: adaptive_max_samples(2)(rng)[:1]),
    OpInfo(F("adaptive_max_pool3d_with_indices"), lambda rng: adaptive_max_samples(3)(rng)[:1]),
    OpInfo(F("pad"), pad_samples),
    OpInfo(F("interpolate"), interpolate_samples),
    OpInfo(F("upsample"), lambda rng: [Sample((rand(rng, 1, 2, 3, 3),), {"scale_factor": 2, "mode": "bilinear"})]),
    OpInfo(F("upsample_nearest"), lambda rng: [Sample((rand(rng, 1, 2, 3, 3),), {"size": 5})]),
    OpInfo(F("upsample_bilinear"), lambda rng: [Sample((rand(rng, 1, 2, 3, 3),), {"scale_factor": 2})]),
    OpInfo(F("pixel_shuffle"), lambda rng: [Sample((rand(rng, 2, 8, 3, 2), 2), name="batched"),
                                            Sample((rand(rng, 9, 2, 2), 3), name="unbatched")]),
    OpInfo(F("pixel_unshuffle"), lambda rng: [Sample((rand(rng, 2, 2, 4, 6), 2), name="batched"),
                                              Sample((rand(rng, 1, 6, 3), 3), name="unbatched")]),
]
