"""The op table, by family, and the Tensor methods and operators that call it.

Importing this package defines every row and attaches the methods, the in-place protocol
(inplace.py) included, so `retrograd._tensor` itself stays free of op code and never imports it;
each row compiles its formulas on first use (Note [compiled on first use] in registry.py).
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import math
import types
from collections.abc import Sequence as _Sequence  # not a public name of the op table
from typing import Any

import numpy as np_

from .. import _creation, _memory_format, _warn
from .. import _dtype as D
from .._creation import _shape
from .._legacy import TYPES as _TYPES
from .._legacy import legacy_new as _legacy_new
from .._legacy import tensortype as _tensortype
from .._tensor import ACCELERATOR_MISSING as _ACCELERATOR_MISSING
from .._tensor import Tensor
from .._tensor import device as _device
from .._tensor import placement as _placement
from .._tensor import track_views as _track_views
from ..autograd.forward_ad import transforms as _transforms
from ..autograd.grad_mode import _state as _grad_state
from . import arrays as _arrays
from .registry import OPS, Op, apply, defop, finalize
from .registry import operand as _operand

FAMILIES = ("pointwise", "activation", "complex", "reduction", "selection", "shape", "indexing", "linalg", "nn",
            "nn_extra", "random", "fft", "special", "numeric", "statistics")
_modules = []
for _family in FAMILIES:
    try:
        _modules.append(importlib.import_module(f"{__name__}.{_family}"))
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
for _module in _modules:
    for _name in getattr(_module, "__all__", ()):
        globals()[_name] = getattr(_module, _name)
linalg, pointwise, reduction, shape = (importlib.import_module(f"{__name__}.{m}")
                                     for m in ("linalg", "pointwise", "reduction", "shape"))
from . import inplace  # noqa: E402
from .aten import aten  # noqa: E402 - torch.ops.aten
from .indexing import getitem, setitem  # noqa: E402

multiply = mul
negative = neg
absolute = abs
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def square(input: Tensor) -> Tensor:
    """input * input, as torch.square (a pow by 2: PowBackward0)."""
    return pow(input, 2)


def to(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Tensor.to(dtype) / to(device) / to(other), with memory_format=: a copy in the graph (ToCopyBackward0)
    if the device, the dtype or the layout changes."""
    dtype = kwargs.get("dtype")
    where = kwargs.get("device")
    copy = kwargs.get("copy", False)
    layout = kwargs.get("memory_format")
    if layout is _memory_format.preserve_format:
        layout = None
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, where = a.dtype, a.device
        elif isinstance(a, (str, _device)):
            where = a
    if where is not None:
        moved = shape.to_device(input, _placement(where))
        if moved is not input:
            return moved if dtype is None or dtype is moved.dtype else shape.cast(moved, dtype, layout)
    # torch's to_will_alias: a copy unless the layout read off the strides is the one asked for (so a (2, 6, 1, 1)
    # row-major tensor is copied to channels_last strides, though either layout describes it)
    if layout is not None and hasattr(input._data, "strides") and _memory_format.suggest_memory_format(input._data) \
            is not layout:
        return shape.cast(input, dtype or input.dtype, layout)
    if dtype is None or dtype is input.dtype:
        return clone(input) if copy else input
    return shape.cast(input, dtype, layout)


