"""Op database rows: complex numbers (OPS.md J).

The shared checks (gradcheck, finite differences, a real random cotangent) work on real tensors,
so each complex op is reached from real (..., 2) arrays through view_as_complex and, where its
result is complex, brought back through view_as_real: the real function of real inputs that
the complex op defines. Forward and gradients on complex tensors themselves, against torch, are
in tests/test_complex.py.
"""

from __future__ import annotations

import numpy as np

from . import OpInfo, Sample, noncontig, positive, rand


def pairs(rng, *shape):
    """Real arrays of shape (*shape, 2): (real, imaginary) parts of complex values."""
    return rand(rng, *shape, 2)


def nonzero_pairs(rng, *shape):
    """(real, imaginary) pairs of modulus in [0.5, 2) (away from z = 0, where angle and sgn have a kink)."""
    angle = rng.uniform(-np.pi, np.pi, size=shape)
    modulus = positive(rng, *shape)
    return np.stack([modulus * np.cos(angle), modulus * np.sin(angle)], axis=-1)


def complex_samples(domain=pairs):
    """2-d, 0-d, transposed and strided data (no empty sample: the harness gives empty arrays zero strides,
    which view_as_complex refuses in both libraries; tests/test_complex.py covers empty tensors)."""
    def samples(rng):
        return [Sample((domain(rng, 3, 4),), name="2d"),
                Sample((domain(rng),), name="0d"),
                Sample((np.ascontiguousarray(domain(rng, 4, 3).transpose(1, 0, 2)),), name="transposed_data"),
                Sample((domain(rng, 5, 3)[::2],), name="strided")]
    return samples


def through_complex(fn, back=False):
    """A call: the op on view_as_complex(x); a complex result comes back through view_as_real."""
    def call(m, x, *args):
        out = fn(m, m.view_as_complex(x), *args)
        return m.view_as_real(out) if back else out
    return call


OPS = [
    OpInfo("view_as_real", complex_samples(), call=through_complex(lambda m, z: z, back=True),
           aliases=("view_as_complex",)),
    OpInfo("real", complex_samples(), call=through_complex(lambda m, z: m.real(z))),
    OpInfo("real", lambda rng: [Sample((rand(rng, 3, 4),), name="of_real")], aliases=("real_of_real",)),
    OpInfo("imag", complex_samples(), call=through_complex(lambda m, z: m.imag(z))),
    # resolve_conj: a conjugate tensor (torch's lazy view, ours a copy with the bit) is refused by view_as_real
    OpInfo("conj", complex_samples(), call=through_complex(lambda m, z: m.conj(z).resolve_conj(), back=True)),
    OpInfo("conj", lambda rng: [Sample((rand(rng, 3, 4),), name="of_real")], aliases=("conj_of_real",)),
    OpInfo("conj_physical", complex_samples(), call=through_complex(lambda m, z: m.conj_physical(z), back=True)),
    OpInfo("resolve_conj", complex_samples(), call=through_complex(lambda m, z: m.resolve_conj(m.conj(z)), back=True)),
    OpInfo("angle", complex_samples(nonzero_pairs), call=through_complex(lambda m, z: m.angle(z))),
    OpInfo("angle", lambda rng: [Sample((np.array([-1.5, 0.0, 2.0, np.nan, -0.0]),), name="of_real", gradcheck=False),
                                 Sample((rand(rng, 3, 4),), name="of_real_2d")], method=True,
           aliases=("angle_of_real",)),
    OpInfo("abs", complex_samples(nonzero_pairs), call=through_complex(lambda m, z: m.abs(z)),
           aliases=("abs_complex",)),
    OpInfo("sgn", complex_samples(nonzero_pairs), call=through_complex(lambda m, z: m.sgn(z), back=True),
           aliases=("sgn_complex",)),
    OpInfo("polar", lambda rng: [Sample((positive(rng, 3, 4), rand(rng, 3, 4)), name="same"),
                                 Sample((positive(rng, 3, 1), rand(rng, 4)), name="broadcast"),
                                 Sample((positive(rng), rand(rng, 2)), name="0d_abs"),
                                 Sample((noncontig(positive(rng, 4, 3)), rand(rng, 3)), name="noncontig")],
           call=lambda m, r, theta: m.view_as_real(m.polar(r, theta))),
    OpInfo("complex", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4)), name="same"),
                                   Sample((rand(rng, 3, 1), rand(rng, 4)), name="broadcast"),
                                   Sample((rand(rng), rand(rng, 2)), name="0d_real"),
                                   Sample((noncontig(rand(rng, 4, 3)), rand(rng, 3)), name="noncontig")],
           call=lambda m, re, im: m.view_as_real(m.complex(re, im))),
    OpInfo("exp", complex_samples(), call=through_complex(lambda m, z: m.exp(z), back=True),
           aliases=("exp_complex",)),
    OpInfo("mul", lambda rng: [Sample((pairs(rng, 3, 4), pairs(rng, 4)), name="broadcast")],
           call=lambda m, a, b: m.view_as_real(m.view_as_complex(a) * m.view_as_complex(b)),
           aliases=("mul_complex",)),
    OpInfo("div", lambda rng: [Sample((pairs(rng, 3, 4), nonzero_pairs(rng, 4)), name="broadcast")],
           call=lambda m, a, b: m.view_as_real(m.view_as_complex(a) / m.view_as_complex(b)),
           aliases=("div_complex",)),
    OpInfo("matmul", lambda rng: [Sample((pairs(rng, 3, 4), pairs(rng, 4, 2)), name="matrix"),
                                  Sample((pairs(rng, 4), pairs(rng, 4)), name="dot")],
           call=lambda m, a, b: m.view_as_real(m.view_as_complex(a) @ m.view_as_complex(b)),
           aliases=("matmul_complex",)),
]
