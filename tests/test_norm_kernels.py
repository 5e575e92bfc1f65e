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
