"""retrograd.utils.data against torch.utils.data: datasets, samplers, batching, collation, shuffling."""

import itertools
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import retrograd
import retrograd.utils.data as rdata


def as_numpy(batch):
    """A batch as nested lists of NumPy arrays / Python values, comparable across the libraries."""
    if isinstance(batch, (torch.Tensor, retrograd.Tensor)):
        return ("tensor", str(batch.dtype).split(".")[-1], batch.numpy().tolist())
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch).__name__, [as_numpy(v) for v in batch]
    return batch


def loader_batches(lib_data, lib, dataset_fn, **kwargs):
    return [as_numpy(b) for b in lib_data.DataLoader(dataset_fn(lib), **kwargs)]


def tensor_dataset(lib):
    return lib_data_of(lib).TensorDataset(lib.arange(20.0).reshape(10, 2), lib.arange(10))


def lib_data_of(lib):
    return tdata if lib is torch else rdata


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=3),
    dict(batch_size=3, drop_last=True),
    dict(batch_size=10),
    dict(batch_size=1),
    dict(batch_size=None),
    dict(batch_size=4, shuffle=False),
])
def test_sequential_batches_match_torch(kwargs):
    assert loader_batches(rdata, retrograd, tensor_dataset, **kwargs) == \
           loader_batches(tdata, torch, tensor_dataset, **kwargs)
    assert len(rdata.DataLoader(tensor_dataset(retrograd), **kwargs)) == \
           len(tdata.DataLoader(tensor_dataset(torch), **kwargs))


Point = namedtuple("Point", "x y")


class Records:
    """A plain Python dataset of dicts, tuples, namedtuples, numbers, strings and arrays."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"id": i, "score": i / 2, "name": f"n{i}", "flag": i % 2 == 0,
                "pair": (self.lib.tensor([i, i + 1.0]), np.arange(3) * i), "point": Point(i, float(i)),
                "seq": [i, 2 * i], "tagged": (f"t{i}", i)}


def test_default_collate_matches_torch():
    assert loader_batches(rdata, retrograd, Records, batch_size=2) == loader_batches(tdata, torch, Records,
                                                                                      batch_size=2)


@pytest.mark.parametrize("batch", [[1, 2.5], [True, False], [3, 4], [np.float32(1), np.float32(2)], [0.5, 1]],
                         ids=["int then float", "bools", "ints", "numpy floats", "floats"])
def test_default_collate_of_numbers_infers_torchs_dtype(batch):
    """torch stacks Python ints by torch.tensor's own inference (a float later in the batch makes it float32), floats
    as float64; each element's values survive."""
    ours, theirs = rdata.default_collate(batch), tdata.default_collate(batch)
    assert (str(ours.dtype), ours.tolist()) == (str(theirs.dtype), theirs.tolist())


def test_default_convert_makes_numpy_scalars_tensors_as_torch():
    """What a batch_size=None loader yields: NumPy scalars become 0-d tensors, NumPy strings and string arrays stay."""
    data = [np.float64(1.0), np.int64(3), np.bool_(True), np.str_("a"), np.array(["x"]), np.float32(2)]
    def described(values):
        return [(type(v).__name__, str(getattr(v, "dtype", "")), v.tolist()) for v in values]

    assert described(rdata.default_convert(data)) == described(tdata.default_convert(data))


def test_collate_errors_on_ragged_lists():
    batch = [[1, 2], [1]]
    for collate in (tdata.default_collate, rdata.default_collate):
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
            collate(batch)


def test_shuffling_is_a_permutation_reproducible_by_generator():
    def epoch(seed):
        loader = rdata.DataLoader(tensor_dataset(retrograd), batch_size=4, shuffle=True,
                                  generator=retrograd.Generator().manual_seed(seed))
        return [int(v) for _, y in loader for v in y]

    first = epoch(1)
    assert sorted(first) == list(range(10)) and first != list(range(10))
    assert epoch(1) == first and epoch(2) != first
    loader = rdata.DataLoader(tensor_dataset(retrograd), batch_size=4, shuffle=True,
                              generator=retrograd.Generator().manual_seed(1))
    assert [int(v) for _, y in loader for v in y] != [int(v) for _, y in loader for v in y]  # new order per epoch
    retrograd.manual_seed(5)
    a = [int(v) for _, y in rdata.DataLoader(tensor_dataset(retrograd), batch_size=3, shuffle=True) for v in y]
    retrograd.manual_seed(5)
    b = [int(v) for _, y in rdata.DataLoader(tensor_dataset(retrograd), batch_size=3, shuffle=True) for v in y]
    assert a == b


