"""torch.nn for retrograd: modules (layers, losses, containers), Parameter, init, functional and utils."""

from ..ops.nn_extra import LinearCrossEntropyOptions
from . import common_types, functional, grad, init, parallel, utils
from .modules import *  # noqa: F403 - the layers are the public namespace
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "DataParallel", "LinearCrossEntropyOptions", "Parameter", "UninitializedBuffer",
           "UninitializedParameter", "common_types", "factory_kwargs", "functional", "grad", "init", "parallel",
           "utils", *_modules_all]


def factory_kwargs(kwargs: dict | None) -> dict:
    """The device/dtype/memory_format keywords of `kwargs` merged with its `factory_kwargs` dict (torch's helper for
    modules that forward them to tensor factories); a key given twice or an unexpected one is a TypeError."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in simple_keys & kwargs.keys():
        if key in merged:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        merged[key] = kwargs[key]
    return merged


def __getattr__(name: str) -> object:
    """torch.nn.attention without an import of its own, loaded on first use (the package's Note [lazy
    submodules])."""
    if name == "attention":
        import importlib

        return importlib.import_module(f"{__name__}.attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
