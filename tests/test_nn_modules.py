"""nn modules against torch: forward values, input and parameter gradients, buffers and reprs.

Each case builds the same module in both libraries, copies torch's initial state into retrograd
(state_dict through NumPy) and runs both on the same inputs; then the Module machinery itself
(registration, state_dict, hooks, modes, containers, init, utils) is checked against torch.
"""

import copy
import importlib
import math
import warnings

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)


class Const:
    """An input that does not require grad (indices, masks, targets)."""

    def __init__(self, array):
        self.array = np.asarray(array)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def to_lib(lib, value):
    if isinstance(value, Const):
        return lib.tensor(value.array)
    if isinstance(value, np.ndarray):
        return lib.tensor(value, requires_grad=True)
    if isinstance(value, tuple):
        return tuple(to_lib(lib, v) for v in value)
    return value


def tensors_in(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_in(v)]
    return [value] if value is not None and hasattr(value, "shape") else []


def copy_state(t_module, r_module):
    r_module.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_module.state_dict().items()})


def run_case(name, args=(), kwargs=None, inputs=(), call=None, train=True, atol=1e-5, rtol=1e-4):
    """Forward and backward of nn.<name>(*args, **kwargs) on `inputs` in both libraries, compared."""
    kwargs = kwargs or {}
    call = call or {}
    torch.manual_seed(0)
    t_mod = getattr(torch.nn, name)(*args, **{k: to_lib(torch, v) for k, v in kwargs.items()})
    r_mod = getattr(retrograd.nn, name)(*args, **{k: to_lib(retrograd, v) for k, v in kwargs.items()})
    assert repr(r_mod) == repr(t_mod)
    assert [n for n, _ in r_mod.named_parameters()] == [n for n, _ in t_mod.named_parameters()]
    assert list(r_mod.state_dict()) == list(t_mod.state_dict())
    copy_state(t_mod, r_mod)
    t_mod.train(train)
    r_mod.train(train)
    t_in = [to_lib(torch, x) for x in inputs]
    r_in = [to_lib(retrograd, x) for x in inputs]
    t_call = {k: to_lib(torch, v) for k, v in call.items()}
    r_call = {k: to_lib(retrograd, v) for k, v in call.items()}
    t_out = tensors_in(t_mod(*t_in, **t_call))
    r_out = tensors_in(r_mod(*r_in, **r_call))
    assert len(r_out) == len(t_out)
    for r, t in zip(r_out, t_out):
        assert tuple(r.shape) == tuple(t.shape)
        assert r.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol)
    for (n, tb), (_, rb) in zip(t_mod.named_buffers(), r_mod.named_buffers()):
        np.testing.assert_allclose(rb.numpy(), tb.numpy(), atol=atol, rtol=rtol, err_msg=n)
    pairs = [(r, t) for r, t in zip(r_out, t_out) if t.requires_grad]
    if not pairs:
        return
    cotangents = [randn(*t.shape) for _, t in pairs]
    sum((t * torch.tensor(c)).sum() for (_, t), c in zip(pairs, cotangents)).backward()
    sum((r * retrograd.tensor(c)).sum() for (r, _), c in zip(pairs, cotangents)).backward()
    leaves = [(r, t) for r, t in zip(tensors_in(r_in) + tensors_in(list(r_call.values())),
                                     tensors_in(t_in) + tensors_in(list(t_call.values()))) if t.requires_grad]
    leaves += list(zip(r_mod.parameters(), t_mod.parameters()))
    for r, t in leaves:
        if t.grad is None:
            assert r.grad is None or not r.grad.any()
            continue
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=atol, rtol=rtol)


def case(name, *args, inputs=(), call=None, train=True, atol=1e-5, id=None, **kwargs):
    return pytest.param(name, args, kwargs, inputs, call, train, atol, id=id or name)


