"""Device-generic test classes instantiated for the CPU, with torch's names (test_x_cpu, test_x_cpu_float64)."""

from __future__ import annotations

import functools
import unittest

from .common_utils import _as_function, _dtype_name, expand_parametrized

DEVICE = "cpu"


def dtypes(*dtype_list):
    def decorator(fn):
        fn._dtypes = dtype_list
        return fn
    return decorator


def dtypesIfCUDA(*dtype_list):  # noqa: N802 - torch's name
    return lambda fn: fn


dtypesIfMPS = dtypesIfCUDA


def onlyCPU(fn):  # noqa: N802
    return fn


def onlyCUDA(fn):  # noqa: N802
    return unittest.skip("only for CUDA")(fn)


def skipMeta(fn):  # noqa: N802
    return fn


def deviceCountAtLeast(num_required_devices):  # noqa: N802
    """The test takes the list of devices; the CPU is one device."""
    def decorator(fn):
        @functools.wraps(fn)
        def with_devices(self, device, *args, **kwargs):
            if num_required_devices > 1:
                raise unittest.SkipTest(f"needs {num_required_devices} devices; the CPU is one")
            return fn(self, [device], *args, **kwargs)
        return with_devices
    return decorator


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None, **kwargs):
    """Replace generic_test_class in scope by <Name>CPU, whose tests take device="cpu" (and each dtype)."""
    del scope[generic_test_class.__name__]
    members = {}
    for name, fn in vars(generic_test_class).items():
        if not (name.startswith("test") and callable(fn)):
            continue
        for suffix, test in expand_parametrized(fn):
            test = _as_function(test)
            for dtype in getattr(fn, "_dtypes", None) or (None,):
                instance_name = "_".join(p for p in (name, suffix, DEVICE, dtype and _dtype_name(dtype)) if p)
                members[instance_name] = _bind_device(test, dtype, instance_name, fn)
    for name, value in vars(generic_test_class).items():
        if not name.startswith("test") and name not in ("__dict__", "__weakref__"):
            members.setdefault(name, value)
    cls = type(generic_test_class.__name__ + DEVICE.upper(), generic_test_class.__bases__, members)
    cls.__module__ = generic_test_class.__module__
    cls.device_type = DEVICE
    scope[cls.__name__] = cls


def _bind_device(test, dtype, name, source):
    @functools.wraps(test)
    def instance(self):
        return test(self, DEVICE, dtype) if dtype is not None else test(self, DEVICE)
    instance.__name__ = name
    instance._compat_source = source
    return instance
