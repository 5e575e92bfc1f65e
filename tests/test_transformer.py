"""nn.Transformer and its encoder/decoder stacks and layers against torch.

Each case builds the same model in both libraries, loads torch's initial state dict into retrograd,
and compares reprs, parameter names, outputs and the gradients of inputs and parameters, in eval
mode and in train mode with dropout=0, with every kind of mask torch accepts.
"""

import warnings

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)
D_MODEL, NHEAD, FF = 8, 2, 16


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def padding(batch, length, hidden):
    """A key padding mask hiding the last `hidden[i]` positions of sequence i (never all of them)."""
    mask = np.zeros((batch, length), dtype=bool)
    for i, n in enumerate(hidden):
        mask[i, length - n:] = n > 0
    return mask


def causal(size, boolean=False):
    mask = np.triu(np.ones((size, size), dtype=bool), 1)
    return mask if boolean else np.where(mask, -np.inf, 0.0).astype(np.float32)


def to_lib(lib, value, requires_grad=False):
    if isinstance(value, np.ndarray):
        return lib.tensor(value, requires_grad=requires_grad and value.dtype.kind == "f")
    return value


def layer_args(lib, kwargs):
    """Constructor keywords in `lib`: an activation given as a module name becomes that module."""
    kwargs = dict(kwargs)
    if "activation" in kwargs and kwargs["activation"] in ("GELU", "Tanh"):
        kwargs["activation"] = getattr(lib.nn, kwargs["activation"])()
    return kwargs


def encoder_layer(lib, **kw):
    return lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, **layer_args(lib, kw))


def decoder_layer(lib, **kw):
    return lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, **layer_args(lib, kw))


def encoder(lib, **kw):
    return lib.nn.TransformerEncoder(encoder_layer(lib, **kw), 2, lib.nn.LayerNorm(D_MODEL),
                                     enable_nested_tensor=False)


def decoder(lib, **kw):
    return lib.nn.TransformerDecoder(decoder_layer(lib, **kw), 2)


def transformer(lib, **kw):
    return lib.nn.Transformer(D_MODEL, NHEAD, 2, 1, FF, **layer_args(lib, kw))


def twin(build, kwargs):
    torch.manual_seed(0)
    t_model = build(torch, **kwargs)
    r_model = build(retrograd, **kwargs)
    r_model.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_model.state_dict().items()})
    return t_model, r_model


