"""Numerical stability: losses and activations at extreme inputs stay finite wherever torch's do, and their
values and gradients agree with torch's."""

import functools
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)
BIG = [-1000.0, -100.0, -30.0, 0.0, 30.0, 100.0, 1000.0]

# name -> (inputs as lists of floats, function(lib, *tensors) -> scalar-or-tensor)
CASES = {
    "logsumexp_large": ([[1000.0, 1000.0, -1000.0], [-1000.0, -1000.0, 0.0]], lambda lib, x: x.logsumexp(dim=1)),
    "logsumexp_neg_inf": ([[float("-inf"), 0.0, 1.0]], lambda lib, x: x.logsumexp(dim=1)),
    "bce_with_logits": ((BIG, [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]),
                        lambda lib, x, y: lib.nn.functional.binary_cross_entropy_with_logits(x, y.detach())),
    "bce_with_logits_pos_weight": ((BIG, [1.0] * 7), lambda lib, x, y: lib.nn.functional
                                   .binary_cross_entropy_with_logits(x, y.detach(), pos_weight=lib.full((7,), 3.0))),
    "softplus": (BIG, lambda lib, x: lib.nn.functional.softplus(x)),
    "softplus_beta": (BIG, lambda lib, x: lib.nn.functional.softplus(x, beta=2.0, threshold=10.0)),
    "log_softmax_neg_inf": ([[float("-inf"), 0.0, 2.0], [1000.0, -1000.0, 0.0]], lambda lib, x: x.log_softmax(dim=1)),
    "softmax_large": ([[1000.0, 999.0, -1000.0]], lambda lib, x: x.softmax(dim=-1)),
    "sigmoid": (BIG, lambda lib, x: x.sigmoid()),
    "tanh": (BIG, lambda lib, x: x.tanh()),
    "logsigmoid": (BIG, lambda lib, x: lib.nn.functional.logsigmoid(x)),
    "silu": (BIG, lambda lib, x: lib.nn.functional.silu(x)),
    "gelu": (BIG, lambda lib, x: lib.nn.functional.gelu(x)),
    "elu": (BIG, lambda lib, x: lib.nn.functional.elu(x)),
    "cross_entropy_large": ([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 500.0]],
                            lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([1, 0]))),
    "cross_entropy_smoothing": ([[1000.0, -1000.0, 0.0]], lambda lib, x: lib.nn.functional.cross_entropy(
        x, lib.tensor([2]), label_smoothing=0.1)),
    "nll_of_log_softmax": ([[1e4, -1e4, 0.0]],
                           lambda lib, x: lib.nn.functional.nll_loss(x.log_softmax(dim=1), lib.tensor([1]))),
    "norm_tiny": ([1e-30, -1e-30], lambda lib, x: x.norm()),
    "exp_overflow": ([100.0, 1000.0], lambda lib, x: x.exp()),
    "atan2_origin": (([0.0, -0.0, 0.0, 1e-30, 3.0], [0.0, 0.0, -0.0, 1e-30, -4.0]), lambda lib, y, x: lib.atan2(y, x)),
}


def _inputs(lib, spec, dtype):
    groups = spec if isinstance(spec, tuple) else (spec,)
    return [lib.tensor(np.array(g, dtype=dtype), requires_grad=True) for g in groups]


def _evaluate(lib, case, dtype):
    spec, fn = CASES[case]
    xs = _inputs(lib, spec, dtype)
    out = fn(lib, *xs)
    out.sum().backward() if out.numel() == 1 else out.backward(lib.ones_like(out))
    grads = [x.grad.numpy() if x.grad is not None else None for x in xs]
    return out.detach().numpy(), grads


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_extreme_inputs_match_torch(case: str, dtype: str) -> None:
    expected, expected_grads = _evaluate(torch, case, dtype)
    got, got_grads = _evaluate(retrograd, case, dtype)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    np.testing.assert_allclose(got, expected, equal_nan=True, **tol)
    for g, e in zip(got_grads, expected_grads):
        assert (g is None) == (e is None)
        if e is not None:
            np.testing.assert_array_equal(np.isfinite(g), np.isfinite(e))
            np.testing.assert_allclose(g, e, equal_nan=True, **tol)



