"""The meta device and the default device, against torch 2.13: meta tensors' shapes, dtypes, printing and errors,
the three idioms public code writes with them (torch.func's model ensembling on a meta copy, deferred initialisation
with `with torch.device('meta')` then `to_empty`, shape inference with backward), and `torch.device(...)` blocks and
set_default_device deciding where factories and module parameters go (retrograd/meta, Note [the default device])."""

from __future__ import annotations

import copy
import warnings

import array_api_strict
import numpy as np
import pytest
import torch
import torch.func

import retrograd
import retrograd.func
from retrograd import _xp

LIBS = (torch, retrograd)


def both(expr: str) -> tuple:
    """`expr` evaluated with `lib` bound to torch, then to retrograd."""
    return tuple(eval(expr, {"lib": lib, "np": np}) for lib in LIBS)


def errors(expr: str) -> list[tuple[type, str]]:
    """The exception type and message `expr` raises under torch and under retrograd."""
    found = []
    for lib in LIBS:
        with pytest.raises(Exception) as caught:
            eval(expr, {"lib": lib, "np": np})
        found.append((type(caught.value), str(caught.value)))
    return found


@pytest.fixture(autouse=True)
def _cpu_default():
    """Each test starts and ends with the CPU as both libraries' default device."""
    yield
    for lib in LIBS:
        lib.set_default_device(None)


# ---- meta tensors --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "lib.ones(2, 3, device='meta')", "lib.ones(2, 3, device='meta', requires_grad=True)",
    "lib.ones(2, 3, device='meta', requires_grad=True) * 2", "lib.tensor(3.0, device='meta')",
    "lib.tensor(3, device='meta')", "lib.ones(2, device='meta', dtype=lib.float64, requires_grad=True)",
    "lib.ones(0, device='meta')", "lib.ones(0, 2, device='meta', dtype=lib.int32)",
    "lib.ones(2, device='meta', dtype=lib.complex64)", "lib.ones(2, 3, device='meta') == 1",
    "lib.nn.Parameter(lib.ones(2, device='meta'))", "lib.ones(2, 3, device='meta').sum()",
    "lib.ones(2, 3, device='meta')[0, 1:]", "lib.ones(2, 3, device='meta').max(1)",
    "lib.ones(4, 3, device='meta').reshape(2, -1)", "lib.ones(2, 3, device='meta').T",
    "list(lib.ones(2, 3, device='meta'))", "lib.ones(2).to('meta')", "lib.ones(2, device='meta:0')",
    "lib.nn.Linear(2, 2).to('meta').weight.__deepcopy__({})", "lib.empty(2, 3, device='meta').half().sum(0)",
    "lib.randint(0, 5, (3,), device='meta')", "lib.randperm(5, device='meta')",
    "lib.full_like(lib.ones(2).to('meta'), 2)",
])
def test_meta_tensors_print_as_torchs(expr):
    theirs, ours = both(f"repr({expr})")
    assert ours == theirs


