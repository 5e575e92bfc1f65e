"""The rule table mechanism and the one choke point every differentiable op goes through.

An op is declared once with `defop`: its NumPy forward (reached through the array namespace
`xp`), one VJP formula per differentiable input, and optionally a JVP formula. Formulas are
short Python expressions in PyTorch's derivatives.yaml vocabulary (`grad`, `result`, `self`,
`other`, the op's parameters, `self_shape`), compiled once into functions that call
differentiable retrograd ops, so every derivative can itself be differentiated. The names a
formula mentions decide what the node saves: nothing else is kept alive.

`apply` runs an op: promote inputs, run the forward, wrap the result and, only when recording
and some input requires grad, attach a node. Broadcast reduction is not here nor in any rule:
the engine sums each edge's gradient down to its input's shape (see Note [sum_to]).
"""

from __future__ import annotations

import dis
import functools
import inspect
import linecache
import re
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import _creation
from .. import _dtype as D
from .._tensor import (  # noqa: F401 - _array_of: generated
    NO_VERSION_COUNTER,
    Tensor,
    _array_of,
    _weak,
    _wrap,
    _wrap_many,
    device,
    lazy_bits,
    prune_views,
    set_lazy_bits,
    track_views,
)
from .._xp import is_array, locate, namespace
from ..autograd import forward_ad, grad_mode
from ..autograd.graph import (
    NO_EDGE,
    SAVED_FREED_MESSAGE,
    SAVED_HOOKS_SET_MESSAGE,
    SAVED_NONE_MESSAGE,
    AccumulateGrad,
    Node,
    SavedTensor,
    anomaly,
    anomaly_trace,
    before_inplace_write,
    edge_of,
    next_sequence_nr,
    saved_state,
)
from . import complex32
from .unsigned import BFLOAT16_REFUSED_ROWS, CHECKED_BEFORE_CONVERSION, UNSIGNED_TYPES, refuse_row, refused_types

_ndarray = np.ndarray
_INT64 = np.dtype(np.int64)
_generic = np.generic
_asarray = np.asarray
_new = object.__new__
_grad_state = grad_mode._state
_transforms = forward_ad.transforms


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b(?!\s*=(?!=))")  # not a keyword argument's name
_STRING_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")

ENGINE_NODES = ("CopySlices", "CopyBackwards", "NotImplemented", "Error")


class _MadeOnFirstRead:
    """An attribute computed by the decorated method on first read and kept in the instance's __dict__ (which
    later reads find first); unlike functools.cached_property, threads that race on the first read all get the
    value stored first (dict.setdefault), so every node of a row has one class."""

    def __init__(self, make: Callable) -> None:
        self.make, self.__doc__ = make, make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, objtype: type | None = None) -> object:
        return self if obj is None else obj.__dict__.setdefault(self.name, self.make(obj))