def _cuda(input: Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Tensor:
    """Tensor.cuda(): the tensor on a CUDA device (CuPy's arrays; Note [choosing a namespace])."""
    index = device.index if isinstance(device, _device) else device
    return to(input, _device("cuda", 0 if index is None else index))


def type_as(input: Tensor, other: Tensor) -> Tensor:
    """input converted to other's dtype."""
    return to(input, other.dtype)


def _new_like(factory: str) -> Any:
    """Tensor.new_<factory>: the factory with this tensor's dtype and device unless given, and its layout and
    pin_memory options."""

    def method(self: Tensor, *args: Any, dtype: D.dtype | None = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None, pin_memory: bool = False, **named: Any) -> Tensor:
        where = device if device is not None or type(self._data) is np_.ndarray else self.device
        return getattr(_creation, factory)(*args, dtype=dtype or self.dtype, device=where, requires_grad=requires_grad,
                                           pin_memory=pin_memory, **named)  # size=, fill_value=: torch's names

    method.__name__ = f"new_{factory}"
    return method


def _cast(dtype: D.dtype) -> Any:
    def cast(self: Tensor, memory_format: Any = None) -> Tensor:
        return to(self, dtype)

    cast.__name__ = dtype.name
    return cast


def _type(self: Tensor, dtype: Any = None, **kwargs: Any) -> Any:
    """The legacy type name, or a cast to a dtype, a legacy type or a legacy type's name."""
    if dtype is None:
        return D.tensor_type_name(self.dtype)
    if isinstance(dtype, str):
        dtype = _TYPES[dtype[len("torch."):]]
    return to(self, dtype.dtype if isinstance(dtype, _tensortype) else dtype)


def _new(self: Tensor, *args: Any) -> Tensor:
    """torch's legacy Tensor.new: a tensor of self's dtype from sizes, data or a tensor (_legacy.legacy_new)."""
    return _legacy_new(self.dtype, args)


# ============================================================================================
# Tensor methods and operators
# ============================================================================================

_METHODS: dict = {}
for _module in _modules:
    for _name in getattr(_module, "METHODS", ()):
        _METHODS[_name] = getattr(_module, _name)
# Note [removed linear algebra]: the package binds the functions (outside __all__, as torch's); Tensor.matrix_rank
# is gone entirely
_METHODS.update((_name, _fn) for _name, _fn in linalg.REMOVED.items() if _name != "matrix_rank")
_METHODS.update(
    abs=abs, absolute=abs, add=add, all=all, amax=amax, amin=amin, any=any, argmax=argmax, argmin=argmin,
    bmm=bmm, broadcast_to=broadcast_to, chunk=chunk, clamp=clamp, clamp_max=clamp_max, clamp_min=clamp_min,
    clip=clip, clone=clone, conj=conj, contiguous=contiguous, cos=cos, div=div, divide=div, dot=dot, eq=eq,
    exp=exp, expand=expand, expand_as=expand_as, flatten=flatten, gather=gather, ge=ge, ger=ger, gt=gt,
    index_select=index_select, isfinite=isfinite, isinf=isinf, isnan=isnan, le=le, log=log,
    log_softmax=log_softmax, logical_and=logical_and, logical_not=logical_not, logical_or=logical_or,
    logical_xor=logical_xor, lt=lt, masked_fill=masked_fill, masked_select=masked_select, matmul=matmul,
    max=max, maximum=maximum, mean=mean, min=min, minimum=minimum, mm=mm, movedim=movedim, moveaxis=moveaxis,
    mul=mul, multiply=mul, mv=mv, narrow=narrow, ne=ne, neg=neg, negative=neg, nonzero=nonzero, norm=norm,
    outer=outer, permute=shape.PERMUTE_METHOD, pow=pow, reciprocal=reciprocal, relu=relu,
    reshape=shape.RESHAPE_METHOD, flip=shape.FLIP_METHOD, tile=shape.TILE_METHOD, rsub=rsub,
    scatter=scatter, scatter_add=scatter_add, select=select, sgn=sgn, sigmoid=sigmoid, sign=sign, sin=sin,
    softmax=softmax, sqrt=sqrt, square=square, squeeze=squeeze, sub=sub, subtract=sub, sum=sum,
    swapaxes=swapaxes, swapdims=swapdims, t=t, take_along_dim=take_along_dim, tanh=tanh, to=to,
    transpose=transpose, true_divide=div, type_as=type_as, unbind=unbind, unflatten=unflatten,
    unsqueeze=unsqueeze, view=view, where=lambda self, condition, other: where(condition, self, other),
    float=_cast(D.float32), double=_cast(D.float64), half=_cast(D.float16), bfloat16=_cast(D.bfloat16),
    chalf=_cast(D.complex32), long=_cast(D.int64), int=_cast(D.int32), short=_cast(D.int16), bool=_cast(D.bool_),
    byte=_cast(D.uint8),
    char=_cast(D.int8), cfloat=_cast(D.complex64), cdouble=_cast(D.complex128), type=_type, new=_new,
    narrow_slice=shape.narrow_slice,
    view_as=shape.view_as,
    reshape_as=lambda self, other: reshape(self, other.shape),
    cpu=lambda self, *a, **k: to(self, "cpu"), cuda=_cuda,
    pin_memory=lambda self, device=None: _pin_memory(self),
    is_pinned=lambda self, device=None: False,
    new_tensor=_new_like("tensor"), new_zeros=_new_like("zeros"), new_ones=_new_like("ones"),
    new_full=_new_like("full"), new_empty=_new_like("empty"), new_empty_strided=_new_like("empty_strided"),
)


def _adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view; torch's mH)."""
    if self.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return conj(transpose(self, -2, -1))


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    """self ** exponent in place, for a self of the double dtype float_power computes in (torch's refusal else)."""
    complex_exponent = exponent.is_complex() if isinstance(exponent, Tensor) else type(exponent) is builtins.complex
    wanted = D.complex128 if self.is_complex() or complex_exponent else D.float64
    if self.dtype is not wanted:
        raise RuntimeError(f"the base given to float_power_ has dtype {D.scalar_type_name(self.dtype)} but the "
                           f"operation's result requires dtype {D.scalar_type_name(wanted)}")
    return self.pow_(to(exponent, wanted) if isinstance(exponent, Tensor) else exponent)


def _fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write fill_value on the main diagonal (elements [i, i, ..., i]), in place through a diagonal view (CopySlices);
    with wrap, a tall matrix's diagonal starts again every width + 1 rows, as torch's does."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    diagonal_view = self
    while diagonal_view.ndim > 1:
        diagonal_view = diagonal_view.diagonal(0, 0, 1)
    diagonal_view.fill_(fill_value)
    height, width = self.shape[0], self.shape[1]
    if wrap and self.ndim == 2 and height > width + 1:
        _fill_diagonal_(self[width + 1:], fill_value, wrap=True)
    return self


def _as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of self (AliasBackward0 where it records) as an instance of cls, made without calling cls."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = apply(shape.alias_op, (self,))
    out = object.__new__(cls)
    for slot in ("_data", "_requires_grad", "grad_fn", "_output_nr", "_grad", "_vc", "_base", "_extra"):
        setattr(out, slot, getattr(alias, slot))
    if out._base is not None and type(out._vc) is list:  # in-place writes to the base reach it (shape.py)
        _track_views(out._vc, (out,))
    return out


def _split(self: Tensor, split_size: int | _Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Tensor.split: torch.split as a method, whose size parameter torch/_tensor.py names `split_size`
    (mamba-minimal writes `x_and_res.split(split_size=[d, d], dim=-1)`), not `split_size_or_sections`."""
    return split(self, split_size, dim)


_split.__name__, _split.__qualname__ = "split", "Tensor.split"  # a wrong keyword is refused in torch's words


_METHODS.update(adjoint=_adjoint, argwhere=argwhere, split=_split, float_power=float_power,
                float_power_=_float_power_, fill_diagonal_=_fill_diagonal_, as_subclass=_as_subclass)


def _pin_memory(tensor: Tensor) -> Tensor:
    """Tensor.pin_memory(): pinned memory is an accelerator's, and torch refuses it where none is found."""
    raise RuntimeError(_ACCELERATOR_MISSING)


_UFUNC_INPLACE = {"add": "add", "sub": "subtract", "subtract": "subtract", "mul": "multiply",
                  "multiply": "multiply", "div": "true_divide", "divide": "true_divide", "true_divide": "true_divide"}


_UNCHECKED_MEMORY = {"masked_fill_"}  # torch writes these into shared memory (expanded tensors) too


# Note [unrecorded in-place arithmetic]
# add_, sub_, mul_ and div_ that autograd need not record (an optimizer's step under no_grad, tensors
# outside any graph) write straight into self's memory with NumPy's out=: no temporary, no node. Every
# optimizer step makes several such calls per parameter, so this path runs before the general one and
# decides from a few attribute reads whether it applies; where it applies none of check_inplace's
# refusals can (no recording leaf, no saved-tensor hooks, a view's refusals checked first), and
# anything it does not handle (memory shared with the other operand, zero strides, other namespaces,
# dtypes that differ) takes the general path, whose checks raise torch's errors or whose out-of-place
# result is the same.


def _inplace(fn: Any, name: str) -> Any:
    """The in-place twin of an op: compute out of place, then write into self (Tensor._become), or
    for arithmetic that autograd need not record, write directly (Note [unrecorded in-place arithmetic])."""
    ufunc = _UFUNC_INPLACE.get(name[:-1])
    memory = name not in _UNCHECKED_MEMORY

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if ufunc is not None and len(args) == 1:
            if not _transforms.active:
                if _direct_inplace(self, ufunc, args, kwargs):
                    return self
            elif _transforms.profiler is not None and not _transforms.changes_ops and _transforms.profiler.run_write(
                    name, (self, *args), _direct_inplace, self, ufunc, args, kwargs):
                return self  # the profiler only watches: the same write, inside its event
        self._check_inplace((*args, *kwargs.values()), memory)
        return self._become(fn(self, *args, **kwargs))

    method.__name__ = name
    method.__doc__ = f"In-place version of {fn.__name__ if hasattr(fn, '__name__') else name[:-1]}."
    return method


def _direct_inplace(self: Tensor, ufunc: str, args: tuple, kwargs: dict) -> bool:
    """Do `self <op>= other` in place with NumPy when nothing needs recording (no transform but a profiler
    is on, and `args` is the one operand); False otherwise, and then the general path runs (Note [unrecorded
    in-place arithmetic])."""
    alpha = 1
    if kwargs:
        if len(kwargs) > 1 or "alpha" not in kwargs:
            return False
        alpha = kwargs["alpha"]
        if type(alpha) is not int and type(alpha) is not float:
            alpha = D.number(alpha)  # an optimiser's np.float64 learning rate (Note [operands])
        if alpha != 1 and ufunc != "add" and ufunc != "subtract":
            return False
    other = args[0]
    data = self._data
    if type(data) is not np_.ndarray:  # NumPy's in-place ufuncs only
        return False
    flags = data.flags
    if not flags.writeable:
        return False
    if self._base is not None:
        shape.check_inplace_view(self)  # its refusals come first on the general path too
    recording = _grad_state.enabled
    if isinstance(other, Tensor):
        value = other._data
        if value.dtype != data.dtype or other is self or recording and (other._requires_grad or self._requires_grad):
            return False
        if ufunc == "true_divide" and data.dtype.kind not in "fc":
            return False
        if data.size and value.size and np_.may_share_memory(data, value):  # the general path's checks decide
            return False
    elif type(other) in (int, float) and data.dtype.kind in "fc" and not (recording and self._requires_grad):
        value = other
    else:
        return False
    contiguous = flags.c_contiguous
    if not contiguous and 0 in data.strides:  # elements that share memory: refused on the general path
        return False
    if alpha != 1:
        if contiguous and type(value) is np_.ndarray and value.shape == data.shape and value.flags.c_contiguous:
            inplace.scaled_add(data, value, -alpha if ufunc == "subtract" else alpha)
            inplace.mark_written(self)
            return True
        value = value * alpha  # one temporary, the size of `other`
    try:
        _UFUNCS[ufunc](data, value, out=data)
    except (ValueError, TypeError):  # shapes that do not broadcast into self, or complex32 (no NumPy loop):
        return False  # the general path raises torch's error or computes as torch does
    inplace.mark_written(self)
    return True


_UFUNCS = {name: getattr(np_, name) for name in set(_UFUNC_INPLACE.values())}


_INPLACE = ["abs", "absolute", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "logical_and",
            "logical_not", "logical_or", "logical_xor", "add", "clamp", "clamp_min", "clamp_max", "clip", "cos",
            "div", "exp", "log", "masked_fill", "mul", "neg", "pow", "reciprocal", "relu", "sigmoid", "sin", "sqrt",
            "sub", "tanh", "scatter", "scatter_add", "sgn", "sign", "square", "true_divide", "divide", "multiply",
            "subtract", "negative"]
for _module in _modules:
    _INPLACE += [n for n in getattr(_module, "INPLACE", ()) if n not in _INPLACE]


def _copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Write src (broadcast, cast) into self, keeping src's history (CopyBackwards in torch)."""
    src_t = src if isinstance(src, Tensor) else _creation.tensor(src)
    self._check_inplace((src_t,))
    value = src_t.expand(self.shape) if src_t._data.shape != self._data.shape else src_t
    if value.dtype is not self.dtype:
        value = to(value, self.dtype)
    if value._requires_grad or self._requires_grad or _transforms.levels or _transforms.vmap:  # graph, tangent, batch
        return self._become(apply(_COPY, (self, value)))
    self._data[...] = value._data
    self._bump_version()
    return self



# Note [set and resize]
# Both change which memory a tensor holds rather than the values in it: set_(source) makes self hold
# source's memory (shared, as torch's storages are), resize_ gives it a new shape, keeping the first
# elements of its memory (a view of it when it shrinks). Neither has a derivative: resize_ refuses a
# tensor that requires grad, set_ under grad mode records torch's NotImplemented node. Both bump the
# version, and both drop self's AccumulateGrad, as torch resets the grad accumulator after them:
# a graph recorded before uses the old one, so differentiating with respect to self then finds it
# "not used in the graph".


@defop("set_", node="NotImplemented", inputs=("self", "source"), self="derivative_not_implemented('set_')",
       source="derivative_not_implemented('set_')")
def _SET(xp, x, source):  # noqa: N802
    return source


def _set_(self: Tensor, source: Tensor | None = None) -> Tensor:
    """Make self hold source's memory (shape, strides and all), or nothing (Note [set and resize])."""
    self._check_inplace((), memory=False)
    if source is not None and source.dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {D.CPP_TYPE_NAMES[source.dtype.name]} to a tensor of type "
                           f"{D.CPP_TYPE_NAMES[self.dtype.name]}")
    new = np_.zeros(0, self._data.dtype) if source is None else source._data
    recorded = apply(_SET, (self, source)) if source is not None else None
    self._data = new
    _memory_changed(self)
    if recorded is not None and recorded.grad_fn is not None:
        self.grad_fn, self._output_nr, self._requires_grad = recorded.grad_fn, 0, True
    return self


def _resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """A new shape over self's memory, its elements read in memory order from the first (torch's storage
    order); more elements than self has get new memory (the extra ones zero). NumPy arrays own no storage to
    grow in place, so a view, or a tensor whose elements leave gaps in memory, is refused (Note [set and resize])."""
    if self._requires_grad and not _grad_state.inference:  # inference mode skips autograd's check, as torch's
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape(sizes)
    data = self._data
    if shape == data.shape:
        return self
    count, flat = math.prod(shape), data.ravel(order="K")
    if not np_.shares_memory(flat, data) and data.size > 1 or count > data.size and self._base is not None:
        raise RuntimeError("retrograd resizes only tensors whose elements fill their memory, and grows no view: "
                           "NumPy arrays own no storage to resize in place")
    if count > data.size:
        grown = np_.zeros(count, dtype=data.dtype)
        grown[:data.size] = flat
        flat = grown
    self._data = flat[:count].reshape(shape)
    _memory_changed(self)
    return self


def _resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    return _resize_(self, other.shape)


def _memory_changed(tensor: Tensor) -> None:
    tensor._bump_version()
    if tensor._extra is not None:
        tensor._extra.pop("acc", None)
        tensor._extra.pop("storage", None)  # the storage geometry views use (shape.py)


@defop("copy_", node="CopyBackwards", inputs=("self", "src"), self="zeros_like(grad)", src="grad",
       jvp="src_t.clone()")  # a tangent of self's own, never src's (torch: self_t.copy_(src_t))
def _COPY(xp, dst, src):  # noqa: N802
    return _arrays.copy(xp, src)


# Note [NumPy's keyword names]
# torch's argument parser takes NumPy's name for two parameters wherever a function or method it parses has them:
# `axis` for `dim` and `keepdims` for `keepdim` (makemore writes `counts.sum(1, keepdims=True)`). The ops torch writes
# in Python (torch/functional.py, torch/_tensor.py) and torch.nn.functional take only their own names, and so do
# these here. A wrapper renames the two keywords; a call without them goes straight through.
_NUMPY_NAMES = {"dim": "axis", "keepdim": "keepdims"}
_PYTHON_IN_TORCH = frozenset({"norm", "split", "unflatten", "unique", "unique_consecutive", "narrow_slice"})


def _accepting_numpy_names(fn: Any, name: str) -> Any:
    """`fn` also taking `axis` for its `dim` and `keepdims` for its `keepdim` (Note [NumPy's keyword names])."""
    if name in _PYTHON_IN_TORCH or isinstance(fn, Op):
        return fn
    parameters = _parameter_names(fn)
    aliases = {numpy: ours for ours, numpy in _NUMPY_NAMES.items() if ours in parameters}
    if not aliases:
        return fn
    code = None if hasattr(fn, "__signature__") else getattr(inspect.unwrap(fn), "__code__", None)
    positional = parameters[:code.co_argcount] if code is not None else ()  # what positional arguments fill

    @functools.wraps(fn)
    def accepting(*args: Any, **kwargs: Any) -> Any:
        if "axis" in kwargs or "keepdims" in kwargs:
            kwargs = _renamed(kwargs, aliases, name, positional[:len(args)])
        return fn(*args, **kwargs)
    return accepting


def _parameter_names(fn: Any) -> tuple[str, ...]:
    """The names `fn` takes, as inspect.signature finds them (a `__signature__` first, then the function under its
    wrappers), read from the code object where there is one: inspect.signature of the 600-some functions here took
    a fifth of retrograd's own import."""
    signature = getattr(fn, "__signature__", None)
    code = getattr(inspect.unwrap(fn), "__code__", None) if signature is None else None
    if code is not None:
        return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def _renamed(kwargs: dict, aliases: dict, name: str, given: tuple = ()) -> dict:
    """kwargs with NumPy's names replaced by ours; one given under both names, or by NumPy's beside a positional
    argument for ours (the parameters `given`), is refused in torch's words."""
    renamed = {}
    for key, value in kwargs.items():
        ours = aliases.get(key, key)
        if ours in renamed or ours != key and (ours in kwargs or ours in given):
            raise TypeError(f"{name}() got an unexpected keyword argument '{_NUMPY_NAMES[ours]}'")
        renamed[ours] = value
    return renamed


_WRAPPED: dict = {}  # one wrapper per function, shared by torch.<name> and Tensor.<name>
for _space in (_METHODS, globals()):
    for _name, _fn in list(_space.items()):
        if callable(_fn) and not _name.startswith("_") and not isinstance(_fn, type):
            _space[_name] = _WRAPPED.setdefault((id(_fn), _name), _accepting_numpy_names(_fn, _name))


for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name in _INPLACE:
    setattr(Tensor, _name + "_", _inplace(_METHODS[_name], _name + "_"))


# Note [deprecated scale-first overloads]
# torch still takes the signatures that gave the scale first: add(Number alpha, Tensor other) and sub's,
# addcmul(Number value, Tensor tensor1, Tensor tensor2) and addcdiv's, as methods, in place and as functions (the
# input first). Old optimizer code runs on them (`p.data.add_(-lr, d_p)`, `exp_avg_sq.addcmul_(1 - beta2, g, g)`).
# torch's argument parser warns when it meets one, once per process for all of them, naming the overload met.
_SCALE_FIRST = {"add": ("alpha", ("other",)), "sub": ("alpha", ("other",)),
                "addcmul": ("value", ("tensor1", "tensor2")), "addcdiv": ("value", ("tensor1", "tensor2"))}


def _scale_first(fn: Any, name: str, scale: str, tensors: tuple, method: bool) -> Any:
    """`fn` also taking torch's deprecated overload with the scale first (Note [deprecated scale-first overloads])."""
    operands = ", ".join(f"Tensor {t}" for t in tensors)
    head, tail = ("", "") if method else ("Tensor input, ", ", Tensor out = None")
    star = ", *" if tail else ""
    message = (f"This overload of {name} is deprecated:\n\t{name}({head}Number {scale}, {operands}{star}{tail})"
               f"\nConsider using one of the following signatures instead:\n\t{name}({head}{operands}, *, "
               f"Number {scale} = 1{tail}) (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/"
               "python_arg_parser.cpp:1841.)")
    count = 2 + len(tensors)

    @functools.wraps(fn)
    def overloaded(*args: Any, **kwargs: Any) -> Any:
        if len(args) == count and not isinstance(args[1], Tensor):
            _warn.warn_once_at_user(message, key="deprecated scale-first overload")
            return fn(args[0], *args[2:], **{scale: args[1]}, **kwargs)
        return fn(*args, **kwargs)
    return overloaded


for _name, (_scale, _tensors) in _SCALE_FIRST.items():
    globals()[_name] = _scale_first(globals()[_name], _name, _scale, _tensors, method=False)
    for _method in (_name, _name + "_"):
        setattr(Tensor, _method, _scale_first(getattr(Tensor, _method), _method, _scale, _tensors, method=True))
Tensor._check_inplace = inplace.check_inplace
Tensor._become = inplace.become
Tensor._view_rebase_message = shape.view_rebase_message
Tensor.copy_ = _copy_
Tensor.set_ = _set_
Tensor.resize_ = _resize_
Tensor.resize_as_ = _resize_as_
Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


def _reversed_dims(self: Tensor) -> Tensor:
    """x.T: the dims reversed, with torch's deprecation warnings (once each) for any rank but 2."""
    if self.ndim == 2:
        return permute(self, (1, 0))
    if self.ndim:
        _warn.warn_once_at_user(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will "
            "throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
            "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor. (Triggered "
            "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4314.)")
    else:
        _warn.warn_once_at_user("Tensor.T is deprecated on 0-D tensors. This function is the identity in these "
                                "cases. (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                                "TensorShape.cpp:4321.)")
    return permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _matrices_transposed(name: str) -> Any:
    """x.mT or x.mH: the last two dims swapped (conjugated for mH), refusing fewer than two as torch does."""
    hermitian = name == "mH"

    def swapped(self: Tensor) -> Tensor:
        if self.ndim == 1:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got "
                               f"{self.ndim}-D tensor.")
        if not self.ndim:  # torch warns once and gives the identity (the conjugate for mH)
            _warn.warn_once_at_user(
                f"Tensor.{name} is deprecated on 0-D tensors. "
                f"{'Consider using x.conj().' if hermitian else 'This function is the identity in these cases.'} "
                f"(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:"
                f"{4382 if hermitian else 4373}.)")
            return conj(self) if hermitian else self
        out = transpose(self, -2, -1)
        return conj(out) if hermitian else out
    return property(swapped)