def test_samplers_and_batch_sampler_match_torch():
    assert list(rdata.BatchSampler(range(10), 3, drop_last=False)) == list(tdata.BatchSampler(range(10), 3, False))
    assert list(rdata.BatchSampler(range(10), 3, drop_last=True)) == list(tdata.BatchSampler(range(10), 3, True))
    assert len(rdata.BatchSampler(range(10), 3, True)) == 3
    assert list(rdata.SequentialSampler(range(4))) == [0, 1, 2, 3]
    draws = list(rdata.RandomSampler(range(5), replacement=True, num_samples=50))
    assert len(draws) == 50 and set(draws) <= set(range(5))
    longer = list(rdata.RandomSampler(range(6), num_samples=13))
    assert len(longer) == 13 and sorted(longer[:12]) == sorted(list(range(6)) * 2)
    assert sorted(rdata.SubsetRandomSampler([3, 7, 9])) == [3, 7, 9]
    custom = rdata.DataLoader(tensor_dataset(retrograd), batch_sampler=[[0, 5], [9]])
    assert [y.tolist() for _, y in custom] == [[0, 5], [9]]
    for lib_data in (tdata, rdata):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            lib_data.BatchSampler(range(3), 0, False)
        with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
            lib_data.DataLoader(range(3), sampler=[0, 1], shuffle=True)


def test_datasets_subset_concat_and_random_split():
    ds = tensor_dataset(retrograd)
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3 and len(ds) == 10
    sub = rdata.Subset(ds, [9, 0])
    assert [s[1].item() for s in sub] == [9, 0]
    both = rdata.ConcatDataset([sub, ds])
    assert len(both) == 12 and both[1][1].item() == 0 and both[2][1].item() == 0 and both[-1][1].item() == 9
    assert len(sub + ds) == 12
    parts = rdata.random_split(ds, [0.5, 0.3, 0.2], generator=retrograd.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p.indices) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        rdata.random_split(ds, [3, 3])
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        rdata.TensorDataset(retrograd.ones(3), retrograd.ones(4))


class Stream(rdata.IterableDataset):
    def __iter__(self):
        return iter(range(7))

    def __len__(self):
        return 7


def test_iterable_datasets_batch_in_order():
    assert [b.tolist() for b in rdata.DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in rdata.DataLoader(Stream(), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(rdata.DataLoader(Stream(), batch_size=3)) == 3
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        rdata.DataLoader(Stream(), shuffle=True)


def test_loader_feeds_a_training_loop():
    retrograd.manual_seed(0)
    x = retrograd.randn(64, 3)
    y = x @ retrograd.tensor([[1.0], [-2.0], [0.5]])
    model = retrograd.nn.Linear(3, 1)
    opt = retrograd.optim.SGD(model.parameters(), lr=0.1)
    loader = rdata.DataLoader(rdata.TensorDataset(x, y), batch_size=16, shuffle=True)
    for _ in range(30):
        for xb, yb in loader:
            opt.zero_grad()
            retrograd.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), [[1.0, -2.0, 0.5]], atol=1e-3)


def test_an_infinite_replacement_sampler_draws_lazily():
    """RandomSampler(replacement=True, num_samples=1e10), the usual endless sampler: torch draws 32 at a time."""
    from retrograd.utils.data import RandomSampler as Ours
    sampler = Ours(range(10), replacement=True, num_samples=int(1e10))
    first = list(itertools.islice(iter(sampler), 100))
    assert len(sampler) == int(1e10) and len(first) == 100 and set(first) <= set(range(10))
    assert len(list(Ours(range(5), replacement=True, num_samples=70))) == 70


@pytest.mark.parametrize("args", [([0.0, 1.0, 0.0], 1.5), ([0.0, 1.0, 0.0], True), ([0.0, 1.0], 3, 1),
                                  ([[0.5, 0.5]], 2)])
def test_weighted_random_sampler_rejects_what_torch_rejects(args):
    errors = []
    for lib in (torch, retrograd):
        with pytest.raises(ValueError) as info:
            lib.utils.data.WeightedRandomSampler(*args)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_weighted_random_sampler_follows_the_weights():
    from retrograd.utils.data import WeightedRandomSampler as Ours
    retrograd.manual_seed(0)
    draws = list(Ours([0.0, 3.0, 1.0], 4000))
    assert len(draws) == 4000 and 0 not in draws
    assert 0.70 < draws.count(1) / 4000 < 0.80
    assert sorted(Ours([1.0, 1.0, 1.0, 1.0], 4, replacement=False)) == [0, 1, 2, 3]


