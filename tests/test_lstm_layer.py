"""nn.LSTM's float32 layers on the CPU as torch's: one MkldnnRnnLayerBackward0 node per layer and direction (Note
[LSTM layer] in retrograd/ops/nn.py), with torch's values, gradients, second derivatives, graph and saved values;
the row itself against finite differences in float64."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd
from retrograd.ops.nn import lstm_layer

CONFIGS = [
    ({}, False, (7, 4, 6)),
    ({"num_layers": 2}, True, (7, 4, 6)),
    ({"bidirectional": True}, True, (5, 3, 6)),
    ({"batch_first": True, "num_layers": 2, "bidirectional": True}, False, (3, 5, 6)),
    ({"bias": False}, True, (4, 2, 6)),
    ({}, True, (6, 6)),  # one unbatched sequence
]


def _run(lib, kwargs: dict, with_state: bool, shape: tuple, create_graph: bool) -> tuple[list, object]:
    """Outputs, first gradients of a weighted sum of (output, h_n, c_n) for the input, every parameter and the
    initial state, and (create_graph) the gradients of the first gradients' squared norm; and the output's node."""
    rng = np.random.default_rng(0)
    model = lib.nn.LSTM(6, 5, **kwargs)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.uniform(-0.4, 0.4, tuple(p.shape)).astype(np.float32)))
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    layers = (2 if kwargs.get("bidirectional") else 1) * kwargs.get("num_layers", 1)
    batch = () if len(shape) == 2 else (shape[0] if kwargs.get("batch_first") else shape[1],)
    state = tuple(lib.tensor(rng.standard_normal((layers, *batch, 5)).astype(np.float32), requires_grad=True)
                  for _ in range(2)) if with_state else ()
    y, (h, c) = model(x, state) if with_state else model(x)
    loss = sum((t * lib.tensor(rng.standard_normal(tuple(t.shape)).astype(np.float32))).sum() for t in (y, h, c))
    leaves = [x, *model.parameters(), *state]
    grads = lib.autograd.grad(loss, leaves, create_graph=create_graph)
    values = [y, h, c, *grads]
    if create_graph:
        values += lib.autograd.grad(sum((g * g).sum() for g in grads), leaves)
    return [v.detach().numpy() for v in values], y.grad_fn


def _names(node, depth: int = 3) -> list:
    """The node's name and, depth levels down, its inputs' (None for an input without one)."""
    if node is None:
        return [None]
    if depth == 0:
        return [node.name()]
    return [node.name(), [_names(fn, depth - 1) for fn, _ in node.next_functions]]


@pytest.mark.parametrize("kwargs, with_state, shape", CONFIGS)
@pytest.mark.parametrize("create_graph", [False, True])
def test_lstm_layers_are_torchs(kwargs, with_state, shape, create_graph):
    """Outputs, gradients (and second derivatives) within float32 rounding of torch's, and torch's graph."""
    ours, our_node = _run(retrograd, kwargs, with_state, shape, create_graph)
    theirs, their_node = _run(torch, kwargs, with_state, shape, create_graph)
    assert _names(our_node) == _names(their_node)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5 * max(1.0, float(np.abs(b).max())))


def test_the_layer_node_saves_what_its_backward_reads_under_torchs_names():
    """The node's saved values are torch's by name and shape, for what its backward reads (Note [LSTM layer]);
    the workspace is bytes, as oneDNN's."""
    def node(lib):
        lib.manual_seed(0)
        model = lib.nn.LSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True)
        transpose = model(lib.randn(2, 5, 4, requires_grad=True))[0].grad_fn
        return transpose.next_functions[0][0].next_functions[0][0]  # through the directions' cat

    ours, theirs = node(retrograd), node(torch)
    assert ours.name() == theirs.name() == "MkldnnRnnLayerBackward0"
    tensors = {"_saved_input", "_saved_weight0", "_saved_weight1", "_saved_weight2", "_saved_weight3", "_saved_hx_",
               "_saved_cx_", "_saved_result0"}
    assert {a for a in dir(ours) if a.startswith("_saved_")} == tensors | {"_saved_result3", "_saved_reverse"}
    for name in tensors:
        assert tuple(getattr(ours, name).shape) == tuple(getattr(theirs, name).shape), name
    assert ours._saved_reverse == theirs._saved_reverse
    assert (ours._saved_result3.dtype, theirs._saved_result3.dtype) == (retrograd.uint8, torch.uint8)
    assert ours._saved_result3.dim() == 1


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_the_layer_row_passes_gradcheck_twice(reverse, bias):
    """The row in float64 against finite differences: its NumPy backward (gradcheck) and its differentiable
    backward (gradgradcheck), every input and each output's gradient."""
    rng = np.random.default_rng(1)

    def leaf(*shape):
        return retrograd.tensor(rng.uniform(-0.5, 0.5, shape), requires_grad=True)

    inputs = (leaf(4, 2, 3), leaf(12, 3), leaf(12, 3), *((leaf(12), leaf(12)) if bias else ()), leaf(2, 3),
              leaf(2, 3))

    def layer(x, w_ih, w_hh, *rest):
        b_ih, b_hh = rest[:2] if bias else (None, None)
        return lstm_layer(x, w_ih, w_hh, b_ih, b_hh, *rest[-2:], reverse, 1, False, False, True)

    assert retrograd.autograd.gradcheck(layer, inputs)
    assert retrograd.autograd.gradgradcheck(layer, inputs)


