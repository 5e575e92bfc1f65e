"""torch.nn for retrograd: modules (layers, losses, containers), Parameter, init, functional and utils."""

from ..ops.nn_extra import LinearCrossEntropyOptions
from . import functional, grad, init, parallel, utils
from .modules import *  # noqa: F403 - the layers are the public namespace
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Buffer", "DataParallel", "LinearCrossEntropyOptions", "Parameter", "UninitializedBuffer",
           "UninitializedParameter", "functional", "grad",
           "init", "parallel", "utils", *_modules_all]


def __getattr__(name: str) -> object:
    """torch.nn.attention without an import of its own, loaded on first use (the package's Note [lazy
    submodules])."""
    if name == "attention":
        import importlib

        return importlib.import_module(f"{__name__}.attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
