"""torch.distributions against torch: for every distribution, on the same float64 parameters, log_prob,
entropy, mean, mode, variance, stddev, cdf and icdf (or torch's NotImplementedError where it has none), their
gradients with respect to every parameter, KL divergences and their gradients, transforms, constraints,
expand, and torch's ValueError texts from validation. Samples come from retrograd's generator, so they are
checked by shape, dtype, support and moments, and reparameterised samples by their gradients given the noise
(the gradient of a Gamma draw against the exact implicit gradient from the incomplete gamma function)."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)
LOC = np.array([0.3, -1.2, 2.0])
SCALE = np.array([0.5, 1.5, 2.5])
POSITIVE = np.array([0.7, 2.0, 4.5])
PROBS = np.array([0.2, 0.55, 0.9])
SIMPLEX = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
UNIT_VALUES = np.array([0.15, 0.5, 0.8])
COUNTS = np.array([0.0, 2.0, 5.0])
COV = np.array([[2.0, 0.3, -0.2], [0.3, 1.0, 0.4], [-0.2, 0.4, 1.5]])
TRIL = np.linalg.cholesky(COV)
CORRELATION = COV / np.sqrt(np.outer(np.diag(COV), np.diag(COV)))
PD_VALUE = np.array([[1.5, -0.4, 0.3], [-0.4, 2.5, 0.6], [0.3, 0.6, 0.9]])


def _mvn(kind):
    return lambda D, p: D.MultivariateNormal(p["loc"], **{kind: p["m"]})


# name: (builder(distributions module, parameter tensors), parameters, value for log_prob/cdf)
CASES = {
    "Normal": (lambda D, p: D.Normal(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "Normal-scalar": (lambda D, p: D.Normal(0.5, 2.0), {}, np.array(1.3)),
    "Laplace": (lambda D, p: D.Laplace(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "Cauchy": (lambda D, p: D.Cauchy(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "Gumbel": (lambda D, p: D.Gumbel(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "LogNormal": (lambda D, p: D.LogNormal(p["loc"], p["scale"]), {"loc": LOC, "scale": SCALE},
                  np.array([0.1, 0.4, 5.0])),
    "StudentT": (lambda D, p: D.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": np.array([0.8, 1.5, 5.0]), "loc": LOC, "scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "Uniform": (lambda D, p: D.Uniform(p["low"], p["high"]), {"low": LOC, "high": LOC + SCALE},
                LOC + 0.3 * SCALE),
    "Exponential": (lambda D, p: D.Exponential(p["rate"]), {"rate": POSITIVE}, np.array([0.1, 0.4, 5.0])),
    "Gamma": (lambda D, p: D.Gamma(p["concentration"], p["rate"]), {"concentration": POSITIVE, "rate": SCALE},
              np.array([0.1, 0.4, 5.0])),
    "Chi2": (lambda D, p: D.Chi2(p["df"]), {"df": POSITIVE}, np.array([0.1, 0.4, 5.0])),
    "Beta": (lambda D, p: D.Beta(p["c1"], p["c0"]), {"c1": POSITIVE, "c0": SCALE}, UNIT_VALUES),
    "Dirichlet": (lambda D, p: D.Dirichlet(p["concentration"]), {"concentration": np.array([[0.5, 2.0, 3.0],
                                                                                           [0.7, 0.9, 0.4]])},
                  SIMPLEX),
    "Bernoulli-probs": (lambda D, p: D.Bernoulli(probs=p["probs"]), {"probs": PROBS}, np.array([1.0, 0.0, 1.0])),
    "Bernoulli-logits": (lambda D, p: D.Bernoulli(logits=p["logits"]), {"logits": LOC}, np.array([1.0, 0.0, 1.0])),
    "Binomial": (lambda D, p: D.Binomial(torch_or_ours_counts(D), probs=p["probs"]), {"probs": PROBS},
                 np.array([0.0, 1.0, 4.0])),
    "Binomial-logits": (lambda D, p: D.Binomial(5, logits=p["logits"]), {"logits": LOC}, np.array([0.0, 1.0, 4.0])),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(probs=p["probs"]),
                            {"probs": np.array([0.2, 0.4995, 0.9])}, UNIT_VALUES),
    "ContinuousBernoulli-logits": (lambda D, p: D.ContinuousBernoulli(logits=p["logits"]), {"logits": LOC},
                                   UNIT_VALUES),
    "FisherSnedecor": (lambda D, p: D.FisherSnedecor(p["df1"], p["df2"]),
                       {"df1": np.array([1.5, 3.0, 6.0]), "df2": np.array([1.5, 3.0, 8.0])}, np.array([0.1, 0.4, 5.0])),
    "LogisticNormal": (lambda D, p: D.LogisticNormal(p["loc"], p["scale"]), {"loc": LOC[:2], "scale": SCALE[:2]},
                       np.array([0.2, 0.5, 0.3])),
    "Kumaraswamy": (lambda D, p: D.Kumaraswamy(p["c1"], p["c0"]), {"c1": np.array([0.7, 2.0, 4.5]), "c0": SCALE},
                    UNIT_VALUES),
    "Geometric": (lambda D, p: D.Geometric(probs=p["probs"]), {"probs": PROBS}, np.array([0.0, 3.0, 1.0])),
    "Poisson": (lambda D, p: D.Poisson(p["rate"]), {"rate": POSITIVE}, np.array([0.0, 3.0, 6.0])),
    "Categorical-probs": (lambda D, p: D.Categorical(probs=p["probs"]), {"probs": SIMPLEX * 2}, np.array([2, 0])),
    "Categorical-logits": (lambda D, p: D.Categorical(logits=p["logits"]), {"logits": np.log(SIMPLEX) + 1},
                           np.array([[1, 0], [2, 2]])),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(logits=p["logits"]), {"logits": np.log(SIMPLEX)},
                          np.eye(3)[[1, 2]]),
    "MVN-covariance": (_mvn("covariance_matrix"), {"loc": LOC, "m": COV}, np.array([[0.5, 0.1, -1.0],
                                                                                   [1.0, 2.0, 0.0]])),
    "MVN-scale_tril": (_mvn("scale_tril"), {"loc": LOC, "m": TRIL}, np.array([0.5, 0.1, -1.0])),
    "MVN-precision": (_mvn("precision_matrix"), {"loc": LOC, "m": np.linalg.inv(COV)}, np.array([0.5, 0.1, -1.0])),
    "MVN-batched": (lambda D, p: D.MultivariateNormal(p["loc"], scale_tril=p["m"]),
                    {"loc": np.stack([LOC, -LOC]), "m": TRIL}, np.array([0.5, 0.1, -1.0])),
    "LowRank": (lambda D, p: D.LowRankMultivariateNormal(p["loc"], p["w"], p["d"]),
                {"loc": np.stack([LOC, -LOC]), "w": np.array([[0.5, -0.2], [0.3, 0.8], [-0.4, 0.1]]), "d": POSITIVE},
                np.array([[0.5, 0.1, -1.0], [1.0, 2.0, 0.0]])),
    "Independent": (lambda D, p: D.Independent(D.Normal(p["loc"], p["scale"]), 1), {"loc": LOC, "scale": SCALE},
                    np.array([0.1, 0.4, 5.0])),
    "Mixture": (lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["w"]), D.Normal(p["loc"], p["scale"])),
                {"w": np.array([0.1, -0.4, 0.8]), "loc": LOC, "scale": SCALE}, np.array([0.2, -1.0])),
    "Mixture-MVN": (lambda D, p: D.MixtureSameFamily(D.Categorical(logits=p["w"]), D.Independent(
        D.Normal(p["loc"], p["scale"]), 1)), {"w": np.array([0.1, -0.4]), "loc": np.stack([LOC, LOC * 2]),
                                              "scale": np.stack([SCALE, POSITIVE])}, np.array([0.2, -1.0, 0.5])),
    "HalfNormal": (lambda D, p: D.HalfNormal(p["scale"]), {"scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "HalfCauchy": (lambda D, p: D.HalfCauchy(p["scale"]), {"scale": SCALE}, np.array([0.1, 0.4, 5.0])),
    "Pareto": (lambda D, p: D.Pareto(p["scale"], p["alpha"]), {"scale": SCALE, "alpha": np.array([0.8, 1.5, 3.0])},
               SCALE + np.array([0.1, 0.4, 5.0])),
    "Weibull": (lambda D, p: D.Weibull(p["scale"], p["concentration"]), {"scale": SCALE, "concentration": POSITIVE},
                np.array([0.1, 0.4, 5.0])),
    "InverseGamma": (lambda D, p: D.InverseGamma(p["concentration"], p["rate"]),
                     {"concentration": np.array([0.7, 1.5, 4.5]), "rate": SCALE}, np.array([0.1, 0.4, 5.0])),
    "NegativeBinomial": (lambda D, p: D.NegativeBinomial(p["total_count"], probs=p["probs"]),
                         {"total_count": POSITIVE, "probs": PROBS}, np.array([0.0, 3.0, 6.0])),
    "NegativeBinomial-logits": (lambda D, p: D.NegativeBinomial(3.0, logits=p["logits"]), {"logits": LOC},
                                np.array([0.0, 3.0, 6.0])),
    "Multinomial": (lambda D, p: D.Multinomial(4, logits=p["logits"]), {"logits": np.log(SIMPLEX)},
                    np.array([[1.0, 3.0, 0.0], [2.0, 1.0, 1.0]])),
    "RelaxedBernoulli": (lambda D, p: D.RelaxedBernoulli(p["t"], probs=p["probs"]),
                         {"t": np.array(0.7), "probs": PROBS}, UNIT_VALUES),
    "RelaxedOneHotCategorical": (lambda D, p: D.RelaxedOneHotCategorical(p["t"], logits=p["logits"]),
                                 {"t": np.array(0.7), "logits": np.log(SIMPLEX)}, SIMPLEX),
    "Transformed-affine-tanh": (lambda D, p: D.TransformedDistribution(D.Normal(p["loc"], p["scale"]), [
        D.AffineTransform(0.5, p["a"]), D.TanhTransform(cache_size=1)]), {"loc": LOC, "scale": SCALE,
                                                                          "a": np.array([0.5, -1.0, 2.0])},
                                np.array([0.1, -0.4, 0.95])),
    "Transformed-sigmoid": (lambda D, p: D.TransformedDistribution(D.Normal(p["loc"], p["scale"]),
                                                                   D.ComposeTransform([D.SigmoidTransform()])),
                            {"loc": LOC, "scale": SCALE}, UNIT_VALUES),
    "GeneralizedPareto": (lambda D, p: D.GeneralizedPareto(p["loc"], p["scale"], p["concentration"]),
                          {"loc": LOC, "scale": SCALE, "concentration": np.array([0.6, -0.2, 0.0])},
                          np.array([0.5, -0.8, 7.0])),
    "GeneralizedPareto-bounded": (lambda D, p: D.GeneralizedPareto(p["loc"], p["scale"], p["concentration"]),
                                  {"loc": LOC, "scale": SCALE, "concentration": np.array([-0.4, -0.7, 0.3])},
                                  np.array([0.5, -0.8, 7.0])),
    "GeneralizedPareto-scalar": (lambda D, p: D.GeneralizedPareto(0.5, 2.0, -0.3), {}, np.array(1.3)),
    "VonMises": (lambda D, p: D.VonMises(p["loc"], p["concentration"]),
                 {"loc": LOC, "concentration": np.array([0.5, 3.0, 10.0])}, np.array([0.1, 0.4, 5.0])),
    "LKJCholesky": (lambda D, p: D.LKJCholesky(3, p["concentration"]), {"concentration": np.array([0.5, 2.0])},
                    np.linalg.cholesky(CORRELATION)),
    "LKJCholesky-dim2": (lambda D, p: D.LKJCholesky(2, p["concentration"]), {"concentration": np.array(1.5)},
                         np.array([[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [-0.28, 0.96]]])),
    "Wishart-covariance": (lambda D, p: D.Wishart(p["df"], covariance_matrix=p["m"]),
                           {"df": np.array([3.5, 6.0]), "m": COV}, PD_VALUE),
    "Wishart-scale_tril": (lambda D, p: D.Wishart(p["df"], scale_tril=p["m"]), {"df": np.array(4.0), "m": TRIL},
                           np.stack([PD_VALUE, COV])),
    "Wishart-symmetrised": (lambda D, p: D.Wishart(p["df"], covariance_matrix=(p["m"] + p["m"].mT) / 2),
                            {"df": np.array([3.5, 6.0]), "m": COV}, PD_VALUE),
    "Wishart-precision": (lambda D, p: D.Wishart(5.0, precision_matrix=p["m"]), {"m": np.linalg.inv(COV)}, PD_VALUE),
}


def torch_or_ours_counts(D):
    """Binomial total counts as a tensor of the library of `D` (some counts differ per element)."""
    lib = torch if D is torch.distributions else retrograd
    return lib.tensor(COUNTS + 3)


# torch 2.13's GeneralizedPareto.log_prob and cdf compare the concentration with torch.tensor(0.0) by isclose, which
# raises "Double did not match Float" for float64 parameters unless the default dtype is float64 too.
NEEDS_FLOAT64_DEFAULT = ("GeneralizedPareto",)


@pytest.fixture(autouse=True)
def _float64_default_where_torch_needs_it(request):
    """Run the cases named after NEEDS_FLOAT64_DEFAULT with float64 as both libraries' default dtype."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or not str(callspec.params.get("name")).startswith(NEEDS_FLOAT64_DEFAULT):
        yield
        return
    torch.set_default_dtype(torch.float64)
    retrograd.set_default_dtype(retrograd.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(torch.float32)
        retrograd.set_default_dtype(retrograd.float32)


QUANTITIES = ["log_prob", "entropy", "mean", "mode", "variance", "stddev", "cdf", "icdf", "perplexity"]


def build(lib, name):
    builder, params, value = CASES[name]
    leaves = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    return builder(lib.distributions, leaves), leaves, value


def quantity(lib, dist, what, value):
    """A quantity of `dist`, or the exception type it raises."""
    try:
        if what in ("log_prob", "cdf"):
            return getattr(dist, what)(lib.tensor(value, dtype=lib.float64))
        if what == "icdf":
            return dist.icdf(lib.tensor(np.broadcast_to([0.1, 0.6, 0.95][:dist.batch_shape[-1]] if dist.batch_shape
                                                        else 0.3, dist.batch_shape).copy(), dtype=lib.float64))
        if what in ("entropy", "perplexity"):
            return getattr(dist, what)()
        return getattr(dist, what)
    except NotImplementedError:
        return NotImplementedError


def gradients(lib, out, leaves):
    """Gradients of a weighted sum of the finite entries of `out` with respect to each leaf (None if unused), or
    the type of the exception backward raises."""
    if not out.requires_grad:
        return None
    weights = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)) + 1.5, dtype=out.dtype)
    finite = lib.tensor(np.isfinite(out.detach().numpy()))
    total = (out * weights).where(finite, 0).sum()
    try:
        return lib.autograd.grad(total, list(leaves.values()), allow_unused=True)
    except (NotImplementedError, RuntimeError) as error:
        return type(error)


