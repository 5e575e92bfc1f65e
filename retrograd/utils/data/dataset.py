"""Datasets: the map-style Dataset protocol, TensorDataset, Subset, ConcatDataset, StackDataset, ChainDataset (of
iterable datasets) and random_split."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ... import _creation as C
from ..._tensor import Tensor


class Dataset:
    """A map-style dataset: `__getitem__(index)` and `__len__()`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream: subclasses define `__iter__`."""

    def __iter__(self) -> Any:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the index-th rows of each tensor (all of the same length)."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of `dataset` at `indices`."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after another."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        offset = idx - (self.cumulative_sizes[which - 1] if which else 0)
        return self.datasets[which][offset]


class ChainDataset(IterableDataset):
    """Several iterable datasets read one after another (built lazily: the list is only walked when iterated)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def _iterables(self) -> Iterator[IterableDataset]:
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield dataset

    def __iter__(self) -> Iterator[Any]:
        for dataset in self._iterables():
            yield from dataset

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self._iterables())


class StackDataset(Dataset):
    """Datasets of one length zipped: sample i is the tuple (positional datasets) or dict (keyword datasets) of
    their i-th samples."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args or kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args or kwargs

    def __getitem__(self, index: int) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """A batch of samples, each part fetched in one call where its dataset has __getitems__."""
        named = self.datasets.items() if isinstance(self.datasets, dict) else enumerate(self.datasets)
        columns = {}
        for key, dataset in named:
            fetch_many = getattr(dataset, "__getitems__", None)
            if callable(fetch_many):
                column = fetch_many(indices)
                if len(column) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got "
                                     f"{len(column)}")
            else:
                column = [dataset[index] for index in indices]
            columns[key] = column
        rows = [dict(zip(columns, row)) for row in zip(*columns.values())]
        return rows if isinstance(self.datasets, dict) else [tuple(row.values()) for row in rows]

    def __len__(self) -> int:
        return self._length


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: C.Generator | None = None
                 ) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing to 1)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(len(dataset) * frac)) for frac in lengths]
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1
        for i, n in enumerate(counts):
            if n == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = C.randperm(sum(lengths), generator=generator).tolist()
    out, start = [], 0
    for n in lengths:
        out.append(Subset(dataset, indices[start:start + n]))
        start += n
    return out
