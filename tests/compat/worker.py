"""Run PyTorch's test files under one library and write each test's outcome as JSON.

`python worker.py torch|retrograd TESTS_DIR OUT.json [SUBSTRING]`: imports TESTS_DIR/test/test_autograd.py
with `torch.testing._internal` answered by the stand-ins (and, for retrograd, `torch` answered by
retrograd through retrograd.run's import hook), then runs every in-scope test alone, each under a
time limit. One process per library, so the two runs cannot disturb each other.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import signal
import sys
import traceback
import unittest
from types import ModuleType

HERE = os.path.dirname(os.path.abspath(__file__))
ENTRY = "test_autograd"  # imports test/autograd/test_{complex,functional,logging}.py itself
STANDINS = "torch.testing._internal"
TIME_LIMIT_S = 60


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers `torch.testing._internal[.name]` with the project's `standins[.name]`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == STANDINS or fullname.startswith(STANDINS + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return importlib.import_module("standins" + spec.name[len(STANDINS):])

    def exec_module(self, module):
        """Already imported."""


class Missing:
    """A torch name the library lacks that a test file uses while it is imported. Using it in a test raises,
    failing that test only; while the file is imported, calling it gives another Missing, which is false (so
    `skipIf(not torch.x.is_available())` skips, as on a torch without x)."""

    importing = True

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self._name}.{attr}")

    def __bool__(self):
        return False

    def __repr__(self):
        return f"<missing {self._name}>"

    def __call__(self, *args, **kwargs):
        if Missing.importing:
            return Missing(f"{self._name}()")
        raise NotImplementedError(f"this library has no {self._name}")

    def __mro_entries__(self, bases):
        raise NotImplementedError(f"this library has no {self._name}")


def _module_or_missing(name: str, missing: list[str]) -> ModuleType:
    """The module, or a stand-in whose every attribute is Missing (noted in missing)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        parent, _, child = name.rpartition(".")
        module = ModuleType(name)
        module.__getattr__ = lambda attr: Missing(f"{name}.{attr}")
        sys.modules[name] = module
        missing.append(name)
        if parent:
            setattr(_module_or_missing(parent, missing), child, module)
        return module


def provide_top_level_imports(paths: list[str]) -> list[str]:
    """Stand in, with Missing, for every torch module or name the files import at their top that the library
    lacks, so one missing name fails the tests that use it rather than the whole file. Returns what was missing."""
    missing: list[str] = []
    for path in paths:
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.Import):
                modules, names = [a.name for a in node.names], []
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules, names = [node.module], [a.name for a in node.names]
            else:
                continue
            for module_name in modules:
                if not module_name.startswith("torch") or module_name.startswith(STANDINS):
                    continue
                module = _module_or_missing(module_name, missing)
                for name in names:
                    if hasattr(module, name):
                        continue
                    try:
                        importlib.import_module(f"{module_name}.{name}")
                    except ImportError:
                        setattr(module, name, Missing(f"{module_name}.{name}"))
                        missing.append(f"{module_name}.{name}")
    return missing


def import_with_missing_names(name: str, missing: list[str], attempts: int = 200) -> ModuleType:
    """Import the test module; each torch attribute it evaluates while importing (a layout in a parametrisation,
    torch.cuda.is_available() in a skipIf) that the library lacks becomes a Missing, noted in missing."""
    for _ in range(attempts):
        try:
            module = importlib.import_module(name)
            Missing.importing = False
            return module
        except AttributeError as error:
            owner = getattr(error, "obj", None)
            owner_name = getattr(owner, "__name__", "")
            if not isinstance(owner, ModuleType) or not owner_name.startswith("retrograd"):
                raise
            for partial in [m for m in sys.modules if m == name or m.startswith("autograd.")]:
                del sys.modules[partial]
            torch_name = f"torch{owner_name[len('retrograd'):]}.{error.name}"
            setattr(owner, error.name, Missing(torch_name))
            missing.append(torch_name)
    raise ImportError(f"{name}: more than {attempts} missing names")


def _timeout(signum, frame):
    raise TimeoutError(f"the test ran past {TIME_LIMIT_S} s")


def _exception_line(formatted_traceback: str) -> str:
    """The first line of the exception's own text in a formatted traceback ("Type: message")."""
    lines = formatted_traceback.rstrip().splitlines()
    last_frame = max((i for i, line in enumerate(lines) if line.startswith("  File ")), default=-1)
    after = [line for line in lines[last_frame + 1:] if line and not line.startswith(" ")]
    return (after[0] if after else lines[-1])[:300]


def run_one(case: unittest.TestCase) -> tuple[str, str]:
    """('pass' | 'fail' | 'skip', message) for one test; an expected failure that fails is a pass, as in unittest."""
    result = unittest.TestResult()
    signal.alarm(TIME_LIMIT_S)
    try:
        case.run(result)
    finally:
        signal.alarm(0)
    if result.skipped:
        return "skip", result.skipped[0][1]
    problems = result.errors + result.failures
    if problems:
        return "fail", _exception_line(problems[0][1])
    if result.unexpectedSuccesses:
        return "fail", "unexpected success"
    return "pass", ""


def main(lib: str, tests_dir: str, out: str, only: str = "") -> None:
    sys.path[:0] = [HERE, os.path.join(tests_dir, "test")]
    if lib == "retrograd":
        import retrograd.run
        retrograd.run.install()
    importlib.import_module("torch")  # whole before the stand-ins answer its testing._internal
    sys.meta_path.insert(0, _StandIns())
    import scope

    test_files = [os.path.join(tests_dir, "test", ENTRY + ".py")] + [
        os.path.join(tests_dir, "test", "autograd", f) for f in sorted(os.listdir(os.path.join(tests_dir, "test",
                                                                                            "autograd")))
        if f.startswith("test_") and f.endswith(".py")]
    missing = provide_top_level_imports(test_files)
    module = import_with_missing_names(ENTRY, missing)
    signal.signal(signal.SIGALRM, _timeout)
    outcomes = {}
    for class_name, cls in sorted(vars(module).items()):
        if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)) or not class_name.startswith("Test"):
            continue
        test_file = os.path.relpath(sys.modules[cls.__module__].__file__, os.path.join(tests_dir, "test"))
        for name in sorted(unittest.TestLoader().getTestCaseNames(cls)):
            test_id = f"{test_file}::{class_name}::{name}"
            if only and only not in test_id:
                continue
            category = scope.category_of(getattr(cls, name))
            if category:
                outcomes[test_id] = {"scope": category, "status": "out of scope", "message": ""}
                continue
            try:
                status, message = run_one(cls(name))
            except BaseException as error:  # noqa: BLE001 - a test that escapes unittest still gets a line
                status, message = "fail", f"{type(error).__name__}: {error}"[:300]
                traceback.print_exc()
            outcomes[test_id] = {"scope": None, "status": status, "message": message}
    with open(out, "w") as f:
        json.dump({"lib": lib, "missing_at_import": missing, "tests": outcomes}, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
