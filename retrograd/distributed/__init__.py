"""torch.distributed for retrograd: data-parallel training over MPI (mpi4py), with torch's API.

- distributed_c10d: process groups (init_process_group, new_group, ...) and the collectives
  (all_reduce, broadcast, all_gather, reduce_scatter, gather, scatter, send/recv, the object
  collectives), each a nonblocking MPI operation with a Work handle and a timeout.
- ddp: DistributedDataParallel (torch.nn.parallel.DistributedDataParallel), whose gradient
  all-reduces start from the gradient-accumulation hooks while backward still runs.
- run: the launcher, `python -m retrograd.distributed.run --nproc-per-node N script.py` (torchrun's
  role), which starts the ranks through mpirun and sets RANK, WORLD_SIZE, LOCAL_RANK, ...

mpi4py (the optional extra `retrograd[distributed]`) is imported when a process group is made, never
by `import retrograd.distributed`. The core never imports this package.
"""

from .distributed_c10d import (
    GroupMember,
    P2POp,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    isend,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)

__all__ = [
    "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "all_reduce", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "isend", "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
]