CASES = [
    # ---- linear ----
    case("Linear", 5, 3, inputs=[randn(4, 5)]),
    case("Linear", 5, 3, bias=False, inputs=[randn(2, 3, 5)], id="Linear-nobias-3d"),
    case("Linear", 5, 3, inputs=[randn(5)], id="Linear-1d"),
    case("Bilinear", 3, 4, 2, inputs=[randn(5, 3), randn(5, 4)]),
    case("Identity", 7, unused=1, inputs=[randn(2, 3)]),
    case("Flatten", inputs=[randn(2, 3, 4)]),
    case("Flatten", 0, 1, inputs=[randn(2, 3, 4)], id="Flatten-0-1"),
    case("Unflatten", 1, (2, 3), inputs=[randn(4, 6)]),
    # ---- convolution ----
    case("Conv1d", 2, 4, 3, stride=2, padding=1, inputs=[randn(2, 2, 9)]),
    case("Conv1d", 4, 4, 3, groups=2, dilation=2, padding="same", padding_mode="reflect", inputs=[randn(2, 4, 10)],
         id="Conv1d-same-reflect"),
    case("Conv2d", 2, 3, 3, inputs=[randn(2, 2, 7, 7)]),
    case("Conv2d", 2, 4, (3, 2), stride=(2, 1), padding=(1, 0), groups=2, bias=False, inputs=[randn(2, 2, 7, 6)],
         id="Conv2d-groups"),
    case("Conv2d", 1, 2, 3, padding=1, padding_mode="circular", inputs=[randn(2, 1, 5, 5)], id="Conv2d-circular"),
    case("Conv2d", 1, 2, 3, padding=2, dilation=2, padding_mode="replicate", inputs=[randn(1, 1, 6, 6)],
         id="Conv2d-replicate"),
    case("Conv2d", 2, 2, 3, padding="valid", inputs=[randn(2, 5, 5)], id="Conv2d-unbatched"),
    case("ConvTranspose1d", 2, 3, 3, stride=2, inputs=[randn(2, 2, 5)]),
    case("ConvTranspose2d", 2, 3, 3, stride=2, padding=1, output_padding=1, inputs=[randn(2, 2, 4, 4)]),
    case("ConvTranspose2d", 4, 2, 3, stride=2, groups=2, dilation=2, inputs=[randn(1, 4, 3, 3)],
         call={"output_size": [10, 10]}, id="ConvTranspose2d-output_size"),
    # ---- pooling ----
    case("MaxPool1d", 2, inputs=[randn(2, 3, 8)]),
    case("MaxPool2d", 2, inputs=[randn(2, 3, 6, 6)]),
    case("MaxPool2d", 3, stride=2, padding=1, ceil_mode=True, inputs=[randn(1, 2, 7, 7)], id="MaxPool2d-ceil"),
    case("MaxPool2d", 2, return_indices=True, inputs=[randn(1, 2, 4, 4)], id="MaxPool2d-indices"),
    case("AvgPool1d", 3, 2, 1, inputs=[randn(2, 3, 8)]),
    case("AvgPool2d", 2, inputs=[randn(2, 3, 6, 6)]),
    case("AvgPool2d", 3, stride=2, padding=1, count_include_pad=False, inputs=[randn(1, 2, 7, 7)],
         id="AvgPool2d-exclude-pad"),
    case("AdaptiveAvgPool1d", 3, inputs=[randn(2, 3, 8)]),
    case("AdaptiveAvgPool2d", (2, 3), inputs=[randn(2, 3, 7, 8)]),
    case("AdaptiveAvgPool2d", 1, inputs=[randn(2, 3, 5, 5)], id="AdaptiveAvgPool2d-global"),
    case("AdaptiveMaxPool2d", 2, inputs=[randn(2, 3, 6, 6)]),
    # ---- dropout (deterministic settings; statistics are tested below) ----
    case("Dropout", 0.5, inputs=[randn(4, 5)], train=False, id="Dropout-eval"),
    case("Dropout", 0.0, inputs=[randn(4, 5)], id="Dropout-p0"),
    case("Dropout2d", 0.3, inputs=[randn(2, 3, 4, 4)], train=False, id="Dropout2d-eval"),
    # ---- normalisation ----
    case("BatchNorm1d", 3, inputs=[randn(6, 3)]),
    case("BatchNorm1d", 3, inputs=[randn(4, 3, 5)], id="BatchNorm1d-3d"),
    case("BatchNorm1d", 3, inputs=[randn(4, 3)], train=False, id="BatchNorm1d-eval"),
    case("BatchNorm2d", 3, inputs=[randn(4, 3, 5, 5)]),
    case("BatchNorm2d", 3, momentum=None, inputs=[randn(4, 3, 2, 2)], id="BatchNorm2d-cumulative"),
    case("BatchNorm2d", 3, affine=False, inputs=[randn(2, 3, 4, 4)], id="BatchNorm2d-no-affine"),
    case("BatchNorm2d", 3, track_running_stats=False, inputs=[randn(2, 3, 4, 4)], train=False,
         id="BatchNorm2d-no-stats"),
    case("InstanceNorm1d", 3, inputs=[randn(2, 3, 5)]),
    case("InstanceNorm1d", 3, inputs=[randn(3, 5)], id="InstanceNorm1d-unbatched"),
    case("InstanceNorm2d", 3, affine=True, track_running_stats=True, inputs=[randn(2, 3, 4, 4)],
         id="InstanceNorm2d-affine-stats"),
    case("InstanceNorm2d", 3, affine=True, track_running_stats=True, inputs=[randn(2, 3, 4, 4)], train=False,
         id="InstanceNorm2d-eval"),
    case("InstanceNorm2d", 2, inputs=[randn(1, 1, 1, 2)], id="InstanceNorm2d-other-channels"),
    case("InstanceNorm3d", 2, momentum=None, track_running_stats=True, inputs=[randn(2, 2, 2, 3, 2)],
         id="InstanceNorm3d-cumulative"),
    case("LayerNorm", 5, inputs=[randn(3, 4, 5)]),
    case("LayerNorm", (3, 4), elementwise_affine=False, inputs=[randn(2, 3, 4)], id="LayerNorm-no-affine"),
    case("LayerNorm", 4, bias=False, inputs=[randn(2, 4)], id="LayerNorm-no-bias"),
    case("GroupNorm", 2, 4, inputs=[randn(3, 4, 5)]),
    case("GroupNorm", 1, 4, affine=False, inputs=[randn(2, 4, 3, 3)], id="GroupNorm-no-affine"),
    # ---- embedding ----
    case("Embedding", 10, 3, inputs=[Const([[1, 2, 4, 5], [4, 3, 2, 9]])]),
    case("Embedding", 10, 3, padding_idx=0, inputs=[Const([[0, 2, 0, 5]])], id="Embedding-padding"),
    # ---- recurrent ----
    case("RNN", 3, 4, inputs=[randn(5, 2, 3)], atol=1e-5),
    case("RNN", 3, 4, 2, nonlinearity="relu", batch_first=True, bidirectional=True,
         inputs=[randn(2, 5, 3), randn(4, 2, 4)], id="RNN-relu-bi-2layer"),
    case("LSTM", 3, 4, 2, inputs=[randn(5, 2, 3), (randn(2, 2, 4), randn(2, 2, 4))]),
    case("LSTM", 3, 4, proj_size=2, bidirectional=True, inputs=[randn(5, 2, 3)], id="LSTM-proj-bi"),
    case("LSTM", 3, 4, inputs=[randn(5, 3)], id="LSTM-unbatched"),
    case("GRU", 3, 4, 2, bidirectional=True, bias=False, inputs=[randn(5, 2, 3)]),
    case("GRU", 3, 4, batch_first=True, inputs=[randn(2, 5, 3), randn(1, 2, 4)], id="GRU-batch-first-h0"),
    case("RNNCell", 3, 4, inputs=[randn(2, 3), randn(2, 4)]),
    case("RNNCell", 3, 4, nonlinearity="relu", bias=False, inputs=[randn(3)], id="RNNCell-relu-unbatched"),
    case("LSTMCell", 3, 4, inputs=[randn(2, 3), (randn(2, 4), randn(2, 4))]),
    case("GRUCell", 3, 4, inputs=[randn(2, 3)]),
    # ---- attention ----
    case("MultiheadAttention", 4, 2, inputs=[randn(3, 2, 4), randn(5, 2, 4), randn(5, 2, 4)]),
    case("MultiheadAttention", 4, 2, batch_first=True, inputs=[randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4)],
         call={"key_padding_mask": Const([[False, False, True, False, True], [False] * 5]),
               "average_attn_weights": False}, id="MultiheadAttention-padding-mask"),
    case("MultiheadAttention", 4, 1, kdim=3, vdim=5, inputs=[randn(3, 2, 4), randn(4, 2, 3), randn(4, 2, 5)],
         call={"attn_mask": randn(3, 4)}, id="MultiheadAttention-kdim-float-mask"),
    case("MultiheadAttention", 4, 2, add_bias_kv=True, add_zero_attn=True,
         inputs=[randn(3, 4), randn(3, 4), randn(3, 4)], call={"attn_mask": Const(np.triu(np.ones((3, 3)), 1) > 0)},
         id="MultiheadAttention-bias-kv-unbatched"),
    case("MultiheadAttention", 4, 2, bias=False, inputs=[randn(3, 2, 4), randn(3, 2, 4), randn(3, 2, 4)],
         call={"need_weights": False}, id="MultiheadAttention-no-weights"),
    # ---- activations ----
    *[case(n, *a, inputs=[randn(3, 4)], id=f"{n}{a}") for n, a in [
        ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.5,)), ("CELU", (1.5,)), ("SELU", ()),
        ("SiLU", ()), ("Mish", ()), ("Hardsigmoid", ()), ("Hardswish", ()), ("Hardtanh", (-0.5, 0.8)),
        ("Threshold", (0.1, 20.0)), ("Softplus", (2, 5)), ("Softsign", ()), ("Tanhshrink", ()), ("Sigmoid", ()),
        ("Tanh", ()), ("LogSigmoid", ()), ("GLU", ()), ("Softmax", (1,)), ("LogSoftmax", (0,)), ("Softmin", (1,)),
        ("Hardshrink", (0.3,)), ("Softshrink", (0.3,)), ("GELU", ()), ("GELU", ("tanh",)), ("PReLU", ()),
    ]],
    case("PReLU", 3, inputs=[randn(2, 3, 4)], id="PReLU-channels"),
    case("RReLU", 0.1, 0.3, inputs=[randn(3, 4)], train=False, id="RReLU-eval"),
    case("RReLU", 0.2, 0.2, inputs=[randn(3, 4)], id="RReLU-train-one-slope"),
    case("Softmax2d", inputs=[randn(2, 3, 4, 5)]),
    # ---- losses ----
    case("L1Loss", inputs=[randn(3, 4), randn(3, 4)]),
    case("MSELoss", reduction="sum", inputs=[randn(3, 4), randn(3, 4)]),
    case("CrossEntropyLoss", inputs=[randn(5, 4), Const([0, 3, 1, 1, 2])]),
    case("CrossEntropyLoss", weight=Const(np.float32([1.0, 2.0, 0.5, 1.0])), label_smoothing=0.1, ignore_index=1,
         inputs=[randn(5, 4), Const([0, 3, 1, 1, 2])], id="CrossEntropyLoss-weight-smoothing"),
    case("CrossEntropyLoss", reduction="none", inputs=[randn(2, 4, 3), Const([[0, 3, 1], [1, 1, 2]])],
         id="CrossEntropyLoss-spatial"),
    case("NLLLoss", inputs=[randn(5, 4), Const([0, 3, 1, 1, 2])]),
    case("BCELoss", inputs=[rng.uniform(0.05, 0.95, (3, 4)).astype(np.float32),
                            Const(rng.uniform(0, 1, (3, 4)).astype(np.float32))]),
    case("BCEWithLogitsLoss", pos_weight=Const(np.float32([1.0, 2.0, 0.5, 3.0])),
         inputs=[randn(3, 4), Const(rng.uniform(0, 1, (3, 4)).astype(np.float32))]),
    case("HuberLoss", delta=0.5, inputs=[randn(3, 4), randn(3, 4)]),
    case("SmoothL1Loss", beta=0.5, inputs=[randn(3, 4), randn(3, 4)]),
    case("KLDivLoss", reduction="batchmean", log_target=True, inputs=[randn(3, 4), randn(3, 4)]),
    case("SoftMarginLoss", inputs=[randn(3, 4), Const(np.sign(randn(3, 4)))]),
    case("MarginRankingLoss", 0.2, inputs=[randn(5), randn(5), Const(np.sign(randn(5)))]),
    case("HingeEmbeddingLoss", 0.5, inputs=[randn(3, 4), Const(np.sign(randn(3, 4)))]),
    case("CosineEmbeddingLoss", 0.1, inputs=[randn(3, 4), randn(3, 4), Const(np.sign(randn(3)))]),
    case("PoissonNLLLoss", inputs=[randn(3, 4), Const(rng.uniform(0, 3, (3, 4)).astype(np.float32))]),
    case("GaussianNLLLoss", inputs=[randn(3, 4), randn(3, 4), Const(rng.uniform(0.5, 2, (3, 4)).astype(np.float32))]),
    case("TripletMarginLoss", margin=0.5, inputs=[randn(3, 4), randn(3, 4), randn(3, 4)]),
    case("MultiMarginLoss", inputs=[randn(3, 4), Const([0, 3, 1])]),
    case("MultiLabelSoftMarginLoss", inputs=[randn(3, 4), Const((randn(3, 4) > 0).astype(np.float32))]),
]