def assert_same_gradients(ours, theirs):
    """Gradients (or the exception type) equal to torch's; a gradient torch leaves None is absent or zero."""
    if theirs is None or isinstance(theirs, type):
        assert ours is theirs or ours is None or (not isinstance(ours, type) and all(
            g is None or not g.numpy().any() for g in ours))
        return
    for mine, reference in zip(ours, theirs):
        if reference is None:
            assert mine is None or not mine.numpy().any()
        else:
            np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("what", QUANTITIES)
@pytest.mark.parametrize("name", list(CASES))
def test_quantities_match_torch(name, what):
    ours, our_leaves, value = build(retrograd, name)
    theirs, their_leaves, _ = build(torch, name)
    expected = quantity(torch, theirs, what, value)
    got = quantity(retrograd, ours, what, value)
    if expected is NotImplementedError:
        assert got is NotImplementedError
        return
    assert got is not NotImplementedError, f"{name}.{what} is missing"
    assert str(got.dtype) == str(expected.dtype) and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_same_gradients(gradients(retrograd, got, our_leaves), gradients(torch, expected, their_leaves))


@pytest.mark.parametrize("name", list(CASES))
def test_shapes_flags_and_expand(name):
    ours, _, _ = build(retrograd, name)
    theirs, _, _ = build(torch, name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    assert repr(ours.support) == repr(theirs.support)
    assert list(ours.arg_constraints) == list(theirs.arg_constraints)
    new_batch = (4,) + tuple(ours.batch_shape)
    big_ours, big_theirs = ours.expand(new_batch), theirs.expand(new_batch)
    assert type(big_ours).__name__ == type(big_theirs).__name__ and big_ours.batch_shape == big_theirs.batch_shape
    assert big_ours.event_shape == big_theirs.event_shape
    value = ours.sample().numpy()
    np.testing.assert_allclose(big_ours.log_prob(retrograd.tensor(value)).detach().numpy(),
                               big_theirs.log_prob(torch.tensor(value)).detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_samples_have_the_shape_dtype_and_support(name):
    retrograd.manual_seed(0)
    ours, _, _ = build(retrograd, name)
    theirs, _, _ = build(torch, name)
    sample = ours.sample((5, 2))
    reference = theirs.sample((5, 2))
    assert tuple(sample.shape) == tuple(reference.shape) and str(sample.dtype) == str(reference.dtype)
    assert not sample.requires_grad
    assert bool(ours.support.check(sample).all())
    assert np.isfinite(ours.log_prob(sample).detach().numpy()).all()
    if ours.has_rsample:
        drawn = ours.rsample((3,))
        assert tuple(drawn.shape) == (3, *ours.batch_shape, *ours.event_shape)
        assert drawn.requires_grad == bool(CASES[name][1])


MOMENT_CASES = ["Normal", "Laplace", "Gumbel", "LogNormal", "Uniform", "Exponential", "Gamma", "Chi2", "Beta",
                "HalfNormal", "Weibull", "NegativeBinomial", "Multinomial", "InverseGamma", "Dirichlet",
                "Bernoulli-probs", "Binomial", "Geometric", "Poisson", "OneHotCategorical", "MVN-covariance", "Mixture",
                "StudentT", "LowRank", "ContinuousBernoulli", "FisherSnedecor", "Kumaraswamy", "GeneralizedPareto",
                "Wishart-covariance"]


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_sample_moments(name):
    """The mean of 20000 draws lies within 5 standard errors of the distribution's mean."""
    retrograd.manual_seed(1)
    dist, _, _ = build(retrograd, name)
    samples = dist.sample((20000,)).numpy()
    mean, variance = dist.mean.detach().numpy(), dist.variance.detach().numpy()
    finite = np.isfinite(variance)
    error = np.abs(samples.mean(0) - mean)[finite]
    assert (error <= 5 * np.sqrt(variance[finite] / len(samples)) + 1e-12).all(), (error, variance)
    if name in ("Normal", "Gamma", "Beta", "Poisson", "Exponential", "Wishart-covariance"):
        np.testing.assert_allclose(samples.var(0), variance, rtol=0.08)


def test_categorical_sample_frequencies():
    retrograd.manual_seed(2)
    probs = np.array([0.1, 0.6, 0.3])
    counts = np.bincount(retrograd.distributions.Categorical(retrograd.tensor(probs)).sample((30000,)).numpy(),
                         minlength=3)
    assert (np.abs(counts / 30000 - probs) < 5 * np.sqrt(probs * (1 - probs) / 30000)).all()


def test_rsample_is_reparameterised_given_the_noise():
    """Normal, MVN and Laplace samples are loc + scale * noise: with the noise read back from the generator,
    the sample and its gradients match torch's for that noise."""
    loc = retrograd.tensor(LOC, requires_grad=True)
    scale = retrograd.tensor(SCALE, requires_grad=True)
    retrograd.manual_seed(3)
    sample = retrograd.distributions.Normal(loc, scale).rsample((4,))
    retrograd.manual_seed(3)
    noise = retrograd.empty((4, 3), dtype=retrograd.float64).normal_().numpy()
    np.testing.assert_allclose(sample.detach().numpy(), LOC + noise * SCALE, rtol=1e-14)
    weights = np.cos(np.arange(12)).reshape(4, 3)
    (sample * retrograd.tensor(weights)).sum().backward()
    tl, ts = torch.tensor(LOC, requires_grad=True), torch.tensor(SCALE, requires_grad=True)
    (((tl + torch.tensor(noise) * ts)) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), tl.grad.numpy())
    np.testing.assert_allclose(scale.grad.numpy(), ts.grad.numpy())

    tril = retrograd.tensor(TRIL, requires_grad=True)
    retrograd.manual_seed(4)
    sample = retrograd.distributions.MultivariateNormal(loc, scale_tril=tril).rsample((2,))
    retrograd.manual_seed(4)
    noise = retrograd.empty((2, 3), dtype=retrograd.float64).normal_().numpy()
    np.testing.assert_allclose(sample.detach().numpy(), LOC + noise @ TRIL.T, rtol=1e-12)
    (sample ** 2).sum().backward()
    ttril = torch.tensor(TRIL, requires_grad=True)
    tsample = torch.tensor(LOC) + torch.tensor(noise) @ ttril.mT
    (tsample ** 2).sum().backward()
    np.testing.assert_allclose(tril.grad.numpy(), ttril.grad.numpy(), rtol=1e-12)


GAMMA_GRID = [(0.05, 0.01), (0.5, 0.3), (0.5, 1.5), (2.0, 0.5), (2.0, 4.0), (5.0, 3.0), (10.0, 9.5), (10.0, 5.0),
              (10.0, 20.0), (50.0, 49.0), (50.0, 70.0), (1000.0, 1010.0)]


def test_standard_gamma_grad_matches_torch_and_the_exact_implicit_gradient():
    alpha, x = (np.array(v) for v in zip(*GAMMA_GRID))
    ours = retrograd._standard_gamma_grad(retrograd.tensor(alpha), retrograd.tensor(x)).numpy()
    np.testing.assert_allclose(ours, torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy(),
                               rtol=1e-12)
    # exact: -(dP/dalpha) / pdf, with dP/dalpha by central differences of the regularised incomplete gamma
    h = 1e-6 * alpha
    dp = (torch.special.gammainc(torch.tensor(alpha + h), torch.tensor(x))
          - torch.special.gammainc(torch.tensor(alpha - h), torch.tensor(x))).numpy() / (2 * h)
    pdf = np.exp((alpha - 1) * np.log(x) - x - np.array([math.lgamma(a) for a in alpha]))
    np.testing.assert_allclose(ours, -dp / pdf, rtol=5e-4)


def test_gamma_family_rsample_gradients():
    """Gamma draws carry the implicit gradient: d x / d concentration = _standard_gamma_grad(alpha, x * rate) /
    rate and d x / d rate = -x / rate."""
    conc = retrograd.tensor(POSITIVE, requires_grad=True)
    rate = retrograd.tensor(SCALE, requires_grad=True)
    retrograd.manual_seed(5)
    draws = retrograd.distributions.Gamma(conc, rate).rsample()
    assert type(draws.grad_fn).__name__ == "DivBackward0"
    draws.sum().backward()
    x = draws.detach().numpy()
    expected = torch._standard_gamma_grad(torch.tensor(POSITIVE), torch.tensor(x * SCALE)).numpy() / SCALE
    np.testing.assert_allclose(conc.grad.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(rate.grad.numpy(), -x / SCALE, rtol=1e-12)


def _beta_grad_grid(dtype):
    """(x, alpha, total) reaching each of _dirichlet_grad's four approximations: x near 0 or 1, alpha and beta
    both large, and the rational fit between; x drawn from the Beta marginal, as a Dirichlet draw's coordinate."""
    grid = np.random.default_rng(1)
    total = np.exp(grid.uniform(math.log(0.05), math.log(200.0), 4000))
    alpha = total * grid.uniform(0.001, 0.999, 4000)
    x = np.clip(grid.beta(alpha, total - alpha), 1e-6, 1 - 1e-6)
    return tuple(v.astype(dtype) for v in (x, alpha, total))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dirichlet_grad_matches_torch(dtype):
    """torch's four approximations, their branches and their rounding: float32 evaluates the series in float32 with
    torch's float32 digammas, so it agrees with torch's to an ulp or two, not only to the approximations' accuracy."""
    x, alpha, total = _beta_grad_grid(dtype)
    boundary = total * x * (1 - x)
    assert ((x <= 0.5) & (boundary < 2.5)).sum() > 500 and ((x >= 0.5) & (boundary < 0.75)).sum() > 500
    assert ((alpha > 6) & (total - alpha > 6) & (boundary >= 2.5)).sum() > 500
    ours = retrograd._dirichlet_grad(*(retrograd.from_numpy(v) for v in (x, alpha, total)))
    theirs = torch._dirichlet_grad(*(torch.from_numpy(v) for v in (x, alpha, total)))
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-11 if dtype == np.float64 else 2e-6)
    # broadcasting, and the digamma's reflection and poles where alpha is not positive
    odd = [np.array(v, dtype=dtype) for v in ([0.3, 0.0, 1.0, 0.5, 0.2], [-0.5, 1.0, 2.0, 0.0, 3.0], 2.0)]
    np.testing.assert_allclose(retrograd._dirichlet_grad(*map(retrograd.from_numpy, odd)).numpy(),
                               torch._dirichlet_grad(*(torch.from_numpy(v).expand(5) for v in odd)).numpy(),
                               rtol=2e-6)


def test_dirichlet_grad_errors_as_torch():
    for lib in (retrograd, torch):
        x = lib.tensor([0.2, 0.5], requires_grad=True)
        grad = lib._dirichlet_grad(x, lib.tensor([1.0, 2.0]), lib.tensor([3.0, 3.0]))
        assert type(grad.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::_dirichlet_grad is not implemented"):
            grad.sum().backward()
        with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
            lib._dirichlet_grad(x, lib.tensor([1.0, 2.0], dtype=lib.float64), lib.tensor([3.0, 3.0]))
        with pytest.raises(NotImplementedError, match="^\"_dirichlet_grad_cpu\" not implemented for 'Long'$"):
            lib._dirichlet_grad(*(lib.tensor([1, 2]),) * 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_and_beta_rsample_are_torchs(dtype):
    """From the same seed, Dirichlet's and Beta's reparameterised draws and their gradients are torch's: torch's
    _Dirichlet function, whose backward differentiates each coordinate through its Beta marginal by _dirichlet_grad."""
    results = []
    for lib in (retrograd, torch):
        lib.manual_seed(3)
        concentration = lib.tensor([[0.4, 1.5, 7.0], [9.0, 8.0, 0.9]], dtype=getattr(lib, dtype), requires_grad=True)
        c0 = lib.tensor([2.0, 0.3, 12.0], dtype=getattr(lib, dtype), requires_grad=True)
        dirichlet = lib.distributions.Dirichlet(concentration).rsample((4,))
        beta = lib.distributions.Beta(concentration[0], c0).rsample((5,))
        weights = lib.arange(1.0, 1.0 + dirichlet.numel(), dtype=dirichlet.dtype).reshape(dirichlet.shape)
        ((dirichlet * weights).sum() + beta.square().sum()).backward()
        results.append((dirichlet, beta, concentration.grad, c0.grad))
        assert type(dirichlet.grad_fn).__name__ == "_DirichletBackward"
        assert type(beta.grad_fn.next_functions[0][0]).__name__ == "_DirichletBackward"
    for ours, theirs in zip(*results):
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5 if dtype == "float32"
                                   else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_and_beta_samples_clamped_as_torch(dtype):
    """Small concentrations: a normalised draw is kept within [tiny, the float below 1], as torch's, so the
    bits match and log_prob stays finite."""
    results = []
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        dirichlet = lib.distributions.Dirichlet(lib.tensor([0.01, 0.02, 0.05], dtype=getattr(lib, dtype)))
        draws = dirichlet.sample((6,))
        beta = lib.distributions.Beta(*lib.tensor([0.01, 0.001], dtype=getattr(lib, dtype))).sample((6,))
        results.append([draws.numpy(), dirichlet.log_prob(draws).numpy(), beta.numpy()])
    for ours, theirs in zip(*results):
        assert np.isfinite(ours).all()
        np.testing.assert_array_equal(ours, theirs)


def test_standard_gamma_rows():
    alpha = retrograd.tensor([0.5, 2.0, 10.0], dtype=retrograd.float64, requires_grad=True)
    out = retrograd._standard_gamma(alpha)
    assert type(out.grad_fn).__name__ == "StandardGammaBackward0" and (out.detach().numpy() > 0).all()
    grad = retrograd._standard_gamma_grad(alpha, out.detach())
    assert type(grad.grad_fn).__name__ == "StandardGammaGradBackward0"
    with pytest.raises(NotImplementedError, match="the derivative for '_standard_gamma_grad' is not implemented."):
        grad.sum().backward()
    with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Long'"):
        retrograd._standard_gamma(retrograd.tensor([1, 2]))
    counts = retrograd.binomial(retrograd.tensor([5.0, 7.0]), retrograd.tensor([0.0, 1.0]))
    assert counts.tolist() == [0.0, 7.0]


KL_PAIRS = [
    ("Normal", "Normal"), ("Bernoulli-probs", "Bernoulli-logits"), ("Categorical-probs", "Categorical-logits"),
    ("OneHotCategorical", "OneHotCategorical"), ("MVN-covariance", "MVN-precision"),
    ("MVN-scale_tril", "MVN-batched"), ("Independent", "Independent"), ("Beta", "Beta"), ("Gamma", "Gamma"),
    ("Dirichlet", "Dirichlet"), ("Uniform", "Uniform"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
    ("Poisson", "Poisson"), ("Geometric", "Geometric"), ("Gumbel", "Gumbel"), ("Cauchy", "Cauchy"),
    ("LogNormal", "LogNormal"), ("Binomial", "Binomial"), ("Chi2", "Gamma"),
    ("Normal", "Laplace"), ("Normal", "Gumbel"), ("Normal", "Uniform"), ("Uniform", "Normal"),
    ("Uniform", "Gumbel"), ("Uniform", "Exponential"), ("Uniform", "Gamma"), ("Exponential", "Gamma"),
    ("Exponential", "Normal"), ("Exponential", "Gumbel"), ("Gamma", "Exponential"), ("Gamma", "Normal"),
    ("Gamma", "Gumbel"), ("Beta", "Normal"), ("Beta", "Gamma"), ("Beta", "Exponential"), ("Laplace", "Normal"),
    ("Gumbel", "Normal"), ("Bernoulli-probs", "Poisson"), ("Poisson", "Bernoulli-probs"), ("Exponential", "Beta"),
    ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"), ("Pareto", "Exponential"), ("Pareto", "Gamma"),
    ("Pareto", "Normal"), ("Uniform", "Pareto"), ("Normal", "Pareto"), ("Pareto", "Uniform"),
    ("LowRank", "LowRank"), ("MVN-covariance", "LowRank"), ("LowRank", "MVN-batched"),
    ("ContinuousBernoulli", "ContinuousBernoulli-logits"), ("Beta", "ContinuousBernoulli"),
    ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"),
    ("Uniform", "ContinuousBernoulli"), ("Normal", "ContinuousBernoulli"), ("Wishart-covariance", "Wishart-precision"),
    ("Wishart-scale_tril", "Wishart-covariance"),
]


def _shifted(lib, name, shift):
    """The case's distribution with its parameters moved (probabilities raised to the power `shift`, the MVN
    matrix kept, others scaled by it), so that p and q differ."""
    builder, params, _ = CASES[name]
    moved = {"probs": lambda v: v ** shift, "m": lambda v: v}
    leaves = {k: lib.tensor(moved.get(k, lambda v: v * shift)(v), dtype=lib.float64, requires_grad=True)
              for k, v in params.items()}
    return builder(lib.distributions, leaves), leaves


@pytest.mark.parametrize("p_name,q_name", KL_PAIRS, ids=[f"{p}|{q}" for p, q in KL_PAIRS])
def test_kl_divergence_matches_torch(p_name, q_name):
    results = []
    for lib in (retrograd, torch):
        p, p_leaves = _shifted(lib, p_name, 1.0)
        q, q_leaves = _shifted(lib, q_name, 1.3)
        kl = lib.distributions.kl_divergence(p, q)
        results.append((kl, gradients(lib, kl, {**{"p" + k: v for k, v in p_leaves.items()},
                                                **{"q" + k: v for k, v in q_leaves.items()}})))
    (ours, our_grads), (theirs, their_grads) = results
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_same_gradients(our_grads, their_grads)


def test_kl_registry_dispatch_and_errors():
    D = retrograd.distributions
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Laplace and q "
                                                  "type Poisson"):
        D.kl_divergence(D.Laplace(0.0, 1.0), D.Poisson(1.0))

    class MyNormal(D.Normal):
        pass

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == pytest.approx(0.5)

    @D.register_kl(MyNormal, MyNormal)
    def _kl_always_seven(p, q):
        return retrograd.tensor(7.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0))) == 7.0
    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == pytest.approx(0.5)


INVALID = [
    lambda D, T: D.Normal(T([0.0, 1.0]), T([1.0, -1.0])),
    lambda D, T: D.Bernoulli(probs=T([0.5, 1.5])),
    lambda D, T: D.Categorical(probs=T([-0.1, 1.1])),
    lambda D, T: D.Uniform(T([0.0]), T([0.0])),
    lambda D, T: D.Gamma(T([1.0]), T([0.0])),
    lambda D, T: D.Dirichlet(T([1.0, -2.0])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), scale_tril=T([[1.0, 0.0], [2.0, -1.0]])),
    lambda D, T: D.Geometric(probs=T([0.0, 0.5])),
    lambda D, T: D.Bernoulli(probs=T([0.5]), logits=T([0.0])),
    lambda D, T: D.Categorical(T(0.5)),
    lambda D, T: D.MultivariateNormal(T([0.0]), T([[1.0]]), scale_tril=T([[1.0]])),
    lambda D, T: D.Normal(0.0, 1.0).log_prob(T([float("nan")])),
    lambda D, T: D.Bernoulli(0.3).log_prob(T([0.5])),
    lambda D, T: D.Poisson(T([1.0, 2.0])).log_prob(T([1.5, 2.0])),
    lambda D, T: D.Beta(2.0, 3.0).log_prob(T(1.5)),
    lambda D, T: D.Dirichlet(T([1.0, 2.0])).log_prob(T([0.5, 0.6])),
    lambda D, T: D.Categorical(logits=T([0.0, 1.0])).log_prob(T(2)),
    lambda D, T: D.Normal(T([0.0, 1.0]), 1.0).log_prob(T([0.0, 1.0, 2.0])),
    lambda D, T: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 0.0], [0.0, 1.0]])).log_prob(T([0.0, 1.0, 2.0])),
    lambda D, T: D.Independent(D.Normal(0.0, 1.0), 1),
    lambda D, T: D.LowRankMultivariateNormal(T([0.0, 0.0]), T([[0.1], [0.1]]), T([1.0, -1.0])),
    lambda D, T: D.LowRankMultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0]]), T([1.0, 1.0])),
    lambda D, T: D.Exponential(T([1.0])).log_prob(T([-1.0])),
    lambda D, T: D.Normal(0.0, 1.0).log_prob(0.5),
    lambda D, T: D.GeneralizedPareto(T([0.0]), T([-1.0]), T([0.1])),
    lambda D, T: D.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(T(3.0)),
    lambda D, T: D.GeneralizedPareto(0.0, 1.0, 0.5).cdf(T(-3.0)),
    lambda D, T: D.VonMises(T([0.0]), T([0.0])),
    lambda D, T: D.LKJCholesky(1, 1.0),
    lambda D, T: D.LKJCholesky(2, T([-1.0])),
    lambda D, T: D.LKJCholesky(2).log_prob(T([[1.0, 0.0], [0.5, 0.5]])),
    lambda D, T: D.LKJCholesky(2).log_prob(T([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])),
    lambda D, T: D.Wishart(T(1.0), covariance_matrix=T([[1.0, 0.0], [0.0, 1.0]])),
    lambda D, T: D.Wishart(1, covariance_matrix=T([[1.0, 0.0], [0.0, 1.0]])),
    lambda D, T: D.Wishart(T(4.0), covariance_matrix=T([1.0, 2.0])),
    lambda D, T: D.Wishart(4.0, covariance_matrix=T([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, T: D.Wishart(4.0, scale_tril=T([[1.0, 0.0], [2.0, -1.0]])),
    lambda D, T: D.Wishart(4.0, precision_matrix=T([[1.0, 0.5], [0.4, 1.0]])),
    lambda D, T: D.Wishart(4.0, covariance_matrix=T([[1.0, 0.0], [0.0, 1.0]])).log_prob(T([[1.0, 2.0], [2.0, 1.0]])),
]


@pytest.mark.parametrize("case", range(len(INVALID)))
def test_validation_errors_match_torch(case):
    messages = []
    for lib in (retrograd, torch):
        with pytest.raises(ValueError) as error:
            INVALID[case](lib.distributions, lambda v, lib=lib: lib.tensor(v))
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_validation_can_be_turned_off():
    D = retrograd.distributions
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Bernoulli(0.3).log_prob(retrograd.tensor([0.5])).shape == (1,)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


TRANSFORMS = [
    lambda D, T: D.ExpTransform(), lambda D, T: D.SigmoidTransform(), lambda D, T: D.TanhTransform(),
    lambda D, T: D.SoftplusTransform(), lambda D, T: D.AffineTransform(T([0.5, -1.0, 2.0]), T([2.0, -0.5, 1.5])),
    lambda D, T: D.AffineTransform(1.0, -2.0), lambda D, T: D.PowerTransform(T(2.5)),
    lambda D, T: D.ComposeTransform([D.AffineTransform(0.0, 0.5), D.ExpTransform(), D.AffineTransform(1.0, 2.0)]),
    lambda D, T: D.ExpTransform().inv, lambda D, T: D.IndependentTransform(D.SigmoidTransform(), 1),
    lambda D, T: D.AffineTransform(T([0.5, -1.0, 2.0]), T([2.0, -0.5, 1.5]), event_dim=1),
    lambda D, T: D.StickBreakingTransform(), lambda D, T: D.transform_to(D.constraints.interval(T(-1.0), T(2.0))),
    lambda D, T: D.biject_to(D.constraints.greater_than(0.5)), lambda D, T: D.biject_to(D.constraints.less_than(0.5)),
    lambda D, T: D.biject_to(D.constraints.independent(D.constraints.unit_interval, 1)),
    lambda D, T: D.ReshapeTransform((3,), (1, 3)), lambda D, T: D.CorrCholeskyTransform(),
    lambda D, T: D.CatTransform([D.ExpTransform(), D.AffineTransform(1.0, T([2.0, -0.5]))], 0, [1, 2]),
    lambda D, T: D.StackTransform([D.ExpTransform(), D.SigmoidTransform(), D.TanhTransform()], dim=-1),
    lambda D, T: D.CumulativeDistributionTransform(D.Normal(T(0.2), T(1.5))),
    lambda D, T: D.biject_to(D.constraints.cat([D.constraints.positive, D.constraints.interval(-1.0, 1.0)], 0,
                                               [2, 1])),
    lambda D, T: D.transform_to(D.constraints.stack([D.constraints.real, D.constraints.positive,
                                                     D.constraints.unit_interval])),
]


@pytest.mark.parametrize("case", range(len(TRANSFORMS)))
def test_transforms_match_torch(case):
    results = []
    for lib in (retrograd, torch):
        t = TRANSFORMS[case](lib.distributions, lambda v, lib=lib: lib.tensor(v, dtype=lib.float64))
        x = lib.tensor(POSITIVE / 5, dtype=lib.float64, requires_grad=True)
        y = t(x)
        back = t.inv(y.detach())
        jac = t.log_abs_det_jacobian(x, y)
        (grad,) = lib.autograd.grad((y.sum() + jac.sum()), x)
        try:
            sign = t.sign
        except NotImplementedError:
            sign = NotImplementedError
        results.append((y, back, jac, grad, repr(t), sign, t.domain.event_dim, t.codomain.event_dim))
    ours, theirs = results
    for mine, reference in zip(ours[:4], theirs[:4]):
        np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert ours[4] == theirs[4] and ours[6:] == theirs[6:]
    if isinstance(theirs[5], torch.Tensor):
        np.testing.assert_array_equal(ours[5].numpy(), theirs[5].numpy())
    else:
        assert ours[5] == theirs[5]


def test_non_bijective_and_matrix_transforms_match_torch():
    """SoftmaxTransform and the matrix transforms (no log-det in torch): values, inverses and gradients."""
    for make, x in ((lambda D: D.SoftmaxTransform(), SIMPLEX), (lambda D: D.LowerCholeskyTransform(), COV),
                    (lambda D: D.PositiveDefiniteTransform(), COV), (lambda D: D.transform_to(D.constraints.simplex),
                                                                     SIMPLEX)):
        results = []
        for lib in (retrograd, torch):
            t = make(lib.distributions)
            x_t = lib.tensor(x, requires_grad=True)
            y = t(x_t)
            (grad,) = lib.autograd.grad((y * lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))).sum(),
                                        x_t)
            results.append((y.detach().numpy(), t.inv(y.detach()).numpy(), grad.numpy(), repr(t),
                            bool(t.codomain.check(y).all())))
        ours, theirs = results
        for mine, reference in zip(ours[:3], theirs[:3]):
            np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)
        assert ours[3:] == theirs[3:]


