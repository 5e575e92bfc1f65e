"""Op database rows: pointwise unary, binary and ternary ops (OPS.md A, B), comparisons and logic.

Every op gets the shared sample set (2-d, 0-d, empty, size-1 dim, non-contiguous; broadcasting
for binary ops) drawn from its domain, kept away from kinks and poles so that finite differences
hold. Ties (maximum, fmax, clamp at its bounds) and NaN are compared with torch's backward only
(`gradcheck=False`). The special functions NumPy lacks also get a `wide` sample across their
range (poles, tails, large arguments), compared with torch's values and gradients.
"""

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


def with_samples(base, *extra):
    """A sample function: base(rng) plus samples built by each of `extra(rng)`."""
    def samples(rng):
        return base(rng) + [s for make in extra for s in make(rng)]
    return samples


def kink(*args, name, **kwargs):
    """A sample at a tie, kink or NaN: compared with torch's backward, no finite differences."""
    return Sample(args, kwargs, name, gradcheck=False)


def uniform(low, high):
    def domain(rng, *shape):
        return np.asarray(rng.uniform(low, high, size=shape))
    return domain


def away_from_zero(rng, *shape):
    return np.asarray(positive(rng, *shape) * rng.choice([-1.0, 1.0], size=shape))


def away_from_ties(rng, *shape):
    """Values at least 0.1 away from the kinks at 0 and +-0.5 (relu, abs, clamp)."""
    v = rand(rng, *shape)
    for kink_at in (0.0, 0.5, -0.5):
        v = np.where(np.abs(v - kink_at) < 0.1, v + 0.2, v)
    return np.asarray(v)


def away_from_integers(rng, *shape):
    """Values in (-3, 3) at least 0.05 from an integer (poles of digamma, steps of floor)."""
    v = rng.uniform(-3, 3, size=shape)
    frac = v - np.round(v)
    return np.asarray(np.where(np.abs(frac) < 0.05, v + 0.1, v))


def scaled(factor, domain=rand):
    def values(rng, *shape):
        return np.asarray(domain(rng, *shape) * factor)
    return values


def ties(rng, *shape):
    return rng.integers(-1, 2, size=shape).astype(np.float64)


def wide(values):
    def samples(rng):
        return [kink(np.asarray(values, dtype=np.float64), name="wide")]
    return samples


OPEN_UNIT = uniform(-0.9, 0.9)
PROBABILITY = uniform(0.1, 0.9)
ABOVE_ONE = uniform(1.2, 3.0)
ABOVE_MINUS_ONE = uniform(-0.8, 2.0)
GAMMA_WIDE = [-7.5, -3.3, -2.7, -1.5, -0.7, -0.2, 1e-8, 0.01, 0.3, 0.999, 1.0, 1.001, 1.46, 2.0, 2.4, 3.7, 9.9,
              12.0, 55.5, 170.2, 1e4, 3e8]
# ============================================================================================
# A. Unary
# ============================================================================================

