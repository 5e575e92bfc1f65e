"""torch.func: composable function transforms.

`grad`, `grad_and_value` and `vjp` differentiate with the ordinary reverse-mode engine, `jvp`
with forward-mode dual levels of its own, `vmap` with batched tensors; `jacrev` is vmap over
vjp, `jacfwd` vmap over jvp, `hessian` jacfwd over jacrev, `linearize` jvp at fixed primals. They
nest in any order (Note [transforms in transforms]). `functional_call` runs a module with other
parameters; `stack_module_state` stacks several modules' for an ensemble under vmap.

This package sits above the core and nn: it reads the package face and nn's module classes, and
nothing below imports it at load time.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .. import eye, ones_like, stack, zeros, zeros_like
from .._tensor import Size, Tensor
from ..autograd import batched, forward_ad, grad_mode
from ..autograd import grad as autograd_grad
from ..autograd.batched import _flatten, _reaches, _unflatten, vmap
from ..autograd.graph import disable_saved_tensors_hooks
from ..nn.modules.batchnorm import _BatchNorm

# Note [transforms in transforms]
# grad / vjp differentiate with the one autograd engine, so they must not confuse their own
# inputs with an outer grad's: each call differentiates fresh aliases of its inputs (views, so
# an outer grad or an outer dual level still reaches through them), and returns results cut
# from those aliases unless something outside asked for a graph (an input that requires grad,
# or a tensor the function closes over). Inside vmap, an input that is not batched is first
# expanded along every running level, so each example gets its own gradient (per-example
# gradients), and the engine runs on the physical tensors that hold the whole batch.


def _check_tensor(x: Any) -> None:
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _lift(x: Tensor) -> tuple[Tensor, Tensor]:
    """(the alias f sees, the plain tensor the engine differentiates)."""
    _check_tensor(x)
    levels = batched.transforms.vmap
    physical = batched.lift(x, levels)._physical if levels else x
    alias = physical.view_as(physical)
    if not alias.requires_grad:
        alias.requires_grad_()
    return batched.make(alias, levels), alias


# the aliases of transforms that have returned: an outer transform's result may still lead to them (an inner
# grad's value or aux, kept for the outer one), but they are no one's input any more, so they are not "outside"
_FINISHED_ALIASES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> alias


def _reaches_outside(outputs: Sequence[Tensor], aliases: Sequence[Tensor]) -> bool:
    """Whether the graph of `outputs` depends on something that requires grad besides `aliases` and the aliases of
    finished inner transforms (an outer grad differentiates through our results: they must keep their graph)."""
    if any(a.grad_fn is not None for a in aliases):
        return True
    own = {id(a) for a in aliases}
    return any(o.grad_fn is not None and _reaches(o, lambda leaf: leaf.grad_fn is None and id(leaf) not in own
                                                  and _FINISHED_ALIASES.get(id(leaf)) is not leaf)
               for o in outputs)


def _cut(t: Any, keep_graph: bool) -> Any:
    """A result without the graph through our aliases (tangents and batching stay)."""
    if keep_graph or not isinstance(t, Tensor):
        return t
    cut = t.detach()  # not a view made under no_grad: that would still require grad, as torch's does
    source, target = (t._physical, cut._physical) if batched.is_batched(t) else (t, cut)
    for level in forward_ad.transforms.levels:
        tangent = forward_ad.get_tangent(source, level)
        if tangent is not None:
            forward_ad.set_tangent(target, level, tangent)
    return cut


def _physical_pair(output: Tensor, cotangent: Any, levels: tuple) -> tuple[Tensor, Any]:
    """The engine's view of an output and its cotangent: the vmap levels of the call exited."""
    if not levels:
        return output, cotangent
    return batched.align(batched.lift(output, levels), levels, full=True), \
        None if cotangent is None else batched.to_physical(cotangent, levels)