def test_corr_cholesky_cat_and_stack_transforms_match_torch():
    """CorrCholeskyTransform on a batch into 4 x 4 correlation factors (and biject_to(corr_cholesky)), a
    CatTransform whose log-det is summed over an event and a StackTransform along a middle dim: values, inverses,
    log-dets, gradients, shapes and codomain checks as torch's."""
    corr_cholesky = retrograd.distributions.biject_to(retrograd.distributions.constraints.corr_cholesky)
    assert bool(corr_cholesky.codomain.check(corr_cholesky(retrograd.tensor(np.linspace(-2.0, 1.5, 10)))).all())
    cases = [(lambda D: D.biject_to(D.constraints.corr_cholesky), np.linspace(-2.0, 1.5, 12).reshape(2, 6)),
             (lambda D: D.CatTransform([D.ExpTransform(), D.IndependentTransform(D.SigmoidTransform(), 1)], -1,
                                       [1, 2]), np.linspace(-1.0, 1.0, 6).reshape(2, 3)),
             (lambda D: D.StackTransform([D.ExpTransform(), D.SoftplusTransform()], 1),
              np.linspace(-1.0, 1.0, 12).reshape(3, 2, 2))]
    for make, x in cases:
        results = []
        for lib in (retrograd, torch):
            t = make(lib.distributions)
            x_t = lib.tensor(x, requires_grad=True)
            y = t(x_t)
            jac = t.log_abs_det_jacobian(x_t, y)
            weights = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
            (grad,) = lib.autograd.grad((y * weights).sum() + jac.sum(), x_t)
            try:  # torch's cat constraint cannot join the checks of pieces with different event dims
                in_codomain = bool(t.codomain.check(y).all())
            except RuntimeError as error:
                in_codomain = str(error)
            results.append((y.detach().numpy(), t.inv(y.detach()).numpy(), jac.detach().numpy(), grad.numpy(),
                            in_codomain, tuple(t.forward_shape(x_t.shape)),
                            tuple(t.inverse_shape(y.shape)), t.domain.event_dim, t.codomain.event_dim))
        ours, theirs = results
        for mine, reference in zip(ours[:4], theirs[:4]):
            np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)
        assert ours[4:] == theirs[4:]


