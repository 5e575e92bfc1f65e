"""The in-place protocol: torch's refusals before an in-place write (`check_inplace`), then the write and
the history it gives self (`become`), or, for a write nothing records, its count (`mark_written`).
ops/__init__ binds the first two to Tensor as `_check_inplace` and `_become`; they live with the op table,
not in _tensor, because they rebase views (shape.py) and re-save outputs (registry.py)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, has_views, prune_views
from .._xp import namespace
from ..autograd import grad_mode
from ..autograd.forward_ad import transforms, write_tangent
from ..autograd.graph import before_inplace_write, move_retains_grad, saved_state
from .registry import resave_output, snapshot_saved_self
from .shape import check_inplace_view, rebase_view, regenerate_after_untracked_write


def check_inplace(self: Tensor, inputs: Iterable = (), memory: bool = True) -> None:
    """torch's refusals of an in-place change, in its order: leaves that require grad while recording,
    views (shape.check_inplace_view), then, for the ops whose kernels check it (`memory`: not fills
    and indexed writes), memory that the write would share with itself or with one of the op's
    `inputs` (_check_inplace_memory). Inference tensors are refused at the version bump, after the
    write (Note [inference tensors])."""
    if self._requires_grad and self._base is None and self.grad_fn is None and grad_mode._state.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if transforms.saved_hooks:
        before_inplace_write(self)
    if self._base is not None:
        check_inplace_view(self)
    if memory:
        _check_inplace_memory(self, inputs)


def become(self: Tensor, result: Tensor) -> Tensor:
    """Finish an in-place op: write `result` (computed out of place from self) into self's memory
    and take over its history, keeping what the new node saved of the old self valid."""
    data = self._data
    shape = result._data.shape
    if type(result) is not type(self) and getattr(result._data, "physical", None) is not None:
        shape = result._data.physical.shape  # vmap: a batched result for an unbatched self, torch's shapes
    if shape != data.shape:
        raise RuntimeError(f"output with shape {list(data.shape)} doesn't match the broadcast shape {list(shape)}")
    D.check_cast(result.dtype, self.dtype)
    node = result.grad_fn
    if node is not None and self._base is not None and not self._requires_grad:  # another input requires grad
        check_inplace_view(self, other_requires_grad=True)
    saved_state.inplace_target = None  # any in-place op that saves self has packed it by now
    if node is not None:
        snapshot_saved_self(node, self)
    if type(data) is not np.ndarray:  # the standard's write, in the target's dtype
        xp = namespace(data)
        data[...] = xp.astype(result._data, data.dtype)
    elif data.ndim == 0:
        data[()] = result._data
    elif data.dtype.kind == "V" and result._data.dtype != data.dtype:  # NumPy does not convert to complex32
        np.copyto(data, D.cast(result._data, self.dtype))
    else:
        np.copyto(data, result._data, casting="unsafe")
    self._bump_version()
    replaced_tangents = ()  # dual levels whose new tangent self's base must take out of place
    if result._extra is not None and result._extra.get("fw_grad"):  # forward AD: self takes the new tangent
        replaced_tangents = tuple(level_id for level_id, tangent in result._extra["fw_grad"].items()
                                  if not write_tangent(self, level_id, tangent))
    if node is not None:  # an unrecorded write leaves grad_fn unread: a stale view's raises (Note [stale views])
        old_node, old_nr = self.grad_fn, self._output_nr
        self.grad_fn = node
        self._output_nr = result._output_nr
        self._requires_grad = True
        move_retains_grad(self, old_node, old_nr)
    if (node is not None or replaced_tangents) and (
            self._base is not None or has_views(self)):  # a view, or a base that may have views
        rebase_view(self, node is not None, replaced_tangents)
    elif self._base is not None or has_views(self):
        regenerate_after_untracked_write(self)
    if getattr(node, "_result", None):
        resave_output(node, self)
    return self


def mark_written(tensor: Tensor) -> None:
    """After a write into a tensor's memory that autograd did not record (ops/__init__, Note [unrecorded in-place
    arithmetic], or an optimizer's NumPy step): count the change and update its live views, as an in-place op
    under no_grad does."""
    counter = tensor._vc
    if type(counter) is list:  # _bump_version's usual case, inline
        counter[0] += 1
        if len(counter) > 1 and tensor._base is None:  # a base whose views may all have died (a weight's step after
            prune_views(counter)  # its graph was freed): their references go, and with them the look for live ones
    else:  # no counter yet, or an inference tensor's
        tensor._bump_version()
        counter = tensor._vc
    if tensor._base is not None or type(counter) is list and len(counter) > 1:  # a view, or a base that may have
        regenerate_after_untracked_write(tensor)  # live views (has_views)


_SCALED_ADD_BLOCK = 131072  # elements per block (512 KiB of float32): measured as fast as one temporary


def scaled_add(data: np.ndarray, value: np.ndarray, alpha: float) -> None:
    """data += alpha * value for same-shape contiguous arrays, a block at a time: NumPy has no fused
    multiply-add, and this keeps the scaled operand in a block-sized scratch instead of a temporary the
    size of `value` (an optimizer step's add_(grad, alpha=-lr) then allocates nothing large)."""
    if data.size <= _SCALED_ADD_BLOCK:
        np.add(data, np.multiply(value, alpha), out=data)
        return
    flat, other = data.reshape(-1), value.reshape(-1)
    scratch = np.empty(_SCALED_ADD_BLOCK, data.dtype)
    for start in range(0, flat.size, _SCALED_ADD_BLOCK):
        block = flat[start:start + _SCALED_ADD_BLOCK]
        part = scratch[:block.size]
        np.multiply(other[start:start + block.size], alpha, out=part)
        np.add(block, part, out=block)



_OVERLAP_MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                   "single memory location. Please clone() the tensor before performing the operation.")


def _check_inplace_memory(out: Tensor, inputs: Iterable) -> None:
    """torch's refusals of an in-place op's memory: elements that share memory (an expanded tensor or an alias
    of one; empty ones are let be), then an input that reads memory the op partly writes
    (assert_no_partial_overlap): the written memory seen with other strides, or a window that overlaps it
    without being it. The tensor itself, or an alias with its very layout, is fine; layouts that are not a
    dense permutation are not looked at (torch's 'too hard')."""
    a = out._data
    if not hasattr(a, "strides"):  # an array API array: no memory layout to share (Note [choosing a namespace])
        return
    if a.size and 0 in a.strides and any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")
    for t in inputs:  # a batched input's array (a subclass) stands for a whole batch: vmap's rule checks it
        if isinstance(t, Tensor) and t is not out and type(t._data) is np.ndarray and a.size and t._data.size \
                and np.may_share_memory(a, t._data):
            b = t._data
            if _dense(a) and _dense(b):
                (a_lo, a_hi), (b_lo, b_hi) = _span(a), _span(b)
                same_span = a_lo == b_lo and a_hi == b_hi
                if same_span and a.strides != b.strides or not same_span and a_lo < b_hi and b_lo < a_hi:
                    raise RuntimeError(_OVERLAP_MESSAGE)


def _dense(a: np.ndarray) -> bool:
    """Non-overlapping and dense: the strides are a permutation of a contiguous layout's (torch's test)."""
    expected = a.itemsize
    for stride, n in sorted((s, n) for n, s in zip(a.shape, a.strides) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True


def _span(a: np.ndarray) -> tuple[int, int]:
    """First and one-past-last byte of a dense array's elements."""
    start = a.__array_interface__["data"][0]
    return start, start + a.size * a.itemsize
