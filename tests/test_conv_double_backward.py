"""A convolution's gradients under create_graph against torch (ops/conv.py, the `convolution_backward` row):
the three gradients are the outputs of one ConvolutionBackwardBackward0 node with edges (grad_output, input,
weight), and their own gradients (torch's _convolution_double_backward) have torch's values."""

import numpy as np
import pytest
import torch

import retrograd

CASES = [  # (functional, input shape, weight shape, keywords)
    ("conv1d", (2, 4, 9), (6, 4, 3), {"padding": 1}),
    ("conv1d", (2, 4, 11), (6, 2, 3), {"stride": 2, "dilation": 2, "groups": 2}),
    ("conv2d", (2, 3, 6, 5), (4, 3, 3, 3), {}),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2}),
    ("conv2d", (1, 6, 5, 5), (6, 1, 3, 3), {"padding": 1, "groups": 6}),
    ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), {"padding": 1}),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), {"stride": 2, "output_padding": 1}),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 3, 3, 3), {"padding": 1}),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 2, 2, 3), {"stride": 2, "padding": (0, 1), "output_padding": (1, 0),
                                                     "dilation": (1, 2), "groups": 2}),
    ("conv_transpose3d", (1, 2, 3, 3, 2), (2, 3, 2, 2, 2), {"stride": 2}),
]
IDS = [f"{name}-{i}" for i, (name, *_) in enumerate(CASES)]


def first_gradients(lib, case, bias: bool, go_grad: bool, wanted: str):
    """(leaves, grad_output, gradients) of the convolution for the inputs named in `wanted`, create_graph=True."""
    name, x_shape, w_shape, kwargs = case
    rng = np.random.default_rng(0)
    transposed = name.startswith("conv_transpose")
    out_channels = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    x, w, b = (lib.tensor(rng.standard_normal(shape), requires_grad=True)
               for shape in (x_shape, w_shape, (out_channels,)))
    y = getattr(lib.nn.functional, name)(x, w, b if bias else None, **kwargs)
    go = lib.tensor(rng.standard_normal(tuple(y.shape)), requires_grad=go_grad)
    leaves = {"x": x, "w": w, "b": b}
    grads = lib.autograd.grad(y, [leaves[k] for k in wanted], go, create_graph=True)
    return leaves, go, grads


def structure(t):
    """What torch shows of a gradient's node: its name, output_nr, requires_grad, and each edge's node name."""
    edges = tuple(None if f is None else (type(f).__name__, n) for f, n in t.grad_fn.next_functions)
    return type(t.grad_fn).__name__, t.output_nr, t.requires_grad, edges


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("go_grad", [True, False])
def test_one_node_for_the_three_gradients(case, bias, go_grad):
    """Every gradient is an output of one ConvolutionBackwardBackward0 node whose edges are torch's."""
    wanted = "xwb" if bias else "xw"
    ours = first_gradients(retrograd, case, bias, go_grad, wanted)[2]
    theirs = first_gradients(torch, case, bias, go_grad, wanted)[2]
    assert [structure(t) for t in ours] == [structure(t) for t in theirs]
    assert all(t.grad_fn is ours[0].grad_fn for t in ours)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("wanted", ["x", "w", "b", "xb"])
def test_some_gradients(wanted):
    """A backward asking for some of the gradients still gives outputs of the three-output node, with their
    output_nr, and the edges of every input that requires grad."""
    case = CASES[3]
    ours = first_gradients(retrograd, case, True, False, wanted)[2]
    theirs = first_gradients(torch, case, True, False, wanted)[2]
    assert [structure(t) for t in ours] == [structure(t) for t in theirs]


def second_derivatives(lib, case, projected: str):
    """Gradients in (grad_output, input, weight, bias) of a random projection of the gradients named in
    `projected`."""
    leaves, go, grads = first_gradients(lib, case, True, True, "xwb")
    rng = np.random.default_rng(1)
    loss = sum((g * lib.tensor(rng.standard_normal(tuple(g.shape)))).sum() for g, k in zip(grads, "xwb")
               if k in projected)
    return lib.autograd.grad(loss, (go, leaves["x"], leaves["w"], leaves["b"]), allow_unused=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_second_derivatives_match_torch(case):
    """The gradients of a projection of all three gradients are torch's (the bias gradient does not depend on the
    bias: None in both)."""
    for a, e in zip(second_derivatives(retrograd, case, "xwb"), second_derivatives(torch, case, "xwb")):
        assert (a is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", [CASES[3], CASES[8]], ids=[IDS[3], IDS[8]])
@pytest.mark.parametrize("projected", ["x", "w", "b", "xb", "wb"])
def test_undefined_second_derivatives_are_none(case, projected):
    """A gradient the projection does not reach is None, as in torch (the input gradient does not depend on the
    input), and the others have torch's values."""
    for a, e in zip(second_derivatives(retrograd, case, projected), second_derivatives(torch, case, projected)):
        assert (a is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradgradcheck(case):
    """Finite differences agree with the double backward in float64, bias included."""
    name, x_shape, w_shape, kwargs = case
    rng = np.random.default_rng(2)
    transposed = name.startswith("conv_transpose")
    out_channels = w_shape[1] * kwargs.get("groups", 1) if transposed else w_shape[0]
    inputs = tuple(retrograd.tensor(rng.standard_normal(shape), requires_grad=True)
                   for shape in (x_shape, w_shape, (out_channels,)))
    fn = getattr(retrograd.nn.functional, name)
    assert retrograd.autograd.gradgradcheck(lambda x, w, b: fn(x, w, b, **kwargs), inputs)
