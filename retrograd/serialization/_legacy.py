"""Reading files written by retrograd before it wrote torch's format (`retrograd.json` plus `.npy` arrays).

Note [the structure description]
`retrograd.json` holds {"format": "retrograd-save", "version": 1, "object": ...}; every value is a
JSON object with a one-letter kind, so non-string dict keys and tuples vs lists survive::

  {"n": null} None | {"b": true} bool | {"i": 3} int | {"f": "1.5"} float (repr) | {"s": "x"} str |
  {"l": [...]} list | {"t": [...]} tuple | {"d": [[key, value], ...], "o": true if an OrderedDict} dict |
  {"T": 0, "g": bool, "p": bool} the tensor tensors/0.npy (requires_grad, whether a Parameter).

Arrays are read with `allow_pickle=False`, so these files never run code either.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from .._tensor import Tensor, _wrap
from ..nn.parameter import Parameter

INDEX = "retrograd.json"
_FORMAT = "retrograd-save"
_VERSION = 1


def load_legacy(archive: zipfile.ZipFile, name: str) -> Any:
    """The object stored in an old retrograd archive (RuntimeError if the index is not one we wrote)."""
    index = json.loads(archive.read(INDEX).decode("utf-8"))
    if not isinstance(index, dict) or index.get("format") != _FORMAT:
        raise RuntimeError(f"retrograd.load: {name} is not a file written by retrograd.save")
    if index.get("version") != _VERSION:
        raise RuntimeError(f"retrograd.load: {name} has format version {index.get('version')}; this retrograd "
                           f"reads version {_VERSION}")
    return _decode(index["object"], archive, {})


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
    scalars = {"n": lambda v: None, "b": bool, "i": int, "f": float, "s": str}
    if kind in scalars:
        return scalars[kind](value)
    if kind == "l":
        return [_decode(v, archive, cache) for v in value]
    if kind == "t":
        return tuple(_decode(v, archive, cache) for v in value)
    if kind == "d":
        pairs = [(_decode(k, archive, cache), _decode(v, archive, cache)) for k, v in value]
        return OrderedDict(pairs) if node.get("o") else dict(pairs)
    raise ValueError(f"unknown entry kind {kind!r}")


def _tensor(array: np.ndarray, requires_grad: bool, parameter: bool) -> Tensor:
    t = _wrap(array)
    if parameter:
        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t