@pytest.mark.parametrize("expr", [
    "lib.ones(2, 3, device='meta').device", "str(lib.ones(2, device='meta').device)", "lib.device('meta')",
    "lib.device('meta').index", "lib.ones(2, device='meta:0').device", "lib.ones(2, device='meta').is_meta",
    "lib.ones(2).is_meta", "lib.ones(2, device='meta').is_cpu", "lib.ones(2, device='meta').is_cuda",
    "lib.ones(2, 3, device='meta').shape", "lib.ones(2, 3, device='meta', dtype=lib.int16).dtype",
    "len(lib.ones(2, 3, device='meta'))", "lib.ones(2, 3, device='meta').numel()",
    "(lib.ones(2, 3, device='meta') + lib.tensor(1.0)).device",
    "(lib.ones(2, 3, device='meta', dtype=lib.float16) * 2.5).dtype",
    "(lib.ones(2, 3, device='meta', dtype=lib.int32) / 2).dtype",
    "(lib.ones(2, 1, device='meta') + lib.ones(4, device='meta', dtype=lib.float64)).shape",
    "(lib.ones(5, 2, 3, device='meta') @ lib.ones(3, 4, device='meta')).shape",
    "(lib.ones(3, device='meta') @ lib.ones(3, 4, device='meta')).shape",
    "lib.ones(2, 3, device='meta').clone().copy_(lib.ones(2, 3)).device", "lib.ones(2, device='meta').data_ptr()",
])
def test_meta_tensor_facts_are_torchs(expr):
    theirs, ours = both(expr)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("expr", [
    "lib.ones((), device='meta').item()", "lib.ones(2, 3, device='meta').item()",
    "lib.ones(2, device='meta').tolist()", "lib.ones(2, device='meta').numpy()", "lib.ones(2, device='meta').cpu()",
    "lib.ones(2, device='meta').to('cpu')", "float(lib.ones((), device='meta'))", "bool(lib.ones((), device='meta'))",
    "np.asarray(lib.ones(2, device='meta'))", "lib.ones(2, 3).copy_(lib.ones(2, 3, device='meta'))",
    "lib.ones(2, 3, device='meta') + lib.ones(2, 3)", "lib.ones(2, 3) + lib.ones(2, 3, device='meta')",
    "lib.ones(2, 3, device='meta') * lib.ones(2, 3)", "lib.ones(2, 3) - lib.ones(2, 3, device='meta')",
    "lib.ones(2, device='meta').sum().item()", "lib.ones(2, 3, device='meta') + lib.ones(4, device='meta')",
    "lib.cat([lib.ones(2, device='meta'), lib.ones(2)])", "lib.cat([lib.ones(2), lib.ones(2, device='meta')])",
    "lib.stack([lib.ones(2, device='meta'), lib.ones(2)])", "lib.stack([lib.ones(2), lib.ones(2, device='meta')])",
    "setattr(lib.ones(2, device='meta', requires_grad=True), 'grad', lib.ones(2))",
    "setattr(lib.ones(2, requires_grad=True), 'grad', lib.ones(2, device='meta'))",
    "setattr(lib.ones(2, device='meta', requires_grad=True), 'grad', lib.ones(2, dtype=lib.float64))",
    "format(lib.ones((), device='meta'), '.2f')",
])
def test_meta_tensors_refuse_as_torchs_do(expr):
    theirs, ours = errors(expr)
    assert ours == theirs


@pytest.mark.parametrize("expr", ["lib.ones(3, device='meta').nonzero()",
                                  "lib.masked_select(lib.ones(3, device='meta'), lib.ones(3, device='meta') > 0)"])
def test_results_sized_by_the_elements_are_refused_on_meta(expr):
    (theirs, _), (ours, message) = errors(expr)
    assert ours is theirs is NotImplementedError and "meta tensor" in message


def test_random_draws_on_meta_leave_the_generator_as_it_was():
    for lib in LIBS:
        lib.manual_seed(0)
        before = lib.get_rng_state()
        made = [lib.rand(3, device="meta"), lib.randn(2, 2, device="meta"), lib.ones(2, 3, device="meta").normal_(),
                lib.empty(4, device="meta").uniform_(-1, 1), lib.empty(5, device="meta").bernoulli_(0.5)]
        assert all(t.is_meta for t in made) and lib.equal(lib.get_rng_state(), before)
    drawn = both("(lib.manual_seed(0), lib.rand(1, device='meta'), lib.rand(1))[2].tolist()")
    assert drawn[0] == drawn[1] == [0.49625658988952637]


def test_a_big_meta_tensor_costs_nothing():
    x = retrograd.empty(10**6, 10**6, device="meta", requires_grad=True)  # 4 TB as float32
    y = (x @ x.T).relu() * 2 + x.sum(0)
    y.sum().backward()
    assert y.shape == (10**6, 10**6) and x.grad.shape == x.shape and x.grad.is_meta


def test_meta_arrays_are_behind_the_array_seam():
    x = retrograd.ones(2, 3, device="meta")
    assert _xp.locate(x._data) == ("meta", None) and not _xp.has_data(x._data) and _xp.has_data(np.ones(2))
    assert not isinstance(x._data, np.ndarray) and _xp.namespace(x._data) is _xp.backend("meta").xp


# ---- the three idioms ----------------------------------------------------------------------------------------------

def _mlp(lib):
    nn = lib.nn

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(784, 128), nn.Linear(128, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            return self.fc3(nn.functional.relu(self.fc2(nn.functional.relu(self.fc1(x)))))

    return SimpleMLP


def test_model_ensembling_on_a_meta_copy_as_the_torch_func_tutorial_writes_it():
    """torch.func's tutorial: a meta copy of one model, called with the stacked parameters of all of them."""
    outs = []
    for lib, func in ((torch, torch.func), (retrograd, retrograd.func)):
        lib.manual_seed(0)
        simple_mlp = _mlp(lib)
        models = [simple_mlp() for _ in range(4)]
        minibatch = lib.randn(64, 1, 28, 28)
        params, buffers = func.stack_module_state(models)
        base_model = copy.deepcopy(models[0])
        base_model = base_model.to("meta")
        assert repr(base_model.fc1.weight).endswith("device='meta', size=(128, 784), requires_grad=True)")

        def fmodel(params, buffers, x, base_model=base_model, func=func):
            return func.functional_call(base_model, (params, buffers), (x,))

        out = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
        assert lib.allclose(out, lib.stack([m(minibatch) for m in models]), atol=1e-6)
        outs.append(out.detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def _cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
            self.pool, self.conv2, self.fc = nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.Linear(32 * 7 * 7, 10)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv1(x))))
            x = self.pool(F.relu(self.conv2(x)))
            return self.fc(self.drop(lib.flatten(x, 1)))

    return CNN


