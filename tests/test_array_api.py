"""The op database behind the array seam with another array-API library: array_api_strict's arrays stand behind
'cuda' (Note [choosing a namespace] in retrograd/_xp.py), on its non-host devices, whose arrays refuse NumPy's
conversion as a GPU's do, so any `np.` call on a tensor's array fails here. Every op is run forward, backward and
double backward there and compared with the same op on NumPy's arrays (checked against torch by test_ops.py).

Ops whose forward still needs NumPy are listed, with the reason, in array_api_numpy_only.txt: what the standard
lacks (NumPy's strided memory and views, functions it does not have), or which NumPy call the forward still makes.
The list is strict: a listed op that passes fails the test, to be taken off the list.
"""

from __future__ import annotations

import warnings
import zlib
from collections import defaultdict
from pathlib import Path

import array_api_strict
import numpy as np
import pytest
from opdb import C, Dt, OpInfo, Sample, all_ops

import retrograd
from retrograd import _xp

# array_api_strict warns when its dtypes meet NumPy's in a dict lookup (interned node metadata): harmless here
pytestmark = pytest.mark.filterwarnings("ignore:You are comparing a array_api_strict dtype:UserWarning")

DEVICES = (array_api_strict.Device("device1"), array_api_strict.Device("device2"))


def _numpy_only() -> dict[str, str]:
    """op name -> why its forward needs NumPy, from `name: reason` lines."""
    lines = (Path(__file__).parent / "array_api_numpy_only.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line and not line.startswith("#"))


NUMPY_ONLY = _numpy_only()


def _rows() -> dict[str, list[OpInfo]]:
    rows = defaultdict(list)
    for info in all_ops():
        rows[info.aliases[0] if info.aliases else info.name].append(info)
    return dict(rows)


ROWS = _rows()


@pytest.fixture
def strict_cuda():
    """array_api_strict's device1 and device2 behind cuda:0 and cuda:1 for the test."""
    with _xp.use("cuda", array_api_strict, DEVICES):
        yield


def _convert(value, device):
    """A sample value as a float64 tensor on `device` (arrays that may require grad become leaves there)."""
    if isinstance(value, np.ndarray):
        t = retrograd.from_numpy(value.copy()).to(device)
        return t.requires_grad_() if t.dtype.is_floating_point or t.dtype.is_complex else t
    if isinstance(value, C):
        return retrograd.from_numpy(value.array.copy()).to(device)
    if isinstance(value, Dt):
        return getattr(retrograd, value.name)
    if isinstance(value, list):
        return [_convert(v, device) for v in value]
    if isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        return tuple(_convert(v, device) for v in value)
    return value


def _tensors(values) -> list:
    out = []
    for v in values:
        vs = v if isinstance(v, (list, tuple)) else [v]
        out += [t for t in vs if isinstance(t, retrograd.Tensor)]
    return out


def _host(t) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().numpy()


def _run(info: OpInfo, sample: Sample, device: str) -> list:
    """Forward results, gradients and second gradients of one sample on `device`, as NumPy arrays."""
    retrograd.manual_seed(0)  # random ops draw the same numbers on the host, whichever device they go to
    args = [_convert(a, device) for a in sample.args]
    kwargs = {k: _convert(v, device) for k, v in sample.kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = info.resolve(retrograd)(*args, **kwargs)
    outs = list(info.outputs(result)) if info.outputs else [
        r for r in (result if isinstance(result, (tuple, list)) else [result]) if isinstance(r, retrograd.Tensor)]
    found = [_host(o) for o in outs]
    leaves = [t for t in _tensors([*args, *kwargs.values()]) if t.requires_grad]
    outs = [o for o in outs if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]
    if not (info.differentiable and leaves and outs):
        return found
    rng = np.random.default_rng(1)
    cotangents = [retrograd.from_numpy(rng.standard_normal(tuple(o.shape)).astype(str(o.dtype)[6:])).to(device)
                  for o in outs]
    grads = retrograd.autograd.grad(outs, leaves, cotangents, allow_unused=True, create_graph=info.gradgrad)
    found += [_host(g) for g in grads]
    second = [g for g in grads if g is not None and g.requires_grad]
    if info.gradgrad and second:
        weights = [retrograd.from_numpy(rng.standard_normal(tuple(g.shape)).astype(str(g.dtype)[6:])).to(device)
                   for g in second]
        found += [_host(g) for g in retrograd.autograd.grad(second, leaves, weights, allow_unused=True)]
    return found


def _samples(info: OpInfo) -> list[Sample]:
    # float64 samples: the seed test_ops.py uses, so the same values
    rng = np.random.default_rng(zlib.crc32((info.name + "".join(info.aliases)).encode()))
    return info.samples(rng)


def _check(name: str, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    """Every sample of op `name` on 'cuda' against the CPU."""
    for info in ROWS[name]:
        for sample in _samples(info):
            expected = _run(info, sample, "cpu")
            found = _run(info, sample, "cuda")
            assert len(found) == len(expected), f"{sample.name}: {len(found)} results, NumPy gives {len(expected)}"
            for k, (a, b) in enumerate(zip(found, expected)):
                if b is None:
                    assert a is None or not np.any(a), f"{sample.name}: result {k} is not None"
                    continue
                np.testing.assert_allclose(a, b, rtol=max(rtol, 1e-6) if b.dtype == np.float32 else rtol, atol=atol,
                                           equal_nan=True,
                                           err_msg=f"{sample.name}: result {k}")


def _cupy_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, or no driver or GPU
        return False


NO_GPU = "CuPy with a GPU is not installed here (pip install retrograd[cuda] on a GPU machine)"


def test_numpy_only_lists_database_ops() -> None:
    assert not set(NUMPY_ONLY) - set(ROWS), "listed ops the op database does not have"


@pytest.mark.usefixtures("strict_cuda")
@pytest.mark.parametrize("name", sorted(ROWS))
def test_op_behind_the_seam(name: str) -> None:
    if name not in NUMPY_ONLY:
        _check(name)
        return
    try:
        _check(name)
    except AssertionError:  # wrong numbers are never the listed reason
        raise
    except Exception:  # noqa: BLE001 - the listed reason: a function the standard lacks
        pytest.xfail(NUMPY_ONLY[name])
    pytest.fail(f"{name} runs behind the seam now: take it off NUMPY_ONLY")


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 4)])
def test_scatter_positions_stay_in_the_index_namespace(shape: tuple) -> None:
    """scatter's positions along the other dims are made where the index lives (a CuPy index: on its GPU),
    as NumPy's np.indices(shape, sparse=True)."""
    from retrograd.ops.indexing import _open_grid

    index = array_api_strict.asarray(np.zeros(shape, dtype=np.int64))
    grid, expected = _open_grid(index), np.indices(shape, sparse=True)
    assert all(type(g) is type(index) and g.device == index.device for g in grid)
    assert [np.asarray(g).tolist() for g in grid] == [e.tolist() for e in expected]
    assert [g.shape for g in grid] == [e.shape for e in expected]


