"""torch.nn.utils.prune: zero parts of a module's tensor through a mask, as torch's pruning tutorial does.

Pruning `name` of a module moves the parameter to `name_orig`, keeps the mask as the buffer `name_mask`, and sets
`name` to `name_orig * name_mask` before every forward (the method is the module's forward pre-hook), so the
gradient reaches the kept entries of `name_orig` only. Pruning the same tensor again combines the masks in a
PruningContainer; `remove` makes the pruning permanent. Random methods draw from torch's generator, as torch's do,
and through the package's `rand_like` / `rand` looked up at each call, as torch's call `torch.rand_like`: a program that
wraps or replaces those (tests/programs/_draws.py replaying torch's draws, a test's mock) decides their masks too.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any

import retrograd

from ... import _creation as C
from ..._tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector
from .weight_norm import remove_hook_of


class BasePruningMethod(ABC):
    """A way to choose a mask for a tensor (subclasses define `compute_mask` and `PRUNING_TYPE`); applied, it is the
    pruned module's forward pre-hook that recomputes the pruned tensor. As in torch, neither has a default: a subclass
    without `PRUNING_TYPE` fails when combined with another pruning, and `_tensor_name` is set by `apply`."""

    PRUNING_TYPE: str  # "unstructured", "structured" (whole slices along `dim`) or "global"
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for `t` given the mask it already has (ones when unpruned)."""

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor: the original times its mask."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        return getattr(module, self._tensor_name + "_mask").to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune `module.name` with a new `cls(*args, **kwargs)`, joining a pruning already on that tensor."""
        method = _joined_with_earlier(cls(*args, **kwargs), module, name)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {importance_scores.shape} vs {orig.shape}")
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = C.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            module.register_buffer(name + "_mask", method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """`t` with this method's mask applied, without touching any module."""
        if importance_scores is not None and importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        scores = t if importance_scores is None else importance_scores
        mask = C.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: `name` becomes a parameter again, holding the pruned values."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        orig.data = pruned.data
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _joined_with_earlier(method: BasePruningMethod, module: Module, name: str) -> BasePruningMethod:
    """`method` named for `name`, in a PruningContainer with the pruning already on `name` (its hook removed)."""
    earlier = [(key, hook) for key, hook in module._forward_pre_hooks.items()
               if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(earlier) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    method._tensor_name = name
    if not earlier:
        return method
    key, old = earlier[0]
    del module._forward_pre_hooks[key]
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The prunings of one tensor, in order; the last one's mask is chosen among the entries still kept."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if method is None:
            return
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on what the earlier ones kept: the kept entries (unstructured), the
        kept slices along its `dim` (structured), or everything (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            kept: Any = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                     "defined.")
            dim = method.dim if method.dim >= 0 else t.dim() + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {t.dim()}")
            kept = [slice(None)] * t.dim()
            kept[dim] = default_mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0
            kept = tuple(kept)
        elif method.PRUNING_TYPE == "global":
            kept = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        mask[kept] = method.compute_mask(t[kept], default_mask=default_mask[kept]).to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask stays all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


class _ByAmount(BasePruningMethod):
    """A method that prunes `amount` entries or slices: a count, or a fraction of the candidates."""

    PRUNING_TYPE = "unstructured"  # entries; _Structured's are slices

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def _count(self, candidates: int) -> int:
        count = self.amount if isinstance(self.amount, numbers.Integral) else round(self.amount * candidates)
        if isinstance(self.amount, numbers.Integral) and count > candidates:
            raise ValueError(f"amount={self.amount} should be smaller than the number of parameters to "
                             f"prune={candidates}")
        return count


class RandomUnstructured(_ByAmount):
    """Zero `amount` entries chosen at random."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = self._count(t.nelement())
        mask = default_mask.clone()
        if count:
            mask.view(-1)[retrograd.rand_like(t).view(-1).topk(count).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ByAmount):
    """Zero the `amount` entries of smallest absolute value."""

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        count = self._count(t.nelement())
        mask = default_mask.clone()
        if count:
            mask.view(-1)[t.abs().view(-1).topk(count, largest=False).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(_ByAmount):
    """Prunes whole slices along `dim` (channels): a mask of ones on the slices kept."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if t.dim() <= 1:
            raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                             f"shape {t.shape} with {t.dim()} dims")
        if self.dim >= t.dim():
            raise IndexError(f"Invalid index {self.dim} for tensor of size {t.shape}")
        slices = t.shape[self.dim]
        count = self._count(slices)
        if count == 0:
            return default_mask
        mask = C.zeros_like(t)
        kept = [slice(None)] * t.dim()
        kept[self.dim] = self._kept_slices(t, slices, count)
        mask[tuple(kept)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    def _kept_slices(self, t: Tensor, slices: int, count: int) -> Tensor:
        raise NotImplementedError


class RandomStructured(_Structured):
    """Zero `amount` slices along `dim` chosen at random."""

    def _kept_slices(self, t: Tensor, slices: int, count: int) -> Tensor:
        draws = retrograd.rand(slices)
        return draws > draws.kthvalue(count).values

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Zero the `amount` slices along `dim` of smallest L`n` norm."""

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _ByAmount.__init__(self, amount)
        self.n, self.dim = n, dim  # in torch's order: vars(method) lists amount, n, dim

    def _kept_slices(self, t: Tensor, slices: int, count: int) -> Tensor:
        dim = self.dim % t.dim()
        norms = t.norm(p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        return norms.topk(slices - count, largest=True).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str,  # type: ignore[override]
              dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with the mask already there)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (amount < 0 if isinstance(amount, numbers.Integral) else not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def identity(module: Module, name: str) -> Module:
    """Prune nothing, but set up `name_orig`, `name_mask` and the hook (a mask of ones)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Zero `amount` random entries of `module.name`."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> Module:
    """Zero the `amount` entries of `module.name` of smallest absolute value (of `importance_scores`, if given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Zero `amount` random slices of `module.name` along `dim`."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Zero the `amount` slices of `module.name` along `dim` of smallest L`n` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune `module.name` with `mask`."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune the (module, name) tensors together: `pruning_method(**kwargs)` chooses its entries among all of
    them at once (the smallest weights of the whole network, say), then each gets its share of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    # `parameters` is read three times, as torch reads it: a generator is spent after the first, and the masks'
    # empty cat raises torch's ValueError
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    masks = parameters_to_vector([getattr(module, name + "_mask") if hasattr(module, name + "_mask")
                                  else C.ones_like(getattr(module, name)) for module, name in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, masks)
    start = 0
    for module, name in parameters:
        tensor = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + tensor.numel()].view_as(tensor))
        start += tensor.numel()


def remove(module: Module, name: str) -> Module:
    """Make the pruning of `module.name` permanent and drop its mask and hook."""
    return remove_hook_of(module, lambda hook: isinstance(hook, BasePruningMethod) and hook._tensor_name == name,
                          f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether some tensor of the module or of a module below it is pruned."""
    return any(isinstance(hook, BasePruningMethod)
               for sub in module.modules() for hook in sub._forward_pre_hooks.values())
