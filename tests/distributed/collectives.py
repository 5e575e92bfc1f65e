"""Rank script: every collective against its NumPy definition (each rank checks its own results).

Rank r's input to a collective is a known function of r, so each rank computes what all ranks sent
with NumPy and compares. Prints "ok <rank>" at the end; any mismatch raises (and stops every rank).
"""

from datetime import timedelta

import numpy as np

import retrograd as torch
import retrograd.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()


def data(r: int, shape: tuple = (2, 3), dtype: type = np.float64) -> np.ndarray:
    """Rank r's input: distinct, exactly representable values."""
    return (np.arange(np.prod(shape)).reshape(shape) * (r + 2) + r).astype(dtype)


def check(got: torch.Tensor, want: np.ndarray) -> None:
    assert got.dtype == torch.from_numpy(np.asarray(want)).dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


everyone = [data(r) for r in range(world)]
reductions = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod, dist.ReduceOp.MIN: np.min,
              dist.ReduceOp.MAX: np.max, dist.ReduceOp.AVG: np.mean}
for op, numpy_op in reductions.items():
    for dtype in (np.float64, np.float32, np.int64):
        if op == dist.ReduceOp.AVG and dtype == np.int64:
            continue
        t = torch.from_numpy(data(rank, dtype=dtype))
        before = t._version
        dist.all_reduce(t, op=op)
        check(t, numpy_op(np.stack([data(r, dtype=dtype) for r in range(world)]), axis=0).astype(dtype))
        assert t._version > before  # written in place, as torch does
    t = torch.from_numpy(data(rank))
    dist.reduce(t, dst=world - 1, op=op)
    check(t, numpy_op(np.stack(everyone), axis=0) if rank == world - 1 else data(rank))

# the copying path: a transposed view (written through to its base) and a 0-d tensor
base = torch.from_numpy(data(rank, shape=(3, 2)))
dist.all_reduce(base.t())
check(base, np.sum([data(r, shape=(3, 2)) for r in range(world)], axis=0))
scalar = torch.tensor(float(rank), dtype=torch.float64)
dist.all_reduce(scalar, op=dist.ReduceOp.MAX)
check(scalar, np.array(world - 1.0))

# async_op: a Work whose wait() writes the result
t = torch.from_numpy(data(rank))
work = dist.all_reduce(t, async_op=True)
assert work.wait() is True and work.is_completed()
check(t, np.sum(everyone, axis=0))

for src in range(world):
    t = torch.from_numpy(data(rank))
    dist.broadcast(t, src=src)
    check(t, data(src))

outputs = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(world)]
dist.all_gather(outputs, torch.from_numpy(data(rank)))
for r, out in enumerate(outputs):
    check(out, data(r))
flat = torch.zeros(world * 2, 3, dtype=torch.float64)
dist.all_gather_into_tensor(flat, torch.from_numpy(data(rank)))
check(flat, np.concatenate(everyone))
stacked = torch.zeros(world, 2, 3, dtype=torch.float64)
dist.all_gather_into_tensor(stacked, torch.from_numpy(data(rank)))
check(stacked, np.stack(everyone))

# reduce_scatter: rank r gets the sum over ranks of their r-th input
inputs = [torch.from_numpy(data(rank) + 10 * k) for k in range(world)]
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter(out, inputs)
check(out, sum(data(r) + 10 * rank for r in range(world)))
big = torch.from_numpy(data(rank, shape=(world * 2, 3)))
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter_tensor(out, big, op=dist.ReduceOp.MAX)
check(out, np.max([data(r, shape=(world * 2, 3)) for r in range(world)], axis=0)[rank * 2:(rank + 1) * 2])

gathered = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(world)] if rank == 1 else None
dist.gather(torch.from_numpy(data(rank)), gathered, dst=1)
if rank == 1:
    for r, g in enumerate(gathered):
        check(g, data(r))
t = torch.zeros(2, 3, dtype=torch.float64)
dist.scatter(t, [torch.from_numpy(data(r) * 7) for r in range(world)] if rank == 0 else None, src=0)
check(t, data(rank) * 7)

# point to point: a ring, blocking and nonblocking, and recv from any source
right, left = (rank + 1) % world, (rank - 1) % world
received = torch.zeros(2, 3, dtype=torch.float64)
sending = dist.isend(torch.from_numpy(data(rank)), dst=right)
receiving = dist.irecv(received, src=left)
sending.wait()
receiving.wait()
check(received, data(left))
if rank == 0:
    senders = set()
    for _ in range(world - 1):
        t = torch.zeros(4, dtype=torch.float64)
        sender = dist.recv(t)
        senders.add(sender)
        check(t, np.full(4, sender + 1.0))
    assert senders == set(range(1, world)), senders
else:
    dist.send(torch.full((4,), float(rank + 1), dtype=torch.float64), dst=0)

# groups: the even ranks reduce among themselves; the others take no part
evens = dist.new_group([r for r in range(world) if r % 2 == 0])
t = torch.from_numpy(data(rank))
if rank % 2 == 0:
    dist.all_reduce(t, group=evens)
    check(t, np.sum([data(r) for r in range(world) if r % 2 == 0], axis=0))
    assert dist.get_world_size(evens) == len(range(0, world, 2)) and dist.get_rank(evens) == rank // 2
else:
    assert dist.get_rank(evens) == -1

objects = [None] * world
dist.all_gather_object(objects, {"rank": rank, "name": "x" * rank})
assert objects == [{"rank": r, "name": "x" * r} for r in range(world)], objects
shared = [rank, "from", {"rank": rank}]
dist.broadcast_object_list(shared, src=world - 1)
assert shared == [world - 1, "from", {"rank": world - 1}], shared
dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"ok {rank}")
