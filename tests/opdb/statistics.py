"""Op database rows: statistics of a tensor's values (OPS.md D): dist, renorm, logcumsumexp, cov, corrcoef,
quantile, nanquantile, gradient, and the counting ops bincount, histc, histogram, histogramdd (no gradient).

Quantile samples keep the values distinct and away from the ranks' ties, so finite differences hold."""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, distinct, positive, rand


def renorm_samples(rng):
    x = rand(rng, 3, 4) * 2
    return [Sample((x, 2, 0, 1.5), name="rows"), Sample((x, 1, 1, 2.0), name="columns_p1"),
            Sample((x, 3, 0, 100.0), name="within")]


def quantile_samples(rng):
    return [Sample((distinct(rng, 3, 5), 0.3), name="all"),
            Sample((distinct(rng, 3, 5), np.array([0.2, 0.9]), 1), {"keepdim": True}, name="q_vector"),
            Sample((distinct(rng, 4, 3), 0.7, 0), {"interpolation": "midpoint"}, name="midpoint"),
            Sample((distinct(rng, 4, 3), 0.4, 0), {"interpolation": "nearest"}, name="nearest")]


def gradient_samples(rng):
    return [Sample((rand(rng, 5),), name="1d"), Sample((rand(rng, 4, 5),), {"spacing": 2.0, "dim": 1}, name="spacing"),
            Sample((rand(rng, 4, 5),), {"edge_order": 2, "spacing": [0.5, 2.0]}, name="edge_order_2"),
            Sample((rand(rng, 3, 4),), {"spacing": [C(np.array([0.0, 1.0, 3.0])), C(np.array([0.0, 0.5, 1.5, 3.0]))]},
                   name="coordinates")]


def counts(values):
    return [Sample((C(values),), name="values")]


OPS = [
    OpInfo("dist", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 4)), name="p2"),
                                Sample((rand(rng, 3, 4), rand(rng, 3, 4), 3), name="p3"),
                                Sample((rand(rng, 3, 4), rand(rng, 3, 4), 1), name="p1")], method=True),
    OpInfo("renorm", renorm_samples, method=True),
    OpInfo("logcumsumexp", lambda rng: [Sample((rand(rng, 3, 4), 1), name="2d"), Sample((rand(rng, 5), 0), name="1d"),
                                        Sample((rand(rng), 0), name="0d")], method=True),
    OpInfo("cov", lambda rng: [Sample((rand(rng, 3, 5),), name="2d"), Sample((rand(rng, 5),), name="1d"),
                               Sample((rand(rng, 2, 4),), {"fweights": C(np.array([1, 2, 1, 3])),
                                                           "aweights": C(positive(rng, 4)), "correction": 0},
                                      name="weighted")], method=True),
    OpInfo("corrcoef", lambda rng: [Sample((rand(rng, 3, 5),), name="2d")], method=True),
    OpInfo("quantile", quantile_samples, method=True),
    OpInfo("nanquantile", quantile_samples, method=True),
    OpInfo("gradient", gradient_samples),
    OpInfo("bincount", lambda rng: counts(np.array([1, 2, 2, 5, 0])), method=True, differentiable=False),
    OpInfo("histc", lambda rng: [Sample((C(rand(rng, 20)), 5), name="data_range"),
                                 Sample((C(rand(rng, 20)), 4, -1.0, 1.0), name="given_range")], method=True,
           differentiable=False),
    OpInfo("histogram", lambda rng: [Sample((C(rand(rng, 20)), 5), name="bins"),
                                     Sample((C(rand(rng, 20)), C(np.array([-2.0, -0.5, 0.0, 1.0, 2.0]))),
                                            {"density": True}, name="edges")], method=True, differentiable=False),
    OpInfo("histogramdd", lambda rng: [Sample((C(rand(rng, 10, 2)), [3, 2]), name="2d")], differentiable=False),
]
