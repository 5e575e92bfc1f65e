"""Run an unchanged PyTorch script on retrograd: `python -m retrograd.run script.py [args...]`.

An import hook answers `import torch` and every `torch.<sub>` import (torch.nn, torch.nn.functional,
torch.optim, torch.optim.lr_scheduler, torch.autograd, torch.utils.data, ...) with the retrograd
module of the same path, so the script's `import torch`, `import torch.nn as nn` and
`from torch.autograd import grad` give retrograd without an edit. `-m module` runs a module
instead of a file. A submodule retrograd lacks raises ImportError naming it. `install()` turns the hook on inside a
running program (before torch is first imported); processes that multiprocessing starts from it get the hook too.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import io
import os
import runpy
import sys
import zipfile
from types import ModuleType

_PREFIX = "torch"


class _TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch` and `torch.*` and loads them as the retrograd module with the same path."""

    def __init__(self) -> None:
        self._own: dict[str, tuple] = {}  # alias name -> the retrograd module's (__spec__, __path__) while loading

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        target = "retrograd" + spec.name[len(_PREFIX):]
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as error:
            if error.name is not None and not target.startswith(error.name):
                raise
            raise ModuleNotFoundError(f"retrograd.run: {spec.name} has no retrograd counterpart ({target} does not "
                                      "exist)", name=spec.name) from None
        _alias_imported_modules()
        self._own[spec.name] = (module.__spec__, getattr(module, "__path__", None))
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the retrograd module is already imported. Python has just given it the alias's spec
        (and a plain module a package's empty __path__): its own go back, or each relative import run inside it
        (a function's `from ..nn import Sequential`) warns `__package__ != __spec__.parent`, an error under -W
        error."""
        own_spec, own_path = self._own.pop(module.__spec__.name)
        module.__spec__ = own_spec
        if own_path is None:
            vars(module).pop("__path__", None)


_HOOK = _TorchAlias()


def _alias_imported_modules() -> None:
    """Enter every imported retrograd module in sys.modules under its torch name as well.

    A submodule imported for the first time under an alias makes Python set it as an attribute of its
    parent, over whatever the parent exported under that name: `import torch.autograd.gradcheck` would
    replace the function torch.autograd.gradcheck by its module. An alias already in sys.modules is
    found there, and no attribute is set, as when torch itself is imported twice.
    """
    for name, module in list(sys.modules.items()):
        if name == "retrograd" or name.startswith("retrograd."):
            sys.modules.setdefault(_PREFIX + name[len("retrograd"):], module)


# processes multiprocessing starts afresh ("spawn", "forkserver") take sys.path from their parent: this
# folder on it, ahead of site-packages, makes their `import torch` retrograd too (its torch/__init__.py)
_CHILDREN_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_alias")


def install() -> None:
    """Make `import torch` (and its submodules) import retrograd from now on in this process and in the
    processes multiprocessing starts from it."""
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
        _alias_imported_modules()
    if _CHILDREN_PATH not in sys.path:
        sys.path.insert(min(1, len(sys.path)), _CHILDREN_PATH)  # after the script's folder, as Python puts it first


def main(argv: list[str]) -> int:
    """`script.py args...` or `-m module args...`: run it as __main__ with torch mapped to retrograd."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m retrograd.run script.py [args...]\n"
              "       python -m retrograd.run -m module [args...]\n"
              "Runs a PyTorch script unchanged, with `import torch` answered by retrograd.")
        return 0 if argv else 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("retrograd.run: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` sets it
        if os.path.isfile(argv[0]) and not zipfile.is_zipfile(argv[0]):
            _run_script(argv[0])
        else:  # a folder or zip file with a __main__.py
            runpy.run_path(argv[0], run_name="__main__")
    return 0


def _run_script(path: str) -> None:
    """Run a script file as `python path` does: since Python 3.9 its __main__'s __file__ (and so the file name in
    its warnings and tracebacks) is `path` joined to the working directory, unnormalised, while sys.argv[0] stays
    `path` as given (runpy.run_path would set both to the one path it is given)."""
    filename = os.path.join(os.getcwd(), path)
    with io.open_code(filename) as f:
        code = compile(f.read(), filename, "exec", dont_inherit=True)
    main = ModuleType("__main__")
    main.__dict__.update(__file__=filename, __cached__=None, __loader__=None, __package__=None, __spec__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main  # classes the script defines pickle as __main__.X, as in a plain run
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
