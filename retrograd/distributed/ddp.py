"""DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): one model replica per rank,
gradients averaged over the ranks while backward runs.

At construction the ranks check that they hold the same parameters and take rank 0's parameter and
buffer values. The parameters are laid into buckets (in reverse order, as gradients arrive; the first
bucket 1 MiB when bucket_cap_mb is left at its default, the others `bucket_cap_mb`), each a flat array;
torch also rebuilds its buckets in the order the first iteration's gradients came, these stay. A
post-accumulate-grad hook on each parameter copies its fresh gradient (divided by the world size)
into its bucket; a bucket whose gradients are all in starts its MPI all-reduce at once, in bucket
order on every rank, so
communication overlaps the rest of backward. A callback queued on the engine waits for the
all-reduces at the end of backward and writes the averages into `.grad`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import _creation as C
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.engine import queue_callback
from ..autograd.graph import AccumulateGrad
from ..nn.modules.module import Module
from . import distributed_c10d as c10d

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES
_BUCKET_CAP_MB = 25

_UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that "
    "your module has parameters that were not used in producing loss. You can enable unused parameter detection by "
    "passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and "
    "by \nmaking sure all `forward` function outputs participate in calculating loss. \nIf you already have done the "
    "above, then the distributed data parallel module wasn't able to locate the output tensors in the return value "
    "of your module's `forward` function. Please include the loss function and the structure of the return value of "
    "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\nParameter indices which did "
    "not receive grad for rank {rank}: {indices}"
)


class _Bucket:
    """Some parameters' gradients side by side in one flat array, all-reduced as one message."""

    def __init__(self, indices: list[int], params: list[Tensor]) -> None:
        self.indices = indices
        sizes = [params[i].numel() for i in indices]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        self.flat = np.empty(self.offsets[-1], dtype=params[indices[0]].detach().numpy().dtype)
        self.pending = len(indices)
        self.request: Any = None

    def slot(self, position: int) -> np.ndarray:
        return self.flat[self.offsets[position]:self.offsets[position + 1]]


def _bucket_assignment(params: list[Tensor], first_cap_bytes: int, cap_bytes: int) -> list[list[int]]:
    """torch's compute_bucket_assignment_by_size: parameters in reverse order, one dtype per bucket, a bucket
    closed once it holds at least its limit (`first_cap_bytes` for the first, `cap_bytes` after)."""
    buckets: list[list[int]] = []
    open_buckets: dict[Any, tuple[list[int], int]] = {}
    for index in reversed(range(len(params))):
        dtype = params[index].dtype
        indices, size = open_buckets.get(dtype, ([], 0))
        indices.append(index)
        size += params[index].numel() * params[index].element_size()
        limit = first_cap_bytes if not buckets else cap_bytes
        if size >= limit:
            buckets.append(indices)
            open_buckets.pop(dtype, None)
        else:
            open_buckets[dtype] = (indices, size)
    buckets.extend(indices for indices, _ in open_buckets.values())
    return buckets


def _leaves_reached(outputs: Any) -> set[int]:
    """The ids of the leaves whose gradients the outputs' graphs reach (find_unused_parameters)."""
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
        stack.extend(child for child, _ in node.next_functions)
    return leaves