def _adjoint_of_matrix(self: Tensor) -> Tensor:
    """x.H: the conjugate transpose of a matrix; torch refuses other ranks but 0, where it warns (once)."""
    if self.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor."
                           f"{' For batches of matrices, consider using tensor.mH' if self.ndim > 2 else ''}")
    if not self.ndim:
        _warn.warn_once_at_user("Tensor.H is deprecated on 0-D tensors. Consider using x.conj(). (Triggered "
                                "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4335.)")
    return conj(permute(self, tuple(range(self.ndim - 1, -1, -1))))


Tensor.T = property(_reversed_dims)
Tensor.mT = _matrices_transposed("mT")
Tensor.H = property(_adjoint_of_matrix)
Tensor.mH = _matrices_transposed("mH")
Tensor.real = property(lambda self: self if not self.is_complex() else _real(self))
Tensor.imag = property(lambda self: _imag(self))


def _real(x: Tensor) -> Tensor:
    return pointwise.real(x)


def _imag(x: Tensor) -> Tensor:
    if not x.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return pointwise.imag(x)


def _rsub(self: Tensor, other: Any) -> Tensor:
    if _grad_state.formula and not isinstance(other, Tensor):  # C++'s `number - tensor` (Note [scalar overloads])
        return sub(_filled_like(self, other), self)
    return rsub(self, other)


