"""Op database rows: the nn family (OPS.md I): convolution, pooling, padding, resampling, normalisation,
dropout, embedding, attention and the losses.

Shapes are small on purpose (gradcheck builds full Jacobians). Max-type samples use `distinct` values so
no window has a tie within finite-difference reach; random ops are compared through `call=` with their
randomness switched off (p=0, p=1, eval mode) or through statistics that do not depend on the mask.
"""

from __future__ import annotations

import numpy as np

from . import C, Dt, OpInfo, Sample, distinct, noncontig, positive, rand


def F(name: str) -> str:
    return f"nn.functional.{name}"


def same_dtype(name: str):
    """Call F.<name> with its float constants (class weights, float targets and masks) in the input's dtype,
    as torch's kernels require."""
    def cast(v, dtype):
        is_constant = hasattr(v, "dtype") and v.dtype.is_floating_point and not v.requires_grad
        return v.to(dtype) if is_constant else v

    def call(m, x, *args, **kwargs):
        args = [cast(a, x.dtype) for a in args]
        kwargs = {k: cast(v, x.dtype) for k, v in kwargs.items()}
        return getattr(m.nn.functional, name)(x, *args, **kwargs)
    return call


def cast_row(name: str, samples, **kwargs) -> OpInfo:
    """The row of F.<name>, called with its float constants in the input's dtype (see same_dtype)."""
    return OpInfo(F(name), samples, call=same_dtype(name), **kwargs)


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
        # padding wider than the kernel's reach: the input gradient cannot be a convolution (negative padding)
        Sample((rand(rng, 1, 2, 3, 3), rand(rng, 2, 2, 2, 2)), {"padding": (3, 1)}, "padding_past_kernel"),
        # one input channel: window columns rather than flat rows (fewer columns than twice the channels)
        Sample((rand(rng, 2, 1, 5, 4), rand(rng, 3, 1, 2, 2), rand(rng, 3)), {"padding": 1}, "one_channel"),
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
        Sample((rand(rng, 1, 2, 3, 3), rand(rng, 2, 3, 2, 2)), {"dilation": 2, "output_padding": 1, "padding": 1},
               "stride1_output_padding"),
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
    ] + [Sample((rand(rng, 1, 2, 7, 5),), {"size": (3, 4), "mode": mode, "align_corners": ac, "antialias": True},
                f"{mode}_antialias_{'corners' if ac else 'centers'}")  # torchvision's Resize of a tensor
         for mode in ("bilinear", "bicubic") for ac in (False, True)] + [
        Sample((rand(rng, 2, 1, 3, 6),), {"scale_factor": (1.5, 0.5), "mode": "bicubic", "antialias": True},
               "bicubic_antialias_up_and_down"),
        Sample((rand(rng, 1, 2, 8, 3),), {"size": (3, 5), "mode": "lanczos", "antialias": True}, "lanczos")]


def grid_sample_samples(rng):
    out = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for corners in (False, True):
                out.append(Sample((rand(rng, 2, 3, 4, 5), rng.uniform(-1.6, 1.6, (2, 3, 2, 2))),
                                  {"mode": mode, "padding_mode": padding, "align_corners": corners},
                                  f"{mode}_{padding}_{'corners' if corners else 'centers'}"))
    for mode in ("bilinear", "nearest"):  # volumes: trilinear and nearest
        for padding in ("zeros", "reflection"):
            out.append(Sample((rand(rng, 1, 2, 3, 4, 2), rng.uniform(-1.6, 1.6, (1, 2, 2, 1, 3))),
                              {"mode": mode, "padding_mode": padding, "align_corners": padding == "zeros"},
                              f"3d_{mode}_{padding}"))
    return out


def grid_sampler_samples(rng):
    """grid_sample's samples as torch.grid_sampler takes them: modes by number."""
    modes, paddings = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")
    return [Sample((*s.args, modes.index(s.kwargs["mode"]), paddings.index(s.kwargs["padding_mode"]),
                    s.kwargs["align_corners"]), name=s.name) for s in grid_sample_samples(rng)[::3]]


