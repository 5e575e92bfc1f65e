"""Rank script: DDP training of a model for 20 steps against single-process training on the whole batch.

Usage: ddp_train.py {mlp,cnn} [accumulate]. Rank 0 prints the largest parameter difference as JSON.
With `accumulate`, each step runs two micro-batches, the first under no_sync().
"""

import contextlib
import json
import sys
from datetime import timedelta

import retrograd as torch
import retrograd.distributed as dist
from retrograd import nn
from retrograd.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH = 20, 8  # BATCH examples per rank and micro-batch


def make_model(kind: str) -> nn.Module:
    if kind == "mlp":
        return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(6 * 2 * 2, 3))


def make_batch(kind: str, step: int, micro: int, size: int) -> tuple:
    generator = torch.Generator().manual_seed(1000 * step + micro)
    shape = (size, 6) if kind == "mlp" else (size, 1, 8, 8)
    return torch.randn(shape, generator=generator, dtype=torch.float64), torch.randint(0, 3, (size,),
                                                                                       generator=generator)


def main() -> None:
    kind, accumulate = sys.argv[1], "accumulate" in sys.argv[2:]
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different initial weights on each rank: DDP must broadcast rank 0's
    model = make_model(kind).double()
    ddp = DDP(model, bucket_cap_mb=0.0005)  # small buckets: several all-reduces overlap backward
    torch.manual_seed(0)
    reference = make_model(kind).double()  # rank 0's initial weights, trained alone on the whole batch
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    micros = (0, 1) if accumulate else (0,)
    for step in range(STEPS):
        optimizer.zero_grad()
        ref_optimizer.zero_grad()
        for micro in micros:
            inputs, targets = make_batch(kind, step, micro, BATCH * world)
            mine = slice(rank * BATCH, (rank + 1) * BATCH)
            context = ddp.no_sync() if micro < len(micros) - 1 else contextlib.nullcontext()
            with context:
                (loss_fn(ddp(inputs[mine]), targets[mine]) / len(micros)).backward()
            (loss_fn(reference(inputs), targets) / len(micros)).backward()
        optimizer.step()
        ref_optimizer.step()
    difference = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    everyone = [None] * world
    dist.all_gather_object(everyone, [p.detach().numpy().tolist() for p in model.parameters()])
    if rank == 0:
        print(json.dumps({"difference": difference, "replicas_equal": all(e == everyone[0] for e in everyone),
                          "keys": list(ddp.state_dict())[:2]}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
