"""PyTorch's own module database (ModuleInfo, `module_db` in the torch wheel), swept: for every nn module it lists
and up to CAP of its sample inputs, the module is built with the same arguments in both libraries, torch's
state dict is loaded into retrograd's (so parameter names must agree; a lazy module's after a dry run), and the
float64 forward (eval mode) and a weighted backward to inputs and parameters must agree. Modules retrograd lacks
are strict xfails."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.testing._internal import common_modules
from torch.testing._internal.common_modules import module_db

import retrograd

CAP = 16
PRESENT = {info.module_cls.__name__ for info in module_db if hasattr(retrograd.nn, info.module_cls.__name__)}
CASES = [pytest.param(info, id=info.module_cls.__name__,
                      marks=[] if info.module_cls.__name__ in PRESENT else
                      [pytest.mark.xfail(strict=True, raises=AttributeError, reason="not in retrograd.nn")])
         for info in module_db]


def convert(obj, lib):
    """obj with each tensor a fresh leaf of lib (same values, dtype, requires_grad), dtypes and functionals lib's."""
    if isinstance(obj, torch.Tensor):
        t = lib.tensor(obj.detach().numpy(), dtype=getattr(lib, str(obj.dtype).split('.')[-1]))
        return t.requires_grad_() if obj.requires_grad else t
    if isinstance(obj, torch.dtype):
        return getattr(lib, str(obj).split('.')[-1])
    if callable(obj) and obj is getattr(torch.nn.functional, getattr(obj, "__name__", ""), None):
        return getattr(lib.nn.functional, obj.__name__)  # an activation given as torch's function
    if isinstance(obj, (list, tuple)):
        return type(obj)(convert(o, lib) for o in obj)
    if isinstance(obj, dict):
        return {k: convert(v, lib) for k, v in obj.items()}
    return obj


def flat(out):
    """The tensors in a (nested) output, in order."""
    if isinstance(out, (torch.Tensor, retrograd.Tensor)):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flat(o)]
    return []


# Modules built around a torch layer instance (TransformerEncoder(encoder_layer, num_layers)): the database makes
# that layer from the layer's own samples, in order, so retrograd's layer is built from the same constructor input
LAYER_SAMPLES = {"TransformerEncoder": ("TransformerEncoderLayer",
                                        common_modules.module_inputs_torch_nn_TransformerEncoderLayer)}


def retrograd_layer(name, index):
    """retrograd's layer for the index-th sample of a module in LAYER_SAMPLES."""
    layer_name, samples = LAYER_SAMPLES[name]
    c = samples(None, device="cpu", dtype=torch.float64, requires_grad=True, training=False)[index].constructor_input
    return getattr(retrograd.nn, layer_name)(*convert(c.args, retrograd), **convert(c.kwargs, retrograd))


def run_case(info, mi, index):
    """One ModuleInput: construct, copy torch's state, forward in eval mode, a weighted backward; compare."""
    name = info.module_cls.__name__
    cls = getattr(retrograd.nn, name)
    c, f = mi.constructor_input, mi.forward_input
    tm = info.module_cls(*c.args, **c.kwargs).to(torch.float64)
    rargs = [retrograd_layer(name, index) if isinstance(a, torch.nn.Module) else a for a in convert(c.args, retrograd)]
    rm = cls(*rargs, **convert(c.kwargs, retrograd)).to(retrograd.float64)
    tm.eval()
    rm.eval()
    if isinstance(tm, torch.nn.modules.lazy.LazyModuleMixin):  # a dry run gives torch's parameters their shapes;
        with torch.no_grad():                                  # loading them materialises retrograd's
            tm(*convert(f.args, torch), **convert(f.kwargs, torch))
    rm.load_state_dict({k: convert(v, retrograd) for k, v in tm.state_dict().items()})
    targs, tkw = convert(f.args, torch), convert(f.kwargs, torch)  # leaves, as retrograd's copies are
    rargs, rkw = convert(targs, retrograd), convert(tkw, retrograd)
    to, ro = flat(tm(*targs, **tkw)), flat(rm(*rargs, **rkw))
    assert len(to) == len(ro), "number of outputs"
    for a, b in zip(ro, to):
        assert tuple(a.shape) == tuple(b.shape), f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert str(a.dtype) == str(b.dtype), f"dtype {a.dtype} vs {b.dtype}"
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)
    tdiff = [o for o in to if o.requires_grad]
    rdiff = [o for o in ro if o.requires_grad]
    assert len(tdiff) == len(rdiff), "requires_grad of outputs"
    if not tdiff:
        return
    tins = [t for t in flat(targs) + flat(list(tkw.values())) if t.requires_grad] + list(tm.parameters())
    rins = [t for t in flat(rargs) + flat(list(rkw.values())) if t.requires_grad] + list(rm.parameters())
    rng = np.random.default_rng(0)
    ws = [rng.normal(size=tuple(o.shape)) for o in tdiff]
    tl = sum((o * torch.tensor(w)).sum() for o, w in zip(tdiff, ws))
    rl = sum((o * retrograd.tensor(w)).sum() for o, w in zip(rdiff, ws))
    tg = torch.autograd.grad(tl, tins, allow_unused=True)
    rg = retrograd.autograd.grad(rl, rins, allow_unused=True)
    for a, b in zip(rg, tg):
        if a is None or b is None:
            assert all(g is None or not g.detach().numpy().any() for g in (a, b)), "a gradient is None in one only"
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("info", CASES)
def test_module_database_entry_matches_torch(info):
    torch.manual_seed(0)  # the database draws its sample inputs from torch's generator
    inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=True, training=False)
    for index, module_input in enumerate(inputs[:CAP]):
        try:
            run_case(info, module_input, index)
        except AssertionError as error:
            raise AssertionError(f"{module_input.desc}: {error}") from error