class Op:
    """One row of the rule table: forward, VJPs per input, JVP, and the node class it records."""

    __slots__ = ("name", "forward", "inputs", "params", "vjp_src", "jvp_src", "promote", "node_name",
                 "n_outputs", "output_names", "differentiable_outputs", "variadic", "differentiable", "is_view",
                 "formula_names", "saves_inputs", "saves_result", "readers", "vjps", "jvp", "run", "arity",
                 "numpy_function", "scalar_overload", "materialize_grads", "__dict__")

    def __init__(self, name: str, forward: Callable, inputs: Sequence[str], params: Sequence[str],
                 vjp: dict[str, str], jvp: str | None, promote: str | None, node_name: str,
                 outputs: int | Sequence[str], differentiable_outputs: Sequence[int] | None, is_view: bool = False,
                 materialize_grads: bool = True) -> None:
        self.name = name
        self.forward = forward
        self.variadic = inputs[0].startswith("*") if inputs else False
        self.inputs = tuple(i.lstrip("*") for i in inputs)
        self.params = tuple(params)
        self.vjp_src = {k: vjp[k] for k in self.inputs if k in vjp}
        self.jvp_src = jvp
        self.promote = promote
        # outputs: how many (-1: as many as the forward returns, split and unbind), or their names (derivatives.yaml's
        # output names, which formulas read and accessors are named after: `indices`, `logsumexp`)
        self.output_names = () if isinstance(outputs, int) else tuple(outputs)
        self.n_outputs = len(self.output_names) or outputs
        self.differentiable_outputs = None if differentiable_outputs is None else tuple(differentiable_outputs)
        self.is_view = is_view
        self.materialize_grads = materialize_grads  # False: a multi-output row's formulas see None for undefined grads
        self.differentiable = tuple(n in self.vjp_src for n in self.inputs)
        self.vjps: Callable | None = None  # the generated backward, made by compile() on first use
        self.jvp = None
        self.numpy_function: Callable | None = None  # set by compile() (Note [one-call forwards])
        self.arity = 1 if self.variadic else len(self.inputs)  # how many leading arguments are tensor inputs
        self.scalar_overload: Op | None = None  # recorded for a number in a formula (Note [scalar overloads])
        # the entry point apply() calls: generic until finalize() generates this op's own (Note [entry points])
        self.run: Callable[[tuple, tuple], Tensor | tuple] = lambda args, params: _apply_generic(self, args, params)
        # every name the VJP formulas read: the inputs and outputs they save, the accessors a node offers
        self.formula_names = names = frozenset().union(*map(self._referenced_names, self.vjp_src.values()))
        self.saves_inputs = tuple(i for i, n in enumerate(self.inputs) if n in names)
        # for each saved input, the inputs whose formula reads it: it is kept only if one of them wants a gradient
        self.readers = tuple(tuple(j for j, name in enumerate(self.inputs) if name in self.vjp_src
                                   and self.inputs[i] in self._referenced_names(self.vjp_src[name]))
                             for i in self.saves_inputs)
        self.saves_result = "result" in names or "results" in names or not names.isdisjoint(self.output_names)
        self.node_name = node_name
        self.__doc__ = self._docstring()

    @_MadeOnFirstRead
    def node_class(self) -> type[OpNode]:
        """The class of the nodes it records (`AddBackward0`), with the row's saved-value accessors; made on first
        read, as most rows are never recorded in a program (Note [compiled on first use])."""
        node_name = self.node_name
        forward_name = node_name[: node_name.index("Backward")] if "Backward" in node_name else node_name
        attrs = {"__slots__": (), "op": self, "forward_name": forward_name,
                 **_saved_accessors(self, self.formula_names)}
        if node_name in ENGINE_NODES:  # torch names these 'torch::autograd::<Name>'
            attrs["name"] = lambda node: "torch::autograd::" + type(node).__name__
        return type(node_name, (OpNode,), attrs)

    def _public_inputs(self) -> list[str]:
        return ["input" if n == "self" else n for n in self.inputs]

    def _docstring(self) -> str:
        """What help() shows for the op: its call, its node and its derivatives, read off the row."""
        returns = f"({', '.join(f'Tensor {n}' for n in self.output_names)})" if self.output_names else "Tensor"
        lines = [f"{self.name}({', '.join(self._public_inputs() + list(self.params))}) -> {returns}", "",
                 f"A row of retrograd's rule table, recorded as ``{self.node_name}``. Derivatives, in "
                 "derivatives.yaml's words (``grad``: the incoming gradient, ``result``: the output):", ""]
        lines += [f"- {'input' if k == 'self' else k}: ``{src}``" for k, src in self.vjp_src.items()]
        if not self.vjp_src:
            lines.append("- none: the result carries no gradient")
        if self.jvp_src:
            lines += ["", f"Forward mode: ``{self.jvp_src}``"]
        return "\n".join(lines)

    @functools.cached_property
    def __signature__(self) -> inspect.Signature:
        """Made on first use (inspect.signature, help()): the tensor inputs, the parameters, then torch's
        keyword-only `out`. (A cached property, not a __getattr__: a class with one gets no specialised
        attribute reads, and entry points read an op's fields on every call.)"""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        parameters = [inspect.Parameter(n, kind) for n in self._public_inputs() + list(self.params)]
        parameters.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
        return inspect.Signature(parameters)

    def __call__(self, *args: object, out: Tensor | Sequence[Tensor] | None = None) -> Tensor | tuple:
        """Run the op: the leading arguments are its tensor inputs, the rest its parameters; `out`
        receives the result (Note [out=])."""
        if out is not None:
            return _call_with_out(self, self.name, args, {}, out)
        k = self.arity
        try:
            return self.run(args, ()) if len(args) == k else self.run(args[:k], args[k:])
        except (TypeError, AttributeError):
            refuse_non_tensors(self, args[:k])
            raise

    def __get__(self, obj: object, objtype: type | None = None) -> object:
        """Used as a Tensor attribute, the op binds like a method (`x.exp()`)."""
        return self if obj is None else types.MethodType(self, obj)

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def alias(self, name: str, node_name: str) -> Op:
        """The same row under another node name (torch names some call paths differently)."""
        inputs = [("*" if self.variadic else "") + i for i in self.inputs]
        op = Op(name, self.forward, inputs, self.params, self.vjp_src, self.jvp_src, self.promote, node_name,
                self.output_names or self.n_outputs, self.differentiable_outputs, self.is_view)
        OPS[name] = op
        if _FORMULA_NAMESPACE:  # made after finalize(): compiles on first use as the others
            op.defer_compile()
        return op

    @staticmethod
    @functools.cache
    def _referenced_names(source: str) -> frozenset[str]:
        """Every identifier a formula reads (names, attributes, comprehension variables), read off its text,
        string literals and keyword arguments' names left out: a regular expression costs a fraction of
        compiling it, at import (Note [compiled on first use]). Python's keywords come along; they match no
        input or param."""
        return frozenset(_IDENTIFIER.findall(_STRING_LITERAL.sub("", source)))

    def _first_run(self, args: tuple, params: tuple) -> Tensor | tuple:
        """The entry point until the op's own is generated: compile, then run (Note [compiled on first use])."""
        self.compile()
        return self.run(args, params)

    def _first_jvp(self, *args: object) -> object:
        """The JVP until the op's own is generated: compile, then run it (Note [compiled on first use])."""
        self.compile()
        return self.jvp(*args)

    def defer_compile(self) -> None:
        """Point the row at stand-ins that compile it on first use (Note [compiled on first use])."""
        if self.vjps is None:
            self.jvp = self._first_jvp if self.jvp_src else None
            if not self.variadic:
                self.run = self._first_run

    def compile(self) -> None:
        """Generate this op's backward: one function that unpacks exactly the saved values its
        formulas read and evaluates each input's formula only when that input wants a gradient;
        then its JVP and its own entry point. Done once, on first use (Note [compiled on first use])."""
        if self.vjps is not None:
            return
        namespace = _FORMULA_NAMESPACE
        used = self.formula_names
        lines = ["    if wanted is None:",
                 "        wanted = node._next_nodes"]
        if self.saves_inputs and self.variadic:
            lines.append("    saved = node._unpack_saved()")
        elif self.saves_inputs:  # _unpack_saved inline, unless saved-tensor hooks packed them
            lines += ["    if node._packed:",
                      "        saved = node._unpack_saved()",
                      "    else:",
                      "        saved = node._kept",
                      "        if saved is None:",
                      "            raise RuntimeError(FREED_MESSAGE)",
                      "        versions = node._versions"]
            for k, i in enumerate(self.saves_inputs):
                lines += [f"        if versions[{k}] is not None:",
                          f"            if (0 if saved[{k}]._vc is None else saved[{k}]._vc[0]) != versions[{k}]:",
                          f"                raise RuntimeError(modified_message(saved[{k}], versions[{k}], node))"]
                if self.differentiable[i]:  # Note [saved originals]
                    lines += [f"            if saved[{k}].grad_fn is None and wanted[{i}] is not None "
                              f"and type(wanted[{i}]) is not AccumulateGrad:",
                              "                raise RuntimeError(DETACHED_MESSAGE)"]
        lines += [f"    {self.inputs[i]} = saved[{k}]" for k, i in enumerate(self.saves_inputs)]
        if self.saves_result and self.n_outputs == 1:  # one output: unpacked inline (the common case)
            lines.append("    if node._kept is None:")
            lines.append("        raise RuntimeError(FREED_MESSAGE)")
            lines.append("    result = node._result[0].unpack(node)")
            if "results" in used:
                lines.append("    results = (result,)")
        elif self.saves_result:
            lines.append("    results = node._unpack_results()")
            if "result" in used:
                lines.append("    result = results[0]")
            lines += [f"    {name} = results[{j}]" for j, name in enumerate(self.output_names) if name in used]
        if not self.saves_inputs and not self.saves_result and any(p in used for p in self.params):
            lines += ["    if node._kept is None and _holds_array(node._params):  # saved index tensors, freed",
                      "        raise RuntimeError(FREED_MESSAGE)"]
        lines += [f"    {p} = node._params[{k}]" for k, p in enumerate(self.params) if p in used]
        if "grad_input_mask" in used:  # Note [shared gradient calls]
            lines.append("    grad_input_mask = tuple(w is not None for w in wanted)")
        for k, name in enumerate(self.inputs):
            for suffix, pos in (("_shape", 0), ("_dtype", 1)):
                if name + suffix in used:
                    meta = f"node._in_meta[{k}]"
                    lines.append(f"    {name}{suffix} = [m[{pos}] for m in {meta}]" if self.variadic
                                 else f"    {name}{suffix} = {meta}[{pos}]")
        if self.n_outputs == 1:
            lines.append("    grad = grads[0]")
            numbers = [self.inputs[i] for i in self.saves_inputs if i and self.promote and not self.variadic]
            for n in numbers:  # Note [scalar overloads]: a number given as a tensor input is a tensor in torch
                lines += [f"    if not isinstance({n}, Tensor) and {n} is not None and grad is not None "
                          "and (marks or modes['formula']):",
                          f"        {n} = _wrapped_number({n}, grad)"]
        else:
            if self.materialize_grads:
                lines.append("    grads = node._materialize(grads)")
            lines.append("    grad = grads[0]")
        if self.variadic:
            src = self.vjp_src.get(self.inputs[0])
            lines.append(f"    return [None if e is None else _fit(g, m) for g, m, e in "
                         f"zip(({src}), node._in_meta[0], wanted)]")
        else:  # each wanted gradient, then _fit's test inline (it is called only when there is work)
            sources = {k: self.vjp_src[name] for k, name in enumerate(self.inputs) if name in self.vjp_src}
            for j, (call, ks) in enumerate(_shared_calls(sources).items()):  # Note [shared gradient calls]
                anyone = " or ".join(f"wanted[{k}] is not None" for k in ks)
                lines.append(f"    shared{j} = ({call}) if {anyone} else None")
                sources.update({k: f"shared{j}{sources[k][len(call):]}" for k in ks})
            for k, src in sources.items():
                src = _REAL_CONJ.sub(_real_conj, src)  # Note [conjugates of real tensors]
                lines += [f"    g{k} = None if wanted[{k}] is None else ({src})",
                          f"    if g{k} is not None:",
                          f"        meta = node._in_meta[{k}]",
                          f"        if meta is not None and (g{k}._data.shape != meta[0] "
                          f"or g{k}._data.dtype is not meta[1] and g{k}._data.dtype != meta[1]):",
                          f"            g{k} = _fit(g{k}, meta)"]
            outs = [f"g{k}" if name in self.vjp_src else "None" for k, name in enumerate(self.inputs)]
            lines.append(f"    return [{', '.join(outs)}]")
        # the body marks the thread in place, no second call, in the thread's dict (Note [scalar overloads]);
        # a try costs nothing
        lines = ["def backward(node, grads, wanted=None):",  # Note [gradients not asked for]
                 "    modes = _grad_state.__dict__",
                 "    marks = modes['enabled'] and not modes['formula']",
                 "    if marks:",
                 "        modes['formula'] = True",
                 "    try:"] + ["    " + line for line in lines] + [
                 "    finally:",
                 "        if marks:",
                 "            modes['formula'] = False"]
        scope = dict(namespace, _fit=_fit, FREED_MESSAGE=FREED_MESSAGE, modified_message=modified_message,
                     DETACHED_MESSAGE=DETACHED_MESSAGE, AccumulateGrad=AccumulateGrad, _holds_array=_holds_array,
                     _grad_state=_grad_state, _wrapped_number=_wrapped_number, _FLOAT32=np.dtype(np.float32),
                     _FLOAT64=np.dtype(np.float64))
        exec("\n".join(lines), scope)  # noqa: S102 - generated from our own rule table
        self.jvp = self._compile_jvp(namespace) if self.jvp_src else None
        self.numpy_function = _numpy_function(self)
        if not self.variadic:
            self.run = _generate(f"run of {self.name}", self._run_source(False, self.numpy_function), op=self,
                                 NUMPY_FUNCTION=self.numpy_function)
        # last, as it marks the row compiled: another thread then finds every piece in place
        self.vjps = self.node_class.apply = scope["backward"]  # the node's apply(grads) is the generated backward

    def _compile_jvp(self, namespace: dict) -> Callable:
        """Generate jvp(inputs, tangents, params, results) -> output tangent(s) from the `jvp=`
        formula; an input's tangent is None when it has none and becomes zeros only if read."""
        try:
            compile(self.jvp_src, "<rule>", "eval")
        except SyntaxError as e:
            error = e

            def broken(*args: object) -> None:
                raise RuntimeError(f"the jvp formula of {self.name} does not compile: {error}")

            return broken
        used = self._referenced_names(self.jvp_src)
        lines = ["def jvp(inputs, tangents, params, results):"]
        if self.variadic:
            name = self.inputs[0]
            lines.append(f"    {name} = inputs")
            if name + "_t" in used:
                lines.append(f"    {name}_t = [_zero_tangent(x) if t is None else t for x, t in zip(inputs, tangents)]")
        else:
            for k, name in enumerate(self.inputs):
                lines.append(f"    {name} = inputs[{k}]")
                if name + "_t" in used:
                    lines.append(f"    {name}_t = _zero_tangent({name}) if tangents[{k}] is None else tangents[{k}]")
                for suffix, attr in (("_shape", "shape"), ("_dtype", "dtype")):
                    if name + suffix in used:
                        lines.append(f"    {name}{suffix} = {name}._data.{attr}")
        lines += [f"    {p} = params[{k}]" for k, p in enumerate(self.params) if p in used]
        lines += [f"    {name} = results[{j}]" for j, name in enumerate(self.output_names) if name in used]
        lines += ["    result = results[0]", f"    return ({self.jvp_src})"]
        scope = dict(namespace, _zero_tangent=_zero_tangent)
        exec("\n".join(lines), scope)  # noqa: S102 - generated from our own rule table
        return scope["jvp"]

    def operator(self, params: tuple = (), numpy_function: Callable | None = None) -> Callable:
        """This binary op as a Tensor operator method, `x.__mul__(other)`: its entry point with `params`
        fixed and the operand normalised first (Note [operands]), one call fewer than `run`.
        `numpy_function`: what the forward calls with these params, for an op with params (Note
        [one-call forwards])."""
        numpy_function = numpy_function or _numpy_function(self)  # compile() may not have run yet
        return _generate(f"operator of {self.name}", self._run_source(True, numpy_function), op=self, PARAMS=params,
                         NUMPY_FUNCTION=numpy_function)

    def _run_source(self, operator: bool = False, numpy_function: Callable | None = None) -> list[str]:
        """The source of this op's entry point: `_apply_generic` and `_record` unrolled for its fixed
        inputs, with the node's fields written straight (Note [entry points]). As an `operator`, it
        takes (self, other) and reads its params from the constant PARAMS; `numpy_function` is NumPy's
        one call for the forward (with those params, for an operator), if there is one."""
        xs = [f"x{k}" for k in range(len(self.inputs))]
        ds = [f"d{k}" for k in range(len(self.inputs))]
        if operator:
            args = "(x0, x1)"
            lines = ["def run(x0, x1):",
                     "    t1 = isinstance(x1, Tensor)",
                     "    if not t1 and type(x1) is not int and type(x1) is not float:",
                     "        x1 = operand(x1)  # a number, or NotImplemented",
                     "        if x1 is NotImplemented:",
                     "            return NotImplemented",
                     "    t0 = isinstance(x0, Tensor)",
                     "    params = PARAMS"]
        else:
            args = "args"
            lines = ["def run(args, params):"]
        lines += ["    if _transforms.active:  # Note [transforms]",
                  f"        return _transformed_apply(op, {args}, params)"]
        if not operator:  # which inputs are tensors, tested once (Note [entry points])
            lines.append(f"    {_names(xs)} = args")
            lines += [f"    t{k} = isinstance({x}, Tensor)" for k, x in enumerate(xs)]
        # Notes [bfloat16] and [complex32] in _dtype.py: neither is one of NumPy's own types (`isbuiltin` 2, an
        # ml_dtypes type, and 0, a structured type; NumPy's are 1); a sampler row (its `draw` param) makes values in its
        # input's dtype itself
        opmath = not self.is_view and self.name not in _BFLOAT16_BITS and "draw" not in self.params
        special = " or ".join(f"type({d}) is _ndarray and {d}.dtype.isbuiltin != 1" for d in ds)
        to_opmath = f"        if {special}:  # after promotion\n            return _apply_opmath(op, {args}, params)"
        refuses = bool(refused_types(self.name, self.promote == "float"))  # torch's refusals (ops/unsigned.py)
        if self.promote is None:
            lines += [f"    {d} = {x}._data if t{k} else {x}" for k, (x, d) in enumerate(zip(xs, ds))]
            if opmath and refuses:  # one set lookup finds the unsigned types, bfloat16 and complex32 (a live set:
                # bfloat16's type joins it when ml_dtypes loads), one more the bool and complex types a row refuses
                more = " or d0.dtype.type in REFUSED" if refused_types(self.name) - UNSIGNED_TYPES else ""
                lines += [f"    if type(d0) is not _ndarray or d0.dtype.type in _SPECIAL_TYPES{more}:",
                          "        if type(d0) is _ndarray and d0.dtype.isbuiltin != 1:",
                          f"            return _apply_opmath(op, {args}, params)",
                          "        refuse_row(op.name, d0, params)"]
                refuses = False
            elif opmath:  # one test (a float kind's test stands for it below, an ndarray's here)
                lines += ["    if type(d0) is _ndarray and d0.dtype.isbuiltin != 1:",
                          f"        return _apply_opmath(op, {args}, params)"]
        else:  # the common case inline (one dtype, scalars that keep its category), else _arrays
            # NumPy's arrays only: other namespaces' dtypes have no `kind`, and _arrays handles them;
            # bfloat16's kind is 'V', and the identity test sends it to _arrays too; complex32 alone (no NumPy loop
            # takes it) reaches the forward's failure (_after_forward_failed), mixed with another dtype _arrays
            floating = " and d0.dtype.kind in 'fc'" if self.promote == "float" else \
                " and d0.dtype is not D.NUMPY_BFLOAT16" if len(xs) == 1 else \
                " and (dt := d0.dtype) is not D.NUMPY_BFLOAT16"
            lines += [f"    if t0 and type(d0 := x0._data) is _ndarray{floating}:"]
            if len(xs) == 1:
                lines += ["        pass", "    else:", f"        d0, = _arrays(op, {args})"] + [to_opmath] * opmath
            elif self.promote == "float":
                lines += ["        dt = d0.dtype"]
            for k, (x, d) in enumerate(zip(xs[1:], ds[1:])):
                same = "same and " if k else ""  # the first test assigns `same`
                lines += [f"        if t{k + 1}:",
                          f"            {d} = {x}._data",
                          f"            same = {same}{d}.dtype is dt",
                          "        else:",
                          f"            {d} = {x}",
                          f"            same = {same}(type({x}) is int or {x} is None "
                          f"or type({x}) is float and dt.kind in 'fc')"]
            if len(xs) > 1:
                lines += ["    else:",
                          "        same = False",
                          "    if not same:", f"        {_names(ds)} = _arrays(op, {args})"] + [to_opmath] * opmath
        params = ", *params" if self.params else ""  # a call without unpacking when the op has none
        call = f"forward(np if type(d0) is _ndarray else namespace_of(({', '.join(ds)},)), {', '.join(ds)}{params})"
        if numpy_function is not None:  # NumPy's function itself on ndarrays (Note [one-call forwards])
            out_array = ", out=..." if _UFUNC_OUT_ARRAY and isinstance(numpy_function, np.ufunc) else ""
            call = (f"NUMPY_FUNCTION({', '.join(ds)}{out_array}) if type(d0) is _ndarray "
                    f"else forward(namespace_of(({', '.join(ds)},)), {', '.join(ds)}{params})")
        if refuses:
            lines += ["    if type(d0) is not _ndarray or d0.dtype.type in REFUSED:",
                      "        refuse_row(op.name, d0, params)"]
        lines += ["    try:",
                  f"        result = {call}",
                  "    except Exception as e:  # a 0-d host array beside a device's, or torch's error",
                  f"        result = _after_forward_failed(forward, e, [{', '.join(ds)}], params, op)"]
        single = self.n_outputs == 1
        if single:  # _wrap inline
            lines += ["    if type(result) is not _ndarray:  # a 0-d result comes back from NumPy as a scalar",
                      "        result = _asarray(result) if isinstance(result, _generic) else _array_of(result)",
                      "    out = _new(Tensor)",
                      "    out._data = result",
                      "    out._requires_grad = False",
                      "    out.grad_fn = None",
                      "    out._output_nr = 0",
                      "    out._grad = out._vc = out._base = out._extra = None"]
        else:
            lines.append("    out = outs = _wrap_many(result)")
        recording = "_grad_state.enabled"
        if self.is_view and single:  # _mark_views' usual case inline (shape.py, Note [views and in-place writes])
            recording = "recording"
            lines += ["    recording = _grad_state.enabled",
                      "    counter = x0._vc",
                      "    if counter is None:",
                      "        counter = x0._vc = [0]",
                      "    base = x0._base",
                      "    if type(counter) is list and result.dtype is d0.dtype \\",
                      "            and (x0._extra is None or base is None and 'bits' not in x0._extra) \\",
                      "            and not _grad_state.view_replay:",
                      "        out._vc = counter",
                      "        out._base = x0 if base is None else base",
                      "        if recording:",
                      "            counter.append(_weak(out))",
                      "            tracked = len(counter)",
                      "            if tracked >= 16 and not tracked & (tracked - 1):",
                      "                prune_views(counter)",
                      "        else:",
                      "            out._extra = {'creation_meta': INFERENCE if _grad_state.inference else NO_GRAD}",
                      "            if x0._requires_grad:",
                      "                _views_of_grad_requirer((out,), counter)",
                      "    else:",
                      "        _mark_views(op, x0, (out,), params)"]
        elif self.is_view:
            lines.append("    _mark_views(op, x0, outs, params)")
        if self.vjp_src:  # recorded when some input requires grad and one is no inference tensor
            lines.append(f"    if {recording}:")
            lines.append("        if (" + " or ".join(f"t{k} and {x}._requires_grad" for k, x in enumerate(xs))
                         + ") and (" + " or ".join(f"({x}._vc is not NO_VERSION_COUNTER if t{k} "
                                                   f"else {x} is not None)" for k, x in enumerate(xs)) + "):")
            record = self._record_source(xs)
            if self.scalar_overload is not None:  # Note [scalar overloads]: its node, recorded inline too
                scalar = self.scalar_overload._record_source(["x0"], "scalar_node_class", "(x1, *params)")
                record = (["if not t1 and _grad_state.formula:"]
                          + ["    " + line for line in scalar] + ["else:"] + ["    " + line for line in record])
            lines += ["            " + line for line in record]
            lines.append("    elif _grad_state.inference:" if not self.is_view else "")
        else:
            lines.append("    if _grad_state.inference:" if not self.is_view else "")
        if not self.is_view:  # made in inference mode: an inference tensor (Note [inference tensors])
            lines.append("        out._vc = NO_VERSION_COUNTER" if single else
                         "        for o in outs:\n            o._vc = NO_VERSION_COUNTER")
        lines.append("    return out")
        return [line for line in lines if line]

    def _record_source(self, xs: list[str], node_class: str = "node_class", params: str = "params") -> list[str]:
        """The body of `_record` for this op's fixed inputs and outputs (run by the entry point), with the
        names the entry point gives this op's node class and params."""
        lines = [f"node = _new({node_class})",
                 "node._hookset = None",
                 "node._trace = anomaly_trace() if anomaly.enabled else None",
                 "node._seq = next_sequence_nr()"]
        for k, x in enumerate(xs):  # edge (node n, output r) and (shape, dtype) of each input (Note [edges])
            lines.append(f"n{k} = None")
            lines.append(f"r{k} = 0")
            lines.append(f"if t{x[1:]}:")  # t<k>: x<k> is a tensor (the entry point tested it once)
            if self.differentiable[k]:
                lines += [f"    if {x}._requires_grad:",
                          f"        n{k} = {x}.grad_fn",
                          f"        if n{k} is None:",
                          f"            n{k} = {x}._accumulator()",
                          "        else:",
                          f"            r{k} = {x}._output_nr"]
            lines += [f"    shape{k} = {x}._data.shape",
                      f"    dtype{k} = {x}._data.dtype",
                      "else:",
                      f"    shape{k} = dtype{k} = None"]
        facts = _names(f"shape{k}, dtype{k}" for k in range(len(xs)))
        nrs = _names(f"r{k}" for k in range(len(xs)))
        zero_nrs = _names("0" for _ in xs)  # a constant tuple: no allocation
        lines += [f"node._next_nodes = ({_names(f'n{k}' for k in range(len(xs)))})",
                  f"node._next_nrs = ({nrs}) if {' or '.join(f'r{k}' for k in range(len(xs)))} else ({zero_nrs})",
                  f"node._in_meta = _META.get(({facts})) or _intern_meta(({facts}))",
                  f"node._params = {params}"]
        if self.saves_inputs:  # only what the formulas of inputs that want a gradient read (torch's rule)
            for k, (i, readers) in enumerate(zip(self.saves_inputs, self.readers)):
                x = xs[i]
                lines += [f"if {' or '.join(f'n{j} is not None' for j in readers)}:",
                          f"    s{k} = {x}",
                          f"    v{k} = (0 if {x}._vc is None else {x}._vc[0]) if t{x[1:]} else None",
                          "else:",
                          f"    s{k} = v{k} = None"]
            n = len(self.saves_inputs)
            lines += [f"node._kept = [{', '.join(f's{k}' for k in range(n))}]",
                      f"versions = ({_names(f'v{k}' for k in range(n))})",
                      "node._versions = _VERSIONS.get(versions) or _intern_versions(versions)"]
        else:
            lines.append("node._kept = node._versions = _NOTHING")
        if self.n_outputs == 1 and self.differentiable_outputs is None:
            lines += ["out.grad_fn = node", "out._requires_grad = True"]  # its _output_nr: 0 since it was made
            if self.saves_result:
                lines.append("node._result = (SavedOutput(out),)")
        else:
            positions = "range(len(outs))" if self.differentiable_outputs is None else repr(self.differentiable_outputs)
            lines += ["outs = (out,)"] * (self.n_outputs == 1) + [f"for i in {positions}:",
                      "    o = outs[i]",
                      "    o.grad_fn = node",
                      "    o._output_nr = i",
                      "    o._requires_grad = True"]
            if self.saves_result:
                lines.append("node._result = tuple([SavedOutput(o) for o in outs])")
        if not self.saves_result:
            lines.append("node._result = None")
        lines.append("node._out_meta = None" if self.n_outputs == 1 else
                     "node._out_meta = tuple([(o._data.shape, o.dtype) for o in outs])")
        return lines


