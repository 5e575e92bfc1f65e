"""retrograd.save / retrograd.load speak torch's file format: both directions against torch, and hostile input."""

import importlib
import inspect
import io
import json
import os
import pickle
import re
import struct
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import retrograd

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128"]


def saved(lib, obj) -> bytes:
    buffer = io.BytesIO()
    lib.save(obj, buffer)
    return buffer.getvalue()


def round_trip(obj):
    return retrograd.load(io.BytesIO(saved(retrograd, obj)))


def plain(obj):
    """A comparable picture of a structure: tensors as (kind, dtype, shape, requires_grad, bytes)."""
    if isinstance(obj, (torch.Tensor, retrograd.Tensor)):
        kind = "Parameter" if isinstance(obj, (torch.nn.Parameter, retrograd.nn.Parameter)) else "Tensor"
        return (kind, str(obj.dtype), tuple(obj.shape), obj.requires_grad, obj.detach().numpy().tobytes())
    if isinstance(obj, (list, tuple)):
        return type(obj).__name__, [plain(v) for v in obj]
    if isinstance(obj, dict):
        return type(obj).__name__, [(plain(k), plain(v)) for k, v in obj.items()]
    if isinstance(obj, (torch.dtype, retrograd.dtype)):
        return ("dtype", str(obj))
    return obj


def to_torch(lib_obj):
    """The torch twin of a retrograd structure, built by hand (so a test does not trust save or load)."""
    if isinstance(lib_obj, retrograd.nn.Parameter):
        return torch.nn.Parameter(to_torch(lib_obj.detach()), lib_obj.requires_grad)
    if isinstance(lib_obj, retrograd.Tensor):
        return torch.from_numpy(lib_obj.detach().numpy().copy()).requires_grad_(lib_obj.requires_grad)
    if isinstance(lib_obj, (list, tuple)):
        return type(lib_obj)(to_torch(v) for v in lib_obj)
    if isinstance(lib_obj, dict):
        return type(lib_obj)((k, to_torch(v)) for k, v in lib_obj.items())
    if isinstance(lib_obj, retrograd.dtype):
        return getattr(torch, lib_obj.name)
    return lib_obj


def nested():
    w = retrograd.arange(12.0).reshape(3, 4)
    return OrderedDict(
        w=w, row=w[1], cols=w[:, 1::2], p=retrograd.nn.Parameter(retrograd.ones(2, dtype=retrograd.float64)),
        g=retrograd.zeros(3, requires_grad=True), ints=[1, -(2 ** 70), 2.5, float("-inf"), "text", None, True],
        deep={"a": ({"b": [retrograd.tensor([True, False])]},), 3: (), (1, "k"): {}},
        dt=retrograd.int16, empty=retrograd.zeros(0, 3), scalar=retrograd.tensor(7, dtype=retrograd.uint8),
        misc=[b"\x00\xff bytes", {1, 2}, 1 + 2j, bytearray(b"ab"), 2 ** 64])


# ---- retrograd -> retrograd ---------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(dtype=st.sampled_from(DTYPES).map(np.dtype),
                  shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))
def test_every_dtype_and_shape_round_trips_bit_exactly(array):
    t = retrograd.from_numpy(array)
    back = round_trip(t)
    assert back.dtype == t.dtype and back.shape == t.shape
    assert back.numpy().tobytes() == array.tobytes()  # bit-exact, NaN payloads and -0.0 included


def test_structures_round_trip_exactly():
    t = retrograd.ones(2, requires_grad=True)
    p = retrograd.nn.Parameter(retrograd.zeros(3))
    obj = OrderedDict(a=t, b=[1, 2.5, float("nan"), float("-inf"), -0.0, None, True, "text"],
                      c=(p, {3: "int key", (1, "x"): "tuple key", None: 0, 2.5: "float key"}), d=t, e=())
    back = round_trip(obj)
    assert type(back) is OrderedDict and list(back) == list(obj)
    assert back["a"].requires_grad and back["a"].is_leaf and back["d"] is back["a"]
    assert isinstance(back["c"][0], retrograd.nn.Parameter) and back["c"][0].requires_grad
    assert back["b"][:2] == [1, 2.5] and np.isnan(back["b"][2]) and back["b"][3] == float("-inf")
    assert str(back["b"][4]) == "-0.0" and back["b"][5:] == [None, True, "text"]
    assert type(back["b"][0]) is int and type(back["b"][6]) is bool
    assert back["c"][1] == {3: "int key", (1, "x"): "tuple key", None: 0, 2.5: "float key"}
    assert back["e"] == () and type(back["c"]) is tuple and type(round_trip({"x": 1})) is dict


