"""The ops added for PyTorch's OpInfo sweep (tests/test_op_db.py) beyond what its samples reach: argument errors
(types and texts), dtypes and edge cases, each call run in torch 2.13 and in retrograd on the same values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd

X = np.random.default_rng(0).normal(size=(3, 4))
I = np.array([12, -18, 7, 0])
N = np.array([1, 2, 2, 5])
F = np.array([1.5, -2.0, np.inf, -np.inf, np.nan])

# each a call on the library `L` with the arrays above as tensors made by T(array[, dtype name])
CALLS = [
    # numeric
    "L.isposinf(T(F))", "L.isneginf(T(I))", "L.isposinf(T(F).to(L.complex64))", "L.isreal(T(F) * 1j)",
    "L.isreal(T(I))", "L.heaviside(T(F), T(F))", "L.heaviside(T(F), T(1.0, 'float32'))",
    "L.heaviside(T(I), T(1))", "L.heaviside(T(F).to(L.complex64), T(F).to(L.complex64))", "L.heaviside(T(F), 1.0)",
    "L.gcd(T(I), T(8))", "L.gcd(T(F), T(F))", "L.gcd(T(I), 3)", "L.lcm(T(I), T([8, 5, 0, 3]))",
    "L.gcd(T([True]), T([False]))",
    "L.bitwise_left_shift(T(I), T([1, 70, -1, 3]))", "L.bitwise_right_shift(T(I), T([1, 70, -1, 3]))",
    "L.bitwise_left_shift(T(I), 2)", "L.bitwise_left_shift(3, T(I))", "L.bitwise_left_shift(T(F), 1)",
    "T([1, 2], 'uint8') << 9", "T([-128], 'int8') << 1", "T([5]) << 1.5", "T([200], 'uint8') >> 9", "2 << T(I)",
    "T([-7], 'int8') >> T([1])", "L.bitwise_left_shift(T([True]), T([True]))",
    "L.frexp(T(F))", "L.frexp(T(I))", "L.frexp(T(F) * 1j)", "L.frexp(T([1.0, 0.0, -3.0], 'float16'))",
    "L.ldexp(T(F), T([1]))", "L.ldexp(T(I), T(I))", "L.ldexp(T([1 + 0j, 2 + 1j]), T(2))", "L.ldexp(T(F), 2)",
    "L.nextafter(T(F), T(0.0))", "L.nextafter(T(I), T(I))", "L.nextafter(T(F), 1.0)",
    "L.nextafter(T(F, 'float32'), T(F, 'float32').flip(0))",
    "L.geqrf(T(X).requires_grad_())[0].sum().backward()", "L.heaviside(T(F).requires_grad_(), T(F)).sum().backward()",
    "(lambda x: L.autograd.grad(L.frexp(x).mantissa.sum(), x))(T(X * 9).requires_grad_())",
    "(lambda x, e: L.autograd.grad(L.ldexp(x, e).sum(), (x, e)))(T(X).requires_grad_(), T(X).requires_grad_())",
    "(lambda x, y: L.autograd.grad(L.nextafter(x, y).sum(), (x, y)))(T(X).requires_grad_(), T(X[0]).requires_grad_())",
    # statistics
    "L.bincount(T(N))", "L.bincount(T(N), T([0.5, 1, 1, 2], 'float32'))", "L.bincount(T(N), T([1, 1, 1, 2]))",
    "L.bincount(T(N), minlength=8)", "L.bincount(T([-1]))", "L.bincount(T(X))", "L.bincount(T(N).view(2, 2))",
    "L.bincount(T(N), T([1.0, 2.0]))", "L.bincount(T([], 'int64'))", "L.bincount(T(N), minlength=-1)",
    "L.bincount(T(N, 'int32'))", "L.bincount(T([True, False]))", "L.bincount(T(N), T([0.5, 1, 1, 2], 'float16'))",
    "L.histc(T(X), bins=4)", "L.histc(T(I))", "L.histc(T(X), bins=0)", "L.histc(T(X), 3, min=2, max=1)",
    "L.histc(T(X, 'float32'), 3)", "L.histc(T([np.nan]))", "L.histc(T([1.0, 1.0]), bins=2)",
    "L.histc(T(X), 5, min=-0.5, max=0.5)", "L.histc(T([], 'float64'))",
    "L.histogram(T(X), 3)", "L.histogram(T(I), 3)", "L.histogram(T(X), T([0.0, 1.0, 3.0]), density=True)",
    "L.histogram(T(X), 3, range=(1.0, 0.0))", "L.histogram(T(X), 3, weight=T(np.ones((3, 3))))",
    "L.histogram(T(X), T([[0.0, 1.0]], 'float64'))", "L.histogram(T(X), 0)", "L.histogram(T(X), 3, range=(0.0, 0.0))",
    "L.histogram(T(X), 4, weight=T(np.abs(X)), density=True)", "L.histogram(T([], 'float32'), 4)",
    "L.histogramdd(T(np.zeros((0, 2)), 'float32'), [2, 2])",
    "L.histogramdd(T(X), 3)", "L.histogramdd(T(X), [2, 3, 4, 5])", "L.histogramdd(T(X), [2, 3])",
    "L.histogramdd(T(X).view(-1), 3)", "L.histogramdd(T(X), [T([-1.0, 0.0, 1.0])] * 4, density=True)",
    "L.quantile(T(X), 1.5)", "L.quantile(T(X), T([0.5], 'float32'))", "L.quantile(T(I), 0.5)",
    "L.quantile(T(X), T([[0.5]]))", "L.quantile(T(X), T([1.5]))", "L.quantile(T(X), 0.5, interpolation='foo')",
    "L.quantile(T([], 'float64'), 0.5)", "L.quantile(T(X), 0.5, dim=5)", "L.nanquantile(T(X), 2.0)",
    "L.quantile(T(X), T([0.2, 0.5, 1.0]), dim=0, keepdim=True, interpolation='nearest')",
    "L.nanquantile(T(np.where(X > 0.5, np.nan, X)), T([0.25, 0.75], 'float64'), dim=1, interpolation='midpoint')",
    "L.quantile(T(np.where(X > 0.5, np.nan, X)), 0.3, dim=1, interpolation='lower')",
    "L.nanquantile(T([np.nan, np.nan]), 0.3, interpolation='higher')",
    "L.cov(T(np.zeros((2, 2, 2))))", "L.cov(T([True]))", "L.cov(T(X), fweights=T([1.0, 1, 1, 1]))",
    "L.cov(T(X), fweights=T([1, 1, 1]))", "L.cov(T(X), fweights=T([-1, 1, 1, 1]))",
    "L.cov(T(X), aweights=T([1, 1, 1, 1]))", "L.cov(T(X), aweights=T([0.0, 0, 0, 0]))",
    "L.cov(T(X), correction=4)", "L.cov(T([1, 2, 4]))", "L.cov(T(X), fweights=T(np.ones((1, 4), 'int64')))",
    "L.cov(T(X), correction=0, fweights=T([1, 2, 1, 3]), aweights=T([0.5, 1.0, 2.0, 0.1]))",
    "L.corrcoef(T(np.zeros((2, 2, 2))))", "L.corrcoef(T([1, 2, 4]))", "L.corrcoef(T(X) * (1 + 1j))",
    "L.dist(T(X), T(X), 0)", "L.dist(T(X), T(I))", "L.dist(T(I), T(I))", "L.dist(T(X), T(X[0]), float('inf'))",
    "L.renorm(T(X), 2, 0, 1)", "L.renorm(T(X), -1, 0, 1)", "L.renorm(T(X), 2, 0, -1)", "L.renorm(T(N), 2, 0, 1)",
    "L.renorm(T(1.0), 2, 0, 1)", "T(X).renorm_(1, 1, 0.5)",
    "L.logcumsumexp(T(I), 0)", "L.logcumsumexp(T(2.0), 0)", "L.logcumsumexp(T([-np.inf, 0.0, np.inf]), 0)",
    "L.logcumsumexp(T(X) * (1 - 2j), 1)",
    "L.gradient(T(X), edge_order=3)", "L.gradient(T(np.ones((1, 2))), edge_order=1)",
    "L.gradient(T(X), spacing=[1.0, 2.0, 3.0])", "L.gradient(T(I))", "L.gradient(T(X), dim=1, spacing=2)",
    "L.gradient(T(X), spacing=(T(np.arange(3.0)),))", "L.gradient(T(X), dim=(0, 0))",
    "L.gradient(T(X), spacing=[T(np.arange(3)), T(np.arange(4.0) ** 2)], edge_order=2)",
    # linear algebra
    "L.cholesky(T([[1.0, 2.0], [2.0, 1.0]]))", "L.cholesky(T([[4, 2], [2, 3]]))", "L.cholesky(T(np.ones(3)))",
    "L.cholesky(T(np.ones((2, 3))))", "L.cholesky(T([[4.0, 2.0], [2.0, 3.0]]), upper=True)",
    "T([[4.0, 2.0], [2.0, 3.0]]).cholesky()", "L.geqrf(T(np.ones(3)))", "L.geqrf(T([[4, 2], [2, 3]]))",
    "L.geqrf(T(X))", "L.geqrf(T(X.T))", "L.geqrf(T(X) * (1 - 1j))", "L.geqrf(T(np.zeros((2, 0, 3))))",
    "L.qr(T(np.ones(3)))", "L.qr(T([[4, 2], [2, 3]]))", "L.qr(T(X), some=False)", "T(X.T).qr()",
    "L.pca_lowrank(T(np.ones((3, 2))), q=5)", "L.pca_lowrank(T(np.ones((3, 2))), niter=-1)",
    "L.linalg.householder_product(T(X.T), T(np.zeros(0)))", "L.linalg.ldl_factor(T(np.zeros((0, 0))))",
    # spectral
    "L.stft(T(np.ones(20)), 8)", "L.stft(T(np.ones(20)), 30, return_complex=True)",
    "L.stft(T(np.ones((2, 2, 20))), 8, return_complex=True)",
    "L.stft(T(np.ones(20)), 8, hop_length=0, return_complex=True)",
    "L.stft(T(np.ones(20)), 8, win_length=9, return_complex=True)",
    "L.stft(T(np.ones(20)), 8, window=T(np.ones(7)), return_complex=True)",
    "L.stft(T(np.ones(20)), 8, center=True, align_to_window=True, return_complex=True)",
    "L.stft(T(X.ravel()), 8, win_length=4, center=False, align_to_window=True, return_complex=True)",
    "L.stft(T(X.ravel()), 8, win_length=5, window=T(np.arange(5.0)), hop_length=3, return_complex=True)",
    "L.stft(T(X.ravel()) * 1j, 6, normalized=True, pad_mode='constant')",
    "L.stft(T(X), 3, return_complex=False, onesided=False)",
    "L.istft(T(np.ones((5, 3))), 8)", "L.istft(T(np.ones((5, 3))) * 1j, 8)",
    "L.istft(T(np.ones((5, 3))) * 1j, 8, window=T(np.zeros(8)))",
    "L.istft(T(np.ones((4, 3))) * 1j, 6, return_complex=True)",
    "L.istft(T(np.ones((6, 3))) * (1 + 1j), 6, onesided=False, length=40)",
    "L.istft(L.stft(T(X.ravel()), 4, window=HANN, return_complex=True), 4, "
    "window=HANN)",
    "L.istft(L.stft(T(X), 4, hop_length=1, return_complex=True, onesided=False), 4, hop_length=1, return_complex=True, "
    "center=False, length=3)",
    # random draws
    "T(X).cauchy_(sigma=0)", "T(N).cauchy_()", "T(X).geometric_(0)", "T(X).geometric_(1.5)",
    "T(X).log_normal_(std=0)", "T(N).log_normal_()", "T(X).to(L.complex64).cauchy_()",
]

RANDOM = ("cauchy_", "geometric_", "log_normal_")


def run(lib, call: str):
    def make(values, dtype=None):
        out = lib.tensor(values)
        return out.to(getattr(lib, dtype)) if dtype else out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            names = {"L": lib, "T": make, "np": np, "X": X, "I": I, "N": N, "F": F,
                     "HANN": lib.signal.windows.hann(4, sym=False, dtype=lib.float64)}
            return eval(call, names)  # noqa: S307
        except Exception as error:  # noqa: BLE001 - the error itself is compared
            return error


def tensors(out) -> list:
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in tensors(o)]
    return [out]


@pytest.mark.parametrize("call", CALLS)
def test_call_matches_torch(call):
    theirs, ours = run(torch, call), run(retrograd, call)
    if isinstance(theirs, Exception):
        # torch.linalg.LinAlgError is torch._C._LinAlgError
        assert type(ours).__name__.lstrip("_") == type(theirs).__name__.lstrip("_"), f"{ours!r} vs {theirs!r}"
        assert str(ours) == str(theirs), f"{ours!r} vs {theirs!r}"
        return
    assert not isinstance(ours, Exception), f"raised {ours!r}"
    assert type(ours).__name__ == type(theirs).__name__
    for a, b in zip(tensors(ours), tensors(theirs), strict=True):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        if not any(name in call for name in RANDOM):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-12, equal_nan=True)