# Note [sum_to]
# Broadcasting in the forward means a gradient can arrive with more or larger dimensions than
# the input it belongs to. Rules never deal with this; OpNode.apply sums each gradient down to
# its input's recorded shape and casts it to its dtype (`_fit`), the one place that does so.


class OpNode(Node):
    """A node recorded by `apply`: what its op's formulas read, and the generated backward."""

    __slots__ = ("_kept", "_versions", "_params", "_in_meta", "_out_meta", "_result", "_index_versions")
    op: Op
    forward_name: str
    _packed = False  # True in the classes of nodes whose saved tensors went through saved-tensor hooks
    _takes_wanted = True

    def apply(self, grads: list, wanted: tuple | None = None) -> list:
        """The op's generated backward; compile() installs it as each node class's own `apply`, so this
        runs only for the first node of an op not compiled yet (Note [compiled on first use])."""
        op = type(self).op
        op.compile()
        return op.vjps(self, grads, wanted)

    def _unpack_saved(self) -> list:
        """The saved inputs for backward, with torch's errors for freed graphs, in-place changes since
        and detached originals; hooked ones are unpacked in the order torch unpacks them."""
        saved = self._kept
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        out = list(saved)
        for kind, k in _pack_order(type(self).op):
            if kind == "input":
                out[k] = self._unpack_input(k, for_backward=True)
        return out

    def _unpack_input(self, k: int, for_backward: bool = False) -> object:
        """Saved input `k` as it was saved (the tensor itself: torch's saved original), checked for
        in-place changes since; unpacked through its hooks if it has some."""
        saved = self._kept
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        value = saved[k]
        if type(value) is _PackedSaved:
            return value.unpack(self)
        version = self._versions[k]
        if version is not None:
            if value._version_value() != version:
                raise RuntimeError(modified_message(value, version, self))
            edge = self._next_nodes[self.op.saves_inputs[k]]  # None for an input that wants no gradient
            if for_backward and value.grad_fn is None and edge is not None and type(edge) is not AccumulateGrad:
                raise RuntimeError(DETACHED_MESSAGE)  # Note [saved originals]
        return value

    def _unpack_output(self, j: int) -> Tensor:
        """Saved output `j`: a new tensor on the same memory whose grad_fn is this node."""
        if self._result is None:
            raise RuntimeError(FREED_MESSAGE)
        return self._result[j].unpack(self)

    def _param_value(self, k: int) -> object:
        """Parameter `k` as torch's accessor returns it: index arrays as tensors (freed with the
        graph), lists as tuples, anything else as given."""
        value = self._params[k]
        if self._kept is None and _holds_array(value):
            raise RuntimeError(FREED_MESSAGE)
        return _as_saved_value(value)

    def _register_saved_hooks(self, slot: tuple[str, int], hooks: tuple) -> None:
        """SavedTensor.register_hooks: pack saved value `slot` through `hooks` now, unpack it on use."""
        kind, k = slot
        if kind == "input":
            if self._kept is None:
                raise RuntimeError(SAVED_FREED_MESSAGE)
            value = self._kept[k]
            if type(value) is _PackedSaved:
                raise RuntimeError(SAVED_HOOKS_SET_MESSAGE)
            if not isinstance(value, Tensor):
                raise RuntimeError(SAVED_NONE_MESSAGE)
            saved = list(self._kept)
            saved[k] = _PackedSaved(value, hooks, None)
            self._kept = saved
        else:
            if self._result is None:
                raise RuntimeError(SAVED_FREED_MESSAGE)
            value = self._result[k]
            if type(value) is _PackedSaved:
                raise RuntimeError(SAVED_HOOKS_SET_MESSAGE)
            plain = value.saved if type(value) is _SavedWithTangents else value
            results = list(self._result)
            results[k] = _PackedSaved(plain.unpack(self), hooks, plain.output_nr)
            self._result = tuple(results)
        if not self._packed:
            self.__class__ = _hooked_node_class(type(self))

    def _unpack_results(self) -> _SavedResults:
        if self._kept is None:
            raise RuntimeError(FREED_MESSAGE)
        return _SavedResults(self)

    def _materialize(self, grads: list) -> tuple:
        """Undefined gradients of a multi-output node's differentiable outputs become zeros, as torch's formulas
        expect (an output that cannot have one, such as max pooling's indices, stays None)."""
        wanted = self.op.differentiable_outputs
        return tuple(g if g is not None or wanted is not None and i not in wanted else
                     _creation.zeros(shape, dtype=dt, device=next(d.device for d in grads if d is not None))
                     for i, (g, (shape, dt)) in enumerate(zip(grads, self._out_meta)))

    def release(self) -> None:
        self._kept = None
        self._result = None

    def rule_sources(self) -> dict[str, str]:
        """The formula text of each input's rule, as written in the table (for traces and docs)."""
        return dict(self.op.vjp_src)


