"""Op database rows: activation functions (OPS.md C), through torch.nn.functional.

Samples stay at least 0.1 away from each function's kinks (0, the thresholds, +-3 for the hard
variants) so finite differences hold; a `kink` sample at the kinks themselves is compared with
torch's backward only. The in-place forms run on a clone of the input (a leaf that requires grad
cannot be written in place) and are checked for torch's node (EluBackward1, ThresholdBackward1...).
"""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, noncontig, rand


def away_from(*kinks, low=-2.0, high=2.0, gap=0.1):
    """A domain on [low, high) whose values keep `gap` away from each of `kinks`."""
    def domain(rng, *shape):
        v = rng.uniform(low, high, size=shape)
        for k in kinks:
            v = np.where(np.abs(v - k) < gap, v + 2 * gap, v)
        return np.asarray(v)
    return domain


def samples_of(domain, *params, **kwargs):
    """The shared shapes (2-d, 0-d, empty, size-1, non-contiguous, 3-d) with fixed extra arguments."""
    def samples(rng):
        return [Sample((domain(rng, 3, 4), *params), dict(kwargs), "2d"),
                Sample((domain(rng), *params), dict(kwargs), "0d"),
                Sample((domain(rng, 0, 3), *params), dict(kwargs), "empty"),
                Sample((domain(rng, 1, 5), *params), dict(kwargs), "size1"),
                Sample((noncontig(domain(rng, 4, 3)), *params), dict(kwargs), "noncontig"),
                Sample((domain(rng, 2, 3, 2), *params), dict(kwargs), "3d")]
    return samples


def plus(base, *extra):
    """base's samples and more: Samples, or functions of rng that make one."""
    def samples(rng):
        return base(rng) + [e(rng) if callable(e) else e for e in extra]
    return samples


def with_params(domain, name, *params, **kwargs):
    """One 3x4 sample with other parameters than the defaults."""
    return lambda rng: Sample((domain(rng, 3, 4), *params), kwargs, name)


def kink(values, *params, **kwargs):
    return Sample((np.asarray(values, dtype=np.float64), *params), kwargs, "kink", gradcheck=False)


def inplace(name):
    """Call F.<name>_ / F.<name>(..., inplace=True) on a clone, as a network would on a hidden value."""
    def call(m, x, *args, **kwargs):
        return getattr(m.nn.functional, name)(x.clone(), *args, **kwargs)
    return call


NONZERO = away_from(0.0)
F = "nn.functional."

