"""DataLoader: batches of samples from a dataset, in order or shuffled, collated into tensors.

Loading runs in the calling process (num_workers is accepted and ignored: NumPy work is not
worth a process pool at this scale). `default_collate` follows torch's rules: tensors stack,
numbers become tensors, and tuples, lists and dicts are collated field by field.
"""

from __future__ import annotations

import collections.abc
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ... import _creation as C
from ... import float64, int64
from ..._tensor import Tensor
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


def default_collate(batch: list) -> Any:
    """Merge a list of samples into a batch (stacking tensors along a new first dimension)."""
    from ... import stack

    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSU":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found {elem.dtype}")
        return stack([C.as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic):
        return C.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return C.tensor(batch)
    if isinstance(elem, float):
        return C.tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return C.tensor(batch, dtype=int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:  # a mapping type that cannot be built from a dict
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed  # torch gives a list for tuples (backwards compatibility)
        try:
            return type(elem)(transposed)
        except TypeError:  # a sequence type that cannot be built from a list
            return transposed
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem)}")


def default_convert(data: Any) -> Any:
    """What batch_size=None yields: NumPy arrays become tensors, containers are converted inside."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSU":
        return C.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):  # a tuple becomes a list, as in torch
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Iterate over a dataset in batches.

    >>> loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, generator=g)
    >>> for xb, yb in loader: ...
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Sampler | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, multiprocessing_context: Any = None,
                 generator: C.Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        iterable = isinstance(dataset, IterableDataset)
        if iterable and (shuffle not in (None, False) or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, sampler or batch_sampler "
                             "option")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or (default_collate if batch_size is not None or batch_sampler is not None
                                         else default_convert)

    def __iter__(self) -> Iterator[Any]:
        if self.pin_memory:  # torch's words where no accelerator is found (always, here)
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        C._torch_rng(self.generator).bits((), np.int64)  # each iterator draws its workers' base seed, as torch
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        dataset = self.dataset
        if isinstance(dataset, IterableDataset):
            yield from self._iter_stream()
            return
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield self.collate_fn(dataset[idx])
            return
        fetch_many = getattr(dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            samples = fetch_many(indices) if fetch_many is not None else [dataset[i] for i in indices]
            yield self.collate_fn(samples)

    def _iter_stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch: list = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)