def _fit(grad: Tensor | None, meta: tuple | None) -> Tensor | None:
    """Sum a gradient down to its input's shape and cast it to its dtype (Note [sum_to])."""
    if grad is None or meta is None:
        return grad
    shape, dt = meta
    if grad._data.shape != shape:
        if _grad_state.tracer is not None:
            _grad_state.tracer.note_sum(grad._data.shape, shape)
        grad = sum_to(grad, shape)
    if grad._data.dtype != dt:
        if not D.from_native(dt).is_complex and grad.dtype.is_complex:
            grad = grad.real
        grad = grad.to(D.from_native(dt)) if grad._data.dtype != dt else grad
    return grad


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to `shape` (the inverse of broadcasting)."""
    have = grad._data.shape
    lead = len(have) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and have[i + lead] != 1)
    if not dims:
        return grad
    # the rows themselves (dims are already normal, the sum is contiguous): SumBackward1, then a
    # ViewBackward0 that drops the leading dims, as torch's sum_to records
    integral = D.kind(grad._data) in "biu"  # sum_to_size of an integer tensor: int64, as torch's sums (NumPy: uint64)
    grad = OPS["sum_dim"].run((grad,), (dims, True, _INT64 if integral else None))
    return OPS["view"].run((grad,), (shape,)) if grad._data.shape != shape else grad


FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def forward_name(fn: object) -> str:
    """A node's name as torch's errors give it: without 'Backward' and what follows (Exp, View, a Function's MyFn)."""
    name = getattr(fn, "forward_name", None) or fn.name()
    return name[:name.rindex("Backward")] if "Backward" in name else name


def modified_message(tensor: Tensor, expected: int, node: Node) -> str:
    """torch's text for a saved tensor that an in-place op changed after it was saved."""
    kind = D.aten_type_name(tensor.dtype)  # torch.LongTensor, CPUBoolType
    shape = ", ".join(str(n) for n in tensor.shape)
    creator = tensor.grad_fn
    origin = f", which is output {tensor._output_nr} of {forward_name(creator)}," \
        if creator is not None else ""  # torch names no origin for a leaf
    return (
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{kind} [{shape}]]{origin} is at version {tensor._version_value()}; expected version "
        f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to compute "
        "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


DETACHED_MESSAGE = ("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not "
                    "supported, please use out-of-place `.detach()` instead")


# Note [saved originals]
# A node keeps a saved input as the tensor object itself (torch's "saved original": `grad_fn._saved_self
# is x`), and an output as its memory and version counter (SavedOutput: the node must not keep its own
# output alive). Backward then uses the input's own history for double backward; if that history was cut
# in place (`x.detach_()` on a non-leaf), the saved tensor no longer leads where the node's edge does,
# and backward refuses, as torch does (reading it through `_saved_self` is still allowed).


def _saved_accessors(op: Op, names: set[str]) -> dict[str, property]:
    """torch's accessors of what a node of `op` saved, named after the row's own names (derivatives.yaml's):
    `_saved_<input>` and `_raw_saved_<input>` (a SavedTensor) for saved inputs, `_saved_result` and
    `_raw_saved_result` for a saved output (`_saved_<output>` for a named one, `_saved_results`,
    `_raw_saved_results` when the op has several unnamed), `_saved_<param>` for the parameters its formulas
    read, `_saved_<input>_sym_sizes` and `_saved_<input>_scalar_type` for the shapes and dtypes they read."""
    accessors: dict[str, property] = {}

    def add(name: str, getter: Callable, doc: str) -> None:
        accessors[name] = property(getter, doc=doc)

    for k, i in enumerate(op.saves_inputs):
        name = op.inputs[i]
        add(f"_saved_{name}", lambda node, k=k: _as_saved_input(node._unpack_input(k)), f"The saved input {name}.")
        if not op.variadic:
            add(f"_raw_saved_{name}", lambda node, k=k, name=name: SavedTensor._of(node, ("input", k), name),
                f"The saved input {name} as a SavedTensor (register_hooks).")
    if op.saves_result and op.n_outputs == 1:
        add("_saved_result", lambda node: node._unpack_output(0), "The saved output.")
        add("_raw_saved_result", lambda node: SavedTensor._of(node, ("result", 0), "result"),
            "The saved output as a SavedTensor (register_hooks).")
    elif op.saves_result and "results" in names:
        add("_saved_results", lambda node: tuple(node._unpack_output(j) for j in range(len(node._result or ()))),
            "The saved outputs.")
        add("_raw_saved_results", lambda node: tuple(SavedTensor._of(node, ("result", j), f"result{j}")
                                                     for j in range(len(node._result or ()))),
            "The saved outputs as SavedTensors (register_hooks).")
    for j, name in enumerate(op.output_names):
        if name in names:
            add(f"_saved_{name}", lambda node, j=j: node._unpack_output(j), f"The saved output {name}.")
            add(f"_raw_saved_{name}", lambda node, j=j, name=name: SavedTensor._of(node, ("result", j), name),
                f"The saved output {name} as a SavedTensor (register_hooks).")
    for k, param in enumerate(op.params):
        if param in names:
            add(f"_saved_{param}", lambda node, k=k: node._param_value(k), f"The saved argument {param}.")
    for k, name in enumerate(op.inputs):
        if name + "_shape" in names:
            add(f"_saved_{name}_sym_sizes", lambda node, k=k: _meta_of(node, k, 0), f"The saved shape of {name}.")
        if name + "_dtype" in names:
            add(f"_saved_{name}_scalar_type", lambda node, k=k: _meta_of(node, k, 1), f"The saved dtype of {name}.")
    return accessors


def _meta_of(node: OpNode, k: int, position: int) -> object:
    """The shape (position 0, a tuple) or dtype (1, a torch dtype) of input `k` (a list for a variadic input)."""
    meta = node._in_meta[k]
    if node.op.variadic:
        return [_meta_value(m[position], position) for m in meta]
    return None if meta is None else _meta_value(meta[position], position)


def _meta_value(value: object, position: int) -> object:
    return tuple(value) if position == 0 else D.from_native(value)


def _holds_array(value: object) -> bool:
    """Whether a parameter holds an index array (torch saves those as tensors, freed after backward)."""
    if isinstance(value, (tuple, list)):
        return any(_holds_array(v) for v in value)
    return isinstance(value, _ndarray)


def _as_saved_input(value: object) -> object:
    """A saved input as torch's accessor shows it: a number given for a tensor operand as the tensor torch
    wraps it in (int64, float64, complex128 or bool, as NumPy makes them), a list of tensors as a tuple."""
    if isinstance(value, (bool, int, float, complex)):
        return _wrap(_asarray(value))
    return tuple(value) if isinstance(value, list) else value


def _as_saved_value(value: object) -> object:
    """A saved parameter as torch's accessor shows it: index arrays as tensors, lists as tuples."""
    if isinstance(value, (tuple, list)):
        return tuple(_as_saved_value(v) for v in value)
    if isinstance(value, _ndarray):
        return _wrap(value)
    return value


class SavedOutput:
    """An op's own output kept for its backward without a tensor -> node -> tensor cycle."""

    __slots__ = ("data", "counter", "version", "output_nr", "requires_grad", "view_history")

    def __init__(self, tensor: Tensor) -> None:
        self.data = tensor._data
        self.counter = tensor._counter()
        self.version = self.counter[0]
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        self.view_history: weakref.ref | None = None  # set by resave_output for an in-place op on a view

    def unpack(self, node: Node) -> Tensor:
        t = _wrap(self.data)
        t._vc = self.counter
        if self.counter[0] != self.version:
            t.grad_fn, t._output_nr = node, self.output_nr
            raise RuntimeError(modified_message(t, self.version, node))
        if self.requires_grad:
            history = None if self.view_history is None else self.view_history()
            if history is None:
                t.grad_fn, t._output_nr = node, self.output_nr
            else:
                t.grad_fn, t._output_nr = history, 0
            t._requires_grad = True
        return t


# --------------------------------------------------------------------------------------------
# The choke point
# --------------------------------------------------------------------------------------------

class _SavedResults(Sequence):
    """The outputs a multi-output node saved, each unpacked (and checked for in-place changes) only when a
    formula reads it: torch saves only those (max.dim's backward reads the indices, so its values may change)."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node

    def __len__(self) -> int:
        return len(self.node._result)

    def __getitem__(self, i: int | slice) -> Tensor | tuple:
        saved = self.node._result[i]
        return tuple(s.unpack(self.node) for s in saved) if isinstance(i, slice) else saved.unpack(self.node)


def _arrays(op: Op, args: tuple) -> list:
    """The forward's arguments: arrays (or Python scalars), converted to torch's result dtype.

    The common case, tensors of one dtype with scalars that do not raise its category, needs no
    conversion: NumPy's own rules then agree with torch's."""
    mode = op.promote
    if mode is None:
        return _cpu_scalars_moved([a._data if isinstance(a, Tensor) else a for a in args])
    first = args[0]
    if isinstance(first, Tensor) and type(first._data) is _ndarray:
        dt = first._data.dtype
        kind = dt.kind
        if mode != "float" or kind in "fc":
            for a in args:
                if isinstance(a, Tensor):
                    if a._data.dtype is not dt:
                        break
                elif type(a) is float:
                    if kind not in "fc":
                        break
                elif type(a) is not int and a is not None:
                    break
            else:
                return [a._data if isinstance(a, Tensor) else a for a in args]
    target = D.result_type(*args)
    if mode == "float" and target.category < 2:
        if op.name in CHECKED_BEFORE_CONVERSION:  # refused before conversion, as torch (ops/unsigned.py)
            refuse_row(op.name, next((a._data for a in args if isinstance(a, Tensor) and a.dtype is target), None), ())
        target = D.defaults.floating
    return _cpu_scalars_moved([_cast(a._data, target) if isinstance(a, Tensor)
                               else D.number(a)  # NumPy's rules would let a NumPy scalar promote
                               for a in args])


def namespace_of(arrays: Sequence) -> types.ModuleType:
    """The namespace of a forward's first array (its first inputs may be Python numbers)."""
    return next((namespace(a) for a in arrays if is_array(a)), np)


def _cpu_scalars_moved(arrays: list) -> list:
    """torch lets a 0-d CPU tensor join tensors on another device, read as a number: moved to theirs (tensors of
    more dimensions on two devices are torch's error, _forward_error)."""
    other = next((a for a in arrays if type(a) is not _ndarray and is_array(a)), None)
    if other is None:
        return arrays
    xp = namespace(other)
    return [xp.asarray(a, device=other.device) if type(a) is _ndarray and a.ndim == 0 else a for a in arrays]


_COMPLEX32 = D.complex32


def _cast(array: object, target: D.dtype) -> object:
    """`array` in dtype `target`, in its own namespace."""
    if type(array) is _ndarray:
        if array.dtype == target.np:
            return array
        if target is _COMPLEX32:
            return D.to_complex32(array)
        try:
            return array.astype(target.np)
        except TypeError:
            if not D.is_complex32(array):
                raise
            return D.cast(array, target)  # complex32, which NumPy converts to nothing (Note [complex32])
    xp = namespace(array)
    native = D.native_table(xp)[target]
    return array if array.dtype == native else xp.astype(array, native)


# Note [operands]
# torch's arithmetic operators take the other operand as its functions take a number: a Python
# number, or a NumPy scalar, which counts as the number it holds (float32 * np.float64(2) is
# float32, where NumPy would make it float64; np.bool_ counts as a float, as in torch). Anything
# else gets NotImplemented, so Python raises its own TypeError ("unsupported operand type(s) for
# *: 'Tensor' and 'str'"). A NumPy array gets NotImplemented too, and NumPy then computes
# `t + array` itself (Note [NumPy interop]). Only `==` takes an array as a tensor, as torch's does.


def operand(value: object) -> object:
    """The other operand of a Tensor operator as torch takes it, or NotImplemented (Note [operands])."""
    if isinstance(value, np.generic):  # before the numbers: np.float64 is a float
        return D.number(value)
    if isinstance(value, (Tensor, bool, int, float, complex)):
        return value
    return NotImplemented


def _after_forward_failed(forward: Callable, error: Exception, arrays: list, params: tuple,
                          op: Op | None = None) -> object:
    """After the forward failed: its result once 0-d host arrays join the others' device (the entry points' fast
    path leaves them where they are; torch reads a 0-d CPU tensor beside a device's tensors as a number), or, for
    complex32 arrays (which NumPy computes nothing on) given to `op`'s own forward, as torch computes on them
    (_complex32_forward); else the error torch gives (_forward_error). Costs nothing until a forward fails."""
    if op is not None and any(D.is_complex32(a) for a in arrays):
        return _complex32_forward(op, arrays, params)
    if isinstance(error, OverflowError) and op is not None:
        return _with_numbers_cast(op, forward, error, arrays, params)
    moved = _cpu_scalars_moved(arrays)
    if any(a is not b for a, b in zip(moved, arrays)):
        try:
            return forward(namespace_of(moved), *moved, *params)
        except Exception as e:  # noqa: BLE001 - reported below, as for any forward
            error, arrays = e, moved
    raise _forward_error(error, arrays) from None


NUMBER_ARGUMENTS = frozenset(("value", "fill_value", "alpha", "beta", "min", "max", "min_val", "max_val", "threshold",
                              "exponent"))  # parameters torch reads as a Scalar in the tensor's dtype


def _with_numbers_cast(op: Op, forward: Callable, error: OverflowError, arrays: list, params: tuple) -> object:
    """The forward again after NumPy refused a Python int beyond the tensor's dtype, as torch converts numbers (Note
    [numbers out of a dtype's range] in _dtype.py): a number argument raises torch's error unless it fits (then,
    an int, it wraps around as C++ casts it), an int operand wraps around."""
    np_dtype = next(a.dtype for a in arrays if is_array(a))
    numbers = [name in NUMBER_ARGUMENTS and type(value) in (int, float, complex)
               for name, value in zip(op.params or (), params)]
    params = tuple(D.checked(value, np_dtype) if is_number else value for value, is_number in zip(params, numbers))
    if D.kind(np_dtype) not in "iu":
        raise error
    cast = [D.wrapped(a, np_dtype) if type(a) is int else a for a in arrays]
    return forward(namespace_of(cast), *cast, *params)


def _forward_error(error: Exception, arrays: Sequence) -> Exception:
    """What a forward that failed on `arrays` raises: torch's error for tensors on two devices, its broadcasting
    error for a ValueError from shapes, else the forward's own error."""
    return _device_error(arrays) or ((_broadcast_error(arrays) or error) if isinstance(error, ValueError) else error)


def _device_error(arrays: Sequence) -> RuntimeError | None:
    """torch's error for arrays on two devices (its meta kernels check against the first input's device); None
    when they share one."""
    devices = list(dict.fromkeys(str(device(*locate(a))) for a in arrays if is_array(a)))
    if len(devices) < 2:
        return None
    if "meta" in devices:
        return RuntimeError(f"Tensor on device {devices[1]} is not on the expected device {devices[0]}!")
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                        f"{devices[0]} and {devices[1]}!")