def test_cat_and_stack_constraints_and_transform_errors_match_torch():
    value = np.array([[0.5, -1.0, 0.2], [2.0, 0.0, 1.5]])
    for make in (lambda c: c.cat([c.positive, c.real, c.unit_interval], -1),
                 lambda c: c.cat([c.real, c.positive], 0, [1, 1]), lambda c: c.stack([c.positive, c.real], 0),
                 lambda c: c.stack([c.independent(c.positive, 1), c.simplex], 0)):
        ours, theirs = (make(lib.distributions.constraints) for lib in (retrograd, torch))
        assert repr(ours) == repr(theirs) and ours.event_dim == theirs.event_dim
        assert ours.is_discrete == theirs.is_discrete
        np.testing.assert_array_equal(ours.check(retrograd.tensor(value)).numpy(),
                                      theirs.check(torch.tensor(value)).numpy())
    failures = [
        lambda D, T: D.ReshapeTransform((2, 3), (4,)),
        lambda D, T: D.ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2)),
        lambda D, T: D.CorrCholeskyTransform().forward_shape((5,)),
        lambda D, T: D.CorrCholeskyTransform().inverse_shape((3, 4)),
        lambda D, T: D.CatTransform([D.ExpTransform()], 0, [2])(T([1.0, 2.0, 3.0])),
        lambda D, T: D.StackTransform([D.ExpTransform()], 1)(T([1.0, 2.0])),
        lambda D, T: D.CatTransform([D.ExpTransform()], 0, [1, 2]),
        lambda D, T: D.constraints.stack([D.constraints.real], 1).check(T([1.0])),
        lambda D, T: D.utils.vec_to_tril_matrix(T([1.0, 2.0, 3.0, 4.0, 5.0])),
        lambda D, T: D.utils.tril_matrix_to_vec(T([[1.0, 2.0], [3.0, 4.0]]), diag=2),
    ]
    for failure in failures:
        errors = []
        for lib in (retrograd, torch):
            with pytest.raises((ValueError, AssertionError)) as error:
                failure(lib.distributions, lib.tensor)
            errors.append((error.type, str(error.value)))
        assert errors[0] == errors[1]


