"""Rule table: shape and view ops (OPS.md section F), as adjoint pairs.

View ops (`view=True`) return NumPy views that share memory and the version counter with their
input, and remember how they were made (`view_chain`), so an in-place change through a view
rewrites the base's history (`rebase_view`, torch's CopySlices).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._tensor import Tensor, _wrap_dim
from .registry import apply, defop

# ============================================================================================
# Rows
# ============================================================================================


@defop("view", params=("shape",), view=True, self="grad.reshape(self_shape)", jvp="self_t.view(shape)")
def view_op(xp, x, shape):
    out = x.view()
    try:
        out.shape = shape
    except AttributeError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead."
        ) from None
    return out


@defop("_unsafe_view", node="UnsafeViewBackward0", params=("shape",), self="grad.reshape(self_shape)",
       jvp="self_t.reshape(shape)")
def unsafe_view(xp, x, shape):
    return xp.reshape(x, shape).copy() if not x.flags.c_contiguous else xp.reshape(x, shape)


@defop("transpose", params=("dim0", "dim1"), view=True, self="grad.transpose(dim0, dim1)",
       jvp="self_t.transpose(dim0, dim1)")
def transpose_op(xp, x, dim0, dim1):
    return xp.swapaxes(x, dim0, dim1)


@defop("t", node="TBackward0", view=True, self="grad.t()", jvp="self_t.t()")
def t_op(xp, x):
    return x.T


@defop("permute", params=("dims",), view=True, self="grad.permute(inverse_permutation(dims))",
       jvp="self_t.permute(dims)")
def permute_op(xp, x, dims):
    return xp.transpose(x, dims)


@defop("squeeze", node="SqueezeBackward0", view=True, self="grad.reshape(self_shape)", jvp="self_t.squeeze()")
def squeeze_all(xp, x):
    return xp.squeeze(x)


@defop("squeeze_dim", node="SqueezeBackward1", params=("dim",), view=True, self="grad.reshape(self_shape)",
       jvp="self_t.squeeze(dim)")
def squeeze_dim(xp, x, dim):
    return xp.squeeze(x, dim) if x.ndim and x.shape[dim] == 1 else x.view()


@defop("squeeze_dims", node="SqueezeBackward2", params=("dims",), view=True, self="grad.reshape(self_shape)",
       jvp="self_t.squeeze(dims)")
def squeeze_dims(xp, x, dims):
    return xp.squeeze(x, tuple(d for d in dims if x.shape[d] == 1)) if x.ndim else x.view()


@defop("unsqueeze", params=("dim",), view=True, self="grad.squeeze(dim)", jvp="self_t.unsqueeze(dim)")
def unsqueeze_op(xp, x, dim):
    return xp.expand_dims(x, dim)


@defop("expand", params=("shape",), view=True, self="sum_to(grad, self_shape)", jvp="self_t.expand(shape)")
def expand_op(xp, x, shape):
    return xp.broadcast_to(x, shape)


@defop("clone", params=("memory_format",), self="grad", jvp="self_t.clone()")
def clone_op(xp, x, memory_format):
    return x.copy()


@defop("_to_copy", node="ToCopyBackward0", params=("dtype",), self="grad.to(self_dtype)", jvp="self_t.to(dtype)")
def to_copy(xp, x, dtype):
    return x.astype(dtype)


@defop("cat", inputs=("*tensors",), params=("dim",),
       tensors="grad.split([s[dim] if len(s) else 0 for s in tensors_shape], dim)",
       jvp="cat(tensors_t, dim)")
def cat_op(xp, arrays, dim):
    return xp.concatenate(arrays, axis=dim)


@defop("stack", inputs=("*tensors",), params=("dim",), tensors="grad.unbind(dim)", jvp="stack(tensors_t, dim)")
def stack_op(xp, arrays, dim):
    return xp.stack(arrays, axis=dim)


@defop("unbind", params=("dim",), view=True, outputs=-1, self="stack(grads, dim)", jvp="self_t.unbind(dim)")
def unbind_op(xp, x, dim):
    return tuple(xp.moveaxis(x, dim, 0))


@defop("split_with_sizes", node="SplitBackward0", params=("sizes", "dim"), view=True, outputs=-1,
       self="cat(grads, dim)", jvp="self_t.split(sizes, dim)")
def split_op(xp, x, sizes, dim):
    bounds = np.cumsum(sizes)[:-1].tolist()
    return tuple(xp.split(x, bounds, axis=dim))


@defop("select", params=("dim", "index"), view=True, self="select_backward(grad, self_shape, dim, index)",
       jvp="self_t.select(dim, index)")
def select_op(xp, x, dim, index):
    return x[(slice(None),) * dim + (index,)]


@defop("select_backward", node="SelectBackwardBackward0", inputs=("grad_output",),
       params=("input_sizes", "dim", "index"), grad_output="grad.select(dim, index)",
       jvp="select_backward(grad_output_t, input_sizes, dim, index)")
def select_backward(xp, g, input_sizes, dim, index):
    out = xp.zeros(input_sizes, dtype=g.dtype)
    out[(slice(None),) * dim + (index,)] = g
    return out


@defop("slice", params=("dim", "start", "end", "step"), view=True,
       self="slice_backward(grad, self_shape, dim, start, end, step)", jvp="self_t.narrow_slice(dim, start, end, step)")
def slice_op(xp, x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step),)]


@defop("slice_backward", node="SliceBackwardBackward0", inputs=("grad_output",),
       params=("input_sizes", "dim", "start", "end", "step"),
       grad_output="slice_op(grad, dim, start, end, step)",
       jvp="slice_backward(grad_output_t, input_sizes, dim, start, end, step)")
def slice_backward(xp, g, input_sizes, dim, start, end, step):
    out = xp.zeros(input_sizes, dtype=g.dtype)
    out[(slice(None),) * dim + (slice(start, end, step),)] = g
    return out


@defop("copy_slices", node="CopySlices", inputs=("self", "src"), params=("chain", "keep"),
       self="grad * keep", src="replay_view(chain, grad)", jvp="self_t * keep + scatter_view(chain, src_t, self_t)")
def copy_slices(xp, base, src, chain, keep):
    return base  # the write already happened through the view; this node only records it


# ============================================================================================
# Formula helpers
# ============================================================================================


def inverse_permutation(dims: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def sum_to(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a broadcast gradient to `shape` (the adjoint of expand)."""
    from .registry import sum_to as _sum_to

    return _sum_to(grad, tuple(shape))


