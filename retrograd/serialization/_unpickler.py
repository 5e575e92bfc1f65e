"""The two unpicklers behind `load`, and the allow-list `add_safe_globals` extends.

`WeightsOnlyUnpickler` (weights_only=True, the default) follows torch's weights_only rules: it
knows only the opcodes torch's files use, calls only the globals of `DEFAULT_GLOBALS` and those
the user allowed, and refuses everything else with torch's "Weights only load failed" text before
anything runs. It is iterative, so a deeply nested file cannot exhaust the Python stack.
`FullUnpickler` (weights_only=False, only when asked) is the ordinary pickle machinery, torch's
module paths read as retrograd's: it runs whatever code the file names.
"""

from __future__ import annotations

import _compat_pickle
import contextlib
import importlib
import pickle
import struct
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .._tensor import Tensor
from ..nn.parameter import Parameter
from ._names import DEFAULT_GLOBALS, torch_name

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
# element types torch allows by default that retrograd lacks: named as such rather than as unsafe globals
_TORCH_ONLY_DTYPES = ("bfloat16", "float8_", "float4_", "complex32", "qint", "quint", "bits")
_user_globals: list[Any] = []

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
    "arbitrary code execution. Do it only if you got the file from a trusted source.")
DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals (or `(global, "module.name")` pairs) in weights_only loads, as torch's."""
    _user_globals.extend(g for g in safe_globals if g not in _user_globals)


def get_safe_globals() -> list:
    """The globals `add_safe_globals` allowed."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every global `add_safe_globals` allowed."""
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list) -> Iterator[None]:
    """Allow these globals inside the `with` block only."""
    before = list(_user_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_globals[:] = before


def _user_allowed() -> dict[str, Any]:
    """Full name -> object for the user's safe globals; a retrograd object also under its torch name."""
    allowed = {}
    for entry in _user_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, f"{entry.__module__}.{entry.__qualname__}")
        allowed[name] = obj
        module, _, short = name.rpartition(".")
        allowed[".".join(torch_name(module, short))] = obj
    return allowed


def weights_only_message(error: str) -> str:
    """torch's wording around a WeightsUnpickler error (torch.serialization.load's _get_wo_message)."""
    if " was not an allowed global by default." in error:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check the "
                f"recommended steps in the following error message.\n\tWeightsUnpickler error: {error}{DOCS_MESSAGE}")
    message = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in error:
        message += ("Please file an issue with the following so that we can make `weights_only=True` compatible "
                    "with your use case: WeightsUnpickler error: ")
    return f"{message}\n\n{error}{DOCS_MESSAGE}"


class WeightsUnpicklerError(Exception):
    """A rule of weights_only loading was broken; `load` reports it in torch's words."""


