"""torch.lobpcg against torch 2.13: eigenpairs (eigenvectors up to sign), gradients, double backward, the
grad_fn name, the tracker and the errors (gradgradcheck runs in PyTorch's own test_lobpcg, tests/compat)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd


def symmetric(batch: tuple, m: int, seed: int) -> np.ndarray:
    """A symmetric matrix (or batch) with well-separated eigenvalues 1, 2, ..., m in a random basis."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((*batch, m, m)))[0]
    return (Q * np.arange(1.0, m + 1)[..., None, :]) @ np.swapaxes(Q, -1, -2)


def solve(lib, A, k: int, **options):
    """lobpcg from the identity's first k columns, eigenvectors signed so their largest entry is positive."""
    X = lib.eye(A.shape[-1], k, dtype=A.dtype).expand(*A.shape[:-1], k)
    E, U = lib.lobpcg(A, k=k, X=X, **options)
    _, index = U.abs().max(-2, keepdim=True)
    return E, U * U.gather(-2, index).sign()


CASES = [((), 9, 1), ((), 9, 2), ((2,), 6, 2), ((2, 2), 7, 1), ((), 12, 3)]


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("batch,m,k", CASES)
def test_eigenpairs_and_gradient_match_torch(batch, m, k, largest, method):
    A = symmetric(batch, m, seed=m + k)
    results = []
    for lib in (torch, retrograd):
        A_in = lib.tensor(A, requires_grad=True)
        E, U = solve(lib, A_in, k, largest=largest, method=method)
        (E.sum() + (U * lib.tensor(np.linspace(-1, 1, m))[:, None]).sum()).backward()
        results.append((E.detach().numpy(), U.detach().numpy(), A_in.grad.numpy(), type(E.grad_fn).__name__))
    for expected, got in zip(*results):
        if isinstance(expected, str):
            assert got == expected
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_double_backward_matches_torch():
    A, V = symmetric((), 9, seed=1), np.random.default_rng(5).standard_normal((9, 9))
    results = []
    for lib in (torch, retrograd):
        A_in = lib.tensor(A, requires_grad=True)
        E, U = solve(lib, A_in, 2)
        (grad,) = lib.autograd.grad((E * E).sum() + U.sum(), A_in, create_graph=True)
        results.append(lib.autograd.grad((grad * lib.tensor(V)).sum(), A_in)[0].numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_gradcheck():
    A = retrograd.tensor(symmetric((), 6, seed=1), requires_grad=True)
    assert retrograd.autograd.gradcheck(lambda A: solve(retrograd, A, 2), (A,), fast_mode=True)


def test_generalized_problem_and_random_start_match_torch():
    A, B = symmetric((), 10, seed=2), symmetric((), 10, seed=3)
    E = {lib.__name__: lib.lobpcg(lib.tensor(A), k=2, B=lib.tensor(B), largest=False)[0].numpy()
         for lib in (torch, retrograd)}
    np.testing.assert_allclose(E["retrograd"], E["torch"], rtol=1e-6)


def test_tracker_sees_each_step_and_can_stop():
    steps = []

    def tracker(worker):
        steps.append((worker.ivars["istep"], tuple(worker.X.shape)))
        worker.bvars["force_stop"] = worker.ivars["istep"] == 2

    retrograd.lobpcg(retrograd.tensor(symmetric((), 9, seed=4)), k=2, tracker=tracker)
    assert steps == [(1, (9, 2)), (2, (9, 2))]


def failure(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("call", [
    lambda lib: lib.lobpcg(lib.tensor(symmetric((), 5, seed=0)), k=2),
    lambda lib: lib.lobpcg(lib.ones(3, 4), k=1),
    lambda lib: lib.lobpcg(lib.tensor(symmetric((), 9, seed=0), requires_grad=True), k=1,
                           B=lib.eye(9, dtype=lib.float64))[0].sum().backward(),
])
def test_errors_match_torch(call):
    assert failure(lambda: call(retrograd)) == failure(lambda: call(torch))