def _broadcast_error(arrays: list) -> RuntimeError | None:
    """torch's message for shapes that do not broadcast (None if they do): like torch's TensorIterator it folds the
    operands in order, tensor a being the shape broadcast so far (addcmul's third operand, where's condition)."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape")]
    if len(shapes) < 2:
        return None
    a = shapes[0]
    for b in shapes[1:]:
        n = max(len(a), len(b))
        merged = []
        for i in range(1, n + 1):  # from the last dimension, as torch's infer_size
            x = a[-i] if i <= len(a) else 1
            y = b[-i] if i <= len(b) else 1
            if x != y and x != 1 and y != 1:
                return RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                                    f"non-singleton dimension {n - i}")
            merged.append(y if x == 1 else x)
        a = tuple(reversed(merged))
    return None


def apply(op: Op, args: tuple, params: tuple = ()) -> Tensor | tuple:
    """Run `op` on tensors `args` with non-tensor `params`; record a node when autograd needs one."""
    try:
        return op.run(args, params)
    except (TypeError, AttributeError):
        refuse_non_tensors(op, args)
        raise


def refuse_non_tensors(op: Op, inputs: tuple) -> None:
    """After `op` failed with a TypeError or AttributeError: torch's TypeError if one of its tensor inputs is
    something else (a number is accepted after the first input, an optional input may be None)."""
    if op.variadic:
        for i, t in enumerate(inputs[0] if isinstance(inputs[0], (list, tuple)) else ()):
            if not isinstance(t, Tensor):
                raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}") from None
        return
    for position, (name, value) in enumerate(zip(op.inputs, inputs), 1):
        if isinstance(value, Tensor) or position > 1 and (value is None or type(value) in (bool, int, float, complex)):
            continue
        raise TypeError(f"{op.name}(): argument '{'input' if name == 'self' else name}' (position {position}) must be "
                        f"Tensor, not {type(value).__name__}") from None


# Note [entry points]
# Every op goes through the same steps: promote the inputs, run the NumPy forward, wrap the
# result and, when recording and some input requires grad, attach a node that holds exactly what
# the op's formulas read. Written once for any op (_apply_generic and _record below, the reference
# and what variadic ops such as cat use), those steps spend most of a small op's time looping over
# inputs, zipping with per-op tables and building lists. So finalize() also generates each
# fixed-arity op's own entry point, `op.run`: the same steps unrolled for its inputs, with its
# tables (which inputs are differentiable, which are saved and for whom, whether the result is
# saved) folded into straight-line code. `Op._run_source` writes it; to read the code generated
# for an op, `print("\n".join(OPS["add"]._run_source()))`.


# Note [scalar overloads]
# torch has two overloads of `*`, `/`, `+` and `-`: a Tensor one (MulBackward0, DivBackward0,
# AddBackward0, SubBackward0) and a Scalar one (MulBackward1, DivBackward1, AddBackward1,
# SubBackward1, whose node has one edge and saves the number). Python code always takes the Tensor
# one: `x * 2` wraps 2 in a tensor. torch's derivative formulas are C++, where `x * 2` takes the
# Scalar one, and `2 - x`, `2 / x` fill a tensor with 2 and subtract or divide by x in place
# (SubBackward0, DivBackward0). So a double-backward graph shows `exponent * self.pow(exponent - 1)`
# as MulBackward1 where the same expression in user code is MulBackward0. Our formulas are Python;
# to record torch's nodes, the generated backward marks the thread while its formulas run with
# grad on (`_grad_state.formula`), and the four ops' entry points then record the row of their
# Scalar overload (`op.scalar_overload`) for a number operand; the reflected `-` and `/` operators
# fill a tensor (ops/__init__.py). The forward is the same computation either way; only the node
# differs. A number given as an op's tensor input (`x * 0.5`) is a tensor in torch (a wrapped
# number), so its op's formula (`grad * other`) records MulBackward0: the generated backward hands
# such a number to the formula as a 0-d tensor (_wrapped_number). torch's C++ composites that
# multiply by a Scalar call the Scalar rows directly (pointwise.mul_by_number). Double backward
# pays for this on every node, so the backward sets and clears the mark in its own body (a second
# call per node cost the HVP workload 1%), reading and writing it in the thread's dict (one
# thread-local access a node instead of four attribute accesses: 1% of the HVP), and the entry
# points write the Scalar row's node inline as they write their own (the generic _record cost it 3%).


# Note [conjugates of real tensors]
# Nearly every formula conjugates (`grad * conj(other)`, derivatives.yaml's `other.conj()`), and nearly
# every tensor it meets is real, where conj returns its argument: a call that costs more than the test.
# The generated backward tests a named operand inline and calls conj only when it is not a float32 or
# float64 tensor (the dtype objects NumPy and CuPy share; another library's dtype is never one of them,
# and conj keeps every other case: complex, bfloat16, complex32, numbers and None).

_REAL_CONJ = re.compile(r"(?<![\w.])conj\((\w+)\)")


def _real_conj(match: re.Match) -> str:
    """`conj(x)` of a formula as the generated backward writes it (Note [conjugates of real tensors])."""
    x = match.group(1)
    return (f"({x} if isinstance({x}, Tensor) and ((_dt := {x}._data.dtype) is _FLOAT32 or _dt is _FLOAT64) "
            f"else conj({x}))")


def _wrapped_number(value: complex, grad: Tensor) -> Tensor:
    """A number given as an op's tensor input, as torch holds it: a 0-d tensor (of the dtype the number takes
    with `grad`, as torch's wrapped numbers promote), so a formula combining it records the Tensor overload."""
    return _creation.full((), value, dtype=D.result_type(grad, value), device=grad.device)


# Note [shared gradient calls]
# Some ops compute the gradients of several inputs in one helper call and index it, one formula
# per input (`attention_grads(grad, query, key, value, ...)[0]`, `[1]`, `[2]`). The generated
# backward makes that call once for all of them, when any of those inputs wants a gradient,
# instead of once per input: each formula is still written, and read, on its own. Such a helper
# may read `grad_input_mask` (derivatives.yaml's name): which inputs want a gradient, so that it
# computes only those.


def _shared_calls(sources: dict[int, str]) -> dict[str, list[int]]:
    """The calls that two or more formulas index (`<call>[i]`), with the inputs whose formula does."""
    by_call: dict[str, list[int]] = {}
    for k, src in sources.items():
        if src.endswith("]") and "[" in src:
            call = src[:src.rindex("[")]
            if call.endswith(")") and src[len(call) + 1:-1].isdigit():
                by_call.setdefault(call, []).append(k)
    return {call: ks for call, ks in by_call.items() if len(ks) > 1}


# Note [one-call forwards]
# Many forwards are one call of the array namespace with their inputs in order (`mul` is
# `return xp.multiply(a, b)`). For those the entry point calls NumPy's function itself when the
# input is an ndarray, one Python call fewer per op; other namespaces (CuPy) still go through the
# forward. The forward stays the one definition: the shortcut is read off its source. A ufunc is
# called with `out=...` (NumPy >= 2.3), so a 0-d result comes back as a 0-d array, not a NumPy
# scalar the entry point would convert with another call (a third of a 0-d op's kernel time).


def _ufunc_out_array() -> bool:
    """Whether NumPy's ufuncs take `out=...` (return an array, even 0-d: NumPy >= 2.3)."""
    try:
        return type(np.add(np.float32(1), 1, out=...)) is np.ndarray
    except TypeError:
        return False


_UFUNC_OUT_ARRAY = _ufunc_out_array()
_SKIPPED_OPCODES = {"RESUME", "PRECALL", "CACHE", "PUSH_NULL", "NOP"}


def _numpy_function(op: Op) -> Callable | None:
    """NumPy's function when `op`'s forward is `return xp.<name>(<its inputs, in order>)` with no
    params, else None (Note [one-call forwards]). Read off the bytecode, which is cheap at import;
    a form this does not recognise (another Python's opcodes) just keeps the forward call."""
    code = getattr(op.forward, "__code__", None)
    if op.params or op.variadic or code is None or code.co_argcount != 1 + len(op.inputs) or op.forward.__defaults__:
        return None
    steps = []
    for ins in dis.get_instructions(code):
        if ins.opname.startswith("LOAD_FAST"):  # LOAD_FAST_LOAD_FAST (3.13) loads two at once
            steps += [("LOAD_FAST", v) for v in (ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))]
        elif ins.opname not in _SKIPPED_OPCODES:
            steps.append((ins.opname, ins.argval))
    xp, *inputs = code.co_varnames[:code.co_argcount]
    call = [("LOAD_FAST", v) for v in inputs] + [("CALL", len(inputs)), ("RETURN_VALUE", None)]
    if len(steps) != 2 + len(call) or steps[0] != ("LOAD_FAST", xp) or steps[2:] != call \
            or steps[1][0] not in ("LOAD_METHOD", "LOAD_ATTR"):
        return None
    return getattr(np, steps[1][1], None)


def _names(names: Iterable[str]) -> str:
    """Names as a tuple display without its parentheses: 'a, b', or 'a,' for one."""
    names = list(names)
    return ", ".join(names) + ("," if len(names) == 1 else "")


def _generate(name: str, lines: list[str], **scope: object) -> Callable:
    """Compile generated source into a function named `run` in a scope of this module's globals."""
    source = "\n".join(lines) + "\n"
    filename = f"{__file__}<{name}>"  # under the package directory: anomaly traces skip its frames
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # readable tracebacks
    op = scope["op"]
    scalar_node_class = op.scalar_overload and op.scalar_overload.node_class  # Note [scalar overloads]
    refused = refused_types(op.name, op.promote == "float")  # its entry point's refused types (ops/unsigned.py)
    namespace = dict(globals(), forward=op.forward, node_class=op.node_class, scalar_node_class=scalar_node_class,
                     REFUSED=refused, **scope)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - generated from our own rule table
    return namespace["run"]


# Note [interned metadata]
# Every recorded node keeps each input's (shape, dtype) for _fit and the versions of what it saved:
# small tuples of numbers, yet each new tuple is an object the garbage collector tracks, and a graph
# that stays alive (a training step's forward, a long chain) makes the collector run more often
# the more tracked objects it allocates. Nearly every node of a program repeats a few shapes, and
# nearly every saved tensor is at version 0, so the generated entry points share one tuple per
# distinct value (the lookup key is freed at once: no net allocation). Versions are shared only
# when all are 0 (None: not saved), so that parameters updated in place every step do not fill the
# table; the shape table is emptied when it grows large. Only NumPy dtypes (CuPy's too) enter it: another
# library's dtype may hash as NumPy's and then be compared with it at each lookup (array_api_strict warns).

_META: dict[tuple, tuple] = {}
_VERSIONS: dict[tuple, tuple] = {}
_INTERNED_MAX = 4096


def _intern_meta(facts: tuple) -> tuple:
    """The shared `_in_meta` for (shape0, dtype0, shape1, dtype1, ...): one (shape, dtype) pair per
    input, None for an input that is not a tensor (Note [interned metadata])."""
    if len(_META) >= _INTERNED_MAX:
        _META.clear()
    meta = tuple(None if facts[k + 1] is None else (facts[k], facts[k + 1]) for k in range(0, len(facts), 2))
    if all(dtype is None or isinstance(dtype, np.dtype) for dtype in facts[1::2]):
        _META[facts] = meta
    return meta


def _intern_versions(versions: tuple) -> tuple:
    """The shared tuple equal to `versions` if all are 0 or None, else `versions` itself (Note
    [interned metadata]); called when the table does not hold it yet."""
    if not any(versions):
        _VERSIONS[versions] = versions
    return versions


def _apply_generic(op: Op, args: tuple, params: tuple = (), forward: Callable | None = None) -> Tensor | tuple:
    """apply() for any op, with loops over its inputs (the reference for Note [entry points]); `forward`
    stands in for the op's own (_apply_bfloat16's, _apply_complex32's)."""
    if _transforms.active:  # forward AD, vmap or saved-tensor hooks in use (Note [transforms])
        return _transformed_apply(op, args, params)
    if forward is None:
        forward = op.forward
    if op.variadic:
        inputs = args[0]
        arrays = [t._data for t in inputs]
        if forward is op.forward and D.NUMPY_BFLOAT16 is not None and _has_opmath(inputs):
            return _apply_opmath(op, args, params)
        try:  # the variadic rows (cat, stack, block_diag) move complex32 values as they are
            result = forward(namespace_of(arrays), arrays, *params)
        except Exception:
            if forward is op.forward and _has_opmath(inputs):  # complex32 beside another dtype: NumPy has no
                return _apply_opmath(op, args, params)  # common type, torch's promotion has (Note [complex32])
            mixed = _device_error(arrays)
            if mixed is None:
                raise
            raise mixed from None
    else:
        inputs = args
        arrays = _arrays(op, args)
        first = arrays[0]
        if refused_types(op.name, op.promote == "float"):
            refuse_row(op.name, first, params)
        try:
            result = forward(np if type(first) is _ndarray else namespace_of(arrays), *arrays, *params)
        except Exception as e:  # a 0-d host array beside a device's, or torch's error
            result = _after_forward_failed(forward, e, arrays, params, op if forward is op.forward else None)
    if op.n_outputs == 1:
        out = _wrap(result)
        outs = (out,)
    else:
        out = outs = _wrap_many(result)
    if op.is_view:
        _mark_views(op, inputs[0], outs, params)
    if _grad_state.enabled:
        if op.vjp_src and any(isinstance(t, Tensor) and t._requires_grad for t in inputs) and any(
                t._vc is not NO_VERSION_COUNTER if isinstance(t, Tensor) else t is not None for t in inputs):
            if op.scalar_overload is not None and not isinstance(inputs[1], Tensor) and _grad_state.formula:
                _record(op.scalar_overload, inputs[:1], (inputs[1], *params), outs)  # Note [scalar overloads]
            else:
                _record(op, inputs, params, outs)
    elif _grad_state.inference and not op.is_view:
        for o in outs:
            o._vc = NO_VERSION_COUNTER
    return out


