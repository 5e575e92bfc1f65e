"""torch.utils.data.distributed: DistributedSampler, each rank's share of a dataset, reshuffled per epoch."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from ... import _creation as C
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Indices rank, rank + num_replicas, ... of a (seed + epoch)-shuffled order, padded to divide evenly
    (or cut, with drop_last). num_replicas and rank default to the default process group's."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed  # only here: the data utilities never need it otherwise

            if not distributed.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        if drop_last and len(dataset) % num_replicas:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            order = C.randperm(len(self.dataset), generator=C.Generator().manual_seed(self.seed + self.epoch))
            indices = order.tolist()
        else:
            indices = list(range(len(self.dataset)))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch seeds the shuffle, so each epoch's order differs and all ranks agree on it."""
        self.epoch = epoch