def affine_grid_samples(rng):
    return [Sample((rand(rng, 2, 2, 3), (2, 3, 4, 5)), {"align_corners": False}, "2d"),
            Sample((rand(rng, 1, 2, 3), (1, 1, 3, 2)), {"align_corners": True}, "2d_corners"),
            Sample((rand(rng, 2, 3, 4), (2, 1, 2, 3, 2)), {"align_corners": False}, "3d")]


# ============================================================================================
# Softmax family, linear layers, embedding, dropout
# ============================================================================================


def softmax_samples(rng):
    return [Sample((rand(rng, 3, 4), 1), name="dim1"),
            Sample((rand(rng, 2, 3, 4), -1), name="last"),
            Sample((rand(rng), 0), name="0d"),
            Sample((rand(rng, 0, 3), 1), name="empty"),
            Sample((noncontig(rand(rng, 4, 3)), 0), name="noncontig"),
            Sample((rand(rng, 3, 4),), {"dim": 0, "dtype": Dt("float64")}, "dtype")]


def linear_samples(rng):
    return [Sample((rand(rng, 3, 4), rand(rng, 5, 4), rand(rng, 5)), name="2d_bias"),
            Sample((rand(rng, 3, 4), rand(rng, 5, 4)), name="2d"),
            Sample((rand(rng, 2, 3, 4), rand(rng, 5, 4), rand(rng, 5)), name="3d_bias"),
            Sample((noncontig(rand(rng, 2, 3, 4)), rand(rng, 5, 4), rand(rng, 5)), name="noncontig_bias"),
            Sample((rand(rng, 4), rand(rng, 5, 4), rand(rng, 5)), name="1d_bias"),
            Sample((rand(rng, 2, 2, 3, 4), rand(rng, 5, 4)), name="4d")]


def bilinear_samples(rng):
    return [Sample((rand(rng, 3, 4), rand(rng, 3, 2), rand(rng, 5, 4, 2), rand(rng, 5)), name="bias"),
            Sample((rand(rng, 2, 3, 4), rand(rng, 2, 3, 2), rand(rng, 3, 4, 2)), name="3d")]


def embedding_samples(rng):
    idx = C(np.array([[1, 3, 0], [3, 3, 4]]))
    return [Sample((idx, rand(rng, 5, 3)), name="2d"),
            # torch's conventions: the gradient is scaled by 1/frequency and padding_idx's row gets none,
            # which finite differences do not see
            Sample((C(np.array([2, 0, 2, 1])), rand(rng, 4, 2)), {"scale_grad_by_freq": True}, "scale_by_freq",
                   gradcheck=False),
            Sample((idx, rand(rng, 5, 3)), {"padding_idx": 3}, "padding_idx", gradcheck=False),
            Sample((idx, rand(rng, 5, 3)), {"max_norm": 1.0}, "max_norm", gradcheck=False)]


def dropout_statistics(name: str, p: float, n: int = 20000):
    """Mean over n draws of dropout(x): ~x for every mask (and gradient ~1), whatever the generator."""
    def call(m, x, **kwargs):
        m.manual_seed(0)
        fn = getattr(m.nn.functional, name)
        return fn(x.expand(n, *x.shape), p, **kwargs).mean(0)
    return call


def dropout_samples(rng):
    return [Sample((rand(rng, 3, 4),), {"p": 0.0}, "p0"),
            Sample((rand(rng, 3, 4),), {"p": 1.0}, "p1"),
            Sample((rand(rng, 3, 4),), {"p": 0.4, "training": False}, "eval")]


def feature_dropout_samples(d):
    def samples(rng):
        shape = (2, 3, *(2,) * d)
        return [Sample((rand(rng, *shape),), {"p": 0.0}, "p0"),
                Sample((rand(rng, *shape),), {"p": 1.0}, "p1"),
                Sample((rand(rng, *shape[1:]),), {"p": 1.0}, "unbatched_p1"),
                Sample((rand(rng, *shape),), {"p": 0.5, "training": False}, "eval")]
    return samples


def statistics_samples(shape):
    return lambda rng: [Sample((rand(rng, *shape),), name="mean_of_draws")]


# ============================================================================================
# Normalisation
# ============================================================================================


def _as_input_dtype(x, *stats):
    return [None if s is None else s.to(x.dtype) for s in stats]