def _vjp_core(func: Callable, primals: tuple, has_aux: bool, context: str) -> tuple:
    """Run func on lifted primals: (outputs, aux, aliases, primals, keep_graph, vmap levels)."""
    levels = batched.transforms.vmap
    flat, spec = _flatten(primals)
    lifted = [_lift(x) for x in flat]
    inner = _unflatten([f for f, _ in lifted], spec)
    aliases = [a for _, a in lifted]
    tracking = forward_ad.Tracking()
    tracking.originals = {id(a): (a, x) for a, x in zip(aliases, flat)}
    forward_ad.push_transform(tracking)
    try:
        with grad_mode.enable_grad():
            result = func(*inner)
    finally:
        forward_ad.pop_transform(tracking)
    aux = None
    if has_aux:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise RuntimeError(f"{context}: output of function f should be a tuple: (output, aux) if has_aux is True")
        result, aux = result
        for leaf in _flatten(aux)[0]:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    outs = [o for o in _flatten(result)[0] if isinstance(o, Tensor)]
    keep = _keeps_graph(outs, aliases, levels)
    if has_aux:  # aux leaves the transform as the value does: without the graph through our aliases
        leaves, aux_spec = _flatten(aux)
        aux = _unflatten([_cut(a, _keeps_graph([a], aliases, levels)) for a in leaves], aux_spec)
    _FINISHED_ALIASES.update((id(a), a) for a in aliases)
    return result, aux, aliases, flat, keep, levels


def _keeps_graph(outputs: list, aliases: list, levels: tuple) -> bool:
    """Whether outputs of the transformed function keep their graph: some lead to tensors outside the transform
    that require grad (an outer transform's or the caller's), under grad mode."""
    return grad_mode.is_grad_enabled() and _reaches_outside([_physical_pair(o, None, levels)[0] for o in outputs],
                                                            aliases)


def _engine_grads(outputs: list, cotangents: list, core: tuple, retain: bool) -> list:
    """d(outputs)/d(primals) weighted by cotangents, zeros where unused, batched like the primals."""
    _, _, aliases, primals, keep, levels = core
    pairs = [_physical_pair(o, c, levels) for o, c in zip(outputs, cotangents)]
    pairs = [(o, c) for o, c in pairs if o.requires_grad]
    grads = [None] * len(aliases)
    if pairs:
        grads = list(autograd_grad([o for o, _ in pairs], aliases, [c for _, c in pairs], retain_graph=retain,
                                   create_graph=keep, allow_unused=True))
    out = []
    for g, x in zip(grads, primals):
        if g is None:
            out.append(zeros_like(x))
        else:
            out.append(batched.from_physical(g, levels) if levels else g)
    return out


def _argnums_of(argnums: int | tuple, args: tuple) -> tuple:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        numbers = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        numbers = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in numbers:
        if not -len(args) <= a < len(args):
            raise RuntimeError(f"Got argnum={a}, but only {len(args)} positional inputs")
    return tuple(a % len(args) for a in numbers)


def _split_args(argnums: int | tuple, args: tuple) -> tuple[tuple, Callable]:
    """The differentiated arguments, and f's arguments rebuilt around new values for them."""
    numbers = _argnums_of(argnums, args)

    def rebuild(values: tuple) -> tuple:
        out = list(args)
        for n, v in zip(numbers, values):
            out[n] = v
        return tuple(out)

    return tuple(args[n] for n in numbers), rebuild


_SAVED_HOOKS_MESSAGE = ("torch.func.{grad, vjp, jacrev, hessian} don't yet support saved tensor hooks. Please open an "
                        "issue with your use case.")