def test_transform_cache_and_equality():
    D = retrograd.distributions
    t = D.TanhTransform(cache_size=1)
    x = retrograd.tensor([30.0], dtype=retrograd.float64)
    y = t(x)
    assert t.inv(y) is x  # atanh(1.0) would be inf: the cache answers instead
    assert D.ExpTransform() == D.ExpTransform() and D.ExpTransform().inv.inv == D.ExpTransform()
    assert D.AffineTransform(1.0, 2.0) == D.AffineTransform(1.0, 2.0) != D.AffineTransform(1.0, 3.0)
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.ExpTransform(cache_size=2)


CONSTRAINT_VALUES = [np.array([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan]), np.array([[0.2, 0.8], [0.5, 0.6], [1.0, 0.0]]),
                     np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 1.0]], [[1.0, 2.0], [2.0, 1.0]]])]


@pytest.mark.parametrize("name", ["real", "positive", "nonnegative", "unit_interval", "boolean",
                                  "nonnegative_integer", "positive_integer", "simplex", "one_hot", "real_vector",
                                  "lower_triangular", "lower_cholesky", "positive_definite",
                                  "positive_semidefinite", "symmetric", "square", "corr_cholesky",
                                  "integer_interval", "interval", "greater_than", "less_than",
                                  "half_open_interval", "greater_than_eq", "independent"])
