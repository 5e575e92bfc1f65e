"""Optimisers and lr schedules against torch: the same model, the same initial weights, the same steps.

Each model is built in torch, its state_dict is copied into the retrograd twin through NumPy, and
both are trained for several steps on the same batch; every parameter must then agree to float32
tolerances, for every optimiser and option that torch's single-tensor code path has.
"""

import contextlib
import functools
import warnings

import numpy as np
import pytest
import torch

import retrograd

STEPS = 6


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 4, 3), nn.Tanh(),
                         nn.Flatten(), nn.Linear(4, 3))


def bn_cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.AvgPool2d(2),
                         nn.Flatten(), nn.Linear(36, 3))


INPUTS = {mlp: (8, 6), cnn: (8, 1, 6, 6), bn_cnn: (8, 1, 6, 6)}


def twin(build):
    """A torch model and a retrograd model with torch's initial weights."""
    torch.manual_seed(0)
    t_model = build(torch)
    r_model = build(retrograd)
    r_model.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_model.state_dict().items()})
    return t_model, r_model


def batch(build):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(INPUTS[build]).astype(np.float32)
    y = rng.integers(0, 3, size=8)
    return x, y


OPTIMISERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.1, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.05)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.01)),  # rho_t > 5 from step 6 on: both branches
    ("RAdam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True, betas=(0.9, 0.9))),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.01)),  # averaging from step 4 on
]


def train(lib, model, optimizer, x, y, steps=STEPS):
    xs, ys = lib.tensor(x), lib.tensor(y)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def assert_same_parameters(t_model, r_model, atol=2e-5, rtol=1e-4):
    t_params = dict(t_model.named_parameters())
    r_params = dict(r_model.named_parameters())
    assert list(t_params) == list(r_params)
    for name, p in t_params.items():
        np.testing.assert_allclose(r_params[name].detach().numpy(), p.detach().numpy(), atol=atol, rtol=rtol,
                                   err_msg=name)


@pytest.mark.parametrize("build", [mlp, cnn, bn_cnn], ids=["mlp", "cnn", "bn_cnn"])
@pytest.mark.parametrize("name,options", OPTIMISERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMISERS)])
def test_training_matches_torch(build, name, options):
    t_model, r_model = twin(build)
    x, y = batch(build)
    t_losses = train(torch, t_model, getattr(torch.optim, name)(t_model.parameters(), **options), x, y)
    r_losses = train(retrograd, r_model, getattr(retrograd.optim, name)(r_model.parameters(), **options), x, y)
    np.testing.assert_allclose(r_losses, t_losses, rtol=1e-4, atol=1e-5)
    assert_same_parameters(t_model, r_model)
    for (n, tb), (_, rb) in zip(t_model.named_buffers(), r_model.named_buffers()):
        np.testing.assert_allclose(rb.numpy(), tb.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)


COMPLEX_OPTIMISERS = OPTIMISERS + [("Rprop", dict(lr=0.01)), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5)))]


@pytest.mark.parametrize("name,options", COMPLEX_OPTIMISERS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(COMPLEX_OPTIMISERS)])
def test_complex_parameters_train_as_torchs(name, options):
    """Note [complex parameters]: the adaptive optimisers update a complex parameter as pairs of reals and keep
    complex states; SGD works on the complex values (the same numbers, its update being linear)."""
    def run(lib):
        z = lib.nn.Parameter(lib.tensor(np.array([1 + 2j, -0.5 + 0.25j, 0.1 - 0.7j])))
        coefficients = lib.tensor(np.array([0.3 - 1j, 2 + 0.5j, -1 + 1j]))
        optimizer = getattr(lib.optim, name)([z], **options)
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = (z * coefficients).abs().sum() + (z.real ** 2).sum() - z.imag.sum()
            loss.backward()
            optimizer.step()
        state = {key: (str(value.dtype), tuple(value.shape)) for key, value in optimizer.state[z].items()
                 if isinstance(value, lib.Tensor)}
        return z.detach().numpy(), state

    (ours, our_state), (theirs, their_state) = run(retrograd), run(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert our_state == their_state


@pytest.mark.parametrize("options", [dict(lr=0.01), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-4, 0.2))])
def test_rprop_matches_torch_in_float64(options):
    """Rprop steps by the sign of each gradient, so a float32 gradient that rounds to the other side of zero
    changes the result: compared in float64, on a least-squares fit."""
    def fit(lib):
        rng = np.random.default_rng(2)
        a, b = lib.tensor(rng.normal(size=(20, 4))), lib.tensor(rng.normal(size=20))
        w = lib.nn.Parameter(lib.tensor(rng.normal(size=4)))
        opt = lib.optim.Rprop([w], **options)
        for _ in range(15):
            opt.zero_grad()
            loss = ((a @ w - b) ** 2).mean()
            loss.backward()
            opt.step()
        return w.detach().numpy(), opt.state[w]["step_size"].numpy()

    for ours, theirs in zip(fit(retrograd), fit(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_rprop_ignores_a_groups_weight_decay_as_torch():
    """Rprop has no weight decay: a `weight_decay` key in a parameter group (generic decay/no-decay groups) is
    ignored by torch's, and by retrograd's."""
    def fit(lib):
        w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64))
        opt = lib.optim.Rprop([{"params": [w], "weight_decay": 0.5}], lr=0.1)
        for _ in range(6):
            opt.zero_grad()
            ((w - 0.5) ** 2).sum().backward()
            opt.step()
        return w.detach().numpy()

    np.testing.assert_allclose(fit(retrograd), fit(torch), rtol=1e-12)