OUT_OF_DOMAIN = """
import numpy as np
import {lib} as torch
cases = [torch.log(torch.tensor([0.0, -1.0], requires_grad=True)),
         torch.tensor([0.0, 1.0], requires_grad=True) / 0,
         torch.sqrt(torch.tensor([-1.0], requires_grad=True)),
         torch.acos(torch.tensor([2.0], requires_grad=True)),
         torch.tensor([0.0], requires_grad=True) ** -1,
         torch.exp(torch.tensor([1000.0], requires_grad=True))]
for y in cases:
    y.sum().backward()
    print(y.detach().numpy().tolist())
{numpy}
"""


@pytest.mark.parametrize("numpy_too", [False, True])
def test_out_of_domain_values_warn_as_little_as_torch(numpy_too: bool) -> None:
    """torch gives inf/nan without a warning, forward and backward; so does retrograd (Note [floating-point
    warnings]), while the user's own NumPy calls keep their warnings. A fresh interpreter, as a user runs:
    pytest's own warning capture would mask the library's filter."""
    numpy_line = "np.log(np.zeros(1))" if numpy_too else ""
    runs = {lib: subprocess.run([sys.executable, "-c", OUT_OF_DOMAIN.format(lib=lib, numpy=numpy_line)],
                                capture_output=True, text=True, check=True)
            for lib in ("torch", "retrograd")}
    assert runs["retrograd"].stdout == runs["torch"].stdout
    assert runs["torch"].stderr.count("RuntimeWarning") == int(numpy_too)
    assert runs["retrograd"].stderr.count("RuntimeWarning") == int(numpy_too)


EMPTY_MEANS = """
import {lib} as torch
import {lib}.nn.functional as F
x = torch.zeros(0, 4, requires_grad=True)
cases = [x.mean(), x.mean(dim=0), x.mean(dim=(0, 1), keepdim=True), x.mean(dim=1), x.nanmean(),
         F.smooth_l1_loss(x, torch.zeros(0, 4), beta=1 / 9), F.mse_loss(x, torch.zeros(0, 4)),
         F.l1_loss(x, torch.zeros(0, 4)), F.binary_cross_entropy_with_logits(x, torch.zeros(0, 4)),
         torch.zeros(0, dtype=torch.complex64).mean(), torch.zeros(0, 2, dtype=torch.float16).mean(0),
         *torch.var_mean(torch.zeros(0, 2), dim=0, correction=0)]
for y in cases:
    if y.requires_grad:
        y.sum().backward()
    print(y.dtype, y.detach().numpy().tolist())
print(x.grad.shape)
"""


def test_a_mean_of_no_elements_is_nan_without_a_warning():
    """A detector's box loss over no positive anchors is F.smooth_l1_loss of empty tensors: NaN, as torch says it
    silently; NumPy's mean of an empty slice warns from NumPy's own frame, which retrograd's filter (Note
    [floating-point warnings]) does not see, so its reductions take the mean of no elements themselves."""
    runs = {lib: subprocess.run([sys.executable, "-c", EMPTY_MEANS.format(lib=lib)], capture_output=True, text=True,
                                check=True) for lib in ("torch", "retrograd")}
    assert runs["retrograd"].stdout == runs["torch"].stdout
    assert "nan" in runs["torch"].stdout
    for run in runs.values():  # var_mean's own warning of a divisor <= 0 is torch's too
        assert "RuntimeWarning" not in run.stderr and run.stderr.count("UserWarning: var_mean()") == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, float("inf"), -float("inf")])