def batch_norm_call(m, x, rm, rv, *args, **kwargs):
    """The output and the running statistics it updated in place (kept in the input's dtype, as torch needs)."""
    rm, rv = _as_input_dtype(x, rm, rv)
    return m.nn.functional.batch_norm(x, rm, rv, *args, **kwargs), rm, rv


def batch_norm_samples(rng):
    rm, rv = C(rand(rng, 3)), C(positive(rng, 3))
    return [Sample((rand(rng, 4, 3, 2), rm, rv, rand(rng, 3), rand(rng, 3)), {"training": True, "momentum": 0.3},
                   "train_affine"),
            Sample((rand(rng, 4, 3), rm, rv), {"training": True}, "train_2d"),
            Sample((rand(rng, 2, 3, 2, 2), rm, rv, rand(rng, 3), rand(rng, 3)), name="eval_affine"),
            Sample((rand(rng, 2, 3, 2), None, None), {"training": True, "eps": 1e-3}, "train_no_stats")]


def instance_norm_call(m, x, rm, rv, *args, **kwargs):
    rm, rv = _as_input_dtype(x, rm, rv)
    return m.nn.functional.instance_norm(x, rm, rv, *args, **kwargs), rm, rv


def instance_norm_samples(rng):
    rm, rv = C(rand(rng, 3)), C(positive(rng, 3))
    return [Sample((rand(rng, 2, 3, 4), None, None), name="plain"),
            Sample((rand(rng, 2, 3, 2, 2), rm, rv, rand(rng, 3), rand(rng, 3)), {"momentum": 0.2}, "stats_affine"),
            Sample((rand(rng, 2, 3, 3), rm, rv), {"use_input_stats": False}, "running")]


def layer_norm_samples(rng):
    return [Sample((rand(rng, 2, 3, 4), (4,), rand(rng, 4), rand(rng, 4)), name="affine"),
            Sample((rand(rng, 2, 3, 4), (3, 4)), name="two_dims"),
            Sample((noncontig(rand(rng, 3, 4)), [4], rand(rng, 4)), {"eps": 1e-3}, "noncontig_weight")]


def group_norm_samples(rng):
    return [Sample((rand(rng, 2, 4, 3), 2, rand(rng, 4), rand(rng, 4)), name="affine"),
            Sample((rand(rng, 2, 6, 2, 2), 3), name="4d"),
            Sample((rand(rng, 3, 4), 4, rand(rng, 4)), {"eps": 1e-3}, "2d_weight")]


def rms_norm_samples(rng):
    return [Sample((rand(rng, 2, 3, 4), (4,), rand(rng, 4)), name="weight"),
            Sample((rand(rng, 3, 4), (3, 4)), {"eps": 1e-3}, "eps")]


# ============================================================================================
# Losses
# ============================================================================================

REDUCTIONS = ("mean", "sum", "none")