# Samples whose result torch leaves undefined (index_put with repeated indices, without accumulate): on a GPU the
# writes race, as torch's CUDA kernels' do, so no one answer is compared there
UNDEFINED_ON_A_GPU = {"index_put_duplicates"}


@pytest.mark.skipif(not _cupy_gpu(), reason=NO_GPU)
@pytest.mark.parametrize("shard", range(8))
def test_ops_on_cupy(shard: int, monkeypatch) -> None:
    """The same sweep on CuPy's GPU arrays, in eight shards (for pytest -n). CuPy copies NumPy's API, so a listed
    op may pass there; an unlisted op must. The GPU's math library and summation order differ from NumPy's in the
    last bits: float64 to 1e-7. Random ops draw on the host here, to compare the same numbers (the GPU's own
    draws: test_cuda_draws_its_own_random_numbers)."""
    monkeypatch.setattr(_xp.backend("cuda"), "draw", lambda *args: None)
    failures, listed = [], []
    for name in sorted(set(ROWS) - UNDEFINED_ON_A_GPU)[shard::8]:
        try:
            _check(name, rtol=1e-7, atol=1e-10)
        except AssertionError as e:
            failures.append(f"{name}: wrong numbers: " + " | ".join(line.strip() for line in str(e).splitlines()
                                                                   if line.strip())[:600])
        except Exception as e:  # noqa: BLE001 - collected, reported together below
            message = f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
            (listed if name in NUMPY_ONLY else failures).append(message)
    assert not failures, f"{len(failures)} ops fail on CuPy:\n" + "\n".join(failures)
    if listed:
        pytest.xfail(f"{len(listed)} ops listed in array_api_numpy_only.txt fail on CuPy too: " + "; ".join(listed))


# --------------------------------------------------------------------------------------------
# The device plumbing: 'cuda' tensors, transfers and torch's device errors, on array_api_strict's two
# non-host devices standing for cuda:0 and cuda:1, and on CuPy's GPUs where CuPy sees one
# --------------------------------------------------------------------------------------------


@pytest.fixture(params=["array_api_strict", pytest.param("cupy", marks=pytest.mark.skipif(not _cupy_gpu(),
                                                                                          reason=NO_GPU))])