@pytest.mark.parametrize("name,args,kwargs,inputs,call,train,atol", CASES)
def test_module_matches_torch(name, args, kwargs, inputs, call, train, atol):
    run_case(name, args, kwargs, inputs, call, train, atol)


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "SiLU", "Mish", "Hardsigmoid",
                                  "Hardswish", "Hardtanh", "RReLU"])
def test_in_place_activation_repr_matches_torch(name):
    """MobileNetV3's nn.Hardswish(inplace=True) prints as Hardswish() in torch (no extra_repr), ReLU(inplace=True)
    says so."""
    assert repr(getattr(retrograd.nn, name)(inplace=True)) == repr(getattr(torch.nn, name)(inplace=True))


def test_sequential_cnn_matches_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Dropout(0.0), nn.Linear(36, 10), nn.LogSoftmax(1))

    torch.manual_seed(0)
    t_model, r_model = build(torch), build(retrograd)
    assert repr(r_model) == repr(t_model)
    copy_state(t_model, r_model)
    x = randn(5, 1, 6, 6)
    t_out, r_out = t_model(torch.tensor(x)), r_model(retrograd.tensor(x))
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), atol=1e-5)
    t_out.sum().backward()
    r_out.sum().backward()
    for (n, t), (_, r) in zip(t_model.named_parameters(), r_model.named_parameters()):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=1e-5, err_msg=n)


def test_inplace_activations_in_a_network_match_torch():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2), nn.Dropout(0.0, inplace=True),
                             nn.ELU(inplace=True))

    torch.manual_seed(0)
    t_model, r_model = build(torch), build(retrograd)
    copy_state(t_model, r_model)
    x = randn(5, 3)
    t_out, r_out = t_model(torch.tensor(x)), r_model(retrograd.tensor(x))
    assert r_out.grad_fn.name() == t_out.grad_fn.name()
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), atol=1e-6)
    t_out.sum().backward()
    r_out.sum().backward()
    for t, r in zip(t_model.parameters(), r_model.parameters()):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=1e-6)


# --------------------------------------------------------------------------------------------
# The Module machinery
# --------------------------------------------------------------------------------------------

def composite(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Linear(2, 1, bias=False)})
            self.rnn = nn.LSTM(2, 3)
            self.extra = nn.ParameterList([nn.Parameter(lib.ones(2)), nn.Parameter(lib.zeros(1, 2))])
            self.scale = nn.Parameter(lib.ones(1))
            self.register_buffer("steps", lib.zeros((), dtype=lib.int64))
            self.register_buffer("scratch", lib.zeros(3), persistent=False)
            self.shared = self.heads["a"]

        def forward(self, x):
            return self.heads["a"](self.features(x).mean((2, 3))) * self.scale

    return Net()


def test_registration_order_and_state_dict_match_torch():
    t, r = composite(torch), composite(retrograd)
    assert [n for n, _ in r.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in r.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in r.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in r.named_children()] == [n for n, _ in t.named_children()]
    assert list(r.state_dict()) == list(t.state_dict())
    assert [n for n, _ in r.named_parameters(remove_duplicate=False)] == \
           [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in r.named_parameters(prefix="m", recurse=False)] == \
           [n for n, _ in t.named_parameters(prefix="m", recurse=False)]
    assert repr(r) == repr(t)
    state = r.state_dict()
    assert not state["scale"].requires_grad and r.state_dict(keep_vars=True)["scale"] is r.scale
    assert type(state).__name__ == "OrderedDict"