def test_param_groups_have_their_own_hyper_parameters():
    t_model, r_model = twin(mlp)
    x, y = batch(mlp)

    def groups(model):
        return [{"params": model[0].parameters(), "lr": 0.2, "momentum": 0.5},
                {"params": list(model[2].parameters()) + list(model[4].parameters())}]

    t_opt = torch.optim.SGD(groups(t_model), lr=0.05, momentum=0.9)
    r_opt = retrograd.optim.SGD(groups(r_model), lr=0.05, momentum=0.9)
    assert [g["lr"] for g in r_opt.param_groups] == [0.2, 0.05]
    assert [g["momentum"] for g in r_opt.param_groups] == [0.5, 0.9]
    train(torch, t_model, t_opt, x, y)
    train(retrograd, r_model, r_opt, x, y)
    assert_same_parameters(t_model, r_model)


def test_add_param_group_and_frozen_parameters():
    t_model, r_model = twin(mlp)
    x, y = batch(mlp)
    for lib, model in ((torch, t_model), (retrograd, r_model)):
        model[0].weight.requires_grad_(False)
        opt = lib.optim.Adam(model[2].parameters(), lr=0.01)
        opt.add_param_group({"params": model[4].parameters(), "lr": 0.05})
        train(lib, model, opt, x, y)
    assert_same_parameters(t_model, r_model)


def test_zero_grad_sets_none_or_zeros():
    model = retrograd.nn.Linear(3, 2)
    opt = retrograd.optim.SGD(model.parameters(), lr=0.1)
    model(retrograd.ones(1, 3)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())
    model(retrograd.ones(1, 3)).sum().backward()
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_parameters_without_grad_are_skipped_and_keep_no_state():
    a = retrograd.nn.Parameter(retrograd.ones(2))
    b = retrograd.nn.Parameter(retrograd.ones(2))
    opt = retrograd.optim.Adam([a, b], lr=0.1)
    (a * 2).sum().backward()
    opt.step()
    assert b.tolist() == [1.0, 1.0]
    assert b not in opt.state and a in opt.state


def test_step_runs_the_closure_with_grad_enabled():
    t_model, r_model = twin(mlp)
    x, y = batch(mlp)
    results = []
    for lib, model in ((torch, t_model), (retrograd, r_model)):
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        xs, ys = lib.tensor(x), lib.tensor(y)

        def closure(lib=lib, model=model, opt=opt, xs=xs, ys=ys):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(xs), ys)
            loss.backward()
            return loss

        with lib.no_grad():
            results.append(opt.step(closure).item())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
    assert_same_parameters(t_model, r_model)


@pytest.mark.parametrize("name,options", [OPTIMISERS[2], OPTIMISERS[6], OPTIMISERS[11], OPTIMISERS[14]],
                         ids=["SGD", "Adam", "RMSprop", "Adagrad"])
def test_state_dict_round_trip_continues_training_exactly(name, options):
    t_model, r_model = twin(mlp)
    x, y = batch(mlp)
    t_opt = getattr(torch.optim, name)(t_model.parameters(), **options)
    r_opt = getattr(retrograd.optim, name)(r_model.parameters(), **options)
    train(torch, t_model, t_opt, x, y, steps=3)
    train(retrograd, r_model, r_opt, x, y, steps=3)
    t_state, r_state = t_opt.state_dict(), r_opt.state_dict()
    assert r_state["param_groups"] == t_state["param_groups"]
    assert r_state["state"].keys() == t_state["state"].keys()
    for key, t_entry in t_state["state"].items():
        assert list(r_state["state"][key]) == list(t_entry)
        for field, value in t_entry.items():
            np.testing.assert_allclose(r_state["state"][key][field].numpy(), value.numpy(), rtol=1e-4, atol=1e-6)
            assert r_state["state"][key][field].dtype.name == str(value.dtype).split(".")[1]
    # a fresh optimiser, loaded from a saved and re-read state_dict, continues exactly
    path = retrograd.serialization.io.BytesIO()
    retrograd.save(r_state, path)
    path.seek(0)
    fresh = getattr(retrograd.optim, name)(r_model.parameters(), lr=123.0)
    fresh.load_state_dict(retrograd.load(path))
    assert fresh.param_groups[0]["lr"] == options["lr"]
    train(torch, t_model, t_opt, x, y, steps=3)
    train(retrograd, r_model, fresh, x, y, steps=3)
    assert_same_parameters(t_model, r_model)


ADAM_CASES = [
    ("Adam", dict(lr=1e-2)), ("Adam", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=1e-2, weight_decay=1, maximize=True, betas=(0.0, 0.9))),
    ("Adam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, eps=1e-3)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1)), ("AdamW", dict(lr=1e-2, amsgrad=True, maximize=True))]
ADAM_SHAPES = ((5, 4), (4,), (2, 3, 2), ())
ADAM_FAMILY_CASES = ADAM_CASES + [  # the optimisers that share Adam's moments (adam._update_moments)
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=1e-2, betas=(0.3, 0.9), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=1e-2, weight_decay=1, maximize=True))]


