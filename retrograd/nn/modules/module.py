"""nn.Module: the base class of every layer, holding parameters, buffers, submodules and hooks.

Attributes are sorted on assignment: a Parameter goes to `_parameters`, a Module to `_modules`,
a tensor assigned to a registered buffer name to `_buffers`; `__getattr__` looks them up again.
Everything that walks the tree (named_parameters, state_dict, train, to, apply) goes through
`named_modules`, so the traversal order is torch's (registration order, depth first).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..._tensor import Tensor
from ..._warn import user_stacklevel
from ...autograd import grad_mode
from ...autograd.function import Function
from ...autograd.graph import HookDict, RemovableHandle, add_hook
from ..parameter import Buffer, Parameter, is_lazy

# Note [global module hooks]
# register_module_forward_pre_hook and its kin put a hook in one of these tables; every module's call runs them
# before its own hooks of the same kind, as torch's _call_impl does. A call with no hook anywhere goes straight to
# forward. Backward hooks, global or per module, are either all full or all non-full (register_backward_hook's):
# _global_is_full_backward_hook and Module._is_full_backward_hook are None until the first is registered.
_global_forward_pre_hooks = HookDict()
_global_forward_hooks = HookDict()
_global_forward_hooks_with_kwargs: dict = {}
_global_forward_hooks_always_called: dict = {}
_global_backward_pre_hooks = HookDict()
_global_backward_hooks = HookDict()
_global_is_full_backward_hook: bool | None = None
_hooks_off = threading.local()  # .now: True inside _submodules_as_one_kernel(), in this thread
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"  # a module's get_extra_state() result in its state dict
_MIXED_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks {where}. Please use only "
                         "one of them.")


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """hook(module, args) -> None or new args, run before every module's forward (before its own pre-hooks)."""
    return _global_forward_pre_hooks.add(hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
                                 ) -> RemovableHandle:
    """hook(module, args, output) -> None or a new output, run after every module's forward (before its own
    forward hooks)."""
    handle = _global_forward_hooks.add(hook)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """hook(module, grad_output) -> None or new grad_output, for every module (before its own)."""
    return _global_backward_pre_hooks.add(hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """hook(module, grad_input, grad_output) -> None or new grad_input, for every module (before its own)."""
    return _global_backward_hook(hook, full=True)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """The deprecated global form of Module.register_backward_hook."""
    return _global_backward_hook(hook, full=False)


def _global_backward_hook(hook: Callable, full: bool) -> RemovableHandle:
    """A global backward hook of one kind, full or deprecated: torch refuses to mix the two kinds."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError(_MIXED_BACKWARD_HOOKS.format(where="as a global Module hook"))
    _global_is_full_backward_hook = full
    return _global_backward_hooks.add(hook)


# Note [registration hooks]
# register_module_{buffer,module,parameter}_registration_hook put hook(module, name, value) -> None or a
# replacement value in one of these tables; register_buffer, register_parameter, add_module and the assignments
# that reach them (module.x = ...) run every hook of the kind, in registration order, before storing the value.
_global_buffer_registration_hooks = HookDict()
_global_module_registration_hooks = HookDict()
_global_parameter_registration_hooks = HookDict()


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """hook(module, name, buffer) -> None or a replacement, run whenever any module registers a buffer."""
    return _global_buffer_registration_hooks.add(hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """hook(module, name, submodule) -> None or a replacement, run whenever any module registers a submodule."""
    return _global_module_registration_hooks.add(hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """hook(module, name, param) -> None or a replacement, run whenever any module registers a parameter."""
    return _global_parameter_registration_hooks.add(hook)


def _registered(hooks: HookDict, module: Module, name: str, value: Any) -> Any:
    """value as the registration hooks of one kind leave it (Note [registration hooks])."""
    if not hooks:
        return value
    for hook in list(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


@contextlib.contextmanager
def _submodules_as_one_kernel() -> Iterator[None]:
    """Module calls inside run their forward only, no hook: for a module that computes through its submodules where
    torch runs one fused kernel that calls none of them (so not even a global hook sees them)."""
    before = getattr(_hooks_off, "now", False)
    _hooks_off.now = True
    try:
        yield
    finally:
        _hooks_off.now = before


def _warn_non_full_backward_hook(args: tuple, result: Any, node: Any) -> None:
    """torch's FutureWarnings where a non-full backward hook's node is not the whole module: its grad_input or
    grad_output then miss some gradients."""
    def warn(message: str) -> None:
        warnings.warn(message, FutureWarning, stacklevel=5)

    outputs = (result,) if isinstance(result, Tensor) else result
    if not (isinstance(outputs, tuple) and all(isinstance(r, Tensor) for r in outputs)):
        warn("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of Tensors is "
             "deprecated and will be removed in future versions. This hook will be missing some of the grad_output. "
             "Please use register_full_backward_hook to get the documented behavior.")
    elif not all(isinstance(a, Tensor) for a in args):
        warn("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple of "
             "Tensors is deprecated and will be removed in future versions. This hook will be missing some of the "
             "grad_input. Please use register_full_backward_hook to get the documented behavior.")
    else:
        _warn_if_not_one_node(args, outputs, node, warn)


def _warn_if_not_one_node(args: tuple, outputs: tuple, node: Any, warn: Callable) -> None:
    """The warnings for tensors in and out whose nodes are not the hooked node and its inputs."""
    output_nodes = {r.grad_fn for r in outputs if r.grad_fn is not None}
    if not output_nodes or (len(output_nodes) == 1 and node not in output_nodes):
        warn("Using a non-full backward hook when outputs are nested in python data structure is deprecated and will "
             "be removed in future versions. This hook will be missing some grad_output.")
    elif len(output_nodes) > 1:
        warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is deprecated "
             "and will be removed in future versions. This hook will be missing some grad_output. Please use "
             "register_full_backward_hook to get the documented behavior.")
    elif {a.grad_fn for a in args if a.grad_fn is not None} != {n for n, _ in node.next_functions}:
        warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and "
             "will be removed in future versions. This hook will be missing some grad_input. Please use "
             "register_full_backward_hook to get the documented behavior.")


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict(strict=False) reports; prints as torch does when nothing is wrong."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    """text with every line after the first indented by `spaces`; blank lines stay empty, as torch's."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line if line.strip() else "" for line in lines[1:])


class Module:
    """Base class for all neural network modules; subclasses define `forward`.

    >>> class Net(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    """

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected argument")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_hooks", HookDict())
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})
        setattr_(self, "_forward_pre_hooks", HookDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})
        setattr_(self, "_backward_hooks", HookDict())
        setattr_(self, "_backward_pre_hooks", HookDict())
        setattr_(self, "_is_full_backward_hook", None)  # True or False once a backward hook is registered
        setattr_(self, "_state_dict_pre_hooks", HookDict())
        setattr_(self, "_state_dict_hooks", HookDict())
        setattr_(self, "_load_state_dict_pre_hooks", HookDict())
        setattr_(self, "_load_state_dict_post_hooks", HookDict())

    forward: Callable[..., Any]

    def _forward_unimplemented(self, *input: Any) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _forward_unimplemented

    # ---- registration -----------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but not a parameter (e.g. running_mean)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (listed by parameters(), saved in state_dict)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = _registered(_global_parameter_registration_hooks, self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as an attribute `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_type_name(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _registered(_global_module_registration_hooks, self, name, module)

    register_module = add_module

    def _check_name(self, name: str, kind: str, table: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_type_name(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path `target` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at dotted path `target` (how pruning, quantisation and conv-BN folding code swaps a layer):
        its parent must exist; with `strict`, so must the module it replaces."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ---- attribute routing ------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, "_buffers", "_modules")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, "_parameters", "_buffers")
            d["_modules"][name] = _registered(_global_module_registration_hooks, self, name, value)
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            d["_modules"][name] = _registered(_global_module_registration_hooks, self, name, value)
        elif isinstance(value, Buffer) or ("_buffers" in d and name in d["_buffers"]):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            persistent = name not in d["_non_persistent_buffers_set"]
            self._forget(name, "_parameters", "_modules")
            d.pop(name, None)
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, *tables: str) -> None:
        d = self.__dict__
        d.pop(name, None)
        for table in tables:
            d.get(table, {}).pop(name, None)
        if "_buffers" in tables:
            d.get("_non_persistent_buffers_set", set()).discard(name)

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                del self.__dict__[table][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled module; one pickled by torch keeps its hooks in OrderedDicts, made HookDicts here."""
        Module.__init__(self)  # every table a module needs, for state that lacks some
        self.__dict__.update(state)
        for table in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
            if type(self.__dict__[table]) is not HookDict:
                object.__setattr__(self, table, HookDict(self.__dict__[table]))

    # ---- traversal --------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, Module]]:
        """(name, module) for self and every descendant, depth first in registration order."""
        if memo is None:
            memo = set()
        if self in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool, remove_duplicate: bool
                       ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, each parameter once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter of this module and (recurse=True) its descendants."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # ---- modes and gradients ----------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops, BatchNorm uses batch statistics) here and below."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: train(False)."""
        return self.train(False)

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Module.compile (torch.compile of this module's call, in place): retrograd runs it eagerly, said once."""
        from ...jit import warn_once_eager

        warn_once_eager("torch.nn.Module.compile")

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default, as torch 2 does)."""
        for p in self.parameters():
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

    # ---- conversion -------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Replace each parameter's data, its gradient's data and each buffer by fn of them (of this module's own
        only, without `recurse`)."""
        for module in self.modules() if recurse else (self,):
            for param in module._parameters.values():
                if param is None:
                    continue
                with grad_mode.no_grad():
                    param.data = fn(param)
                    if param.grad is not None:
                        param.grad.data = fn(param.grad)
            for name, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[name] = fn(buf)
        return self

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call fn on every submodule (children first) and on self, e.g. for initialisation."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device and cast the floating-point ones to a dtype, in place; with
        memory_format= (torch.channels_last), lay out the 4-d and 5-d ones (conv weights) in it, as torch does."""
        from ... import _dtype as D
        from ..._tensor import device

        fmt = kwargs.get("memory_format")
        if fmt is not None:  # torch converts the 4-d and 5-d tensors only (a 5-d one refuses channels_last)
            self._apply(lambda t: t.to(memory_format=fmt) if t.dim() in (4, 5) else t)
        dtype, where = kwargs.get("dtype"), None
        for a in (*args, kwargs.get("device"), kwargs.get("tensor")):
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, where = a.dtype, a.device
            elif a is not None:
                where = device(a)
        if where is not None:  # torch's error at the first tensor moved: a module without any moves nothing
            self._apply(lambda t: t.to(where))
        if dtype is None:
            return self
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() or t.is_complex() else t)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Parameters and buffers (and gradients) replaced by uninitialised tensors of their shapes and dtypes on
        `device`: the step after building a model on the meta device, before loading or initialising its values."""
        from ..._creation import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def float(self) -> Module:
        from ... import float32

        return self._apply(lambda t: t.to(float32) if t.is_floating_point() else t)

    def double(self) -> Module:
        from ... import float64

        return self._apply(lambda t: t.to(float64) if t.is_floating_point() else t)

    def half(self) -> Module:
        from ... import float16

        return self._apply(lambda t: t.to(float16) if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Cast the floating parameters and buffers to bfloat16 (needs ml_dtypes: Note [bfloat16])."""
        from ... import bfloat16

        return self._apply(lambda t: t.to(bfloat16) if t.is_floating_point() else t)

    def type(self, dst_type: Any) -> Module:
        return self._apply(lambda t: t.to(dst_type))

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """Parameters and buffers on a CUDA device (CuPy's arrays; torch's error without CUDA)."""
        from ..._tensor import device as device_type

        index = device.index if isinstance(device, device_type) else device
        return self.to(device_type("cuda", 0 if index is None else index))

    def share_memory(self) -> Module:
        """Move every parameter and buffer into shared memory: processes forked later (Hogwild training) write to
        the same weights."""
        return self._apply(lambda t: t.share_memory_())

    # ---- state ------------------------------------------------------------------------------
    def state_dict(self, *args: Any, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
                   ) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached unless keep_vars). As torch's, the dict's
        `_metadata` holds each module's `{'version': _version}` by its dotted name, which load_state_dict hands
        to that module's _load_from_state_dict (how a module converts checkpoints of its older versions)."""
        if args:  # torch's deprecated positional form: (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (*args, *(destination, prefix, keep_vars)[len(args):])
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """This module's own entries (not its children's): parameters, persistent buffers and, when the class
        defines get_extra_state, its result under '<prefix>_extra_state'."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def get_extra_state(self) -> Any:
        """What a subclass saves beside its tensors (any picklable object): define it with set_extra_state, and
        state_dict() holds it as '<prefix>_extra_state'."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what get_extra_state saved; load_state_dict calls it with the '<prefix>_extra_state' entry."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
                        ) -> _IncompatibleKeys:
        """Copy parameters and buffers from `state_dict` (strict: the keys must match exactly).

        As torch's, it walks `_modules` (a module registered under two names loads under each), hands each child
        the entries under its prefix in a dict of their own, and runs a module's post-hooks after its children."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            # strict is always True here, as torch passes it: load_state_dict(strict=False) only reports
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible_keys = _IncompatibleKeys(missing, unexpected)
            for hook in list(module._load_state_dict_post_hooks.values()):
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Run the load pre-hooks, then copy this module's own entries (not its children's) and its extra state,
        in torch's signature: a subclass may rename or add entries first, by the version in `local_metadata`.
        Under `strict`, a key under `prefix` that names neither an entry nor a child is unexpected."""
        for hook in list(self._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items()) if v is not None}
        for name, current in local_state.items():
            key = prefix + name
            if key in state_dict:
                self._load_entry(name, key, current, state_dict[key], local_metadata, error_msgs)
            elif strict:
                missing_keys.append(key)
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if head not in (self._modules if dot else local_state):
                        unexpected_keys.append(key)

    def _load_entry(self, name: str, key: str, current: Tensor, value: Any, local_metadata: dict,
                    error_msgs: list) -> None:
        """Copy (or with assign, set) one parameter or buffer from the state dict's `value`, or say why not."""
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
            return
        lazy = is_lazy(current)
        if not lazy and current.dim() == 0 and value.shape == (1,):  # a 0.3-era checkpoint's scalars were 1-d
            value = value[0]
        if not lazy and value.shape != current.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                              f"the shape in current model is {current.shape}.")
            return
        assign = local_metadata.get("assign_to_params_buffers", False)
        if current.is_meta and not value.is_meta and not assign:
            warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint to a meta parameter in "
                          "the current model, which is a no-op. (Did you mean to pass `assign=True` to assign "
                          "items in the state dictionary to their corresponding key in the module instead of "
                          "copying them in place?)", UserWarning, stacklevel=3)
        try:
            with grad_mode.no_grad():
                if not assign:
                    current.copy_(value)
                    return
                if isinstance(current, Parameter):
                    if isinstance(value, Parameter):
                        value.requires_grad_(current.requires_grad)
                    else:
                        value = Parameter(value, requires_grad=current.requires_grad)
                setattr(self, name, value)
        except Exception as ex:  # noqa: BLE001 - torch reports any failure to copy as a load error
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f"{current.size()} and whose dimensions in the checkpoint are {value.size()}, an "
                              f"exception occurred : {ex.args}.")

    # ---- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks) or getattr(_hooks_off, "now", False):
            return self.forward(*args, **kwargs)
        result = None
        called_always_called_hooks = set()

        def with_hooks() -> Any:
            nonlocal args, kwargs, result
            for key, hook in [*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]:
                if key in self._forward_pre_hooks_with_kwargs:
                    new = hook(self, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {new}.")
                        args, kwargs = new
                else:
                    new = hook(self, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
            full_hooks, non_full_hooks = self._get_backward_hooks()
            pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            backward_hook = None
            if full_hooks or pre_hooks:
                backward_hook = _BackwardHook(self, full_hooks, pre_hooks)
                args = backward_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for key, hook in [*_global_forward_hooks.items(), *self._forward_hooks.items()]:
                if key in self._forward_hooks_always_called or key in _global_forward_hooks_always_called:
                    called_always_called_hooks.add(key)
                if key in self._forward_hooks_with_kwargs or key in _global_forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            if backward_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=3)
                result = backward_hook.setup_output_hook(result)
            if non_full_hooks:
                self._attach_non_full_backward_hooks(non_full_hooks, args, result)
            return result

        try:
            return with_hooks()
        except Exception:
            self._run_always_called_hooks(called_always_called_hooks, args, kwargs, result)
            raise

    def _run_always_called_hooks(self, already_called: set, args: tuple, kwargs: dict, result: Any) -> None:
        """After forward (or a hook) raised: the forward hooks registered with always_call=True that have not run
        yet, global ones first, each given the output so far (None if forward raised); an exception of theirs is
        turned into a warning so that forward's propagates."""
        tables = ((_global_forward_hooks, _global_forward_hooks_always_called, "global module"),
                  (self._forward_hooks, self._forward_hooks_always_called, "module"))
        for hooks, always_called, kind in tables:
            for key, hook in list(hooks.items()):
                if key not in always_called or key in already_called:
                    continue
                try:
                    if hooks is self._forward_hooks and key in self._forward_hooks_with_kwargs:
                        new = hook(self, args, kwargs, result)
                    else:
                        new = hook(self, args, result)
                    if new is not None:
                        result = new
                except Exception as e:
                    warnings.warn(f"{kind} forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {e}", stacklevel=3)

    def _get_backward_hooks(self) -> tuple[list, list]:
        """The full and the non-full (register_backward_hook) backward hooks for a call, global ones first."""
        full: list[Callable] = []
        non_full: list[Callable] = []
        for is_full, hooks in ((_global_is_full_backward_hook, _global_backward_hooks),
                               (self._is_full_backward_hook, self._backward_hooks)):
            if is_full is True:
                full += hooks.values()
            elif is_full is False:
                non_full += hooks.values()
        return full, non_full

    def _attach_non_full_backward_hooks(self, hooks: list, args: tuple, result: Any) -> None:
        """register_backward_hook's hooks go on the node of the output's first tensor, as hooks of that node
        (so their grad_input is that node's input gradients, whatever the module did before it)."""
        first = result
        while not isinstance(first, Tensor):
            first = next(v for v in first.values() if isinstance(v, Tensor)) if isinstance(first, dict) else first[0]
        node = first.grad_fn
        if node is None:
            return
        for hook in hooks:
            node.register_hook(functools.partial(hook, self))
        _warn_non_full_backward_hook(args, result, node)

    _call_impl = __call__

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
                                  ) -> RemovableHandle:
        """hook(module, args) -> None or new args, run before forward."""
        handle = _add_hook(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle._key] = True
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) -> None or a new output, run after forward (always_call: also when forward
        raises, with the output so far)."""
        handle = _add_hook(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle._key] = True
        if always_call:
            self._forward_hooks_always_called[handle._key] = True
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, prefix, keep_vars) runs before state_dict() saves this module."""
        return self._state_dict_pre_hooks.add(hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata) runs after state_dict() saved this module and its
        children; it may change the state dict in place."""
        return self._state_dict_hooks.add(_in_place_only(hook))

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """The private form: hook(module, state_dict, prefix, local_metadata) may return a new state dict."""
        return self._state_dict_hooks.add(hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs) runs
        before load_state_dict() loads this module's entries; it may rewrite the state dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """The private form: without with_module the hook is not given the module."""
        return self._load_state_dict_pre_hooks.add(functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(module, incompatible_keys) runs after load_state_dict(); it may edit the missing and unexpected
        keys in place (before strict loading raises on them)."""
        return self._load_state_dict_post_hooks.add(hook)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None or new grad_input, once the input gradients are known."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS.format(where="on a single Module"))
        object.__setattr__(self, "_is_full_backward_hook", True)
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The deprecated form of register_full_backward_hook: hook(module, grad_input, grad_output) runs as a hook
        of the node that made the output, so grad_input is that node's input gradients."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(_MIXED_BACKWARD_HOOKS.format(where="on a single Module"))
        object.__setattr__(self, "_is_full_backward_hook", False)
        return _add_hook(self._backward_hooks, hook, False)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None or new grad_output, before the module's gradients are computed."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    # ---- printing ---------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text between the parentheses of this module's repr (its configuration)."""
        return ""

    def __repr__(self) -> str:
        """Name(extra_repr) on one line, or the extra_repr's lines and '(name): child' per child, one a line."""
        extra_repr = self.extra_repr()
        extra_lines = extra_repr.split("\n") if extra_repr else []
        child_lines = [f"({name}): {_addindent(repr(module), 2)}" for name, module in self._modules.items()]
        return _module_repr(self._get_name(), extra_lines, child_lines)