# the rows that read or move bfloat16's bits (not compute on its values): they run on the bfloat16 array itself
_BFLOAT16_BITS = frozenset({"view_dtype", "nextafter", "_to_device"})
# torch's mul and div kernels read a number operand as float32 (its original_scalar_value); the others read the
# bfloat16 tensor it is wrapped in, and add's `alpha` and pow's `exponent` as bfloat16 too
_BFLOAT16_FLOAT_NUMBERS = frozenset({"mul", "div"})
_BFLOAT16_NUMBER_PARAMS = frozenset({"alpha", "exponent"})
# outputs torch's kernels leave in float32 beside bfloat16 ones (attention's log-sum-exp), by position
_BFLOAT16_FLOAT32_OUTPUTS = {"_scaled_dot_product_flash_attention_for_cpu": (1,)}


_SPECIAL_TYPES = D.SPECIAL_TYPES  # the NumPy scalar types the entry points send on (one set lookup)


def _has_opmath(tensors: Sequence) -> bool:
    """Whether bfloat16 or complex32, which compute through a wider type, may take part in a variadic op: one of
    `tensors` holds one (neither is NumPy's own type), or bfloat16 is the default dtype."""
    for t in tensors:
        if type(t._data) is _ndarray and t._data.dtype.isbuiltin != 1:
            return True
    return D.defaults.floating is D.bfloat16


def _apply_opmath(op: Op, args: tuple, params: tuple) -> Tensor | tuple:
    """apply() where bfloat16 or complex32 takes part (after promotion): the complex32 rules where a complex32 tensor
    does, or float16 met a complex operand (Note [complex32] in _dtype.py), else bfloat16's (Note [bfloat16])."""
    inputs = _flat(args)
    if any(isinstance(v, Tensor) and D.is_complex32(v._data) for v in inputs):
        return _apply_complex32(op, args, params)
    if D.defaults.floating is D.bfloat16 or any(isinstance(v, Tensor) and v._data.dtype.kind == "V" for v in inputs):
        return _apply_bfloat16(op, args, params)
    return _apply_complex32(op, args, params)  # float16 beside a complex operand


def _apply_complex32(op: Op, args: tuple, params: tuple) -> Tensor | tuple:
    """apply() where a complex32 tensor takes part (_complex32_forward), promotion first: complex32 beside complex64
    or float32 computes in complex64."""
    return _apply_generic(op, args, params, lambda xp, *values: _complex32_forward(op, values[:op.arity],
                                                                                   values[op.arity:]))


def _complex32_forward(op: Op, inputs: Sequence, params: tuple) -> object:
    """`op`'s forward on NumPy `inputs` as torch's CPU kernels compute where a complex32 array is among them: a row
    with a ComplexHalf kernel (ops/complex32.py) runs on complex64 copies of the complex32 arrays and its results
    are rounded once (complex64 to complex32, float32 to float16), unless the op's `dtype` asks for another; any
    other row raises torch's NotImplementedError (Note [complex32] in _dtype.py)."""
    first = next((v for v in _flat(inputs) if D.is_complex32(v)), None)
    if first is None:
        return op.forward(np, *inputs, *params)  # promotion left none
    if op.name not in complex32.COMPLEX32_ROWS:
        complex32.refuse(op.name, first, params)
    result = complex32.FORWARDS.get(op.name, op.forward)(np, *map(_complex64, inputs), *params)
    wanted = params[op.params.index("dtype")] if "dtype" in op.params else None
    rounds = wanted is None or wanted is D.complex32 or wanted is D.NUMPY_COMPLEX32  # ours or NumPy's dtype
    wider = op.name in complex32.PROMOTING and any(
        type(v) is _ndarray and v.dtype.kind in "fc" and v.dtype.itemsize > 2 for v in _flat(inputs))
    return _complex32_rounded(result) if rounds and not wider else result


def _complex64(value: object) -> object:
    """A complex32 array as complex64 (a list item by item); anything else as it is."""
    if type(value) is list:
        return [_complex64(v) for v in value]
    return D.widen(value) if D.is_complex32(value) else value


def _complex32_rounded(result: object) -> object:
    """A forward's complex64 results rounded to complex32, float32 ones to float16, in tuples and lists too."""
    if type(result) is tuple or type(result) is list:
        return type(result)(_complex32_rounded(r) for r in result)
    if isinstance(result, (_ndarray, _generic)):
        if result.dtype == np.complex64:
            return D.to_complex32(result)
        if result.dtype == np.float32:
            return _asarray(result).astype(np.float16)
    return result


def _apply_bfloat16(op: Op, args: tuple, params: tuple) -> Tensor | tuple:
    """apply() where a bfloat16 tensor takes part, as torch's CPU kernels compute: the forward runs on float32
    copies of the bfloat16 arrays (so sums and products accumulate in float32), and its floating results are
    rounded to bfloat16 once, unless the op's `dtype` asks for another (Note [bfloat16] in _dtype.py)."""
    if op.name in BFLOAT16_REFUSED_ROWS:  # torch has no bfloat16 loop for them (Note [low-precision linear algebra])
        first = next((v._data for v in _flat(args) if isinstance(v, Tensor) and _is_bfloat16(v._data)), None)
        if first is not None:
            refuse_row(op.name, first, params)
    wanted = params[op.params.index("dtype")] if "dtype" in op.params else None
    rounds = wanted is None or wanted is D.bfloat16
    widen = _widened if op.name in _BFLOAT16_FLOAT_NUMBERS else _opmath
    as_bfloat16 = [name in _BFLOAT16_NUMBER_PARAMS for name in op.params]

    def forward(xp: types.ModuleType, *values: object) -> object:
        inputs = values[:op.arity]  # then the params
        if not any(_is_bfloat16(v) or type(v) is list and any(map(_is_bfloat16, v)) for v in inputs):
            return op.forward(xp, *values)  # promotion left none (bfloat16 with float32 is float32)
        params = [_opmath(p) if rounded else p for p, rounded in zip(values[op.arity:], as_bfloat16)]
        result = op.forward(xp, *map(widen, inputs), *params)
        if not rounds:
            return result
        kept = _BFLOAT16_FLOAT32_OUTPUTS.get(op.name, ())
        return tuple(r if i in kept else _rounded(r) for i, r in enumerate(result)) if kept else _rounded(result)

    return _apply_generic(op, args, params, forward)


def _is_bfloat16(value: object) -> bool:
    return type(value) is _ndarray and value.dtype is D.NUMPY_BFLOAT16


def _opmath(value: object) -> object:
    """A forward's input as torch's kernels read it beside bfloat16 arrays: an array as float32, a Python number
    as the bfloat16 tensor torch wraps it in (a list item by item)."""
    if type(value) is float or type(value) is int:
        return float(np.array(value, D.NUMPY_BFLOAT16))
    return _widened(value)


def _widened(value: object) -> object:
    """A bfloat16 array as float32 (a list item by item); anything else as it is."""
    if type(value) is list:
        return [_widened(v) for v in value]
    return value.astype(np.float32) if _is_bfloat16(value) else value


def _rounded(result: object) -> object:
    """A forward's float32 results rounded to bfloat16 (to nearest even), in tuples and lists too."""
    if type(result) is tuple or type(result) is list:
        return type(result)(_rounded(r) for r in result)
    if isinstance(result, (_ndarray, _generic)) and result.dtype == np.float32:
        return _asarray(result).astype(D.NUMPY_BFLOAT16)
    return result


# How a view was made (torch's CreationMeta; shape.py, Note [view creation meta]).
DEFAULT, NO_GRAD, INFERENCE, MULTI_OUTPUT, IN_CUSTOM_FUNCTION = (
    "default", "no_grad", "inference_mode", "multi_output", "in_custom_function")


def creation_meta(view: Tensor) -> str:
    """How `view` was made: DEFAULT unless its `_extra` says otherwise (shape.py, Note [view creation meta])."""
    extra = view._extra
    return DEFAULT if extra is None else extra.get("creation_meta", DEFAULT)


def _mark_views(op: Op, source: Tensor, outs: tuple, params: tuple) -> None:
    """Views share memory and the version counter with their base and remember how they were made; views
    of an inference tensor are inference tensors, not views (Note [inference tensors]). A view made the
    usual way (grad mode, one output, of a base with no conjugate bit, keeping its dtype) gets no `_extra`:
    each fact it would hold has its default (shape.py, Note [views and in-place writes])."""
    counter = source._vc
    if counter is None:
        counter = source._vc = [0]
    elif counter is NO_VERSION_COUNTER:
        for o in outs:
            o._vc = counter
            set_lazy_bits(o, lazy_bits(source))
        return
    state = _grad_state
    enabled = state.enabled  # grad mode on and inference mode off: the common case, one read of the thread's state
    made = (DEFAULT if op.n_outputs == 1 else MULTI_OUTPUT) if enabled else INFERENCE if state.inference else \
        NO_GRAD if not state.grad else DEFAULT if op.n_outputs == 1 else MULTI_OUTPUT
    base = source._base
    extra = source._extra
    replayed = None
    if base is None:  # a view of a base: the common case
        base = fw_base = source
    elif extra is None:  # a view of a view made the usual way
        fw_base = base
    else:  # torch's propagate_creation_meta: the latest unusual way, inference mode first
        was = extra.get("creation_meta", DEFAULT)
        made = was if made == DEFAULT or was == INFERENCE else made
        replayed = extra.get("replay")
        fw_base = extra.get("fw_base", base)
        if fw_base is None:  # the source is no forward-differentiable view (forward_ad, Note [tangents of views])
            fw_base = source
    bits = None if extra is None else extra.get("bits")  # complex.py, Note [conjugate and negative bits]
    replay_every_op = state.view_replay
    base_dtype = base._data.dtype
    usual = made == DEFAULT and fw_base is base and bits is None and replayed is None and not replay_every_op
    for index, o in enumerate(outs):
        o._vc = counter
        o._base = base
        dtype = o._data.dtype
        if usual and (dtype is base_dtype or dtype == base_dtype):
            continue
        facts = o._extra = {}
        if made != DEFAULT:
            facts["creation_meta"] = made
        if fw_base is not base:  # forward_ad, Note [tangents of views]
            facts["fw_base"] = fw_base
        if bits is not None:
            facts["bits"] = bits
        if replayed is not None or replay_every_op or dtype is not base_dtype and dtype != base_dtype:
            facts["replay"] = _view_recipe(op, params, index, source, replayed, o, replay_every_op)
    if enabled:  # shape.rebase_view regenerates these after an in-place op gives the base history
        track_views(counter, outs)  # (also when the base has none yet: `x1.expand(2)`, then `x1.add_(leaf)`)
    elif source._requires_grad:
        _views_of_grad_requirer(outs, counter)


def _views_of_grad_requirer(views: tuple, counter: list) -> None:
    """Views made in no_grad (or inference mode) of a tensor that requires grad: as in torch they require grad,
    have no history and no AccumulateGrad, and are refused a fresh history when their base is written (Note
    [view creation meta]). Their `_extra` holds their creation meta already."""
    for view in views:
        view._requires_grad = True
        view._extra["no_grad_view"] = True
    track_views(counter, views)


def _view_recipe(op: Op, params: tuple, index: int, source: Tensor, replayed: tuple | None, out: Tensor,
                 every_op: bool) -> tuple:
    """How to remake a view as_strided cannot express, or any view in view-replay mode (shape.py, Note
    [view replay]): the op on its remade source, or, for a view of such a view that keeps its dtype,
    outside view-replay mode, as_strided at its place (its array, resolved against the base when
    replayed). The last item is the step before, None for the base."""
    if replayed is not None and out._data.dtype == source._data.dtype and not every_op:
        return ("strided", out._data, replayed)
    if replayed is None and source._base is not None:
        replayed = ("strided", source._data, None)
    return ("op", op, params, index, replayed)