def adam_steps(lib, name: str, options: dict, dtype, steps: int = 7, device: str = "cpu") -> list:
    """Parameters of ADAM_SHAPES after `steps` steps of lib's `name` on seeded random gradients, with the state."""
    rng = np.random.default_rng(3)
    params = [lib.tensor(rng.standard_normal(shape).astype(dtype), device=device, requires_grad=True)
              for shape in ADAM_SHAPES]
    optimizer = getattr(lib.optim, name)(params, **options)
    for _ in range(steps):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(p.shape).astype(dtype), device=device)
        optimizer.step()
    return [(p, optimizer.state[p]) for p in params]


def assert_same_bits_and_versions(ours: list, theirs: list) -> None:
    for (p, state), (q, expected) in zip(ours, theirs):
        assert p.detach().cpu().numpy().tobytes() == q.detach().cpu().numpy().tobytes()
        assert p._version == q._version
        assert list(state) == list(expected)
        for key, value in state.items():
            assert value.cpu().numpy().tobytes() == expected[key].cpu().numpy().tobytes()
            assert value._version == expected[key]._version


@pytest.mark.parametrize("name,options", ADAM_FAMILY_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_family_matches_torch_values_and_version_counts(name, options, dtype):
    """Adam's step on the arrays and on the tensor ops (under a transform, here saved-tensor hooks: Note [Adam on
    arrays]) both give torch's numbers, and count torch's in-place writes on each tensor; so do NAdam's and RAdam's
    (seven steps: RAdam's rectified branch from the sixth)."""
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    theirs = adam_steps(torch, name, dict(options, foreach=False), dtype)
    for hooks in (contextlib.nullcontext(), retrograd.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)):
        with hooks:
            ours = adam_steps(retrograd, name, options, dtype)
        for (p, state), (q, expected) in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tol)
            assert p._version == q._version
            assert list(state) == list(expected)
            for key, value in state.items():
                np.testing.assert_allclose(value.numpy(), expected[key].numpy(), **tol)
                assert value._version == expected[key]._version, key


@pytest.mark.parametrize("name,options", ADAM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_step_on_arrays_equals_its_tensor_ops_bit_for_bit(name, options, dtype):
    """Note [Adam on arrays]: with a transform in use (here saved-tensor hooks) the step's arithmetic runs on
    tensors, else on their arrays; both give the same bits and version counts."""
    with retrograd.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        on_tensors = adam_steps(retrograd, name, options, dtype)
    assert_same_bits_and_versions(adam_steps(retrograd, name, options, dtype), on_tensors)


@pytest.mark.parametrize("name,options", ADAM_CASES)
def test_adam_step_on_an_array_api_device_equals_the_cpus(name, options):
    """Note [Adam on arrays]: on another array library's arrays (array_api_strict's behind 'cuda') the step runs
    in that library's namespace and gives the CPU's bits and version counts."""
    import array_api_strict

    with retrograd._xp.use("cuda", array_api_strict, (array_api_strict.Device("device1"),)):
        on_device = adam_steps(retrograd, name, options, np.float32, device="cuda")
        assert all(p.is_cuda and all(v.is_cuda for k, v in state.items() if k != "step") for p, state in on_device)
        assert_same_bits_and_versions(on_device, adam_steps(retrograd, name, options, np.float32))


def test_load_state_dict_checks_groups():
    p = retrograd.nn.Parameter(retrograd.ones(2))
    q = retrograd.nn.Parameter(retrograd.ones(2))
    state = retrograd.optim.SGD([p], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        retrograd.optim.SGD([p, q], lr=0.1).load_state_dict(state)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        retrograd.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1).load_state_dict(state)


def errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - we compare whatever each library raises
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("call", [
    lambda lib, p: lib.optim.SGD([p], lr=-1),
    lambda lib, p: lib.optim.SGD([p], lr=0.1, nesterov=True),
    lambda lib, p: lib.optim.SGD([p], lr=0.1, momentum=-0.5),
    lambda lib, p: lib.optim.Adam([p], betas=(1.0, 0.9)),
    lambda lib, p: lib.optim.Adam([p], betas=(0.9, -0.1)),
    lambda lib, p: lib.optim.Adam([p], eps=-1.0),
    lambda lib, p: lib.optim.RMSprop([p], alpha=-1.0),
    lambda lib, p: lib.optim.Adagrad([p], lr_decay=-1.0),
    lambda lib, p: lib.optim.Adadelta([p], rho=1.5),
    lambda lib, p: lib.optim.Adamax([p], betas=(0.9, 1.0)),
    lambda lib, p: lib.optim.NAdam([p], momentum_decay=-0.1),
    lambda lib, p: lib.optim.RAdam([p], eps=-1.0),
    lambda lib, p: lib.optim.Rprop([p], etas=(1.5, 0.5)),
    lambda lib, p: lib.optim.ASGD([p], weight_decay=-1.0),
    lambda lib, p: lib.optim.Adafactor([p], beta2_decay=0.5),
    lambda lib, p: lib.optim.Adafactor([p], eps=(-1.0, 1e-3)),
    lambda lib, p: lib.optim.Adafactor([p], d=0.5),
    lambda lib, p: lib.optim.Adafactor([q := lib.nn.Parameter(lib.ones(2, dtype=lib.complex128))]).step(
        lambda: (q * q.conj()).real.sum().backward()),
    lambda lib, p: lib.optim.Muon([p]),
    lambda lib, p: lib.optim.Muon([lib.nn.Parameter(lib.ones(1, 2))], adjust_lr_fn="other"),
    lambda lib, p: lib.optim.Muon([lib.nn.Parameter(lib.ones(1, 2))], momentum=-1.0),
    lambda lib, p: lib.optim.Muon([m := lib.nn.Parameter(lib.ones(1, 2))], ns_steps=100).step(
        lambda: m.sum().backward()),
    lambda lib, p: lib.optim.SparseAdam([p], lr=0.0),
    lambda lib, p: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2, dtype=lib.complex128))]),
    lambda lib, p: lib.optim.SparseAdam([p]).step(lambda: (p * p).sum().backward()),
    lambda lib, p: lib.optim.SGD([], lr=0.1),
    lambda lib, p: lib.optim.SGD(p, lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": {p}}], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
    lambda lib, p: lib.optim.SGD([p * 2], lr=0.1),
    lambda lib, p: lib.optim.SGD([3], lr=0.1),
    lambda lib, p: lib.optim.SGD([p], lr=0.1).add_param_group([p]),
    lambda lib, p: lib.optim.SGD([("w", p), lib.nn.Parameter(lib.ones(1))], lr=0.1),
    lambda lib, p: lib.optim.SGD([("w", p)], lr=0.1).add_param_group({"params": [lib.nn.Parameter(lib.ones(1))]}),
    lambda lib, p: lib.optim.SGD([p], lr=0.1).add_param_group({"params": [("v", lib.nn.Parameter(lib.ones(1)))]}),
    lambda lib, p: lib.optim.lr_scheduler.ReduceLROnPlateau(lib.optim.SGD([p]), factor=2.0),
    lambda lib, p: lib.optim.lr_scheduler.StepLR(lib.optim.SGD([p]), 2, last_epoch=5),
    lambda lib, p: lib.optim.lr_scheduler.ReduceLROnPlateau(lib.optim.SGD([p]), mode="up"),
    lambda lib, p: lib.optim.LBFGS([p], lr=-0.5),
    lambda lib, p: lib.optim.LBFGS([p], lr=lib.tensor([0.5, 0.5])),
    lambda lib, p: lib.optim.LBFGS([{"params": [p]}, {"params": [lib.nn.Parameter(lib.ones(1))]}]),
    lambda lib, p: lib.optim.LBFGS([p], line_search_fn="backtracking").step(lambda: (p * p).sum().backward()
                                                                             or (p * p).sum()),
], ids=lambda _: "")
def test_errors_match_torch(call):
    expected = errors(lambda: call(torch, torch.nn.Parameter(torch.ones(2))))
    assert expected is not None
    assert errors(lambda: call(retrograd, retrograd.nn.Parameter(retrograd.ones(2)))) == expected