def test_cond_of_an_exactly_singular_matrix_is_inf(p, dtype):
    """||A|| ||A^-1|| is infinite for a singular A: checked against the math, not torch, whose value there is
    its LAPACK's rounding of a zero pivot (1.5e8 or inf depending on the CPU). (p = 2 divides by the smallest
    singular value as the SVD rounds it, which is not exactly zero.)"""
    singular = retrograd.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 1.0], [1.0, 1.0]]], dtype=getattr(retrograd, dtype))
    assert retrograd.linalg.cond(singular, p).tolist() == [float("inf")] * 2


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("exponent", [2, 3, 2.0, 3.0, -1, -1.0, -2.0, -0.5, 0.5, 1.5])
def test_scalar_exponents_round_as_torchs(exponent, dtype):
    """x ** 2, x ** 3, sqrt and reciprocal exponents are multiplies and divisions in torch's kernel (Note [scalar
    exponents]); the general power (1.5) stays a power. float64 results are bit for bit torch's."""
    data = np.random.default_rng(3).uniform(0.1, 4.0, 64)
    ours = retrograd.tensor(data, dtype=getattr(retrograd, dtype)) ** exponent
    theirs = torch.tensor(data, dtype=getattr(torch, dtype)) ** exponent
    assert str(ours.dtype) == str(theirs.dtype)
    if dtype == "float64" and exponent in (2, 3, -1, -2, -0.5):  # correctly rounded IEEE operations
        assert np.array_equal(ours.numpy(), theirs.numpy())
    else:  # float32: torch's vectorised sqrt and pow may differ from NumPy's in the last bit
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7 if dtype == "float32" else 1e-15)


# trace or an einsum equation -> (operand shape, output shape): ops whose gradient lies on a diagonal
DIAGONAL_GRADIENTS = {
    "trace": ((2, 4), ()), "ii": ((3, 3), ()), "ii->i": ((3, 3), (3,)), "iij->ij": ((2, 2, 3), (2, 3)),
    "...ii->...i": ((4, 2, 2), (4, 2)), "iji->j": ((2, 3, 2), (3,)), "iii->i": ((2, 2, 2), (2,)),
    "jii->ij": ((3, 2, 2), (2, 3)),
}


@pytest.mark.parametrize("cotangent", [float("inf"), -1.0])
@pytest.mark.parametrize("name", sorted(DIAGONAL_GRADIENTS))
def test_diagonal_gradients_are_written_on_zeros(name, cotangent):
    """The gradient is written on the diagonal of zeros, as torch's: not a product with an identity, which made an
    inf NaN and a negative -0. off the diagonal. Second derivatives stay right."""
    shape, out_shape = DIAGONAL_GRADIENTS[name]
    grads = []
    for lib in LIBS:
        x = lib.arange(1.0, 1.0 + math.prod(shape), dtype=lib.float64).reshape(shape).requires_grad_()
        op = lib.trace if name == "trace" else functools.partial(lib.einsum, name)
        grads.append(lib.autograd.grad(op(x), x, lib.full(out_shape, cotangent, dtype=lib.float64))[0].numpy())
        if lib is retrograd:
            assert lib.autograd.gradgradcheck(op, (x,))
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(np.signbit(grads[0]), np.signbit(grads[1]))


# float16 reductions along an axis NumPy does not sum pairwise: torch accumulates in float32 (Note [float16 sums])
HALF_REDUCTIONS = {
    "sum_dim": lambda lib, x: x.sum(0), "sum_transposed": lambda lib, x: x.T.sum(1),
    "sum_dtype": lambda lib, x: x.sum(0, dtype=lib.float16), "nansum": lambda lib, x: x.nansum(0),
    "count_as_half": lambda lib, x: (x > -9).sum(0, dtype=lib.float16),
    "cumsum": lambda lib, x: x.cumsum(0)[-3:], "einsum": lambda lib, x: lib.einsum("ij,ij->j", x, x),
    "norm": lambda lib, x: lib.linalg.vector_norm(x, dim=0), "norm_3": lambda lib, x: x.norm(3, dim=0),
    "softmax": lambda lib, x: x.softmax(0)[:8], "log_softmax": lambda lib, x: x.log_softmax(0)[:8],
    "logsumexp": lambda lib, x: x.logsumexp(0), "cumprod": lambda lib, x: (x / 8 + 1).cumprod(0)[[9, 99]],
    "var": lambda lib, x: x.var(0), "std": lambda lib, x: x.T.std(1), "var_mean": lambda lib, x: lib.var_mean(x, 0)[0],
    "std_mean": lambda lib, x: lib.std_mean(x, 0, correction=0)[0],
}