def _refusing_saved_tensor_hooks(transform: Callable) -> Callable:
    """`transform` run where saved-tensor hooks raise, as torch's grad and vjp do: setting them inside f (a
    checkpoint without reentry does) or calling the transform while some are set raises torch's message."""

    @functools.wraps(transform)
    def run(*args: Any, **kwargs: Any) -> Any:
        with disable_saved_tensors_hooks(_SAVED_HOOKS_MESSAGE):
            return transform(*args, **kwargs)

    return run


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """Like `grad`, also returning the value: `(grad, value)` (or `(grad, (value, aux))`).

    >>> grad_and_value(lambda x: (x ** 2).sum())(torch.tensor([1.0, 2.0]))
    (tensor([2., 4.]), tensor(5.))
    """

    @functools.wraps(func)
    @_refusing_saved_tensor_hooks
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        context = "grad_and_value(f)(*args)"
        diff, rebuild = _split_args(argnums, args)
        core = _vjp_core(lambda *d: func(*rebuild(d), **kwargs), diff, has_aux, context)
        output, aux, keep = core[0], core[1], core[4]
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{context}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.ndim != 0:
            raise RuntimeError(f"{context}: Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{output.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        grads = _engine_grads([output], [ones_like(output)], core, retain=keep)
        grads = [_cut(g, keep) for g in grads]
        tree = _unflatten(grads, _flatten(diff)[1])
        result = tree[0] if isinstance(argnums, int) else tree
        value = _cut(output, keep)
        return (result, (value, aux)) if has_aux else (result, value)

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function with respect to its argument(s) number `argnums`.

    >>> grad(torch.sin)(torch.tensor(0.0))
    tensor(1.)
    >>> grad(grad(torch.sin))(torch.tensor(0.0))   # -sin(0)
    tensor(-0.)
    """
    value_and_grad = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = value_and_grad(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


@_refusing_saved_tensor_hooks
def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """`(func(*primals), vjp_fn)`: vjp_fn(cotangents) gives the vector-Jacobian products.

    >>> out, vjp_fn = vjp(torch.sin, x)
    >>> vjp_fn(torch.ones_like(out))   # (cos(x),)
    """
    core = _vjp_core(func, primals, has_aux, "vjp(f, *primals)")
    output, aux, keep = core[0], core[1], core[4]
    out_leaves, out_spec = _flatten(output)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f(*primals) to return only tensors, got unsupported "
                               f"type {type(o)}")

    def vjp_fn(*cotangents: Any) -> tuple:
        if len(cotangents) == 1 and not isinstance(output, tuple):
            tree = cotangents[0]
        else:
            tree = cotangents[0] if len(cotangents) == 1 and isinstance(cotangents[0], tuple) else cotangents
        leaves, spec = _flatten(tree)
        if len(leaves) != len(out_leaves):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {batched._spec_text(spec)}, primal output: "
                               f"{batched._spec_text(out_spec)}")
        for i, (o, c) in enumerate(zip(out_leaves, leaves)):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {Size(c.shape)} and "
                                   f"output[{i}] has a shape of {Size(o.shape)}.")
        grads = _engine_grads(out_leaves, leaves, core, retain=True)
        return _unflatten([_cut(g, keep) for g in grads], _flatten(primals)[1])

    cut_output = _unflatten([_cut(o, keep) for o in out_leaves], out_spec)
    return (cut_output, vjp_fn, aux) if has_aux else (cut_output, vjp_fn)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """`(func(*primals), J @ tangents)` in one forward pass (forward-mode AD at a level of its own).

    >>> jvp(torch.sin, (x,), (torch.ones_like(x),))   # (sin(x), cos(x))
    """
    context = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{context}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, spec_p = _flatten(primals)
    flat_t, spec_t = _flatten(tangents) if isinstance(tangents, (tuple, list)) else ([tangents], None)
    if spec_p != spec_t:
        raise RuntimeError(f"{context}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{batched._spec_text(spec_p)} and tangents with structure {batched._spec_text(spec_t)}")
    for p in flat_p:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{context}: Expected primals to only contain Tensors, got {type(p)}")
    for t in flat_t:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{context}: Expected tangents to only contain Tensors, got {type(t)}")
    level = forward_ad._push_level()
    tracking = forward_ad.Tracking(dual=level)
    forward_ad.push_transform(tracking)
    try:
        duals = [forward_ad.make_dual_at(p, t, level) for p, t in zip(flat_p, flat_t)]
        result = func(*_unflatten(duals, spec_p))
        aux = None
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{context}: output of function f should be a tuple: (output, aux) if has_aux "
                                   "is True")
            result, aux = result
        leaves, spec = _flatten(result)
        outs, tans = [], []
        for o in leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{context}: expected f(*primals) to return only tensors, got unsupported type "
                                   f"{type(o)}")
            primal, tangent = forward_ad.unpack_dual_at(o, level)
            outs.append(primal)
            tans.append(tangent)
    finally:
        forward_ad.pop_transform(tracking)
        forward_ad._pop_level(level)
    tans = [zeros_like(o) if t is None else t for o, t in zip(outs, tans)]
    pair = (_unflatten(outs, spec), _unflatten(tans, spec))
    return pair + (aux,) if has_aux else pair


def _basis(shapes: list, like: Tensor) -> tuple[list, int]:
    """The standard basis of the flattened tensors of `shapes`: one batch of N unit tensors per
    shape (N = total numel), block k holding the identity for shape k."""
    sizes = [math.prod(s) for s in shapes]
    total = sum(sizes)
    basis, start = [], 0
    for shape, n in zip(shapes, sizes):
        block = zeros((total, n), dtype=like.dtype)
        if n:
            block[start:start + n] = eye(n, dtype=like.dtype)
        basis.append(block.reshape((total,) + tuple(shape)))
        start += n
    return basis, total


def _jacobian_tree(columns: list, out_spec: Any, in_spec: Any, argnums: int | tuple) -> Any:
    """Arrange jac[o][i] (shape out_o.shape + in_i.shape) as torch.func does: by output, then
    by argument (a tensor when argnums is an int)."""
    per_out = []
    for row in columns:
        parts = _unflatten(row, in_spec)
        per_out.append(parts[0] if isinstance(argnums, int) else parts)
    return _unflatten(per_out, out_spec)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian by reverse mode: one vjp per output element, vectorised with vmap.

    >>> jacrev(torch.sin)(x)   # diag(cos(x))
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        diff, rebuild = _split_args(argnums, args)
        result = vjp(lambda *d: func(*rebuild(d), **kwargs), *diff, has_aux=has_aux)
        output, vjp_fn = result[0], result[1]
        out_leaves, out_spec = _flatten(output)
        in_leaves, in_spec = _flatten(diff)
        basis, total = _basis([tuple(o.shape) for o in out_leaves], out_leaves[0])
        if total == 0:
            columns = [[zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype) for x in in_leaves] for o in out_leaves]
        else:
            rows = vmap(lambda *cots: _flatten(vjp_fn(_unflatten(list(cots), out_spec)))[0],
                        chunk_size=chunk_size)(*basis)
            columns, start = [], 0
            for o in out_leaves:
                n = o.numel()
                columns.append([r[start:start + n].reshape(tuple(o.shape) + tuple(x.shape))
                                for r, x in zip(rows, in_leaves)])
                start += n
        jac = _jacobian_tree(columns, out_spec, in_spec, argnums)
        return (jac, result[2]) if has_aux else jac

    return wrapper


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian by forward mode: one jvp per input element, vectorised with vmap.

    >>> jacfwd(torch.sin)(x)   # diag(cos(x))
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        diff, rebuild = _split_args(argnums, args)
        in_leaves, in_spec = _flatten(diff)
        for x in in_leaves:
            _check_tensor(x)
        basis, _ = _basis([tuple(x.shape) for x in in_leaves], in_leaves[0])

        def push(*tangents: Tensor) -> Any:
            out = jvp(lambda *d: func(*rebuild(d), **kwargs), diff, _unflatten(list(tangents), in_spec),
                      has_aux=has_aux)
            return (out[1], out[0], out[2]) if has_aux else (out[1], out[0])

        # the primal output (and aux) is the same for every basis vector; under vmap it may still be
        # batched (Note [transforms in transforms]), so it comes back batched and example 0 is kept
        pushed = vmap(push, randomness=randomness)(*basis)
        tangents = pushed[0]
        output = _unflatten([o[0] for o in _flatten(pushed[1])[0]], _flatten(pushed[1])[1])
        out_leaves, out_spec = _flatten(output)
        tan_leaves = _flatten(tangents)[0]
        columns = []
        for o, t in zip(out_leaves, tan_leaves):  # t: (total, *o.shape) -> o.shape + x.shape per input
            moved = t.movedim(0, -1) if t.ndim else t
            row, start = [], 0
            for x in in_leaves:
                n = x.numel()
                row.append(moved[..., start:start + n].reshape(tuple(o.shape) + tuple(x.shape)))
                start += n
            columns.append(row)
        jac = _jacobian_tree(columns, out_spec, in_spec, argnums)
        if has_aux:
            aux_leaves, aux_spec = _flatten(pushed[2])
            return jac, _unflatten([a[0] for a in aux_leaves], aux_spec)
        return jac

    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of a scalar function: jacfwd of jacrev (forward-over-reverse).

    >>> hessian(lambda x: (x ** 3).sum())(x)   # diag(6 x)
    """
    return jacfwd(jacrev(func, argnums), argnums)


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module` with the given tensors in place of its parameters and buffers (by dotted
    name), then put its own back.

    >>> functional_call(model, {"weight": w, "bias": b}, (x,))
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (list, tuple)):
        merged: dict = {}
        for d in dicts:
            for key in d:
                if key in merged:
                    raise ValueError(f"{key} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
            merged.update(d)
        dicts = merged
    values = dict(dicts)
    if tie_weights:
        values = _tied(module, values)
    if strict:
        _check_strict(module, values)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    saved: dict = {}
    try:
        for name, value in values.items():
            saved[name] = _swap(module, name, value)
        return module(*args, **(kwargs or {}))
    finally:
        last = {name: _swap(module, name, old) for name, old in saved.items()}
        dicts.update({name: last[name] for name in dicts if name in last})


# Note [functional_call's swaps]
# As torch's stateless._reparametrize_module, a name that is not a parameter or buffer is set by setattr, so a
# parametrized tensor's name ("weight" of a weight_norm'd layer) goes through its right_inverse (the originals take
# the value under no_grad, and the swap back stores the module's own weight the same way), and a plain tensor
# attribute is replaced. What the module holds at the end is written back into the caller's dict (one dict, not a
# merged list of them) under the names it gave: a forward that reassigns a buffer (`self.count = self.count + 1`)
# hands the new tensor to the caller.

_ABSENT = object()


def _swap(module: Any, name: str, value: Any) -> Any:
    """Put `value` at dotted `name` in module (Note [functional_call's swaps]); returns what was there (_ABSENT if
    nothing)."""
    if value is not _ABSENT and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of torch.Tensor")
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    for table in ("_parameters", "_buffers"):
        entries = owner.__dict__.get(table)
        if entries is not None and leaf in entries:
            old = entries[leaf]
            if value is _ABSENT:
                del entries[leaf]
            else:
                entries[leaf] = value
            return old
    old = getattr(owner, leaf) if hasattr(owner, leaf) else _ABSENT
    if old is not _ABSENT and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{leaf}`: {old} is not an instance of torch.Tensor")
    if value is not _ABSENT:
        setattr(owner, leaf, value)
    elif hasattr(owner, leaf):
        delattr(owner, leaf)
    return old


def _tied(module: Any, values: dict) -> dict:
    """Names sharing one tensor in the module share the value given for any of them."""
    groups: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), []).append(name)
    out = dict(values)
    for names in groups.values():
        given = [n for n in names if n in values]
        if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. Consider using "
                             "tie_weights=False")
        if given:
            for n in names:
                out.setdefault(n, values[given[0]])
    return out


