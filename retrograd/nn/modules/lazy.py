"""LazyModuleMixin: modules whose parameter shapes come from their first input (torch.nn.modules.lazy).

Until the first forward they hold UninitializedParameters; a forward pre-hook calls the module's
`initialize_parameters(input)`, then the module turns into its `cls_to_become` (LazyConv2d -> Conv2d).
Loading a state dict with real tensors materialises the placeholders to the loaded shapes first.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..parameter import is_lazy


class LazyModuleMixin:
    """Mixed in before a module class: defers parameter shapes to the first forward."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """As Module's, but placeholders are saved as themselves (detaching one would give a 0-element tensor)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        """Materialise each placeholder that the state dict gives a real tensor for, then load as usual."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if param is not None and key in state_dict and is_lazy(param) and not is_lazy(state_dict[key]):
                param.materialize(state_dict[key].shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Give the placeholders their shapes from the first input (each lazy module defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: initialise, check, remove itself and become `cls_to_become`."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