@pytest.mark.parametrize("name", sorted(HALF_REDUCTIONS))
def test_float16_reductions_accumulate_in_float32(name):
    """Over 4096 rows a float16 accumulator stalls (2048 + 1 = 2048) and drifts; torch's does neither. Within
    one float16 ulp of torch: its vectorised kernels add in another order."""
    data = np.random.default_rng(5).standard_normal((4096, 3)).astype(np.float16) + np.float16(1)
    ours, theirs = (HALF_REDUCTIONS[name](lib, lib.tensor(data)) for lib in (retrograd, torch))
    assert str(ours.dtype) == str(theirs.dtype) == "torch.float16"
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2 ** -10, atol=2 ** -14)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_logsumexp_rounds_each_step_of_torchs_composite(dtype):
    """torch's logsumexp is amax, sub, exp_, sum, log_ and add_, each result rounded to the input's bfloat16 or
    float16: the same bits, where one float32 pass rounded once is an ulp off in about a third of the rows."""
    data = np.random.default_rng(6).standard_normal((400, 7)) * 3
    ours, theirs = (lib.tensor(data).to(getattr(lib, dtype)).logsumexp(-1).float().numpy()
                    for lib in (retrograd, torch))
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("name", ["log2", "log10"])
def test_float32_log2_and_log10_round_as_torchs(name):
    """torch's float32 log2 and log10 are the exact value rounded once nearly always, NumPy's float32 loops an ulp
    off on many inputs (Note [float32 log2 and log10]): exact powers of ten and two, float32(1e-10) whose log10 torch
    gives as -10 (a histc bin edge of log-sparsity plots), and all but a few in ten thousand of a wide sweep."""
    sweep = np.exp(np.random.default_rng(0).uniform(-30, 30, 100_000)).astype(np.float32)
    edges = np.concatenate([10.0 ** np.arange(-30, 31), 2.0 ** np.arange(-60, 61), [1e-10]]).astype(np.float32)
    theirs, ours = (getattr(lib, name)(lib.from_numpy(edges.copy())).numpy() for lib in LIBS)
    np.testing.assert_array_equal(ours, theirs)
    theirs, ours = (getattr(lib, name)(lib.from_numpy(sweep.copy())).numpy() for lib in LIBS)
    assert np.mean(ours != theirs) < 1e-3
    np.testing.assert_allclose(ours, theirs, rtol=2e-7)


def test_a_divisor_of_no_degrees_of_freedom_warns_torchs_whole_message():
    """std/var of one sample (an advantage batch of one) and cov of one observation warn as torch's C++ does, with
    where it was raised; each is warned once per call, at the caller's line."""
    cases = [lambda L: L.ones(1).std(), lambda L: L.ones(2, 1).var(1), lambda L: L.std_mean(L.ones(1)),
             lambda L: L.var_mean(L.ones(3), correction=3), lambda L: L.ones(3, dtype=L.float64).var(0, correction=5),
             lambda L: L.cov(L.ones(2, 1))]
    seen = {}
    for lib in (torch, retrograd):
        seen[lib] = []
        for case in cases:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                case(lib)
            seen[lib].append([(w.category, str(w.message), w.filename) for w in caught if w.category is UserWarning])
    assert seen[retrograd] == seen[torch]
    assert all(len(w) == 1 and w[0][2] == __file__ for w in seen[torch])


INFINITE_REDUCTIONS = """
import numpy as np
import {lib} as torch
torch.manual_seed(0)
x = torch.tensor([float("inf"), -float("inf"), 1.0], requires_grad=True)
big = torch.tensor([3e38, 3e38, 1.0, 2.0])
cases = [x.sum(), x.mean(), x.cumsum(0), x.cumprod(0), x.var(), x.std(), torch.nansum(x), torch.nanmean(x),
         big.sum(), big.view(2, 2).sum(0), big.mean(), big.half().float().prod(), torch.nn.Linear(3, 2)(x).sum(),
         big.to(torch.float16).mean(), torch.tensor([60000.0, 60000.0], dtype=torch.float16).sum()]
for y in cases:
    print(y.dtype, y.detach().numpy().tolist())
x.sum().backward()
{numpy}
"""


