"""The Optimizer base class: parameter groups, per-parameter state, zero_grad, state_dict and hooks.

A subclass declares its defaults and `_update(param, grad, state, group)`, the update of one
parameter written with in-place tensor ops; `step` runs it for every parameter that has a gradient,
group by group, in torch's order, under no_grad, or recorded when the optimizer was made with
`differentiable=True` (its parameters may then be non-leaf tensors); a complex parameter of an optimizer
that says `_complex_as_real` is updated as its real and imaginary parts (Note [complex parameters]). As in
torch, the first optimizer
of a class wraps that class's `step` so that step hooks (global ones from
register_optimizer_step_pre_hook and _post_hook, and each optimizer's own) run around it.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from .. import typename, view_as_complex, view_as_real
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, set_grad_enabled
from ..autograd.graph import HookDict, RemovableHandle

# what an optimizer's `params` may be (torch's alias, which optimizer signatures in libraries import)
ParamsT: TypeAlias = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]

_global_optimizer_pre_hooks: HookDict = HookDict()
_global_optimizer_post_hooks: HookDict = HookDict()
_HOOK_TABLES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                "_optimizer_load_state_dict_post_hooks")


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """hook(optimizer, args, kwargs) runs before every optimizer's step; it may return (new_args, new_kwargs)."""
    return _global_optimizer_pre_hooks.add(hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """hook(optimizer, args, kwargs) runs after every optimizer's step."""
    return _global_optimizer_post_hooks.add(hook)


def _with_step_hooks(step: Callable) -> Callable:
    """A class's step wrapped to run the global and the optimizer's own step hooks around it (torch's order)."""

    @functools.wraps(step)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for pre_hook in itertools.chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
                args, kwargs = result
        out = step(*args, **kwargs)
        for post_hook in itertools.chain(self._optimizer_step_post_hooks.values(),
                                         _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    hooked.hooked = True
    return hooked


def _saved_copy(t: Tensor, group: dict) -> Tensor:
    """`t`, or a clone of it where the step is recorded (differentiable=True), for an op that saves its input when
    an in-place write to `t` follows: the clone keeps the saved value valid, as torch's differentiable steps do."""
    return t.clone() if group.get("differentiable") else t


def _add_hook(hooks: HookDict, hook: Callable, prepend: bool) -> RemovableHandle:
    """Add a hook, first in line when `prepend`."""
    handle = hooks.add(hook)
    if prepend:
        hooks.move_to_end(handle._key, last=False)
    return handle


class _RequiredParameter:
    """Marks a hyper-parameter that every parameter group must give (no default)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


# Note [complex parameters]
# torch's adaptive optimisers (Adam, AdamW, Adamax, NAdam, RAdam, Adagrad, RMSprop, Adadelta, Rprop, ASGD) update a
# complex parameter through view_as_real: parameter, gradient and state are pairs of real numbers, so the second
# moment of 1+2j is (1, 4), not (1+2j)**2, and a sign is taken per part. Their states stay complex tensors (a
# state the update makes at the real view's shape is kept as view_as_complex of it; Rprop's step sizes start at
# lr + lr*1j and Adagrad's sums at init + init*1j, as torch's do). SGD's update is linear: either way gives its
# numbers, and it works on the complex values as torch's does.


class Optimizer:
    """Base class of all optimisers: `Optimizer(params, defaults)`; params are tensors or dicts (groups)."""

    _complex_as_real = False  # Note [complex parameters]

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict) -> None:
        self.defaults = defaults
        for table in _HOOK_TABLES:
            setattr(self, table, HookDict())
        if not getattr(type(self).step, "hooked", False):
            type(self).step = _with_step_hooks(type(self).step)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {params.type()}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyper-parameters (missing ones come from the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        # (name, tensor) pairs, as model.named_parameters() gives, keep their names in group["param_names"], which
        # state_dict saves; torch wants every group and every param named, or none.
        params = list(params)
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {typename(param)}")
            if not (param.is_leaf or param.retains_grad or self.defaults.get("differentiable")):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in param_group["params"]}) != len(param_group["params"]):
            import warnings

            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 f"{'with' if 'param_names' in param_group else 'without'} names to the optimizer")
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing & {id(p) for p in param_group["params"]}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimised parameters (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One optimisation step; `closure` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with set_grad_enabled(bool(self.defaults.get("differentiable"))):  # recorded only when differentiable
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if self._complex_as_real and p.is_complex():
                        self._update_as_real(p, self.state[p], group)
                    else:
                        self._update(p, p.grad, self.state[p], group)
        return loss

    def _update_as_real(self, param: Tensor, state: dict, group: dict) -> None:
        """_update on the real views of a complex parameter, its gradient and its state (Note [complex
        parameters])."""
        real = view_as_real(param)
        parts = {key: view_as_real(value) if isinstance(value, Tensor) and value.is_complex() else value
                 for key, value in state.items()}
        self._update(real, view_as_real(param.grad), parts, group)
        for key, value in parts.items():
            paired = isinstance(value, Tensor) and value.is_floating_point() and value.shape == real.shape
            state[key] = view_as_complex(value) if paired else value

    def _update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        raise NotImplementedError

    # ---- hooks ------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) runs before each step; it may return (new_args, new_kwargs)."""
        return self._optimizer_step_pre_hooks.add(hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) runs after each step."""
        return self._optimizer_step_post_hooks.add(hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) runs before state_dict()."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) runs after state_dict(); a returned dict replaces the state dict."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) runs before load_state_dict(); a returned dict is loaded instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) runs after load_state_dict()."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- saving and restoring -------------------------------------------------------------
    def state_dict(self) -> dict:
        """{'state': {index: per-parameter state}, 'param_groups': [group with params as indices]}."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state saved by state_dict(); tensors are cast to each parameter's dtype (step stays as saved).
        Saved param_names replace the group's; a saved group without names keeps the group's own."""
        state_dict = copy.deepcopy(state_dict)
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_index = {i: p for g, s in zip(self.param_groups, saved_groups) for i, p in zip(s["params"], g["params"])}
        self.state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in by_index:
                param = by_index[key]
                self.state[param] = {k: _cast_state(k, v, param) for k, v in value.items()}
        self.param_groups = [_restored_group(g, s) for g, s in zip(self.param_groups, saved_groups)]
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for table in _HOOK_TABLES:
            self.__dict__.setdefault(table, HookDict())

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):  # each group opens and ends a line: a blank line between two
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _restored_group(group: dict, saved: dict) -> dict:
    """A saved group with the optimizer's own params, and its own param_names when the saved group has none."""
    restored = {**saved, "params": group["params"]}
    if "param_names" in group and "param_names" not in saved:
        restored["param_names"] = group["param_names"]
    return restored


def _cast_state(key: str, value: Any, param: Tensor) -> Any:
    """Per-parameter state follows the parameter's dtype, except the step counter (torch's policy)."""
    if key != "step" and isinstance(value, Tensor) and param.is_floating_point():
        return value.to(param.dtype)
    return value


def _check(condition: bool, message: str) -> None:
    """Raise torch's ValueError for an invalid hyper-parameter."""
    if not condition:
        raise ValueError(message)


def _check_adam_family(lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
    """The hyper-parameter checks Adam, AdamW, Adamax, NAdam and RAdam share, in torch's order and words."""
    _check(lr >= 0.0, f"Invalid learning rate: {lr}")
    _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
    _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")


def _next_step(state: dict) -> float:
    """Increment the per-parameter step counter (a float32 tensor, as torch keeps it) and return it."""
    state["step"].add_(1)
    return state["step"].item()


def _direction(grad: Tensor, param: Tensor, group: dict) -> Tensor:
    """The gradient after `maximize` (negated) and L2 `weight_decay` (plus weight_decay * param)."""
    if group.get("maximize"):
        grad = -grad
    if group.get("weight_decay", 0) != 0 and not group.get("decoupled_weight_decay", False):
        grad = grad.add(param, alpha=group["weight_decay"])
    return grad
