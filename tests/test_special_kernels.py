"""The erf family's kernels (ops/pointwise.py, Note [erf, erfc, erfinv in a few NumPy passes]) over the whole
line: ulps against mpmath at 40 digits and against torch, in float64 and in float32, every interval of the
piecewise float64 approximation and both sides of its boundaries, the tails, and the non-finite values. The
float64 kernels run on NumPy's arrays and on array_api_strict's (the standard's path: no bit views)."""

import math

import array_api_strict
import mpmath
import numpy as np
import pytest
import torch

import retrograd
from retrograd.ops import pointwise
from retrograd.ops import special as special_kernels

BOUNDARIES = [0.25, 0.84375, 1.25, 1 / 0.35, 6.0, 28.0]


def ulps(ours, reference):
    """|ours - reference| in units of the reference's last place (in the reference's dtype)."""
    ours, reference = np.asarray(ours, np.float64), np.asarray(reference)
    spacing = np.spacing(np.abs(reference)).astype(np.float64)
    return np.abs(ours - reference.astype(np.float64)) / spacing


def around_boundaries(signs=(1, -1)):
    """Each interval boundary and its float64 neighbours, on both sides of zero."""
    points = [np.nextafter(b, direction) for b in BOUNDARIES for direction in (0, np.inf)] + BOUNDARIES
    return np.array([s * p for s in signs for p in points])


def float64_points():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.uniform(-7, 7, 400), rng.uniform(-30, 30, 200), np.geomspace(1e-300, 27, 200),
                           -np.geomspace(1e-300, 7, 100), around_boundaries()])


def run(kernel, xp, x):
    """A float64 kernel on a copy of x in namespace xp, back as a NumPy array."""
    with np.errstate(all="ignore"):
        return np.asarray(kernel(xp, xp.asarray(x.copy())))


NAMESPACES = pytest.mark.parametrize("xp", [np, array_api_strict], ids=["numpy", "standard"])


def mp(fn, values):
    mpmath.mp.dps = 40
    return np.array([float(fn(mpmath.mpf(float(v)))) for v in values])


@pytest.mark.parametrize("name, exact, bound", [
    ("erf", mpmath.erf, 1),
    ("erfc", mpmath.erfc, 3),
    ("erfcx", lambda v: mpmath.exp(v * v) * mpmath.erfc(v), 3),
])
@NAMESPACES
def test_float64_kernels_within_ulps_of_mpmath(name, exact, bound, xp):
    x = float64_points()
    if name == "erfcx":  # no underflow: out to 1e300, and down to where exp(x^2) overflows
        x = np.concatenate([x[x > -26.5], np.geomspace(30, 1e12, 100), -np.geomspace(1e-3, 26.5, 100)])
    ours = run(getattr(pointwise, "_" + name), xp, x)
    assert ulps(ours, mp(exact, x)).max() <= bound


@NAMESPACES
def test_erfinv_within_an_ulp_of_mpmath(xp):
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.uniform(-1, 1, 400), 1 - np.geomspace(1e-16, 0.5, 100),
                        -(1 - np.geomspace(1e-16, 0.5, 20)), np.geomspace(1e-300, 0.5, 100),
                        [0.5, np.nextafter(0.5, 0)]])
    assert ulps(run(pointwise._erfinv, xp, y), mp(mpmath.erfinv, y)).max() <= 1


@pytest.mark.parametrize("name", ["_erf", "_erfc", "_erfcx", "_erfinv", "_log_ndtr", "_ndtri"])
def test_standard_path_agrees_with_numpys_over_the_line(name):
    """The standard's path (Veltkamp's split for exp(-a^2)) against NumPy's (the bit mask's), tails, non-finite values
    and the normal kernels built on them included: infinities and NaN where NumPy has them, and finite values within
    6 ulp, as two results each within 3 ulp of mpmath (test_float64_kernels_within_ulps_of_mpmath runs both)."""
    kernel = getattr(special_kernels if name in ("_log_ndtr", "_ndtri") else pointwise, name)
    x = np.concatenate([float64_points(), np.geomspace(27, 1e300, 50), [1e308, np.inf, -np.inf, np.nan, 0.0, -0.0]])
    if name in ("_erfinv", "_ndtri"):
        x = np.concatenate([np.linspace(-1, 1, 801), 1 - np.geomspace(1e-16, 0.5, 100), np.geomspace(5e-324, 0.5, 100),
                            [np.nan, 1.5]])
    numpys, standard = run(kernel, np, x), run(kernel, array_api_strict, x)
    finite = np.isfinite(numpys)
    np.testing.assert_array_equal(standard[~finite], numpys[~finite])
    assert ulps(standard[finite], numpys[finite]).max() <= 6


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16])
def test_public_ops_match_torch_over_the_line(name, dtype):
    """Values and dtype against torch, dense over the range where the function changes, tails included."""
    x = np.concatenate([np.linspace(-1, 1, 2001) if name == "erfinv" else np.linspace(-7, 30, 4001),
                        around_boundaries() / (28.0 if name == "erfinv" else 1.0)])
    theirs = getattr(torch, name)(torch.tensor(x, dtype=dtype))
    ours = getattr(retrograd, name)(retrograd.tensor(x, dtype=getattr(retrograd, str(dtype)[6:])))
    assert str(ours.dtype) == str(theirs.dtype)
    # float64: both within an ulp or two of the truth; float32 erf: ours within 2.2 ulp, torch's within 1
    bound = {torch.float64: 4, torch.float32: 3, torch.float16: 1}[dtype]
    theirs = theirs.numpy()
    finite = np.isfinite(theirs)
    assert ulps(ours.numpy()[finite], theirs[finite]).max() <= bound
    np.testing.assert_array_equal(ours.numpy()[~finite], theirs[~finite])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_special_values(dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 30.0, -7.0, 1e30, -1e30, 3e38, -3e38], dtype)
    for name in ("erf", "erfc"):
        ours = getattr(retrograd, name)(retrograd.tensor(x)).numpy()
        theirs = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    y = np.array([1.0, -1.0, 1.5, -2.0, np.nan, 0.0, -0.0], dtype)
    ours, theirs = retrograd.erfinv(retrograd.tensor(y)).numpy(), torch.erfinv(torch.tensor(y)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours[~np.isnan(ours)]), np.signbit(theirs[~np.isnan(theirs)]))