def replay_view(chain: tuple, t: Tensor) -> Tensor:
    """Apply to `t` the view ops that made a view from its base."""
    for op, params, output in chain:
        t = apply(op, (t,), params)
        if output is not None:
            t = t[output]
    return t


def scatter_view(chain: tuple, src: Tensor, base: Tensor) -> Tensor:
    out = base.clone()
    from ..autograd import grad_mode

    with grad_mode.no_grad():
        replay_view(chain, out)._data[...] = src._data
    return out


def rebase_view(view: Tensor) -> None:
    """After an in-place op wrote through `view`, record the write on its base (CopySlices) and
    regenerate the view's own history from the new base, as torch does."""
    from .. import no_grad

    base = view._base
    chain = view._extra["view_chain"]
    with no_grad():
        mask = np.zeros(base._data.shape, dtype=bool)
        region = replay_view(chain, _tensor_of(mask))
        region._data[...] = True
    keep = _tensor_of((~mask).astype(base._data.dtype))
    node_holder = apply(copy_slices, (base, view), (chain, keep))
    base.grad_fn, base._output_nr, base._requires_grad = node_holder.grad_fn, 0, True
    fresh = replay_view(chain, base)
    view.grad_fn, view._output_nr = fresh.grad_fn, fresh._output_nr


def _tensor_of(array: np.ndarray) -> Tensor:
    from .._tensor import _wrap

    return _wrap(array)


# ============================================================================================
# Public functions
# ============================================================================================


def _infer_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    """Resolve a single -1 in a target shape, with torch's error for impossible shapes."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view(input: Tensor, *shape: int) -> Tensor:
    """The same memory seen with another shape (no copy; errors when impossible)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, Sequence)):
        return input.to(shape[0])
    return apply(view_op, (input,), (_infer_shape(shape, input._data.size),))


