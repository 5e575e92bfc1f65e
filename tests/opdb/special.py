"""Op database rows: torch.special (and torch.i0, torch.sinc, torch.mvlgamma).

Names that are the same function as a top-level op (special.erf is torch.erf, special.expit torch.sigmoid,
...) get one sample here through torch.special; the top-level rows in pointwise.py test them fully.
"""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, noncontig, positive, rand
from .pointwise import PROBABILITY, kink, unary_samples, uniform


def samples_of(domain, *edges):
    """unary_samples over `domain`, plus a sample of edge values compared with torch's backward only."""
    base = unary_samples(domain)

    def samples(rng):
        return base(rng) + ([kink(np.asarray(edges, dtype=np.float64), name="edges")] if edges else [])
    return samples


def pair_samples(x, y):
    def samples(rng):
        return [Sample((x(rng, 3, 4), y(rng, 3, 4)), name="same"),
                Sample((x(rng, 3, 1), y(rng, 4)), name="broadcast"),
                Sample((noncontig(x(rng, 4, 3)), y(rng, 3)), name="noncontig"),
                Sample((1.5, y(rng, 3)), name="number_self"),
                Sample((x(rng, 3), 2.5), name="number_other")]
    return samples


WIDE = uniform(-8.0, 8.0)
BESSEL_EDGES = (0.0, 1e-9, 0.5, 2.0, 24.9, 25.1, 60.0, 1e4, np.inf, np.nan)


def special(name, samples, **kwargs):
    return OpInfo(f"special.{name}", samples, **kwargs)


def polynomial_samples(rng):
    x = rng.uniform(-1.5, 1.5, size=(3, 4))
    return [Sample((x, C(np.array([0.0, 1.0, 2.0, 5.0]))), name="degrees"),
            Sample((C(np.array([1.0, -1.0, 0.0, 0.5, 0.25])), C(np.array([3.0, 4.0, 9.0, 12.0, 7.0]))),
                   name="edges"),
            Sample((x[:, :1], 3.0), name="number_degree")]


OPS = [
    OpInfo("i0", samples_of(WIDE, 0.0, 30.0, -40.0, 700.0), method=True),
    OpInfo("sinc", samples_of(rand, 0.0, 1.0, -2.0, 1e-3), method=True),
    OpInfo("mvlgamma", lambda rng: [Sample((positive(rng, 3, 4) + 2, 3), name="p3"),
                                    Sample((positive(rng, 5) + 1, 1), name="p1")], method=True),
    special("i0e", samples_of(WIDE, 0.0, 30.0, -40.0, 1e5)),
    special("i1", samples_of(WIDE, 0.0, -0.0, 30.0, -40.0)),
    special("i1e", samples_of(WIDE, 0.0, 30.0, -40.0, 1e5)),
    special("ndtr", samples_of(WIDE, -40.0, 0.0, 40.0)),
    special("ndtri", samples_of(PROBABILITY, 0.0, 1.0, 1e-300, 0.5, -0.5, np.nan)),
    special("log_ndtr", samples_of(WIDE, -20.0, -5.0, -1.0, 0.0, 40.0)),  # float32 gradients lose all digits past -20
    special("erfcx", samples_of(WIDE, -26.0, 1.5, 1e3, np.inf)),
    special("entr", samples_of(positive, 0.0, -1.0, np.inf)),
    special("xlog1py", pair_samples(rand, uniform(-0.5, 2.0))),
    special("zeta", lambda rng: [Sample((C(positive(rng, 3, 4) + 1.5), positive(rng, 3, 4)), name="same"),
                                 Sample((3.0, positive(rng, 5)), name="number_self"),
                                 Sample((C(np.array([1.0, 0.5, 2.0, 3.0, 2.0])), C(np.array([1.0, 1.0, -1.0, -2.5,
                                                                                             1e9]))), name="edges")]),
    special("multigammaln", lambda rng: [Sample((positive(rng, 3, 4) + 2, 2), name="p2")]),
    *(special(n, samples_of(WIDE, *BESSEL_EDGES), differentiable=False, atol=1e-6)  # torch's own error: test_special
      for n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1")),
    special("airy_ai", samples_of(WIDE, -20.0, -10.0, -5.0, 0.0, 2.08, 2.09, 50.0, np.inf), differentiable=False,
            atol=5e-6),
    *(special(n, samples_of(WIDE, *BESSEL_EDGES), differentiable=False)
      for n in ("modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
                "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0")),
    *(special(n, polynomial_samples, differentiable=False)
      for n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p")),
    # the names of rows that live in other families, each through torch.special once
    special("expit", unary_samples(rand)),
    special("psi", samples_of(uniform(0.3, 4.0))),
    special("gammaln", samples_of(uniform(0.3, 4.0))),
    special("round", lambda rng: [Sample((rand(rng, 3, 4),), {"decimals": 1}, name="decimals"),
                                  Sample((rand(rng, 3, 4),), name="default")]),
    special("logit", lambda rng: [Sample((PROBABILITY(rng, 3, 4),), name="2d")]),
    special("softmax", lambda rng: [Sample((rand(rng, 3, 4), 1), name="2d")]),
    special("log_softmax", lambda rng: [Sample((rand(rng, 3, 4), 0), name="2d")]),
    special("logsumexp", lambda rng: [Sample((rand(rng, 3, 4), 1), name="2d")]),
    special("polygamma", lambda rng: [Sample((2, positive(rng, 3, 4)), name="2d")]),
    special("xlogy", lambda rng: [Sample((rand(rng, 3, 4), positive(rng, 3, 4)), name="2d")]),
    *(special(n, lambda rng: [Sample((C(positive(rng, 3, 4) * 2), positive(rng, 3, 4) * 2), name="2d")],
              forward_ad=False) for n in ("gammainc", "gammaincc")),
    *(special(n, lambda rng: [Sample((rand(rng, 3, 4),), name="2d")]) for n in ("erf", "erfc", "exp2", "expm1")),
    special("erfinv", lambda rng: [Sample((uniform(-0.9, 0.9)(rng, 3, 4),), name="2d")]),
    special("log1p", lambda rng: [Sample((positive(rng, 3, 4),), name="2d")]),
    special("digamma", lambda rng: [Sample((positive(rng, 3, 4),), name="2d")]),
]