def test_float32_erf_is_float32_within_ulps_of_the_truth():
    """The float32 kernel (one formula, no intervals) against math.erf on a sweep of float32 down to 1e-38."""
    bits = np.arange(np.float32(1e-38).view(np.int32), np.float32(6).view(np.int32), 9973, dtype=np.int32)
    x = np.concatenate([bits.view(np.float32), -bits.view(np.float32)])
    ours = pointwise.erf.forward(np, x)
    assert ours.dtype == np.float32
    truth = np.array([math.erf(v) for v in x.astype(np.float64)]).astype(np.float32)
    assert ulps(ours, truth).max() <= 2.5


@NAMESPACES
def test_erfcx_kernel_matches_torch_special(xp):
    """exp(x^2) erfc(x) against torch.special.erfcx: no underflow for large x, inf where exp(x^2) overflows.
    (For x < 0 torch's 2 exp(x^2) - erfcx(-x) drifts from mpmath as x^2 grows, by ~500 ulp at -25; ours stays
    within 3 ulp, test_float64_kernels_within_ulps_of_mpmath: so a relative tolerance there.)"""
    x = np.concatenate([np.linspace(-25, 50, 7501), np.geomspace(50, 1e300, 200), [-27.0, -np.inf, np.inf, np.nan]])
    ours = run(pointwise._erfcx, xp, x)
    theirs = torch.special.erfcx(torch.tensor(x)).numpy()
    finite = np.isfinite(theirs)
    assert ulps(ours[finite & (x >= 0)], theirs[finite & (x >= 0)]).max() <= 8
    np.testing.assert_allclose(ours[finite & (x < 0)], theirs[finite & (x < 0)], rtol=1e-12)
    np.testing.assert_array_equal(ours[~finite], theirs[~finite])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_gelu_forward_and_backward_match_torch(dtype):
    """(Not at +inf: torch's vectorised float32 kernel gives NaN there, its scalar one inf, as ours.)"""
    x = np.concatenate([np.linspace(-10, 10, 2001), [-np.inf, 0.0, -0.0]])
    tx = torch.tensor(x, dtype=dtype, requires_grad=True)
    rx = retrograd.tensor(x, dtype=getattr(retrograd, str(dtype)[6:]), requires_grad=True)
    outs = []
    for lib, t in ((torch, tx), (retrograd, rx)):
        y = lib.nn.functional.gelu(t)
        y.backward(lib.ones_like(y))
        outs.append((y.detach().numpy(), t.grad.numpy(), y.grad_fn.name()))
    (ty, tg, tname), (ry, rg, rname) = outs
    assert rname == tname
    tol = {torch.float32: 2e-6, torch.float64: 1e-14}[dtype]
    np.testing.assert_allclose(ry, ty, rtol=tol, atol=tol)
    np.testing.assert_allclose(rg, tg, rtol=tol, atol=tol)


def test_float32_gelu_and_slope_within_ulps_of_float64():
    """Note [float32 normal cdf]: float32 GELU and its slope against float64 (from math.erfc) on float32 of every
    magnitude from -0.5 up (left of it 1 + tanh cancels, as torch's 1 + erf), in float32 ulp of the true value."""
    bits = np.linspace(np.float32(1e-30).view(np.int32), np.float32(20).view(np.int32), 60_000).astype(np.int32)
    magnitudes = bits.view(np.float32)
    x = np.concatenate([magnitudes, -magnitudes[magnitudes <= 0.5]])
    wide = x.astype(np.float64)
    phi = 0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in wide])
    truth = (wide * phi, phi + wide * np.exp(-wide * wide / 2) / math.sqrt(2 * math.pi))
    t = retrograd.tensor(x, requires_grad=True)
    y = retrograd.nn.functional.gelu(t)
    y.backward(retrograd.ones_like(y))
    for ours, exact, bounds in ((y.detach().numpy(), truth[0], (2.5, 2.5)), (t.grad.numpy(), truth[1], (4.5, 2.5))):
        spacing = np.maximum(np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64), 2.0 ** -149)
        error = np.abs(ours.astype(np.float64) - exact) / spacing
        assert error[x < 0].max() <= bounds[0] and error[x >= 0].max() <= bounds[1]
