"""examples/torch_digits.py trained data-parallel: a plain PyTorch DDP script that never mentions retrograd.

    pip install -e '.[distributed]'                                             # mpi4py and MPICH's mpirun
    python -m retrograd.distributed.run --nproc-per-node 2 examples/ddp_digits.py   # 2 ranks on retrograd
    torchrun --standalone --nproc-per-node 2 examples/ddp_digits.py             # the same file on PyTorch

Each rank reads its share of every epoch's batches (DistributedSampler); DistributedDataParallel
averages the gradients over the ranks during backward, so the replicas stay equal. Rank 0 reports.
"""

import gzip
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

DATA = Path(__file__).resolve().parent.parent / "retrograd" / "datasets" / "digits.csv.gz"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, ... come from the launcher
    rank, world = dist.get_rank(), dist.get_world_size()
    with gzip.open(DATA, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = torch.from_numpy(table[:, :64].reshape(-1, 1, 8, 8) / 16.0)
    labels = torch.from_numpy(table[:, 64].astype(np.int64))
    torch.manual_seed(0)
    order = torch.randperm(len(labels))
    train, test = order[:1400], order[1400:]
    dataset = TensorDataset(images[train], labels[train])
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=32 // world, sampler=sampler)  # 32 per step over all ranks
    model = DistributedDataParallel(Net())
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(images[test]).argmax(1) == labels[test]).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.1%} "
                  f"({world} ranks)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