def _refused_global(full_path: str) -> str:
    shown = full_path[len("builtins."):] if full_path.startswith("builtins.") else full_path
    return (f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{shown}])` or the `torch.serialization.safe_globals([{shown}])` "
            "context manager to allowlist this global if you trust this class/function.")


class WeightsOnlyUnpickler:
    """A pickle reader that builds only tensors, containers, numbers, strings and allowed globals."""

    def __init__(self, data: bytes, persistent_load: Callable[[tuple], Any]) -> None:
        self._data, self._pos = data, 0
        self._persistent_load = persistent_load
        self._allowed = {**DEFAULT_GLOBALS, **_user_allowed()}
        self._allowed_values = list(self._allowed.values())
        self.memo: dict[int, Any] = {}
        self.stack: list[Any] = []
        self.metastack: list[list] = []

    def read(self, n: int) -> bytes:
        if self._pos + n > len(self._data):
            raise pickle.UnpicklingError("pickle data was truncated")
        chunk = self._data[self._pos:self._pos + n]
        self._pos += n
        return chunk

    def readline(self) -> str:
        end = self._data.find(b"\n", self._pos)
        if end < 0:
            raise pickle.UnpicklingError("pickle data was truncated")
        line, self._pos = self._data[self._pos:end], end + 1
        return line.decode("utf-8")

    def load(self) -> Any:
        while True:
            key = self.read(1)
            if key == pickle.STOP:
                return self.stack.pop()
            handler = self._DISPATCH.get(key)
            if handler is None:
                raise WeightsUnpicklerError(f"Unsupported operand {key[0]}")
            handler(self)

    def _is_allowed(self, obj: Any) -> bool:
        return any(obj is allowed for allowed in self._allowed_values)

    def _pop_mark(self) -> list:
        items, self.stack = self.stack, self.metastack.pop()
        return items

    # -- the opcodes that run code: only on allowed globals --------------------------------------
    def _global(self) -> None:
        module, name = self.readline(), self.readline()
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol 2 spells Python 3's names as Python 2's
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        else:
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full_path = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise WeightsUnpicklerError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} "
                                        "is blocked.")
        if full_path not in self._allowed:
            if module == "torch" and (name.endswith("Storage") or name.startswith(_TORCH_ONLY_DTYPES)):
                raise RuntimeError(f"the file holds tensors of type {full_path}, which retrograd does not have")
            raise WeightsUnpicklerError(_refused_global(full_path))
        self.stack.append(self._allowed[full_path])

    def _newobj(self) -> None:
        args, cls = self.stack.pop(), self.stack.pop()
        if cls is Parameter:
            self.stack.append(Parameter(*args))
        elif self._is_allowed(cls) and isinstance(cls, type):
            self.stack.append(cls.__new__(cls, *args))
        else:
            raise WeightsUnpicklerError("Can only create new object for nn.Parameter or classes allowlisted via "
                                        f"`add_safe_globals` but got {cls}")

    def _reduce(self) -> None:
        args, func = self.stack.pop(), self.stack[-1]
        if not self._is_allowed(func):
            raise WeightsUnpicklerError(f"Trying to call reduce for unrecognized function {func}")
        if not isinstance(args, tuple):
            raise WeightsUnpicklerError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
        self.stack[-1] = func(*args)

    def _build(self) -> None:
        state, inst = self.stack.pop(), self.stack[-1]
        if type(inst) is OrderedDict and isinstance(state, dict):
            inst.__dict__.update(state)
        elif isinstance(inst, Tensor) or not self._is_allowed(type(inst)):
            raise WeightsUnpicklerError("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                        f"`add_safe_globals`, but got {type(inst)}")
        elif hasattr(inst, "__setstate__"):
            inst.__setstate__(state)
        else:
            slots = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slots = state
            if state:
                inst.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(inst, k, v)

    def _binpersid(self) -> None:
        pid = self.stack.pop()
        if type(pid) is not tuple or not pid or pid[0] != "storage":
            raise WeightsUnpicklerError(f"Only persistent_load of storage is allowed, but got {pid!r}")
        self.stack.append(self._persistent_load(pid))

    # -- containers ---------------------------------------------------------------------------
    def _append(self) -> None:
        item = self.stack.pop()
        if type(self.stack[-1]) is not list:
            raise WeightsUnpicklerError(f"Can only append to lists, but got {type(self.stack[-1])}")
        self.stack[-1].append(item)

    def _appends(self) -> None:
        items = self._pop_mark()
        if type(self.stack[-1]) is not list:
            raise WeightsUnpicklerError(f"Can only extend lists, but got {type(self.stack[-1])}")
        self.stack[-1].extend(items)

    def _set_items(self, items: list, opcode: str) -> None:
        target = self.stack[-1]
        if type(target) not in (dict, OrderedDict, Counter):
            raise WeightsUnpicklerError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                                        f"but got {type(target)}")
        if len(items) % 2:
            raise pickle.UnpicklingError("odd number of items for SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _setitem(self) -> None:
        value, key = self.stack.pop(), self.stack.pop()
        self._set_items([key, value], "SETITEM")

    def _setitems(self) -> None:
        self._set_items(self._pop_mark(), "SETITEMS")

    def _mark(self) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def _tuple_n(n: int) -> Callable:  # noqa: N805 - builds methods at class creation
        def handler(self: WeightsOnlyUnpickler) -> None:
            items = tuple(self.stack[len(self.stack) - n:])
            if len(items) != n:
                raise pickle.UnpicklingError("stack underflow")
            del self.stack[len(self.stack) - n:]
            self.stack.append(items)
        return handler

    def _tuple(self) -> None:
        items = tuple(self._pop_mark())  # before self.stack is looked up: popping the mark replaces it
        self.stack.append(items)

    # -- values -------------------------------------------------------------------------------
    def _push(value: Callable[[WeightsOnlyUnpickler], Any]) -> Callable:  # noqa: N805
        def handler(self: WeightsOnlyUnpickler) -> None:
            self.stack.append(value(self))
        return handler

    def _memo_get(width: str) -> Callable:  # noqa: N805
        def handler(self: WeightsOnlyUnpickler) -> None:
            self.stack.append(self.memo[struct.unpack(width, self.read(struct.calcsize(width)))[0]])
        return handler

    def _memo_put(width: str) -> Callable:  # noqa: N805
        def handler(self: WeightsOnlyUnpickler) -> None:
            self.memo[struct.unpack(width, self.read(struct.calcsize(width)))[0]] = self.stack[-1]
        return handler

    def _proto(self) -> None:
        self.read(1)

    def _unicode(self) -> str:
        return str(self.read(struct.unpack("<I", self.read(4))[0]), "utf-8", "surrogatepass")

    def _short_binstring(self) -> str:
        return self.read(self.read(1)[0]).decode("ascii")

    _DISPATCH: dict[bytes, Callable] = {
        pickle.GLOBAL: _global, pickle.NEWOBJ: _newobj, pickle.REDUCE: _reduce, pickle.BUILD: _build,
        pickle.BINPERSID: _binpersid, pickle.APPEND: _append, pickle.APPENDS: _appends, pickle.SETITEM: _setitem,
        pickle.SETITEMS: _setitems, pickle.MARK: _mark, pickle.TUPLE: _tuple, pickle.TUPLE1: _tuple_n(1),
        pickle.TUPLE2: _tuple_n(2), pickle.TUPLE3: _tuple_n(3), pickle.PROTO: _proto,
        pickle.NONE: _push(lambda self: None), pickle.NEWFALSE: _push(lambda self: False),
        pickle.NEWTRUE: _push(lambda self: True), pickle.EMPTY_TUPLE: _push(lambda self: ()),
        pickle.EMPTY_LIST: _push(lambda self: []), pickle.EMPTY_DICT: _push(lambda self: {}),
        pickle.EMPTY_SET: _push(lambda self: set()),
        pickle.BININT: _push(lambda self: struct.unpack("<i", self.read(4))[0]),
        pickle.BININT1: _push(lambda self: self.read(1)[0]),
        pickle.BININT2: _push(lambda self: struct.unpack("<H", self.read(2))[0]),
        pickle.BINFLOAT: _push(lambda self: struct.unpack(">d", self.read(8))[0]),
        pickle.LONG1: _push(lambda self: pickle.decode_long(self.read(self.read(1)[0]))),
        pickle.BINUNICODE: _push(_unicode), pickle.SHORT_BINSTRING: _push(_short_binstring),
        pickle.BINGET: _memo_get("<B"), pickle.LONG_BINGET: _memo_get("<I"),
        pickle.BINPUT: _memo_put("<B"), pickle.LONG_BINPUT: _memo_put("<I"),
    }
    del _tuple_n, _push, _memo_get, _memo_put, _unicode, _short_binstring  # only the table uses them


class FullUnpickler(pickle.Unpickler):
    """The ordinary unpickler (runs the file's code), with torch's module paths read as retrograd's."""

    def __init__(self, file: Any, persistent_load: Callable[[tuple], Any]) -> None:
        super().__init__(file)
        self._load_storage = persistent_load

    def persistent_load(self, pid: Any) -> Any:
        return self._load_storage(pid)

    def find_class(self, module: str, name: str) -> Any:
        full_path = f"{module}.{name}"
        if full_path in DEFAULT_GLOBALS:
            return DEFAULT_GLOBALS[full_path]
        if module != "torch" and not module.startswith("torch."):
            return super().find_class(module, name)
        try:
            obj = importlib.import_module("retrograd" + module[len("torch"):])
            for part in name.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            raise RuntimeError(f"the file needs {full_path}, which retrograd does not have") from None
        return obj
