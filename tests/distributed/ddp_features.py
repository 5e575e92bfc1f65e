"""Rank script: DistributedDataParallel's behaviours besides plain training (each rank asserts; prints "ok <rank>").

overlap: bucket all-reduces start during backward; unused parameters with and without
find_unused_parameters; a model that differs between ranks; buffers broadcast from rank 0.
"""

from datetime import timedelta

import numpy as np

import retrograd as torch
import retrograd.distributed as dist
from retrograd import nn
from retrograd.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2)).double()


# overlap: when the first layer's weight (the last gradient of backward) arrives, every bucket without it
# has already started its all-reduce
model = DDP(mlp(), bucket_cap_mb=0.0005)
assert len(model._buckets) > 2
first = next(model.parameters())
started = []
first.register_post_accumulate_grad_hook(
    lambda p: started.extend(b.request is not None for b in model._buckets if 0 not in b.indices))
model(torch.randn(3, 4, dtype=torch.float64)).sum().backward()
assert started and all(started), started


class Branches(nn.Module):
    """`used` always takes part; `sometimes` only on rank 0; `never` on no rank."""

    def __init__(self) -> None:
        super().__init__()
        self.used, self.sometimes, self.never = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x) + (self.sometimes(x) if rank == 0 else 0)


def local_gradients(module: nn.Module, x: torch.Tensor) -> list:
    module.zero_grad()
    module(x).pow(2).sum().backward()
    return [None if p.grad is None else p.grad.numpy().copy() for p in module.parameters()]


plain = Branches().double()
wrapped = DDP(Branches().double(), find_unused_parameters=True)
plain.load_state_dict(wrapped.module.state_dict())
x = torch.randn(5, 3, dtype=torch.float64)
everyone = [None] * world
dist.all_gather_object(everyone, local_gradients(plain, x))
got = local_gradients(wrapped, x)
for index, grads in enumerate(zip(*everyone)):
    if all(g is None for g in grads):
        assert got[index] is None  # unused on every rank: no gradient, as torch leaves it
    else:
        want = sum(np.zeros_like(got[index]) if g is None else g for g in grads) / world
        np.testing.assert_allclose(got[index], want, rtol=1e-12)

# without find_unused_parameters, the next forward reports the parameters that got no gradient
strict = DDP(Branches().double())
strict(x).sum().backward()
try:
    strict(x)
except RuntimeError as error:
    assert str(error).startswith("Expected to have finished reduction in the prior iteration before starting a new "
                                 "one. This error indicates that your module has parameters that were not used in "
                                 "producing loss."), error
    assert str(error).endswith(f"did not receive grad for rank {rank}: {'4 5' if rank == 0 else '2 3 4 5'}")
else:
    raise AssertionError("no error")

# a model that differs between ranks is refused when wrapped
try:
    DDP(nn.Linear(3, 2 + (rank == 1)))
except RuntimeError as error:
    assert "DDP expects same model across all ranks" in str(error), error
else:
    raise AssertionError("no error")

# buffers: rank 0's at construction and at every forward
norm = DDP(nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).double())
states = [None] * world
dist.all_gather_object(states, {k: v.numpy().tolist() for k, v in norm.state_dict().items()})
assert all(s == states[0] for s in states)
norm.module[1].running_mean.fill_(float(rank))
norm.eval()
with torch.no_grad():
    norm(x)
assert norm.module[1].running_mean.tolist() == [0.0, 0.0, 0.0]
assert list(norm.state_dict())[0] == "module.0.weight" and norm.module.training is False

dist.destroy_process_group()
print(f"ok {rank}")
