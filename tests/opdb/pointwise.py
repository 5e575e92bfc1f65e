"""Op database rows: pointwise unary and binary ops (OPS.md A, B) and comparisons."""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, noncontig, positive, rand


def unary_samples(domain=rand):
    def samples(rng):
        return [
            Sample((domain(rng, 3, 4),), name="2d"),
            Sample((domain(rng),), name="0d"),
            Sample((domain(rng, 0, 3),), name="empty"),
            Sample((domain(rng, 1, 5),), name="size1"),
            Sample((noncontig(domain(rng, 4, 3)),), name="noncontig"),
        ]
    return samples


def binary_samples(domain=rand, other=rand, scalar=True):
    def samples(rng):
        return [
            Sample((domain(rng, 3, 4), other(rng, 3, 4)), name="same"),
            Sample((domain(rng, 3, 4), other(rng, 4)), name="broadcast_adds_dim"),
            Sample((domain(rng, 3, 1), other(rng, 1, 4)), name="broadcast_both"),
            Sample((domain(rng), other(rng, 2, 3)), name="0d_self"),
            Sample((noncontig(domain(rng, 4, 3)), other(rng, 3)), name="noncontig"),
        ] + ([Sample((domain(rng, 2, 3), 1.5), name="python_scalar")] if scalar else [])
    return samples


def away_from_zero(rng, *shape):
    return np.asarray(positive(rng, *shape) * rng.choice([-1.0, 1.0], size=shape))


def away_from_ties(rng, *shape):
    """Values at least 0.1 away from the kinks at 0 and +-0.5 (relu, abs, clamp)."""
    v = rand(rng, *shape)
    for kink in (0.0, 0.5, -0.5):
        v = np.where(np.abs(v - kink) < 0.1, v + 0.2, v)
    return np.asarray(v)


OPS = [
    OpInfo("neg", unary_samples(), method=True),
    OpInfo("exp", unary_samples(), method=True),
    OpInfo("log", unary_samples(positive), method=True),
    OpInfo("sin", unary_samples(), method=True),
    OpInfo("cos", unary_samples(), method=True),
    OpInfo("tanh", unary_samples(), method=True),
    OpInfo("sigmoid", unary_samples(), method=True),
    OpInfo("relu", unary_samples(away_from_ties), method=True),
    OpInfo("abs", unary_samples(away_from_zero), method=True),
    OpInfo("sqrt", unary_samples(positive), method=True),
    OpInfo("reciprocal", unary_samples(away_from_zero), method=True),
    OpInfo("clamp", lambda rng: [Sample((away_from_ties(rng, 3, 4),), {"min": -0.5, "max": 0.5}, "both"),
                                 Sample((away_from_ties(rng, 3, 4),), {"min": 0.0}, "min_only")], method=True),
    OpInfo("add", binary_samples(), method=True),
    OpInfo("add", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3)), {"alpha": 2.5}, "alpha")],
           aliases=("add_alpha",)),
    OpInfo("sub", binary_samples(), method=True),
    OpInfo("mul", binary_samples(), method=True),
    OpInfo("div", binary_samples(other=away_from_zero), method=True),
    OpInfo("pow", lambda rng: [Sample((positive(rng, 3, 4), 2), name="int_exponent"),
                               Sample((positive(rng, 3, 4), 0.5), name="float_exponent"),
                               Sample((positive(rng, 3, 4), 0), name="zero_exponent"),
                               Sample((positive(rng, 3, 4), positive(rng, 4)), name="tensor_exponent"),
                               Sample((positive(rng, 3), positive(rng, 2, 3)), name="broadcast")], method=True),
    OpInfo("pow", lambda rng: [Sample((2.0, rand(rng, 3, 4)), name="scalar_base")],
           call=lambda m, base, e: m.pow(base, e), aliases=("pow_scalar_base",)),
    OpInfo("maximum", binary_samples(scalar=False), method=True),
    OpInfo("minimum", binary_samples(scalar=False), method=True),
    OpInfo("where", lambda rng: [Sample((C(rng.random((3, 4)) > 0.5), rand(rng, 3, 4), rand(rng, 4)), name="bcast"),
                                 Sample((C(rng.random((3, 1)) > 0.5), rand(rng, 3, 4), 0.0), name="scalar")]),
    OpInfo("eq", binary_samples(), method=True, differentiable=False),
    OpInfo("ne", binary_samples(), method=True, differentiable=False),
    OpInfo("lt", binary_samples(), method=True, differentiable=False),
    OpInfo("le", binary_samples(), method=True, differentiable=False),
    OpInfo("gt", binary_samples(), method=True, differentiable=False),
    OpInfo("ge", binary_samples(), method=True, differentiable=False),
]
