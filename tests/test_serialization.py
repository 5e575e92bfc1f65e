"""retrograd.save / retrograd.load: exact round trips, no code execution, clear errors for bad files."""

import io
import pickle
import re
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


def round_trip(obj):
    buffer = io.BytesIO()
    retrograd.save(obj, buffer)
    buffer.seek(0)
    return retrograd.load(buffer)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(dtype=st.sampled_from(DTYPES).map(np.dtype),
                  shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))
def test_every_dtype_and_shape_round_trips_bit_exactly(array):
    t = retrograd.from_numpy(array)
    back = round_trip(t)
    assert back.dtype == t.dtype and back.shape == t.shape
    assert back.numpy().tobytes() == array.tobytes()  # bit-exact, NaN payloads and -0.0 included


def test_non_contiguous_and_views_round_trip():
    base = retrograd.arange(24.0).reshape(4, 6)
    view = base.t()[1:, ::2]
    assert round_trip(view).tolist() == view.tolist()


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
    assert back["e"] == () and type(back["c"]) is tuple and type(back) is OrderedDict
    assert type(round_trip({"x": 1})) is dict


def test_model_and_optimizer_state_dicts_round_trip(tmp_path):
    model = retrograd.nn.Sequential(retrograd.nn.Linear(3, 4), retrograd.nn.BatchNorm1d(4), retrograd.nn.Linear(4, 2))
    opt = retrograd.optim.Adam(model.parameters(), lr=0.01)
    model(retrograd.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "checkpoint.pt"
    retrograd.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    checkpoint = retrograd.load(path)
    fresh = retrograd.nn.Sequential(retrograd.nn.Linear(3, 4), retrograd.nn.BatchNorm1d(4), retrograd.nn.Linear(4, 2))
    assert repr(fresh.load_state_dict(checkpoint["model"])) == "<All keys matched successfully>"
    for (k, a), (_, b) in zip(fresh.state_dict().items(), model.state_dict().items()):
        assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes(), k
    assert checkpoint["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert checkpoint["optimizer"]["state"][0]["step"].item() == 1.0 and checkpoint["epoch"] == 3
    fresh_opt = retrograd.optim.Adam(fresh.parameters())
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    assert fresh_opt.param_groups[0]["lr"] == 0.01


@pytest.mark.parametrize("obj,what", [
    (object(), "object"),
    ({"model": retrograd.nn.Linear(1, 1)}, "Linear (save its state_dict() instead)"),
    ([1, {2, 3}], "set"),
    (retrograd.float32, "dtype"),
    (lambda: 0, "function"),
    (b"bytes", "bytes"),
])
def test_refuses_anything_else(obj, what):
    with pytest.raises(TypeError, match=f"retrograd.save cannot store .* of type {re.escape(what)}"):
        retrograd.save(obj, io.BytesIO())


class Boom:
    """Loading a pickle of this would run os.system: retrograd.load must never unpickle it."""

    def __reduce__(self):
        import os

        return (os.system, ("echo pwned > /dev/null",))


def test_refuses_pickles_and_torch_files(tmp_path):
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(RuntimeError, match="is a pickle; retrograd refuses pickles"):
        retrograd.load(evil)
    torch_file = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, torch_file)
    with pytest.raises(RuntimeError, match=r"is a torch.save file \(a pickle inside a zip\)"):
        retrograd.load(torch_file)
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(RuntimeError, match="not a file written by retrograd.save"):
        retrograd.load(other_zip)


def saved_bytes():
    buffer = io.BytesIO()
    retrograd.save({"w": retrograd.arange(100.0), "b": [retrograd.ones(3, dtype=retrograd.int64)]}, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("cut", [0, 1, 10, 100, 400, -200, -22, -1])
def test_truncated_files_give_a_clear_error(cut):
    data = saved_bytes()[:cut]
    with pytest.raises(RuntimeError, match="corrupt or truncated|is a pickle|not a file written"):
        retrograd.load(io.BytesIO(data))


def test_corrupted_bytes_give_a_clear_error():
    data = bytearray(saved_bytes())
    start = data.index(b"\x93NUMPY")  # inside the first stored array: the CRC no longer matches
    data[start + 80] ^= 0xFF
    with pytest.raises(RuntimeError, match="corrupt or truncated"):
        retrograd.load(io.BytesIO(bytes(data)))
    with pytest.raises(RuntimeError, match="corrupt or truncated"):
        retrograd.load(io.BytesIO(b"PK\x03\x04 this is not really a zip"))


def test_tampered_index_is_refused(tmp_path):
    path = tmp_path / "tampered.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("retrograd.json", '{"format": "retrograd-save", "version": 1, "object": {"T": 0}}')
    with pytest.raises(RuntimeError, match="corrupt or truncated"):
        retrograd.load(path)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("retrograd.json", '{"format": "retrograd-save", "version": 1, "object": {"x": 1}}')
    with pytest.raises(RuntimeError, match="corrupt or truncated .*unknown entry kind 'x'"):
        retrograd.load(path)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("retrograd.json", '{"format": "retrograd-save", "version": 99, "object": {"n": null}}')
    with pytest.raises(RuntimeError, match="has format version 99"):
        retrograd.load(path)