def cuda(request):
    """'cuda' backed by array_api_strict's device1/device2, or by CuPy itself."""
    if request.param == "cupy":
        assert retrograd.cuda.is_available()
        yield
        return
    with _xp.use("cuda", array_api_strict, DEVICES):
        yield


@pytest.mark.skipif(not _cupy_gpu(), reason=NO_GPU)
def test_cuda_draws_its_own_random_numbers() -> None:
    """rand/randn on a GPU draw there from CuPy's generator, seeded by manual_seed (Note [random numbers on a
    device])."""
    retrograd.manual_seed(3)
    u = retrograd.rand(1000, 100, device="cuda")
    n = retrograd.randn(1000, 100, device="cuda", dtype=retrograd.float64)
    assert u.is_cuda and u.dtype is retrograd.float32 and n.dtype is retrograd.float64
    assert 0.0 <= u.min().item() and u.max().item() < 1.0 and abs(u.mean().item() - 0.5) < 0.01
    assert abs(n.mean().item()) < 0.01 and abs(n.std().item() - 1.0) < 0.01
    retrograd.manual_seed(3)
    assert retrograd.equal(retrograd.rand(1000, 100, device="cuda"), u)
    kept = retrograd.nn.functional.dropout(retrograd.ones(1000, 100, device="cuda"), 0.25)
    assert kept.is_cuda and abs((kept == 0).float().mean().item() - 0.25) < 0.01


@pytest.mark.skipif(_cupy_gpu(), reason="CuPy sees a GPU here: 'cuda' is available")
def test_without_cuda_torch_cpu_build_errors() -> None:
    assert not retrograd.cuda.is_available() and retrograd.cuda.device_count() == 0
    for make in (lambda lib: lib.zeros(2, device="cuda"), lambda lib: lib.ones(2).cuda(),
                 lambda lib: lib.ones(2).to("cuda"), lambda lib: lib.cuda.current_device(),
                 lambda lib: lib.nn.Linear(2, 2).to("cuda")):
        with pytest.raises(AssertionError) as ours:
            make(retrograd)
        with pytest.raises(AssertionError) as theirs:
            make(_torch())
        assert str(ours.value) == str(theirs.value) == "Torch not compiled with CUDA enabled"
    assert repr(retrograd.device("cuda:1")) == repr(_torch().device("cuda:1")) == "device(type='cuda', index=1)"


def _torch():
    import torch

    return torch


def torch_cuda_available() -> bool:
    return _torch().cuda.is_available()


@pytest.mark.usefixtures("cuda")
def test_cuda_tensors_and_transfers() -> None:
    assert retrograd.cuda.is_available() and retrograd.cuda.device_count() >= 1
    x = retrograd.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert x.is_cuda and str(x.device) == "cuda:0" and x.device == retrograd.device("cuda", 0)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(retrograd.zeros(2, 0, device="cuda", dtype=retrograd.float64)) == \
        "tensor([], device='cuda:0', size=(2, 0), dtype=torch.float64)"
    with pytest.raises(TypeError, match=r"^can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\) to "
                                        r"copy the tensor to host memory first\.$"):
        x.detach().numpy()
    y = (x * 3).cpu()
    assert y.device == retrograd.device("cpu") and y.grad_fn.name() == "ToCopyBackward0"
    assert y.tolist() == [3.0, 6.0] and x.sum().item() == 3.0
    (y * retrograd.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.is_cuda and x.grad.tolist() == [3.0, 30.0]
    assert x.to("cuda") is x and x.cuda() is x and x.cpu().cuda().device == x.device
    z = x.detach().to("cpu", retrograd.float64)
    assert z.dtype is retrograd.float64 and not z.is_cuda
    assert retrograd.zeros_like(x).is_cuda and retrograd.ones(2, device=retrograd.device("cuda:0")).is_cuda


@pytest.mark.usefixtures("cuda")
def test_device_mismatch_is_torchs_error() -> None:
    a = retrograd.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, but found at least two "
                                           r"devices, cuda:0 and cpu!$"):
        a + retrograd.ones(2)
    with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cpu!"):
        retrograd.mm(retrograd.ones(2, 2, device="cuda"), retrograd.ones(2, 2))
    # a 0-d CPU tensor joins tensors of any device, read as a number (torch's rule)
    assert (a * retrograd.tensor(3.0)).is_cuda and (a * retrograd.tensor(3.0)).tolist() == [3.0, 3.0]
    if retrograd.cuda.device_count() > 1:
        with pytest.raises(RuntimeError, match="found at least two devices, cuda:0 and cuda:1!"):
            a + retrograd.ones(2, device="cuda:1")
        assert (a.to("cuda:1") + retrograd.ones(2, device="cuda:1")).device == retrograd.device("cuda:1")