def _record(op: Op, inputs: Sequence, params: tuple, outs: tuple) -> None:
    """Attach a node of `op` to its outputs (only reached when some input requires grad)."""
    node = _new(op.node_class)
    node._hookset = None
    node._trace = anomaly_trace() if anomaly.enabled else None
    node._seq = next_sequence_nr()
    edges = []
    meta = []
    if op.variadic:
        for t in inputs:
            edges.append(edge_of(t) if t._requires_grad else NO_EDGE)
            meta.append((t._data.shape, t._data.dtype))
        meta = [meta]
    else:
        for t, wanted in zip(inputs, op.differentiable):
            if isinstance(t, Tensor):
                edges.append(edge_of(t) if wanted and t._requires_grad else NO_EDGE)
                meta.append((t._data.shape, t._data.dtype))
            else:
                edges.append(NO_EDGE)
                meta.append(None)
    node.next_functions = tuple(edges)
    node._in_meta = meta
    node._params = params
    if op.saves_inputs:
        # save only what the formulas of inputs that want a gradient read (torch's rule): a value
        # no formula will use must not make backward fail when it is later changed in place
        saved = node._kept = []
        versions = node._versions = []
        for i, readers in zip(op.saves_inputs, op.readers):
            t = inputs[i]
            if op.variadic or any(edges[j][0] is not None for j in readers):
                saved.append(t)
                versions.append((0 if t._vc is None else t._vc[0]) if isinstance(t, Tensor) else None)
            else:
                saved.append(None)
                versions.append(None)
    else:
        node._kept = _NOTHING
        node._versions = _NOTHING
    if op.differentiable_outputs is None:
        for i, o in enumerate(outs):
            o.grad_fn = node
            o._output_nr = i
            o._requires_grad = True
    else:
        for i in op.differentiable_outputs:
            o = outs[i]
            o.grad_fn = node
            o._output_nr = i
            o._requires_grad = True
    node._result = tuple(SavedOutput(o) for o in outs) if op.saves_result else None
    node._out_meta = tuple((o._data.shape, o.dtype) for o in outs) if op.n_outputs != 1 else None


_NOTHING: list = []  # shared by the nodes that save nothing (never mutated)


def snapshot_saved_self(node: object, tensor: Tensor) -> None:
    """If `node` saved `tensor` (about to be overwritten), keep a copy of its current value instead."""
    saved = getattr(node, "_kept", None)
    if not saved:
        return
    for i, s in enumerate(saved):
        if s is tensor:
            data = tensor._data
            snap = _wrap(data.copy() if hasattr(data, "strides") else namespace(data).asarray(data, copy=True))
            snap.grad_fn, snap._output_nr = tensor.grad_fn, tensor._output_nr
            snap._requires_grad = tensor._requires_grad
            snap._vc = [node._versions[i]]
            saved[i] = snap


# --------------------------------------------------------------------------------------------
# Transforms: forward-mode AD, vmap and saved-tensor hooks
# --------------------------------------------------------------------------------------------

def unrecorded_arrays(*tensors: Tensor) -> tuple[np.ndarray, ...] | None:
    """The tensors' arrays where a backward formula may compute them in NumPy, outside the graph: nothing records
    it (grad mode off, as in a backward without create_graph, and no forward-mode level, vmap, saved-tensor hook
    or autocast active; a profiler only watches, so it profiles what runs without it) and all are NumPy float32 or
    float64 arrays of one dtype; None where it must run differentiable ops."""
    if _grad_state.enabled or _transforms.changes_ops:
        return None
    arrays = tuple([t._data for t in tensors])
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype != np.float32 and first.dtype != np.float64:
        return None
    for a in arrays:  # a loop, not any() over a generator: a linear layer's backward runs this on every step
        if type(a) is not np.ndarray or a.dtype != first.dtype:
            return None
    return arrays


# Note [transforms]
# Forward-mode AD (tangents), vmap (batched tensors) and saved-tensor hooks change what every
# op does, yet most programs use none of them, so apply() pays for all three with one check of
# `transforms.active` (forward_ad.py). When it is set, _transformed_apply runs instead:
#   1. vmap: an op with a batched operand goes to its batching rule (autograd/batched.py), which
#      calls apply again on plain tensors that hold the whole batch;
#   2. the op runs as usual (the switch off for that call) and records its node;
#   3. forward AD: at each dual level where an input has a tangent, the row's JVP formula gives
#      the outputs' tangents (Note [dual levels]); it runs after recording, so a formula that
#      reads `result` is differentiable through it (reverse-over-forward);
#   4. the node's saved outputs keep their tangents (forward-over-reverse), and saved-tensor
#      hooks pack what it saved.


def _transformed_apply(op: Op, args: tuple, params: tuple) -> Tensor | tuple:
    """apply() while a transform is in use (Note [transforms])."""
    state = _transforms
    if state.profiler is not None:  # torch.profiler records: the op runs inside its event (Note [profiler events])
        return state.profiler.run_op(op, args, params)
    if state.autocast and op.name in state.autocast:
        args = _autocast_inputs(args, state.autocast[op.name])
    if state.vmap:
        from ..autograd import batched  # vmap's batching rules: loaded on vmap's first use

        out = batched.dispatch(op, args, params)
        if out is not NotImplemented:
            return out
    state.active = False
    try:
        out = apply(op, args, params)
    finally:
        state.update()
    outs = (out,) if op.n_outputs == 1 else out
    if state.levels:
        _propagate_tangents(op, args[0] if op.variadic else args, params, outs)
    node = next((o.grad_fn for o in outs if o.grad_fn is not None), None)
    if node is not None:
        if node._result is not None and any(forward_ad.tangents_of(o) for o in outs):
            node._result = tuple(saved_output(o) for o in outs)
        if state.saved_hooks:
            _pack_saved(node)
    return out


def autocast_unifies(*tensors: Tensor) -> bool:
    """Whether CPU autocast is on and casts these tensors to one dtype (floating, none float64): a public
    matrix product then skips its same-dtype check, its rows cast first (amp, Note [autocast on the CPU])."""
    return _transforms.autocast is not None and all(t.dtype.is_floating_point and t.dtype is not D.float64
                                                    for t in tensors)


def autocast_input(tensor: Tensor, name: str) -> Tensor:
    """`tensor` as CPU autocast casts the input of torch's op `name` where that op is a composite here (torch's
    cross_entropy_loss runs in float32; its rows alone would leave log_softmax in bfloat16)."""
    target = _transforms.autocast.get(name) if _transforms.autocast is not None else None
    return tensor if target is None else _autocast_inputs((tensor,), target)[0]


def _autocast_inputs(args: tuple, target: D.dtype) -> tuple:
    """An autocast row's inputs as torch's autocast casts them: each floating tensor other than float64 to
    `target`, recorded as ToCopyBackward0 (amp, Note [autocast on the CPU])."""
    return tuple(a.to(target) if isinstance(a, Tensor) and a.dtype.is_floating_point and a.dtype is not D.float64
                 else a for a in args)


def _propagate_tangents(op: Op, inputs: Sequence, params: tuple, outs: tuple) -> None:
    """Give the outputs their tangent at every visible dual level where some input has one."""
    for level in _transforms.levels:
        tangents = [forward_ad.get_tangent(t, level) for t in inputs]
        if all(t is None for t in tangents):
            continue
        if op.jvp is None:
            if not op.vjp_src:
                return  # not differentiable (comparisons, indices): no tangent either
            raise NotImplementedError(f"Trying to use forward AD with {op.name} that does not support it because it "
                                      "has not been implemented yet.\nPlease file an issue to PyTorch at https://github"
                                      ".com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can "
                                      "prioritize its implementation or submit a PR adding the implementation to "
                                      "derivatives.yaml")
        with forward_ad.hidden_levels(level):
            result = op.jvp(inputs, tangents, params, outs)
            wanted = op.differentiable_outputs or range(len(outs))
            if type(result) is not tuple and type(result) is not list:
                result = (result,)
            positions = range(len(outs)) if len(result) == len(outs) else wanted
            for i, t in zip(positions, result):
                o = outs[i]
                if t is not None and i in wanted and o.dtype.category >= 2:
                    forward_ad.set_tangent(o, level, _fit_tangent(t, o))


def _fit_tangent(t: Tensor | complex, out: Tensor) -> Tensor:
    """A formula's tangent with its output's shape and dtype (0 for a constant output)."""
    if not isinstance(t, Tensor):
        return _creation.full_like(out, t)
    if t._data.shape != out._data.shape:
        t = t.expand(out._data.shape)
    if t.dtype is not out.dtype:
        if t.dtype.is_complex and not out.dtype.is_complex:
            t = t.real
        t = t.to(out.dtype)
    return t


def _zero_tangent(x: object) -> Tensor | int:
    """The tangent of an input that has none: zeros for a tensor, 0 for a number."""
    if isinstance(x, Tensor):
        return _creation.zeros_like(x)
    return 0


def saved_output(tensor: Tensor) -> SavedOutput | _SavedWithTangents:
    """An op's output saved for its backward, with the tangents it has (forward-over-reverse reads them)."""
    tangents = forward_ad.tangents_of(tensor)
    return _SavedWithTangents(SavedOutput(tensor), tangents) if tangents else SavedOutput(tensor)


def resave_output(node: OpNode, tensor: Tensor) -> None:
    """An in-place op wrote its result into `tensor`: its node's saved output is `tensor` now, with the
    tangents it has. A result that saved-tensor hooks packed stays as packed (their pack ran once, and
    their unpack runs once, as in torch). When `tensor` is a view, its history is the fresh one its base's
    CopySlices gave it, which wraps `node`: while that history lives the output unpacks with it, so that a
    double backward reaches `node` only through CopySlices; it is held weakly (torch's weak grad_fn), as a
    strong hold would make a cycle (node, saved output, view's history, CopySlices). Once it is gone the
    output unpacks with `node`, as torch's: a double backward then runs CopySlices before `node`, the newer
    node first (Note [execution order] in autograd/engine.py)."""
    if type(node._result[0]) is not _PackedSaved:
        saved = saved_output(tensor)
        if tensor.grad_fn is not None and tensor.grad_fn is not node:
            (saved.saved if type(saved) is _SavedWithTangents else saved).view_history = weakref.ref(tensor.grad_fn)
        node._result = (saved,)


class _SavedWithTangents:
    """A saved output that comes back from unpacking with the tangents its tensor had."""

    __slots__ = ("saved", "tangents")

    def __init__(self, saved: SavedOutput, tangents: dict | None) -> None:
        self.saved = saved
        self.tangents = tangents

    def unpack(self, node: Node) -> Tensor:
        t = self.saved.unpack(node)
        if self.tangents:
            t._extra_dict()["fw_grad"] = dict(self.tangents)
        return t


