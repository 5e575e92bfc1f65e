"""Op database rows: random sampling (OPS.md K).

Draws differ between libraries, so every sample is chosen where the distribution is a point mass
(probabilities 0 and 1, std 0, rate 0, one-hot categories): values, dtypes, shapes, node names and
the zero gradients are then compared with torch like any other row. No sample is gradchecked
(finite differences would draw at perturbed parameters). The in-place samplers (`x.normal_()`, ...)
are compared with torch in tests/test_autograd.py (scenario `random_sampling`).
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample


def point_mass_probabilities(rng):
    return [Sample((np.array([0.0, 1.0, 1.0, 0.0]),), name="1d", gradcheck=False),
            Sample((np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),), name="2d", gradcheck=False),
            Sample((np.array(1.0),), name="0d", gradcheck=False)]


def normal_samples(rng):
    return [Sample((rng.standard_normal((2, 3)), C(np.zeros((2, 3)))), name="tensor_tensor", gradcheck=False),
            Sample((rng.standard_normal(3), 0.0), name="tensor_float", gradcheck=False),
            Sample((0.5, np.zeros((2, 2))), name="float_tensor", gradcheck=False),
            Sample((rng.standard_normal((2, 1)), C(np.zeros(3))), name="broadcast", gradcheck=False)]


def one_hot_rows(rng):
    rows = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    return [Sample((rows, 1), name="rows", gradcheck=False),
            Sample((rows[0], 3, True), name="replacement", gradcheck=False)]


OPS = [
    OpInfo("bernoulli", point_mass_probabilities, method=True),
    OpInfo("bernoulli", point_mass_probabilities, call=lambda m, x: m.bernoulli(x, 1.0), differentiable=False,
           forward_ad=False, aliases=("bernoulli_p",)),
    OpInfo("normal", normal_samples),
    OpInfo("poisson", lambda rng: [Sample((np.zeros((2, 3)),), name="zero_rate", gradcheck=False)]),
    OpInfo("multinomial", one_hot_rows, method=True, differentiable=False),
    OpInfo("binomial", lambda rng: [Sample((np.array([3.0, 5.0, 0.0]), np.array([0.0, 1.0, 1.0])), name="certain",
                                           gradcheck=False)], differentiable=False, forward_ad=False),
]