@pytest.mark.parametrize("numpy_too", [False, True])
def test_sums_and_means_through_infinities_warn_as_little_as_torch(numpy_too: bool) -> None:
    """inf - inf in a sum, a mean or a running sum, and sums that overflow, give torch's inf and nan with no
    RuntimeWarning (Note [reductions through the ufunc]); the user's own NumPy reductions keep their warnings."""
    numpy_line = "np.array([np.inf, -np.inf]).sum()" if numpy_too else ""
    runs = {lib: subprocess.run([sys.executable, "-c", INFINITE_REDUCTIONS.format(lib=lib, numpy=numpy_line)],
                                capture_output=True, text=True, check=True) for lib in ("torch", "retrograd")}
    assert runs["retrograd"].stdout == runs["torch"].stdout
    assert runs["torch"].stderr.count("RuntimeWarning") == int(numpy_too)
    assert runs["retrograd"].stderr.count("RuntimeWarning") == int(numpy_too)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_remainder_keeps_torchs_sign_of_zero(dtype):
    """torch's remainder is fmod plus the divisor where a non-zero result's sign differs: a zero keeps the
    dividend's sign (-6.0 % 3 is -0.0), where NumPy's remainder gives it the divisor's."""
    rng = np.random.default_rng(0)
    divisors = rng.choice([-3.0, -1.0, -0.5, 0.5, 1.0, 3.0, np.inf, -np.inf], 200)
    dividends = np.concatenate([rng.integers(-8, 8, 100) * 1.5, rng.standard_normal(100) * 10])
    dividends[:4] = [0.0, -0.0, np.nan, np.inf]
    results = []
    for lib in LIBS:
        a, b = (lib.tensor(v, dtype=getattr(lib, dtype)) for v in (dividends, divisors))
        results.append([(a % b).numpy(), lib.remainder(a, 3.0).numpy(), lib.remainder(a[:3], -1.0).numpy()])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_powers_with_negative_tensor_exponents_as_torch(dtype):
    """torch's integer pow gives 0 for a negative exponent, but 1 for a base of 1 and +-1 for -1 (NumPy refuses)."""
    base, exponent = [2, 1, -1, 0, -2, 3, -1, 1, 5], [-1, -2, -3, -1, -2, 0, -4, 7, 2]
    results = []
    for lib in LIBS:
        b, e = (lib.tensor(v, dtype=getattr(lib, dtype)) for v in (base, exponent))
        results.append([(b ** e).tolist(), lib.pow(b, e).dtype == getattr(lib, dtype), (2 ** e).tolist(),
                        lib.pow(b[:1], e[:1]).tolist()])
    assert results[0] == results[1]


def test_deprecated_transposes_and_complex_casts_warn_as_torch():
    """x.T on other ranks than 2, x.H, x.mT and x.mH on 0-d and a cast of complex values to a real dtype warn once
    each with torch's words, at the user's line; mT, mH and H refuse the ranks torch refuses."""
    code = ("import warnings\nwarnings.simplefilter('always')\nimport {lib} as torch\n"
            "x, s, z = torch.ones(2, 3, 4), torch.tensor(2.0), torch.tensor([1 + 2j])\n"
            "x.T; x.T; s.T; s.H; z.to(torch.float32); z.float(); z.real; torch.ones(2, 3).T\n"
            "s.mT; s.mH\n"
            "for f in (lambda: x.H, lambda: torch.ones(3).H, lambda: torch.ones(3).mT, lambda: torch.ones(3).mH):\n"
            "    try:\n        f()\n    except RuntimeError as e:\n        print(e)\n")
    runs = [subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True, text=True, check=True)
            for lib in ("torch", "retrograd")]
    assert runs[0].stderr.count("UserWarning") == 6
    assert (runs[0].stdout, runs[0].stderr) == (runs[1].stdout, runs[1].stderr)
