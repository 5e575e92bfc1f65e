"""torch.profiler and torch.autograd.profiler: the same programs profiled by torch and by retrograd
record the same event names (ops, backward nodes, user ranges), nest them the same way, follow the
same schedule of steps, and summarise them in torch's table and Chrome trace layouts."""

import gzip
import importlib
import json
import re
import warnings

import pytest
import torch

import retrograd
import retrograd.profiler
from retrograd.autograd import profiler as legacy
from retrograd.autograd.forward_ad import transforms


def _libraries() -> list:
    """(torch, its profiler) and (retrograd, its profiler), as a script imports them."""
    return [(torch, importlib.import_module("torch.profiler")), (retrograd, retrograd.profiler)]


def _tiny_model_step(lib, profiler) -> None:
    """A forward (mm, add, relu, sum) in a user range, and its backward."""
    x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
    w = lib.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], requires_grad=True)
    with profiler.record_function("forward"):
        loss = (lib.mm(x, w) + 1).relu().sum()
    loss.backward()


def _names(lib, profiler) -> set:
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU]) as prof:
        _tiny_model_step(lib, profiler)
    return {average.key for average in prof.key_averages()}


def test_event_names_are_torchs():
    theirs, ours = (_names(lib, profiler) for lib, profiler in _libraries())
    nodes = ("SumBackward0", "ReluBackward0", "AddBackward0", "MmBackward0", "torch::autograd::AccumulateGrad")
    expected = {"forward", "aten::mm", "aten::add", "aten::relu", "aten::sum", "aten::threshold_backward",
                "aten::t", *nodes, *("autograd::engine::evaluate_function: " + node for node in nodes)}
    assert expected <= theirs  # the oracle records them all
    assert expected <= ours
    assert ours <= theirs  # nothing torch would not name so


def test_ops_nest_in_ranges_and_backward_nodes():
    x = retrograd.ones(2, 2, requires_grad=True)
    with legacy.profile() as prof:
        with legacy.record_function("outer"):
            y = (x * x).sum()
        y.backward()
    events = {}
    for event in prof.function_events:  # the first of each name
        events.setdefault(event.name, event)
    assert events["aten::mul"].cpu_parent is events["outer"]
    assert events["outer"].cpu_time_total >= events["aten::mul"].cpu_time_total + events["aten::sum"].cpu_time_total
    node_ops = [e for e in prof.function_events if e.cpu_parent is not None and e.cpu_parent.name == "MulBackward0"]
    assert {e.name for e in node_ops} == {"aten::mul"}  # MulBackward0's formula: grad * other (twice)
    assert node_ops[0].cpu_parent.cpu_parent.name == "autograd::engine::evaluate_function: MulBackward0"
    assert events["outer"].self_cpu_time_total == pytest.approx(
        events["outer"].cpu_time_total - sum(child.cpu_time_total for child in events["outer"].cpu_children))


def test_row_names_map_to_torch_op_names():
    """Rows named for an overload (sum_all, add_scalar, eq_scalar_, squeeze_dim_copy) are named as torch names
    the op; a row named as a torch op keeps its name."""
    from retrograd.ops.registry import OPS

    for row in OPS:
        if hasattr(torch.ops.aten, row):
            assert legacy.aten_name(row) == "aten::" + row
    assert [legacy.aten_name(r) for r in ("sum_all", "sum_dim", "add_scalar", "eq_scalar_", "squeeze_dim_copy")] \
        == ["aten::sum", "aten::sum", "aten::add", "aten::eq_", "aten::squeeze_copy"]


def test_record_function_as_decorator_and_without_profiler():
    @legacy.record_function("decorated")
    def double(t):
        return t * 2

    x = retrograd.ones(2)
    assert double(x).tolist() == [2.0, 2.0]  # no profiler: nothing recorded, nothing fails
    with retrograd.profiler.profile() as prof:
        double(x)
        double(x)
    counts = {average.key: average.count for average in prof.key_averages()}
    assert counts == {"decorated": 2, "aten::mul": 2}