def test_constraints_match_torch(name):
    factories = {"integer_interval": lambda c: c.integer_interval(0, 1), "interval": lambda c: c.interval(-1, 1),
                 "greater_than": lambda c: c.greater_than(0.5), "less_than": lambda c: c.less_than(0.5),
                 "half_open_interval": lambda c: c.half_open_interval(0.0, 1.0),
                 "greater_than_eq": lambda c: c.greater_than_eq(0.5),
                 "independent": lambda c: c.independent(c.positive, 1)}
    ours, theirs = (factories.get(name, lambda c: getattr(c, name))(lib.distributions.constraints)
                    for lib in (retrograd, torch))
    assert repr(ours) == repr(theirs)
    assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    for value in CONSTRAINT_VALUES:
        if value.ndim < ours.event_dim:
            continue
        got = ours.check(retrograd.tensor(value))
        expected = theirs.check(torch.tensor(value))
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_enumerate_support_and_distribution_helpers():
    D, T = retrograd.distributions, retrograd.distributions
    for build_dist in (lambda M, t: M.Bernoulli(t([0.2, 0.7])), lambda M, t: M.Categorical(t([[0.2, 0.8]] * 3)),
                       lambda M, t: M.OneHotCategorical(t([0.2, 0.8])), lambda M, t: M.Binomial(3, t([0.2, 0.7]))):
        ours = build_dist(D, retrograd.tensor).enumerate_support()
        theirs = build_dist(torch.distributions, torch.tensor).enumerate_support()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert str(ours.dtype) == str(theirs.dtype)
    assert repr(T.Independent(D.Normal(retrograd.zeros(2), retrograd.ones(2)), 1)) == repr(
        torch.distributions.Independent(torch.distributions.Normal(torch.zeros(2), torch.ones(2)), 1))
    assert repr(D.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))


