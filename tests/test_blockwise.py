"""Elementwise formulas that run by cache-sized blocks on large NumPy arrays (ops/arrays.py, Note [blockwise
passes]): the erf family, GELU, and tanh's, sigmoid's and GELU's backward give what they give on pieces under
the blocks' threshold (which run whole), and torch's values; max and min along narrow rows (Note [narrow rows'
extremes]) give NumPy's values."""

import numpy as np
import pytest
import torch

import retrograd

SIZE = 3 * 65536 + 1000  # three blocks and part of a fourth
PIECE = 50_000  # under the threshold: each piece runs whole
BACKWARDS = {"tanh_backward": "tanh", "sigmoid_backward": "sigmoid", "gelu_backward": "gelu"}


def _run(lib, name, x, g):
    """name's values at x, or (for a backward) the gradient of its forward at x for the output gradient g."""
    t = lib.tensor(x, requires_grad=True)
    if name == "gelu":
        return lib.nn.functional.gelu(t).detach().numpy()
    if name not in BACKWARDS:
        return getattr(lib, name)(t).detach().numpy()
    forward = lib.nn.functional.gelu if BACKWARDS[name] == "gelu" else getattr(lib, BACKWARDS[name])
    (grad,) = lib.autograd.grad(forward(t), t, lib.tensor(g))
    return grad.numpy()


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "gelu", *BACKWARDS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blockwise_formulas_give_what_whole_pieces_give_and_torchs_values(name, dtype):
    rng = np.random.default_rng(7)
    x = rng.uniform(-0.999, 0.999, SIZE) if name == "erfinv" else rng.standard_normal(SIZE) * 3
    x, g = x.astype(dtype), rng.standard_normal(SIZE).astype(dtype)
    whole = _run(retrograd, name, x, g)
    pieces = np.concatenate([_run(retrograd, name, x[i:i + PIECE], g[i:i + PIECE]) for i in range(0, SIZE, PIECE)])
    # the same ufunc calls on the same elements: the same bits where NumPy's SIMD loops treat every lane alike (this
    # machine's); within an ulp on any, as the erf family's gathered pieces put elements in other lanes
    np.testing.assert_array_max_ulp(whole, pieces, maxulp=1)
    tolerance = {"rtol": 2e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    if name == "gelu" and dtype == np.float32:  # left of -3, 1 + tanh (torch's 1 + erf) cancels: both are off by
        tolerance["atol"] = 3e-6  # up to 1e-6 there (Note [float32 normal cdf])
    np.testing.assert_allclose(whole, _run(torch, name, x, g), **tolerance)


@pytest.mark.parametrize("width", [2, 10, 47, 48, 49, 63, 64])  # transposed columns up to 48, halving (odd too) to 64
@pytest.mark.parametrize("rows", [3, 64, 20_000])  # one block, several
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_narrow_rows_extremes_are_numpys(width, rows, dtype):
    """Max and min along a narrow last axis (Note [narrow rows' extremes]) compare the same elements as NumPy's
    reduction: its values exactly, NaN and signed zeros included, in every layout of keepdims."""
    from retrograd.ops import arrays as A

    rng = np.random.default_rng(width * rows)
    x = (rng.standard_normal((rows, width)) * 5).astype(dtype)
    if dtype in (np.float32, np.float64):
        x[rng.random(x.shape) < 0.01] = np.nan
        x[rng.random(x.shape) < 0.05] = -0.0
    x = x.reshape(rows, 1, width)
    for name, ufunc in (("max", np.maximum), ("min", np.minimum)):
        for keepdims in (True, False):
            ours, numpys = A.reduce(np, name, x, -1, keepdims), ufunc.reduce(x, axis=-1, keepdims=keepdims)
            assert ours.shape == numpys.shape and ours.dtype == numpys.dtype
            assert ours.tobytes() == numpys.tobytes()


@pytest.mark.parametrize("shape", [(4096, 10), (64, 3, 48), (16, 4, 64, 63)])
def test_softmaxes_of_narrow_rows_match_torch(shape):
    """softmax and log_softmax over narrow rows (their maxima by Note [narrow rows' extremes]): torch's values and
    gradients, a row of -inf giving NaN as torch's."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x[1] = -np.inf
    found = []
    for lib in (torch, retrograd):
        t = lib.tensor(x, requires_grad=True)
        outs = [lib.nn.functional.softmax(t, -1), lib.nn.functional.log_softmax(t, -1)]
        (grad,) = lib.autograd.grad(outs[0][2:].sum() + (outs[1][2:] * outs[0][2:]).sum(), t)
        found.append([o.detach().numpy() for o in outs] + [grad.numpy()])
    for ours, theirs in zip(found[1], found[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
