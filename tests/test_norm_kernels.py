"""Batch and layer norm's backward in both of their paths (ops/nn.py, Note [unrecorded batch-norm backward] and
Note [unrecorded layer-norm backward]): the NumPy kernel used when nothing records the gradients, and the
differentiable formulas used under create_graph, each against torch, with double backward through the second."""

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)


def batch_norm_grads(lib, x, w, b, g, create_graph):
    """Gradients of (x, w, b) of a training-mode batch norm for the cotangent g, and, under create_graph, the
    gradients of <grad of x, g> for x and w (double backward; b does not reach it)."""
    x = lib.tensor(x, requires_grad=True)
    w = None if w is None else lib.tensor(w, requires_grad=True)
    b = None if b is None else lib.tensor(b, requires_grad=True)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    y = lib.nn.functional.batch_norm(x, None, None, w, b, training=True)
    grads = lib.autograd.grad(y, inputs, lib.tensor(g), create_graph=create_graph)
    out = [t.detach().numpy() for t in grads]
    if create_graph:
        out += [t.detach().numpy() for t in lib.autograd.grad((grads[0] * lib.tensor(g)).sum(), inputs[:2])]
    return out


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 4, 5, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("create_graph", [False, True])
def test_batch_norm_gradients_match_torch(shape, dtype, affine, create_graph):
    """Off-centre inputs (mean 3, as after a ReLU) so that taking the mean out first matters in float32."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w, b = ((rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)) if affine
            else (None, None))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    ours, theirs = (batch_norm_grads(lib, x, w, b, g, create_graph) for lib in (retrograd, torch))
    assert len(ours) == len(theirs)
    for a, e in zip(ours, theirs):
        assert a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def layer_norm_grads(lib, x, shape, w, b, g, create_graph):
    """Gradients of (x, w, b) of a layer norm over the trailing `shape` for the cotangent g, and, under
    create_graph, the gradients of <grad of x, g> for x and w."""
    x = lib.tensor(x, requires_grad=True)
    w = None if w is None else lib.tensor(w, requires_grad=True)
    b = None if b is None else lib.tensor(b, requires_grad=True)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    y = lib.nn.functional.layer_norm(x, shape, w, b)
    grads = lib.autograd.grad(y, inputs, lib.tensor(g), create_graph=create_graph)
    out = [t.detach().numpy() for t in grads]
    if create_graph:
        out += [t.detach().numpy() for t in lib.autograd.grad((grads[0] * lib.tensor(g)).sum(), inputs[:2])]
    return out


@pytest.mark.parametrize("shape, normalized", [((6, 3), 1), ((4, 3, 5), 1), ((3, 4, 5, 2), 2), ((7,), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_layer_norm_gradients_match_torch(shape, normalized, dtype, affine, create_graph):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    trailing = shape[len(shape) - normalized:]
    w = None if affine == "none" else rng.standard_normal(trailing).astype(dtype)
    b = rng.standard_normal(trailing).astype(dtype) if affine == "both" else None
    tol = 1e-4 if dtype == np.float32 else 1e-10
    ours, theirs = (layer_norm_grads(lib, x, trailing, w, b, g, create_graph) for lib in (retrograd, torch))
    assert len(ours) == len(theirs)
    for a, e in zip(ours, theirs):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def off_centre(rng, shape, shift):
    """float32 input whose channels sit far from zero relative to their spread (a conv bias's or a ReLU's output),
    where float32 sums drift and batch norm multiplies the drift by 1/std (Note [float32 batch-norm statistics])."""
    return (rng.standard_normal(shape) * 0.5 + shift).astype(np.float32)


@pytest.mark.parametrize("shape", [(16, 8, 64), (5, 7, 9, 11), (3, 4, 2, 3, 5)])
@pytest.mark.parametrize("shift", [0.0, 3.0, 30.0])
def test_float32_batch_norm_statistics_are_torchs_bits(shape, shift):
    """save_mean, save_invstd and the updated running statistics are the same float32 numbers as torch's: its CPU
    kernel accumulates in double and rounds each statistic once."""
    rng = np.random.default_rng(4)
    x = off_centre(rng, shape, shift)
    running = rng.standard_normal(shape[1]).astype(np.float32), rng.uniform(0.5, 2, shape[1]).astype(np.float32)
    results = {}
    for lib in LIBS:
        stats = lib.native_batch_norm(lib.tensor(x), None, None, None, None, True, 0.1, 1e-5)[1:]
        mean, var = (lib.tensor(r) for r in running)
        for momentum in (0.1, 0.3):
            lib.nn.functional.batch_norm(lib.tensor(x), mean, var, training=True, momentum=momentum)
        results[lib] = [t.numpy() for t in (*stats, mean, var)]
    for ours, theirs in zip(results[retrograd], results[torch]):
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("shape", [(16, 8, 64), (5, 7, 9, 11)])
@pytest.mark.parametrize("shift", [3.0, 30.0])
def test_float32_batch_norm_is_within_torchs_rounding(shape, shift):
    """With the statistics torch's, the output differs from torch's only by its unfused multiply-add, and the
    gradients by the order of the sums within each (sample, channel) plane."""
    rng = np.random.default_rng(5)
    x = off_centre(rng, shape, shift)
    w, b = rng.standard_normal(shape[1]).astype(np.float32), rng.standard_normal(shape[1]).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    results = {}
    for lib in LIBS:
        inputs = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        out, _, invstd = lib.native_batch_norm(*inputs, None, None, True, 0.1, 1e-5)
        out.backward(lib.tensor(g))
        alpha = (invstd * inputs[1]).detach().numpy()
        results[lib] = [out.detach().numpy(), *(t.grad.numpy() for t in inputs)], alpha
    (ours, alpha), (theirs, _) = results[retrograd], results[torch]
    channels = (1, -1) + (1,) * (len(shape) - 2)
    product = (x * alpha.reshape(channels)).astype(np.float32)
    # two roundings against torch's one: half an ulp of the product, and one of the output
    assert np.all(np.abs(ours[0] - theirs[0]) <= np.spacing(np.abs(product)) / 2 + np.spacing(np.abs(theirs[0])))
    for a, e in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, e, rtol=0, atol=4 * np.spacing(np.float32(np.abs(e).max())))


def test_native_batch_norm_refuses_an_empty_batch_in_training():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match=r"^input tensor must have at least one element, but got input_sizes = "
                                               r"\[0, 3, 4\]$"):
            lib.native_batch_norm(lib.empty(0, 3, 4), None, None, None, None, True, 0.1, 1e-5)
        out = lib.native_batch_norm(lib.empty(0, 3, 4), None, None, lib.zeros(3), lib.ones(3), False, 0.1, 1e-5)
        assert [tuple(t.shape) for t in out] == [(0, 3, 4), (0,), (0,)]