def reshape(input: Tensor, *shape: int) -> Tensor:
    """A view when the memory layout allows it, else a copy (UnsafeViewBackward0), as torch."""
    target = _infer_shape(shape, input._data.size)
    arr = input._data
    trial = arr.view()
    try:
        trial.shape = target
    except AttributeError:
        return apply(unsafe_view, (input.clone(),), (target,))
    return apply(view_op, (input,), (target,))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s = _wrap_dim(start_dim, len(shape))
    e = _wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    sizes = _infer_shape(tuple(sizes), shape[d])
    return view(input, shape[:d] + sizes + shape[d + 1:])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims (a view)."""
    n = input._data.ndim
    return apply(transpose_op, (input,), (_wrap_dim(dim0, n), _wrap_dim(dim1, n)))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (0-d and 1-d tensors are returned as they are, as a view)."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return apply(t_op, (input,))


def permute(input: Tensor, *dims: int) -> Tensor:
    """Reorder dims (a view)."""
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    return apply(permute_op, (input,), (tuple(_wrap_dim(d, n) for d in dims),))


def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dims (all, or the given ones when they have size 1)."""
    n = input._data.ndim
    if dim is None:
        return apply(squeeze_all, (input,))
    if isinstance(dim, int):
        return apply(squeeze_dim, (input,), (_wrap_dim(dim, n),))
    return apply(squeeze_dims, (input,), (tuple(_wrap_dim(d, n) for d in dim),))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim`."""
    return apply(unsqueeze_op, (input,), (_wrap_dim(dim, input._data.ndim + 1),))


def expand(input: Tensor, *sizes: int) -> Tensor:
    """Broadcast size-1 dims to `sizes` without copying (-1 keeps a dim)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
                           "provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)"
                           % (len(sizes), len(shape)))
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            target.append(s)
            continue
        cur = shape[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shape)}")
        target.append(s)
    return apply(expand_op, (input,), (tuple(target),))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return expand(input, tuple(size))


def contiguous(input: Tensor, memory_format: object = None) -> Tensor:
    """self when already contiguous, else a contiguous copy."""
    return input if input._data.flags.c_contiguous else apply(clone_op, (input,), (None,))


def clone(input: Tensor, *, memory_format: object = None) -> Tensor:
    """A copy with its own memory that stays in the graph (CloneBackward0)."""
    return apply(clone_op, (input,), (memory_format,))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (1-d empty tensors are skipped, as torch allows)."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    ref = next((t for t in tensors if t._data.shape != (0,)), tensors[0])
    d = _wrap_dim(dim, ref._data.ndim)
    kept = [t for t in tensors if t._data.shape != (0,) or t is ref]
    for i, t in enumerate(kept):
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref._data.ndim} and {t._data.ndim}")
        for k, (a, b) in enumerate(zip(ref._data.shape, t._data.shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got "
                                   f"size {b} for tensor number {i} in the list.")
    kept = _promote_all(kept)
    return apply(cat_op, (kept,), (d,))


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    tensors = _promote_all(tensors)
    return apply(stack_op, (tensors,), (_wrap_dim(dim, tensors[0]._data.ndim + 1),))


def _promote_all(tensors: list[Tensor]) -> list[Tensor]:
    from .. import _dtype as D

    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    return [t if t.dtype is dt else t.to(dt) for t in tensors]


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into the slices along `dim`, removing it."""
    d = _wrap_dim(dim, input._data.ndim)
    return apply(unbind_op, (input,), (d,))


def split(input: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Chunks of `split_size` along dim (the last may be smaller), or of the given sizes."""
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if size > 0 else [n]
        if n == 0:
            sizes = [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    return apply(split_op, (input,), (tuple(sizes), d))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into `chunks` nearly equal parts (ceil-sized, as torch)."""
    n = input._data.shape[_wrap_dim(dim, input._data.ndim)]
    size = max(-(-n // chunks), 1)
    return split(input, size, dim)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, removing the dim (a view)."""
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return apply(select_op, (input,), (d, index + size if index < 0 else index))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements start..start+length along dim (a view)."""
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if start < 0:
        start += size
    if start < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return apply(slice_op, (input,), (d, start, start + length, 1))


def narrow_slice(input: Tensor, dim: int, start: int | None, end: int | None, step: int | None) -> Tensor:
    return apply(slice_op, (input,), (dim, start, end, step))


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dims to new positions (a permute)."""
    n = input._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_wrap_dim(s, n) for s in src]
    dst = [_wrap_dim(s, n) for s in dst]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


__all__ = ["broadcast_to", "cat", "chunk", "clone", "concat", "concatenate", "contiguous", "expand", "expand_as", "flatten", "movedim", "moveaxis", "narrow", "permute", "reshape", "select", "split", "squeeze", "stack", "swapaxes", "swapdims", "t", "transpose", "unbind", "unflatten", "unsqueeze", "view"]