def test_repr_matches_torch():
    t = torch.optim.AdamW([torch.nn.Parameter(torch.ones(1))], lr=0.5, amsgrad=True)
    r = retrograd.optim.AdamW([retrograd.nn.Parameter(retrograd.ones(1))], lr=0.5, amsgrad=True)
    assert repr(r) == repr(t)


def test_repr_of_two_param_groups_matches_torch():
    """timm's no-weight-decay group beside the decayed one: torch prints a blank line between the groups."""

    def shown(lib):
        groups = [{"params": [lib.nn.Parameter(lib.ones(1))], "weight_decay": 0.0},
                  {"params": [lib.nn.Parameter(lib.ones(2, 2))]}]
        return repr(lib.optim.AdamW(groups, lr=0.01, weight_decay=0.05))

    assert shown(retrograd) == shown(torch)


def test_named_parameters_keep_their_names_as_torchs():
    """AdamW(model.named_parameters()) (torch >= 2.6): the names go to group["param_names"], into state_dict and
    the repr; a loaded state dict's names replace the group's, a state dict without names keeps them."""
    def named(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 1))
        opt = lib.optim.AdamW([{"params": model[0].named_parameters()},
                               {"params": list(model[1].named_parameters()), "lr": 0.5}], lr=1e-3)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        saved = opt.state_dict()
        p = lib.nn.Parameter(lib.ones(1))
        keeps = lib.optim.SGD([("w", p)], lr=0.1)
        keeps.load_state_dict(lib.optim.SGD([p], lr=0.2).state_dict())
        takes = lib.optim.SGD([p], lr=0.1)
        takes.load_state_dict(lib.optim.SGD([("v", p)], lr=0.3).state_dict())
        def without_tensors(group):
            return [(k, v) for k, v in group.items() if k != "params"], list(group).index("params")

        return ([list(g.items()) for g in saved["param_groups"]], sorted(saved["state"]), repr(opt),
                without_tensors(keeps.param_groups[0]), without_tensors(takes.param_groups[0]),
                list(takes.state_dict()["param_groups"][0].items()))

    assert named(retrograd) == named(torch)


# --------------------------------------------------------------------------------------------
# Learning-rate schedules
# --------------------------------------------------------------------------------------------

SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 1 / (1 + epoch))),
    ("MultiplicativeLR", dict(lr_lambda=lambda epoch: 0.9 if epoch % 2 else 1.05)),
    ("ConstantLR", dict(factor=0.25, total_iters=4)),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.9, total_iters=6)),
    ("PolynomialLR", dict(total_iters=8, power=0.9)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001)),
    ("OneCycleLR", dict(max_lr=[0.5, 1.0], total_steps=20)),
    ("OneCycleLR", dict(max_lr=0.4, epochs=4, steps_per_epoch=5, anneal_strategy="linear", three_phase=True,
                        pct_start=0.25)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3)),
    ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.5], step_size_up=2, step_size_down=3, mode="triangular2",
                      base_momentum=0.7, max_momentum=[0.9, 0.95])),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=1, mode="exp_range", gamma=0.9)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
                      scale_mode="iterations", cycle_momentum=False)),
]