def _rtruediv(self: Tensor, other: Any) -> Tensor:
    if _grad_state.formula and not isinstance(other, Tensor):  # C++'s `number / tensor` (Note [scalar overloads])
        return div(_filled_like(self, other), self)
    return div(other, self)


def _filled_like(self: Tensor, number: complex) -> Tensor:
    """A tensor of self's shape filled with `number`, in the dtype the two promote to (no int truncation)."""
    return _creation.full_like(self, number, dtype=D.result_type(self, number))


def _rtruediv_or_array(self: Tensor, other: Any) -> Any:
    """`other / self`; for a NumPy array, torch's own definition, reciprocal(self) * other, which NumPy
    finishes (Note [NumPy interop])."""
    return reciprocal(self) * other if isinstance(other, np_.ndarray) else _rtruediv_operator(self, other)


def _rpow(self: Tensor, other: Any) -> Tensor:
    return pow(other, self)


def _floordiv(self: Tensor, other: Any) -> Tensor:
    return pointwise.floor_divide(self, other)


def _rfloordiv(self: Tensor, other: Any) -> Tensor:
    return pointwise.floor_divide(pointwise._like(self, other) if not isinstance(other, Tensor) else other, self)


def _mod(self: Tensor, other: Any) -> Tensor:
    return remainder(self, other)


