"""linalg.tensorinv / tensorsolve / vecdot / vander / diagonal and cholesky_inverse: argument errors against
torch 2.13 (values, gradients and grad_fn names are checked by their op-database rows)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd

CALLS = [
    lambda lib: lib.linalg.vecdot(lib.ones(3).long(), lib.ones(3).long()),
    lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3).double()),
    lambda lib: lib.linalg.vander(lib.tensor(1.0)),
    lambda lib: lib.linalg.vander(lib.ones(3), N=1),
    lambda lib: lib.linalg.vander(lib.ones(3).bool()),
    lambda lib: lib.linalg.tensorinv(lib.ones(4, 6, 8, 3), ind=0),
    lambda lib: lib.linalg.tensorinv(lib.ones(4, 6, 5, 3)),
    lambda lib: lib.linalg.tensorsolve(lib.ones(4, 6, 8, 3), lib.ones(3, 6)),
    lambda lib: lib.cholesky_inverse(lib.ones(3, 4)),
    lambda lib: lib.cholesky_inverse(lib.ones(3)),
    lambda lib: lib.linalg.householder_product(lib.ones(3), lib.ones(1)),
    lambda lib: lib.linalg.householder_product(lib.ones(3, 4), lib.ones(2)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(4)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(1, 2)),
    lambda lib: lib.linalg.householder_product(lib.ones(4, 3), lib.ones(2).double()),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(5, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(2), lib.ones(4, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(2), lib.ones(2, 4), left=False),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(2, 5), left=False),
    lambda lib: lib.ormqr(lib.ones(4), lib.ones(3), lib.ones(4, 2)),
    lambda lib: lib.ormqr(lib.ones(4, 3), lib.ones(3), lib.ones(4)),
    lambda lib: lib.ormqr(lib.ones(4, 3).double(), lib.ones(3), lib.ones(4, 2).double()),
    lambda lib: lib.linalg.ldl_factor(lib.ones(3, 4)),
    lambda lib: lib.linalg.ldl_factor(lib.ones(3)),
    lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3).long()),
    lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(3)),
    lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(2, 1)),
    lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(3, 1).double()),
    lambda lib: lib.linalg.matrix_power(lib.tensor([[1, 1], [0, 1]]), -1),  # the inverse refuses integers
    lambda lib: lib.linalg.matrix_power(lib.tensor([[True, False], [True, True]]), 3),  # so does a bool product
    lambda lib: lib.linalg.matrix_power(lib.ones(2, 3, dtype=lib.int32), 2),
]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_integer_matrix_power_is_torchs_product(n, dtype):
    """linalg.matrix_power takes integer matrices for n >= 0 (products only), as torch's does."""
    ours, theirs = (lib.linalg.matrix_power(lib.tensor([[[1, 1], [0, 1]], [[2, 0], [1, 1]]], dtype=getattr(lib, dtype)),
                                            n) for lib in (retrograd, torch))
    assert (ours.tolist(), str(ours.dtype)) == (theirs.tolist(), str(theirs.dtype))


def failure(lib, call):
    with pytest.raises(Exception) as info:
        call(lib)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("call", CALLS, ids=range(len(CALLS)))
def test_errors_match_torch(call):
    assert failure(retrograd, call) == failure(torch, call)


@pytest.mark.parametrize("call", [
    lambda lib, a: lib.linalg.ldl_factor(a)[0],
    lambda lib, a: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(a.detach()), a),
], ids=["factor", "solve"])
def test_ldl_has_no_derivative_as_in_torch(call):
    def attempt(lib):
        a = lib.tensor([[2.0, 1.0], [1.0, -3.0]], requires_grad=True)
        out = call(lib, a)
        return type(out.grad_fn).__name__, failure(lib, lambda _: out.sum().backward())

    assert attempt(retrograd) == attempt(torch)


def test_ldl_factor_ex_reports_singular_pivots():
    for lib in (retrograd, torch):
        LD, pivots, info = lib.linalg.ldl_factor_ex(lib.zeros(2, 3, 3))
        assert info.tolist() == [1, 1] and pivots.dtype == lib.int32


def test_singular_tensorinv_raises_linalg_error():
    with pytest.raises(retrograd.linalg.LinAlgError, match="the input matrix is singular"):
        retrograd.linalg.tensorinv(retrograd.zeros(2, 2, 2, 2))


def test_linalg_error_is_named_as_torchs_class():
    """GP code that catches a failed Cholesky logs type(error).__name__; torch's class is torch._C._LinAlgError."""
    def caught(lib):
        with pytest.raises(lib.linalg.LinAlgError) as error:
            lib.linalg.cholesky(-lib.eye(2))
        return type(error.value).__name__, type(error.value).__module__, str(error.value)

    assert caught(retrograd) == caught(torch)