def compare(build, kwargs, inputs, call, train, atol=2e-5, rtol=1e-4):
    """Forward and backward of the twins on the same inputs: outputs and all gradients agree."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that its nested-tensor fast path is off
        t_model, r_model = twin(build, kwargs)
    assert repr(r_model) == repr(t_model)
    assert [n for n, _ in r_model.named_parameters()] == [n for n, _ in t_model.named_parameters()]
    assert list(r_model.state_dict()) == list(t_model.state_dict())
    t_model.train(train)
    r_model.train(train)
    t_in = [to_lib(torch, x, True) for x in inputs]
    r_in = [to_lib(retrograd, x, True) for x in inputs]
    t_out = t_model(*t_in, **{k: to_lib(torch, v) for k, v in call.items()})
    r_out = r_model(*r_in, **{k: to_lib(retrograd, v) for k, v in call.items()})
    assert tuple(r_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), atol=atol, rtol=rtol)
    cotangent = randn(*t_out.shape)
    (t_out * torch.tensor(cotangent)).sum().backward()
    (r_out * retrograd.tensor(cotangent)).sum().backward()
    for r, t in zip(r_in, t_in):
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), atol=atol, rtol=rtol)
    t_params = dict(t_model.named_parameters())
    for name, r in r_model.named_parameters():
        np.testing.assert_allclose(r.grad.numpy(), t_params[name].grad.numpy(), atol=atol, rtol=rtol, err_msg=name)


def case(build, inputs, call=None, id=None, train=True, **kwargs):
    kwargs.setdefault("dropout", 0.0 if train else 0.1)
    return pytest.param(build, kwargs, inputs, call or {}, train, id=id)


SRC, TGT = randn(5, 3, D_MODEL), randn(4, 3, D_MODEL)
SRC_BF, TGT_BF = randn(3, 5, D_MODEL), randn(3, 4, D_MODEL)
SRC_PAD = padding(3, 5, [0, 2, 1])
TGT_PAD = padding(3, 4, [1, 0, 2])

CASES = [
    case(encoder_layer, [SRC], id="encoder-layer"),
    case(encoder_layer, [SRC], id="encoder-layer-eval", train=False),
    case(encoder_layer, [SRC_BF], {"src_key_padding_mask": SRC_PAD}, batch_first=True, norm_first=True,
         activation="gelu", id="encoder-layer-batch-first-norm-first-gelu"),
    case(encoder_layer, [SRC], {"src_mask": causal(5), "is_causal": True}, bias=False, layer_norm_eps=1e-3,
         id="encoder-layer-causal-no-bias"),
    case(encoder_layer, [SRC], {"src_mask": causal(5, True), "src_key_padding_mask": SRC_PAD},
         activation="GELU", id="encoder-layer-bool-masks-gelu-module"),
    case(encoder_layer, [SRC[:, 0]], {"src_mask": randn(5, 5)}, activation="Tanh", id="encoder-layer-unbatched"),
    case(decoder_layer, [TGT, SRC], {"tgt_mask": causal(4), "memory_key_padding_mask": SRC_PAD},
         id="decoder-layer"),
    case(decoder_layer, [TGT_BF, SRC_BF], {"tgt_key_padding_mask": TGT_PAD, "memory_mask": randn(4, 5)},
         batch_first=True, norm_first=True, activation="gelu", id="decoder-layer-batch-first-norm-first"),
    case(decoder_layer, [TGT, SRC], {"tgt_mask": causal(4), "tgt_is_causal": True}, train=False,
         id="decoder-layer-causal-eval"),
    case(encoder, [SRC], {"mask": causal(5), "src_key_padding_mask": SRC_PAD}, id="encoder-detects-causal-mask"),
    case(encoder, [SRC_BF], {"mask": causal(5, True)}, batch_first=True, norm_first=True, id="encoder-bool-mask"),
    case(decoder, [TGT, SRC], {"tgt_mask": causal(4), "tgt_key_padding_mask": TGT_PAD,
                               "memory_key_padding_mask": SRC_PAD}, id="decoder"),
    case(transformer, [SRC, TGT], id="transformer"),
    case(transformer, [SRC, TGT], {"tgt_mask": causal(4)}, train=False, id="transformer-eval"),
    case(transformer, [SRC_BF, TGT_BF], {"tgt_mask": causal(4), "src_key_padding_mask": SRC_PAD,
                                         "memory_key_padding_mask": SRC_PAD, "tgt_key_padding_mask": TGT_PAD},
         batch_first=True, norm_first=True, activation="gelu", id="transformer-batch-first-all-masks"),
    case(transformer, [SRC[:, 1], TGT[:, 1]], {"src_mask": causal(5, True), "tgt_is_causal": True,
                                               "tgt_mask": causal(4)}, bias=False, id="transformer-unbatched"),
]


@pytest.mark.parametrize("build,kwargs,inputs,call,train", CASES)
def test_transformer_modules_match_torch(build, kwargs, inputs, call, train):
    compare(build, kwargs, inputs, call, train)


def test_float64_transformer_matches_torch_closely():
    def build(lib):
        return lib.nn.Transformer(D_MODEL, NHEAD, 1, 2, FF, dropout=0.0, dtype=lib.float64)

    t_model, r_model = twin(build, {})
    src, tgt = rng.standard_normal((5, 2, D_MODEL)), rng.standard_normal((3, 2, D_MODEL))
    mask = build(torch).generate_square_subsequent_mask(3, dtype=torch.float64)
    t_out = t_model(torch.tensor(src), torch.tensor(tgt), tgt_mask=mask)
    r_out = r_model(retrograd.tensor(src), retrograd.tensor(tgt), tgt_mask=retrograd.tensor(mask.numpy()))
    assert r_out.dtype == retrograd.float64
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_eval_without_grad_matches_torch_fast_path():
    """torch runs its fused kernel here (eval, no grad, batch_first, even heads); the results agree."""
    t_model, r_model = twin(encoder_layer, {"batch_first": True})
    t_model.eval()
    r_model.eval()
    with torch.no_grad():
        t_out = t_model(torch.tensor(SRC_BF), src_key_padding_mask=torch.tensor(SRC_PAD))
    with retrograd.no_grad():
        r_out = r_model(retrograd.tensor(SRC_BF), src_key_padding_mask=retrograd.tensor(SRC_PAD))
    np.testing.assert_allclose(r_out.numpy(), t_out.numpy(), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("kwargs", [{"batch_first": True}, {}, {"batch_first": True, "norm_first": True},
                                    {"batch_first": True, "bias": False}, {"batch_first": True, "activation": "Tanh"},
                                    {"batch_first": True, "activation": "gelu"}])
def test_encoder_nested_tensor_warning_and_flag_match_torch(kwargs):
    """torch's encoder says why its layer rules out nested tensors, naming the caller's line, and keeps the flag."""
    def built(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = lib.nn.TransformerEncoder(encoder_layer(lib, **kwargs), 2)
            odd = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(9, 3, batch_first=True), 1)
            quiet = lib.nn.TransformerEncoder(encoder_layer(lib, **kwargs), 1, enable_nested_tensor=False)
        return ([(str(w.message), w.filename) for w in caught],
                (model.use_nested_tensor, odd.use_nested_tensor, quiet.use_nested_tensor))

    assert built(retrograd) == built(torch)


def test_transformer_default_layout_warns_as_torch():
    def messages(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
        return [str(w.message) for w in caught]

    assert messages(retrograd) == messages(torch)
    assert messages(retrograd)


def left_padding(batch, length, hidden):
    return padding(batch, length, hidden)[:, ::-1].copy()


ALL_PADDED = padding(3, 5, [0, 2, 1])
ALL_PADDED[1] = True


@pytest.mark.parametrize("mask,mode,kwargs", [
    (SRC_PAD, "no_grad", {}), (SRC_PAD, "inference_mode", {}), (SRC_PAD, "frozen", {}),
    (SRC_PAD, "grad", {}), (SRC_PAD, "train", {}), (SRC_PAD, "no_fastpath", {}),
    (np.where(SRC_PAD, -np.inf, 0.0).astype(np.float32), "no_grad", {}), (ALL_PADDED, "no_grad", {}),
    (left_padding(3, 5, [1, 2, 0]), "no_grad", {}), (left_padding(3, 5, [1, 2, 0]), "no_grad", {"mask_check": False}),
    (SRC_PAD, "no_grad", {"enable_nested_tensor": False}), (padding(3, 5, [2, 1, 3]), "no_grad", {"norm": True}),
])
def test_eval_encoder_output_at_padding_matches_torch_nested_path(mask, mode, kwargs):
    """Eval mode without grad: torch's nested-tensor path gives zeros at right-padded positions (then `norm`);
    without `mask_check` it keeps each row's first unpadded-count positions, whatever the mask hides."""
    def build(lib):
        norm = lib.nn.LayerNorm(D_MODEL) if kwargs.get("norm") else None
        rest = {k: v for k, v in kwargs.items() if k != "norm"}
        return lib.nn.TransformerEncoder(encoder_layer(lib, batch_first=True, dropout=0.0), 2, norm, **rest)

    def run(lib, model):
        model.train(mode == "train")
        if mode == "frozen":
            model.requires_grad_(False)
        x, key_padding = lib.tensor(SRC_BF), lib.tensor(mask)
        lib.backends.mha.set_fastpath_enabled(mode != "no_fastpath")
        try:
            context = {"no_grad": lib.no_grad, "inference_mode": lib.inference_mode}.get(mode, lib.enable_grad)
            with context():
                return model(x, src_key_padding_mask=key_padding).detach().numpy()
        finally:
            lib.backends.mha.set_fastpath_enabled(True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that nested tensors are a prototype
        t_model, r_model = twin(build, {})
        t_out = run(torch, t_model)
    np.testing.assert_allclose(run(retrograd, r_model), t_out, atol=2e-5, rtol=1e-4)


def test_encoder_nested_path_warns_as_torch():
    """torch's once-per-process note that nested tensors are a prototype, given by the fast path (not for the
    left-padded batch it refuses); under set_warn_always torch repeats it for each nested op inside its layers,
    retrograd once per forward, so the messages are compared as a set."""
    def messages(lib):
        model = lib.nn.TransformerEncoder(encoder_layer(lib, batch_first=True), 1).eval()
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught, lib.no_grad():
                warnings.simplefilter("always")
                model(lib.tensor(SRC_BF), src_key_padding_mask=lib.tensor(SRC_PAD))
                model(lib.tensor(SRC_BF), src_key_padding_mask=lib.tensor(left_padding(3, 5, [1, 2, 0])))
        finally:
            lib.set_warn_always(False)
        return [str(w.message) for w in caught]

    assert set(messages(retrograd)) == set(messages(torch))
    assert len(messages(retrograd)) == 1


HIDDEN_ROW = padding(3, 5, [0, 2, 1])
HIDDEN_ROW[2] = True
HIDDEN_QUERY = causal(5, True)
HIDDEN_QUERY[3] = True


@pytest.mark.parametrize("module", ["attention", "layer", "layer-tanh", "encoder"])
@pytest.mark.parametrize("masks", ["padding", "float-padding", "attn", "both"])
@pytest.mark.parametrize("mode", ["no_grad", "grad"])
def test_queries_with_every_key_hidden_match_torch(module, masks, mode):
    """A query whose keys are all masked: torch's composite path gives it zero attention, its fused kernels
    (eval mode, no grad; float masks keep MultiheadAttention off its own) NaN."""
    def build(lib):
        if module == "attention":
            return lib.nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True)
        activation = "Tanh" if module == "layer-tanh" else "relu"
        layer = encoder_layer(lib, batch_first=True, activation=activation)
        return layer if module != "encoder" else lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def run(lib, model):
        model.eval()
        x = lib.tensor(SRC_BF, requires_grad=mode == "grad")
        padded = lib.tensor(HIDDEN_ROW if masks != "float-padding" else np.where(HIDDEN_ROW, -np.inf, 0).astype("f4"))
        keys = {"padding": padded, "float-padding": padded, "attn": None, "both": padded}[masks]
        query = lib.tensor(HIDDEN_QUERY) if masks in ("attn", "both") else None
        with lib.no_grad() if mode == "no_grad" else lib.enable_grad():
            if module == "attention":
                out = model(x, x, x, key_padding_mask=keys, attn_mask=query, need_weights=False)[0]
            elif module == "encoder":
                out = model(x, mask=query, src_key_padding_mask=keys)
            else:
                out = model(x, src_mask=query, src_key_padding_mask=keys)
        return out.detach().numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_model, r_model = twin(build, {})
        t_out = run(torch, t_model)
    r_out = run(retrograd, r_model)
    np.testing.assert_array_equal(np.isnan(r_out), np.isnan(t_out))
    np.testing.assert_allclose(r_out, t_out, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("size,dtype", [(4, None), (1, "float64")])
def test_generate_square_subsequent_mask_matches_torch(size, dtype):
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(size, dtype=dtype and getattr(torch, dtype))
    r_mask = retrograd.nn.Transformer.generate_square_subsequent_mask(size, dtype=dtype and getattr(retrograd, dtype))
    assert str(r_mask.dtype) == str(t_mask.dtype)
    np.testing.assert_array_equal(r_mask.numpy(), t_mask.numpy())


def test_defaults_and_attributes_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_model, r_model = twin(lambda lib: lib.nn.Transformer(), {})
    assert repr(r_model) == repr(t_model)
    for t_layer, r_layer in [(t_model.encoder.layers[0], r_model.encoder.layers[0]),
                             (t_model.decoder.layers[0], r_model.decoder.layers[0])]:
        assert r_layer.linear1.out_features == t_layer.linear1.out_features == 2048
        assert r_layer.dropout.p == t_layer.dropout.p == 0.1
        assert r_layer.norm1.eps == t_layer.norm1.eps
        assert r_layer.norm_first is t_layer.norm_first is False
        assert r_layer.activation is retrograd.nn.functional.relu
    assert r_model.encoder.layers[0].activation_relu_or_gelu == t_model.encoder.layers[0].activation_relu_or_gelu
    assert (r_model.d_model, r_model.nhead, r_model.batch_first) == (t_model.d_model, t_model.nhead, False)
    assert (r_model.encoder.num_layers, r_model.decoder.num_layers) == (6, 6)


def test_stacked_layers_are_independent_copies():
    r_model = encoder(retrograd)
    first, second = r_model.layers
    assert first.linear1.weight is not second.linear1.weight
    with retrograd.no_grad():
        first.linear1.weight.zero_()
    assert second.linear1.weight.abs().sum().item() > 0


def test_transformer_weights_are_xavier_uniform():
    r_model = retrograd.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    weight = r_model.encoder.layers[0].linear1.weight
    bound = (6 / (D_MODEL + FF)) ** 0.5
    assert weight.abs().max().item() <= bound
    assert weight.abs().max().item() > 0.8 * bound


def test_custom_encoder_and_decoder_are_used():
    def build(lib):
        custom_encoder = lib.nn.TransformerEncoder(encoder_layer(lib, dropout=0.0), 1)
        return lib.nn.Transformer(D_MODEL, NHEAD, dropout=0.0, custom_encoder=custom_encoder,
                                  custom_decoder=decoder(lib, dropout=0.0))

    compare(lambda lib, **_: build(lib), {}, [SRC, TGT], {}, True)


def errors(lib):
    """The messages each library gives for wrong uses, in order."""
    found = []
    attempts = [
        lambda: lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh"),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)(lib.zeros(5, 3, D_MODEL), lib.zeros(4, 2, D_MODEL)),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, batch_first=True)(lib.zeros(3, 5, D_MODEL),
                                                                                lib.zeros(2, 4, D_MODEL)),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)(lib.zeros(5, 3, 6), lib.zeros(4, 3, 6)),
        lambda: lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)(lib.zeros(5, 3, D_MODEL),
                                                                   src_mask=lib.zeros(5, 5, dtype=lib.int64)),
        lambda: lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)(lib.zeros(5, 3, D_MODEL), is_causal=True),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, 3, D_MODEL)] * 3, is_causal=True),
        # multi_head_attention_forward's shape checks, in its order
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(2, 5, 3, D_MODEL)] * 3),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(lib.zeros(5, 3, D_MODEL), *[lib.zeros(5, D_MODEL)] * 2),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, D_MODEL)] * 3,
                                                          key_padding_mask=lib.zeros(1, 5, dtype=lib.bool)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, 3, D_MODEL)] * 3,
                                                          key_padding_mask=lib.zeros(5, dtype=lib.bool)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, 3, D_MODEL)] * 3,
                                                          attn_mask=lib.zeros(1, 1, 5, 5, dtype=lib.bool)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, D_MODEL)] * 3,
                                                          attn_mask=lib.zeros(NHEAD, 5, 4, dtype=lib.bool)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(lib.zeros(5, 3, D_MODEL), lib.zeros(4, 3, D_MODEL),
                                                          lib.zeros(5, 3, D_MODEL)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD, kdim=4, vdim=4)(lib.zeros(5, 3, D_MODEL),
                                                                          lib.zeros(4, 3, 4), lib.zeros(4, 2, 4)),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)(lib.zeros(5, 3, D_MODEL), lib.zeros(4, 3, D_MODEL),
                                                            tgt_mask=lib.zeros(5, 5)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, 3, D_MODEL)] * 3,
                                                          attn_mask=lib.zeros(3, 5, 5, dtype=lib.bool)),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)(lib.zeros(5, 3, D_MODEL), lib.zeros(4, 3, D_MODEL),
                                                            src_key_padding_mask=lib.zeros(5, 3, dtype=lib.bool)),
        lambda: lib.nn.MultiheadAttention(D_MODEL, NHEAD)(*[lib.zeros(5, 3, D_MODEL)] * 3,
                                                          key_padding_mask=lib.zeros(3, 4, dtype=lib.bool)),
        lambda: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)(lib.zeros(5, 3, D_MODEL), lib.zeros(4, 3, D_MODEL),
                                                            tgt_mask=lib.zeros(4, 4, dtype=lib.int64)),
    ]
    for attempt in attempts:
        with pytest.raises(Exception) as info:
            attempt()
        found.append((type(info.value).__name__, str(info.value)))
    return found