def test_forward_mode_is_refused_as_torch_refuses_it():
    def error(lib):
        model = lib.nn.LSTM(4, 3)
        x = lib.randn(3, 2, 4)
        with lib.autograd.forward_ad.dual_level(), pytest.raises(NotImplementedError) as caught:
            model(lib.autograd.forward_ad.make_dual(x, lib.randn(3, 2, 4)))
        return str(caught.value)

    assert error(retrograd) == error(torch)


@pytest.mark.parametrize("kwargs", [{"dtype": "float64"}, {"proj_size": 2}])
def test_other_layers_keep_torchs_per_step_graph(kwargs):
    """float64 and projected layers are not oneDNN's in torch either: the output's node is the steps' stack."""
    def name(lib):
        options = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        model = lib.nn.LSTM(4, 3, **options)
        x = lib.randn(3, 2, 4, dtype=options.get("dtype", lib.float32), requires_grad=True)
        return model(x)[0].grad_fn.name()

    assert name(retrograd) == name(torch) == "StackBackward0"


def test_inference_runs_the_row_without_a_node():
    model = retrograd.nn.LSTM(4, 3, num_layers=2)
    x = retrograd.randn(5, 2, 4)
    recorded = model(x)[0]
    with retrograd.no_grad():
        out = model(x)[0]
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), recorded.detach().numpy())


def test_projections_warn_once_as_torch(monkeypatch):
    """A projected float32 LSTM on the CPU is not oneDNN's: torch's warning, once per process (torch's read in a
    fresh process, ours with the once-per-process record emptied)."""
    code = ("import warnings, torch\nwarnings.simplefilter('always')\nm = torch.nn.LSTM(4, 3, proj_size=2)\n"
            "with warnings.catch_warnings(record=True) as caught:\n    warnings.simplefilter('always')\n"
            "    m(torch.randn(3, 2, 4)); m(torch.randn(3, 2, 4))\nprint(repr([str(w.message) for w in caught]))")
    theirs = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    monkeypatch.setattr(retrograd._warn, "_warned", set())
    model = retrograd.nn.LSTM(4, 3, proj_size=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(retrograd.randn(3, 2, 4))
        model(retrograd.randn(3, 2, 4))
    assert repr([str(w.message) for w in caught]) == theirs.strip()


def test_with_onednn_disabled_the_steps_are_recorded_as_torchs(monkeypatch):
    """torch.backends.mkldnn.enabled off: torch records the steps' ops, and retrograd its steps' nodes."""
    monkeypatch.setattr(retrograd.backends.mkldnn, "enabled", False)
    x = retrograd.randn(3, 2, 4, requires_grad=True)
    assert retrograd.nn.LSTM(4, 3)(x)[0].grad_fn.name() == "StackBackward0"
    with torch.backends.mkldnn.flags(enabled=False):
        assert torch.nn.LSTM(4, 3)(torch.randn(3, 2, 4, requires_grad=True))[0].grad_fn.name() == "StackBackward0"
