"""torch.nn / optim / data surface that libraries import, against torch: torch's module paths (under the import
hook), the lazy and sync norm layers, Fold/Unfold, the channel dropouts, and the helpers in nn.modules.utils."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd

IMPORTS = [
    "from torch.nn.modules.batchnorm import _NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d, "
    "SyncBatchNorm, LazyBatchNorm1d, _LazyNormBase",
    "from torch.nn.modules.instancenorm import _InstanceNorm, InstanceNorm1d, InstanceNorm2d, LazyInstanceNorm3d",
    "from torch.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle",
    "from torch.nn.modules.fold import Fold, Unfold",
    "from torch.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss",
    "from torch.nn.modules.utils import _single, _pair, _triple, _quadruple, _ntuple, _reverse_repeat_tuple, "
    "consume_prefix_in_state_dict_if_present",
    "from torch.nn.common_types import _size_1_t, _size_2_t, _size_3_t, _size_any_t, _ratio_2_t, _maybe_indices_t",
    "from torch.utils.hooks import RemovableHandle, unserializable_hook",
    "from torch.optim.adamw import AdamW",
    "from torch.optim.optimizer import Optimizer, ParamsT",
    "from torch.utils.data._utils.collate import default_collate, default_convert",
    "from torch.nn.modules.loss import _Loss, _WeightedLoss",
    "from torch.nn.modules.conv import _ConvNd, _ConvTransposeNd",
    "from torch.nn.modules.rnn import RNNCellBase",
    "from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_weights",
    "from torch.nn.grad import conv2d_input, conv3d_weight",
    "from torch.utils.data import ChainDataset, StackDataset",
    "from torch.optim.lr_scheduler import CyclicLR",
    "from torch.amp.autocast_mode import autocast, is_autocast_available",
    "from torch.amp.grad_scaler import GradScaler",
    "from torch.nn.parameter import UninitializedBuffer, UninitializedParameter",
]


@pytest.mark.parametrize("statement", IMPORTS)
def test_torch_import_path_exists_in_torch(statement):
    exec(statement, {})  # the oracle has each name where the statement looks for it


def test_torch_import_paths_under_the_hook():
    code = ("import retrograd.run as r; r.install()\n" + "\n".join(IMPORTS) +
            "\nimport torch, torch.nn.modules.batchnorm as b, retrograd\n"
            "assert b._BatchNorm is retrograd.nn.modules.batchnorm._BatchNorm\n"
            "assert isinstance(torch.nn.SyncBatchNorm(2), b._BatchNorm)\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_ntuple_parsers_match_torch():
    from torch.nn.modules import utils as tu

    from retrograd.nn.modules import utils as ru
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4, 5, 6], range(2)):
            assert getattr(ru, name)(value) == getattr(tu, name)(value)
        assert getattr(ru, name).__name__ == getattr(tu, name).__name__
    assert ru._ntuple(5, "five")(2) == tu._ntuple(5, "five")(2)
    assert ru._ntuple(5, "five").__name__ == "five"
    assert ru._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)
    assert ru._list_with_default([None, 3], [1, 2, 5, 7]) == tu._list_with_default([None, 3], [1, 2, 5, 7])
    with pytest.raises(ValueError, match="at least 3"):
        ru._list_with_default([None, 3], [1, 2])


def test_consume_prefix_in_state_dict():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as torch_consume

    from retrograd.nn.modules.utils import consume_prefix_in_state_dict_if_present as consume
    results = []
    for lib, fn in ((torch, torch_consume), (retrograd, consume)):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2))
        state = lib.nn.Sequential(model).state_dict()
        renamed = type(state)((k.replace("0.", "module.", 1), v) for k, v in state.items())
        renamed._metadata = {"module": {}, "module.0": {}, "": {}}
        fn(renamed, "module.")
        model.load_state_dict(renamed)
        results.append((list(renamed), sorted(renamed._metadata)))
    assert results[0] == results[1]


def _same(a, b, rtol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm2d", (2, 3, 4, 5)),
                                        ("LazyBatchNorm3d", (2, 3, 2, 2, 3)), ("LazyInstanceNorm1d", (2, 3, 5)),
                                        ("LazyInstanceNorm2d", (2, 3, 4, 4)), ("LazyInstanceNorm3d", (2, 3, 2, 3, 3))])
def test_lazy_norms_match_torch(name, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    modules, outs = [], []
    for lib, kwargs in ((torch, {}), (retrograd, {})):
        m = getattr(lib.nn, name)(dtype=lib.float64, **kwargs)
        assert repr(m) and list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                                    "num_batches_tracked"]
        assert m.has_uninitialized_params() and repr(m.running_mean) == "<UninitializedBuffer>"
        xi = lib.tensor(x, requires_grad=True)
        y = m(xi)
        (y * y.detach().sin()).sum().backward()
        modules.append(m)
        outs.append((y, xi.grad, m.weight.grad, m.running_mean, m.running_var, m.num_batches_tracked))
    assert repr(modules[0]) == repr(modules[1]) and type(modules[1]).__name__ == name.replace("Lazy", "")
    assert type(modules[1].running_mean) is retrograd.Tensor
    for a, b in zip(*outs, strict=True):
        _same(a, b)


def test_lazy_norm_options_and_state_dict_load():
    for lib in (torch, retrograd):
        m = lib.nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
        assert m.weight is None and m.running_mean is None and list(m.state_dict()) == []
    source = retrograd.nn.BatchNorm1d(3)
    source.running_mean.fill_(2.0)
    target = retrograd.nn.LazyBatchNorm1d()
    target.load_state_dict(source.state_dict())
    assert target.running_mean.tolist() == [2.0, 2.0, 2.0] and target.weight.shape == (3,)


def test_sync_batchnorm_converts_and_runs_as_batchnorm():
    outs = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3, momentum=None),
                                  lib.nn.Sequential(lib.nn.BatchNorm1d(4, affine=False)))
        bn = model[1]
        converted = lib.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert converted is model and type(model[1]) is lib.nn.SyncBatchNorm and model[1].weight is bn.weight
        assert model[1].running_mean is bn.running_mean and type(model[2][0]).__name__ == "SyncBatchNorm"
        x = lib.tensor(np.arange(2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3) / 7)
        y = model[1](model[0](x))
        outs.append((repr(model), y, model[1].running_var, model[1].process_group))
        single = lib.nn.SyncBatchNorm.convert_sync_batchnorm(lib.nn.BatchNorm1d(2).eval())
        assert type(single) is lib.nn.SyncBatchNorm and not single.training
        with pytest.raises(ValueError, match="expected at least 2D input") as e:
            single(lib.ones(3))
        outs.append(str(e.value))
        with pytest.raises(ValueError, match="non-zero"):
            lib.nn.SyncBatchNorm(0)(lib.ones(2, 0))
    assert outs[0][0] == outs[2][0] and outs[0][3] is outs[2][3] is None and outs[1] == outs[3]
    _same(outs[0][1], outs[2][1], rtol=1e-5)
    _same(outs[0][2], outs[2][2], rtol=1e-5)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1,
                                                                  stride=(2, 1))])
def test_fold_unfold_modules_match_torch(kwargs):
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 7))
    outs = []
    for lib in (torch, retrograd):
        unfold = lib.nn.Unfold(**kwargs)
        fold = lib.nn.Fold(output_size=(6, 7), **kwargs)
        xi = lib.tensor(x, requires_grad=True)
        cols = unfold(xi)
        back = fold(cols)
        (back * back.detach().cos()).sum().backward()
        outs.append((repr(unfold), repr(fold), cols.grad_fn.name(), back.grad_fn.name(), cols, back, xi.grad))
    assert outs[0][:4] == outs[1][:4]
    for a, b in zip(outs[0][4:], outs[1][4:], strict=True):
        _same(a, b)


@pytest.mark.parametrize("name", ["Dropout3d", "FeatureAlphaDropout"])
def test_channel_dropouts(name):
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match="between 0 and 1"):
            getattr(lib.nn, name)(1.5)
    reprs = [repr(getattr(lib.nn, name)(0.3, inplace=True)) for lib in (torch, retrograd)]
    assert reprs[0] == reprs[1]
    m = getattr(retrograd.nn, name)(0.5)
    x = retrograd.randn(4, 8, 2, 3, 3)
    y = m(x)
    # whole channels take one fate: within a channel y / x (or y - x's affine) is constant
    ratio = ((y - y.flatten(2).mean(-1)[..., None, None, None]) / (x - x.flatten(2).mean(-1)[..., None, None, None]))
    spread = ratio.flatten(2).std(-1)
    assert float(spread.max()) < 1e-4 or name == "FeatureAlphaDropout"
    m.eval()
    assert m(x) is x or bool((m(x) == x).all())


def test_unserializable_hook_marks_and_removable_handle_is_the_graphs():
    from retrograd.utils import hooks

    def hook(grad):
        return grad

    assert hooks.unserializable_hook(hook) is hook and hook.__torch_unserializable__
    t = retrograd.ones(2, requires_grad=True)
    assert isinstance(t.register_hook(hook), hooks.RemovableHandle)
    with __import__("warnings").catch_warnings(record=True) as caught:
        __import__("warnings").simplefilter("always")
        hooks.warn_if_has_hooks(t)
        t.register_hook(lambda g: g)
        hooks.warn_if_has_hooks(t)
    assert len(caught) == 1 and "will not be serialized" in str(caught[0].message)


LP_POOLS = [(2, 2, None, False), (3, 3, 2, True), (float("inf"), 2, 1, False), (-float("inf"), 2, None, True),
            (1.5, "tuple", None, False)]


# torch's lp_pool1d takes an int kernel_size only: no tuple case in one dimension
@pytest.mark.parametrize("n,norm_type,kernel,stride,ceil",
                         [(n, *case) for n in (1, 2, 3) for case in LP_POOLS if not (n == 1 and case[1] == "tuple")])
def test_lp_pool_functional_and_module_match_torch(n, norm_type, kernel, stride, ceil):
    if kernel == "tuple":
        kernel = (2,) * n
    shape = (2, 3, 6, 7, 5)[:n + 2]
    x = np.random.default_rng(n).standard_normal(shape)
    x = np.abs(x) + 0.1 if norm_type in (1.5, 3) else x  # a fractional power of a negative sum is NaN in both
    outs = []
    for lib in (torch, retrograd):
        xi = lib.tensor(x, requires_grad=True)
        y = getattr(lib.nn.functional, f"lp_pool{n}d")(xi, norm_type, kernel, stride, ceil)
        (y * y.detach().cos()).sum().backward()
        layer = getattr(lib.nn, f"LPPool{n}d")(norm_type, kernel, stride, ceil)
        outs.append((y.grad_fn.name(), repr(layer), y, xi.grad, layer(xi)))
    assert outs[0][:2] == outs[1][:2]
    for a, b in zip(outs[0][2:], outs[1][2:], strict=True):
        _same(a, b)


DEPRECATED_INITS = [("uniform", (), {}), ("normal", (0.5, 2.0), {}), ("constant", (0.25,), {}), ("eye", (), {}),
                    ("dirac", (), {"groups": 2}), ("xavier_uniform", (), {"gain": 2.0}), ("xavier_normal", (), {}),
                    ("kaiming_uniform", (), {"a": 0.1}), ("kaiming_normal", (), {"mode": "fan_out"}),
                    ("orthogonal", (), {}), ("sparse", (0.5,), {})]


@pytest.mark.parametrize("name,args,kwargs", DEPRECATED_INITS, ids=[d[0] for d in DEPRECATED_INITS])
def test_deprecated_init_names_warn_and_fill_as_the_underscore_ones(name, args, kwargs):
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    messages = []
    for lib in (torch, retrograd):
        old = getattr(lib.nn.init, name)
        assert old.__name__ == name
        lib.manual_seed(3)
        with pytest.warns(FutureWarning) as caught:
            filled = old(lib.empty(*shape), *args, **kwargs)
        messages.append(str(caught[0].message))
        lib.manual_seed(3)
        expected = getattr(lib.nn.init, name + "_")(lib.empty(*shape), *args, **kwargs)
        assert filled.tolist() == expected.tolist()
    assert messages[0] == messages[1] == f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 2), ((3, 5, 3, 4), 1), ((6, 2, 3, 3, 2), 3)])
def test_dirac_and_eye_match_torch(shape, groups):
    assert retrograd.nn.init.dirac_(retrograd.empty(*shape), groups).tolist() == \
        torch.nn.init.dirac_(torch.empty(*shape), groups).tolist()
    assert retrograd.nn.init.eye_(retrograd.empty(3, 5)).tolist() == torch.nn.init.eye_(torch.empty(3, 5)).tolist()
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
            lib.nn.init.dirac_(lib.empty(5, 2, 3), 2)


@pytest.mark.parametrize("d,kwargs", [(1, dict(stride=2, padding=1)),
                                      (2, dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
                                      (3, dict(padding=1))])
def test_nn_grad_conv_input_and_weight_match_torch(d, kwargs):
    rng = np.random.default_rng(d)
    input_size, weight_size = (2, 4) + (7,) * d, (6, 4 // kwargs.get("groups", 1)) + (3,) * d
    x, w = rng.standard_normal(input_size), rng.standard_normal(weight_size)
    out_shape = getattr(torch.nn.functional, f"conv{d}d")(torch.tensor(x), torch.tensor(w), **kwargs).shape
    g = rng.standard_normal(tuple(out_shape))
    outs = []
    for lib in (torch, retrograd):
        xi, wi, gi = (lib.tensor(a, requires_grad=True) for a in (x, w, g))
        grad_input = getattr(lib.nn.grad, f"conv{d}d_input")(input_size, wi, gi, **kwargs)
        grad_weight = getattr(lib.nn.functional.grad, f"conv{d}d_weight")(xi, weight_size, gi, **kwargs)
        (grad_input.sin().sum() + grad_weight.cos().sum()).backward()  # both are differentiable
        outs.append((grad_input.grad_fn.name(), grad_weight.grad_fn.name(), grad_input, grad_weight, xi.grad,
                     wi.grad, gi.grad))
    assert outs[0][:2] == outs[1][:2]
    for a, b in zip(outs[0][2:], outs[1][2:], strict=True):
        _same(a, b)
    # and they are conv's own gradients
    xi, wi = retrograd.tensor(x, requires_grad=True), retrograd.tensor(w, requires_grad=True)
    y = getattr(retrograd.nn.functional, f"conv{d}d")(xi, wi, **kwargs)
    _same(outs[1][2], retrograd.autograd.grad(y, xi, retrograd.tensor(g))[0])


def test_rnn_cell_base_for_custom_cells():
    states = []
    for lib in (torch, retrograd):
        class TwoGateCell(lib.nn.RNNCellBase):
            def __init__(self):
                super().__init__(3, 4, bias=False, num_chunks=2)

            def forward(self, x, h):
                gates = x @ self.weight_ih.T + h @ self.weight_hh.T
                return gates[:, :4].sigmoid() * gates[:, 4:].tanh()

        cell = TwoGateCell()
        h = cell(lib.ones(2, 3), lib.zeros(2, 4))
        states.append((repr(cell), [(k, tuple(v.shape)) for k, v in cell.state_dict().items()], tuple(h.shape),
                       float(cell.weight_hh.abs().max()) <= 0.5, isinstance(lib.nn.LSTMCell(2, 3), lib.nn.RNNCellBase)))
    assert states[0] == states[1]


@pytest.mark.parametrize("kind", ["conv", "conv_nobias", "conv_transpose", "linear", "linear_bn1"])
def test_fusion_matches_torch_and_the_unfused_pair(kind):
    x = np.random.default_rng(4).standard_normal((3, 4, 5, 5) if kind.startswith("conv") else (3, 4))
    outs = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        fuse = lib.nn.utils.fusion
        if kind.startswith("conv"):
            layer = lib.nn.ConvTranspose2d(4, 6, 3) if kind == "conv_transpose" else \
                lib.nn.Conv2d(4, 6, 3, bias=kind != "conv_nobias")
            bn = lib.nn.BatchNorm2d(6, affine=kind != "conv_nobias")
        else:
            layer, bn = lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(1 if kind == "linear_bn1" else 6)
        with lib.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            if bn.weight is not None:
                bn.weight.uniform_(0.5, 2)
        layer.eval(), bn.eval()
        xi = lib.tensor(x, dtype=lib.float32)
        fused = fuse.fuse_conv_bn_eval(layer, bn, transpose=kind == "conv_transpose") if kind.startswith("conv") \
            else fuse.fuse_linear_bn_eval(layer, bn)
        unfused = bn(layer(xi)[:, :1] if kind == "linear_bn1" else layer(xi))
        y = fused(xi)
        outs.append((type(fused.weight).__name__, fused.weight.requires_grad, fused is not layer, y, fused.bias))
        _same(y[:, :1] if kind == "linear_bn1" else y, unfused, rtol=1e-4)
        layer.train()
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            fuse.fuse_linear_bn_eval(layer, bn) if kind.startswith("linear") else fuse.fuse_conv_bn_eval(layer, bn)
    assert outs[0][:3] == outs[1][:3]
    _same(outs[0][3], outs[1][3], rtol=1e-5)
    _same(outs[0][4], outs[1][4], rtol=1e-5)


def test_adaptive_log_softmax_matches_torch():
    x = np.random.default_rng(0).standard_normal((7, 16))
    target = np.array([0, 3, 5, 9, 14, 19, 2])
    outs = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        asm = lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=True).double()
        xi = lib.tensor(x, requires_grad=True)
        out, loss = asm(xi, lib.tensor(target))
        loss.backward()
        single = asm(xi[0], lib.tensor(target[0]))
        outs.append((repr(asm), list(asm.state_dict()), out.grad_fn.name(), loss.grad_fn.name(),
                     asm.predict(xi).tolist(), type(single).__name__, single.output.shape,
                     out, loss, xi.grad, asm.head.weight.grad, asm.tail[1][0].weight.grad, asm.log_prob(xi)))
        with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
            asm(xi, lib.tensor([0, 1, 2, 3, 4, 5, 20]))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [10, 4])
    assert outs[0][:7] == outs[1][:7]
    for a, b in zip(outs[0][7:], outs[1][7:], strict=True):
        _same(a, b)


def test_weighted_loss_base_and_nllloss2d():
    from torch.nn.modules.loss import _WeightedLoss as TorchWeighted

    from retrograd.nn.modules.loss import _WeightedLoss
    results = []
    for lib, base in ((torch, TorchWeighted), (retrograd, _WeightedLoss)):
        class ScaledNLL(base):
            def __init__(self, weight=None, scale=2.0, reduction="mean"):
                super().__init__(weight, reduction=reduction)
                self.scale = scale

            def forward(self, input, target):
                return self.scale * lib.nn.functional.nll_loss(input, target, weight=self.weight,
                                                               reduction=self.reduction)

        loss = ScaledNLL(lib.tensor([1.0, 2.0, 0.5]), reduction="sum")
        logp = lib.tensor([[-1.0, -2.0, -0.5], [-0.3, -1.5, -2.5]])
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            old = lib.nn.NLLLoss2d(weight=lib.tensor([1.0, 2.0, 0.5]))
        results.append((list(loss.state_dict()), loss(logp, lib.tensor([1, 2])).item(),
                        [isinstance(getattr(lib.nn, n)(), base) for n in ("NLLLoss", "CrossEntropyLoss", "BCELoss",
                                                                          "MultiMarginLoss", "MSELoss")],
                        repr(old), old(logp, lib.tensor([1, 2])).item()))
    assert results[0] == results[1]


def test_clip_grads_with_norm_and_the_deprecated_clip_grad_norm():
    results = []
    for lib in (torch, retrograd):
        params = [lib.nn.Parameter(lib.ones(3)), lib.nn.Parameter(lib.ones(2, 2))]
        params[0].grad, params[1].grad = lib.tensor([3.0, 4.0, 0.0]), lib.full((2, 2), 2.0)
        total = lib.nn.utils.get_total_norm([p.grad for p in params])
        lib.nn.utils.clip_grads_with_norm_(params, 2.0, total)
        clipped = [p.grad.tolist() for p in params]
        with pytest.warns(FutureWarning, match="`torch.nn.utils.clip_grad_norm` is now deprecated"):
            again = lib.nn.utils.clip_grad_norm(iter(params), 1.0)
        with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
            lib.nn.utils.clip_grad_norm_((p for p in []), 1.0)
        results.append(np.hstack([total.item(), *map(np.ravel, clipped), again.item(),
                                  *(np.ravel(p.grad.tolist()) for p in params)]))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)


def test_factory_kwargs_and_the_deprecated_container():
    for lib in (torch, retrograd):
        merged = lib.nn.factory_kwargs({"dtype": lib.float64, "factory_kwargs": {"device": "cpu"}})
        assert merged == {"dtype": lib.float64, "device": "cpu"} and lib.nn.factory_kwargs(None) == {}
        with pytest.raises(TypeError, match="dtype specified twice"):
            lib.nn.factory_kwargs({"dtype": lib.float64, "factory_kwargs": {"dtype": lib.float32}})
        with pytest.raises(TypeError, match="unexpected kwargs"):
            lib.nn.factory_kwargs({"bias": True})
    reprs = []
    for lib in (torch, retrograd):
        with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
            box = lib.nn.Container(fc=lib.nn.Linear(2, 3), act=lib.nn.ReLU())
        reprs.append((repr(box), list(box.state_dict())))
    assert reprs[0] == reprs[1]


LEGACY_REDUCTION_CALLS = [  # (L, F) -> a loss given the deprecated flags; two of each, called from two lines
    lambda L, F: F.mse_loss(L.ones(3), L.zeros(3), reduce=False),
    lambda L, F: F.mse_loss(L.ones(3), L.zeros(3), reduce=False),
    lambda L, F: F.l1_loss(L.ones(3), L.zeros(3), size_average=True),
    lambda L, F: F.nll_loss(L.ones(2, 3), L.tensor([0, 1]), reduce=True),
    lambda L, F: F.cross_entropy(L.ones(2, 3), L.tensor([0, 1]), size_average=False),
    lambda L, F: F.binary_cross_entropy(L.full((3,), 0.5), L.zeros(3), reduce=True),
    lambda L, F: F.kl_div(L.ones(3), L.zeros(3), reduce=True),
    lambda L, F: F.margin_ranking_loss(L.ones(3), L.zeros(3), L.ones(3), reduce=True),
    lambda L, F: F.multilabel_soft_margin_loss(L.ones(2, 3), L.ones(2, 3), reduce=True),
    lambda L, F: L.nn.MSELoss(size_average=False),
    lambda L, F: L.nn.CrossEntropyLoss(size_average=False),
]


def test_deprecated_size_average_and_reduce_warn_at_the_librarys_lines_as_torchs():
    """torch's warning names its own line that translated the flags (a functional loss's, the one of
    legacy_get_enum for some, _Loss.__init__'s), never the caller's; ours names ours alike, so the same calls share
    a location, and under the default filter each location warns once per process whatever line calls it."""
    def scenario(L):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for call in LEGACY_REDUCTION_CALLS:
                call(L, L.nn.functional)
        library = os.path.dirname(L.__file__)
        assert all(w.filename.startswith(library) and w.category is UserWarning for w in caught)
        places: dict = {}
        shared = [places.setdefault((w.filename, w.lineno), len(places)) for w in caught]
        with warnings.catch_warnings(record=True) as once:
            warnings.simplefilter("default")
            for call in LEGACY_REDUCTION_CALLS:
                call(L, L.nn.functional)
            for call in LEGACY_REDUCTION_CALLS:
                call(L, L.nn.functional)
        return [str(w.message) for w in caught], shared, [str(w.message) for w in once]

    assert scenario(retrograd) == scenario(torch)


@pytest.mark.parametrize("batched,size", [(True, (20, 20)), (False, [20, 20]), (True, "Size")])
def test_conv_transpose_output_size_message_prints_the_sizes_as_given(batched, size):
    messages = []
    for lib in (torch, retrograd):
        x = lib.zeros((2, 4, 5, 6) if batched else (4, 5, 6))
        requested = lib.Size([2, 2, 20, 20]) if size == "Size" else size
        with pytest.raises(ValueError) as caught:
            lib.nn.ConvTranspose2d(4, 2, 3, stride=2)(x, output_size=requested)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_full_backward_hook_warning_points_at_the_users_line():
    for lib in (torch, retrograd):
        module = lib.nn.Linear(2, 2)
        module.register_full_backward_hook(lambda *args: None)
        with pytest.warns(UserWarning, match="Full backward hook is firing") as caught:
            module(lib.ones(1, 2)).sum().backward()
        assert caught[0].filename == __file__