def test_errors_match_torch():
    assert errors(retrograd) == errors(torch)


def test_mismatched_mask_types_warn_as_torch():
    def messages(lib):
        layer = lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)
        x = lib.zeros(5, 3, D_MODEL)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer(x, src_mask=lib.tensor(causal(5)), src_key_padding_mask=lib.tensor(SRC_PAD))
            layer.self_attn(x, x, x, attn_mask=lib.tensor(causal(5)), key_padding_mask=lib.tensor(SRC_PAD))
        return [str(w.message) for w in caught]

    assert messages(retrograd) == messages(torch)
    assert messages(retrograd)


def test_causal_hint_applies_the_causal_mask_as_torch():
    """With only the hint (no padding mask, no weights), torch's fused path masks causally, whatever attn_mask is."""
    t_model, r_model = twin(lambda lib: lib.nn.MultiheadAttention(D_MODEL, NHEAD), {})
    x = SRC
    wrong_mask = np.zeros((5, 5), dtype=np.float32)
    t_out = t_model(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(wrong_mask), is_causal=True, need_weights=False)
    r_out = r_model(*[retrograd.tensor(x)] * 3, attn_mask=retrograd.tensor(wrong_mask), is_causal=True,
                    need_weights=False)
    np.testing.assert_allclose(r_out[0].detach().numpy(), t_out[0].detach().numpy(), atol=2e-5, rtol=1e-4)


