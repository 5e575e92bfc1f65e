"""Rank script for the launcher: a torch script (it imports torch) printing what torchrun would give it."""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
sampler = DistributedSampler(range(10), shuffle=False)
model = DistributedDataParallel(torch.nn.Linear(2, 1))
print(json.dumps({"module": torch.__name__, "rank": dist.get_rank(), "world": dist.get_world_size(),
                  "env": {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                     "MASTER_ADDR", "MASTER_PORT")},
                  "args": sys.argv[1:], "indices": list(sampler), "ddp": type(model).__module__}))
dist.destroy_process_group()