def two_group_optimisers():
    def groups(lib):
        return [{"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.1},
                {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}]

    return torch.optim.SGD(groups(torch), lr=0.1), retrograd.optim.SGD(groups(retrograd), lr=0.1)


@pytest.mark.parametrize("name,options", SCHEDULES, ids=[f"{n}{i}" for i, (n, _) in enumerate(SCHEDULES)])
def test_schedules_match_torch(name, options):
    t_opt, r_opt = two_group_optimisers()
    t_sched = getattr(torch.optim.lr_scheduler, name)(t_opt, **options)
    r_sched = getattr(retrograd.optim.lr_scheduler, name)(r_opt, **options)
    assert r_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr())
    for _ in range(14):
        t_opt.step()
        r_opt.step()
        t_sched.step()
        r_sched.step()
        assert r_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)
        assert [g["lr"] for g in r_opt.param_groups] == pytest.approx([g["lr"] for g in t_opt.param_groups])
        assert [g["momentum"] for g in r_opt.param_groups] == pytest.approx([g["momentum"] for g in t_opt.param_groups])
    assert r_sched.last_epoch == t_sched.last_epoch
    if name == "CosineAnnealingWarmRestarts":  # step(epoch) is its documented way to go by fractions of epochs
        r_sched.step(3)
    else:
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
            r_sched.step(3)  # a jump uses the closed form where torch has one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_sched.step(3)
    assert r_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)


def combined_schedules(lib, kind):
    """A warm-up then cosine decay (SequentialLR, the usual transformer recipe), or two chained schedules."""
    opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=0.2)
    schedules = lib.optim.lr_scheduler
    if kind == "sequential":
        parts = [schedules.LinearLR(opt, start_factor=0.1, total_iters=4), schedules.ConstantLR(opt, factor=0.5),
                 schedules.CosineAnnealingLR(opt, T_max=6, eta_min=0.01)]
        combined = schedules.SequentialLR(opt, parts, milestones=[4, 7])
    else:
        combined = schedules.ChainedScheduler([schedules.ConstantLR(opt, factor=0.5, total_iters=3),
                                               schedules.ExponentialLR(opt, gamma=0.9)])
    lrs = [combined.get_last_lr()]
    for _ in range(15):
        opt.step()
        combined.step()
        lrs.append(combined.get_last_lr() + [opt.param_groups[0]["lr"]])
    return lrs


@pytest.mark.parametrize("kind", ["sequential", "chained"])
def test_combined_schedules_match_torch(kind):
    ours, theirs = combined_schedules(retrograd, kind), combined_schedules(torch, kind)
    assert [len(step) for step in ours] == [len(step) for step in theirs]
    assert sum(ours, []) == pytest.approx(sum(theirs, []), rel=1e-12)


def test_one_cycle_cycles_adams_beta1():
    def betas(lib):
        opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=0.1, betas=(0.9, 0.99))
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.3, total_steps=10)
        out = []
        for _ in range(9):
            opt.step()
            sched.step()
            out.extend(opt.param_groups[0]["betas"])
        return out

    assert betas(retrograd) == pytest.approx(betas(torch), rel=1e-12)


class HalvingScale:
    """A callable object as CyclicLR's scale_fn: its __dict__ is what the scheduler's state dict keeps of it."""

    def __init__(self, base: float) -> None:
        self.base = base

    def __call__(self, x: float) -> float:
        return self.base ** x


def test_cyclic_lr_cycles_adams_beta1_and_resumes_from_its_state_dict():
    def run(lib):
        opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=0.1, betas=(0.9, 0.99))
        sched = lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.2, step_size_up=3, scale_fn=HalvingScale(0.5))
        for _ in range(4):
            opt.step()
            sched.step()
        state = sched.state_dict()
        fresh_opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=0.1, betas=(0.9, 0.99))
        fresh = lib.optim.lr_scheduler.CyclicLR(fresh_opt, 0.05, 0.3, step_size_up=5, scale_fn=HalvingScale(0.9))
        fresh.load_state_dict(dict(state))
        lrs = []
        for _ in range(6):
            fresh.step()
            lrs.extend(fresh.get_last_lr() + [fresh_opt.param_groups[0]["betas"][0]])
        return sorted(state), state["_scale_fn_custom"], fresh.scale_fn(2.0), lrs

    ours, theirs = run(retrograd), run(torch)
    assert ours[:3] == theirs[:3]
    assert ours[3] == pytest.approx(theirs[3], rel=1e-12)
    for lib in (torch, retrograd):
        opt = lib.optim.Adagrad([lib.nn.Parameter(lib.ones(1))])
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)
        with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
            lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="other", cycle_momentum=False)


def make_schedule(lib, name, options, opt):
    """A schedule of lr_scheduler by name, SWALR, or a SequentialLR of a constant warm-up and an ExponentialLR."""
    schedules = lib.optim.lr_scheduler
    if name == "SWALR":
        return lib.optim.swa_utils.SWALR(opt, **options)
    if name == "SequentialLR":
        return schedules.SequentialLR(opt, [schedules.ConstantLR(opt, 0.5, 2), schedules.ExponentialLR(opt, 0.9)], [2])
    return getattr(schedules, name)(opt, **options)