class _PackedSaved:
    """A saved tensor as a saved_tensors_hooks pack hook returned it, unpacked on use. What the unpack
    hook returns is given the saved tensor's place in the graph (torch's SavedVariable does the same):
    an output's node, or the edge an input's gradient went to (its grad_fn, or a leaf's accumulator)."""

    __slots__ = ("packed", "unpack_hook", "output_nr", "requires_grad", "edge")

    def __init__(self, tensor: Tensor, hooks: tuple, output_nr: int | None) -> None:
        pack, self.unpack_hook = hooks
        counter = tensor._counter()
        version = counter[0]
        state = _transforms.saved_hooks
        _transforms.saved_hooks = ()  # ops inside a hook are not hooked themselves
        _transforms.update()
        try:
            with grad_mode.no_grad():  # nor recorded, as in torch
                self.packed = pack(tensor)
        finally:
            _transforms.saved_hooks = state
            _transforms.update()
        if counter[0] != version:  # unpacking checks no versions: what hooks return is theirs (as in torch)
            raise RuntimeError("A saved tensor pack hook is modifying its input in place. Tensors provided as input "
                               "to pack hook cannot be modified by in-place operations as this can lead to "
                               "unexpected side-effects. Please open an issue if you need to perform in-place "
                               "operations on the input to a pack hook.")
        self.output_nr = output_nr
        self.requires_grad = tensor._requires_grad
        self.edge = edge_of(tensor) if output_nr is None and tensor._requires_grad else NO_EDGE

    def unpack(self, node: Node) -> Tensor:
        t = self.unpack_hook(self.packed)
        if not isinstance(t, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        if self.output_nr is not None and self.requires_grad and t.grad_fn is not node:
            t = _wrap(t._data)  # an output comes back as itself: its own node's output
            t.grad_fn, t._output_nr, t._requires_grad = node, self.output_nr, True
            return t
        fn, nr = self.edge
        if fn is None or (t is fn.variable if type(fn) is AccumulateGrad else t.grad_fn is fn and t._output_nr == nr):
            return t
        alias = _wrap(t._data)  # an input comes back where its gradient went
        alias._vc = t._counter()
        alias._requires_grad = True
        if type(fn) is AccumulateGrad:
            alias._extra = {"acc": weakref.ref(fn)}  # a leaf: gradients accumulate into the saved leaf
        else:
            alias.grad_fn, alias._output_nr = fn, nr
        return alias


def _pack_saved(node: OpNode) -> None:
    """Pass what `node` saved through the innermost saved_tensors_hooks pair, in torch's order."""
    hooks = _transforms.saved_hooks[-1]
    target = saved_state.inplace_target  # Tensor._become clears it once the write is done
    if target is not None:
        tensor, version = target
        if tensor._version_value() != version:  # written by a path that records nothing
            saved_state.inplace_target = None
        elif any(s is tensor for s in node._kept):
            snapshot_saved_self(node, tensor)  # pack the value before the write, as torch packs a clone of it
    saved = list(node._kept)
    results = list(node._result or ())
    for kind, k in _pack_order(type(node).op):
        if kind == "input" and isinstance(saved[k], Tensor):
            saved[k] = _PackedSaved(saved[k], hooks, None)
        elif kind == "result":  # output k, or every output for k = -1 (the formulas read `results`)
            for j in range(len(results)) if k == -1 else (k,):
                s = results[j].saved if type(results[j]) is _SavedWithTangents else results[j]
                results[j] = _PackedSaved(s.unpack(node), hooks, s.output_nr)
    if node._kept:
        node._kept = saved
        node.__class__ = _hooked_node_class(type(node))
    if node._result is not None:
        node._result = tuple(results)


def _pack_order(op: Op) -> list[tuple[str, int]]:
    """What a node of `op` saves, in the order torch's generated code saves (and unpacks) it: the saved inputs, then
    the outputs the formulas read (saved once the op has run), each group sorted by name, as torch's
    gen_autograd_functions.py sorts them (`lerp` packs end, self, weight; `svd` S, U, Vh)."""
    order = op.__dict__.get("_pack_order")
    if order is None:
        text = " ".join(op.vjp_src.values())
        inputs = sorted((op.inputs[i], "input", k) for k, i in enumerate(op.saves_inputs))
        outputs = {}
        if op.saves_result:
            outputs = {j: name for j, name in enumerate(op.output_names) if re.search(rf"\b{name}\b", text)}
            if re.search(r"\bresults\b", text):
                outputs = {-1: "results"}  # every output
            elif re.search(r"\bresult\b", text):
                outputs.setdefault(0, "result")
        order = op._pack_order = [(kind, k) for _, kind, k in inputs + sorted(
            (name, "result", j) for j, name in outputs.items())]
    return order


def register_function_saved_hooks(ctx: Node, k: int, hooks: tuple) -> None:
    """SavedTensor.register_hooks on what a custom Function's ctx saved at position `k`."""
    if ctx._kept is None:
        raise RuntimeError(SAVED_FREED_MESSAGE)
    item, version = ctx._kept[k]
    if type(item) is _PackedSaved:
        raise RuntimeError(SAVED_HOOKS_SET_MESSAGE)
    if item is None:
        raise RuntimeError(SAVED_NONE_MESSAGE)
    item = _PackedSaved(item.unpack(ctx), hooks, item.output_nr) if type(item) is SavedOutput else \
        _PackedSaved(item, hooks, None)
    ctx._kept = [*ctx._kept[:k], (item, version), *ctx._kept[k + 1:]]
    if not ctx._packed:
        ctx.__class__ = _hooked_node_class(type(ctx))


def pack_function_saved(ctx: Node) -> None:
    """Pass what a custom Function's ctx saved through the innermost saved_tensors_hooks pair."""
    hooks = _transforms.saved_hooks[-1]
    packed = []
    for item, version in ctx._kept:
        if type(item) is SavedOutput:
            item = _PackedSaved(item.unpack(ctx), hooks, item.output_nr)
        elif isinstance(item, Tensor):
            item = _PackedSaved(item, hooks, None)
        packed.append((item, version))
    ctx._kept = packed
    ctx.__class__ = _hooked_node_class(type(ctx))


# Note [index tensors]
# torch saves an op's index, mask and target tensors with its node, as it saves any tensor a formula reads,
# and refuses backward once one of them was changed in place. Our rows take them as params: the bare arrays
# the NumPy forward reads, which share the tensors' memory, so `y = x[idx]; idx[0] = 1` would change the
# gradient silently. The public function hands those tensors to `keep_index_versions`, which moves the node
# just recorded to a subclass of its class that checks their versions before its backward runs (a class
# swap, as saved-tensor hooks make one: nodes without index tensors pay nothing).

_INDEX_CHECKING: dict[type, type] = {}


def keep_index_versions(result: Tensor | tuple, *indices: Tensor | None) -> Tensor | tuple:
    """Have the node that just made `result` refuse backward once one of `indices` changes in place (Note [index
    tensors]); returns `result`. Nothing to do when no node was recorded or it holds no index array."""
    if not grad_mode._state.enabled:  # no node recorded now (grad_fn, if any, is an earlier op's)
        return result
    node = (result[0] if type(result) is tuple else result).grad_fn
    node = getattr(node, "fn", node)  # an in-place op on a view: CopySlices wraps the op's node
    if not isinstance(node, OpNode) or not _holds_array(node._params):
        return result
    kept = tuple((t, t._version_value()) for t in indices if isinstance(t, Tensor))
    if kept:
        node.__class__ = _index_checking_class(type(node))
        node._index_versions = kept
    return result


def _index_checking_class(cls: type) -> type:
    """`cls` whose backward first checks the versions of the node's index tensors (same name, so grad_fn reads
    the same), and which lets them go with the rest of what the node saved."""
    checking = _INDEX_CHECKING.get(cls)
    if checking is None:
        def apply(self: OpNode, grads: list, wanted: tuple | None = None) -> list:
            for tensor, version in self._index_versions:
                if tensor._version_value() != version:
                    raise RuntimeError(modified_message(tensor, version, self))
            return cls.apply(self, grads, wanted)

        def release(self: OpNode) -> None:
            cls.release(self)
            self._index_versions = ()

        checking = _INDEX_CHECKING[cls] = type(cls.__name__, (cls,), {
            "__slots__": (), "apply": apply, "release": release})
    return checking


_HOOKED: dict[type, type] = {}


def _hooked_node_class(cls: type) -> type:
    """`cls` with saved inputs unpacked through their hooks (same name, so grad_fn reads the same): a node
    class's generated backward then goes through OpNode._unpack_saved."""
    hooked = _HOOKED.get(cls)
    if hooked is None:
        def saved_tensors(self: Node) -> tuple:
            if self._kept is None:
                raise RuntimeError(FREED_MESSAGE)
            return tuple(s.unpack(self) if type(s) is _PackedSaved else s for s, _ in self._kept)

        extra = {"_packed": True} if issubclass(cls, OpNode) else {"_packed": True,
                                                                  "saved_tensors": property(saved_tensors)}
        hooked = _HOOKED[cls] = type(cls.__name__, (cls,), {"__slots__": (), **extra})
    return hooked


# --------------------------------------------------------------------------------------------
# out=: the public functions' destination argument
# --------------------------------------------------------------------------------------------

# Note [out=]
# torch's functions take `out=`, a tensor (or a tuple of them for several outputs) that receives
# the result: resized when its shape differs (with a warning when it held elements), cast to its
# dtype when the result's dtype casts safely to it, bumped once. Such calls have no derivative, so
# torch refuses them when autograd would need one: under grad mode when an argument or `out`
# requires grad, and under forward AD when one has a tangent. `accepting_out` gives every public
# Python function of the retrograd namespace this argument once (retrograd/__init__.py), and the
# rows that are public functions themselves take it in Op.__call__; ops called internally,
# methods and operators go without it. A factory (zeros, arange, randn, ...) makes its values in
# out's dtype unless `dtype=` says otherwise, as torch's do: `randn(3, out=float64_tensor)` draws
# doubles, `zeros(3, out=int64_tensor)` makes integers.


def accepting_out(fn: Callable, name: str, factory: bool = False) -> Callable:
    """`fn` taking torch's `out=` keyword (Note [out=]); a `factory` makes its values in out's dtype."""

    @functools.wraps(fn)
    def function(*args: object, out: Tensor | Sequence[Tensor] | None = None, **kwargs: object) -> object:
        if out is None:
            return fn(*args, **kwargs)
        if factory and isinstance(out, Tensor) and kwargs.get("dtype") is None:
            kwargs["dtype"] = out.dtype
        return _call_with_out(fn, name, args, kwargs, out)

    function.__name__ = function.__qualname__ = name
    function.__signature__ = _SignatureWithOut(fn)
    return function


class _SignatureWithOut(inspect.Signature):
    """`fn`'s signature with torch's `out=`, worked out when first read (inspect.signature, help()): working out
    the 360 of them took a seventh of retrograd's own import. Signature's methods read the two properties."""

    __slots__ = ("_fn", "_made")

    def __init__(self, fn: Callable) -> None:  # no Signature.__init__: its parameters are made on first read
        self._fn, self._made = fn, None

    def _signature(self) -> inspect.Signature:
        if self._made is None:
            self._made = _with_out_parameter(inspect.signature(self._fn))
        return self._made

    @property
    def parameters(self) -> Mapping[str, inspect.Parameter]:
        return self._signature().parameters

    @property
    def return_annotation(self) -> object:
        return self._signature().return_annotation

    def __repr__(self) -> str:
        return f"<Signature {self}>"


def _with_out_parameter(signature: inspect.Signature) -> inspect.Signature:
    """`signature` with torch's keyword-only `out=None` (before a `**kwargs`), for help() and inspect."""
    if "out" in signature.parameters:
        return signature
    parameters = list(signature.parameters.values())
    at = len(parameters) - (bool(parameters) and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD)
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Tensor | None")
    parameters.insert(at, out)
    return signature.replace(parameters=parameters)


def _call_with_out(fn: Callable, name: str, args: tuple, kwargs: dict, out: Tensor | Sequence[Tensor]) -> object:
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    tensors = [t for t in _flat(args) + _flat(tuple(kwargs.values())) + outs if isinstance(t, Tensor)]
    if _transforms.levels and any(forward_ad.get_tangent(t, level) is not None
                                  for t in tensors for level in _transforms.levels):
        raise NotImplementedError(f"Trying to use forward AD with {name}_out that does not support it because it is "
                                  "an out= function")
    if _grad_state.enabled and any(t._requires_grad for t in tensors):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    result = fn(*args, **kwargs)
    results = tuple(result) if isinstance(result, tuple) else (result,)
    if len(results) != len(outs):
        raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors")
    for r, o in zip(results, outs):
        _write_out(r, o)
    return type(result)(*outs) if hasattr(result, "_fields") else out  # torch.max(..., out=(v, i)): return_types


def _flat(values: tuple) -> tuple:
    """Values with lists and tuples of them opened one level (the tensors of `cat([a, b])`)."""
    return tuple(x for v in values for x in (v if isinstance(v, (list, tuple)) else (v,)))


def _write_out(result: Tensor, out: Tensor) -> None:
    D.check_cast(result.dtype, out.dtype)
    if out._data.shape != result._data.shape:
        if out._data.size:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=4)
        out._data = np.empty(result._data.shape, out._data.dtype)
    if _transforms.saved_hooks:  # as any in-place write (allow_mutation_on_saved_tensors clones what out held)
        before_inplace_write(out)
    np.copyto(out._data, result._data, casting="unsafe")
    out._bump_version()


# --------------------------------------------------------------------------------------------
# Declaring ops
# --------------------------------------------------------------------------------------------

OPS: dict[str, Op] = {}


def defop(name: str, *, inputs: Sequence[str] = ("self",), params: Sequence[str] = (), node: str | None = None,
          promote: str | None = None, outputs: int | Sequence[str] = 1,
          differentiable_outputs: Sequence[int] | None = None, view: bool = False, materialize_grads: bool = True,
          jvp: str | None = None, **vjp: str) -> Callable[[Callable], Op]:
    """Declare a row of the rule table; the decorated function is the op's NumPy forward. `outputs`: how many, or
    their names (formulas read a named output, and its node's accessor is `_saved_<name>`, as torch's).
    `materialize_grads=False` hands a multi-output row's formulas None for an output nobody differentiated (torch's
    grads[i].defined()).

    >>> @defop("exp", node="ExpBackward0", promote="float", self="grad * result.conj()")
    ... def exp(xp, x): return xp.exp(x)
    """

    def register(forward: Callable) -> Op:
        op = Op(name, forward, inputs, params, vjp, jvp, promote,
                node or "".join(p.capitalize() for p in name.split("_")) + "Backward0",
                outputs, differentiable_outputs, view, materialize_grads)
        if name in OPS:
            raise ValueError(f"op {name!r} declared twice")
        OPS[name] = op
        return op

    return register


def linear_backward_op(name: str, params: Sequence[str]) -> Callable[[Callable], Op]:
    """Declare the backward of a piecewise-linear activation as a row of its own (torch's double backward
    records it: ThresholdBackwardBackward0, HardtanhBackwardBackward0, ...): inputs (grad_output, self), linear
    in grad_output with a slope read from self alone, so its derivative is itself for grad_output and
    zeros_like(grad) for self, a tensor, so that a second gradient is zeros where torch's is (not None)."""
    call = f"{name}({{}}, self, {', '.join(params)})"
    return defop(name, inputs=("grad_output", "self"), params=params, grad_output=call.format("grad"),
                 self="zeros_like(grad)", jvp=call.format("grad_output_t"))


# Note [compiled on first use]
# A row's formulas, its JVP and its entry point are Python source generated from the row and compiled
# (Op.compile). Compiling all 400 rows took most of `import retrograd`'s time, while a program runs a
# few dozen ops, so finalize() only hands the rows the namespace formulas read (known once every family
# is loaded, as formulas call each other) and points each row at stand-ins: its first call
# (`Op._first_run`), its first node's backward (`OpNode.apply`) or its first tangent (`Op._first_jvp`)
# compiles the row and replaces them, so every later use runs the generated code directly.

_FORMULA_NAMESPACE: dict = {}


def finalize(namespace: dict) -> None:
    """Give every row the namespace its formulas read; each compiles on first use (Note [compiled on first use])."""
    _FORMULA_NAMESPACE.update(namespace)
    for op in OPS.values():
        op.defer_compile()