def _graph_names(output):
    """The names of the nodes in output's backward graph, each once, in the order a walk from the output meets them."""
    seen, order, stack = set(), [], [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node.name())
        stack.extend(next_node for next_node, _ in reversed(node.next_functions))
    return order


def _attention_twins(batch_first=False):
    """A MultiheadAttention in torch and the same one, its weights copied, in retrograd."""
    theirs, ours = torch.nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=batch_first), \
        retrograd.nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=batch_first)
    ours.load_state_dict({k: retrograd.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return theirs, ours


ATTENTION_CALLS = {
    "self-attention, fused": lambda m, x, y, kpm: m(x, x, x, need_weights=False)[0],
    "self-attention, weights": lambda m, x, y, kpm: m(x, x, x, key_padding_mask=kpm)[0],
    "self-attention, padding, fused": lambda m, x, y, kpm: m(x, x, x, key_padding_mask=kpm, need_weights=False)[0],
    "cross-attention": lambda m, x, y, kpm: m(x, y, y, need_weights=False)[0],
    "separate inputs": lambda m, x, y, kpm: m(x, y, y * 2, need_weights=True)[0],
}


@pytest.mark.parametrize("call", sorted(ATTENTION_CALLS))
def test_multihead_attention_records_torchs_graph(call):
    """MultiheadAttention composes as torch's functional does: one in-projection for self-attention (two when key is
    value), the padding mask merged into attn_mask, baddbmm and softmax when the weights are wanted, else the fused
    attention row; so its backward graph has torch's nodes, and its outputs and gradients are torch's. (Sequence
    first: a batch-first input's transposed projections fold into one UnsafeViewBackward0 node here, where torch
    records its clone and mm.)"""
    x, y, kpm = randn(5, 2, D_MODEL), randn(4, 2, D_MODEL), padding(2, 5, (0, 2))
    found = []
    for lib, module in zip((torch, retrograd), _attention_twins()):
        xs, ys = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = ATTENTION_CALLS[call](module, xs, ys, lib.tensor(kpm))
        (out * out).sum().backward()
        found.append((_graph_names(out), out.detach().numpy(), xs.grad.numpy(), module.in_proj_weight.grad.numpy()))
    (theirs, *their_values), (ours, *our_values) = found
    assert ours == theirs
    for a, b in zip(our_values, their_values):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_multihead_attention_under_autocast_is_torchs_bfloat16():
    """Under CPU autocast the projections and the fused attention run in bfloat16 as torch's: the same bits."""
    x, kpm = randn(3, 7, D_MODEL), padding(3, 7, (0, 2, 4))
    found = []
    for lib, module in zip((torch, retrograd), _attention_twins(batch_first=True)):
        xs = lib.tensor(x)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = module(xs, xs, xs, key_padding_mask=lib.tensor(kpm), need_weights=False)[0]
        found.append((str(out.dtype), out.float().detach().numpy()))
    assert found[1][0] == found[0][0]
    np.testing.assert_array_equal(found[1][1], found[0][1])


@pytest.mark.parametrize("masks", ["none", "causal", "padding"])
@pytest.mark.parametrize("training", [False, True])
def test_multihead_attention_with_and_without_weights_as_torch(masks, training):
    """Where torch runs its native kernel (eval, no grad, batch-first self-attention) need_weights=False gives the
    same bits as need_weights=True, the kernel computing the weights either way; off it the two are a rounding
    apart (scaled_dot_product_attention against softmax and bmm). Reading the attention pattern with a hook that
    sets need_weights must not change the output there."""
    x = randn(6, 5, D_MODEL) * 3
    kwargs = {"none": {}, "causal": {"attn_mask": causal(5, boolean=True)}, "padding": {"key_padding_mask": padding(
        6, 5, (0, 1, 2, 0, 3, 1))}}[masks]
    found = []
    for lib, module in zip((torch, retrograd), _attention_twins(batch_first=True)):
        module.train(training)
        xs = lib.tensor(x)
        lib_kwargs = {name: lib.tensor(value) for name, value in kwargs.items()}
        with lib.no_grad():
            without = module(xs, xs, xs, need_weights=False, **lib_kwargs)
            with_weights = module(xs, xs, xs, need_weights=True, average_attn_weights=False, **lib_kwargs)
        assert without[1] is None
        found.append((bool(lib.equal(without[0], with_weights[0])), without[0].numpy(), with_weights[1].numpy()))
    assert found[1][0] == found[0][0]
    for ours, theirs in zip(found[1][1:], found[0][1:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("module", ["layer", "encoder", "attention"])
@pytest.mark.parametrize("mode", ["no_grad", "grad"])
def test_global_forward_hooks_see_the_modules_torch_calls(module, mode):
    """Where torch runs its fused encoder-layer kernel (eval, no grad) it calls none of the layer's submodules, so a
    global forward hook sees only the layers; with grad it sees every submodule, in torch's order."""
    def run(lib):
        lib.manual_seed(0)
        if module == "attention":
            model = lib.nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True)
        else:
            layer = encoder_layer(lib, batch_first=True)
            model = layer if module == "layer" else lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        model.eval()
        seen = []
        handle = lib.nn.modules.module.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
        x = lib.tensor(SRC_BF)
        try:
            with lib.no_grad() if mode == "no_grad" else lib.enable_grad():
                model(x, x, x) if module == "attention" else model(x)
        finally:
            handle.remove()
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(retrograd) == run(torch)
