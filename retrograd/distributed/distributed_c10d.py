"""torch.distributed's process groups and collectives, carried out by MPI (mpi4py).

Every collective is started as a nonblocking MPI operation and returns a `Work`; the blocking form waits
on it. Waiting polls the requests against the group's timeout, so a rank that never arrives makes the
others raise an error naming what they waited for instead of hanging. Results are written into the
caller's tensors (all_reduce changes its argument), as torch does. mpi4py is imported by
init_process_group, never before.
"""

# Note [shape agreement]
# MPI trusts every rank to pass buffers of the same size and type: a mismatch truncates messages or
# reads past them. Before each tensor collective the ranks exchange a small fixed-size signature of
# their tensor (dtype and shape), one Iallgather of a few integers, and all of them raise the same
# error naming each rank's shape when the signatures differ. DDP's bucket all-reduces skip it: the
# model's parameters are compared once, when the wrapper is built.

from __future__ import annotations

import enum
import os
import pickle
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from .. import _creation as C
from .._tensor import Tensor
from ..autograd import grad_mode

DEFAULT_TIMEOUT = timedelta(minutes=30)  # torch's default for the CPU backends
_BACKENDS = ("mpi", "gloo")
_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."
_SIGNATURE_DIMS = 8  # shapes with more dimensions are compared through a hash of the rest
_SPIN_SECONDS = 2e-4  # how long a wait polls without giving up the core
_SHORT_PAUSE, _SHORT_WAIT = 2e-5, 1e-2  # then it sleeps this long between polls, for the first 10 ms
_LONG_PAUSE = 1e-3  # and after them up to this long (a peer still computing costs little CPU)


class ReduceOp:
    """The reductions of all_reduce, reduce and reduce_scatter (torch's ReduceOp.SUM, ...)."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7

        def __str__(self) -> str:
            return f"RedOpType.{self.name}"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR


def _mpi() -> Any:
    """The mpi4py.MPI module, imported (and MPI initialised) on first use."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError("retrograd.distributed needs mpi4py and an MPI: pip install 'retrograd[distributed]' "
                           "(mpi4py and mpich)") from error
    return MPI


def _mpi_op(op: ReduceOp.RedOpType) -> Any:
    mpi = _mpi()
    ops = {ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD, ReduceOp.MIN: mpi.MIN,
           ReduceOp.MAX: mpi.MAX, ReduceOp.BAND: mpi.BAND, ReduceOp.BOR: mpi.BOR, ReduceOp.BXOR: mpi.BXOR}
    if op not in ops:
        raise ValueError(f"Unsupported reduction operation: {op}")
    return ops[op]


class ProcessGroup:
    """A set of ranks with its own MPI communicator (None on ranks outside the group)."""

    def __init__(self, comm: Any, ranks: Sequence[int], backend: str, timeout: timedelta) -> None:
        self._comm, self._ranks, self._backend, self._timeout = comm, list(ranks), backend, timeout

    def rank(self) -> int:
        """This process's rank within the group (-1 outside it)."""
        return self._comm.Get_rank() if self._comm is not None else -1

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        """The backend's name in torch's messages: the one asked for ('gloo' and 'mpi' both run on MPI)."""
        return {"gloo": "Gloo", "mpi": "MPI"}[self._backend]

    def _group_rank(self, global_rank: int, what: str) -> int:
        """A rank of the default group (the ranks that src/dst name) as a rank of this group."""
        if global_rank not in self._ranks:
            if self is _state.default:
                raise RuntimeError(f"ProcessGroup{self.name()}::{what}: invalid root rank: {global_rank}")
            raise ValueError(f"Global rank {global_rank} is not part of group {self}")
        return self._ranks.index(global_rank)

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self._backend!r}, ranks={self._ranks})"


class _State:
    """The default group and the groups made by new_group, per process."""

    def __init__(self) -> None:
        self.default: ProcessGroup | None = None
        self.groups: list[ProcessGroup] = []
        self.previous_excepthook: Callable | None = None


_state = _State()


class _GroupMember:
    """torch's `group.WORLD` / `GroupMember.WORLD`: the default group once initialised."""

    NON_GROUP_MEMBER = -100

    @property
    def WORLD(self) -> ProcessGroup | None:  # noqa: N802 - torch's name
        return _state.default


