"""Rank script of benchmarks/distributed.py (in its own folder: benchmarks/profile.py would shadow the
standard library's profile module for a script beside it), a plain torch script: torchrun runs it on torch (gloo), and
retrograd.distributed.run on retrograd (`import torch` answered by retrograd). Rank 0 prints one JSON line.

Measured, after warm-up, with wall clocks (the ranks wait for each other, so waiting is part of the cost):
- a DDP training step (forward, backward with the gradient all-reduce, SGD) of an MLP 784-512-256-10 on
  a batch of 64 per rank, float32: the median over the steps;
- all_reduce of float32 tensors of several sizes: the median time (benchmarks/distributed.py turns it
  into bus bandwidth).
"""

import json
import os
import statistics
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

STEPS, WARMUP, REPEATS = int(os.environ.get("BENCH_STEPS", "30")), 5, int(os.environ.get("BENCH_REPEATS", "20"))
SIZES_MB = (0.0625, 1, 16)


def timed(fn, repeats: int) -> float:
    """Median seconds of fn() over repeats, every rank starting together."""
    samples = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                                  nn.Linear(256, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(64, 784), torch.randint(0, 10, (64,))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    for _ in range(WARMUP):
        step()
    result = {"library": torch.__name__, "world": world, "step_ms": 1e3 * timed(step, STEPS), "all_reduce": {}}
    for megabytes in SIZES_MB:
        tensor = torch.ones(int(megabytes * 2**20) // 4)
        for _ in range(3):
            dist.all_reduce(tensor)
        seconds = timed(lambda t=tensor: dist.all_reduce(t), REPEATS)
        result["all_reduce"][str(megabytes)] = {"ms": 1e3 * seconds, "bytes": tensor.numel() * 4}
    if dist.get_rank() == 0:
        print("BENCH " + json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
