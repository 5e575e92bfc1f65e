"""The legacy torch.nn.utils.weight_norm: parameters name_g and name_v, and a forward pre-hook that recomputes
`name` from them before each call (deprecated in torch in favour of parametrizations.weight_norm)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor
from ...ops.nn_extra import _weight_norm, norm_except_dim
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook: module.<name> = v g / ||v|| from module.<name>_g and module.<name>_v."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        # Note [where the legacy weight_norm warns]: torch deprecates WeightNorm.apply itself (typing_extensions'
        # @deprecated), so its warning names apply's caller, weight_norm's line inside the library, not the user's
        # line; one place for every call site means the default filter shows it once per process, as torch does.
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run "
                             "the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split module.<name> into a magnitude <name>_g and a direction <name>_v (legacy form)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Make module.<name> a plain parameter again, holding its current value."""
    return remove_reparametrization(module, name, WeightNorm, "weight_norm")


def remove_reparametrization(module: Module, name: str, kind: type, label: str) -> Module:
    """Take off module's forward pre-hook of class `kind` for `name` (the legacy weight_norm and spectral_norm),
    leaving module.<name> a plain parameter with its current value; torch's ValueError when there is none."""
    return remove_hook_of(module, lambda hook: isinstance(hook, kind) and hook.name == name,
                          f"{label} of '{name}' not found in {module}")


def remove_hook_of(module: Module, is_it: Callable[[Any], bool], missing: str) -> Module:
    """Take off the first forward pre-hook `is_it` accepts, after its own `remove(module)` (a reparametrization
    made permanent); ValueError(`missing`) when there is none."""
    for key, hook in module._forward_pre_hooks.items():
        if is_it(hook):
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(missing)