def _check_strict(module: Any, values: dict) -> None:
    """strict=True: torch's RuntimeError when `values` misses a parameter or buffer name (tied names each count) or
    has a name that is neither; each list sorted, as torch's NamedMemberAccessor.check_keys gives them."""
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)} | {
        n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(names - set(values)), sorted(set(values) - names)
    parts = []
    if unexpected:
        parts.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        parts.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if parts:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(parts))


def linearize(func: Callable, *primals: Any) -> tuple[Any, Callable]:
    """`(func(*primals), jvp_fn)`, where `jvp_fn(*tangents)` is the Jacobian-vector product at `primals`.

    torch traces the JVP once into a graph; retrograd has no tracer, so each `jvp_fn` call runs `func`
    forward again at the same primals with the tangents (same numbers, a forward pass more per call).

    >>> out, jvp_fn = linearize(torch.sin, x); jvp_fn(torch.ones_like(x))   # cos(x)
    """
    output = func(*primals)
    flat_primals, spec = _flatten(primals)

    def jvp_fn(*tangents: Any) -> Any:
        flat_tangents, tangent_spec = _flatten(tangents)
        if tangent_spec != spec:
            raise RuntimeError(f"Expected the tangents {batched._spec_text(tangent_spec)} to have the same argspec as "
                               f"the primals {batched._spec_text(spec)}")
        for i, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            for what in ("shape", "device", "dtype"):
                if getattr(t, what) != getattr(p, what):
                    raise RuntimeError(f"tangent:{i} with {what} {getattr(t, what)} in flattened pytree doesn't "
                                       f"match the {what} {getattr(p, what)} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def stack_module_state(models: Sequence[Any]) -> tuple[dict, dict]:
    """The parameters and buffers of same-class modules stacked along a new first dimension, by state-dict
    name, for `vmap` over `functional_call` (an ensemble); stacked parameters are new leaves that require grad.

    >>> params, buffers = stack_module_state(models)
    >>> vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    return _stacked([dict(m.named_parameters()) for m in models]), _stacked([dict(m.named_buffers()) for m in models])


def _stacked(states: list[dict]) -> dict:
    """Each name's tensors in the models' `states` stacked: a new leaf requiring grad when each of them does."""
    stacked = {}
    for name in states[0]:
        tensors = [state[name] for state in states]
        flags = {t.requires_grad for t in tensors}
        if len(flags) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        stacked[name] = stack(tensors).detach().requires_grad_() if flags == {True} else stack(tensors)
    return stacked


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Make every batch norm in `root` use its batch's statistics and keep no running ones (its running_mean,
    running_var and num_batches_tracked become None), in place, so that vmap need not write to shared buffers."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root


__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev",
           "jvp", "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """torch.func.functionalize: `func` with its in-place ops made out-of-place for a tracer. retrograd traces
    nothing, so the function runs as written; what a caller sees is torch's: the same values, a mutated input
    is mutated, and no output shares memory with an input (such an output comes back as a copy)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        memory = {id(t._base if t._base is not None else t)
                  for t in _flatten((args, kwargs))[0] if isinstance(t, Tensor)}
        flat, spec = _flatten(func(*args, **kwargs))
        return _unflatten([t.clone() if isinstance(t, Tensor) and id(t._base if t._base is not None else t) in memory
                           else t for t in flat], spec)

    return functionalized


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The tensor inside vmap's batching: the whole batch, one leading dim per level (recurse=False: only the
    innermost level's). A tensor that is not batched comes back as it is."""
    if not batched.is_batched(tensor):
        return tensor
    return tensor._physical if recurse else batched.to_physical(tensor, batched.levels_of(tensor)[-1:])