def test_table_layout_is_torchs():
    def header_and_footer(lib, profiler):
        with profiler.profile() as prof:
            _tiny_model_step(lib, profiler)
        lines = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3).splitlines()
        return [re.split(r"\s{2,}", line.strip()) for line in lines[:3]], len(lines), lines[-1].split(":")[0]

    theirs, ours = (header_and_footer(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs
    assert ours[0][1] == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]


def test_table_rows_sort_and_limit():
    with retrograd.profiler.profile() as prof:
        _tiny_model_step(retrograd, retrograd.profiler)
    averages = prof.key_averages()
    rows = averages.table(sort_by="self_cpu_time_total", row_limit=4).splitlines()[3:7]
    names = [row.split()[0] for row in rows]
    ranked = sorted(averages, key=lambda a: a.self_cpu_time_total, reverse=True)[:4]
    assert names == [average.key.split()[0] for average in ranked]
    assert sum(a.self_cpu_time_total for a in averages) == pytest.approx(averages.self_cpu_time_total)


def test_chrome_trace_is_torchs_layout(tmp_path):
    def trace(lib, profiler, path):
        with profiler.profile() as prof:
            _tiny_model_step(lib, profiler)
        prof.export_chrome_trace(str(path))
        return json.loads(path.read_text())

    theirs = trace(torch, importlib.import_module("torch.profiler"), tmp_path / "torch.json")
    ours = trace(retrograd, retrograd.profiler, tmp_path / "ours.json")
    assert set(ours) == set(theirs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.json", "torch.json"]  # no temporary file left
    by_name = {}
    for event in ours["traceEvents"]:
        if event["ph"] == "X":
            by_name.setdefault(event["name"], event)  # the first of each name: the forward's mm
    assert by_name["forward"]["cat"] == "user_annotation" and by_name["aten::mm"]["cat"] == "cpu_op"
    theirs_keys = {key for event in theirs["traceEvents"] if event["ph"] == "X" for key in event}
    assert set(by_name["aten::mm"]) <= theirs_keys
    assert by_name["forward"]["ts"] <= by_name["aten::mm"]["ts"] and \
        by_name["aten::mm"]["ts"] + by_name["aten::mm"]["dur"] <= by_name["forward"]["ts"] + by_name["forward"]["dur"]


@pytest.mark.parametrize("arguments", [dict(wait=1, warmup=1, active=2, repeat=2), dict(wait=0, warmup=1, active=1),
                                       dict(wait=2, warmup=1, active=3, repeat=1, skip_first=2),
                                       dict(wait=3, warmup=1, active=1, repeat=2, skip_first=1, skip_first_wait=1)])
def test_schedule_records_torchs_steps(arguments):
    def cycles(lib, profiler):
        seen = []

        def ready(prof):
            seen.append(sorted(a.key for a in prof.key_averages() if a.key.startswith(("step", "ProfilerStep"))))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actions = [profiler.schedule(**arguments)(step).name for step in range(12)]
            with profiler.profile(schedule=profiler.schedule(**arguments), on_trace_ready=ready) as prof:
                for step in range(9):
                    with profiler.record_function(f"step{step}"):
                        lib.ones(2) * 2
                    prof.step()
        return actions, seen

    theirs, ours = (cycles(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs


def test_schedule_arguments_are_checked_as_torchs():
    for schedule in (torch.profiler.schedule, retrograd.profiler.schedule):
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            schedule(wait=1, warmup=1, active=0)
        with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
            schedule(wait=1, warmup=0, active=1)


def test_legacy_profiler_matches_torchs_names():
    def names(lib):
        with lib.autograd.profiler.profile() as prof:
            _tiny_model_step(lib, lib.autograd.profiler)
        return {event.name for event in prof.function_events}, prof.key_averages().table().splitlines()[1].split()

    (theirs, their_header), (ours, our_header) = names(torch), names(retrograd)
    assert ours <= theirs and "aten::mm" in ours and our_header == their_header


def test_record_shapes_groups_by_input_shape():
    a, b = retrograd.ones(2, 3), retrograd.ones(4)
    with retrograd.profiler.profile(record_shapes=True) as prof:
        a + a
        b + 1
    grouped = {(a.key, str(a.input_shapes)) for a in prof.key_averages(group_by_input_shape=True)}
    assert grouped == {("aten::add", "[[2, 3], [2, 3]]"), ("aten::add", "[[4], []]")}
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()


def test_profiling_changes_no_result_and_leaves_nothing_behind():
    """The same training step gives the same numbers under the profiler; an exception inside switches it off."""
    def step():
        retrograd.manual_seed(0)
        model = retrograd.nn.Linear(3, 2)
        optimizer = retrograd.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        for _ in range(2):
            loss = model(retrograd.ones(4, 3)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return model.weight.detach().clone()

    plain = step()
    with retrograd.profiler.profile():
        profiled = step()
    assert retrograd.equal(plain, profiled)
    with pytest.raises(ValueError), retrograd.profiler.profile():
        raise ValueError
    assert transforms.profiler is None and not transforms.active
    assert retrograd.autograd.grad_mode._state.tracer is None


def test_tensorboard_trace_handler_writes_a_trace_per_cycle(tmp_path):
    handler = retrograd.profiler.tensorboard_trace_handler(str(tmp_path / "log"), worker_name="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schedule = retrograd.profiler.schedule(wait=0, warmup=0, active=1, repeat=2)
    with retrograd.profiler.profile(schedule=schedule, on_trace_ready=handler) as prof:
        for _ in range(3):
            retrograd.ones(2) * 2
            prof.step()
    files = sorted((tmp_path / "log").iterdir())
    assert len(files) == 2 and all(re.fullmatch(r"w\.\d+\.pt\.trace\.json", f.name) for f in files)
    assert all("traceEvents" in json.loads(f.read_text()) for f in files)
    prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    assert "traceEvents" in json.loads(gzip.decompress((tmp_path / "trace.json.gz").read_bytes()))


def test_one_profiler_at_a_time():
    with retrograd.profiler.profile(), pytest.raises(RuntimeError, match="one profiler at a time"):
        with retrograd.autograd.profiler.profile():
            pass


def test_events_accumulate_across_cycles_with_acc_events():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schedule = retrograd.profiler.schedule(wait=0, warmup=0, active=1, repeat=3)
    with retrograd.profiler.profile(schedule=schedule, acc_events=True) as prof:
        for step in range(3):
            with retrograd.profiler.record_function(f"step{step}"):
                retrograd.ones(2) * 2
            prof.step()
    assert sorted(a.key for a in prof.key_averages() if a.key.startswith("step")) == ["step0", "step1", "step2"]


def test_a_trace_inside_the_profiler_still_sees_the_backward():
    x = retrograd.ones(3, requires_grad=True)
    with retrograd.profiler.profile() as prof, retrograd.autograd.trace() as steps:
        (x * 2).sum().backward()
    assert [step.node for step in steps.steps] == ["SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]
    with retrograd.autograd.trace() as steps, retrograd.profiler.profile() as prof:
        (x * 2).sum().backward()
    assert len(steps.steps) == 3
    assert "autograd::engine::evaluate_function: MulBackward0" in {a.key for a in prof.key_averages()}


def test_op_and_backward_events_carry_the_nodes_sequence_numbers():
    """Note [sequence numbers]: an op that records a node tags its event with the node's number, and the node's two
    backward events carry it too (torch's sequence_nr), with the forward's thread; ops that record no node, and
    accumulators, carry -1. Numbers are compared as differences from the first, as both count from where they are."""
    def numbered(lib, profiler):
        with profiler.profile(activities=[profiler.ProfilerActivity.CPU]) as prof:
            x = lib.ones(3, 3, requires_grad=True)
            y = lib.ones(3, 3, requires_grad=True)
            (x * y + x).sum(dim=None).backward()
        events = [e for e in prof.events() if e.name.startswith(("aten::mul", "aten::add", "aten::sum", "autograd::"))
                  or "Backward" in e.name or "AccumulateGrad" in e.name]
        first = min(e.sequence_nr for e in events if e.sequence_nr >= 0)
        forward_thread = next(e.thread for e in events if e.name == "aten::mul")
        assert all(e.fwd_thread == forward_thread for e in events if "Backward" in e.name)
        return [(e.name, e.sequence_nr - first if e.sequence_nr >= 0 else -1) for e in events
                if e.cpu_parent is None or "Backward" in e.name or "AccumulateGrad" in e.name]

    theirs, ours = (numbered(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs


def test_composite_ops_record_an_event_around_the_rows_they_run():
    """linear and matmul are composites in torch: their event (with its input shapes) holds the ops they run."""
    def tree(lib, profiler):
        layer = lib.nn.Linear(4, 3)
        with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            layer(lib.ones(5, 4))
            lib.ones(2, 3) @ lib.ones(3)
            lib.nn.functional.linear(lib.ones(5, 4), layer.weight)
        wanted = ("aten::linear", "aten::matmul", "aten::t", "aten::addmm", "aten::mv", "aten::mm")
        return [(e.name, e.input_shapes if e.name in wanted[:2] else None, [c.name for c in e.cpu_children
                                                                             if c.name in wanted])
                for e in prof.events() if e.name in wanted[:2]]

    theirs, ours = (tree(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs


def test_creation_functions_record_torchs_event():
    """A factory leaves one top-level event named as torch's (`aten::randn`, `aten::zeros_like`), with no sequence
    number."""
    def top_events(lib, profiler):
        x = lib.ones(2, 3)
        calls = [lambda: lib.zeros(2, 3), lambda: lib.ones(2), lambda: lib.empty(4), lambda: lib.full((2,), 1.5),
                 lambda: lib.rand(3), lambda: lib.randn(2, 2, requires_grad=True), lambda: lib.randint(0, 5, (3,)),
                 lambda: lib.randperm(4), lambda: lib.eye(2), lambda: lib.arange(5), lambda: lib.linspace(0, 1, 3),
                 lambda: lib.zeros_like(x), lambda: lib.ones_like(x), lambda: lib.empty_like(x),
                 lambda: lib.rand_like(x), lambda: lib.randn_like(x, dtype=lib.float64),
                 lambda: lib.full_like(x, 2.0), lambda: lib.randint_like(x, 3), lambda: lib.tril_indices(3, 3),
                 lambda: lib.hann_window(4), lambda: lib.scalar_tensor(1.0)]
        found = []
        for call in calls:
            with profiler.profile(activities=[profiler.ProfilerActivity.CPU]) as prof:
                call()
            found.append([(e.name, e.sequence_nr) for e in prof.events() if e.cpu_parent is None])
        return found

    theirs, ours = (top_events(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs


def test_filling_factories_allocate_then_fill_as_torch_records():
    """Inside a factory that fills, torch's allocation and in-place fill events, each with its parent and its
    recorded shapes (Note [factory events]): `aten::empty` then `aten::normal_`, and for a _like factory
    `aten::empty_like` around `aten::empty_strided`."""
    def inner_events(lib, profiler):
        x = lib.ones(2, 3)
        calls = [lambda: lib.zeros(2, 3), lambda: lib.ones(2), lambda: lib.empty(4), lambda: lib.full((2,), 1.5),
                 lambda: lib.rand(3), lambda: lib.randn(2, 2, requires_grad=True), lambda: lib.randint(0, 5, (3,)),
                 lambda: lib.zeros_like(x), lambda: lib.ones_like(x, dtype=lib.float16), lambda: lib.empty_like(x),
                 lambda: lib.rand_like(x), lambda: lib.randn_like(x, dtype=lib.float64), lambda: lib.full_like(x, 2.0),
                 lambda: lib.randint_like(x, 3)]
        found = []
        for call in calls:
            with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
                call()
            found.append([(e.name, e.cpu_parent.name, e.sequence_nr, e.input_shapes) for e in prof.events()
                          if e.cpu_parent is not None])
        return found

    theirs, ours = (inner_events(lib, profiler) for lib, profiler in _libraries())
    assert ours == theirs


def test_a_profiled_backward_runs_the_kernels_it_runs_unprofiled():
    """The profiler only watches: a batch norm's backward without create_graph runs its one NumPy kernel under it
    too (Note [unrecorded batch-norm backward]), as torch's runs one, not the differentiable formulas' ops."""
    def ops_under_the_node(lib, legacy_profiler):
        x = lib.randn(4, 3, 5, 5, requires_grad=True)
        with legacy_profiler.profile() as prof:
            lib.nn.functional.batch_norm(x, None, None, training=True).sum().backward()
        return {e.name for e in prof.function_events
                if e.cpu_parent is not None and e.cpu_parent.name == "NativeBatchNormBackward0"}

    theirs = ops_under_the_node(torch, torch.autograd.profiler)
    assert theirs == {"aten::native_batch_norm_backward"}  # the oracle: one kernel
    assert ops_under_the_node(retrograd, legacy) <= theirs


def test_a_profiled_optimizer_step_writes_in_place_as_unprofiled():
    """An SGD step's `add_(grad, alpha=-lr)` under no_grad writes into the parameter under the profiler too (Note
    [unrecorded in-place arithmetic]): its event is torch's `aten::add_`, with no out-of-place add or copy inside."""
    def events(lib, profiler):
        p = lib.nn.Parameter(lib.ones(3, 4))
        p.grad = lib.full((3, 4), 0.5)
        before = p.data_ptr() if lib is torch else p._data.ctypes.data
        with profiler.profile(record_shapes=True) as prof:
            with lib.no_grad():
                p.add_(p.grad, alpha=-0.5)
        after = p.data_ptr() if lib is torch else p._data.ctypes.data
        assert after == before and p.tolist() == [[0.75] * 4] * 3
        return [(e.name, e.input_shapes[:2]) for e in prof.events() if e.name.startswith("aten::")]

    theirs, ours = (events(lib, profiler) for lib, profiler in _libraries())
    assert theirs == [("aten::add_", [[3, 4], [3, 4]])]
    assert ours == theirs