def away_from(rng, base, *shape, gap: float = 0.15):
    """base + values at least `gap` away from 0 (keeps |x - target| off a loss's kink)."""
    step = rng.uniform(gap, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(base + step)


def nll_loss_samples(rng):
    target = C(np.array([1, 0, 4]))
    ignored = C(np.array([1, -100, 4, 2]))
    weight = C(positive(rng, 5))
    out = [Sample((rand(rng, 3, 5), target), {"reduction": r}, r) for r in REDUCTIONS]
    return out + [
        Sample((rand(rng, 4, 5), ignored), {"weight": weight}, "weight_ignore"),
        Sample((rand(rng, 4, 5), C(np.array([1, 3, 4, 3]))), {"ignore_index": 3, "reduction": "sum"}, "ignore_3"),
        Sample((rand(rng, 5), C(np.array(2))), name="1d"),
        Sample((rand(rng, 2, 4, 3), C(np.array([[1, 0, 3], [2, 2, -100]]))), {"reduction": "none", "weight":
                                                                            C(positive(rng, 4))}, "3d_none"),
        Sample((rand(rng, 2, 3, 2, 2), C(rng.integers(0, 3, (2, 2, 2)))), name="4d_mean"),
        Sample((rand(rng, 2, 3, 2, 1, 2), C(rng.integers(0, 3, (2, 2, 1, 2)))), {"reduction": "none"}, "5d_none"),
    ]


def cross_entropy_samples(rng):
    target = C(np.array([1, 0, 4, -100]))
    probs = rng.dirichlet(np.ones(5), size=4)
    out = [Sample((rand(rng, 4, 5), target), {"reduction": r}, r) for r in REDUCTIONS]
    out += [Sample((rand(rng, 4, 5), target), {"reduction": r, "label_smoothing": 0.2, "weight": C(positive(rng, 5))},
                   f"smoothing_weight_{r}") for r in REDUCTIONS]
    out += [Sample((rand(rng, 4, 5), probs), {"reduction": r}, f"probabilities_{r}") for r in REDUCTIONS]
    return out + [
        Sample((rand(rng, 4, 5), probs), {"weight": C(positive(rng, 5)), "label_smoothing": 0.1}, "prob_smooth"),
        Sample((rand(rng, 2, 3, 2, 2), C(rng.integers(0, 3, (2, 2, 2)))), {"label_smoothing": 0.1}, "4d_smoothing"),
        Sample((rand(rng, 2, 4, 3), C(np.array([[1, 0, 3], [2, 2, 1]]))), {"reduction": "none"}, "3d_none"),
        Sample((rand(rng, 5), C(np.array(3))), name="1d"),
    ]


def bce_samples(rng):
    x = lambda *s: rng.uniform(0.05, 0.95, size=s)  # noqa: E731
    return [Sample((x(3, 4), rng.uniform(0, 1, (3, 4))), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((x(3, 4), rng.uniform(0, 1, (3, 4))), {"weight": C(positive(rng, 4))}, "weight_broadcast"),
        Sample((x(5), C(rng.integers(0, 2, 5).astype(np.float64))), {"reduction": "sum"}, "hard_targets")]


def bce_logits_samples(rng):
    return [Sample((rand(rng, 3, 4), rng.uniform(0, 1, (3, 4))), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((rand(rng, 3, 4), rng.uniform(0, 1, (3, 4))), {"weight": C(positive(rng, 3, 4)),
                                                               "pos_weight": C(positive(rng, 4))}, "weights")]


def regression_samples(gap: float = 0.15, **kwargs):
    """Pairs (x, t) with |x - t| away from the kinks at 0 and at +-1 (beta/delta = 1)."""
    def samples(rng):
        t = rand(rng, 3, 4)
        close = t + rng.uniform(0.2, 0.8, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))
        far = t + rng.uniform(1.2, 2.0, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))
        mixed = np.where(rng.random((3, 4)) < 0.5, close, far)
        out = [Sample((mixed, t), {"reduction": r, **kwargs}, r) for r in REDUCTIONS]
        return out + [Sample((away_from(rng, 0.0, 4, gap=gap), rand(rng, 3, 1) * 0), kwargs, "broadcast_target")]
    return samples


def weighted_regression_samples(rng):
    t = rand(rng, 3, 4)
    x = t + rng.uniform(0.2, 0.8, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))
    return [Sample((x, t), {"weight": C(positive(rng, 3, 4)), "reduction": r}, f"weight_{r}") for r in REDUCTIONS]


def kl_div_samples(rng):
    out = [Sample((rand(rng, 3, 4), positive(rng, 3, 4)), {"reduction": r}, r)
           for r in ("mean", "sum", "none", "batchmean")]
    return out + [Sample((rand(rng, 3, 4), rand(rng, 3, 4)), {"log_target": True, "reduction": "batchmean"},
                         "log_target")]


def signs(rng, *shape):
    return C(rng.choice([-1.0, 1.0], size=shape))


def margin_samples(rng):
    x = rand(rng, 3, 4)
    t = rng.integers(0, 4, 3)
    picked = x[np.arange(3), t]
    x = np.where(np.abs(1 - picked[:, None] + x) < 0.15, x + 0.4, x)  # hinges away from their kink
    x[np.arange(3), t] = picked
    return [Sample((x, C(t)), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((x, C(t)), {"p": 2, "margin": 1.0, "weight": C(positive(rng, 4))}, "p2_weight"),
        Sample((x[0], C(np.array(t[0]))), {"margin": 1.0}, "1d")]


def multilabel_margin_samples(rng):
    x = distinct(rng, 3, 4) * 0.3
    t = C(np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]]))
    return [Sample((x, t), {"reduction": r}, r) for r in REDUCTIONS]