UNARY = [
    OpInfo("neg", unary_samples(), method=True, aliases=("negative",)),
    OpInfo("abs", unary_samples(away_from_zero), method=True, aliases=("absolute",)),
    OpInfo("abs", lambda rng: [kink(np.array([-1.0, 0.0, 2.0]), name="at_zero")], aliases=("abs_at_zero",)),
    # torch's gradient of sgn for real inputs is a ZeroTensor, which the harness cannot read: forward here,
    # backward in tests/test_complex.py; complex inputs in opdb/complex.py
    OpInfo("sgn", unary_samples(away_from_zero), method=True, differentiable=False),
    OpInfo("sign", unary_samples(away_from_zero), method=True),
    OpInfo("floor", unary_samples(away_from_integers), method=True),
    OpInfo("ceil", unary_samples(away_from_integers), method=True),
    OpInfo("trunc", unary_samples(away_from_integers), method=True, aliases=("fix",)),
    OpInfo("round", unary_samples(away_from_integers), method=True),
    OpInfo("round", lambda rng: [Sample((away_from_integers(rng, 3, 4),), {"decimals": 2}, "decimals"),
                                 Sample((away_from_integers(rng, 3) * 100,), {"decimals": -1}, "negative_decimals")],
           method=True, aliases=("round_decimals",)),
    OpInfo("frac", unary_samples(away_from_integers), method=True),
    OpInfo("exp", unary_samples(), method=True),
    OpInfo("exp2", unary_samples(), method=True),
    OpInfo("expm1", unary_samples(), method=True),
    OpInfo("log", unary_samples(positive), method=True),
    OpInfo("log2", unary_samples(positive), method=True),
    OpInfo("log10", unary_samples(positive), method=True),
    OpInfo("log1p", unary_samples(ABOVE_MINUS_ONE), method=True),
    OpInfo("sqrt", unary_samples(positive), method=True),
    OpInfo("rsqrt", unary_samples(positive), method=True),
    OpInfo("reciprocal", unary_samples(away_from_zero), method=True),
    OpInfo("square", unary_samples(), method=True),
    OpInfo("sin", unary_samples(), method=True),
    OpInfo("cos", unary_samples(), method=True),
    OpInfo("tan", unary_samples(uniform(-1.2, 1.2)), method=True),
    OpInfo("asin", unary_samples(OPEN_UNIT), method=True, aliases=("arcsin",)),
    OpInfo("acos", unary_samples(OPEN_UNIT), method=True, aliases=("arccos",)),
    OpInfo("atan", unary_samples(), method=True, aliases=("arctan",)),
    OpInfo("sinh", unary_samples(), method=True),
    OpInfo("cosh", unary_samples(), method=True),
    OpInfo("tanh", unary_samples(), method=True),
    OpInfo("asinh", unary_samples(), method=True, aliases=("arcsinh",)),
    OpInfo("acosh", unary_samples(ABOVE_ONE), method=True, aliases=("arccosh",)),
    OpInfo("atanh", unary_samples(OPEN_UNIT), method=True, aliases=("arctanh",)),
    OpInfo("sigmoid", unary_samples(), method=True),
    OpInfo("relu", unary_samples(away_from_ties), method=True),
    OpInfo("logit", with_samples(unary_samples(PROBABILITY), lambda rng: [
        Sample((PROBABILITY(rng, 3, 4), 0.2), name="eps_inside"),
        kink(np.array([0.05, 0.5, 0.97, 1.3, -0.2]), 0.1, name="eps_clamps"),
        kink(np.array([0.0, 0.5, 1.0, 1.3, -0.2]), name="outside_unit")]), method=True),
    OpInfo("erf", with_samples(unary_samples(uniform(-3, 3)),
                               wide([-30, -6, -2.5, -1.5, -1.49, -0.3, -1e-9, 0, 1e-300, 0.7, 1.5, 1.51, 4, 27])),
           method=True),
    OpInfo("erfc", with_samples(unary_samples(uniform(-3, 3)),
                                wide([-30, -6, -1.5, -0.3, 0, 1e-9, 0.7, 1.49, 1.5, 3, 6, 12, 26.5, 40])),
           method=True),
    OpInfo("erfinv", with_samples(unary_samples(OPEN_UNIT),
                                  wide([-1, -0.999999999, -0.9, -0.5, -0.49, -1e-10, 0, 1e-300, 0.3, 0.51, 0.99,
                                        1 - 1e-15, 1, 1.5])),
           method=True),
    OpInfo("lgamma", with_samples(unary_samples(away_from_integers), wide(GAMMA_WIDE)), method=True),
    OpInfo("digamma", with_samples(unary_samples(away_from_integers), wide(GAMMA_WIDE + [0.0, -0.0])), method=True),
    OpInfo("polygamma", lambda rng: [
        Sample((1, away_from_integers(rng, 3, 4)), name="n1"),
        Sample((2, away_from_integers(rng, 3)), name="n2"),
        Sample((0, positive(rng, 4)), name="n0"),
        Sample((3, away_from_integers(rng)), name="n3_0d"),
        Sample((1, noncontig(away_from_integers(rng, 4, 3))), name="noncontig"),
        kink(4, np.asarray(GAMMA_WIDE[:-2]), name="wide")]),
    OpInfo("nan_to_num", lambda rng: [
        Sample((rand(rng, 3, 4),), name="finite"),
        kink(np.array([np.nan, np.inf, -np.inf, 1.5, -2.0]), name="defaults"),
        kink(np.array([np.nan, np.inf, -np.inf, 1.5]), 0.5, 10.0, -10.0, name="values"),
        kink(np.array([[np.nan, 1.0], [np.inf, -3.0]]), posinf=7.0, name="posinf_kw")], method=True),
    OpInfo("clamp", lambda rng: [
        Sample((away_from_ties(rng, 3, 4),), {"min": -0.5, "max": 0.5}, "both"),
        Sample((away_from_ties(rng, 3, 4),), {"min": 0.0}, "min_only"),
        Sample((away_from_ties(rng, 3, 4), None, 0.5), name="max_only"),
        Sample((away_from_ties(rng, 3, 4), 0.5, -0.5), name="min_above_max"),
        kink(np.array([-0.5, 0.0, 0.5, 1.0]), -0.5, 0.5, name="at_bounds")], method=True, aliases=("clip",)),
    OpInfo("clamp", lambda rng: [
        Sample((rand(rng, 3, 4), uniform(-2.0, -1.0)(rng, 4), uniform(1.0, 2.0)(rng, 3, 1)), name="tensor_bounds"),
        Sample((rand(rng, 3, 4), uniform(-0.5, 0.5)(rng, 3, 4)), name="tensor_min"),
        Sample((rand(rng, 3, 4), None, uniform(-0.5, 0.5)(rng, 4)), name="tensor_max"),
        Sample((rand(rng, 3), C(np.array(-0.5)), 0.5), name="0d_tensor_and_number"),
        kink(np.array([1.0, 2.0, 3.0, 0.5]), np.array([1.0, 3.0, 2.0, 0.0]), np.array([2.0, 1.0, 2.0, 0.5]),
             name="ties_and_crossed_bounds")], method=True, aliases=("clamp_tensor",)),
    # in-place forms that torch records under their own node (AsinhBackward1, ...), on a clone of the leaf;
    # torch defines no derivative for the in-place inverse hyperbolics (their backward raises)
    OpInfo("asinh_", unary_samples(), call=lambda m, x: x.clone().asinh_(), aliases=("asinh_inplace",),
           differentiable=False),
    OpInfo("acosh_", unary_samples(ABOVE_ONE), call=lambda m, x: x.clone().arccosh_(), aliases=("acosh_inplace",),
           differentiable=False),
    OpInfo("atanh_", unary_samples(OPEN_UNIT), call=lambda m, x: x.clone().atanh_(), aliases=("atanh_inplace",),
           differentiable=False),
    OpInfo("polygamma_", unary_samples(positive), call=lambda m, x: x.clone().polygamma_(2),
           aliases=("polygamma_inplace",)),
    OpInfo("clamp_min", lambda rng: [
        Sample((away_from_ties(rng, 3, 4), 0.0), name="number"),
        Sample((rand(rng, 3, 4), uniform(-0.5, 0.5)(rng, 4)), name="tensor"),
        kink(np.array([-1.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0]), name="ties")], method=True),
    OpInfo("clamp_max", lambda rng: [
        Sample((away_from_ties(rng, 3, 4), 0.0), name="number"),
        Sample((rand(rng, 3, 4), uniform(-0.5, 0.5)(rng, 4)), name="tensor"),
        kink(np.array([-1.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0]), name="ties")], method=True),
]