def schedule_warnings(lib, name, options, optimizer_first):
    """The rates a user's `get_lr()` gives after each step and the warnings of each step (torch warns that get_lr
    computes the next rate, not the current one, and about a first `scheduler.step()` before any
    `optimizer.step()`), the schedule's state-dict keys, and the warning of a first step after `optimizer.step`
    was replaced."""
    def caught_while(fn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn()
        return out, [str(w.message) for w in caught]

    opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1, momentum=0.9)
    sched = make_schedule(lib, name, options, opt)
    rates, messages = [], []
    for _ in range(3):
        if optimizer_first:
            opt.step()
        messages.append(caught_while(sched.step)[1])
        if name != "SequentialLR":  # it has no get_lr of its own
            rate, said = caught_while(sched.get_lr)
            rates.extend(rate)
            messages.append(said)
    state = sched.state_dict()
    keys = sorted(key for key in state if key != "_schedulers") + [state.get("_schedule_phases")]  # OneCycleLR's
    replaced = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=0.1)
    later = lib.optim.lr_scheduler.StepLR(replaced, 2)
    replaced.step = lambda *args: None
    return rates, messages, keys, caught_while(later.step)[1]


@pytest.mark.parametrize("optimizer_first", [True, False], ids=["optimizer first", "schedule first"])
@pytest.mark.parametrize("name,options", SCHEDULES[:11] + [("SequentialLR", {}), ("SWALR", dict(swa_lr=0.05))],
                         ids=[f"{n}{i}" for i, (n, _) in enumerate(SCHEDULES[:11])] + ["SequentialLR", "SWALR"])
def test_schedule_warnings_match_torch(name, options, optimizer_first):
    """Public training code logs `scheduler.get_lr()` and steps its schedule before its optimizer; torch warns
    about both (and its state dicts carry the flag that tells get_lr it is called by step)."""
    options = {k: v[0] if isinstance(v, list) and k == "max_lr" else v for k, v in options.items()}  # one group
    ours = schedule_warnings(retrograd, name, options, optimizer_first)
    theirs = schedule_warnings(torch, name, options, optimizer_first)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    assert ours[1:] == theirs[1:]


def test_scheduler_state_dict_resumes():
    _, r_opt = two_group_optimisers()
    sched = retrograd.optim.lr_scheduler.StepLR(r_opt, step_size=2, gamma=0.5)
    for _ in range(3):
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state
    _, other_opt = two_group_optimisers()
    other = retrograd.optim.lr_scheduler.StepLR(other_opt, step_size=99)
    other.load_state_dict(state)
    assert other.step_size == 2 and other.last_epoch == 3


def test_reduce_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.94, 0.96, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    for mode, sign in (("min", 1), ("max", -1)):
        t_opt, r_opt = two_group_optimisers()
        options = dict(mode=mode, factor=0.5, patience=2, cooldown=1, min_lr=[0.02, 0.0], threshold=0.02)
        t_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(t_opt, **options)
        r_sched = retrograd.optim.lr_scheduler.ReduceLROnPlateau(r_opt, **options)
        for m in metrics:
            t_sched.step(sign * m)
            r_sched.step(sign * m)
            assert r_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr())
        assert r_sched.num_bad_epochs == t_sched.num_bad_epochs and r_sched.best == t_sched.best


# --------------------------------------------------------------------------------------------
# L-BFGS (several closure evaluations per step)
# --------------------------------------------------------------------------------------------
# torch's `add(other, alpha=a)` rounds once through a fused multiply-add where NumPy rounds twice,
# so L-BFGS's two-loop recursion can differ in the last bit: values are compared to 1e-10, and
# everything discrete (closure evaluations, iterations, stopping) must be identical.

