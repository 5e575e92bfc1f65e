"""Row kernels at sizes that take their NumPy fast paths, against torch: softmax and log_softmax by blocks of rows
(ops/nn.py, Note [softmax rows in blocks], Note [softmax without the shift]) with their backward and double
backward, the 2-norm as one dot per row (ops/reduction.py, _rows_squared_norms), and the LSTM layer's fused cell
(Note [fused LSTM cell])."""

import math
import warnings

import numpy as np
import pytest
import torch

import retrograd


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 5), (300, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_a_row_of_minus_infinity_is_nan_without_a_warning(name, shape, dtype):
    """A row every entry of which is -inf (attention masked from every key) is NaN, as torch's, and NumPy's
    invalid-value warning for -inf - -inf does not reach the user (torch gives none)."""
    x = np.zeros(shape, dtype=dtype)
    x[..., 1, :] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(retrograd, name)(retrograd.tensor(x), -1).numpy()
    np.testing.assert_array_equal(ours, getattr(torch, name)(torch.tensor(x), -1).numpy())
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((300, 1000), 1), ((8, 4, 64, 64), -1), ((8, 4, 64, 64), 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_by_blocks_matches_torch(name, shape, dim, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x.reshape(-1, shape[-1])[::7, 1:5] = -np.inf  # masked entries, as causal attention has
    g = rng.standard_normal(shape).astype(dtype)
    results = []
    for lib in (retrograd, torch):
        t = lib.tensor(x, requires_grad=True)
        y = getattr(lib, name)(t, dim)
        gx, = lib.autograd.grad(y, t, lib.tensor(g), create_graph=True)
        gg, = lib.autograd.grad((gx * gx).sum(), t)
        plain, = lib.autograd.grad(getattr(lib, name)(t, dim), t, lib.tensor(g))
        results.append([y.detach().numpy(), gx.detach().numpy(), gg.numpy(), plain.numpy()])
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("offset", [0.0, -95.0, "near the limit"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_without_the_shift_matches_torch(offset, dtype):
    """Note [softmax without the shift]: blocks of narrow rows taken as exp(x) / sum, and the rows it takes again
    with the shift: all -inf (NaN), a NaN, sums under 1 (every exp subnormal or 0 at -95), a +inf in the block
    (the whole block shifted); torch's values to its own rounding, relative where they are normal, no warning."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 4, 64, 64)) * 3
    i, j = np.triu_indices(64, 1)
    x[..., i, j] = -np.inf  # causal attention's masked scores
    if offset == "near the limit":  # the largest element just under the bound, in each block
        x += math.log(np.finfo(dtype).max) - math.log(64) - 1.5 - np.max(x)
    else:
        x += offset
    rows = x.reshape(-1, 64)
    rows[3] = -np.inf
    rows[4000, 7] = np.nan
    rows[6000:6010] -= 200  # sums under 1 in a block that is otherwise unshifted
    rows[8000, 5] = np.inf
    x = x.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = retrograd.softmax(retrograd.tensor(x), -1).numpy()
    theirs = torch.softmax(torch.tensor(x), -1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5 if dtype == np.float32 else 1e-13,
                               atol=np.finfo(dtype).tiny)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 40), (0, 3)])
@pytest.mark.parametrize("dim", [None, -1, 0, "all"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_norm_matches_torch(shape, dim, keepdim, dtype):
    if shape == () and dim is not None:
        return
    dim = tuple(range(len(shape))) if dim == "all" else dim
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    ours, theirs = (lib.linalg.vector_norm(lib.tensor(x), 2, dim, keepdim) for lib in (retrograd, torch))
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("width", [1, 3, 48, 49, 64, 65, 511, 512, 513])
def test_rows_maxima_are_numpys(width):
    """Each row's maximum as the softmaxes take it (Note [narrow rows' extremes]): transposed columns, halving or
    NumPy's reduction by width, NaN and a row of -inf included."""
    from retrograd.ops import arrays as A

    x = np.random.default_rng(2).standard_normal((40, width)).astype(np.float32)
    x[3, width // 2] = np.nan
    x[4] = -np.inf
    assert np.array_equal(A.reduce(np, "max", x, -1, True), x.max(axis=1, keepdims=True), equal_nan=True)


def _lstm_cell_by_ops(lib, gates, c):
    """The LSTM step the fused row stands for, written with torch's ops."""
    i, f, g, o = gates.chunk(4, -1)
    c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
    return lib.sigmoid(o) * lib.tanh(c), c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("create_graph", [False, True])  # the NumPy kernel; the differentiable formula
def test_fused_lstm_cell_is_the_ops_it_fuses(dtype, create_graph):
    """Note [fused LSTM cell]: h and c' are the bits of the ops it fuses; its gradients, first order (either path)
    and second, are those of torch's ops."""
    from retrograd.ops.nn import fused_lstm_cell
    rng = np.random.default_rng(5)
    gates, c = (rng.standard_normal(shape).astype(dtype) * 2 for shape in ((6, 4 * 7), (6, 7)))
    grad_h, grad_c = (rng.standard_normal((6, 7)).astype(dtype) for _ in range(2))
    fused = fused_lstm_cell(retrograd.tensor(gates), retrograd.tensor(c))
    by_ops = _lstm_cell_by_ops(retrograd, retrograd.tensor(gates), retrograd.tensor(c))
    for ours, theirs in zip(fused, by_ops):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    def grads(lib, cell):
        z, cx = lib.tensor(gates, requires_grad=True), lib.tensor(c, requires_grad=True)
        h, c_next = cell(z, cx)
        first = lib.autograd.grad((h, c_next), (z, cx), (lib.tensor(grad_h), lib.tensor(grad_c)),
                                  create_graph=create_graph)
        if not create_graph:
            return [t.numpy() for t in first]
        second = lib.autograd.grad((first[0] * first[0]).sum() + (first[1] * lib.tensor(grad_c)).sum(), (z, cx))
        return [t.detach().numpy() for t in (*first, *second)]

    tol = 1e-5 if dtype == np.float32 else 1e-12
    theirs_all = grads(torch, lambda z, cx: _lstm_cell_by_ops(torch, z, cx))
    for ours, theirs in zip(grads(retrograd, fused_lstm_cell), theirs_all):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_fused_lstm_cell_passes_gradcheck_and_forward_mode():
    """Finite differences in float64 for its gradients, their gradients and its forward-mode tangents."""
    from retrograd.ops.nn import fused_lstm_cell
    rng = np.random.default_rng(6)
    gates = retrograd.tensor(rng.standard_normal((3, 8)), requires_grad=True)
    c = retrograd.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    assert retrograd.autograd.gradcheck(fused_lstm_cell, (gates, c), check_forward_ad=True)
    assert retrograd.autograd.gradgradcheck(fused_lstm_cell, (gates, c))


def test_fused_lstm_cell_under_vmap_is_each_example_stacked():
    """vmap batches the fused cell by its leading dims (the gates are split along the last), gates and cell state
    batched or not, and its vjp too."""
    from retrograd.ops.nn import fused_lstm_cell
    rng = np.random.default_rng(7)
    gates, c = retrograd.tensor(rng.standard_normal((5, 3, 8))), retrograd.tensor(rng.standard_normal((5, 3, 2)))
    for in_dims, c_arg in (((0, 0), c), ((0, None), c[0])):
        batched = retrograd.func.vmap(fused_lstm_cell, in_dims=in_dims)(gates, c_arg)
        for k in range(2):
            looped = retrograd.stack([fused_lstm_cell(gates[b], c_arg[b] if in_dims[1] == 0 else c_arg)[k]
                                      for b in range(5)])
            np.testing.assert_allclose(batched[k].numpy(), looped.numpy(), rtol=1e-15, atol=1e-15)

    def first_cell_gradient(z, cx):
        _, vjp = retrograd.func.vjp(fused_lstm_cell, z, cx)
        return vjp((retrograd.ones_like(cx), retrograd.ones_like(cx)))[0]

    batched = retrograd.func.vmap(first_cell_gradient)(gates, c)
    looped = retrograd.stack([first_cell_gradient(gates[b], c[b]) for b in range(5)])
    np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-15, atol=1e-15)
