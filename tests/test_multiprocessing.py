"""torch.multiprocessing: Python's multiprocessing with torch's names; spawn runs fn(i, *args) per process and
reports a child's exception as torch does; tensors pass through queues as copies."""

import multiprocessing

import pytest
import torch.multiprocessing
from _mp_workers import double_in_place, exit_with, fail_on, put_square

import retrograd
import retrograd.multiprocessing as mp


def test_names_are_torchs():
    assert set(torch.multiprocessing.__all__) <= set(mp.__all__)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                 "Process", "Queue", "Pool", "get_context", "set_start_method", "get_start_method", "cpu_count"):
        assert hasattr(mp, name), name
    assert mp.Queue is multiprocessing.Queue and mp.cpu_count() == multiprocessing.cpu_count()


def test_sharing_strategies_are_torchs():
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == torch.multiprocessing.get_sharing_strategy()
    with pytest.raises(AssertionError) as theirs:
        torch.multiprocessing.set_sharing_strategy("shared_memory")
    with pytest.raises(AssertionError) as ours:
        mp.set_sharing_strategy("shared_memory")
    assert str(ours.value) == str(theirs.value)
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy(torch.multiprocessing.get_sharing_strategy())


def test_spawn_runs_fn_with_each_index():
    queue = multiprocessing.get_context("spawn").SimpleQueue()
    assert mp.spawn(put_square, args=(queue,), nprocs=2) is None
    results = dict(queue.get() for _ in range(2))
    assert {rank: t.tolist() for rank, t in results.items()} == {0: [0.0], 1: [1.0]}
    assert all(t.requires_grad and t.is_leaf for t in results.values())


def test_a_failing_process_raises_its_traceback_as_torch():
    def failure(spawn):
        with pytest.raises(Exception) as caught:
            spawn(fail_on, args=(1,), nprocs=2)
        return caught.value

    theirs, ours = failure(torch.multiprocessing.spawn), failure(mp.spawn)
    assert type(ours) is mp.ProcessRaisedException and type(theirs).__name__ == "ProcessRaisedException"
    assert ours.error_index == theirs.error_index == 1 and ours.error_pid > 0
    assert ours.msg.splitlines()[:3] == theirs.msg.splitlines()[:3]  # "", "-- Process 1 terminated ...", "Traceback"
    assert ours.msg.splitlines()[-1] == theirs.msg.splitlines()[-1] == "ValueError: rank 1 fails"
    assert 'in fail_on' in ours.msg


def test_a_process_exiting_badly_raises_as_torch():
    context = mp.start_processes(exit_with, args=(3,), nprocs=1, join=False, start_method="spawn")
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 1
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with exit code 3$") as caught:
        while not context.join():
            pass
    assert caught.value.exit_code == 3


def test_tensors_pass_through_queues_as_copies():
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    process = context.Process(target=double_in_place, args=(inbox, outbox))
    process.start()
    sent = retrograd.tensor([1.0, 2.5], dtype=retrograd.float64)
    inbox.put(sent)
    back = outbox.get(timeout=120)
    process.join()
    assert back.tolist() == [2.0, 5.0] and back.dtype == retrograd.float64
    assert sent.tolist() == [1.0, 2.5]  # a copy was doubled: nothing is shared (torch would show [2.0, 5.0])