OPS = [
    OpInfo(F + "relu", plus(samples_of(NONZERO), kink([-1.0, 0.0, 1.0]))),
    OpInfo(F + "relu", samples_of(NONZERO, inplace=True), call=inplace("relu"), aliases=("relu_inplace_arg",)),
    OpInfo(F + "relu_", samples_of(NONZERO), call=inplace("relu_")),
    OpInfo("relu_", samples_of(NONZERO), call=lambda m, x: m.relu_(x.clone()), aliases=("torch_relu_",)),
    OpInfo(F + "relu6", plus(samples_of(away_from(0.0, 6.0, high=8.0)), kink([-1.0, 0.0, 3.0, 6.0, 7.0]))),
    OpInfo(F + "relu6", samples_of(away_from(0.0, 6.0, high=8.0), inplace=True), call=inplace("relu6"),
           aliases=("relu6_inplace",)),
    OpInfo(F + "threshold", plus(samples_of(away_from(0.1), 0.1, 20.0), kink([0.0, 0.1, 0.2], 0.1, -1.0))),
    OpInfo("threshold", samples_of(away_from(-0.5), -0.5, 0.0), aliases=("torch_threshold",)),
    OpInfo(F + "threshold_", samples_of(away_from(0.1), 0.1, 20.0), call=inplace("threshold_")),
    OpInfo("threshold_", samples_of(away_from(0.1), 0.1, -3.0), call=lambda m, x, *a: m.threshold_(x.clone(), *a),
           aliases=("torch_threshold_",)),
    OpInfo(F + "threshold", samples_of(away_from(0.1), 0.1, 20.0, inplace=True), call=inplace("threshold"),
           aliases=("threshold_inplace",)),
    OpInfo(F + "leaky_relu", plus(samples_of(NONZERO), with_params(NONZERO, "slope", 0.2),
                                  kink([-1.0, 0.0, 1.0]))),
    OpInfo(F + "leaky_relu", samples_of(NONZERO, negative_slope=0.3, inplace=True), call=inplace("leaky_relu"),
           aliases=("leaky_relu_inplace",)),
    OpInfo(F + "leaky_relu_", samples_of(NONZERO, 0.1), call=inplace("leaky_relu_")),
    OpInfo(F + "rrelu", plus(samples_of(NONZERO), with_params(NONZERO, "bounds", 0.1, 0.3), kink([-1.0, 0.0, 1.0]))),
    OpInfo(F + "rrelu", samples_of(NONZERO, 0.2, 0.2, True), aliases=("rrelu_training_one_slope",)),
    OpInfo(F + "rrelu", samples_of(NONZERO, inplace=True), call=inplace("rrelu"), aliases=("rrelu_inplace",)),
    OpInfo(F + "rrelu_", samples_of(NONZERO, 0.1, 0.2), call=inplace("rrelu_")),
    OpInfo("rrelu", samples_of(NONZERO), aliases=("torch_rrelu",)),
    OpInfo("rrelu_", samples_of(NONZERO), call=lambda m, x: m.rrelu_(x.clone()), aliases=("torch_rrelu_",)),
    OpInfo(F + "elu", plus(samples_of(NONZERO), with_params(NONZERO, "alpha", 0.5),
                           kink([-1.0, 0.0, 1.0]))),
    OpInfo(F + "elu", samples_of(NONZERO, alpha=2.0, inplace=True), call=inplace("elu"), aliases=("elu_inplace",)),
    OpInfo(F + "elu_", samples_of(NONZERO, 1.5), call=inplace("elu_")),
    OpInfo(F + "selu", plus(samples_of(NONZERO), kink([-1.0, 0.0, 1.0]))),
    OpInfo("selu", samples_of(NONZERO), aliases=("torch_selu",)),
    OpInfo(F + "selu", samples_of(NONZERO, inplace=True), call=inplace("selu"), aliases=("selu_inplace",)),
    OpInfo(F + "selu_", samples_of(NONZERO), call=inplace("selu_")),
    OpInfo("selu_", samples_of(NONZERO), call=lambda m, x: m.selu_(x.clone()), aliases=("torch_selu_",)),
    OpInfo(F + "celu", plus(samples_of(NONZERO), with_params(NONZERO, "alpha", 0.7),
                            kink([-1.0, 0.0, 1.0]))),
    OpInfo("celu", samples_of(NONZERO, 2.0), aliases=("torch_celu",)),
    OpInfo(F + "celu", samples_of(NONZERO, alpha=0.5, inplace=True), call=inplace("celu"), aliases=("celu_inplace",)),
    OpInfo(F + "celu_", samples_of(NONZERO, 1.5), call=inplace("celu_")),
    OpInfo("celu_", samples_of(NONZERO), call=lambda m, x: m.celu_(x.clone()), aliases=("torch_celu_",)),
    OpInfo(F + "gelu", samples_of(rand)),
    OpInfo(F + "gelu", samples_of(rand, approximate="tanh"), aliases=("gelu_tanh",)),
    OpInfo(F + "silu", samples_of(rand)),
    OpInfo(F + "silu", samples_of(rand, inplace=True), call=inplace("silu"), aliases=("silu_inplace",)),
    OpInfo(F + "mish", samples_of(rand)),
    OpInfo(F + "mish", samples_of(rand, inplace=True), call=inplace("mish"), aliases=("mish_inplace",)),
    OpInfo(F + "softplus", plus(samples_of(rand),
                                with_params(away_from(0.5), "beta_threshold", 2.0, 1.0),
                                Sample((np.array([-30.0, 0.1, 19.0, 25.0, 700.0]),), name="wide"))),
    OpInfo(F + "hardtanh", plus(samples_of(away_from(-1.0, 1.0)),
                                with_params(away_from(-0.5, 0.7), "bounds", -0.5, 0.7),
                                kink([-2.0, -1.0, 0.0, 1.0, 2.0]))),
    OpInfo(F + "hardtanh", samples_of(away_from(-1.0, 1.0), inplace=True), call=inplace("hardtanh"),
           aliases=("hardtanh_inplace",)),
    OpInfo(F + "hardtanh_", samples_of(away_from(-0.5, 0.5), -0.5, 0.5), call=inplace("hardtanh_")),
    # torch defines no derivative of hardsigmoid_backward (NotImplemented): no second derivative to check
    OpInfo(F + "hardsigmoid", plus(samples_of(away_from(-3.0, 3.0, low=-5.0, high=5.0)),
                                   kink([-4.0, -3.0, 0.0, 3.0, 4.0])), gradgrad=False),
    OpInfo(F + "hardsigmoid", samples_of(away_from(-3.0, 3.0, low=-5.0, high=5.0), inplace=True),
           call=inplace("hardsigmoid"), aliases=("hardsigmoid_inplace",), gradgrad=False),
    OpInfo(F + "hardswish", plus(samples_of(away_from(-3.0, 3.0, low=-5.0, high=5.0)),
                                 kink([-4.0, -3.0, 0.0, 3.0, 4.0]))),
    OpInfo(F + "hardswish", samples_of(away_from(-3.0, 3.0, low=-5.0, high=5.0), inplace=True),
           call=inplace("hardswish"), aliases=("hardswish_inplace",)),
    OpInfo(F + "logsigmoid", plus(samples_of(rand), Sample((np.array([-800.0, -30.0, 0.0, 30.0, 800.0]),),
                                                             name="wide"))),
    OpInfo(F + "softshrink", plus(samples_of(away_from(0.0, 0.5, -0.5)),
                                  with_params(away_from(1.0, -1.0), "lambd", 1.0), kink([-0.5, 0.0, 0.5, 1.0]))),
    OpInfo(F + "hardshrink", plus(samples_of(away_from(0.0, 0.5, -0.5)), kink([-0.5, 0.0, 0.5, 1.0]))),
    OpInfo("hardshrink", samples_of(away_from(0.0, 0.3, -0.3), 0.3), method=True, aliases=("torch_hardshrink",)),
    OpInfo(F + "tanhshrink", samples_of(rand)),
    OpInfo(F + "softsign", samples_of(NONZERO)),
    OpInfo(F + "sigmoid", samples_of(rand), aliases=("functional_sigmoid",)),
    OpInfo(F + "tanh", samples_of(rand), aliases=("functional_tanh",)),
    OpInfo(F + "glu", lambda rng: [Sample((rand(rng, 3, 4),), name="last"),
                                   Sample((rand(rng, 4, 3), 0), name="dim0"),
                                   Sample((rand(rng, 2, 6, 2), -2), name="negative_dim"),
                                   Sample((noncontig(rand(rng, 4, 6)),), name="noncontig"),
                                   Sample((rand(rng, 0, 4),), name="empty")]),
    OpInfo(F + "prelu", lambda rng: [
        Sample((NONZERO(rng, 2, 3, 4), np.array([0.25])), name="shared_weight"),
        Sample((NONZERO(rng, 2, 3, 4), np.array([0.1, 0.2, 0.3])), name="per_channel"),
        Sample((NONZERO(rng, 2, 3), np.array([0.1, -0.2, 0.3])), name="2d_per_channel"),
        Sample((NONZERO(rng, 5), np.array([0.4])), name="1d"),
        Sample((NONZERO(rng), np.array([0.4])), name="0d"),
        Sample((noncontig(NONZERO(rng, 4, 3)), np.array([0.1, 0.2, 0.3])), name="noncontig"),
        kink([-1.0, 0.0, 1.0], np.array([0.5]))]),
    OpInfo("prelu", lambda rng: [Sample((NONZERO(rng, 2, 3), np.array([0.1, 0.2, 0.3])), name="per_channel")],
           method=True, aliases=("torch_prelu",)),
]