@pytest.mark.parametrize("size,replicas,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False),
                                                     (11, 4, True)])
def test_distributed_sampler_shares_as_torch_without_shuffle(size, replicas, drop_last):
    def shares(lib):
        from importlib import import_module
        sampler = import_module(f"{lib.__name__}.utils.data.distributed").DistributedSampler
        return [(list(s), len(s)) for s in (sampler(range(size), replicas, r, shuffle=False, drop_last=drop_last)
                                            for r in range(replicas))]

    assert shares(retrograd) == shares(torch)


def test_distributed_sampler_shuffles_per_epoch_and_ranks_agree():
    from retrograd.utils.data import DistributedSampler as Ours
    samplers = [Ours(range(12), 3, r, seed=5) for r in range(3)]
    first = [list(s) for s in samplers]
    assert sorted(sum(first, [])) == list(range(12))  # the ranks' shares partition the dataset
    assert first == [list(s) for s in samplers]  # the same epoch, the same order
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert sorted(sum(second, [])) == list(range(12)) and second != first
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        Ours(range(12), 3, 3)
    # without a process group, the defaults cannot be read: torch's error
    import torch.utils.data.distributed as theirs
    for sampler in (Ours, theirs.DistributedSampler):
        with pytest.raises(ValueError, match="^Default process group has not been initialized, please make sure to "
                           "call init_process_group.$"):
            sampler(range(12))