def test_state_dict_round_trip_and_load_results():
    t, r = composite(torch), composite(retrograd)
    copy_state(t, r)
    for (n, tp), (_, rp) in zip(t.state_dict().items(), r.state_dict().items()):
        np.testing.assert_array_equal(rp.numpy(), tp.numpy(), err_msg=n)
    fresh = composite(retrograd)
    result = fresh.load_state_dict(r.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    for (n, a), (_, b) in zip(fresh.state_dict().items(), r.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)


def load_errors(lib, state_dict, **kwargs):
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
    try:
        return repr(model.load_state_dict(state_dict, **kwargs))
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize("entries,kwargs", [
    ({"0.weight": (3, 3), "x": (1,)}, {}),
    ({"0.weight": (3, 2), "0.bias": (3,), "1.weight": (3,), "1.bias": (3,), "1.running_mean": (3,),
      "1.running_var": (3,)}, {}),
    ({"0.weight": (3, 2), "y": (2,)}, {"strict": False}),
    ({"0.weight": (2, 2)}, {"strict": False}),
])
def test_load_state_dict_reports_like_torch(entries, kwargs):
    expected = load_errors(torch, {k: torch.zeros(s) for k, s in entries.items()}, **kwargs)
    assert load_errors(retrograd, {k: retrograd.zeros(s) for k, s in entries.items()}, **kwargs) == expected


def test_load_state_dict_walks_modules_as_torch():
    """torch recurses through _modules: each child's pre-hooks see a dict of its own entries, post-hooks run after
    the children, unexpected keys come per module (root first), _load_from_state_dict is told strict=True even under
    strict=False, and a module registered twice loads under each name (the last entry wins)."""
    def walk(lib):
        nn = lib.nn
        seen = []
        net = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Linear(1, 1)))
        for name, module in net.named_modules():
            module.register_load_state_dict_pre_hook(
                lambda mod, sd, prefix, md, strict, *lists, name=name: seen.append(("pre", name, sorted(sd), strict)))
            module.register_load_state_dict_post_hook(
                lambda mod, keys, name=name: seen.append(("post", name, list(keys.missing_keys),
                                                          list(keys.unexpected_keys))))
        seen.append(str(net.load_state_dict({"b.x": lib.ones(1), "0.weight": lib.ones(1, 1), "zz": lib.ones(1),
                                             "1.0.q": lib.ones(1), "1.x.y": lib.ones(1)}, strict=False)))
        try:
            net.load_state_dict({"1.extra": lib.ones(1), **net.state_dict(), "0.extra": lib.ones(1),
                                 "root": lib.ones(1)})
        except RuntimeError as e:
            seen.append(str(e))
        shared = nn.Linear(1, 1)
        shared.register_load_state_dict_post_hook(lambda mod, keys: seen.append(len(keys.missing_keys)))
        seq = nn.Sequential(shared, nn.ReLU(), shared)
        seen.append(str(seq.load_state_dict({"0.weight": lib.zeros(1, 1)}, strict=False)))
        seq.load_state_dict({"0.weight": lib.zeros(1, 1), "0.bias": lib.zeros(1), "2.weight": lib.ones(1, 1),
                             "2.bias": lib.ones(1)})
        seen.append(shared.bias.tolist())
        return seen

    assert walk(retrograd) == walk(torch)


def test_load_state_dict_entry_rules_match_torch():
    """A 1-element checkpoint entry loads into a 0-d buffer (0.3-era checkpoints); assign=True keeps a given
    Parameter object, with the module's requires_grad."""
    def load(lib):
        holder = lib.nn.Module()
        holder.register_buffer("scale", lib.tensor(1.0))
        holder.load_state_dict({"scale": lib.tensor([3.0])})
        linear = lib.nn.Linear(1, 1)
        given = lib.nn.Parameter(lib.ones(1, 1), requires_grad=False)
        linear.load_state_dict({"weight": given, "bias": lib.ones(1)}, assign=True)
        return holder.scale.shape, holder.scale.item(), linear.weight is given, linear.weight.requires_grad

    assert load(retrograd) == load(torch)


def test_extra_state_is_saved_and_loaded_as_torchs():
    """A module that defines get_extra_state saves it as '<prefix>_extra_state'; set_extra_state gets it back, and
    strict loading reports the key missing (defined, absent) or unexpected (not defined, present)."""
    def extra(lib):
        nn = lib.nn

        class Counter(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(1, 1)
                self.step = 0

            def get_extra_state(self):
                return {"step": self.step}

            def set_extra_state(self, state):
                self.step = state["step"]

        class SavesOnly(nn.Module):
            def get_extra_state(self):
                return 5

        out = []
        net = nn.Sequential(Counter(), nn.ReLU())
        net[0].step = 7
        state = net.state_dict()
        out += [list(state), state["0._extra_state"]]
        fresh = nn.Sequential(Counter(), nn.ReLU())
        out += [str(fresh.load_state_dict(state)), fresh[0].step]
        without = {k: v for k, v in state.items() if k != "0._extra_state"}
        out.append(str(fresh.load_state_dict(without, strict=False)))
        for model, entries in ((fresh, without), (SavesOnly(), SavesOnly().state_dict()),
                               (nn.Sequential(nn.Linear(1, 1)), {"0._extra_state": 1, "0.weight": lib.ones(1, 1),
                                                                 "0.bias": lib.ones(1)})):
            try:
                model.load_state_dict(entries)
            except RuntimeError as e:
                out.append(str(e))
        for call in (lambda: nn.Module().get_extra_state(), lambda: nn.Module().set_extra_state(1)):
            try:
                call()
            except RuntimeError as e:
                out.append(str(e))
        return out

    assert extra(retrograd) == extra(torch)


def test_load_state_dict_assign_replaces_parameters():
    model = retrograd.nn.Linear(2, 2)
    weight = retrograd.ones(2, 2)
    model.load_state_dict({"weight": weight, "bias": retrograd.zeros(2)}, assign=True)
    assert isinstance(model.weight, retrograd.nn.Parameter) and model.weight.requires_grad
    assert model.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def attribute_errors(lib):
    nn = lib.nn
    out = []
    model = nn.Linear(2, 3)
    for action in (lambda: model.missing,
                   lambda: setattr(model, "weight", lib.zeros(3, 2)),
                   lambda: model.register_buffer("weight", lib.zeros(1)),
                   lambda: model.register_parameter("a.b", None),
                   lambda: model.register_buffer("buf", [1, 2]),
                   lambda: model.add_module("bad", 3),
                   lambda: setattr(nn.Sequential(nn.ReLU()), "0", 3),
                   lambda: nn.Linear(2, 2).to(lib.int64)):
        try:
            action()
            out.append(None)
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    return out


def test_attribute_errors_match_torch():
    assert attribute_errors(retrograd) == attribute_errors(torch)


def test_assignment_moves_between_tables():
    m = retrograd.nn.Module()
    m.a = retrograd.nn.Parameter(retrograd.ones(1))
    m.register_buffer("b", retrograd.ones(1))
    m.b = retrograd.zeros(2)
    assert m._buffers["b"].tolist() == [0.0, 0.0]
    m.c = retrograd.nn.Linear(1, 1)
    m.weight = retrograd.nn.Buffer(retrograd.ones(3), persistent=False)
    assert "weight" in m._buffers and "weight" not in m.state_dict()
    del m.a
    assert "a" not in dict(m.named_parameters())
    m.a = 5
    assert m.a == 5 and "a" in dir(m) and "c" in dir(m)
    m.c = None
    assert list(m.children()) == []


def test_train_eval_requires_grad_and_zero_grad():
    model = composite(retrograd)
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    out = model(retrograd.randn(2, 1, 4, 4))
    out.sum().backward()
    assert model.scale.grad is not None
    model.zero_grad(set_to_none=False)
    assert model.scale.grad is not None and not model.scale.grad.any()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")


def test_to_dtype_converts_floating_state_only():
    model = composite(retrograd)
    model(retrograd.randn(2, 1, 4, 4)).sum().backward()
    weight = model.heads["a"].weight
    assert model.to(retrograd.float64) is model
    assert weight.dtype == retrograd.float64 and model.heads["a"].weight is weight
    assert weight.grad.dtype == retrograd.float64
    assert model.features[1].running_mean.dtype == retrograd.float64
    assert model.steps.dtype == retrograd.int64 and model.features[1].num_batches_tracked.dtype == retrograd.int64
    assert model(retrograd.randn(2, 1, 4, 4, dtype=retrograd.float64)).dtype == retrograd.float64
    model.float()
    assert weight.dtype == retrograd.float32


def test_apply_and_get_submodule():
    model = composite(retrograd)
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Conv2d"
    assert model.get_submodule("heads.a") is model.heads["a"]
    assert model.get_parameter("heads.a.weight") is model.heads["a"].weight
    assert model.get_buffer("features.1.running_mean") is model.features[1].running_mean
    with pytest.raises(AttributeError):
        model.get_submodule("heads.zzz")


def test_set_submodule_swaps_layers_as_torchs():
    """set_submodule (conv-BN folding, pruning): replaces or adds a module under an existing parent; refuses an empty
    target, a non-module, a missing parent, a missing name under strict and a non-module in the way, with torch's
    exception types and messages."""

    def swaps(lib):
        model = composite(lib)
        model.set_submodule("features.1", lib.nn.Identity())
        model.set_submodule("heads.c", lib.nn.Tanh())
        model.set_submodule("extra_head", lib.nn.Linear(2, 2), strict=False)
        refused = []
        for call in (lambda: model.set_submodule("", lib.nn.ReLU()), lambda: model.set_submodule("features.0", 3),
                     lambda: model.set_submodule("nothing.here", lib.nn.ReLU()),
                     lambda: model.set_submodule("features.7", lib.nn.ReLU(), strict=True),
                     lambda: model.set_submodule("scale", lib.nn.ReLU())):
            try:
                call()
            except (ValueError, AttributeError) as error:
                refused.append((type(error).__name__, str(error)))
        return [repr(model.features), repr(model.heads), repr(model.extra_head), refused]

    assert swaps(retrograd) == swaps(torch)


def test_deepcopy_gives_independent_parameters():
    model = retrograd.nn.Sequential(retrograd.nn.Linear(2, 2), retrograd.nn.BatchNorm1d(2))
    clone = copy.deepcopy(model)
    assert all(isinstance(p, retrograd.nn.Parameter) for p in clone.parameters())
    with retrograd.no_grad():
        clone[0].weight.fill_(7.0)
    assert not (model[0].weight == 7.0).any()


def grads_seen_by_hooks(lib, no_input_grad=False):
    torch.manual_seed(0)
    t_model = torch.nn.Linear(3, 2)
    model = lib.nn.Linear(3, 2)
    if lib is retrograd:
        copy_state(t_model, model)
    else:
        model = t_model
    calls = []
    model.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    model.register_forward_hook(lambda m, args, out: out + 1)
    model.register_full_backward_pre_hook(lambda m, grad_out: (grad_out[0] * 3,))
    handle = model.register_full_backward_hook(
        lambda m, grad_in, grad_out: calls.append(([None if g is None else g.numpy().copy() for g in grad_in],
                                                   [g.numpy().copy() for g in grad_out])))
    x = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=not no_input_grad)
    out = model(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out.sum().backward()
    handle.remove()
    model(x).sum().backward()  # removed: no second call
    return (out.detach().numpy(), calls, None if no_input_grad else x.grad.numpy(), model.weight.grad.numpy(),
            [str(w.message)[:40] for w in caught])


@pytest.mark.parametrize("no_input_grad", [False, True])
def test_hooks_match_torch(no_input_grad):
    t = grads_seen_by_hooks(torch, no_input_grad)
    r = grads_seen_by_hooks(retrograd, no_input_grad)
    np.testing.assert_allclose(r[0], t[0], rtol=1e-6)
    assert len(r[1]) == len(t[1]) == 1
    for r_group, t_group in zip(r[1][0], t[1][0]):
        assert len(r_group) == len(t_group)
        for a, b in zip(r_group, t_group):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-6)
    for a, b in zip(r[2:4], t[2:4]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5)
    assert r[4] == t[4]