def attention_samples(rng):
    q, k, v = rand(rng, 1, 2, 3, 4), rand(rng, 1, 2, 5, 4), rand(rng, 1, 2, 5, 4)
    return [
        Sample((q, k, v), name="fused"),
        Sample((rand(rng, 1, 2, 3, 4), rand(rng, 1, 2, 3, 4), rand(rng, 1, 2, 3, 4)), {"is_causal": True}, "causal"),
        Sample((q, k, v), {"attn_mask": C(np.array([[True, False, True, True, False], [True, True, False, True, True],
                                                    [False, True, True, True, True]]))}, "bool_mask"),
        Sample((q, k, v), {"attn_mask": C(rand(rng, 3, 5)), "scale": 0.3}, "float_mask_scale"),
        Sample((q, k, v), {"attn_mask": C(rand(rng, 3, 5)), "is_causal": True}, "mask_and_causal"),
        Sample((rand(rng, 2, 3, 4), rand(rng, 2, 5, 4), rand(rng, 2, 5, 3)), name="math_3d"),
        Sample((q, k, rand(rng, 1, 2, 5, 2)), {"is_causal": True}, "math_value_dim"),
    ]


# ============================================================================================
# Rows
# ============================================================================================

OPS = [
    # the norms torch keeps at top level for TorchScript (each warns once that it is deprecated)
    OpInfo("frobenius_norm", lambda rng: [Sample((rand(rng, 3, 4), (0, 1)), name="matrix"),
                                          Sample((rand(rng, 2, 3, 4), [2], True), name="one_dim_keepdim")]),
    OpInfo("nuclear_norm", lambda rng: [Sample((rand(rng, 3, 4),), name="matrix"),
                                        Sample((rand(rng, 4, 3), True), name="keepdim"),
                                        Sample((rand(rng, 2, 3, 4), (0, 2)), name="batched_dims")]),
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
    OpInfo(F("affine_grid"), affine_grid_samples),
    OpInfo(F("grid_sample"), grid_sample_samples),
    OpInfo("native_layer_norm", lambda rng: [Sample((rand(rng, 2, 3, 4), (4,), rand(rng, 4), rand(rng, 4), 1e-5),
                                                    name="affine"),
                                             Sample((rand(rng, 2, 3), (2, 3), None, None, 0.5), name="plain")]),
    OpInfo("native_batch_norm", lambda rng: [
        Sample((rand(rng, 4, 3, 2), rand(rng, 3), rand(rng, 3), C(np.zeros(3)), C(np.ones(3)), True, 0.1, 1e-5),
               name="train"),
        Sample((rand(rng, 4, 3), None, None, C(rand(rng, 3)), C(positive(rng, 3)), False, 0.1, 1e-5), name="eval")],
        call=lambda m, x, w, b, rm, rv, *args: m.native_batch_norm(x, w, b, *_as_input_dtype(x, rm, rv), *args)),
    # its statistics' nodes are MeanBackward1 and RsqrtBackward0 where torch names all three outputs' node alike
    OpInfo("native_group_norm", lambda rng: [Sample((rand(rng, 2, 6, 3), rand(rng, 6), rand(rng, 6), 2, 6, 3, 3, 1e-5),
                                                    name="groups")], skip_grad_fn=True),
    OpInfo("grid_sampler", grid_sampler_samples),
    OpInfo("grid_sampler_2d", lambda rng: [s for s in grid_sampler_samples(rng) if s.args[0].ndim == 4]),
    OpInfo("grid_sampler_3d", lambda rng: [s for s in grid_sampler_samples(rng) if s.args[0].ndim == 5]),
    OpInfo("constant_pad_nd", lambda rng: [Sample((rand(rng, 2, 3), (1, 2)), name="last"),
                                           Sample((rand(rng, 2, 3, 4), (0, 1, -1, 2), 1.5), name="crop_value"),
                                           Sample((rand(rng, 0, 3), (1, 1)), name="size0")]),
    OpInfo(F("pixel_shuffle"), lambda rng: [Sample((rand(rng, 2, 8, 3, 2), 2), name="batched"),
                                            Sample((rand(rng, 9, 2, 2), 3), name="unbatched")]),
    OpInfo(F("pixel_unshuffle"), lambda rng: [Sample((rand(rng, 2, 2, 4, 6), 2), name="batched"),
                                              Sample((rand(rng, 1, 6, 3), 3), name="unbatched")]),

    # softmax family, linear layers, embedding
    OpInfo(F("softmax"), softmax_samples, aliases=("softmax",)),
    OpInfo(F("log_softmax"), softmax_samples, aliases=("log_softmax",)),
    OpInfo(F("softmin"), softmax_samples),
    # hard samples: straight-through gradient (the soft one), which finite differences of one-hots do not see
    OpInfo(F("gumbel_softmax"), lambda rng: [Sample((rand(rng, 5),), name="hard_frequencies", gradcheck=False)],
           atol=0.03,
           call=lambda m, x: (m.manual_seed(0), m.nn.functional.gumbel_softmax(x.expand(20000, 5), hard=True)
                              .mean(0))[1]),
    OpInfo(F("linear"), linear_samples),
    OpInfo(F("bilinear"), bilinear_samples, aliases=("bilinear",)),
    OpInfo(F("embedding"), embedding_samples),
    OpInfo(F("one_hot"), lambda rng: [Sample((C(np.array([[1, 0], [3, 2]])),), name="inferred"),
                                      Sample((C(np.array([2, 0])), 5), name="num_classes")], differentiable=False),
    # dropout: the deterministic cases, then statistics of many draws (the masks differ from torch's)
    OpInfo(F("dropout"), dropout_samples),
    OpInfo(F("dropout"), statistics_samples((3, 4)), call=dropout_statistics("dropout", 0.3), atol=0.05,
           aliases=("dropout_statistics",)),
    OpInfo(F("dropout1d"), feature_dropout_samples(1)),
    OpInfo(F("dropout2d"), feature_dropout_samples(2)),
    OpInfo(F("dropout3d"), feature_dropout_samples(3)),
    OpInfo(F("dropout2d"), statistics_samples((2, 3, 2, 2)), call=dropout_statistics("dropout2d", 0.4), atol=0.07,
           aliases=("dropout2d_statistics",)),
    OpInfo(F("alpha_dropout"), lambda rng: [Sample((rand(rng, 3, 4),), {"p": 1.0, "training": True}, "p1"),
                                            Sample((rand(rng, 3, 4),), {"p": 0.5}, "eval")]),
    OpInfo(F("alpha_dropout"), statistics_samples((3, 4)), call=dropout_statistics("alpha_dropout", 0.2),
           atol=0.05, aliases=("alpha_dropout_statistics",)),
    OpInfo(F("feature_alpha_dropout"), lambda rng: [Sample((rand(rng, 2, 3, 2),), {"p": 1.0, "training": True}, "p1"),
                                                    Sample((rand(rng, 2, 3, 2),), {"p": 0.5}, "eval")]),
    # normalisation
    OpInfo(F("batch_norm"), batch_norm_samples, call=batch_norm_call),
    OpInfo(F("instance_norm"), instance_norm_samples, call=instance_norm_call),
    OpInfo(F("layer_norm"), layer_norm_samples, aliases=("layer_norm",)),
    OpInfo(F("group_norm"), group_norm_samples, aliases=("group_norm",)),
    OpInfo(F("rms_norm"), rms_norm_samples, aliases=("rms_norm",)),
    OpInfo(F("normalize"), lambda rng: [Sample((rand(rng, 3, 4),), name="p2"),
                                        Sample((rand(rng, 2, 3, 4),), {"p": 1.0, "dim": -1}, "p1_last")]),
    OpInfo(F("local_response_norm"), lambda rng: [Sample((rand(rng, 2, 4, 3), 3), name="3d"),
                                                  Sample((rand(rng, 1, 5, 2, 2), 2), {"alpha": 0.1, "k": 2.0},
                                                         "4d")]),
    # losses
    cast_row("nll_loss", nll_loss_samples),
    cast_row("cross_entropy", cross_entropy_samples),
    cast_row("binary_cross_entropy", bce_samples),
    cast_row("binary_cross_entropy_with_logits", bce_logits_samples),
    OpInfo(F("mse_loss"), regression_samples()),
    cast_row("mse_loss", weighted_regression_samples, aliases=("mse_loss_weight",)),
    OpInfo(F("l1_loss"), regression_samples()),
    cast_row("l1_loss", weighted_regression_samples, aliases=("l1_loss_weight",)),
    OpInfo(F("smooth_l1_loss"), regression_samples()),
    OpInfo(F("smooth_l1_loss"), regression_samples(beta=0.5), aliases=("smooth_l1_loss_beta",)),
    OpInfo(F("huber_loss"), regression_samples(delta=0.5)),
    cast_row("huber_loss", weighted_regression_samples, aliases=("huber_loss_weight",)),
    OpInfo(F("kl_div"), kl_div_samples),
    cast_row("soft_margin_loss", lambda rng: [Sample((rand(rng, 3, 4), signs(rng, 3, 4)), {"reduction": r}, r)
                                               for r in REDUCTIONS]),
    cast_row("multilabel_soft_margin_loss", lambda rng: [
        Sample((rand(rng, 3, 4), C(rng.integers(0, 2, (3, 4)).astype(np.float64))), {"reduction": r}, r)
        for r in REDUCTIONS] + [Sample((rand(rng, 3, 4), C(rng.random((3, 4)))), {"weight": C(positive(rng, 4))},
                                       "weight")]),
    cast_row("multi_margin_loss", margin_samples),
    OpInfo(F("multilabel_margin_loss"), multilabel_margin_samples),
    cast_row("margin_ranking_loss", lambda rng: [
        Sample((rand(rng, 5), away_from(rng, 0.0, 5), C(np.ones(5))), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((rand(rng, 5), rand(rng, 5), signs(rng, 5)), {"margin": 5.0}, "margin")]),
    cast_row("hinge_embedding_loss", lambda rng: [
        Sample((away_from(rng, 1.0, 3, 4), signs(rng, 3, 4)), {"reduction": r}, r) for r in REDUCTIONS]),
    cast_row("cosine_embedding_loss", lambda rng: [
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), signs(rng, 3)), {"reduction": r, "margin": -1.0}, r)
        for r in REDUCTIONS]),
    OpInfo(F("triplet_margin_loss"), lambda rng: [
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 3, 4)), {"margin": 4.0}, "margin"),
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 3, 4)), {"margin": 4.0, "swap": True, "p": 1,
                                                                     "reduction": "none"}, "swap_p1")]),
    cast_row("poisson_nll_loss", lambda rng: [
        Sample((rand(rng, 3, 4), positive(rng, 3, 4)), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((positive(rng, 3, 4), C(positive(rng, 3, 4) * 2)), {"log_input": False, "full": True}, "full")]),
    OpInfo(F("gaussian_nll_loss"), lambda rng: [
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), positive(rng, 3, 4)), {"reduction": r}, r) for r in REDUCTIONS] + [
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), positive(rng, 3)), {"full": True}, "homoscedastic"),
        Sample((rand(rng, 3, 4), rand(rng, 3, 4), 0.5), name="float_var")]),
    # distances, attention
    OpInfo(F("cosine_similarity"), lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)), name="dim1"),
                                                Sample((rand(rng, 2, 3), rand(rng, 3)), {"dim": -1}, "broadcast")],
           aliases=("cosine_similarity",)),
    OpInfo(F("pairwise_distance"), lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)), name="p2"),
                                                Sample((rand(rng, 3, 4), away_from(rng, 0.0, 3, 4)),
                                                       {"p": 1.0, "keepdim": True}, "p1_keepdim")],
           aliases=("pairwise_distance",)),
    OpInfo("cdist", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 5, 4)), name="p2"),
                                 Sample((rand(rng, 2, 3, 2), rand(rng, 4, 2)), {"p": 1.0}, "p1_broadcast"),
                                 Sample((rand(rng, 3, 2), rand(rng, 4, 2)), {"p": 3.0}, "p3"),
                                 Sample((rand(rng, 3, 2), rand(rng, 4, 2)), {"p": float("inf")}, "pinf"),
                                 Sample((rand(rng, 26, 2), rand(rng, 3, 2)), name="matmul_path"),
                                 Sample((rand(rng, 2, 26, 2), rand(rng, 3, 2)), name="matmul_path_batched")],
           atol=1e-4),
    cast_row("scaled_dot_product_attention", attention_samples, atol=1e-4),
]
