"""DataLoader: batches of samples from a dataset, in order or shuffled, collated into tensors.

With num_workers > 0 the workers run in turn in the calling process with torch's seeds, worker info and
batch order (Note [workers in one process] in worker.py). `default_collate` follows torch's rules: tensors
stack, numbers become tensors, and tuples, lists and dicts are collated field by field.
"""

from __future__ import annotations

import collections.abc
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import _creation as C
from ... import float64
from ..._tensor import Tensor
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import Workers


def default_collate(batch: Sequence) -> Any:
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
    if isinstance(elem, int):  # torch.tensor infers the dtype: [1, 2.5] is float32, [True, False] bool
        return C.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:  # a mapping type that cannot be built from a dict
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(samples) for samples in zip(*batch)]  # strings stay zip's tuples, as torch's
        if isinstance(elem, tuple):
            return transposed  # torch gives a list for tuples (backwards compatibility)
        try:
            return type(elem)(transposed)
        except TypeError:  # a sequence type that cannot be built from a list
            return transposed
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem)}")


def default_convert(data: Any) -> Any:
    """What batch_size=None yields: NumPy arrays and scalars become tensors (not arrays of strings or objects, nor
    NumPy's strings), containers are converted inside."""
    if isinstance(data, (np.ndarray, np.generic)) and not isinstance(data, (np.str_, np.bytes_)):
        return data if isinstance(data, np.ndarray) and data.dtype.kind in "OSU" else C.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):  # a tuple becomes a list, as in torch
        return [default_convert(d) for d in data]
    return data


_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _LoaderIterator:
    """What iterating a DataLoader gives, as torch's iterator object: the batches, and len() as the loader's."""

    def __init__(self, batches: Iterator[Any], loader: DataLoader) -> None:
        self._batches, self._loader = batches, loader

    def __iter__(self) -> _LoaderIterator:
        return self

    def __next__(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return len(self._loader)


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
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = persistent_workers
        self._workers: Workers | None = None
        self.pin_memory = pin_memory
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.generator = generator
        iterable = isinstance(dataset, IterableDataset)
        if iterable:  # torch names the first of the options an IterableDataset takes none of
            for option, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {option} option, but "
                                     f"got {option}={value}")
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
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        """torch refuses to change what decides the batches once the loader is made."""
        if name in _FIXED_AFTER_INIT and self.__dict__.get("_initialized"):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    def __iter__(self) -> Iterator[Any]:
        if self.pin_memory:  # torch's words where no accelerator is found (always, here)
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        if self.num_workers == 0 or self._workers is None or not self.persistent_workers:
            # each iterator draws its workers' base seed, as torch; persistent workers keep theirs
            base_seed = int(C._torch_rng(self.generator).bits((), np.int64))
            if self.num_workers:
                self._workers = Workers(self.num_workers, base_seed, self.dataset, self.worker_init_fn)
        return _LoaderIterator(self._batches(self._workers) if self.num_workers else self._batches_here(), self)

    def _batches_here(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream()
            return
        for task in self._tasks():
            yield task()

    def _tasks(self) -> Iterator[Callable[[], Any]]:
        """One fetch-and-collate per index (no auto-batching) or per batch of indices, in the sampler's order."""
        dataset = self.dataset
        if self.batch_sampler is None:
            for idx in self.sampler:
                yield lambda idx=idx: self.collate_fn(dataset[idx])
            return
        fetch_many = getattr(dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            yield lambda indices=indices: self.collate_fn(
                fetch_many(indices) if fetch_many is not None else [dataset[i] for i in indices])

    def _batches(self, workers: Workers) -> Iterator[Any]:
        """Batches from the workers: task k of a map-style dataset by worker k % N, an iterable dataset's streams
        round-robin until each ends (Note [workers in one process])."""
        count = self.num_workers
        if not isinstance(self.dataset, IterableDataset):
            for k, task in enumerate(self._tasks()):
                yield workers.run(k % count, task)
            return
        streams = {i: self._iter_stream() for i in range(count)}
        while streams:
            for i, stream in list(streams.items()):
                try:
                    yield workers.run(i, next, stream)
                except StopIteration:
                    del streams[i]

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
