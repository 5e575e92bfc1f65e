"""OptimizedModule: what `torch.compile` returns for a module, here the module run eagerly behind torch's wrapper."""

from __future__ import annotations

from typing import Any

from ..nn.modules.module import Module


class OptimizedModule(Module):
    """A module wrapped as torch.compile wraps it: `_orig_mod` is its one child (hence the `_orig_mod.` prefix of
    state_dict keys), calls run its `__call__` (its hooks included), and attributes other than the wrapper's own
    are read from, written to and deleted on the wrapped module; `training` is the wrapped module's."""

    _opt_mod_attributes = frozenset({"_orig_mod", "forward", "__dict__", "_super_module_initialized"})

    def __init__(self, mod: Module) -> None:
        object.__setattr__(self, "_orig_mod", mod)  # attribute routing reads it before Module.__init__ has run
        self._super_module_initialized = False
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # now registered as the child module
        self.forward = mod.__call__

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        if self._super_module_initialized:
            self._orig_mod.training = value

    def __len__(self) -> int:
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)  # type: ignore[arg-type]
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __reduce__(self) -> tuple[type[OptimizedModule], tuple[Module]]:
        return (type(self), (self._orig_mod,))

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        own = self._orig_mod.__dir__()
        return own + [name for name in super().__dir__() if name not in own]