def test_deferred_initialisation_on_meta_then_to_empty_and_load():
    for lib in LIBS:
        CNN = _cnn(lib)
        lib.manual_seed(1)
        before = lib.get_rng_state()
        with lib.device("meta"):
            model = CNN()
        assert lib.equal(lib.get_rng_state(), before)  # initialising on meta draws nothing
        assert all(t.is_meta for t in (*model.parameters(), *model.buffers()))
        lib.manual_seed(2)
        real = CNN().eval()
        model.to_empty(device="cpu")
        assert not any(t.is_meta for t in (*model.parameters(), *model.buffers()))
        assert model.bn.num_batches_tracked.shape == () and model.fc.weight.dtype is lib.float32
        assert str(model.load_state_dict(real.state_dict())) == "<All keys matched successfully>"
        x = lib.randn(2, 3, 32, 32)
        assert lib.equal(model.eval()(x), real(x))
        with lib.device("meta"):  # or the checkpoint's tensors assigned onto the meta model itself
            assigned = CNN()
        assigned.load_state_dict(real.state_dict(), assign=True)
        weight = assigned.conv1.weight
        assert type(weight) is lib.nn.Parameter and weight.requires_grad and weight.device == lib.device("cpu")
        assert lib.equal(assigned.eval()(x), real(x))


def test_re_initialising_after_to_empty_gives_the_cpu_models_numbers():
    results = []
    for lib in LIBS:
        with lib.device("meta"):
            model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.LayerNorm(4), lib.nn.Linear(4, 2))
        model.to_empty(device="cpu")
        lib.manual_seed(5)
        model.apply(lambda m: m.reset_parameters() if hasattr(m, "reset_parameters") else None)
        results.append([p.tolist() for p in model.parameters()])
    assert results[0] == results[1]


def test_to_empty_moves_grads_and_takes_device_by_keyword_only():
    for lib in LIBS:
        model = lib.nn.Linear(3, 2).to("meta")
        model.weight.grad = lib.ones(2, 3, device="meta")
        model.to_empty(device="cpu", recurse=False)
        assert model.weight.grad.device == lib.device("cpu") and model.weight.grad.shape == (2, 3)
    theirs, ours = errors("lib.nn.Linear(3, 2).to_empty('cpu')")
    assert ours[0] is theirs[0] is TypeError


def test_loading_into_meta_parameters_without_assign_warns_as_torch():
    messages = []
    for lib in LIBS:
        model = lib.nn.Linear(3, 2, device="meta")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert str(model.load_state_dict(lib.nn.Linear(3, 2).state_dict())) == "<All keys matched successfully>"
        messages.append([(w.category, str(w.message)) for w in caught])
        assert model.weight.is_meta
    assert messages[0] == messages[1] and len(messages[0]) == 2


def test_shape_inference_with_backward_on_meta():
    for lib in LIBS:
        model = _cnn(lib)().to("meta")
        out = model(lib.empty(8, 3, 32, 32, device="meta"))
        assert repr(out) == "tensor(..., device='meta', size=(8, 10), grad_fn=<AddmmBackward0>)"
        loss = lib.nn.functional.cross_entropy(out, lib.zeros(8, dtype=lib.long, device="meta"))
        loss.backward()
        assert repr(loss) == "tensor(..., device='meta', size=(), grad_fn=<NllLossBackward0>)"
        assert repr(model.conv1.weight.grad) == "tensor(..., device='meta', size=(16, 3, 3, 3))"


def test_modules_made_with_device_meta_put_their_tensors_there():
    for lib in LIBS:
        nn = lib.nn
        made = [nn.Linear(3, 2, device="meta"), nn.Conv2d(3, 4, 3, device="meta"), nn.BatchNorm1d(4, device="meta"),
                nn.LayerNorm(4, device="meta"), nn.Embedding(5, 3, device="meta"), nn.LSTM(3, 4, device="meta"),
                nn.GRUCell(3, 4, device="meta"), nn.MultiheadAttention(4, 2, device="meta")]
        assert all(t.is_meta for m in made for t in (*m.parameters(), *m.buffers()))


