"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) and the legacy
nn.utils.weight_norm / spectral_norm against torch: state dict keys, reprs, errors, and after loading torch's
state dict, the same parametrized weights, forward values and gradients (to the originals and buffers)."""

import copy
import linecache
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import retrograd

rng = np.random.default_rng(0)


def both(build):
    """build(lib) for torch and retrograd, retrograd's loaded with torch's state dict (float64)."""
    torch.manual_seed(0)
    t_mod, r_mod = build(torch).double(), build(retrograd).double()
    assert list(r_mod.state_dict()) == list(t_mod.state_dict())
    r_mod.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})
    return t_mod, r_mod


def close(r, t, atol=1e-10):
    assert tuple(r.shape) == tuple(t.shape)
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-8)


def run_both(t_mod, r_mod, shape, steps=1):
    """Forward and backward `steps` times with the same inputs; compare outputs, parameters' grads, state."""
    for _ in range(steps):
        x = rng.standard_normal(shape)
        t_x, r_x = torch.tensor(x, requires_grad=True), retrograd.tensor(x, requires_grad=True)
        t_out, r_out = t_mod(t_x), r_mod(r_x)
        close(r_out, t_out)
        w = rng.standard_normal(tuple(t_out.shape))
        (t_out * torch.tensor(w)).sum().backward()
        (r_out * retrograd.tensor(w)).sum().backward()
        close(r_x.grad, t_x.grad)
    for r_p, t_p in zip(r_mod.parameters(), t_mod.parameters(), strict=True):
        close(r_p.grad, t_p.grad)
    for r_b, t_b in zip(r_mod.state_dict().values(), t_mod.state_dict().values(), strict=True):
        close(r_b, t_b)


# ---- parametrizations.weight_norm -----------------------------------------------------------


@pytest.mark.parametrize(("layer", "dim", "shape"), [
    (lambda lib: lib.nn.Linear(3, 4), 0, (5, 3)),
    (lambda lib: lib.nn.Linear(3, 4), 1, (5, 3)),
    (lambda lib: lib.nn.Linear(3, 4), None, (5, 3)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), 0, (1, 2, 5, 5)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), 2, (1, 2, 5, 5)),
])
def test_weight_norm_matches_torch(layer, dim, shape):
    t_mod, r_mod = both(lambda lib: lib.nn.utils.parametrizations.weight_norm(layer(lib), dim=dim))
    assert repr(r_mod) == repr(t_mod)
    assert type(r_mod).__name__ == type(t_mod).__name__ == f"Parametrized{type(layer(torch)).__name__}"
    assert type(r_mod.weight.grad_fn).__name__ == type(t_mod.weight.grad_fn).__name__
    close(r_mod.weight, t_mod.weight)
    run_both(t_mod, r_mod, shape)


def test_weight_norm_loads_a_legacy_state_dict_like_torch():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        legacy = torch.nn.utils.weight_norm(torch.nn.Linear(3, 4))
    state = {k: v.detach().numpy() for k, v in legacy.state_dict().items()}
    t_mod = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 4))
    r_mod = retrograd.nn.utils.parametrizations.weight_norm(retrograd.nn.Linear(3, 4))
    t_mod.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    r_mod.load_state_dict({k: retrograd.tensor(v) for k, v in state.items()})
    close(r_mod.weight, t_mod.weight, 1e-6)


# ---- parametrizations.spectral_norm ---------------------------------------------------------


@pytest.mark.parametrize(("layer", "kwargs", "shape"), [
    (lambda lib: lib.nn.Linear(4, 6), {}, (3, 4)),
    (lambda lib: lib.nn.Linear(4, 6), dict(n_power_iterations=3, dim=1), (3, 4)),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), {}, (2, 2, 5, 5)),
    (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), {}, (1, 2, 4, 4)),
])
@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_matches_torch(layer, kwargs, shape, train):
    t_mod, r_mod = both(lambda lib: lib.nn.utils.parametrizations.spectral_norm(layer(lib), **kwargs))
    assert repr(r_mod) == repr(t_mod)
    t_mod.train(train)
    r_mod.train(train)
    run_both(t_mod, r_mod, shape, steps=3)  # in training each call refines _u and _v


def test_spectral_norm_errors_match_torch():
    for lib in (torch, retrograd):
        sn = lib.nn.utils.parametrizations.spectral_norm
        with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\] but got 2\)"):
            sn(lib.nn.Linear(2, 2), dim=2)
        with pytest.raises(ValueError, match="positive, but got n_power_iterations=0"):
            sn(lib.nn.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
            sn(lib.nn.Linear(2, 2), name="kernel")


# ---- parametrizations.orthogonal ------------------------------------------------------------


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("features", [(4, 4), (3, 5), (5, 3)])
def test_orthogonal_matches_torch(orthogonal_map, features):
    t_mod, r_mod = both(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(*features),
                                                                               orthogonal_map=orthogonal_map))
    weight = r_mod.weight
    small = min(weight.shape)
    gram = weight.T @ weight if weight.shape[0] >= weight.shape[1] else weight @ weight.T
    close(gram, torch.eye(small), 1e-6)  # the base was made in float32
    close(weight, t_mod.weight)
    run_both(t_mod, r_mod, (2, features[0]))