def test_pin_memory_warns_as_torch_without_an_accelerator_when_iteration_starts():
    """torch warns once per iter() that pinned memory is not used where no accelerator is found, and loads as usual."""
    caught = []
    for lib_data, lib in ((tdata, torch), (rdata, retrograd)):
        loader = lib_data.DataLoader(tensor_dataset(lib), batch_size=4, pin_memory=True)
        assert loader.pin_memory is True
        with pytest.warns(UserWarning) as record:
            batches = iter(loader)
        caught.append(([str(w.message) for w in record], [as_numpy(b) for b in batches]))
    assert caught[0] == caught[1]
    assert caught[0][0] == ["'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                            "memory won't be used."]


class RandomAugmented:
    """A map-style dataset whose samples draw from torch's, Python's and NumPy's generators and name their worker."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 7

    def __getitem__(self, i):
        import random

        info = lib_data_of(self.lib).get_worker_info()
        return self.lib.tensor([float(i), self.lib.rand(()).item(), random.random(), float(np.random.rand()),
                                -1.0 if info is None else float(info.id), -1.0 if info is None else info.seed % 997])


class TorchShards(tdata.IterableDataset):
    """An iterable dataset that each worker reads its share of, drawing from the generator per sample."""

    lib = torch

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = lib_data_of(self.lib).get_worker_info()
        start, step = (info.id, info.num_workers) if info else (0, 1)
        for i in range(start, self.n, step):
            yield self.lib.tensor([float(i), self.lib.randn(()).item()])


class RetrogradShards(rdata.IterableDataset):
    lib = retrograd
    __init__, __iter__ = TorchShards.__init__, TorchShards.__iter__


def reseed_numpy(lib):
    """A worker_init_fn whose effect shows in the samples (it runs in the worker, where torch's runs)."""
    def init(worker_id):
        info = lib_data_of(lib).get_worker_info()
        np.random.seed(info.seed % 997 + lib.initial_seed() % 7 + 10 * info.num_workers + worker_id)
    return init


def worker_run(lib, workers, persistent):
    """Two epochs of a shuffled loader with `workers` workers, and the main program's draws after."""
    import random

    lib.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    loader = lib_data_of(lib).DataLoader(RandomAugmented(lib), batch_size=2, shuffle=True, num_workers=workers,
                                         persistent_workers=persistent, worker_init_fn=reseed_numpy(lib))
    epochs = [[b.tolist() for b in loader] for _ in range(2)]
    return epochs, lib.rand(()).item(), random.random(), np.random.rand()


@pytest.mark.parametrize("workers, persistent", [(2, False), (3, True)])
def test_workers_seed_and_order_batches_as_torchs(workers, persistent):
    """Note [workers in one process]: each worker's seeds, worker info and init_fn, batch k from worker k % N,
    persistent workers keeping their generators across epochs, and the main program's draws after."""
    assert worker_run(retrograd, workers, persistent) == worker_run(torch, workers, persistent)


@pytest.mark.parametrize("workers, batch_size", [(2, 2), (3, 2), (2, None)])
def test_iterable_dataset_streams_come_round_robin_from_the_workers(workers, batch_size):
    def run(lib):
        lib.manual_seed(1)
        return [b.tolist() for b in lib_data_of(lib).DataLoader((TorchShards if lib is torch else RetrogradShards)(7),
                                                                batch_size=batch_size,
                                                                num_workers=workers)]
    assert run(retrograd) == run(torch)


class FailsAtTwo:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise ValueError("bad sample 2")
        return i


def test_a_workers_error_names_the_worker_as_torch_does():
    for data in (tdata, rdata):
        with pytest.raises(ValueError, match=r"^Caught ValueError in DataLoader worker process 0\.\nOriginal Traceback "
                                             r"\(most recent call last\):\n(.|\n)*ValueError: bad sample 2"):
            list(data.DataLoader(FailsAtTwo(), batch_size=1, num_workers=2))


@pytest.mark.parametrize("kwargs", [dict(num_workers=0, prefetch_factor=2), dict(persistent_workers=True)])
def test_worker_options_without_workers_are_refused_as_torch_does(kwargs):
    errors = []
    for data in (tdata, rdata):
        with pytest.raises(ValueError) as error:
            data.DataLoader(FailsAtTwo(), **kwargs)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


class _Counting:
    """An iterable dataset of range(n) for either library (ChainDataset checks the IterableDataset type)."""

    @staticmethod
    def make(lib_data, n):
        class Counting(lib_data.IterableDataset):
            def __iter__(self):
                return iter(range(n))

            def __len__(self):
                return n

        return Counting()


def test_chain_and_stack_datasets_match_torch():
    results = []
    for lib, data in ((torch, tdata), (retrograd, rdata)):
        chain = data.ChainDataset([_Counting.make(data, 2), _Counting.make(data, 3)])
        added = _Counting.make(data, 1) + _Counting.make(data, 2)
        loader = data.DataLoader(chain, batch_size=2)
        x, y = lib.arange(4.0), lib.arange(4) * 10
        tuple_stack = data.StackDataset(data.TensorDataset(x), y)
        dict_stack = data.StackDataset(a=x, b=y)
        batch = next(iter(data.DataLoader(dict_stack, batch_size=3)))
        results.append((list(chain), len(chain), type(added).__name__, list(added),
                        [b.tolist() for b in loader], [(a[0].item(), b.item()) for a, b in tuple_stack],
                        len(dict_stack), {k: v.tolist() for k, v in dict_stack[2].items()},
                        {k: v.tolist() for k, v in batch.items()},
                        [(a[0].item(), b.item()) for a, b in tuple_stack.__getitems__([3, 0])],
                        [{k: v.tolist() for k, v in row.items()} for row in dict_stack.__getitems__([1, 0])]))
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            list(data.ChainDataset([data.TensorDataset(x)]))
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            data.StackDataset(x, lib.arange(3))
        with pytest.raises(ValueError, match="At least one dataset should be passed"):
            data.StackDataset()
        with pytest.raises(ValueError, match="but both types are given"):
            data.StackDataset(x, b=y)
    assert results[0] == results[1]


def test_the_loaders_iterator_has_a_length_and_its_settings_are_fixed_as_torchs():
    """iter(loader) has len() (progress bars read it); an IterableDataset names the option it got; a negative
    timeout and setting what decides the batches after the loader is made are refused, with torch's words."""
    class Stream(tdata.IterableDataset):
        def __iter__(self):
            return iter(range(5))

    class OurStream(rdata.IterableDataset):
        def __iter__(self):
            return iter(range(5))

    outcomes = []
    for data, stream in ((tdata, Stream), (rdata, OurStream)):
        seen = []
        batches = iter(data.DataLoader(range(10), batch_size=4))
        seen.append((len(batches), len(list(batches))))
        for make in (lambda: data.DataLoader(stream(), shuffle=True), lambda: data.DataLoader(stream(), sampler=[0]),
                     lambda: data.DataLoader(stream(), batch_sampler=[[0]]),
                     lambda: data.DataLoader(range(3), timeout=-1),
                     lambda: setattr(data.DataLoader(range(3)), "batch_size", 2),
                     lambda: setattr(data.DataLoader(range(3)), "num_workers", 0)):
            try:
                make()
                seen.append("ok")
            except ValueError as error:
                seen.append(str(error))
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1]