# ---- the default device --------------------------------------------------------------------------------------------

FACTORIES = ["lib.empty(2, 3)", "lib.zeros(2)", "lib.ones(2, 2)", "lib.rand(2)", "lib.randn(3)", "lib.arange(5)",
             "lib.tensor([1.0, 2.0])", "lib.tensor([1, 2])", "lib.full((2,), 1.5)", "lib.eye(2)",
             "lib.linspace(0, 1, 5)", "lib.as_tensor([1.0, 2.0])", "lib.as_tensor(lib.ones(2, device='cpu'))",
             "lib.nn.Linear(3, 2).weight", "lib.nn.BatchNorm1d(2).num_batches_tracked"]


@pytest.mark.parametrize("expr", FACTORIES)
def test_a_device_block_decides_where_factories_put_tensors(expr):
    results = []
    for lib in LIBS:
        with lib.device("meta") as entered:
            assert entered == lib.device("meta") and lib.get_default_device() == lib.device("meta")
            results.append(repr(eval(expr, {"lib": lib})))
        assert lib.get_default_device() == lib.device("cpu")
    assert results[1] == results[0] and "device='meta'" in results[0]


@pytest.mark.parametrize("expr", FACTORIES)
def test_set_default_device_decides_where_factories_put_tensors(expr):
    results = []
    for lib in LIBS:
        lib.set_default_device("meta")
        try:
            results.append(repr(eval(expr, {"lib": lib})))
        finally:
            lib.set_default_device(None)
    assert results[1] == results[0] and "device='meta'" in results[0]


@pytest.mark.parametrize("expr", [
    "lib.zeros(2, device='cpu').device", "lib.ones_like(lib.zeros(2, device='cpu')).device",
    "(lib.zeros(2, device='cpu') + 1).device", "lib.from_numpy(np.ones(2)).device", "lib.Tensor(2).device",
    "lib.randn_like(lib.zeros(2, device='cpu')).device",
])
def test_inside_a_meta_block_tensors_of_the_cpu_stay_there(expr):
    results = []
    for lib in LIBS:
        with lib.device("meta"):
            results.append(eval(expr, {"lib": lib, "np": np}))
    assert repr(results[1]) == repr(results[0]) == "device(type='cpu')"


def test_device_blocks_nest_and_set_default_device_is_read_back():
    for lib in LIBS:
        with lib.device("meta"):
            with lib.device("cpu"):
                assert lib.get_default_device() == lib.device("cpu") and lib.ones(1).device == lib.device("cpu")
            assert lib.get_default_device() == lib.device("meta")
        for given, expected in (("meta", "device(type='meta')"), ("meta:0", "device(type='meta', index=0)"),
                                ("cpu", "device(type='cpu')"), (lib.device("meta"), "device(type='meta')"),
                                (None, "device(type='cpu')")):
            lib.set_default_device(given)
            assert repr(lib.get_default_device()) == expected


@pytest.mark.parametrize("expr", ["lib.set_default_device(0)", "lib.set_default_device('foo')",
                                  "(lib.set_default_device('cuda'), lib.get_default_device())",
                                  "(lib.set_default_device('cuda'), lib.ones(2))"])
def test_default_devices_this_machine_lacks_raise_as_a_cpu_only_torch(expr):
    theirs, ours = errors(expr)
    assert ours == theirs


def test_a_cuda_default_puts_factories_and_modules_on_the_backend_behind_cuda():
    """'cuda' as the default device, on array_api_strict's devices standing for two GPUs (as test_array_api.py)."""
    devices = [array_api_strict.Device("device1"), array_api_strict.Device("device2")]
    with _xp.use("cuda", array_api_strict, devices):
        with retrograd.device("cuda:1"):
            made = [retrograd.zeros(2), retrograd.randn(3), retrograd.tensor([1, 2]), retrograd.nn.Linear(3, 2).weight]
        assert all(str(t.device) == "cuda:1" for t in made) and retrograd.zeros(1).device == retrograd.device("cpu")
        retrograd.set_default_device("cuda")
        assert retrograd.get_default_device() == retrograd.device("cuda", 0)
        assert str(retrograd.arange(3).device) == "cuda:0"
        x = retrograd.ones(2, 3, requires_grad=True)
        (x * 2).sum().backward()
        assert str(x.grad.device) == "cuda:0" and x.grad.tolist() == [[2.0] * 3] * 2