def test_model_and_optimizer_state_dicts_round_trip(tmp_path):
    def model():
        return retrograd.nn.Sequential(retrograd.nn.Linear(3, 4), retrograd.nn.BatchNorm1d(4),
                                       retrograd.nn.Linear(4, 2))
    trained = model()
    opt = retrograd.optim.Adam(trained.parameters(), lr=0.01)
    trained(retrograd.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "checkpoint.pt"
    retrograd.save({"model": trained.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    checkpoint = retrograd.load(path)
    fresh = model()
    assert repr(fresh.load_state_dict(checkpoint["model"])) == "<All keys matched successfully>"
    assert plain(fresh.state_dict()) == plain(trained.state_dict())
    assert checkpoint["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert checkpoint["optimizer"]["state"][0]["step"].item() == 1.0 and checkpoint["epoch"] == 3
    fresh_opt = retrograd.optim.Adam(fresh.parameters())
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    assert fresh_opt.param_groups[0]["lr"] == 0.01


def test_files_of_the_earlier_retrograd_format_stay_readable():
    buffer = io.BytesIO()
    array = io.BytesIO()
    np.save(array, np.arange(3.0), allow_pickle=False)
    index = {"format": "retrograd-save", "version": 1, "object": {"d": [
        [{"s": "w"}, {"T": 0, "g": True, "p": True}], [{"s": "n"}, {"t": [{"i": 3}, {"f": "nan"}]}]], "o": True}}
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("retrograd.json", json.dumps(index))
        z.writestr("tensors/0.npy", array.getvalue())
    back = retrograd.load(io.BytesIO(buffer.getvalue()))
    assert type(back) is OrderedDict and isinstance(back["w"], retrograd.nn.Parameter)
    assert back["w"].tolist() == [0.0, 1.0, 2.0] and back["n"][0] == 3 and np.isnan(back["n"][1])


def test_a_flipped_array_saves_once_copied():
    """torch.from_numpy refuses a negative stride (np.flip's views), so a flipped array reaches a checkpoint copied."""
    for lib in (torch, retrograd):
        with pytest.raises(ValueError, match="^At least one stride in the given numpy array is negative"):
            lib.from_numpy(np.arange(6.0)[::-1])
    flipped = retrograd.from_numpy(np.arange(6.0)[::-1].copy())
    assert round_trip(flipped).tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    assert torch.load(io.BytesIO(saved(retrograd, flipped))).tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]


def test_mmap_maps_the_records_copy_on_write(tmp_path):
    path = tmp_path / "big.pt"
    w = torch.arange(10.0)
    torch.save({"w": w, "v": w[2:5], "e": torch.zeros(0)}, path)
    back = retrograd.load(path, mmap=True)
    assert back["w"].tolist() == list(range(10)) and back["v"].tolist() == [2.0, 3.0, 4.0]
    back["w"][3] = -1.0  # shows through the view, never reaches the file
    assert back["v"][1].item() == -1.0 and retrograd.load(path)["w"][3].item() == 3.0
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        retrograd.load(io.BytesIO(path.read_bytes()), mmap=True)


def test_an_explicit_pickle_module_needs_weights_only_false():
    data = saved(torch, [torch.ones(1)])
    for lib in (torch, retrograd):
        with pytest.raises(RuntimeError, match="^Can not safely load weights when explicit pickle_module is specified"):
            lib.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    assert retrograd.load(io.BytesIO(data), pickle_module=pickle, weights_only=False)[0].tolist() == [1.0]


def test_saving_and_loading_need_no_torch(tmp_path):
    torch.save({"w": torch.arange(3.0)}, tmp_path / "from_torch.pt")
    script = (f"import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
              "import retrograd\n"
              f"w = retrograd.load({str(tmp_path / 'from_torch.pt')!r})['w']\n"
              f"retrograd.save({{'w': w * 2}}, {str(tmp_path / 'ours.pt')!r})\n"
              f"print(retrograd.load({str(tmp_path / 'ours.pt')!r}, weights_only=False)['w'].tolist())\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[0.0, 2.0, 4.0]"
    assert torch.load(tmp_path / "ours.pt")["w"].tolist() == [0.0, 2.0, 4.0]


# ---- the file itself is torch's -----------------------------------------------------------------------
def test_records_and_pickle_bytes_are_torchs():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    r, t = retrograd.from_numpy(array.copy()), torch.from_numpy(array.copy())
    ours = zipfile.ZipFile(io.BytesIO(saved(retrograd, {"w": r, "v": r[1:, ::2], "l": [1, 2.5, "x", None, (3,)]})))
    theirs = zipfile.ZipFile(io.BytesIO(saved(torch, {"w": t, "v": t[1:, ::2], "l": [1, 2.5, "x", None, (3,)]})))
    assert ours.namelist() == theirs.namelist()
    for name in theirs.namelist():
        if not name.endswith("serialization_id"):
            assert ours.read(name) == theirs.read(name), name
    assert ours.read("archive/.data/serialization_id").isdigit()


def test_records_start_on_64_byte_boundaries_under_the_files_name(tmp_path):
    path = tmp_path / "weights.v2.pt"
    retrograd.save({"a": retrograd.ones(3), "b": retrograd.zeros(5, dtype=retrograd.int8)}, path)
    raw = path.read_bytes()
    archive = zipfile.ZipFile(path)
    assert archive.namelist()[0] == "weights.v2/data.pkl"
    for info in archive.infolist():
        name_length, extra_length = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0, info.filename
        assert info.compress_type == zipfile.ZIP_STORED


def test_a_failed_save_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "model.pt"
    retrograd.save({"w": retrograd.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError)):
        retrograd.save({"w": retrograd.zeros(2), "f": lambda: 0}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.pt"]


# ---- torch.save -> retrograd.load and retrograd.save -> torch.load --------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(dtype):
    values = np.array([0, 1, -3, 100, 7], dtype=np.int64)
    array = (values % 2).astype(dtype) if dtype == "bool" else (values.astype(dtype) / (1 if dtype[0] in "iu" else 3))
    array = array.astype(dtype)
    from_torch = retrograd.load(io.BytesIO(saved(torch, torch.from_numpy(array.copy()))))
    assert str(from_torch.dtype) == f"torch.{dtype}" and from_torch.numpy().tobytes() == array.tobytes()
    into_torch = torch.load(io.BytesIO(saved(retrograd, retrograd.from_numpy(array.copy()))), weights_only=True)
    assert str(into_torch.dtype) == f"torch.{dtype}" and into_torch.numpy().tobytes() == array.tobytes()


def test_nested_containers_both_ways():
    obj = nested()
    from_retrograd = torch.load(io.BytesIO(saved(retrograd, obj)), weights_only=True)
    assert plain(from_retrograd) == plain(to_torch(obj))
    from_torch = retrograd.load(io.BytesIO(saved(torch, to_torch(obj))))
    assert plain(from_torch) == plain(obj)
    assert from_torch["g"].is_leaf and from_torch["g"].requires_grad and from_torch["p"].requires_grad


def test_attributes_set_on_tensors_and_parameters_both_ways():
    """A script's attributes on a tensor or Parameter (Mamba's `A_log._no_weight_decay = True`) go into the file as
    torch writes them (_rebuild_from_type_v2, _rebuild_parameter_with_state: the same pickle bytes) and come back in
    either library, weights_only included; a tensor without any is written as before."""
    def made(lib):
        tensor, parameter = lib.arange(3.0), lib.nn.Parameter(lib.zeros(2))
        tensor.tag, parameter._no_weight_decay = "x", True
        return {"t": tensor, "p": parameter, "plain": lib.ones(1)}
    ours, theirs = (zipfile.ZipFile(io.BytesIO(saved(lib, made(lib)))) for lib in (retrograd, torch))
    assert ours.read("archive/data.pkl") == theirs.read("archive/data.pkl")
    for saver, loader in ((torch, retrograd), (retrograd, torch), (retrograd, retrograd)):
        loaded = loader.load(io.BytesIO(saved(saver, made(saver))), weights_only=True)
        assert (loaded["t"].tag, loaded["p"]._no_weight_decay, loaded["plain"].__dict__) == ("x", True, {})
        assert type(loaded["p"]).__name__ == "Parameter" and loaded["t"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("loader", ["torch", "retrograd"])
def test_views_keep_sharing_their_storage(loader):
    lib = torch if loader == "retrograd" else retrograd  # the library that saves
    base = lib.arange(24.0).reshape(4, 6)
    views = {"base": base, "row": base[2], "cols": base[1:, 1::2], "t": base.t(), "flat": base.view(-1)[5:9]}
    back = (retrograd.load if loader == "retrograd" else torch.load)(io.BytesIO(saved(lib, views)))
    for name, view in views.items():
        assert back[name].tolist() == view.tolist()
        assert back[name].stride() == view.stride(), name
    back["base"][2, 3] = -1.0  # one storage: the write shows through every view of it
    assert back["row"][3].item() == -1.0 and back["cols"][1, 1].item() == -1.0 and back["t"][3, 2].item() == -1.0
    assert back["flat"].tolist() == [5.0, 6.0, 7.0, 8.0]


def test_a_scalar_view_of_another_dtype_loads_in_torch():
    """A 0-d tensor whose storage holds another dtype (an element of a reinterpreted tensor) is saved as a copy of
    its own: 0-d, as torch reads it (a copy with a dim made torch refuse the size and stride)."""
    for lib in (retrograd, torch):
        element = lib.arange(4, dtype=lib.int32).view(lib.float32)[1]
        back = torch.load(io.BytesIO(saved(lib, {"e": element})), weights_only=True)["e"]
        assert (back.shape, back.stride(), back.view(torch.int32).item()) == ((), (), 1)


MODULES = [
    lambda nn: nn.Linear(4, 3),
    lambda nn: nn.Conv2d(2, 3, 3, padding=1),
    lambda nn: nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2)),
    lambda nn: nn.Embedding(6, 2),
    lambda nn: nn.LayerNorm(4),
]


@pytest.mark.parametrize("make", MODULES)
def test_module_state_dicts_both_ways(make):
    torch.manual_seed(0)
    torch_module = make(torch.nn)
    module = make(retrograd.nn)
    assert repr(module.load_state_dict(retrograd.load(io.BytesIO(saved(torch, torch_module.state_dict())))
                                       )) == "<All keys matched successfully>"
    assert plain(dict(module.state_dict())) == plain(dict(torch_module.state_dict()))
    fresh = make(torch.nn)
    state = torch.load(io.BytesIO(saved(retrograd, module.state_dict())), weights_only=True)
    assert repr(fresh.load_state_dict(state)) == "<All keys matched successfully>"
    assert plain(dict(fresh.state_dict())) == plain(dict(torch_module.state_dict()))


def test_optimizer_state_both_ways():
    torch.manual_seed(0)
    torch_model = torch.nn.Linear(3, 2)
    torch_opt = torch.optim.Adam(torch_model.parameters(), lr=0.01, betas=(0.8, 0.9))
    torch_model(torch.randn(4, 3)).sum().backward()
    torch_opt.step()
    state = retrograd.load(io.BytesIO(saved(torch, torch_opt.state_dict())))
    assert plain(state) == plain(torch_opt.state_dict())
    model = retrograd.nn.Linear(3, 2)
    opt = retrograd.optim.Adam(model.parameters())
    opt.load_state_dict(state)
    back = torch.load(io.BytesIO(saved(retrograd, opt.state_dict())), weights_only=True)
    fresh = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    fresh.load_state_dict(back)
    assert plain(fresh.state_dict()["state"]) == plain(torch_opt.state_dict()["state"])
    assert fresh.state_dict()["param_groups"] == torch_opt.state_dict()["param_groups"]


def test_whole_modules_and_numpy_arrays_need_weights_only_false_as_in_torch():
    torch.manual_seed(0)
    torch_linear = torch.nn.Linear(3, 2)
    for obj in (torch_linear, np.arange(3)):
        data = saved(torch, obj)
        with pytest.raises(pickle.UnpicklingError) as theirs:
            torch.load(io.BytesIO(data), weights_only=True)
        with pytest.raises(pickle.UnpicklingError) as ours:
            retrograd.load(io.BytesIO(data))
        assert str(ours.value) == str(theirs.value)
    linear = retrograd.load(io.BytesIO(saved(torch, torch_linear)), weights_only=False)
    assert type(linear) is retrograd.nn.Linear
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = torch_linear(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(linear(retrograd.from_numpy(x)).detach().numpy(), expected, rtol=1e-6)
    linear.register_forward_hook(lambda module, args, out: out * 2)  # the hook tables work after loading
    np.testing.assert_allclose(linear(retrograd.from_numpy(x)).detach().numpy(), expected * 2, rtol=1e-6)
    back = torch.load(io.BytesIO(saved(retrograd, retrograd.nn.Linear(3, 2))), weights_only=False)
    assert type(back) is torch.nn.Linear and back(torch.ones(1, 3)).shape == (1, 2)
    array = np.arange(5.0)
    assert (retrograd.load(io.BytesIO(saved(torch, array)), weights_only=False) == array).all()
    assert (torch.load(io.BytesIO(saved(retrograd, array)), weights_only=False) == array).all()


def test_safe_globals_allow_what_the_user_names():
    data = saved(torch, {"w": torch.nn.Linear(2, 2)})
    with retrograd.serialization.safe_globals([retrograd.nn.Linear]):
        assert retrograd.serialization.get_safe_globals() == [retrograd.nn.Linear]
        assert type(retrograd.load(io.BytesIO(data))["w"]) is retrograd.nn.Linear
    assert retrograd.serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear was not an allowed"):
        retrograd.load(io.BytesIO(data))
    retrograd.serialization.add_safe_globals([retrograd.nn.Linear])
    try:
        assert type(retrograd.load(io.BytesIO(data))["w"]) is retrograd.nn.Linear
    finally:
        retrograd.serialization.clear_safe_globals()
    assert retrograd.serialization.get_safe_globals() == []


def test_storages_saved_on_a_gpu_need_a_map_location():
    source = zipfile.ZipFile(io.BytesIO(saved(torch, {"w": torch.ones(2)})))
    records = {name: source.read(name) for name in source.namelist()}
    records["archive/data.pkl"] = records["archive/data.pkl"].replace(b"X\x03\x00\x00\x00cpu",
                                                                      b"X\x06\x00\x00\x00cuda:0")
    data = torch_zip(records)
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device"):
        retrograd.load(io.BytesIO(data))
    assert retrograd.load(io.BytesIO(data), map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert retrograd.load(io.BytesIO(data), map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]


def torch_zip(records: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, content in records.items():
            z.writestr(name, content)
    return buffer.getvalue()


# ---- hostile and damaged input ------------------------------------------------------------------------
class Boom:
    """Unpickling this runs os.system: a load must refuse it before anything runs."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("wrapped", [False, True])
def test_malicious_pickles_are_refused_with_torchs_text(tmp_path, wrapped):
    marker = tmp_path / "pwned"
    data = saved(torch, {"x": Boom(marker)}) if wrapped else pickle.dumps(Boom(marker), protocol=2)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(io.BytesIO(data), weights_only=True)
    with pytest.raises(pickle.UnpicklingError) as ours:
        retrograd.load(io.BytesIO(data))
    assert str(ours.value) == str(theirs.value) and "posix.system whose module posix is blocked" in str(ours.value)
    assert not marker.exists()


def pickle_of(*opcodes: bytes) -> bytes:
    return b"\x80\x02" + b"".join(opcodes) + b"."


def test_a_100000_deep_structure_loads_without_recursion():
    deep = pickle_of(b"]" * 100_000, b"a" * 99_999)
    back = retrograd.load(io.BytesIO(torch_zip({"archive/data.pkl": deep})))
    depth = 0
    while back:
        back, depth = back[0], depth + 1
    assert depth == 99_999
    legacy = torch_zip({"retrograd.json": '{"format": "retrograd-save", "version": 1, "object": '
                                          + '{"l": [' * 100_000 + "]}" * 100_000 + "}"})
    with pytest.raises(RuntimeError, match="corrupt or truncated .*RecursionError"):
        retrograd.load(io.BytesIO(legacy))
    nested_list = []
    for _ in range(100_000):
        nested_list = [nested_list]
    with pytest.raises(RuntimeError, match="nested too deeply"):
        retrograd.save(nested_list, io.BytesIO())


def storage_pickle(numel: int, size: tuple, stride: tuple, offset: int = 0) -> bytes:
    """data.pkl of one float32 tensor on storage 0, written by the real pickler with torch's globals."""
    class Rebuild:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (Storage(), offset, size, stride, False, OrderedDict()))

    class Storage:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if isinstance(obj, Storage) else None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump(Rebuild())
    return buffer.getvalue()


def test_claimed_sizes_are_checked_against_the_records_before_allocating():
    huge = torch_zip({"archive/data.pkl": storage_pickle(10 ** 12, (10 ** 12,), (1,)),
                      "archive/data/0": b"\0" * 24})  # a claimed 3.6 TiB tensor over 24 real bytes
    with pytest.raises(RuntimeError, match=r"storage 0 claims 1000000000000 elements .* holds 24 bytes"):
        retrograd.load(io.BytesIO(huge))
    overreach = torch_zip({"archive/data.pkl": storage_pickle(6, (10 ** 12,), (1,)), "archive/data/0": b"\0" * 24})
    with pytest.raises(RuntimeError, match=r"reaches element 999999999999 of a storage of 6 elements"):
        retrograd.load(io.BytesIO(overreach))
    negative = torch_zip({"archive/data.pkl": storage_pickle(6, (2,), (-1,), 3), "archive/data/0": b"\0" * 24})
    with pytest.raises(RuntimeError, match=r"invalid stride"):
        retrograd.load(io.BytesIO(negative))
    good = torch_zip({"archive/data.pkl": storage_pickle(6, (2, 2), (1, 2), 1), "archive/data/0": b"\0" * 24})
    assert retrograd.load(io.BytesIO(good)).shape == (2, 2)


def state_bytes() -> bytes:
    return saved(torch, {"w": torch.arange(100.0), "b": [torch.ones(3, dtype=torch.int64)]})


@pytest.mark.parametrize("cut", [0, 1, 3, 10, 100, 400, 1000, -200, -22, -1])
def test_truncated_files_give_a_clear_error_of_torchs_type(cut):
    """Nothing to read is torch's EOFError, a start that is neither a zip nor a pickle its UnpicklingError, a cut
    archive its RuntimeError; each says what is wrong."""
    errors = []
    for lib in (torch, retrograd):
        with pytest.raises((RuntimeError, pickle.UnpicklingError, EOFError)) as caught:
            lib.load(io.BytesIO(state_bytes()[:cut]))
        errors.append(caught.value)
    assert type(errors[1]) is type(errors[0])
    assert re.search("corrupt or truncated|not a file written by|is empty", str(errors[1]))


def test_misused_save_and_load_arguments_raise_as_torch():
    """A file object without write/seek, a map_location that is no mapping (torch calls it) and a missing directory
    give torch's exceptions and words."""
    outcomes = []
    for lib in (torch, retrograd):
        seen = []
        for misuse in (lambda: lib.save(lib.ones(1), 5), lambda: lib.load(5),
                       lambda: lib.load(io.BytesIO(saved(lib, lib.ones(1))), map_location=5),
                       lambda: lib.save(lib.ones(1), os.path.join("no_such_directory_here", "x.pt"))):
            with pytest.raises(Exception) as caught:
                misuse()
            seen.append((type(caught.value).__name__, str(caught.value)))
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1]


def test_random_bytes_give_a_clear_error():
    rng = np.random.default_rng(0)
    for _ in range(20):
        data = rng.bytes(int(rng.integers(1, 3000)))
        with pytest.raises((RuntimeError, pickle.UnpicklingError)):
            retrograd.load(io.BytesIO(data))
    with pytest.raises(RuntimeError, match="corrupt or truncated"):
        retrograd.load(io.BytesIO(b"PK\x03\x04" + rng.bytes(500)))


def test_damaged_bytes_anywhere_give_only_the_two_errors():
    """Bytes flipped anywhere (zip headers included) and files cut short: a RuntimeError or torch's refusal."""
    good = state_bytes()
    rng = np.random.default_rng(1)
    for _ in range(300):
        data = bytearray(good)
        for position in rng.integers(0, len(data), int(rng.integers(1, 5))):
            data[position] = int(rng.integers(0, 256))
        data = data[:int(rng.integers(1, len(data)))] if rng.random() < 0.3 else data
        with pytest.raises((RuntimeError, pickle.UnpicklingError)) as error:
            retrograd.load(io.BytesIO(bytes(data)))
            raise RuntimeError("loaded")  # some flips land on bytes that do not matter
        assert type(error.value) in (RuntimeError, pickle.UnpicklingError), repr(error.value)


def test_a_corrupted_crc_gives_a_clear_error():
    data = bytearray(state_bytes())
    start = data.index(struct.pack("<f", 50.0))  # inside storage 0: its CRC no longer matches
    data[start] ^= 0xFF
    with pytest.raises(RuntimeError, match="corrupt or truncated .*Bad CRC-32"):
        retrograd.load(io.BytesIO(bytes(data)))


def test_untyped_storages_read_as_the_tensors_dtype():
    """torch writes _rebuild_tensor_v3 on an UntypedStorage for dtypes without a legacy storage class."""
    class Rebuild:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v3, (Raw(), 1, (2,), (1,), False, OrderedDict(), torch.int16))

    class Raw:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.UntypedStorage, "0", "cpu", 6) if isinstance(obj, Raw) else None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump(Rebuild())
    data = torch_zip({"archive/data.pkl": buffer.getvalue(), "archive/data/0": np.int16([7, 8, 9]).tobytes(),
                      "archive/version": "3\n"})
    for lib in (torch, retrograd):
        back = lib.load(io.BytesIO(data))
        assert back.tolist() == [8, 9] and str(back.dtype) == "torch.int16"


def test_element_types_retrograd_lacks_are_named():
    for dtype, name in ((torch.float8_e4m3fn, "float8_e4m3fn"),):
        with pytest.raises(RuntimeError, match=f"holds tensors of type torch.{name}, which retrograd does not have"):
            retrograd.load(io.BytesIO(saved(torch, torch.ones(2, dtype=dtype))))


def test_malformed_archives_are_refused():
    with pytest.raises(RuntimeError, match="holds no <archive>/data.pkl"):
        retrograd.load(io.BytesIO(torch_zip({"hello.txt": "hi"})))
    with pytest.raises(RuntimeError, match="has no record archive/data/0"):
        retrograd.load(io.BytesIO(torch_zip({"archive/data.pkl": storage_pickle(6, (6,), (1,))})))
    squeezed = io.BytesIO()
    with zipfile.ZipFile(squeezed, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", storage_pickle(6, (6,), (1,)))
        z.writestr("archive/data/0", b"\0" * 24)
    with pytest.raises(RuntimeError, match="is compressed"):
        retrograd.load(io.BytesIO(squeezed.getvalue()))
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand 149"):
        retrograd.load(io.BytesIO(torch_zip({"archive/data.pkl": pickle.dumps([1], protocol=4)})))


def test_the_bfloat16_dtype_as_a_value_crosses_both_ways():
    """A config that names torch.bfloat16 (not a tensor of it) saves and loads across the libraries."""
    theirs = retrograd.load(io.BytesIO(saved(torch, {"dtype": torch.bfloat16, "half": torch.float16})))
    assert theirs == {"dtype": retrograd.bfloat16, "half": retrograd.float16}
    ours = torch.load(io.BytesIO(saved(retrograd, {"dtype": retrograd.bfloat16})))
    assert ours == {"dtype": torch.bfloat16}


@pytest.mark.parametrize("saver", ["torch", "retrograd"])
def test_devices_cross_both_ways(saver):
    """A torch.device in a checkpoint (a config's) is pickled as torch's, device(type[, index]): either loads it."""
    writer, reader = ({"torch": torch, "retrograd": retrograd}[name] for name in (saver, {"torch": "retrograd",
                                                                                         "retrograd": "torch"}[saver]))
    loaded = reader.load(io.BytesIO(saved(writer, {"cpu": writer.device("cpu"), "gpu": writer.device("cuda", 1)})))
    assert loaded == {"cpu": reader.device("cpu"), "gpu": reader.device("cuda", 1)}


@pytest.mark.parametrize("saver", ["torch", "retrograd"])
@pytest.mark.parametrize("dtype", ["bfloat16", "complex32", "float16"])
def test_loaded_half_tensors_print_and_compute(saver, dtype):
    """A loaded tensor of the dtypes retrograd tells by their NumPy dtype object (bfloat16, complex32) prints,
    converts and computes as one made in memory does, whichever library wrote the file."""
    lib = {"torch": torch, "retrograd": retrograd}[saver]
    values = [1.5, -2.25]
    loaded = retrograd.load(io.BytesIO(saved(lib, {"w": lib.tensor(values).to(getattr(lib, dtype))})))["w"]
    made = retrograd.tensor(values).to(getattr(retrograd, dtype))
    assert repr(loaded) == repr(made)
    assert loaded.to(retrograd.complex64).tolist() == made.to(retrograd.complex64).tolist()
    if dtype != "complex32":  # complex32 has no arithmetic in torch either
        assert (loaded + 1).tolist() == (made + 1).tolist()


@pytest.mark.parametrize("saver", ["torch", "retrograd"])
def test_loaded_views_keep_their_storage_offset_and_shared_storage(saver):
    """Views saved together load as views of one storage, with torch's offsets, strides and storage sizes."""
    lib = {"torch": torch, "retrograd": retrograd}[saver]
    base = lib.arange(10.0)
    data = saved(lib, [base[2:5], base[:3], base.view(2, 5).t()])
    results = []
    for loader in (torch, retrograd):
        a, b, c = loader.load(io.BytesIO(data))
        shared = a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() == c.untyped_storage().data_ptr()
        a[0] = 100.0
        results.append((a.storage_offset(), a.untyped_storage().nbytes(), shared, c.stride(), b.tolist()))
    assert results[0] == results[1] == (2, 40, True, (1, 5), [0.0, 1.0, 100.0])


def test_classes_name_the_module_torch_defines_them_in():
    """Each class of torch.nn, torch.optim, torch.distributions and torch.utils.data names torch's module as its
    own (`__module__`): a whole model, optimizer or distribution pickled here loads in torch, and printed class
    paths are torch's. (LinearCrossEntropyOptions, an options record, lives in no module of torch's name here.)"""
    differ = []
    for path in ("nn", "optim", "optim.lr_scheduler", "distributions", "utils.data"):
        theirs, ours = (importlib.import_module(f"{lib}.{path}") for lib in ("torch", "retrograd"))
        for name, cls in vars(theirs).items():
            mine = getattr(ours, name, None)
            if inspect.isclass(cls) and inspect.isclass(mine) and name != "LinearCrossEntropyOptions" and \
                    mine.__module__ != cls.__module__.replace("torch", "retrograd", 1):
                differ.append((name, mine.__module__, cls.__module__))
    assert differ == []


def test_a_whole_model_and_distribution_pickled_here_load_in_torch():
    """torch.save of the objects themselves (weights_only=False to load): torch finds every class at its own path."""
    model = retrograd.nn.Sequential(retrograd.nn.Conv2d(4, 4, 1), retrograd.nn.BatchNorm2d(4),
                                    retrograd.nn.InstanceNorm2d(4), retrograd.nn.PixelShuffle(2))
    optimizer = retrograd.optim.AdamW(model.parameters())
    normal = retrograd.distributions.Normal(retrograd.zeros(2), retrograd.ones(2))
    loaded = torch.load(io.BytesIO(saved(retrograd, [model, optimizer, normal])), weights_only=False)
    assert [type(m).__name__ for m in loaded[0]] == ["Conv2d", "BatchNorm2d", "InstanceNorm2d", "PixelShuffle"]
    assert type(loaded[1]) is torch.optim.AdamW and type(loaded[2]) is torch.distributions.Normal