def _rmod(self: Tensor, other: Any) -> Tensor:
    return remainder(other, self)


def _rdiv(self: Tensor, other: Any) -> Tensor:
    """Tensor.__rdiv__, `other / self` as torch writes it: reciprocal(self) * other (MulBackward0)."""
    return reciprocal(self) * other


def _to_sparse(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Refused: every retrograd tensor is dense (torch.strided; sparse layouts are out of scope)."""
    raise RuntimeError("retrograd has no sparse tensors: every tensor is dense (torch.strided), and torch's sparse "
                       "layouts are out of its scope; keep the dense tensor")


def _operator(fn: Any, arrays: bool = False) -> Any:
    """A binary operator method calling `fn(self, other)` with the operand taken as torch takes it (Note
    [operands]): NotImplemented for an operand that is no tensor or number (nor array, unless `arrays`), so
    Python raises its own TypeError ("unsupported operand type(s) for -: 'Tensor' and 'str'")."""

    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, Tensor) and type(other) is not int and type(other) is not float:
            other = _creation.tensor(other) if arrays and isinstance(other, np_.ndarray) else _operand(other)
            if other is NotImplemented:
                return NotImplemented
        return fn(self, other)

    return method


# the hottest operators run their op row's generated entry point directly (Op.operator); add's
# forward with alpha = 1 is NumPy's `add` (Note [one-call forwards])
Tensor.__add__ = Tensor.__radd__ = OPS["add"].operator(pointwise._ALPHA_ONE, np_.add)
Tensor.__sub__ = _operator(sub)
Tensor.__rsub__ = _operator(_rsub)
Tensor.__mul__ = Tensor.__rmul__ = OPS["mul"].operator()
Tensor.__truediv__ = OPS["div"].operator()
_rtruediv_operator = _operator(_rtruediv)
Tensor.__rtruediv__ = _rtruediv_or_array
Tensor.__floordiv__ = _operator(_floordiv)
Tensor.__rfloordiv__ = _operator(_rfloordiv)
Tensor.__mod__ = _operator(_mod)
Tensor.__rmod__ = _operator(_rmod)
Tensor.__rdiv__ = _operator(_rdiv)
Tensor.to_sparse = Tensor.to_sparse_coo = Tensor.to_sparse_csr = Tensor.to_sparse_csc = _to_sparse
Tensor.to_sparse_bsr = Tensor.to_sparse_bsc = _to_sparse
Tensor.__pow__ = _operator(pow)
Tensor.__rpow__ = _operator(_rpow)
Tensor.__matmul__ = lambda self, other: matmul(self, other) if isinstance(other, Tensor) else NotImplemented
Tensor.__rmatmul__ = lambda self, other: matmul(other, self) if isinstance(other, Tensor) else NotImplemented
Tensor.__neg__ = lambda self: neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: abs(self)
Tensor.__invert__ = lambda self: pointwise.bitwise_not(self)
Tensor.__and__ = Tensor.__rand__ = _operator(pointwise.bitwise_and)
Tensor.__or__ = Tensor.__ror__ = _operator(pointwise.bitwise_or)
Tensor.__xor__ = Tensor.__rxor__ = _operator(pointwise.bitwise_xor)
Tensor.__lshift__ = _operator(bitwise_left_shift)
Tensor.__rshift__ = _operator(bitwise_right_shift)
Tensor.__rlshift__ = _operator(lambda self, other: bitwise_left_shift(other, self))
Tensor.__rrshift__ = _operator(lambda self, other: bitwise_right_shift(other, self))
Tensor.__ilshift__ = lambda self, other: Tensor.bitwise_left_shift_(self, other)
Tensor.__irshift__ = lambda self, other: Tensor.bitwise_right_shift_(self, other)
Tensor.__eq__ = _operator(eq, arrays=True)  # torch compares with an array elementwise (`+` leaves it to NumPy)
Tensor.__ne__ = _operator(ne)
Tensor.__lt__ = _operator(lt)
Tensor.__le__ = _operator(le)
Tensor.__gt__ = _operator(gt)
Tensor.__ge__ = _operator(ge)
Tensor.__iadd__ = lambda self, other: Tensor.add_(self, other)
Tensor.__isub__ = lambda self, other: Tensor.sub_(self, other)
Tensor.__imul__ = lambda self, other: Tensor.mul_(self, other)
Tensor.__itruediv__ = lambda self, other: Tensor.div_(self, other)
Tensor.__ipow__ = lambda self, other: Tensor.pow_(self, other)
# without these Python would fall back to `x = x & y`, rebinding the name and leaving views and aliases unchanged
Tensor.__iand__ = lambda self, other: Tensor.bitwise_and_(self, other)
Tensor.__ior__ = lambda self, other: Tensor.bitwise_or_(self, other)
Tensor.__ixor__ = lambda self, other: Tensor.bitwise_xor_(self, other)
Tensor.__ifloordiv__ = lambda self, other: Tensor.floor_divide_(self, other)
Tensor.__imod__ = lambda self, other: Tensor.remainder_(self, other)
Tensor.__idiv__ = Tensor.__itruediv__
Tensor.__div__ = Tensor.__truediv__
Tensor.__nonzero__ = Tensor.__bool__
Tensor.__long__ = Tensor.__int__
Tensor.__reversed__ = lambda self: self if self.ndim == 0 else self.flip(0)


def _formula_namespace() -> dict:
    """What formulas may call: the public op functions and each family's helpers."""
    ns: dict = {"math": math, "Tensor": Tensor}
    for module in _modules:
        ns.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    ns.update({k: v for k, v in globals().items() if not k.startswith("_") and callable(v)})
    ns.update({k: v for k, v in vars(_creation).items() if not k.startswith("_")})
    ns["sum"], ns["max"], ns["min"], ns["abs"], ns["pow"] = sum, max, min, abs, pow
    ns["sum_to"] = shape.sum_to
    return ns


__all__ = [n for n, v in list(globals().items()) if not n.startswith("_") and not isinstance(v, types.ModuleType)
           and n not in ("annotations", "Any", "D", "Op", "OPS", "apply", "finalize", "defop", "math", "Tensor", "aten",
                         "FAMILIES", "importlib", "types")]
FUNCTIONAL = [n for m in _modules for n in getattr(m, "FUNCTIONAL", ())]  # names torch.nn.functional has
LINALG = [n for m in _modules for n in getattr(m, "LINALG", ())]  # names torch.linalg has
FFT = [n for m in _modules for n in getattr(m, "FFT", ())]  # names torch.fft has
SPECIAL = [n for m in _modules for n in getattr(m, "SPECIAL", ())]  # names torch.special has