@pytest.mark.parametrize("call", [lambda lib, K: lib.cholesky(K),
                                  lambda lib, K: lib.triangular_solve(lib.ones(2, 1), K, upper=False),
                                  lambda lib, K: lib.qr(K, some=False)],
                         ids=["cholesky", "triangular_solve", "qr"])
def test_deprecated_factorisations_warn_as_torch_at_the_callers_line(call):
    """Old GP tutorials still call torch.cholesky and torch.triangular_solve; torch warns once, at the user's line."""
    def warned(lib):
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call(lib, lib.eye(2))
        finally:
            lib.set_warn_always(False)
        return [(str(w.message), w.filename) for w in caught]

    assert warned(retrograd) == warned(torch)
    assert warned(torch)[0][1] == __file__


@pytest.mark.parametrize("call", [lambda lib, A: lib.matrix_rank(A), lambda lib, A: lib.solve(A, A),
                                  lambda lib, A: lib.lstsq(A, A), lambda lib, A: lib.symeig(A, eigenvectors=True),
                                  lambda lib, A: lib.eig(A), lambda lib, A: A.solve(A), lambda lib, A: A.lstsq(A),
                                  lambda lib, A: A.symeig(), lambda lib, A: A.eig(True)],
                         ids=["matrix_rank", "solve", "lstsq", "symeig", "eig", "Tensor.solve", "Tensor.lstsq",
                              "Tensor.symeig", "Tensor.eig"])
def test_functions_removed_in_1_9_raise_torchs_replacement_text(call):
    """Code written for torch 1.8 (torch.solve(B, A), torch.symeig) meets torch's RuntimeError naming the linalg
    call."""
    def raised(lib):
        with pytest.raises(RuntimeError) as error:
            call(lib, lib.eye(3))
        return str(error.value)

    assert raised(retrograd) == raised(torch)


def test_tensor_matrix_rank_is_gone_as_in_torch():
    assert hasattr(retrograd.eye(2), "matrix_rank") == hasattr(torch.eye(2), "matrix_rank") is False


PHASE_LOSSES = {
    "eig_depends_on_phase": lambda lib, x: lib.linalg.eig(x)[1].real.sum(),
    "eig_does_not": lambda lib, x: lib.linalg.eig(x)[1].abs().sum() + lib.linalg.eig(x)[0].real.sum(),
    "svd_depends_on_phase": lambda lib, x: lib.linalg.svd(x)[0].real.sum(),
    "svd_does_not": lambda lib, x: lib.linalg.svd(x)[1].sum() + lib.linalg.svd(x)[0].abs().sum(),
}


def _phase_check(lib, loss, device: str = "cpu") -> str | np.ndarray:
    """The gradient of a complex eig/svd loss, or the error backward raises."""
    data = np.random.default_rng(0).standard_normal((3, 3, 2)) @ np.array([1, 1j])
    x = lib.tensor(data).to(device).requires_grad_()
    try:
        loss(lib, x).backward()
    except RuntimeError as e:
        return str(e)
    return x.grad.cpu().numpy()


@pytest.mark.parametrize("name", PHASE_LOSSES)
def test_complex_phase_checks_match_torch(name):
    """A loss of complex eigen- or singular vectors that depends on their free phase: torch's error; one that does not:
    torch's gradient. On NumPy's arrays and on array_api_strict's behind the seam (the check computes there)."""
    import array_api_strict

    from retrograd import _xp

    expected = _phase_check(torch, PHASE_LOSSES[name])
    with _xp.use("cuda", array_api_strict, [array_api_strict.Device("device1")]):
        found = [_phase_check(retrograd, PHASE_LOSSES[name]), _phase_check(retrograd, PHASE_LOSSES[name], "cuda")]
    assert isinstance(expected, str) == name.endswith("phase")
    for ours in found:
        if isinstance(expected, str):
            assert ours == expected
        else:
            np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


def test_cross_without_dim_and_lu_solve_warn_once_at_the_callers_line_as_torch():
    """Both deprecations are torch's C++ TORCH_WARN_ONCE: once per process, whole words with where torch raised
    them, at the line that called; under set_warn_always on every call."""
    seen = []
    for lib in (torch, retrograd):
        was = lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                crossed = lib.cross(lib.eye(3), lib.ones(3, 3))
                solved = lib.lu_solve(lib.ones(2, 1), *lib.linalg.lu_factor(2 * lib.eye(2)))
        finally:
            lib.set_warn_always(was)
        seen.append(([(w.category, str(w.message), w.filename) for w in caught],
                     crossed.numpy().tolist(), solved.numpy().tolist()))
    assert seen[1] == seen[0]
    assert len(seen[0][0]) == 2 and all(filename == __file__ for _, _, filename in seen[0][0])