def test_forward_hooks_with_kwargs_prepend_and_removal():
    model = retrograd.nn.Identity()
    order = []
    h1 = model.register_forward_hook(lambda m, a, o: order.append("first"))
    model.register_forward_hook(lambda m, a, o: order.append("prepended"), prepend=True)
    model.register_forward_pre_hook(lambda m, a, k: ((a[0] + 1,), k), with_kwargs=True)
    model.register_forward_hook(lambda m, a, k, o: o * 10, with_kwargs=True)
    assert model(retrograd.ones(1)).tolist() == [20.0]
    assert order == ["prepended", "first"]
    h1.remove()
    model(retrograd.ones(1))
    assert order == ["prepended", "first", "prepended"]


# --------------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------------

def test_sequential_editing_matches_torch():
    def edits(lib):
        nn = lib.nn
        s = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 3))
        s.append(nn.Tanh())
        s.insert(1, nn.Sigmoid())
        del s[0]
        popped = s.pop(-1)
        s[0] = nn.ReLU6()
        s.extend([nn.Identity()])
        return repr(s), repr(s[1:3]), len(s), type(popped).__name__, repr(s + nn.Sequential(nn.ELU()))

    assert edits(retrograd) == edits(torch)
    from collections import OrderedDict
    named = retrograd.nn.Sequential(OrderedDict([("fc", retrograd.nn.Linear(1, 1)), ("act", retrograd.nn.ReLU())]))
    assert [n for n, _ in named.named_children()] == ["fc", "act"] and named.fc is named[0]


def test_module_list_dict_and_parameter_containers_match_torch():
    def build(lib):
        nn = lib.nn
        ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
        ml.append(nn.ReLU())
        ml.insert(0, nn.Tanh())
        ml += [nn.Sigmoid()]
        del ml[1]
        md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        md["c"] = nn.Linear(2, 2)
        md.pop("b")
        pl = nn.ParameterList([lib.ones(2), nn.Parameter(lib.zeros(3, 1))])
        pl.append(lib.ones(1))
        pd = nn.ParameterDict({"w": lib.ones(2)})
        pd["v"] = nn.Parameter(lib.zeros(1))
        holder = nn.Module()
        holder.ml, holder.md, holder.pl, holder.pd = ml, md, pl, pd
        return (repr(ml), repr(md), len(ml), list(md.keys()), [n for n, _ in holder.named_parameters()],
                [type(p).__name__ for p in pl], len(pd), "v" in pd, repr(pl),
                # one entry stays on the container's line; a dict names the legacy type (torch.DoubleTensor)
                repr(pd), repr(holder), repr(nn.ParameterList([lib.ones(2)])),
                repr(nn.ParameterDict({"a": lib.ones(2, dtype=lib.float64), "b": 3})), repr(nn.ParameterDict({"a": 1})))

    r, t = build(retrograd), build(torch)
    assert r == t


