"""Rank script: one way of failing, chosen by argv[1]; the test checks that every rank stops, naming it.

raise: rank 1 raises.  exit: rank 1 leaves with os._exit(3).  kill: rank 1 kills itself (SIGKILL).
shapes: rank 1 all-reduces a tensor of another shape.  absent: rank 1 skips a barrier and waits
longer than the others' timeout.
"""

import os
import signal
import sys
import time
from datetime import timedelta

import retrograd as torch
import retrograd.distributed as dist

how = sys.argv[1]
dist.init_process_group("gloo", timeout=timedelta(seconds=3))
rank = dist.get_rank()
dist.barrier()
if rank == 1:
    if how == "raise":
        raise ValueError("rank 1 gives up")
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "absent":
        time.sleep(30)
dist.all_reduce(torch.ones(3 if how == "shapes" and rank == 1 else 2))
dist.barrier()
print(f"finished {rank}")