LOW_PRECISION_CALLS = {
    "det": lambda L, a: L.linalg.det(a), "slogdet": lambda L, a: L.linalg.slogdet(a),
    "logdet": lambda L, a: L.logdet(a), "inv": lambda L, a: L.linalg.inv(a), "inverse": lambda L, a: L.inverse(a),
    "solve": lambda L, a: L.linalg.solve(a, a), "lu_factor": lambda L, a: L.linalg.lu_factor(a),
    "lu": lambda L, a: L.linalg.lu(a), "qr": lambda L, a: L.linalg.qr(a), "geqrf": lambda L, a: L.geqrf(a),
    "cholesky": lambda L, a: L.linalg.cholesky(a), "eig": lambda L, a: L.linalg.eigvals(a),
    "eigh": lambda L, a: L.linalg.eigh(a), "svd": lambda L, a: L.linalg.svd(a),
    "svdvals": lambda L, a: L.linalg.svdvals(a), "pinv": lambda L, a: L.linalg.pinv(a, hermitian=True),
    "lstsq": lambda L, a: L.linalg.lstsq(a, a), "matrix_norm_nuc": lambda L, a: L.linalg.matrix_norm(a, "nuc"),
    "norm_2": lambda L, a: L.linalg.norm(a, 2), "cond": lambda L, a: L.linalg.cond(a),
    "matrix_power": lambda L, a: L.linalg.matrix_power(a, -2),
    "tensorsolve": lambda L, a: L.linalg.tensorsolve(a, a[0]),
    "solve_triangular": lambda L, a: L.linalg.solve_triangular(a, a, upper=True),
    "householder_product": lambda L, a: L.linalg.householder_product(a, a[:, 0]),
    "ormqr": lambda L, a: L.ormqr(a, a[:, 0], a), "ldl_factor": lambda L, a: L.linalg.ldl_factor(a),
    "cholesky_solve": lambda L, a: L.cholesky_solve(a, a), "cholesky_inverse": lambda L, a: L.cholesky_inverse(a),
    "vander": lambda L, a: L.linalg.vander(a[0]),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", LOW_PRECISION_CALLS)
def test_low_precision_linear_algebra_is_refused_as_torch(name, dtype):
    """A model cast to half that calls into linalg meets torch's words, not NumPy's TypeError (float16) nor a
    float32 answer (bfloat16)."""
    def refused(lib):
        a = (lib.eye(3, dtype=lib.float64) * 2 + 0.1).to(getattr(lib, dtype))
        return failure(lib, lambda _: LOW_PRECISION_CALLS[name](lib, a))

    assert refused(retrograd) == refused(torch)


def test_float16_matrix_exp_is_computed_in_float32_and_rounded():
    """torch's float16 matrix_exp runs its Padé steps in half and overflows (NaN beside A = 0.7 N(0, 1)); retrograd
    computes it in float32 and rounds once, as for bfloat16: checked against float64."""
    a = np.random.default_rng(0).standard_normal((4, 5, 5)) * 0.7
    exact = torch.linalg.matrix_exp(torch.tensor(a))
    half = retrograd.linalg.matrix_exp(retrograd.tensor(a).half())
    assert half.dtype == retrograd.float16
    torch.testing.assert_close(torch.tensor(half.double().numpy()), exact, rtol=2e-3, atol=2e-3)


SINGULAR = {"rank one": [[1.0, 2.0], [2.0, 4.0]], "zeros": [[0.0] * 3] * 3, "one zero pivot": [[1.0, 0.0], [0.0, 0.0]],
            "dependent rows": [[2.0, 1.0, 0.0], [4.0, 2.0, 0.0], [1.0, 1.0, 1.0]]}


@pytest.mark.parametrize("name", SINGULAR)
@pytest.mark.parametrize("function", ["slogdet", "logdet"])
def test_log_determinant_gradient_at_a_singular_matrix_is_not_an_error(name, function):
    """torch solves with the forward's LU there, dividing by its zero pivot: the gradient is not finite, and no
    error is raised. Which entries come out inf, nan or finite is the BLAS's order of operations (undefined, and
    MKL's differs by shape), so only that is compared."""
    grads = []
    for lib in (torch, retrograd):
        A = lib.tensor(SINGULAR[name], dtype=lib.float64, requires_grad=True)
        value = lib.linalg.slogdet(A)[1] if function == "slogdet" else lib.logdet(A)
        value.backward()
        grads.append(A.grad.numpy())
    assert [np.isfinite(grad).all() for grad in grads] == [False, False]


def test_solve_triangular_with_a_zero_on_the_diagonal_divides_by_it():
    """BLAS's substitution divides by the zero (infinities, NaNs from 0/0), where LAPACK's solve would raise."""
    L = [[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [3.0, 1.0, 4.0]]
    results = []
    for lib in (torch, retrograd):
        out = lib.linalg.solve_triangular(lib.tensor(L, dtype=lib.float64),
                                          lib.tensor([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]], dtype=lib.float64),
                                          upper=False)
        results.append(out.numpy())
    np.testing.assert_array_equal(results[0], results[1])