def test_sample_n_warns_its_deprecation_as_torch_does():
    """Category, words and the line it points at (the caller's), and the samples' shape."""
    seen = []
    for lib in (torch, retrograd):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            samples = lib.distributions.Normal(lib.zeros(3), 1.0).sample_n(2)
        seen.append([(w.category, str(w.message), w.filename, w.lineno) for w in caught] + [tuple(samples.shape)])
    assert seen[1] == seen[0]
    assert seen[0][0][2] == __file__


def test_star_import_binds_torchs_names():
    """`from torch.distributions import *` binds torch's __all__: not the constraints and transforms submodules nor
    the relaxed distributions' ExpRelaxedCategorical and LogitRelaxedBernoulli, which live in their own modules."""
    assert sorted(retrograd.distributions.__all__) == sorted(torch.distributions.__all__)
    D = retrograd.distributions
    assert D.constraints.real is D.constraints.real and D.transforms.TanhTransform is D.TanhTransform
    assert not hasattr(D, "ExpRelaxedCategorical") and not hasattr(torch.distributions, "ExpRelaxedCategorical")
    assert D.relaxed_categorical.ExpRelaxedCategorical.__name__ == "ExpRelaxedCategorical"
    assert D.relaxed_bernoulli.LogitRelaxedBernoulli.__name__ == "LogitRelaxedBernoulli"


def test_loads_lazily_as_torch_distributions():
    code = ("import sys, retrograd as torch; assert 'retrograd.distributions' not in sys.modules; "
            "from torch.distributions import Normal; d = torch.distributions.Normal(0.0, 1.0); "
            "print(type(d).__module__.startswith('retrograd.distributions'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("name", ["Normal", "MVN-scale_tril", "Gamma", "Beta", "Dirichlet", "StudentT",
                                  "Categorical-logits", "Transformed-affine-tanh", "Mixture",
                                  "GeneralizedPareto-bounded", "VonMises", "LKJCholesky", "Wishart-symmetrised"])
def test_log_prob_is_differentiable_twice(name):
    """log_prob is built from differentiable ops: gradcheck and gradgradcheck pass in float64."""
    builder, params, value = CASES[name]
    leaves = [retrograd.tensor(v, dtype=retrograd.float64, requires_grad=True) for v in params.values()]

    def log_prob(*tensors):
        return builder(retrograd.distributions, dict(zip(params, tensors))).log_prob(retrograd.tensor(value))

    retrograd.distributions.Distribution.set_default_validate_args(False)  # perturbations leave the lower triangle
    try:
        assert retrograd.autograd.gradcheck(log_prob, leaves)
        assert retrograd.autograd.gradgradcheck(log_prob, leaves)
    finally:
        retrograd.distributions.Distribution.set_default_validate_args(True)


def test_torch_module_paths_import():
    code = ("import retrograd.run as r; r.install(); from torch.distributions.normal import Normal; "
            "from torch.distributions.kl import kl_divergence; from torch.distributions.utils import "
            "logits_to_probs; import torch.distributions.categorical as c; import torch; "
            "from torch.distributions.wishart import Wishart; "
            "from torch.distributions.lkj_cholesky import LKJCholesky; "
            "from torch.distributions.von_mises import VonMises; "
            "from torch.distributions.generalized_pareto import GeneralizedPareto; "
            "print(float(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))), c.Categorical.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0.5", "Categorical"]


EXPONENTIAL_FAMILIES = ["Normal", "Exponential", "Gamma", "Beta", "Dirichlet", "Bernoulli-probs", "Poisson",
                        "ContinuousBernoulli-logits"]