def test_only_module_list_folds_repeated_children_in_its_repr():
    """torch writes '(0-1): 2 x Linear(...)' inside a ModuleList only (without a subclass's extra_repr); every
    other module, Sequential included, prints each child on its own line, and a blank extra_repr line stays blank."""
    def reprs(lib):
        nn = lib.nn

        class Tagged(nn.ModuleList):
            def extra_repr(self):
                return "tag"

        class TwoLines(nn.Module):
            def extra_repr(self):
                return "a\n\nb"

        holder = nn.Module()
        holder.pair = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
        holder.blocks = Tagged([nn.Sequential(nn.Linear(1, 1)), nn.Sequential(nn.Linear(1, 1)), nn.ReLU(),
                                TwoLines(), TwoLines()])
        holder.named = nn.ModuleDict({"1": nn.ReLU(), "2": nn.ReLU()})
        return repr(holder), repr(Tagged()), repr(nn.Sequential())

    assert reprs(retrograd) == reprs(torch)


# --------------------------------------------------------------------------------------------
# Initialisation
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                                  ("leaky_relu", 0.2), ("selu",)])
def test_calculate_gain_matches_torch(args):
    assert retrograd.nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


def test_default_initialisation_follows_torch_bounds():
    retrograd.manual_seed(0)
    linear = retrograd.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) and the bias rule give the same bound
    for t in (linear.weight, linear.bias):
        values = t.detach().numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.95 * bound
    assert abs(linear.weight.detach().numpy().std() - bound / math.sqrt(3)) < 0.01 * bound
    conv = retrograd.nn.Conv2d(8, 16, 3)
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(8 * 9)
    assert np.abs(conv.bias.detach().numpy()).max() <= 1 / math.sqrt(8 * 9)
    emb = retrograd.nn.Embedding(500, 40, padding_idx=3).weight.detach().numpy()
    assert abs(emb.std() - 1) < 0.05 and not emb[3].any()
    lstm = retrograd.nn.LSTM(5, 16)
    assert max(np.abs(p.detach().numpy()).max() for p in lstm.parameters()) <= 0.25
    mha = retrograd.nn.MultiheadAttention(8, 2)
    assert not mha.in_proj_bias.detach().numpy().any() and not mha.out_proj.bias.detach().numpy().any()
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= math.sqrt(6 / (8 + 24))
    bn = retrograd.nn.BatchNorm1d(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3 and bn.running_var.tolist() == [1.0] * 3


def test_initialisation_is_reproducible_with_seeds_and_generators():
    retrograd.manual_seed(3)
    a = retrograd.nn.Linear(4, 4).weight.tolist()
    retrograd.manual_seed(3)
    assert retrograd.nn.Linear(4, 4).weight.tolist() == a
    w1, w2 = retrograd.empty(3, 3), retrograd.empty(3, 3)
    retrograd.nn.init.xavier_normal_(w1, generator=retrograd.Generator().manual_seed(1))
    retrograd.nn.init.xavier_normal_(w2, generator=retrograd.Generator().manual_seed(1))
    assert w1.tolist() == w2.tolist()


def test_init_functions():
    init = retrograd.nn.init
    w = retrograd.nn.Parameter(retrograd.empty(64, 32))
    assert init.orthogonal_(w, gain=2.0) is w
    np.testing.assert_allclose(w.detach().numpy().T @ w.detach().numpy(), 4 * np.eye(32), atol=1e-4)
    assert w.grad_fn is None and w.requires_grad
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.detach().numpy().std() - math.sqrt(2 / 64)) < 0.02
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.detach().numpy()).max() <= 0.5
    init.constant_(w, 0.3)
    assert (w.detach().numpy() == np.float32(0.3)).all()
    for fn in ("eye_", "zeros_", "ones_"):
        t_w, r_w = torch.empty(3, 4), retrograd.empty(3, 4)
        getattr(torch.nn.init, fn)(t_w)
        getattr(init, fn)(r_w)
        np.testing.assert_array_equal(r_w.numpy(), t_w.numpy())
    t_w, r_w = torch.empty(4, 2, 3, 3), retrograd.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(t_w, groups=2)
    init.dirac_(r_w, groups=2)
    np.testing.assert_array_equal(r_w.numpy(), t_w.numpy())
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
            lib.nn.init.xavier_uniform_(lib.empty(3))
        with pytest.raises(ValueError, match="Mode x not supported"):
            lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="x")
        with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
            lib.nn.init.calculate_gain("foo")


# --------------------------------------------------------------------------------------------
# nn.utils and dropout
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_matches_torch(norm_type):
    grads = [randn(3, 4) * 3, randn(5)]
    results = []
    for lib in (torch, retrograd):
        params = [lib.nn.Parameter(lib.zeros(*g.shape)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g)
        total = lib.nn.utils.clip_grad_norm_(params, max_norm=1.5, norm_type=norm_type)
        results.append((total.item(), [p.grad.numpy().copy() for p in params]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    for a, b in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_clip_grad_value_and_vector_conversion_match_torch():
    grads = [randn(3, 4) * 3, randn(5)]
    outs = []
    for lib in (torch, retrograd):
        params = [lib.nn.Parameter(lib.tensor(g) + 1) for g in grads]
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g)
        lib.nn.utils.clip_grad_value_(params, 0.5)
        vec = lib.nn.utils.parameters_to_vector(params)
        assert vec.requires_grad and vec.shape == (17,)
        lib.nn.utils.vector_to_parameters(vec.detach() * 2, params)
        outs.append([p.grad.numpy().copy() for p in params] + [p.detach().numpy().copy() for p in params])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_value_refuses_parameters_without_gradients_as_torch_does(foreach):
    """Before the first backward there is no gradient to clamp: torch's grouping of the (empty) gradient list
    raises, unlike clip_grad_norm_, which returns a zero norm."""
    errors = []
    for lib in (torch, retrograd):
        layer = lib.nn.Linear(2, 2)
        for parameters in (layer.parameters(), [], layer.weight):
            with pytest.raises(RuntimeError) as caught:
                lib.nn.utils.clip_grad_value_(parameters, 0.1, foreach=foreach)
            errors.append(str(caught.value))
    assert errors[3:] == errors[:3]
    assert "nested_tensorlist[0].empty()" in errors[0]


def test_clip_grad_norm_refuses_non_finite_when_asked():
    p = retrograd.nn.Parameter(retrograd.ones(2))
    p.grad = retrograd.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        retrograd.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_dropout_in_training_zeroes_and_rescales():
    retrograd.manual_seed(0)
    drop = retrograd.nn.Dropout(0.25)
    out = drop(retrograd.ones(200, 100)).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - 0.25) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    drop.eval()
    assert (drop(retrograd.ones(3)).numpy() == 1).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        retrograd.nn.Dropout(1.5)


def test_batchnorm_loads_checkpoints_without_the_counter_and_checks_dims():
    bn = retrograd.nn.BatchNorm1d(2)
    state = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert repr(bn.load_state_dict(state)) == "<All keys matched successfully>"
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
            lib.nn.BatchNorm2d(2)(lib.ones(2, 2, 2))


def test_padding_pooling_and_3d_layers_print_as_torchs():
    def reprs(lib):
        nn = lib.nn
        return [repr(m) for m in (nn.ZeroPad2d((1, 1, 2, 0)), nn.ConstantPad1d(2, 3.5), nn.ReflectionPad2d(1),
                                  nn.ReplicationPad1d((0, 2)), nn.CircularPad3d(1), nn.LPPool2d(2, 3),
                                  nn.MaxPool3d(2), nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(1), nn.AdaptiveMaxPool3d(2),
                                  nn.Conv3d(1, 2, 3), nn.ConvTranspose3d(1, 2, 3), nn.RMSNorm([2, 3]),
                                  nn.LocalResponseNorm(3))]

    assert reprs(retrograd) == reprs(torch)


# --------------------------------------------------------------------------------------------
# Lazy modules: placeholders until the first forward, then the ordinary class
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,shape", [("LazyConv1d", (2, 3, 7)), ("LazyConv2d", (3, 6, 6)),
                                        ("LazyConvTranspose3d", (1, 2, 3, 3, 3)), ("LazyConvTranspose1d", (3, 7))])