# ============================================================================================
# B. Binary and ternary
# ============================================================================================


def ints(rng, *shape):
    return C(rng.integers(-5, 6, size=shape))


BINARY = [
    OpInfo("add", binary_samples(), method=True),
    OpInfo("add", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3)), {"alpha": 2.5}, "alpha"),
                               Sample((rand(rng, 2, 3), 2.0), {"alpha": -1.5}, "scalar_alpha")],
           aliases=("add_alpha",)),
    OpInfo("sub", binary_samples(), method=True, aliases=("subtract",)),
    OpInfo("sub", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3)), {"alpha": 2.5}, "alpha")],
           aliases=("sub_alpha",)),
    OpInfo("rsub", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3)), name="tensor"),
                                Sample((rand(rng, 2, 3), rand(rng, 3)), {"alpha": 3.0}, "tensor_alpha"),
                                Sample((rand(rng, 2, 3), 1.5), name="number"),
                                Sample((rand(rng, 2, 3), 1.5), {"alpha": 2.0}, "number_alpha")]),
    OpInfo("mul", binary_samples(), method=True, aliases=("multiply",)),
    OpInfo("div", binary_samples(other=away_from_zero), method=True, aliases=("divide", "true_divide")),
    OpInfo("div", lambda rng: [
        Sample((rand(rng, 3, 4) * 5, away_from_zero(rng, 4)), {"rounding_mode": "floor"}, "floor"),
        Sample((rand(rng, 3, 4) * 5, away_from_zero(rng, 3, 1)), {"rounding_mode": "trunc"}, "trunc"),
        Sample((rand(rng, 3, 4) * 5, 0.7), {"rounding_mode": "floor"}, "floor_number"),
        Sample((ints(rng, 3, 4), C(np.array([2, -3, 4, -1]))), {"rounding_mode": "trunc"}, "int_trunc"),
        Sample((ints(rng, 3, 4), C(np.array([2, -3, 4, -1]))), {"rounding_mode": "floor"}, "int_floor")],
        method=True, aliases=("div_rounding",)),
    OpInfo("floor_divide", lambda rng: [Sample((rand(rng, 3, 4) * 5, away_from_zero(rng, 4)), name="tensor"),
                                        Sample((rand(rng, 3, 4) * 5, 0.7), name="number"),
                                        Sample((ints(rng, 3), C(np.array([2, -3, 4]))), name="ints")],
           method=True, differentiable=False),
    OpInfo("pow", lambda rng: [Sample((positive(rng, 3, 4), 2), name="int_exponent"),
                               Sample((positive(rng, 3, 4), 0.5), name="float_exponent"),
                               Sample((positive(rng, 3, 4), 0), name="zero_exponent"),
                               Sample((positive(rng, 3, 4), positive(rng, 4)), name="tensor_exponent"),
                               Sample((positive(rng, 3), positive(rng, 2, 3)), name="broadcast")], method=True),
    OpInfo("pow", lambda rng: [Sample((2.0, rand(rng, 3, 4)), name="scalar_base"),
                               kink(0.0, np.array([-1.0, 0.0, 1.0]), name="zero_scalar_base")],
           call=lambda m, base, e: m.pow(base, e), aliases=("pow_scalar_base",)),
    OpInfo("atan2", binary_samples(other=away_from_zero, scalar=False), method=True, aliases=("arctan2",)),
    OpInfo("hypot", binary_samples(away_from_zero, away_from_zero, scalar=False), method=True),
    OpInfo("maximum", with_samples(binary_samples(scalar=False), lambda rng: [
        kink(ties(rng, 3, 4), ties(rng, 4), name="ties")]), method=True),
    OpInfo("minimum", with_samples(binary_samples(scalar=False), lambda rng: [
        kink(ties(rng, 3, 4), ties(rng, 4), name="ties")]), method=True),
    OpInfo("fmax", with_samples(binary_samples(scalar=False), lambda rng: [
        kink(ties(rng, 3, 4), ties(rng, 4), name="ties"),
        kink(np.array([np.nan, 1.0, np.nan, 2.0]), np.array([1.0, np.nan, np.nan, 3.0]), name="nan")]), method=True),
    OpInfo("fmin", with_samples(binary_samples(scalar=False), lambda rng: [
        kink(ties(rng, 3, 4), ties(rng, 4), name="ties"),
        kink(np.array([np.nan, 1.0, np.nan, 2.0]), np.array([1.0, np.nan, np.nan, 3.0]), name="nan")]), method=True),
    OpInfo("remainder", binary_samples(scaled(3), uniform(0.7, 1.3)), method=True),
    OpInfo("remainder", lambda rng: [Sample((2.5, uniform(0.7, 1.3)(rng, 3)), name="number_self")],
           differentiable=False, aliases=("remainder_scalar_self",)),
    OpInfo("fmod", binary_samples(scaled(3), uniform(0.7, 1.3)), method=True),
    OpInfo("copysign", with_samples(binary_samples(away_from_zero, away_from_zero), lambda rng: [
        kink(np.array([0.0, -0.0, 1.0, -2.0]), np.array([-1.0, 1.0, -0.0, 0.0]), name="zeros")]), method=True),
    # differentiable in `other` only: torch's derivative for the input raises (tests/test_tensor_surface.py)
    *(OpInfo(name, lambda rng: [
        Sample((C(np.array([0.5, 1.0, 2.5, 7.0, 30.0])), np.array([0.3, 2.0, 2.5, 9.0, 29.9])), name="across"),
        Sample((C(positive(rng, 3, 1) * 3), positive(rng, 4) * 3), name="broadcast"),
        Sample((C(np.array([0.0, 2.0, 2.0, np.inf])), C(np.array([1.0, 0.0, np.inf, 2.0]))), name="edges"),
    ], method=True, forward_ad=False) for name in ("igamma", "igammac")),
    OpInfo("xlogy", with_samples(binary_samples(rand, positive), lambda rng: [
        Sample((1.5, positive(rng, 3)), name="number_self"),
        kink(np.array([0.0, 0.0, 1.0, 2.0]), np.array([0.0, 2.0, np.nan, 0.5]), name="zero_self")]),
        method=True),
    OpInfo("logaddexp", binary_samples(scalar=False), method=True),
    OpInfo("logaddexp2", binary_samples(scalar=False), method=True),
    OpInfo("lerp", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), 0.3), name="number_weight"),
                                Sample((rand(rng, 3, 4), rand(rng, 4), 0.8), name="number_weight_high"),
                                Sample((rand(rng, 3, 4), rand(rng, 4), rand(rng, 3, 1)), name="tensor_weight"),
                                Sample((rand(rng), rand(rng, 2), positive(rng, 2)), name="0d_start")],
           method=True),
    OpInfo("addcmul", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), rand(rng, 4)), name="plain"),
                                   Sample((rand(rng, 4), rand(rng, 3, 1), rand(rng, 4)), {"value": 0.5},
                                          "value_broadcast")], method=True),
    OpInfo("addcdiv", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 3, 4), away_from_zero(rng, 4)), name="plain"),
                                   Sample((rand(rng, 4), rand(rng, 3, 1), away_from_zero(rng, 4)), {"value": -2.0},
                                          "value_broadcast")], method=True),
    OpInfo("where", lambda rng: [Sample((C(rng.random((3, 4)) > 0.5), rand(rng, 3, 4), rand(rng, 4)), name="bcast"),
                                 Sample((C(rng.random((3, 1)) > 0.5), rand(rng, 3, 4), 0.0), name="scalar")]),
]

