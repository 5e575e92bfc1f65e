"""torch.nn for retrograd: modules (layers, losses, containers), Parameter, init, functional and utils."""

from ..ops.nn_extra import LinearCrossEntropyOptions
from . import functional, init, utils
from .modules import *  # noqa: F403 - the layers are the public namespace
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedParameter

__all__ = ["Buffer", "LinearCrossEntropyOptions", "Parameter", "UninitializedParameter", "functional", "init", "utils",
           *_modules_all]