def test_lazy_convolution_materialises_on_first_forward_as_torch(name, shape):
    modules = [getattr(lib.nn, name)(4, 3, bias=True, dtype=lib.float64) for lib in (torch, retrograd)]
    for m in modules:
        assert repr(m.weight) == "<UninitializedParameter>"
        assert list(m.state_dict()) == ["weight", "bias"]
    assert repr(modules[1]) == repr(modules[0])
    x = rng.standard_normal(shape)
    outs = [m(lib.tensor(x)) for m, lib in zip(modules, (torch, retrograd))]
    assert type(modules[1]).__name__ == type(modules[0]).__name__ == name.replace("Lazy", "")
    assert repr(modules[1]) == repr(modules[0])
    assert isinstance(modules[1].weight, retrograd.nn.Parameter)
    assert not isinstance(modules[1].weight, retrograd.nn.UninitializedParameter)
    assert modules[1].weight.shape == modules[0].weight.shape and modules[1].weight.dtype == retrograd.float64
    assert outs[1].shape == outs[0].shape
    modules[1].load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in modules[0].state_dict().items()})
    np.testing.assert_allclose(modules[1](retrograd.tensor(x)).detach().numpy(),
                               modules[0](torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_lazy_module_errors_match_torch():
    def failure(lib, call):
        with pytest.raises(Exception) as info:
            call(lib)
        return type(info.value).__name__, str(info.value)

    for call in [lambda lib: lib.nn.LazyConv2d(4, 3)(lib.ones(2, 3)),
                 lambda lib: lib.nn.LazyConv1d(4, 3, groups=2)(lib.ones(1, 3, 5)),
                 lambda lib: lib.nn.LazyConv1d(4, 3).weight.shape]:
        assert failure(retrograd, call) == failure(torch, call)


def test_lazy_module_loads_a_materialised_state():
    source = retrograd.nn.Conv1d(2, 4, 3)
    lazy = retrograd.nn.LazyConv1d(4, 3)
    lazy.load_state_dict(source.state_dict())
    assert type(lazy).__name__ == "LazyConv1d" and lazy.weight.shape == (4, 2, 3)
    x = retrograd.randn(1, 2, 5)
    assert retrograd.equal(lazy(x), source(x)) and type(lazy) is retrograd.nn.Conv1d


def _node_names(t, depth: int) -> list[str]:
    names, node = [], t.grad_fn
    while node is not None and len(names) < depth:
        names.append(node.name())
        node = node.next_functions[0][0] if node.next_functions else None
    return names


@pytest.mark.parametrize("mode", ["GRU", "RNN", "LSTM"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (2, 5, 3)], ids=["unbatched", "batched"])
def test_recurrent_layers_record_torchs_last_nodes(mode, batch_first, shape):
    """The output's last two nodes are torch's (batch_first: TransposeBackward0 for LSTM, an in-place
    TransposeBackward1 for RNN and GRU; one sequence: SqueezeBackward1 after it), and the gradients agree. Below
    these, torch's float32 LSTM records its oneDNN layer (MkldnnRnnLayerBackward0), retrograd its steps: not
    compared."""
    torch.manual_seed(0)
    t_model = getattr(torch.nn, mode)(3, 4, batch_first=batch_first)
    r_model = getattr(retrograd.nn, mode)(3, 4, batch_first=batch_first)
    copy_state(t_model, r_model)
    x = randn(*shape)
    t_x, r_x = torch.tensor(x, requires_grad=True), retrograd.tensor(x, requires_grad=True)
    (t_out, _), (r_out, _) = t_model(t_x), r_model(r_x)
    depth = 2 if mode != "LSTM" else 1 if len(shape) == 2 or batch_first else 0
    assert _node_names(r_out, depth) == _node_names(t_out, depth)
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), atol=1e-6)
    weights = randn(*t_out.shape)
    t_out.backward(torch.tensor(weights))
    r_out.backward(retrograd.tensor(weights))
    np.testing.assert_allclose(r_x.grad.numpy(), t_x.grad.numpy(), atol=1e-5)


def _each_library(run):
    """run(lib) under torch and retrograd, its warnings recorded; (result, warning texts) for each."""
    found = []
    for lib in (torch, retrograd):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run(lib)
        found.append((result, [(w.category.__name__, str(w.message)) for w in caught]))
    return found


def _error(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return None


def test_forward_hook_with_always_call_runs_when_forward_raises():
    """A hook registered with always_call=True runs after forward raised, given the output so far (None); one that
    raises then is silenced into a warning, and forward's exception propagates; the module's global always_call hooks
    run first. A with_kwargs pre-hook that returns something other than (args, kwargs) is refused."""
    def run(lib):
        class Boom(lib.nn.Module):
            def forward(self, x, scale=1.0):
                raise ValueError("boom")

        module, seen = Boom(), []
        hooks = lib.nn.modules.module
        handle = hooks.register_module_forward_hook(lambda m, a, o: seen.append(("global", o)), always_call=True)
        module.register_forward_hook(lambda m, a, o: seen.append(("plain", o)))
        module.register_forward_hook(lambda m, a, k, o: seen.append(("kwargs", k, o)), with_kwargs=True,
                                     always_call=True)
        module.register_forward_hook(lambda m, a, o: 1 / 0, always_call=True)
        error = _error(lambda: module(lib.ones(1), scale=2.0))
        handle.remove()
        linear = lib.nn.Linear(1, 1)
        linear.register_forward_pre_hook(lambda m, a, k: a, with_kwargs=True)
        refused = _error(lambda: linear(lib.ones(1)))
        return error, seen, refused[0], refused[1].split("tensor")[0]

    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours == theirs
    assert our_warnings == their_warnings


def test_global_module_hooks_match_torch():
    """register_module_forward_pre_hook, _forward_hook (with_kwargs), _full_backward_pre_hook and _full_backward_hook
    run for every module, before the module's own hooks; removed, they stop."""
    def run(lib):
        hooks, order = lib.nn.modules.module, []
        model = model_t if lib is torch else lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Tanh())
        if lib is retrograd:
            copy_state(model_t, model)
        model[0].register_forward_hook(lambda m, a, o: order.append("own forward"))
        model[0].register_full_backward_hook(lambda m, gi, go: order.append("own backward"))
        handles = [
            hooks.register_module_forward_pre_hook(lambda m, a: order.append(f"pre {type(m).__name__}")),
            hooks.register_module_forward_hook(lambda m, a, k, o: order.append(f"fwd {type(m).__name__} {k}") or o * 2,
                                               with_kwargs=True),
            hooks.register_module_full_backward_pre_hook(lambda m, go: order.append(f"bpre {type(m).__name__}")),
            hooks.register_module_full_backward_hook(lambda m, gi, go: order.append(f"bwd {type(m).__name__}")),
        ]
        x = lib.tensor([[1.0, -2.0, 0.5]], requires_grad=True)
        out = model(x)
        out.sum().backward()
        for handle in handles:
            handle.remove()
        model(x)
        return order, out.detach().numpy(), x.grad.numpy()

    model_t = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours[0] == theirs[0]
    for our_values, their_values in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(our_values, their_values, rtol=1e-6)
    assert our_warnings == their_warnings