@pytest.mark.parametrize("name", EXPONENTIAL_FAMILIES)
def test_exponential_family_entropy_and_bregman_kl(name):
    """The generic entropy and the Bregman-divergence KL from natural parameters match torch's."""
    results = []
    for lib in (retrograd, torch):
        p, p_leaves = _shifted(lib, name, 1.0)
        q, _ = _shifted(lib, name, 1.3)
        try:
            entropy = lib.distributions.ExponentialFamily.entropy(p)
        except NotImplementedError:
            entropy = None
        kl = lib.distributions.kl._kl_expfamily_expfamily(p, q)
        results.append((entropy, kl, gradients(lib, kl, p_leaves)))
    (our_entropy, our_kl, our_grads), (their_entropy, their_kl, their_grads) = results
    assert (our_entropy is None) == (their_entropy is None)
    if their_entropy is not None:
        np.testing.assert_allclose(our_entropy.detach().numpy(), their_entropy.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(our_kl.detach().numpy(), their_kl.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert_same_gradients(our_grads, their_grads)


def test_kl_between_exponential_families_without_a_closed_form():
    messages = []
    for lib in (retrograd, torch):
        with pytest.raises(NotImplementedError) as error:
            lib.distributions.kl_divergence(lib.distributions.Poisson(lib.tensor([1.0])),
                                            lib.distributions.Exponential(lib.tensor([1.0])))
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_von_mises_samples_follow_the_density():
    """20000 draws per concentration (a tiny one included, where the proposal takes its Taylor form) lie in
    [-pi, pi); their circular moments E[cos(x - loc)] = 1 - variance and E[sin(x - loc)] = 0 hold within 5 standard
    errors, and their empirical cdf stays within the 0.1% Kolmogorov-Smirnov bound of the integrated density."""
    retrograd.manual_seed(6)
    loc, kappa, n = np.array([0.3, -1.2, 2.0, 3.0]), np.array([0.5, 3.0, 10.0, 1e-6]), 20000
    dist = retrograd.distributions.VonMises(retrograd.tensor(loc), retrograd.tensor(kappa))
    x = dist.sample((n,)).numpy()
    assert x.shape == (n, 4) and x.dtype == np.float64 and ((x >= -math.pi) & (x < math.pi)).all()
    for moment, expected in ((np.cos(x - loc), 1 - dist.variance.numpy()), (np.sin(x - loc), 0.0)):
        assert (np.abs(moment.mean(0) - expected) <= 5 * moment.std(0) / math.sqrt(n) + 1e-12).all()
    grid = np.linspace(-math.pi, math.pi, 4001)
    density = np.exp(dist.log_prob(retrograd.tensor(grid[:, None])).numpy())
    cdf = np.concatenate([np.zeros((1, 4)), np.cumsum((density[1:] + density[:-1]) / 2 * np.diff(grid)[:, None], 0)])
    for column in range(4):
        drawn = np.sort(x[:, column])
        model = np.interp(drawn, grid, cdf[:, column])
        gap = max(np.abs(model - np.arange(1, n + 1) / n).max(), np.abs(model - np.arange(n) / n).max())
        assert gap < 1.95 / math.sqrt(n), (column, gap)
    single = retrograd.distributions.VonMises(retrograd.tensor([1.0]), retrograd.tensor([2.0])).sample((3,))
    assert single.dtype == retrograd.float32 and single.shape == (3, 1)


def test_lkj_cholesky_samples_have_the_lkj_marginals():
    """Each off-diagonal entry of L L^T for L ~ LKJCholesky(d, eta) is 2 Beta(b, b) - 1 with b = eta - 1 + d / 2:
    mean 0 within 5 standard errors and variance 1 / (2 eta + d - 1) within 5%; L L^T has a unit diagonal. (torch
    2.13's sampler fails this below the second row: Note [LKJ onion method].)"""
    retrograd.manual_seed(7)
    eta, n = np.array([0.5, 1.0, 3.0]), 20000
    factors = retrograd.distributions.LKJCholesky(4, retrograd.tensor(eta)).sample((n,)).numpy()
    correlations = factors @ np.swapaxes(factors, -1, -2)
    np.testing.assert_allclose(np.diagonal(correlations, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    rows, cols = np.tril_indices(4, -1)
    off_diagonal = correlations[..., rows, cols]
    variance = (1 / (2 * eta + 4 - 1))[:, None]
    assert (np.abs(off_diagonal.mean(0)) <= 5 * np.sqrt(variance / n)).all()
    np.testing.assert_allclose(off_diagonal.var(0), np.broadcast_to(variance, (3, 6)), rtol=0.05)


def test_wishart_rsample_gradients_are_unbiased():
    """Bartlett draws L A A^T L^T carry gradients to df (through the chi-squared draws' implicit gradient) and to
    L: averaged over 20000 draws they are the gradients of the mean df L L^T, within 5%. (The draws are taken from
    the sampler itself: torch 2.13's rsample of a batch rewrites the mask its redraw indexed with, so its backward
    raises.)"""
    df = retrograd.tensor(4.5, dtype=retrograd.float64, requires_grad=True)
    tril = retrograd.tensor(TRIL, requires_grad=True)
    weights = np.cos(np.arange(9)).reshape(3, 3) + 1.5
    retrograd.manual_seed(8)
    draws = retrograd.distributions.Wishart(df, scale_tril=tril)._bartlett_sampling((20000,))
    (draws.mean(0) * retrograd.tensor(weights)).sum().backward()
    tdf, ttril = torch.tensor(4.5, dtype=torch.float64, requires_grad=True), torch.tensor(TRIL, requires_grad=True)
    (tdf * ttril @ ttril.mT * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(df.grad.numpy(), tdf.grad.numpy(), rtol=0.05)
    np.testing.assert_allclose(tril.grad.numpy(), ttril.grad.numpy(), rtol=0.05)


def test_wishart_warnings_and_singular_draws():
    """torch's assertion when not exactly one matrix is given, its warning for ndim - 1 < df < ndim, and draws that
    are not positive definite redrawn with a warning."""
    D = retrograd.distributions
    for lib in (retrograd, torch):
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
            lib.distributions.Wishart(3.0)
        with pytest.warns(UserWarning, match="Low df values detected. Singular samples are highly likely"):
            lib.distributions.Wishart(lib.tensor([2.5]), covariance_matrix=lib.eye(3, dtype=lib.float64))
    with pytest.warns(UserWarning, match="Low df values detected"):
        nearly_singular = D.Wishart(2.0 + 1e-12, covariance_matrix=retrograd.eye(3, dtype=retrograd.float64))
    retrograd.manual_seed(9)
    with pytest.warns(UserWarning, match="Singular sample detected."):
        draws = nearly_singular.rsample((200,), max_try_correction=2)
    assert draws.shape == (200, 3, 3)
    assert bool(D.Wishart(6.0, covariance_matrix=retrograd.eye(3, dtype=retrograd.float64)).support.check(
        D.Wishart(6.0, covariance_matrix=retrograd.eye(3, dtype=retrograd.float64)).rsample((50,))).all())


@pytest.mark.parametrize("shape", [(), (3,)])
def test_wishart_draws_torchs_numbers(shape):
    """The same draws as torch's from one seed, and the same numbers left in the stream after them: N(0, 1) for the
    strictly lower entries only, and torch 2.13's redraw (its first check marks the draws that pass, so every call
    warns and draws again); a sample without batch dims stays differentiable, as torch's does."""
    results = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        df = lib.tensor([4.0, 5.5], requires_grad=True)
        wishart = lib.distributions.Wishart(df, covariance_matrix=lib.tensor(COV, dtype=lib.float32))
        with pytest.warns(UserWarning, match="Singular sample detected."):
            draws = wishart.rsample(shape)
        single = lib.distributions.Wishart(df[0], covariance_matrix=lib.eye(2))
        with pytest.warns(UserWarning, match="Singular sample detected."):
            single.rsample().sum().backward()
        results.append((draws.detach().numpy(), lib.rand(2).numpy(), df.grad.numpy()))
    for theirs, ours in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_generalized_pareto_special_cases_and_survival():
    """Concentration 0 is Exponential(1 / scale) shifted by loc, concentration -1 is Uniform(loc, loc + scale); the
    log survival function and log cdf match torch's."""
    D = retrograd.distributions
    x = retrograd.tensor([0.6, 1.0, 2.5], dtype=retrograd.float64)
    half = retrograd.tensor(0.5, dtype=retrograd.float64)
    zero = D.GeneralizedPareto(half * 0, 2.0, 0.0)
    np.testing.assert_allclose(zero.log_prob(x).numpy(), D.Exponential(half).log_prob(x).numpy(), rtol=1e-12)
    uniform = D.GeneralizedPareto(half, 3.0, -1.0)
    np.testing.assert_allclose(uniform.cdf(x).numpy(), D.Uniform(half, 3.5).cdf(x).numpy(), rtol=1e-12)
    ours = D.GeneralizedPareto(0.0, 2.0, 0.4)
    theirs = torch.distributions.GeneralizedPareto(0.0, 2.0, 0.4)
    for method in ("log_survival_function", "log_cdf"):
        np.testing.assert_allclose(getattr(ours, method)(retrograd.tensor([0.5, 4.0])).numpy(),
                                   getattr(theirs, method)(torch.tensor([0.5, 4.0])).numpy(), rtol=1e-6)


def test_is_all_true_answers_for_every_example_under_vmap():
    """torch._is_all_true / _is_any_true give one unbatched 0-d bool tensor, under vmap over every example at once,
    so a distribution's validation can branch on it there: torch.func.hessian of a log joint built from validated
    distributions runs, and an invalid example still fails the check with torch's ValueError."""
    data = np.array([[1.0, 2.0], [-1.0, 3.0]])

    def answers(lib):
        seen = []

        def check(v):
            every, some = lib._is_all_true(v > 0), lib._is_any_true(v > 2)
            seen.append((type(every).__name__, tuple(every.shape), bool(every), bool(some)))
            return v * 2

        lib.func.vmap(check)(lib.tensor(data))
        lib.func.vmap(lib.func.vmap(check))(lib.tensor(data).unsqueeze(0).expand(3, 2, 2))
        return seen + [bool(lib._is_all_true(lib.tensor([], dtype=lib.bool)))]

    assert answers(retrograd) == answers(torch) == [("Tensor", (), False, True)] * 2 + [True]
    for lib in (retrograd, torch):
        with pytest.raises(RuntimeError, match="^self.scalar_type\\(\\) == at::kBool INTERNAL ASSERT FAILED"):
            lib._is_all_true(lib.tensor([1, 0]))

    def hessian(lib):
        X = lib.tensor(rng.standard_normal((12, 3)))
        y = (X[:, 0] > 0).double()
        prior = lib.distributions.Normal(lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64))

        def neg_log_joint(w):
            return -(lib.distributions.Bernoulli(logits=X @ w).log_prob(y).sum() + prior.log_prob(w).sum())

        return lib.func.hessian(neg_log_joint)(lib.tensor([0.3, -0.2, 0.1], dtype=lib.float64)).numpy()

    state = rng.bit_generator.state
    ours = hessian(retrograd)
    rng.bit_generator.state = state
    np.testing.assert_allclose(ours, hessian(torch), rtol=1e-12)
    for lib in (retrograd, torch):
        with pytest.raises(ValueError, match="^Expected parameter scale .* to satisfy the constraint GreaterThan"):
            lib.func.vmap(lambda m, lib=lib: lib.distributions.Normal(0.0, m).log_prob(lib.zeros(2)))(
                lib.tensor(data))