# ============================================================================================
# Comparisons, logic, predicates: no gradient
# ============================================================================================


def bool_pair(rng):
    return [Sample((C(rng.random((3, 4)) > 0.5), C(rng.random((4,)) > 0.5)), name="bool"),
            Sample((C(rng.integers(-2, 3, size=(3, 4))), C(rng.integers(-2, 3, size=(4,)))), name="int")]


def with_specials(rng):
    return [Sample((np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0]),), name="specials"),
            Sample((rand(rng, 2, 3),), name="finite")]


def close_pairs(rng):
    a = rand(rng, 3, 4)
    b = a + np.array([0.0, 1e-9, 1e-3, 1.0])
    return [Sample((a, b), name="defaults"), Sample((a, b), {"rtol": 0.0, "atol": 1e-6}, "tolerances"),
            Sample((np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), {"equal_nan": True}, "equal_nan")]


def constant(make):
    """The samples of `make` with every array a constant (no input requires grad)."""
    def samples(rng):
        return [Sample(tuple(C(a) if isinstance(a, np.ndarray) else a for a in s.args), s.kwargs, s.name)
                for s in make(rng)]
    return samples


def comparison(name, **kwargs):
    return OpInfo(name, with_samples(binary_samples(), lambda rng: [kink(ties(rng, 3), ties(rng, 3), name="ties")]),
                  method=True, differentiable=False, **kwargs)