def _module_repr(name: str, extra_lines: list[str], child_lines: list[str]) -> str:
    """torch's layout of a module's repr: one line for a lone extra_repr line, else one indented line each."""
    lines = extra_lines + child_lines
    if not lines:
        return name + "()"
    if len(extra_lines) == 1 and not child_lines:
        return f"{name}({extra_lines[0]})"
    return name + "(\n  " + "\n  ".join(lines) + "\n)"


def _in_place_only(hook: Callable) -> Callable:
    """A public state_dict post hook, refused if it returns a value (torch's rule)."""

    def call(module: Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
        if hook(module, state_dict, prefix, local_metadata) is not None:
            raise RuntimeError("state_dict post-hook must return None")

    return call


def _type_name(value: Any) -> str:
    if isinstance(value, Tensor):
        return value.type()
    return type(value).__name__


def _add_hook(hooks: dict, fn: Callable, prepend: bool) -> RemovableHandle:
    """Add fn to a module's table of hooks, first if `prepend`; the table may be a plain OrderedDict that old code
    assigned to reset a module's hooks (`module._forward_hooks = OrderedDict()`), as torch allows."""
    handle = add_hook(hooks, fn)
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks.update([items[-1], *items[:-1]])
    return handle


# --------------------------------------------------------------------------------------------
# Full backward hooks (torch's BackwardHook): identity nodes around the module's inputs and
# outputs catch the gradients flowing through them.
# --------------------------------------------------------------------------------------------

class BackwardHookFunction(Function):
    """Identity on tensors; its node (BackwardHookFunctionBackward) is where module hooks attach."""

    @staticmethod
    def forward(ctx: Any, *args: Tensor) -> tuple:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        return grads


class _BackwardHook:
    """Calls a module's full backward (pre-)hooks with the gradients of its outputs and inputs."""

    def __init__(self, module: Module, full_hooks: list, pre_hooks: list) -> None:
        self.module = module
        self.full_hooks, self.pre_hooks = full_hooks, pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list | None = None
        self.output_index: list | None = None

    @staticmethod
    def _pack(indices: list, values: tuple, size: int) -> tuple:
        res = [None] * size
        for i, v in zip(indices, values):
            res[i] = v
        return tuple(res)

    @staticmethod
    def _wrap_tensors(args: tuple, on_node: Callable) -> tuple[tuple, list | None]:
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (any(args[i].requires_grad for i in index) and grad_mode.is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(*[args[i] for i in index])
        on_node(next(t.grad_fn for t in wrapped if t.grad_fn is not None))
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        def input_hook(grad_input: tuple, _: tuple) -> tuple | None:
            if self.grad_outputs is None:
                return None
            res = self._pack(self.input_index, grad_input, self.n_inputs)
            for hook in self.full_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(out)}, "
                                       f"but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_index)

        res, self.input_index = self._wrap_tensors(args, lambda node: node.register_hook(input_hook))
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, output: Any) -> Any:
        def output_hook(_: tuple, grad_output: tuple) -> tuple | None:
            self.grad_outputs = self._pack(self.output_index, grad_output, self.n_outputs)
            for hook in self.pre_hooks:
                new = hook(self.module, self.grad_outputs)
                if new is None:
                    continue
                if len(new) != len(self.grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                       f"but expected {len(self.grad_outputs)}")
                self.grad_outputs = tuple(new)
            grad_outputs = self.grad_outputs
            if self.input_index is None:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                              "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=user_stacklevel())
                grad_inputs = (None,) * self.n_inputs
                for hook in self.full_hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                           "return None or None for all gradients.")
                self.grad_outputs = None
            return tuple(grad_outputs[i] for i in self.output_index)

        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        res, self.output_index = self._wrap_tensors(outputs, lambda node: node.register_hook(output_hook))
        self.n_outputs = len(outputs)
        return res[0] if single else res


def bind_settings(owner: str, settings: tuple[tuple[str, Any], ...], args: tuple, kwargs: dict,
                  required: int = 0) -> dict:
    """Bind constructor arguments to `settings` ((name, default) in torch's positional order), with
    Python's TypeErrors; the first `required` settings have no default."""
    names = [n for n, _ in settings]
    if len(args) > len(names):
        raise TypeError(f"{owner}.__init__() takes {len(names) + 1} positional arguments but {len(args) + 1} were "
                        "given")
    values = dict(settings)
    values.update(zip(names, args))
    for key, value in kwargs.items():
        if key not in values:
            raise TypeError(f"{owner}.__init__() got an unexpected keyword argument '{key}'")
        if names.index(key) < len(args):
            raise TypeError(f"{owner}.__init__() got multiple values for argument '{key}'")
        values[key] = value
    missing = [n for n in names[:required] if n not in kwargs and names.index(n) >= len(args)]
    if missing:
        raise TypeError(f"{owner}.__init__() missing {len(missing)} required positional argument(s): "
                        + ", ".join(repr(m) for m in missing))
    return values


__all__ = [  # the family's classes, which torch.nn exports; the register_module_* functions stay here, as torch's
    "Module",
]
