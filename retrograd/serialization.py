"""retrograd.save / retrograd.load: tensors and state dicts in a file that never runs code on load.

The file is a zip archive holding `retrograd.json` (the structure: dicts, lists, tuples, numbers,
strings, None, bools, and references to tensors) and one `.npy` array per tensor, read back with
`allow_pickle=False`. Nothing else can be saved, so nothing else can be loaded: a pickle, a file
written by torch.save, or a damaged archive is refused with a RuntimeError saying why.

Note [the structure description]
Every value is a JSON object with a one-letter kind, so dict keys that are not strings (an
optimizer's state is keyed by int) and tuples vs lists survive the round trip::

  {"n": null} None | {"b": true} bool | {"i": 3} int | {"f": "1.5"} float (repr, so nan, inf
  and every bit survive) | {"s": "x"} str | {"l": [...]} list | {"t": [...]} tuple |
  {"d": [[key, value], ...], "o": true if an OrderedDict} dict | {"T": 0, "g": bool, "p": bool}
  a tensor stored as tensors/0.npy (requires_grad, and whether it was an nn.Parameter).

The same tensor object saved twice is stored once and loads as one object.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from ._tensor import Tensor

FORMAT = "retrograd-save"
VERSION = 1
_INDEX = "retrograd.json"
_PICKLE_PROTOCOL_BYTE = b"\x80"

FileLike = str | os.PathLike | IO[bytes]


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Write `obj` (tensors, numbers, strings, None, bools, and lists, tuples and dicts of them) to `f`.

    >>> retrograd.save(model.state_dict(), "model.pt")
    """
    if pickle_module is not None:
        raise ValueError("retrograd.save never pickles: pickle_module is not supported")
    tensors: list[Tensor] = []
    structure = _encode(obj, tensors, {}, "obj")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(_INDEX, json.dumps({"format": FORMAT, "version": VERSION, "object": structure}))
        for i, t in enumerate(tensors):
            array = io.BytesIO()
            np.save(array, t.detach().numpy(), allow_pickle=False)
            archive.writestr(f"tensors/{i}.npy", array.getvalue())
    data = buffer.getvalue()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            handle.write(data)
    else:
        f.write(data)


def _encode(obj: Any, tensors: list, seen: dict, where: str) -> dict:
    """The JSON description of obj (Note [the structure description]); tensors are appended to `tensors`."""
    if obj is None:
        return {"n": None}
    if isinstance(obj, bool):
        return {"b": obj}
    if isinstance(obj, Tensor):
        if id(obj) not in seen:
            seen[id(obj)] = len(tensors)
            tensors.append(obj)
        from .nn.parameter import Parameter

        return {"T": seen[id(obj)], "g": obj.requires_grad, "p": isinstance(obj, Parameter)}
    if isinstance(obj, int):
        return {"i": int(obj)}
    if isinstance(obj, float):
        return {"f": repr(float(obj))}
    if isinstance(obj, str):
        return {"s": obj}
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return {"t": [_encode(v, tensors, seen, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return {"l": [_encode(v, tensors, seen, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        items = [[_encode(k, tensors, seen, f"{where} key"), _encode(v, tensors, seen, f"{where}[{k!r}]")]
                 for k, v in obj.items()]
        return {"d": items, "o": isinstance(obj, OrderedDict)}
    hint = " (save its state_dict() instead)" if hasattr(obj, "state_dict") else ""
    raise TypeError(f"retrograd.save cannot store {where} of type {type(obj).__name__}{hint}: only tensors, "
                    "numbers, strings, None, bools, and lists, tuples and dicts of them can be saved")


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read back what `save` wrote; never executes code from the file.

    >>> model.load_state_dict(retrograd.load("model.pt"))
    """
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<stream>")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            data = handle.read()
    else:
        data = f.read()
    if data[:1] == _PICKLE_PROTOCOL_BYTE:
        raise RuntimeError(f"retrograd.load: {name} is a pickle; retrograd refuses pickles because loading one can "
                           "run arbitrary code. Re-save the tensors with retrograd.save.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = set(archive.namelist())
        if _INDEX not in names:
            what = "a torch.save file (a pickle inside a zip)" if any(n.endswith("data.pkl") for n in names) \
                else "a zip archive without retrograd.json"
            raise RuntimeError(f"retrograd.load: {name} is {what}, not a file written by retrograd.save; retrograd "
                               "refuses pickles because loading one can run arbitrary code.")
        index = json.loads(archive.read(_INDEX).decode("utf-8"))
        if not isinstance(index, dict) or index.get("format") != FORMAT:
            raise RuntimeError(f"retrograd.load: {name} is not a file written by retrograd.save")
        if index.get("version") != VERSION:
            raise RuntimeError(f"retrograd.load: {name} has format version {index.get('version')}; this retrograd "
                               f"reads version {VERSION}")
        cache: dict[int, Tensor] = {}
        return _decode(index["object"], archive, cache)
    except RuntimeError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, KeyError, ValueError, TypeError, OSError,
            UnicodeDecodeError, IndexError) as error:
        raise RuntimeError(f"retrograd.load: {name} is corrupt or truncated ({type(error).__name__}: {error})"
                           ) from error


def _decode(node: dict, archive: zipfile.ZipFile, cache: dict) -> Any:
    """Rebuild a value from its description (Note [the structure description])."""
    if not isinstance(node, dict) or len(node) == 0:
        raise ValueError(f"malformed entry {node!r}")
    if "T" in node:
        index = int(node["T"])
        if index not in cache:
            with archive.open(f"tensors/{index}.npy") as member:
                array = np.load(io.BytesIO(member.read()), allow_pickle=False)
            cache[index] = _tensor(array, bool(node.get("g")), bool(node.get("p")))
        return cache[index]
    kind, value = next(iter(node.items()))
    if kind == "n":
        return None
    if kind == "b":
        return bool(value)
    if kind == "i":
        return int(value)
    if kind == "f":
        return float(value)
    if kind == "s":
        return str(value)
    if kind == "l":
        return [_decode(v, archive, cache) for v in value]
    if kind == "t":
        return tuple(_decode(v, archive, cache) for v in value)
    if kind == "d":
        pairs = [(_decode(k, archive, cache), _decode(v, archive, cache)) for k, v in value]
        return OrderedDict(pairs) if node.get("o") else dict(pairs)
    raise ValueError(f"unknown entry kind {kind!r}")


def _tensor(array: np.ndarray, requires_grad: bool, parameter: bool) -> Tensor:
    from . import from_numpy

    t = from_numpy(array)
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


__all__ = ["load", "save"]