LOGIC = [
    comparison("eq"), comparison("ne", aliases=("not_equal",)), comparison("lt", aliases=("less",)),
    comparison("le", aliases=("less_equal",)), comparison("gt", aliases=("greater",)),
    comparison("ge", aliases=("greater_equal",)),
    OpInfo("logical_and", bool_pair, method=True, differentiable=False),
    OpInfo("logical_or", bool_pair, method=True, differentiable=False),
    OpInfo("logical_xor", bool_pair, method=True, differentiable=False),
    OpInfo("logical_not", lambda rng: bool_pair(rng)[:1], call=lambda m, a, b: m.logical_not(a),
           differentiable=False),
    OpInfo("bitwise_and", bool_pair, method=True, differentiable=False),
    OpInfo("bitwise_or", bool_pair, method=True, differentiable=False),
    OpInfo("bitwise_xor", bool_pair, method=True, differentiable=False),
    OpInfo("bitwise_not", bool_pair, call=lambda m, a, b: m.bitwise_not(a), differentiable=False),
    OpInfo("isnan", with_specials, method=True, differentiable=False),
    OpInfo("isinf", with_specials, method=True, differentiable=False),
    OpInfo("isfinite", with_specials, method=True, differentiable=False),
    OpInfo("signbit", lambda rng: with_specials(rng) + [Sample((C(np.array([0.0, -0.0, 1.0])),), name="signed_zeros")],
           method=True, differentiable=False),
    OpInfo("isclose", close_pairs, method=True, differentiable=False),
    # constants only (no input requires grad): a Python bool cannot be vmapped, so test_vmap has nothing to do
    OpInfo("allclose", constant(close_pairs), call=lambda m, *a, **k: m.tensor(m.allclose(*a, **k)),
           differentiable=False),
    OpInfo("equal", constant(lambda rng: [Sample((np.array([1.0, 2.0]), np.array([1.0, 2.0])), name="same"),
                                          Sample((np.array([1.0, 2.0]), np.array([1.0, 2.5])), name="different"),
                                          Sample((np.array([1.0, 2.0]), np.array([[1.0, 2.0]])), name="shapes")]),
           call=lambda m, a, b: m.tensor(m.equal(a, b)), differentiable=False),
]

OPS = UNARY + BINARY + LOGIC

OPS += [
    OpInfo("deg2rad", unary_samples(), method=True),
    OpInfo("rad2deg", unary_samples(), method=True),
    OpInfo("float_power", lambda rng: [Sample((positive(rng, 3, 4), 2.5), name="number"),
                                       Sample((positive(rng, 3), positive(rng, 2, 3)), name="tensor")]),
]
