"""TestCase, parametrisation, gradcheck defaults and skip decorators, as torch's common_utils has them."""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import itertools
import os
import platform
import random
import re
import sys
import unittest
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import torch

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"
IS_LINUX = sys.platform.startswith("linux")
IS_S390X = platform.machine() == "s390x"
TEST_WITH_ROCM = False
TEST_WITH_TORCHDYNAMO = False
TEST_WITH_SLOW = os.environ.get("PYTORCH_TEST_WITH_SLOW") == "1"
SEED = 1234

# torch.testing's default tolerances (rtol, atol) by dtype name; integers and bools compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}
_NUMBER_DTYPE = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _as_array(t) -> np.ndarray:
    t = t.detach()
    for resolve in ("resolve_conj", "resolve_neg"):
        if getattr(t, "is_conj" if resolve == "resolve_conj" else "is_neg", lambda: False)():
            t = getattr(t, resolve)()
    return np.asarray(t.cpu().numpy())


def _close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> bool:
    if actual.dtype == bool or expected.dtype == bool or (rtol == 0 and atol == 0):
        return bool(np.array_equal(actual, expected, equal_nan=equal_nan and actual.dtype.kind in "fc"))
    return bool(np.all(np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)))


class TestCase(unittest.TestCase):
    """unittest.TestCase with torch's assertEqual (values, dtypes, shapes; tolerances by dtype)."""

    longMessage = True
    _do_cuda_memory_leak_check = False
    _do_cuda_non_default_stream = False

    def setUp(self):
        """Every test starts from the same random state, as torch's TestCase seeds it (SEED = 1234)."""
        torch.manual_seed(SEED)
        random.seed(SEED)
        np.random.seed(SEED)

    def assertEqual(self, x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
                    exact_device=False, exact_layout=False, exact_stride=False, exact_is_coalesced=False):
        if (atol is None) != (rtol is None):
            raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
        problem = self._mismatch(x, y, atol, rtol, equal_nan, exact_dtype)
        if problem is not None:
            detail = msg() if callable(msg) else msg
            self.fail(f"{problem}" + (f"\n{detail}" if detail else ""))

    def assertNotEqual(self, x, y, msg=None, *, atol=None, rtol=None, **kwargs):
        try:
            self.assertEqual(x, y, msg, atol=atol, rtol=rtol, **kwargs)
        except AssertionError:
            return
        self.fail(msg or f"{x!r} == {y!r}")

    def _mismatch(self, x, y, atol, rtol, equal_nan, exact_dtype, path="") -> str | None:
        """None when x equals y under torch's rules, else what differs."""
        x_tensor, y_tensor = isinstance(x, torch.Tensor), isinstance(y, torch.Tensor)
        if x_tensor or y_tensor:
            if not (x_tensor and y_tensor):
                tensor, other = (x, y) if x_tensor else (y, x)
                if isinstance(other, (bool, int, float, complex)) and not isinstance(other, torch.Tensor):
                    if tensor.numel() != 1:
                        return f"{path}a tensor of {tensor.numel()} elements compared with the number {other!r}"
                    return self._mismatch(tensor.item(), other, atol, rtol, equal_nan, exact_dtype=False, path=path)
                if isinstance(other, np.ndarray):
                    other = torch.from_numpy(other)
                else:
                    return f"{path}a tensor compared with {type(other).__name__}"
                x, y = (tensor, other) if x_tensor else (other, tensor)
                exact_dtype = False
            if tuple(x.shape) != tuple(y.shape):
                return f"{path}shapes differ: {tuple(x.shape)} != {tuple(y.shape)}"
            if exact_dtype and x.dtype != y.dtype:
                return f"{path}dtypes differ: {x.dtype} != {y.dtype}"
            if x.is_complex() != y.is_complex() and not exact_dtype:
                x, y = (t.to(torch.complex128) if not t.is_complex() else t for t in (x, y))
            if rtol is None:
                rtol, atol = (max(_TOLERANCES.get(_dtype_name(t.dtype), (0.0, 0.0))[i] for t in (x, y)) for i in (0, 1))
            a, b = _as_array(x), _as_array(y)
            if not _close(a, b, rtol, atol, equal_nan):
                return f"{path}tensor values differ (rtol={rtol}, atol={atol}):\n{a}\n!=\n{b}"
            return None
        if x is None or y is None:
            return None if x is y else f"{path}{x!r} != {y!r}"
        numbers = (bool, int, float, complex, np.number, np.bool_)
        if isinstance(x, numbers) and isinstance(y, numbers):
            if isinstance(x, (bool, np.bool_)) != isinstance(y, (bool, np.bool_)):
                return f"{path}a bool compared with a number: {x!r} != {y!r}"
            if rtol is None:
                rtol, atol = (max(_TOLERANCES.get(_NUMBER_DTYPE.get(type(v), "float64"), (0.0, 0.0))[i]
                                  for v in (x, y)) for i in (0, 1))
            same = (x == y) or (equal_nan and x != x and y != y) or abs(x - y) <= atol + rtol * abs(y)
            return None if same else f"{path}numbers differ: {x!r} != {y!r}"
        if isinstance(x, str) or isinstance(y, str):
            return None if x == y else f"{path}{x!r} != {y!r}"
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            if set(x) != set(y):
                return f"{path}keys differ: {sorted(map(str, x))} != {sorted(map(str, y))}"
            for key in x:
                problem = self._mismatch(x[key], y[key], atol, rtol, equal_nan, exact_dtype, f"{path}[{key!r}] ")
                if problem:
                    return problem
            return None
        if isinstance(x, Sequence) and isinstance(y, Sequence):
            if len(x) != len(y):
                return f"{path}lengths differ: {len(x)} != {len(y)}"
            for i, (a, b) in enumerate(zip(x, y)):
                problem = self._mismatch(a, b, atol, rtol, equal_nan, exact_dtype, f"{path}[{i}] ")
                if problem:
                    return problem
            return None
        return None if x == y else f"{path}{x!r} != {y!r}"

    def assertExpected(self, string, subname=None):
        """The text equals test/expect/<Class>.<test>[-subname].expect beside the test file."""
        test_file = inspect.getfile(type(self))
        name = f"{type(self).__name__}.{self._testMethodName}" + (f"-{subname}" if subname else "")
        path = os.path.join(os.path.dirname(os.path.abspath(test_file)), "expect", name + ".expect")
        with open(path) as f:
            self.assertEqual(string, f.read())

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(str(actual).strip(), inspect.cleandoc(expect).strip() if "\n" in expect else expect.strip())

    @contextlib.contextmanager
    def assertNotWarn(self, msg=""):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        self.assertEqual(len(caught), 0, f"{msg} warned: {[str(w.message) for w in caught]}")

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):
        pattern = re.compile(regex)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                yield
        if not any(issubclass(w.category, category) and pattern.search(str(w.message)) for w in caught):
            self.fail(f"{category.__name__} matching {regex!r} not raised")