def test_registration_hooks_match_torch():
    """register_module_{parameter,buffer,module}_registration_hook see every registration (constructors',
    assignments', register_*'s, Sequential's), in order, and a hook's return value replaces what is stored;
    removed, they stop."""
    def run(lib):
        hooks, seen = lib.nn.modules.module, []

        def swap_bias(module, name, value):
            seen.append(("param", type(module).__name__, name, tuple(value.shape)))
            if name == "bias":
                return lib.nn.Parameter(lib.zeros(value.shape), requires_grad=False)

        handles = [hooks.register_module_parameter_registration_hook(swap_bias),
                   hooks.register_module_buffer_registration_hook(
                       lambda m, n, b: seen.append(("buffer", type(m).__name__, n, b is None))),
                   hooks.register_module_module_registration_hook(
                       lambda m, n, sub: seen.append(("module", type(m).__name__, n, type(sub).__name__)))]
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        model.append(lib.nn.ReLU())
        model.extra = lib.nn.Tanh()
        model[0].register_buffer("scale", None)
        model[0].weight = lib.nn.Parameter(lib.ones(3, 2))
        for handle in handles:
            handle.remove()
        lib.nn.Linear(1, 1)
        return seen, model[0].bias.requires_grad, model[0].weight.requires_grad

    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours == theirs
    assert our_warnings == their_warnings


@pytest.mark.parametrize("model", ["linear", "sequential", "tuple-output"])
def test_non_full_backward_hook_matches_torch(model):
    """The deprecated register_backward_hook hooks the node that made the output's first tensor: grad_input is that
    node's input gradients (for Linear, AddmmBackward0's: bias, input, weight), with torch's FutureWarnings where
    that is not the whole module; mixing it with full hooks on one module, or globally, is refused."""
    def run(lib):
        torch.manual_seed(0)
        if model == "linear":
            module = lib.nn.Linear(3, 2)
        elif model == "sequential":
            module = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        else:
            module = lib.nn.GRU(3, 2, batch_first=True)
        if lib is retrograd:
            module.load_state_dict({k: retrograd.tensor(v.numpy()) for k, v in modules_t[model].state_dict().items()})
        else:
            module = modules_t[model]
        seen = []
        module.register_backward_hook(
            lambda m, gi, go: seen.append([None if g is None else g.numpy().copy() for g in (*gi, *go)]))
        x = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 2, 3), requires_grad=True)
        out = module(x if model == "tuple-output" else x[0])
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        mixed = _error(lambda: module.register_full_backward_hook(lambda *a: None))
        hooks = lib.nn.modules.module
        handle = hooks.register_module_full_backward_hook(lambda *a: None)
        mixed_global = _error(lambda: hooks.register_module_backward_hook(lambda *a: None))
        handle.remove()
        return seen, mixed, mixed_global

    torch.manual_seed(0)
    modules_t = {"linear": torch.nn.Linear(3, 2),
                 "sequential": torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)),
                 "tuple-output": torch.nn.GRU(3, 2, batch_first=True)}
    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours[1:] == theirs[1:]
    assert [[None if g is None else g.shape for g in call] for call in ours[0]] == \
        [[None if g is None else g.shape for g in call] for call in theirs[0]]
    for our_call, their_call in zip(ours[0], theirs[0]):
        for our_grad, their_grad in zip(our_call, their_call):
            if their_grad is not None:
                np.testing.assert_allclose(our_grad, their_grad, rtol=1e-5, atol=1e-7)
    assert our_warnings == their_warnings


def test_full_backward_hook_on_an_inplace_relu_is_refused_as_in_torch():
    """A full backward hook hands forward a view made by BackwardHookFunction, which nn.ReLU(inplace=True) may not
    write: torch's error names that Function (the node's name less its trailing 'Backward', not its first)."""
    def run(lib):
        relu = lib.nn.ReLU(inplace=True)
        relu.register_full_backward_hook(lambda m, gi, go: None)
        return _error(lambda: relu(lib.ones(2, requires_grad=True) * 2))

    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours == theirs and ours[1].startswith("Output 0 of BackwardHookFunction is a view")
    assert our_warnings == their_warnings


def test_hook_tables_reset_to_plain_ordered_dicts_take_new_hooks():
    """Old code resets a module's hooks by assigning `module._forward_hooks = OrderedDict()` (and the backward and
    pre tables); hooks registered afterwards go in the new dicts and run, as in torch."""
    from collections import OrderedDict

    def run(lib):
        module, seen = lib.nn.Linear(2, 2), []
        module.register_forward_hook(lambda m, a, o: seen.append("dropped"))
        for table in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
            setattr(module, table, OrderedDict())
        first = module.register_forward_hook(lambda m, a, o: o * 0)
        module.register_forward_hook(lambda m, a, o: seen.append("after"), prepend=True)
        module.register_forward_pre_hook(lambda m, a: seen.append("pre"))
        module.register_full_backward_hook(lambda m, gi, go: seen.append(f"backward {tuple(go[0].shape)}"))
        x = lib.ones(2, requires_grad=True)
        out = module(x)
        out.sum().backward()
        first.remove()
        return seen, out.tolist(), [type(getattr(module, t)).__name__ for t in ("_forward_hooks", "_backward_hooks")], \
            len(module._forward_hooks)

    (theirs, their_warnings), (ours, our_warnings) = _each_library(run)
    assert ours == theirs
    assert our_warnings == their_warnings


@pytest.mark.parametrize("replacement", ["pruned", "parametrized", "plain tensor"])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_a_recurrent_weight_replaced_by_a_computed_tensor_is_the_one_the_forward_uses(mode, replacement):
    """weight_hh_l0 pruned (torch.nn.utils.prune sets it before each forward), under a parametrization, or deleted and
    set as a plain tensor: torch's RNNs run with what the attribute holds (RNNBase.__setattr__ keeps its
    _flat_weights in step), so the outputs and the gradient reaching the original weight are torch's."""
    x = randn(2, 5, 3)
    state = None
    results = []
    for lib in (torch, retrograd):
        prune = importlib.import_module(f"{lib.__name__}.nn.utils.prune")
        parametrize = importlib.import_module(f"{lib.__name__}.nn.utils.parametrize")
        module = getattr(lib.nn, mode)(3, 4, batch_first=True)
        if state is None:
            state = {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
        module.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
        if replacement == "pruned":
            prune.l1_unstructured(module, "weight_hh_l0", amount=0.5)
        elif replacement == "parametrized":
            parametrize.register_parametrization(module, "weight_hh_l0", type("Halve", (lib.nn.Module,), {
                "forward": lambda self, w: w * 0.5})())
        else:
            del module.weight_hh_l0
            module.weight_hh_l0 = lib.from_numpy(state["weight_hh_l0"].copy()) * 0.25
        out, _ = module(lib.from_numpy(x))
        out.pow(2).sum().backward()
        results.append((out.detach().numpy(), module.weight_ih_l0.grad.numpy()))
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