@pytest.mark.parametrize("features", [(4, 4), (3, 5)])
def test_orthogonal_without_trivialization_matches_torch(features):
    torch.manual_seed(0)
    t_lin = torch.nn.Linear(*features).double()
    r_lin = retrograd.nn.Linear(*features).double()
    r_lin.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_lin.state_dict().items()})
    t_mod = torch.nn.utils.parametrizations.orthogonal(t_lin, orthogonal_map="householder", use_trivialization=False)
    r_mod = retrograd.nn.utils.parametrizations.orthogonal(r_lin, orthogonal_map="householder",
                                                           use_trivialization=False)
    assert list(r_mod.state_dict()) == list(t_mod.state_dict())
    close(r_mod.parametrizations.weight.original, t_mod.parametrizations.weight.original)
    close(r_mod.weight, t_mod.weight)
    run_both(t_mod, r_mod, (2, features[0]))


def test_orthogonal_errors_match_torch():
    for lib in (torch, retrograd):
        orth = lib.nn.utils.parametrizations.orthogonal
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
            orth(lib.nn.Linear(2, 2), name="bias")
        with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
            orth(lib.nn.Linear(2, 2), orthogonal_map="qr")
        mod = orth(lib.nn.Linear(2, 2), orthogonal_map="cayley", use_trivialization=False)
        with pytest.raises(NotImplementedError, match="not possible to assign to the matrix exponential"):
            mod.weight = lib.eye(2)


# ---- parametrize ----------------------------------------------------------------------------


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def scaled(lib):
    class Scale(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.nn.Parameter(lib.tensor(2.0, dtype=lib.float64))

        def forward(self, x):
            return x * self.scale

        def right_inverse(self, x):
            return x / self.scale

    return Scale()


def chained(lib):
    module = lib.nn.Linear(3, 3)
    lib.nn.utils.parametrize.register_parametrization(module, "weight", symmetric(lib))
    lib.nn.utils.parametrize.register_parametrization(module, "weight", scaled(lib))
    return module


def test_chained_parametrizations_match_torch():
    t_mod, r_mod = both(chained)
    assert repr(r_mod) == repr(t_mod)
    assert list(r_mod.state_dict()) == ["bias", "parametrizations.weight.original",
                                        "parametrizations.weight.1.scale"]
    close(r_mod.weight, t_mod.weight)
    run_both(t_mod, r_mod, (2, 3))
    value = rng.standard_normal((3, 3))
    t_mod.weight = torch.tensor(value)
    r_mod.weight = retrograd.tensor(value)
    close(r_mod.parametrizations.weight.original, t_mod.parametrizations.weight.original)
    close(r_mod.weight, t_mod.weight)


def test_cached_computes_once_and_clears():
    for lib in (torch, retrograd):
        module = chained(lib)
        parametrize = lib.nn.utils.parametrize
        with parametrize.cached():
            first = module.weight
            assert module.weight is first
            with parametrize.cached():
                assert module.weight is first
            assert module.weight is first
        assert module.weight is not first


@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_parametrizations_matches_torch(leave_parametrized):
    t_mod, r_mod = both(chained)
    t_original = t_mod.parametrizations.weight.original
    r_original = r_mod.parametrizations.weight.original
    for lib, mod in ((torch, t_mod), (retrograd, r_mod)):
        parametrize = lib.nn.utils.parametrize
        assert parametrize.is_parametrized(mod) and parametrize.is_parametrized(mod, "weight")
        assert not parametrize.is_parametrized(mod, "bias")
        assert parametrize.type_before_parametrizations(mod) is lib.nn.Linear
        parametrize.remove_parametrizations(mod, "weight", leave_parametrized=leave_parametrized)
        assert type(mod) is lib.nn.Linear and not hasattr(mod, "parametrizations")
        assert not parametrize.is_parametrized(mod)
    assert r_mod.weight is r_original and t_mod.weight is t_original  # the same tensor objects, as torch keeps them
    assert list(r_mod.state_dict()) == list(t_mod.state_dict())
    close(r_mod.weight, t_mod.weight)


def test_weight_norm_removal_leaves_the_weight_and_refuses_the_originals():
    t_mod, r_mod = both(lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 4)))
    errors = []
    for lib, mod in ((torch, t_mod), (retrograd, r_mod)):
        with pytest.raises(ValueError) as info:
            lib.nn.utils.parametrize.remove_parametrizations(mod, "weight", leave_parametrized=False)
        errors.append(str(info.value))
        lib.nn.utils.parametrize.remove_parametrizations(mod, "weight")
    assert errors[0] == errors[1]
    assert isinstance(r_mod.weight, retrograd.nn.Parameter)
    close(r_mod.weight, t_mod.weight)


