"""One process, world size 1, under torch's gloo or retrograd (argv[1]): the API's answers and error texts
as JSON lines, for the test to compare."""

import json
import sys

if sys.argv[1] == "torch":
    import torch
    import torch.distributed as dist

    def init(**kwargs):
        dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1, **kwargs)
else:
    import retrograd as torch
    import retrograd.distributed as dist

    def init(**kwargs):
        dist.init_process_group(**kwargs)


def outcome(thunk):
    try:
        value = thunk()
    except Exception as error:  # the type and text are what is compared
        return [type(error).__name__, str(error)]
    return ["ok", repr(value) if not isinstance(value, (int, bool, str, list, type(None))) else value]


results = {
    "available": dist.is_available(),
    "before": [outcome(f) for f in (dist.get_rank, dist.get_world_size, dist.barrier, dist.is_initialized,
                                    lambda: dist.all_reduce(torch.ones(1)))],
    "nccl": outcome(lambda: init(backend="nccl")),
    "reduce_op": [repr(dist.ReduceOp.SUM), str(dist.ReduceOp.MAX), int(dist.ReduceOp.AVG)],
}
init(backend="gloo")
t = torch.arange(3.0)
work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
sampler = torch.utils.data.distributed.DistributedSampler(range(5), shuffle=False)
results.update(
    twice=outcome(lambda: init(backend="gloo")),
    backend=dist.get_backend(), rank=dist.get_rank(), world=dist.get_world_size(),
    world_group=dist.group.WORLD is not None and dist.GroupMember.WORLD is dist.group.WORLD,
    work=[work.wait(), work.is_completed(), t.tolist()],
    not_a_tensor=outcome(lambda: dist.all_reduce([t])),
    root=outcome(lambda: dist.broadcast(t, src=3)),
    gather_list=outcome(lambda: dist.all_gather([torch.ones(3), torch.ones(3)], t)),
    gather_shape=outcome(lambda: dist.all_gather([torch.ones(2)], t)),
    sampler=list(sampler),
    ddp_keys=list(torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2)).state_dict()),
    dp_keys=list(torch.nn.DataParallel(torch.nn.Linear(2, 2)).state_dict()),
    ddp_no_params=outcome(lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.ReLU())),
    new_group=[dist.get_rank(dist.new_group([0])), dist.get_world_size(dist.new_group([0]))],
)
objects = [None]
dist.all_gather_object(objects, {"a": 1})
shared = [1, "b"]
dist.broadcast_object_list(shared)
results["objects"] = [objects, shared]
dist.destroy_process_group()
results["after"] = dist.is_initialized()
print(json.dumps(results))