def _tensors_in(value: Any) -> Iterator[Tensor]:
    """The tensors inside a forward's return value (tensors, sequences, dicts), as torch's _find_tensors."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)


class DistributedDataParallel(Module):
    """Wrap `module` so each rank trains a replica on its share of the batch and gradients are averaged.

    CPU only (device_ids and output_device must be None). gradient_as_bucket_view, static_graph and
    check_reduction are accepted; the gradients are the same, kept in their own memory.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, **unsupported: Any) -> None:
        super().__init__()
        if unsupported:
            raise TypeError(f"DistributedDataParallel: retrograd does not support {', '.join(unsupported)}")
        if device_ids or output_device is not None:
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {{cpu}}.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.module = module
        self.process_group = c10d._group(process_group)
        self.dim, self.broadcast_buffers = dim, broadcast_buffers
        self.find_unused_parameters, self.static_graph = find_unused_parameters, static_graph
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._params = params
        self._verify_same_model()
        if init_sync:
            self._broadcast([*module.parameters(), *module.buffers()])
        cap = int((_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        first_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else cap  # torch's smaller first bucket by default
        self._buckets = [_Bucket(indices, params) for indices in _bucket_assignment(params, first_cap, cap)]
        self._slot_of = {index: (bucket, position) for bucket in self._buckets
                         for position, index in enumerate(bucket.indices)}
        self._syncing = False  # this iteration's backward all-reduces (set by forward)
        self._unfinished: list[int] = []  # parameters whose gradients never came in the last synced backward
        self._handles = [p.register_post_accumulate_grad_hook(self._hook_for(i)) for i, p in enumerate(params)]

    # ---- construction ---------------------------------------------------------------------------------------

    def _verify_same_model(self) -> None:
        """torch's verify_params_across_processes: the same number of parameters, of the same shapes and dtypes."""
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone: list = [None] * self.process_group.size()
        c10d.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self.process_group.rank()} "
                                   f"has {len(mine)} params, while rank {rank} has inconsistent {len(theirs)} params.")
            for index, (ours, other) in enumerate(zip(mine, theirs)):
                if ours != other:
                    raise RuntimeError(f"DDP expects same model across all ranks, but parameter {index} is "
                                       f"{ours[1]} {list(ours[0])} on rank {self.process_group.rank()} and "
                                       f"{other[1]} {list(other[0])} on rank {rank}.")

    def _broadcast(self, tensors: list[Tensor]) -> None:
        """Give every rank rank 0's values of `tensors`, one flat message per dtype."""
        by_dtype: dict[Any, list[Tensor]] = {}
        for tensor in tensors:
            by_dtype.setdefault(tensor.dtype, []).append(tensor)
        pg = self.process_group
        for group in by_dtype.values():
            flat = np.concatenate([c10d._buffer(t).reshape(-1) for t in group])
            c10d._wait_for([pg._comm.Ibcast(flat, root=0)], pg, "DistributedDataParallel broadcast")
            start = 0
            for tensor in group:
                c10d._write(tensor, flat[start:start + tensor.numel()])
                start += tensor.numel()

    # ---- forward --------------------------------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._unfinished:
            indices, self._unfinished = self._unfinished, []
            raise RuntimeError(_UNFINISHED_REDUCTION.format(rank=self.process_group.rank(),
                                                            indices=" ".join(map(str, indices))))
        self._syncing = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        if self._syncing:
            self._start_iteration()
        buffers = list(self.module.buffers())
        if self.broadcast_buffers and buffers and self.require_forward_param_sync:
            self._broadcast(buffers)
        output = self.module(*inputs, **kwargs)
        if self._syncing and self.find_unused_parameters:
            reached = _leaves_reached(output)
            self._locally_used = np.array([id(p) in reached for p in self._params], dtype=np.int32)
        return output

    def _start_iteration(self) -> None:
        for bucket in self._buckets:
            bucket.pending, bucket.request = len(bucket.indices), None
        self._ready = [False] * len(self._params)
        self._next_bucket = 0
        self._callback_queued = False
        self._locally_used = np.ones(len(self._params), dtype=np.int32)
        self._globally_used = self._locally_used.copy()
        self._used_request: Any = None

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes of forwards run inside this block keep their gradients local (accumulating in
        `.grad`); the first synced backward after it averages the accumulated sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    # ---- backward -------------------------------------------------------------------------------------------

    def _hook_for(self, index: int) -> Any:
        def hook(param: Tensor) -> None:
            if self._syncing:
                self._on_first_gradient()
                self._mark_ready(index)
        return hook

    def _on_first_gradient(self) -> None:
        """The first gradient of a synced backward: queue the end-of-backward wait, and count the parameters
        no output reached as ready (they contribute zeros)."""
        if self._callback_queued:
            return
        self._callback_queued = True
        queue_callback(self._finish_reduction)
        if self.find_unused_parameters:
            pg = self.process_group
            self._used_request = pg._comm.Iallreduce(self._locally_used, self._globally_used, c10d._mpi().MAX)
            for index in np.flatnonzero(self._locally_used == 0):
                self._mark_ready(int(index))

    def _mark_ready(self, index: int) -> None:
        if self._ready[index]:
            raise RuntimeError("Expected to mark a variable ready only once. This error is caused by one of the "
                               "following reasons: 1) Use of a module parameter outside the `forward` function. "
                               "2) Reused parameters in multiple reentrant backward passes.")
        self._ready[index] = True
        bucket, position = self._slot_of[index]
        grad = self._params[index].grad
        if grad is None:
            bucket.slot(position)[:] = 0
        else:
            np.divide(grad._data.reshape(-1), self.process_group.size(), out=bucket.slot(position))
        bucket.pending -= 1
        self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        """Start the all-reduce of each complete bucket, in bucket order (every rank must start MPI collectives
        in the same order), and let MPI progress the ones already started."""
        mpi = c10d._mpi()
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            bucket = self._buckets[self._next_bucket]
            bucket.request = self.process_group._comm.Iallreduce(mpi.IN_PLACE, bucket.flat, mpi.SUM)
            self._next_bucket += 1
        mpi.Request.Testall([b.request for b in self._buckets[:self._next_bucket]])

    def _finish_reduction(self) -> None:
        """End of backward: wait for the all-reduces and write the averaged gradients into `.grad`."""
        requests = [b.request for b in self._buckets if b.request is not None]
        if self._used_request is not None:
            requests.append(self._used_request)
        c10d._wait_for(requests, self.process_group, "DistributedDataParallel gradient all-reduce")
        self._syncing = False
        if self._next_bucket < len(self._buckets):
            self._unfinished = [i for i, ready in enumerate(self._ready) if not ready]
            return
        for index, param in enumerate(self._params):
            if not self._globally_used[index]:
                continue
            bucket, position = self._slot_of[index]
            average = bucket.slot(position).reshape(tuple(param.shape))
            grad = param.grad
            if grad is None:  # a parameter this rank did not use (find_unused_parameters)
                param.grad = C.from_numpy(average.copy())
            else:  # in place, as torch writes the bucket back into `.grad` (the version counter moves)
                np.copyto(grad._data, average)
                grad._bump_version()