def rosenbrock(x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


def least_squares(lib):
    """A linear model (weight and bias: two parameters, one flat vector) fitted to noisy data."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((12, 3)), rng.standard_normal(12)
    model = lib.nn.Linear(3, 1).double()
    with lib.no_grad():
        model.weight.copy_(lib.tensor([[0.5, -1.0, 2.0]]))
        model.bias.fill_(0.3)
    return list(model.parameters()), lambda: ((model(lib.tensor(a)).squeeze(1) - lib.tensor(b)) ** 2).mean()


def rosenbrock_problem(lib):
    x = lib.tensor([-1.5, 2.0, 0.5, -0.3], dtype=lib.float64, requires_grad=True)
    return [x], lambda: rosenbrock(x)


def lbfgs_run(lib, problem, options, steps):
    """Per step: the returned loss, the parameters and the optimiser's counters and step size."""
    params, loss_fn = problem(lib)
    opt = lib.optim.LBFGS(params, **options)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    trace = []
    for _ in range(steps):
        loss = opt.step(closure).item()
        state = opt.state[params[0]]
        trace.append(dict(loss=loss, params=np.concatenate([p.detach().numpy().ravel() for p in params]),
                          func_evals=state["func_evals"], n_iter=state["n_iter"], t=float(state["t"]),
                          history=len(state["old_dirs"])))
    return trace


LBFGS_CASES = [
    (rosenbrock_problem, dict()),
    (rosenbrock_problem, dict(line_search_fn="strong_wolfe")),
    (rosenbrock_problem, dict(lr=0.5, max_iter=7, history_size=3)),
    (rosenbrock_problem, dict(line_search_fn="strong_wolfe", max_iter=4, history_size=2)),
    (rosenbrock_problem, dict(line_search_fn="strong_wolfe", max_iter=30, max_eval=12, tolerance_change=1e-5)),
    (rosenbrock_problem, dict(max_iter=50, tolerance_grad=1e-2)),
    (least_squares, dict()),
    (least_squares, dict(line_search_fn="strong_wolfe", history_size=5)),
]


@pytest.mark.parametrize("problem,options", LBFGS_CASES, ids=[f"{p.__name__}-{i}" for i, (p, _) in
                                                               enumerate(LBFGS_CASES)])
def test_lbfgs_matches_torch_step_by_step(problem, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float(loss) of a loss that requires grad, in both libraries
        t_trace = lbfgs_run(torch, problem, options, steps=5)
        r_trace = lbfgs_run(retrograd, problem, options, steps=5)
    for step, (t, r) in enumerate(zip(t_trace, r_trace)):
        for key in ("func_evals", "n_iter", "history"):
            assert r[key] == t[key], (step, key)
        for key in ("loss", "params", "t"):
            np.testing.assert_allclose(r[key], t[key], rtol=1e-10, atol=1e-12, err_msg=f"step {step}: {key}")
    assert r_trace[-1]["loss"] < r_trace[0]["loss"]


def test_lbfgs_fits_a_sine_wave_as_torch_does():
    """The classic use: a small MLP fitted to sin(x) by full-batch L-BFGS with a closure."""
    x = np.linspace(-3, 3, 40).reshape(-1, 1)
    losses = {}
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(1, 12), lib.nn.Tanh(), lib.nn.Linear(12, 1)).double()
        if lib is torch:
            weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        opt = lib.optim.LBFGS(model.parameters(), lr=1, max_iter=20, history_size=10, line_search_fn="strong_wolfe")
        inputs, targets = lib.tensor(x), lib.tensor(np.sin(x))

        def closure(lib=lib, model=model, opt=opt, inputs=inputs, targets=targets):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            return loss

        losses[lib.__name__] = [opt.step(closure).item() for _ in range(4)]
    # 60 iterations on a tiny loss magnify last-bit differences (see above) to about 1e-6
    np.testing.assert_allclose(losses["retrograd"], losses["torch"], rtol=1e-4)
    assert losses["retrograd"][-1] < 1e-3 < losses["retrograd"][0]


def test_lbfgs_complex_and_gradless_parameters_match_torch():
    """A complex parameter counts as its real and imaginary parts; one without a gradient as zeros."""
    def run(lib):
        z = lib.tensor(np.array([1 + 2j, -0.5 + 0.3j]), requires_grad=True)
        w = lib.tensor(np.array([0.3, -0.2]), requires_grad=True)
        unused = lib.tensor(np.array([1.0]), requires_grad=True)
        opt = lib.optim.LBFGS([z, w, unused])
        target = lib.tensor(np.array([0.5j, 2.0]))

        def closure():
            opt.zero_grad()
            loss = ((z - target).abs() ** 2).sum() + ((w - 1) ** 4).sum() + (z.real * w).sum()
            loss.backward()
            return loss

        losses = [opt.step(closure).item() for _ in range(3)]
        return losses, z.detach().numpy(), w.detach().numpy(), unused.detach().numpy(), opt.state[z]["func_evals"]

    expected, got = run(torch), run(retrograd)
    assert got[-1] == expected[-1]
    for g, e in zip(got[:-1], expected[:-1]):
        np.testing.assert_allclose(g, e, rtol=1e-10)


def test_lbfgs_returns_at_once_when_already_optimal():
    for lib in (torch, retrograd):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([x])
        calls = []

        def closure(x=x, opt=opt, calls=calls):
            calls.append(1)
            opt.zero_grad()
            loss = (x**2).sum()
            loss.backward()
            return loss

        assert opt.step(closure).item() == 0.0
        assert len(calls) == 1 and sorted(opt.state[x]) == ["func_evals", "n_iter"]


def test_lbfgs_state_dict_round_trip_continues_as_torch():
    """History, direction and counters survive save/load: a fresh optimiser goes on where the first stopped."""
    options = dict(line_search_fn="strong_wolfe", max_iter=3, history_size=4)

    def closure_for(x, opt):
        def closure():
            opt.zero_grad()
            loss = rosenbrock(x)
            loss.backward()
            return loss
        return closure

    t_x = torch.tensor([-1.5, 2.0, 0.5, -0.3], dtype=torch.float64, requires_grad=True)
    r_x = retrograd.tensor(t_x.detach().numpy(), requires_grad=True)
    t_opt, r_opt = torch.optim.LBFGS([t_x], **options), retrograd.optim.LBFGS([r_x], **options)
    for _ in range(3):
        t_opt.step(closure_for(t_x, t_opt))
        r_opt.step(closure_for(r_x, r_opt))
    assert sorted(r_opt.state_dict()["state"][0]) == sorted(t_opt.state_dict()["state"][0])
    buffer = retrograd.serialization.io.BytesIO()
    retrograd.save(r_opt.state_dict(), buffer)
    buffer.seek(0)
    fresh = retrograd.optim.LBFGS([r_x], **options)
    fresh.load_state_dict(retrograd.load(buffer))
    for _ in range(3):
        t_opt.step(closure_for(t_x, t_opt))
        fresh.step(closure_for(r_x, fresh))
    assert fresh.state[r_x]["func_evals"] == t_opt.state[t_x]["func_evals"]
    np.testing.assert_allclose(r_x.detach().numpy(), t_x.detach().numpy(), rtol=1e-10)


# ---- differentiable=True: the step recorded, as in torch's TestDifferentiableOptimizer --------------------------

def _differentiable_step(lib, p, grad, state, name, kwargs, *state_values):
    """One recorded step from a non-leaf copy of p: the parameter and the state tensors that require grad."""
    p = p.clone()
    p.grad = grad
    opt = getattr(lib.optim, name)([p], differentiable=True, **kwargs)
    opt.state[p].update({k: v.clone() if isinstance(v, lib.Tensor) else v for k, v in state.items()})
    opt.step()
    return (p,) + tuple(v for v in opt.state[p].values() if isinstance(v, lib.Tensor) and v.requires_grad)


DIFFERENTIABLE = {  # optimizer, its options, the state tensors (True: requires grad; a number: a 0-d step count)
    "SGD": ("SGD", {"lr": 0.9}, {"momentum_buffer": True}),
    "SGD nesterov": ("SGD", {"lr": 0.9, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
                     {"momentum_buffer": True}),
    "Adam amsgrad": ("Adam", {"lr": 0.9, "amsgrad": True},
                     {"step": 10.0, "exp_avg": True, "exp_avg_sq": True, "max_exp_avg_sq": True}),
    "AdamW": ("AdamW", {"lr": 0.9, "weight_decay": 0.1}, {"step": 10.0, "exp_avg": True, "exp_avg_sq": True}),
    "Adagrad": ("Adagrad", {"lr": 0.9}, {"sum": True, "step": 10.0}),
    "RMSprop": ("RMSprop", {"lr": 0.9, "maximize": True, "momentum": 0.9, "weight_decay": 0.1},
                {"step": 10.0, "square_avg": True, "momentum_buffer": True}),
    "Adadelta": ("Adadelta", {"lr": 0.9, "weight_decay": 0.1}, {"step": 10.0, "square_avg": True, "acc_delta": True}),
    "Adamax": ("Adamax", {"lr": 0.9, "weight_decay": 0.1}, {"step": 10.0, "exp_avg": True, "exp_inf": True}),
    "NAdam": ("NAdam", {"lr": 0.9, "weight_decay": 0.1},
              {"step": 10.0, "exp_avg": True, "exp_avg_sq": True, "mu_product": 1.0j}),
    "RAdam": ("RAdam", {"lr": 0.9, "weight_decay": 0.1}, {"step": 10.0, "exp_avg": True, "exp_avg_sq": True}),
    "ASGD": ("ASGD", {"lr": 0.9}, {"step": 10.0, "eta": 0.9, "mu": 1.0, "ax": True}),
    "Rprop": ("Rprop", {"lr": 0.9}, {"step": 10.0, "prev": True, "step_size": True}),
}


def _state(lib, spec: dict, arrays: dict) -> dict:
    """The state tensors: random ones requiring grad, 0-d numbers (a complex j marks a 0-d one requiring grad)."""
    return {k: lib.tensor(arrays[k], requires_grad=True) if v is True
            else lib.tensor(abs(v), dtype=lib.float64, requires_grad=isinstance(v, complex)) for k, v in spec.items()}


@pytest.mark.parametrize("case", DIFFERENTIABLE)
def test_differentiable_step_passes_gradcheck_and_gives_torchs_values(case):
    """With differentiable=True the update is recorded: its gradients with respect to the parameter, its gradient
    and the state pass gradcheck, and the updated values are torch's."""
    name, kwargs, spec = DIFFERENTIABLE[case]
    rng = np.random.default_rng(0)
    arrays = {k: rng.uniform(0.1, 1.0, 10) for k in ("p", "grad", *spec)}
    results = []
    for lib in (torch, retrograd):
        p, grad = (lib.tensor(arrays[k], requires_grad=True) for k in ("p", "grad"))
        state = _state(lib, spec, arrays)
        step = functools.partial(_differentiable_step, lib)
        assert lib.autograd.gradcheck(step, (p, grad, state, name, kwargs, *state.values()))
        results.append([t.detach().numpy() for t in _differentiable_step(lib, p, grad, state, name, kwargs)])
    assert len(results[0]) == len(results[1])
    for theirs, ours in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_non_leaf_parameters_are_refused_unless_they_retain_grad_or_the_optimizer_is_differentiable():
    for lib in (torch, retrograd):
        p = lib.ones(3, requires_grad=True) * 2
        with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
            lib.optim.SGD([p], lr=0.1)
        lib.optim.SGD([p], lr=0.1, differentiable=True)
        p.retain_grad()
        lib.optim.SGD([p], lr=0.1)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "NAdam", "RAdam"])
def test_first_moment_is_torchs_lerp_from_the_nearer_end(name):
    """exp_avg.lerp_(grad, 1 - beta1) takes the gradient's end when 1 - beta1 >= 0.5: with beta1 = 0 the first moment
    is the gradient itself, bit for bit, in torch and here (the other end's formula is an ulp off from step 2)."""
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        w = lib.randn(1000, requires_grad=True)
        optimizer = getattr(lib.optim, name)([w], lr=0.1, betas=(0.0, 0.9))
        for _ in range(3):
            optimizer.zero_grad()
            (w.sin() * 3.7).sum().backward()
            optimizer.step()
            assert lib.equal(optimizer.state[w]["exp_avg"], w.grad)