group = GroupMember = _GroupMember()


class Work:
    """The handle of a collective started with async_op=True: wait() finishes it and writes its results."""

    def __init__(self, requests: list, what: str, pg: ProcessGroup, finish: Callable[[], Any] | None = None,
                 statuses: list | None = None) -> None:
        self._requests, self._what, self._pg, self._finish, self._statuses = requests, what, pg, finish, statuses
        self._done = False
        self._result: Any = None

    def is_completed(self) -> bool:
        """Whether the operation has finished (its results are written when it has)."""
        if not self._done and _mpi().Request.Testall(self._requests, self._statuses):
            self._complete()
        return self._done

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the operation finishes, or raise after `timeout` (the group's by default)."""
        if not self._done:
            _wait_for(self._requests, self._pg, self._what, timeout, self._statuses)
            self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._result = self._finish()

    def _source_rank(self) -> int:
        return self._result


def _wait_for(requests: list, pg: ProcessGroup, what: str, timeout: timedelta | None = None,
              statuses: list | None = None) -> None:
    """Poll `requests` until all are done (filling `statuses`): busily for the first _SPIN_SECONDS (a
    collective among ready ranks ends in microseconds), then with short sleeps that let ranks sharing cores
    run (measured on 4 ranks over 2 cores: 20 µs pauses halve a 64 KiB all_reduce against 1 ms ones), and
    after 10 ms with pauses growing to 1 ms; past the timeout, raise naming the operation and the rank."""
    mpi = _mpi()
    start = time.monotonic()
    limit = (timeout or pg._timeout).total_seconds()
    pause = _SHORT_PAUSE
    try:
        while not mpi.Request.Testall(requests, statuses):
            waited = time.monotonic() - start
            if waited < _SPIN_SECONDS:
                continue
            if waited > limit:
                raise RuntimeError(f"[rank {get_rank()}] {what} timed out after {limit:g} s: another rank did not "
                                   "take part (it failed, hung or called a different collective)")
            pause = _SHORT_PAUSE if waited < _SHORT_WAIT else min(_LONG_PAUSE, pause * 1.5)
            time.sleep(pause)
    except mpi.Exception as error:
        raise RuntimeError(f"[rank {get_rank()}] {what} failed in MPI: {error.Get_error_string()}") from None


# ---- process groups ------------------------------------------------------------------------------------------


def is_available() -> bool:
    """Whether mpi4py is installed (it is imported only when a process group is made)."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    return _state.default is not None


def is_mpi_available() -> bool:
    return is_available()


def is_gloo_available() -> bool:
    """'gloo' names the CPU backend, which is MPI here."""
    return is_available()


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """Whether the launcher (retrograd.distributed.run, like torchrun) started this process."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _default_group() -> ProcessGroup:
    if _state.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _state.default


def _check_environment(name: str, given: int | None, mpi_value: int) -> None:
    """`rank`/`world_size` given or set in the environment must be what MPI started."""
    env = os.environ.get(name)
    for source, value in (("argument", given), (f"environment variable {name}", env)):
        if value is not None and value != -1 and int(value) != mpi_value:
            raise ValueError(f"init_process_group: the {source} says {name.lower()} {value}, but MPI started this "
                             f"process as {name.lower()} {mpi_value}; start the ranks with `python -m "
                             "retrograd.distributed.run --nproc-per-node N script.py` (or mpirun -n N)")


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Join the default process group: every process MPI started (mpirun or retrograd.distributed.run).

    backend 'mpi' or 'gloo' (both name the CPU backend, MPI here). RANK and WORLD_SIZE, where the
    environment or the arguments give them, must agree with MPI's view; MASTER_ADDR/MASTER_PORT are
    not needed (MPI's launcher did the rendezvous). init_method and store are accepted for torch's
    signature. An uncaught exception on any rank from now on stops every rank (MPI_Abort) after its
    traceback is printed, so the others never wait for it.
    """
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = "gloo" if backend is None else str(backend).lower()
    if name == "nccl":
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    if name not in _BACKENDS:
        raise AssertionError(f"Unknown backend type {backend}")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")
    world = _mpi().COMM_WORLD
    _check_environment("RANK", rank, world.Get_rank())
    _check_environment("WORLD_SIZE", world_size, world.Get_size())
    _state.default = ProcessGroup(world.Dup(), range(world.Get_size()), name, timeout or DEFAULT_TIMEOUT)
    if world.Get_size() > 1 and _state.previous_excepthook is None:
        _state.previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _abort_on_uncaught(kind: type, error: BaseException, traceback: Any) -> None:
    """An uncaught exception on one rank: print it, then stop every rank (the others would wait forever)."""
    (_state.previous_excepthook or sys.__excepthook__)(kind, error, traceback)
    world = _mpi().COMM_WORLD
    print(f"[rank {world.Get_rank()}] {kind.__name__} was not caught: stopping all {world.Get_size()} ranks",
          file=sys.stderr, flush=True)
    time.sleep(0.2)  # lets mpirun forward this rank's last output before MPI_Abort has it stop every rank
    world.Abort(1)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Free `group`'s communicator, or every group's (leaving the process uninitialised)."""
    if group is None or group is _state.default:
        if _state.default is None:
            raise AssertionError("Process group cannot be None")
        for pg in [*_state.groups, _state.default]:
            if pg._comm is not None:
                pg._comm.Free()
        _state.default, _state.groups[:] = None, []
        if _state.previous_excepthook is not None:
            sys.excepthook, _state.previous_excepthook = _state.previous_excepthook, None
        return
    if group._comm is not None:
        group._comm.Free()
        group._comm = None
    _state.groups.remove(group)


def new_group(ranks: Sequence[int] | None = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None) -> ProcessGroup:
    """A group of some ranks of the default group (all by default); every rank must call it, as in torch."""
    default = _default_group()
    members = sorted(set(range(default.size()) if ranks is None else ranks))
    for member in members:
        if not 0 <= member < default.size():
            raise ValueError(f"Invalid rank {member}, rank should be in the interval [0, {default.size() - 1}]")
    comm = default._comm.Create(default._comm.Get_group().Incl(members))
    pg = ProcessGroup(comm if comm != _mpi().COMM_NULL else None, members, backend or default._backend,
                      timeout or default._timeout)
    _state.groups.append(pg)
    return pg


def _group(group: ProcessGroup | None) -> ProcessGroup:
    return _default_group() if group is None else group


def get_rank(group: ProcessGroup | None = None) -> int:
    return _group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    pg = _group(group)
    return pg.size() if pg._comm is not None else -1


def get_backend(group: ProcessGroup | None = None) -> str:
    return _group(group)._backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    return list(group._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    return group._ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    if global_rank not in group._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group._ranks.index(global_rank)


# ---- tensors in and out of MPI buffers -----------------------------------------------------------------------


def _check_tensor(value: Any, name: str) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(value)} instead.")


def _check_tensor_list(values: Any, name: str) -> None:
    if not isinstance(values, list) or not all(isinstance(v, Tensor) for v in values):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        "             but got {type(values)} instead.")


def _buffer(tensor: Tensor) -> np.ndarray:
    """The tensor's values as a C-contiguous array MPI can read (a copy only when they are not)."""
    return np.ascontiguousarray(tensor.detach().numpy())


def _write(tensor: Tensor, values: np.ndarray) -> None:
    """Write a collective's result into `tensor` in place (its version counter moves, as in torch)."""
    with grad_mode.no_grad():
        tensor.copy_(C.from_numpy(values.reshape(tensor.shape)))


def _own_memory(tensor: Tensor) -> np.ndarray | None:
    """The tensor's own array when MPI can reduce into it directly (C-contiguous, writeable, not 0-d): the
    large all-reduces then make no copies."""
    data = tensor._data
    return data if data.ndim and data.flags.c_contiguous and data.flags.writeable else None


def _member(pg: ProcessGroup, what: str) -> bool:
    """torch's answer to a collective called on a rank outside the group: a warning, and nothing done."""
    if pg._comm is None:
        warnings.warn(f"Running {what} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return False
    return True


def _signature(array: np.ndarray) -> np.ndarray:
    """dtype and shape as a fixed number of integers (Note [shape agreement])."""
    shape = list(array.shape)
    head, rest = shape[:_SIGNATURE_DIMS], shape[_SIGNATURE_DIMS:]
    return np.array([array.dtype.num, array.ndim, *head, *[-1] * (_SIGNATURE_DIMS - len(head)),
                     hash(tuple(rest))], dtype=np.int64)


def _agree(pg: ProcessGroup, array: np.ndarray, what: str) -> None:
    """Raise on every rank when the ranks' tensors differ in dtype or shape (Note [shape agreement])."""
    mine = _signature(array)
    everyone = np.empty((pg.size(), mine.size), dtype=np.int64)
    _wait_for([pg._comm.Iallgather(mine, everyone)], pg, f"{what} (shape check)")
    if (everyone == mine).all():
        return
    described = ", ".join(f"rank {pg._ranks[r]} has {_describe(row)}" for r, row in enumerate(everyone))
    raise RuntimeError(f"{what}: the ranks' tensors differ in shape or dtype: {described}")


def _describe(signature: np.ndarray) -> str:
    ndim = int(signature[1])
    shape = [int(s) for s in signature[2:2 + min(ndim, _SIGNATURE_DIMS)]]
    extra = ", ..." if ndim > _SIGNATURE_DIMS else ""
    return f"{_dtype_name(int(signature[0]))} {shape}{extra}"


def _dtype_name(num: int) -> str:
    for kind in np.sctypeDict.values():
        if np.dtype(kind).num == num:
            return np.dtype(kind).name
    return f"dtype#{num}"


def _run(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _reduced(values: np.ndarray, op: ReduceOp.RedOpType, size: int) -> np.ndarray:
    """A reduction's result; AVG is SUM divided by the number of ranks (integers divide as torch's do)."""
    if op != ReduceOp.AVG:
        return values
    return values // size if values.dtype.kind in "iub" else values / size


# ---- collectives ----------------------------------------------------------------------------------------------


def all_reduce(tensor: Tensor, op: ReduceOp.RedOpType = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce `tensor` over the ranks with `op`, writing the result into `tensor` on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "all_reduce"):
        return None
    own = _own_memory(tensor)
    if own is None:
        send = _buffer(tensor)
        _agree(pg, send, "all_reduce")
        recv = np.empty_like(send)
        request = pg._comm.Iallreduce(send, recv, _mpi_op(op))
        return _run(Work([request], "all_reduce", pg, lambda: _write(tensor, _reduced(recv, op, pg.size()))),
                    async_op)
    _agree(pg, own, "all_reduce")
    request = pg._comm.Iallreduce(_mpi().IN_PLACE, own, _mpi_op(op))

    def finish() -> None:
        if op == ReduceOp.AVG:
            own[...] = _reduced(own, op, pg.size())
        tensor._bump_version()
    return _run(Work([request], "all_reduce", pg, finish), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp.RedOpType = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce `tensor` over the ranks into `tensor` on rank `dst`."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "reduce"):
        return None
    root = _root(pg, dst, group_dst, "reduce")
    send = _buffer(tensor)
    _agree(pg, send, "reduce")
    recv = np.empty_like(send)
    request = pg._comm.Ireduce(send, recv, _mpi_op(op), root=root)

    def finish() -> None:
        if pg.rank() == root:
            _write(tensor, _reduced(recv, op, pg.size()))
    return _run(Work([request], "reduce", pg, finish), async_op)


def _root(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    """The group rank of a collective's source or destination, given as a global or a group rank."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"Can not specify both global and group rank for {what}")
        if not 0 <= group_rank < pg.size():
            raise RuntimeError(f"ProcessGroup{pg.name()}::{what}: invalid root rank: {group_rank}")
        return group_rank
    return pg._group_rank(0 if global_rank is None else global_rank, what)


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy rank `src`'s `tensor` into `tensor` on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "broadcast"):
        return None
    root = _root(pg, src, group_src, "broadcast")
    data = _buffer(tensor)
    _agree(pg, data, "broadcast")
    request = pg._comm.Ibcast(data, root=root)
    return _run(Work([request], "broadcast", pg, lambda: pg.rank() != root and _write(tensor, data)), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Every rank's `tensor`, into `tensor_list[r]` for rank r, on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "all_gather"):
        return None
    _check_outputs(tensor_list, tensor, pg, "allgather")
    send = _buffer(tensor)
    _agree(pg, send, "all_gather")
    recv = np.empty((pg.size(), *send.shape), dtype=send.dtype)
    request = pg._comm.Iallgather(send, recv)

    def finish() -> None:
        for out, values in zip(tensor_list, recv):
            _write(out, values)
    return _run(Work([request], "all_gather", pg, finish), async_op)


def _check_outputs(outputs: list[Tensor], tensor: Tensor, pg: ProcessGroup, what: str) -> None:
    """One output per rank, each of the input's shape (gloo's checks and texts)."""
    if len(outputs) != pg.size():
        raise RuntimeError(f"ProcessGroup{pg.name()}::{what}: invalid output tensor list at index 0 (expected length "
                           f"{pg.size()}, got {len(outputs)})")
    for out in outputs:
        if out.shape != tensor.shape:
            raise RuntimeError(f"ProcessGroup{pg.name()}::{what}: invalid tensor size at index 0 (expected "
                               f"({', '.join(map(str, tensor.shape))}), got ({', '.join(map(str, out.shape))}))")


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's `input_tensor`, concatenated along dim 0 (or stacked) into `output_tensor`."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group)
    if not _member(pg, "all_gather_into_tensor"):
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    send = _buffer(input_tensor)
    _agree(pg, send, "all_gather_into_tensor")
    recv = np.empty(send.size * pg.size(), dtype=send.dtype)
    request = pg._comm.Iallgather(send, recv)
    return _run(Work([request], "all_gather_into_tensor", pg, lambda: _write(output_tensor, recv)), async_op)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOp.RedOpType = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce `input_list[r]` over the ranks with `op` into `output` on rank r."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _group(group)
    if not _member(pg, "reduce_scatter"):
        return None
    _check_outputs(input_list, output, pg, "reduce_scatter")
    send = np.stack([_buffer(t) for t in input_list])
    return _reduce_scatter(output, send, op, pg, "reduce_scatter", async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp.RedOpType = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce `input` over the ranks with `op` and give rank r the r-th of its world_size equal chunks."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if not _member(pg, "reduce_scatter_tensor"):
        return None
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    return _reduce_scatter(output, _buffer(input), op, pg, "reduce_scatter_tensor", async_op)


def _reduce_scatter(output: Tensor, send: np.ndarray, op: ReduceOp.RedOpType, pg: ProcessGroup, what: str,
                    async_op: bool) -> Work | None:
    _agree(pg, send, what)
    recv = np.empty(send.size // pg.size(), dtype=send.dtype)
    request = pg._comm.Ireduce_scatter_block(send, recv, _mpi_op(op))
    return _run(Work([request], what, pg, lambda: _write(output, _reduced(recv, op, pg.size()))), async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: ProcessGroup | None = None, async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's `tensor` into `gather_list[r]` on rank `dst` (which alone passes a list)."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "gather"):
        return None
    root = _root(pg, dst, group_dst, "gather")
    if pg.rank() == root:
        _check_tensor_list(gather_list, "gather_list")
        _check_outputs(gather_list, tensor, pg, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    send = _buffer(tensor)
    _agree(pg, send, "gather")
    recv = np.empty((pg.size(), *send.shape), dtype=send.dtype) if pg.rank() == root else None
    request = pg._comm.Igather(send, recv, root=root)

    def finish() -> None:
        if recv is not None:
            for out, values in zip(gather_list, recv):
                _write(out, values)
    return _run(Work([request], "gather", pg, finish), async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: ProcessGroup | None = None, async_op: bool = False, group_src: int | None = None) -> Work | None:
    """`scatter_list[r]` of rank `src` (which alone passes a list) into `tensor` on rank r."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "scatter"):
        return None
    root = _root(pg, src, group_src, "scatter")
    recv = _buffer(tensor).copy()
    _agree(pg, recv, "scatter")
    if pg.rank() == root:
        _check_tensor_list(scatter_list, "scatter_list")
        _check_outputs(scatter_list, tensor, pg, "scatter")
        send = np.stack([_buffer(t) for t in scatter_list])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    else:
        send = None
    request = pg._comm.Iscatter(send, recv, root=root)
    return _run(Work([request], "scatter", pg, lambda: _write(tensor, recv)), async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every rank of the group has reached the barrier."""
    pg = _group(group)
    if not _member(pg, "barrier"):
        return None
    return _run(Work([pg._comm.Ibarrier()], "barrier", pg), async_op)


# ---- point to point -------------------------------------------------------------------------------------------


def isend(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending `tensor` to rank `dst`; the returned Work's wait() ends it."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "isend"):
        return None
    peer = _peer(pg, dst, group_dst, "send")
    data = _buffer(tensor)
    return Work([pg._comm.Isend(data, dest=peer, tag=tag)], f"send to rank {pg._ranks[peer]}", pg)


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into `tensor` from rank `src` (any rank when None); wait() writes it."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if not _member(pg, "irecv"):
        return None
    mpi = _mpi()
    peer = mpi.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "recv")
    data = np.empty(tuple(tensor.shape), dtype=tensor.detach().numpy().dtype)
    status = mpi.Status()

    def finish() -> int:
        count = status.Get_count(mpi.BYTE)
        sender = pg._ranks[status.Get_source()]
        if count != data.nbytes:
            raise RuntimeError(f"[rank {get_rank()}] recv from rank {sender}: expected {data.nbytes} bytes for a "
                               f"tensor of shape {list(tensor.shape)}, but rank {sender} sent {count} bytes")
        _write(tensor, data)
        return sender
    return Work([pg._comm.Irecv(data, source=peer, tag=tag)], "recv", pg, finish, [status])


def _peer(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    peer = _root(pg, global_rank, group_rank, what)
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as rank of the current process."
                         if what == "send" else "Invalid source rank: should not be the same as rank of the current "
                         "process.")
    return peer


def send(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send `tensor` to rank `dst`, returning when it has left."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._source_rank()


class P2POp:
    """One send or receive for batch_isend_irecv: `op` is isend or irecv."""

    def __init__(self, op: Callable, tensor: Tensor, peer: int | None = None, group: ProcessGroup | None = None,
                 tag: int = 0, group_peer: int | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Start every send and receive of the list; a Work for each."""
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ---- Python objects -------------------------------------------------------------------------------------------


def _exchange(pg: ProcessGroup, payload: bytes, what: str) -> list[bytes]:
    """Every rank's bytes, on every rank (two Iallgathers: the lengths, then the bytes)."""
    lengths = np.empty(pg.size(), dtype=np.int64)
    _wait_for([pg._comm.Iallgather(np.array([len(payload)], dtype=np.int64), lengths)], pg, what)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    everything = np.empty(int(offsets[-1]), dtype=np.uint8)
    mine = np.frombuffer(payload, dtype=np.uint8)
    _wait_for([pg._comm.Iallgatherv(mine, [everything, lengths, offsets[:-1], _mpi().BYTE])], pg, what)
    return [everything[offsets[r]:offsets[r + 1]].tobytes() for r in range(pg.size())]


def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """Every rank's picklable `obj` into `object_list[r]`, on every rank."""
    pg = _group(group)
    if not _member(pg, "all_gather_object"):
        return
    for r, payload in enumerate(_exchange(pg, pickle.dumps(obj), "all_gather_object")):
        object_list[r] = pickle.loads(payload)


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None,
                  group: ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Every rank's picklable `obj` into `object_gather_list[r]` on rank `dst`."""
    pg = _group(group)
    if not _member(pg, "gather_object"):
        return
    root = _root(pg, dst, group_dst, "gather_object")
    payloads = _exchange(pg, pickle.dumps(obj), "gather_object")
    if pg.rank() == root:
        object_gather_list[:] = [pickle.loads(p) for p in payloads]


def broadcast_object_list(object_list: list, src: int | None = None, group: ProcessGroup | None = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """Rank `src`'s list of picklable objects into `object_list` on every rank (same length everywhere)."""
    pg = _group(group)
    if not _member(pg, "broadcast_object_list"):
        return
    root = _root(pg, src, group_src, "broadcast_object_list")
    payload = pickle.dumps(list(object_list)) if pg.rank() == root else b""
    length = np.array([len(payload)], dtype=np.int64)
    _wait_for([pg._comm.Ibcast(length, root=root)], pg, "broadcast_object_list")
    data = np.frombuffer(payload, dtype=np.uint8).copy() if pg.rank() == root else np.empty(length[0], np.uint8)
    _wait_for([pg._comm.Ibcast(data, root=root)], pg, "broadcast_object_list")
    object_list[:] = pickle.loads(data.tobytes())