def registration_errors(lib):
    class Flatten(lib.nn.Module):
        def forward(self, x):
            return x.flatten()

    class Half(lib.nn.Module):
        def forward(self, x):
            return x.half()

    found = []
    for call in (
        lambda: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Flatten()),
        lambda: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Half()),
        lambda: lib.nn.utils.parametrize.register_parametrization(chained(lib), "weight", Flatten()),
        lambda: lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "kernel", Flatten()),
        lambda: lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight"),
    ):
        with pytest.raises(Exception) as info:
            call()
        found.append((info.type.__name__, str(info.value).replace("torch.", "").split("\n")[0]))
    return found


def test_registration_errors_match_torch():
    assert registration_errors(retrograd) == registration_errors(torch)


def test_parametrized_modules_deepcopy_and_refuse_pickling():
    module = chained(retrograd)
    twin = copy.deepcopy(module)
    close(twin.weight, module.weight)
    assert twin.parametrizations.weight.original is not module.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through"):
        pickle.dumps(module)


def test_optimizer_trains_the_original_of_a_parametrized_weight():
    module = retrograd.nn.utils.parametrizations.weight_norm(retrograd.nn.Linear(3, 2))
    optimizer = retrograd.optim.SGD(module.parameters(), lr=0.1)
    before = module.weight.detach().clone()
    module(retrograd.randn(4, 3)).pow(2).sum().backward()
    optimizer.step()
    assert not retrograd.allclose(module.weight, before)


# ---- legacy weight_norm and spectral_norm ---------------------------------------------------


def legacy_weight_norm(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 3, 2), dim=1)


def test_legacy_weight_norm_matches_torch():
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        retrograd.nn.utils.weight_norm(retrograd.nn.Linear(2, 2))
    t_mod, r_mod = both(legacy_weight_norm)
    assert list(r_mod.state_dict()) == ["bias", "weight_g", "weight_v"]
    run_both(t_mod, r_mod, (1, 2, 5), steps=2)
    for lib, mod in ((torch, t_mod), (retrograd, r_mod)):
        lib.nn.utils.remove_weight_norm(mod)
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
            lib.nn.utils.remove_weight_norm(mod)
    assert list(r_mod.state_dict()) == list(t_mod.state_dict())
    close(r_mod.weight, t_mod.weight)


def test_legacy_weight_norm_warns_once_from_inside_the_library_as_torch_does():
    """Torch's warning names weight_norm's call of WeightNorm.apply, so calls from two user lines warn once."""
    def warnings_of(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
        return [(w.category, str(w.message), Path(w.filename).name, linecache.getline(w.filename, w.lineno).strip())
                for w in caught]

    theirs, ours = warnings_of(torch), warnings_of(retrograd)
    assert len(theirs) == 1 and ours == theirs


@pytest.mark.parametrize("train", [True, False])
def test_legacy_spectral_norm_matches_torch(train):
    t_mod, r_mod = both(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(4, 3), n_power_iterations=2))
    assert list(r_mod.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    t_mod.train(train)
    r_mod.train(train)
    run_both(t_mod, r_mod, (2, 4), steps=3)
    for lib, mod in ((torch, t_mod), (retrograd, r_mod)):
        lib.nn.utils.remove_spectral_norm(mod)
    assert list(r_mod.state_dict()) == list(t_mod.state_dict()) == ["bias", "weight"]
    close(r_mod.weight, t_mod.weight)


# ---- the _weight_norm row ---------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 0), ((2, 3, 4), 2), ((2, 3, 4), 1), ((2, 3), -1)])
def test_weight_norm_op_matches_torch_and_passes_gradchecks(shape, dim):
    v = rng.standard_normal(shape)
    g_shape = () if dim == -1 else tuple(n if i == dim else 1 for i, n in enumerate(shape))
    g = rng.standard_normal(g_shape) + 2
    w = rng.standard_normal(shape)
    results = []
    for lib in (torch, retrograd):
        tv, tg = lib.tensor(v, requires_grad=True), lib.tensor(g, requires_grad=True)
        out = lib._weight_norm(tv, tg, dim)
        (out * lib.tensor(w)).sum().backward()
        results.append((out, tv.grad, tg.grad, type(out.grad_fn).__name__, lib.norm_except_dim(tv, 2, dim)))
    for r, t in zip(results[1], results[0], strict=True):
        if isinstance(t, str):
            assert r == t
        else:
            close(r, t)
    tv, tg = retrograd.tensor(v, requires_grad=True), retrograd.tensor(g, requires_grad=True)

    def fn(v, g):
        return retrograd._weight_norm(v, g, dim)

    assert retrograd.autograd.gradcheck(fn, (tv, tg))
    assert retrograd.autograd.gradgradcheck(fn, (tv, tg))
    assert retrograd.autograd.gradcheck(fn, (tv, tg), check_forward_ad=True, check_backward_ad=False)