def _write(device: str, key, value, grad: bool) -> list:
    """y = 2x; y[key] = value on `device`: y, and x's gradient of sum(y * y) where `grad`, as NumPy arrays."""
    x = retrograd.arange(12.0).reshape(3, 4).to(device).requires_grad_(grad)
    y = x * 2
    y[key(y) if callable(key) else key.to(device) if isinstance(key, retrograd.Tensor) else key] = (
        value.to(device) if isinstance(value, retrograd.Tensor) else value)
    found = [y.detach().cpu().numpy()]
    if grad:
        found.append(retrograd.autograd.grad((y * y).sum(), x)[0].cpu().numpy())
    return found


@pytest.mark.usefixtures("cuda")
@pytest.mark.parametrize(("key", "value", "grad"), [
    (lambda y: y > 10, 0.5, True),
    (retrograd.tensor([2, 0]), -1.0, True),
    (retrograd.tensor([[True, False, True, False]] * 3), 4, True),
    (retrograd.tensor([1]), retrograd.full((4,), 7.0), True),
    (0, 3.0, False),  # a view's write with a gradient is CopySlices: NumPy's strided memory (setitem's listing)
    ((slice(None), 1), 2, False),
], ids=["mask_number", "index_number", "mask_int", "index_tensor", "int_number", "slice_int"])
def test_writes_into_a_cuda_tensor(key, value, grad: bool) -> None:
    """x[mask] = number, x[idx] = number or tensor, x[0] = number: the written value is made where the tensor lives
    (a GPU array refuses a host array in its __setitem__); values and gradients as on the CPU."""
    for found, expected in zip(_write("cuda", key, value, grad), _write("cpu", key, value, grad), strict=True):
        np.testing.assert_array_equal(found, expected)


def _index_error(device: str, key, write: bool) -> str:
    x = retrograd.arange(12.0).reshape(3, 4).to(device)
    with pytest.raises(IndexError) as caught:
        if write:
            x[key(device)] = 1.0
        else:
            x[key(device)]
    return str(caught.value)


@pytest.mark.usefixtures("cuda")
@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("key", [
    lambda d: retrograd.tensor([5]).to(d),
    lambda d: retrograd.tensor([[True, False]]).to(d),
    lambda d: (retrograd.tensor([0, 1]).to(d), retrograd.tensor([0, 1, 2]).to(d)),
], ids=["out_of_bounds", "mask_shape", "no_broadcast"])
def test_index_errors_on_cuda_are_torchs(key, write: bool) -> None:
    """A bad advanced key raises torch's IndexError on 'cuda' as on the CPU (the standard's path checks the key)."""
    assert _index_error("cuda", key, write) == _index_error("cpu", key, write)


@pytest.mark.usefixtures("cuda")
def test_module_on_cuda_trains_as_on_cpu() -> None:
    retrograd.manual_seed(0)
    cpu = retrograd.nn.Sequential(retrograd.nn.Linear(3, 4), retrograd.nn.ReLU(), retrograd.nn.Linear(4, 1))
    gpu = retrograd.nn.Sequential(retrograd.nn.Linear(3, 4), retrograd.nn.ReLU(), retrograd.nn.Linear(4, 1))
    gpu.load_state_dict(cpu.state_dict())
    gpu.cuda()
    assert all(p.is_cuda for p in gpu.parameters())
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for model, device in ((cpu, "cpu"), (gpu, "cuda")):
        optimizer = retrograd.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            loss = model(retrograd.from_numpy(x).to(device)).square().mean()
            loss.backward()
            optimizer.step()
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.usefixtures("cuda")
def test_saving_a_cuda_tensor_as_torch_does(tmp_path) -> None:
    path = tmp_path / "t.pt"
    retrograd.save({"w": retrograd.tensor([1.0, 2.0], device="cuda")}, path)
    theirs = _torch().load(path, map_location="cpu")  # the file holds host bytes, its storage named cuda:0
    assert theirs["w"].tolist() == [1.0, 2.0]
    if not torch_cuda_available():
        with pytest.raises(RuntimeError) as e:
            _torch().load(path)
        assert "Attempting to deserialize object on a CUDA device" in str(e.value)
    loaded = retrograd.load(path)
    assert loaded["w"].is_cuda and loaded["w"].tolist() == [1.0, 2.0]
    assert not retrograd.load(path, map_location="cpu")["w"].is_cuda