def run_tests():
    unittest.main()


@contextlib.contextmanager
def disable_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def set_warn_always_context(new_val: bool):
    old = torch.is_warn_always_enabled()
    torch.set_warn_always(new_val)
    try:
        yield
    finally:
        torch.set_warn_always(old)


def gradcheck(fn, inputs, **kwargs):
    """torch.autograd.gradcheck with the test suite's defaults: batched gradients checked, fast mode."""
    return torch.autograd.gradcheck(fn, inputs, **{"check_batched_grad": True, "fast_mode": True, **kwargs})


def gradgradcheck(fn, inputs, grad_outputs=None, **kwargs):
    return torch.autograd.gradgradcheck(fn, inputs, grad_outputs,
                                        **{"check_batched_grad": True, "fast_mode": True, **kwargs})


# ---- skips: this is an eager, CPU, non-Windows, non-MPS run ----------------------------------------

def _identity_or_factory(*args, **kwargs):
    """A decorator usable bare (@skipX) or called (@skipX("why")) that changes nothing here."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


skipIfTorchDynamo = xfailIfTorchDynamo = skipIfMPS = skipIfNoLapack = _identity_or_factory


def xfailIfS390X(fn):
    return unittest.expectedFailure(fn) if IS_S390X else fn


def skipIfWindows(fn=None, msg="test doesn't currently work on Windows"):
    decorator = unittest.skipIf(IS_WINDOWS, msg)
    return decorator(fn) if fn is not None else decorator


def slowTest(fn):
    return unittest.skipUnless(TEST_WITH_SLOW, "slow test: set PYTORCH_TEST_WITH_SLOW=1")(fn)


def scoped_load_inline(fn):
    """C++ extensions are out of scope (scope.py): such tests never run."""
    return fn


# ---- parametrisation -----------------------------------------------------------------------------

class subtest:
    def __init__(self, arg_values, name=None, decorators=None):
        self.arg_values, self.name, self.decorators = arg_values, name, decorators or []


class parametrize:
    """@parametrize("a,b", [(1, 2), subtest((3, 4), name="x")]): one test per value, named as torch names it."""

    def __init__(self, arg_str, arg_values, name_fn=None):
        self.arg_names = [s.strip() for s in arg_str.split(",") if s.strip()]
        self.arg_values, self.name_fn = list(arg_values), name_fn

    def __call__(self, fn):
        fn.__dict__.setdefault("_parametrizations", []).insert(0, self)
        return fn

    def _name_part(self, idx, name, value) -> str:
        if isinstance(value, torch.dtype):
            return _dtype_name(value)
        if isinstance(value, (int, float, str)):
            return f"{name}_{str(value).replace('.', '_')}"
        return f"{name}{idx}"

    def cases(self):
        """(name suffix, {arg: value}, decorators) for each value."""
        for idx, values in enumerate(self.arg_values):
            explicit, decorators = None, []
            if isinstance(values, subtest):
                explicit, decorators, values = values.name, values.decorators, values.arg_values
            values = tuple(values) if len(self.arg_names) > 1 else (values,)
            if explicit:
                suffix = explicit
            elif self.name_fn:
                suffix = self.name_fn(*values)
            else:
                suffix = "_".join(self._name_part(idx, a, v) for a, v in zip(self.arg_names, values))
            yield suffix, dict(zip(self.arg_names, values)), decorators


def expand_parametrized(fn):
    """(name suffix, test taking self and the extra keywords bound) for each combination of fn's parametrize."""
    layers = getattr(fn, "_parametrizations", [])
    for combination in itertools.product(*(list(p.cases()) for p in layers)):
        suffix = "_".join(part for part, _, _ in combination if part)
        bound = {k: v for _, kwargs, _ in combination for k, v in kwargs.items()}
        test = functools.partialmethod(fn, **bound) if bound else fn
        for _, _, decorators in combination:
            for decorator in decorators:
                test = decorator(_as_function(test))
        yield suffix, test


def _as_function(test):
    if isinstance(test, functools.partialmethod):
        fn, kwargs = test.func, test.keywords

        @functools.wraps(fn)
        def bound(self, *args):
            return fn(self, *args, **kwargs)
        return bound
    return test


def instantiate_parametrized_tests(cls):
    for name, fn in list(vars(cls).items()):
        if name.startswith("test") and callable(fn) and getattr(fn, "_parametrizations", None):
            delattr(cls, name)
            for suffix, test in expand_parametrized(fn):
                test = _as_function(test)
                test.__name__ = f"{name}_{suffix}" if suffix else name
                test._compat_source = fn
                setattr(cls, test.__name__, test)
    return cls

