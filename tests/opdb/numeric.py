"""Op database rows: ops on the representation of numbers (OPS.md B): gcd, lcm and the bit shifts on integers,
frexp, ldexp and nextafter on floats, heaviside, and the class tests isposinf / isneginf / isreal."""

from __future__ import annotations

import numpy as np

from . import C, OpInfo, Sample, rand

SPECIALS = np.array([1.5, -2.0, np.inf, -np.inf, np.nan, 0.0, -0.0])


def integer_pairs(rng):
    a = rng.integers(-40, 40, size=(3, 4))
    return [Sample((C(a), C(rng.integers(-40, 40, size=(3, 4)))), name="same"),
            Sample((C(a), C(rng.integers(0, 9, size=4))), name="broadcast"),
            Sample((C(a.astype(np.int32)), C(np.array(3, dtype=np.int32))), name="int32_0d")]


def shift_pairs(rng):
    a = rng.integers(-100, 100, size=(3, 4))
    return [Sample((C(a), C(rng.integers(-2, 70, size=(3, 4)))), name="out_of_range_shifts"),
            Sample((C(a.astype(np.int8)), 3), name="int8_number"),
            Sample((C(np.array([200, 7], dtype=np.uint8)), C(np.array([1, 9], dtype=np.uint8))), name="uint8")]


def float_pairs(rng):
    return [Sample((rand(rng, 3, 4), rand(rng, 3, 4)), name="same"),
            Sample((rand(rng, 3, 4), rand(rng, 4)), name="broadcast")]


def nextafter_samples(rng):
    x = rand(rng, 3, 4)
    return [Sample((x, rand(rng, 3, 4)), name="apart"),
            Sample((x, C(np.where(np.arange(12).reshape(3, 4) % 2 == 0, x, 0.0))), name="ties", gradcheck=False)]


OPS = [
    OpInfo("gcd", integer_pairs, method=True, differentiable=False),
    OpInfo("lcm", integer_pairs, method=True, differentiable=False),
    OpInfo("bitwise_left_shift", shift_pairs, method=True, differentiable=False),
    OpInfo("bitwise_right_shift", shift_pairs, method=True, differentiable=False),
    OpInfo("frexp", lambda rng: [Sample((rand(rng, 3, 4) * 20,), name="2d"), Sample((rand(rng),), name="0d"),
                                 Sample((C(SPECIALS),), name="specials")], method=True),
    # integer exponents >= 0: at a negative one torch's gradient is 0 (its pow(2, other) is an integer power)
    OpInfo("ldexp", lambda rng: [Sample((rand(rng, 3, 4), C(rng.integers(0, 4, size=(3, 4)))), name="int_exponent"),
                                 Sample((rand(rng, 3, 4), rand(rng, 4)), name="float_exponent")], method=True),
    OpInfo("nextafter", nextafter_samples, method=True),
    OpInfo("heaviside", lambda rng: [Sample((C(np.array([-1.5, 0.0, 2.0, 0.0])), C(np.array([0.5, 0.25, 0.5, 1.0]))),
                                            name="zeros")], method=True, differentiable=False),
    OpInfo("isposinf", lambda rng: [Sample((C(SPECIALS),), name="specials"),
                                    Sample((C(np.array([1, -2])),), name="integers")], method=True,
           differentiable=False),
    OpInfo("isneginf", lambda rng: [Sample((C(SPECIALS),), name="specials")], method=True, differentiable=False),
    OpInfo("isreal", lambda rng: [Sample((C(SPECIALS * 1j + np.array([0, 0, 0, 0, 0, 1, 1]) * 1j),), name="complex"),
                                  Sample((C(SPECIALS),), name="real")], method=True, differentiable=False),
]
