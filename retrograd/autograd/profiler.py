"""torch.autograd.profiler: time the ops, backward nodes and named ranges a program runs.

For example::

    with torch.autograd.profiler.profile() as prof:
        with torch.autograd.profiler.record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

What is recorded (Note [profiler events]): every op of the rule table, named as torch names the
aten op (`aten::mm`, `aten::add`), with the sequence number of the node it made; the composite ops
marked as such (`aten::linear`, `aten::matmul`: forward_ad.composite) around the rows they run;
the creation functions (`aten::randn`, `aten::zeros_like`), with torch's allocation and fill
events inside those that fill (`aten::empty`, `aten::normal_`; Note [factory events] in _creation.py);
every node the backward engine runs (`autograd::engine::evaluate_function: MulBackward0`, and
`MulBackward0` inside it, with the node's number); every `record_function` range. Events nest
by time, so a node's event holds the ops its formula ran and a range holds everything inside it.
Times are wall-clock CPU times from `time.perf_counter_ns`. Not recorded: memory
(`profile_memory`), call stacks (`with_stack`), FLOPs and modules (accepted, their columns stay
empty), torch's inner events of the creation functions that make their values in one pass
(`aten::eye`, `aten::arange`, the windows), torch's other composite
ops as such (`dropout` shows the rows it runs), ops inside vmap batching rules and forward-mode
JVP formulas (they run inside their op's event), device kernels (there are none).
`torch.profiler` (retrograd/profiler.py) builds its scheduled profiler on the recording kept here.
"""

from __future__ import annotations

import functools
import gzip
import inspect
import json
import os
import re
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from . import grad_mode
from .forward_ad import transforms
from .graph import AccumulateGrad

# Note [profiler events]
# While a profiler records, `transforms.profiler` holds its _Recording and `transforms.active` is
# set, so every op leaves the fast path of its entry point for registry._transformed_apply, which
# hands it to _Recording.run_op; with no profiler the ops pay nothing beyond the one check of
# `transforms.active` they already make. run_op times the op with the profiler switched off for
# the op's own run (its forward is NumPy; what a vmap rule or a JVP formula runs inside it is part
# of its event). The backward engine calls the thread's tracer (`grad_mode._state.tracer`, read
# once per backward pass) before and after each node: the recording takes that slot while it
# runs and passes the calls on to an `autograd.trace` that held it before. Each thread keeps its
# own stack of open events: an event's parent is the one open when it began, and its self time
# is its time less its children's. A composite function (forward_ad.composite) opens its event
# around its body with the profiler left on, so the rows it runs record inside it. The profiler only
# watches: `transforms.changes_ops` stays off for it, so a backward formula's NumPy kernel for the
# unrecorded case (registry.unrecorded_arrays) runs under it as without it, and the profile shows
# that kernel's time, not that of the differentiable formulas the unprofiled run never takes. So does
# an in-place method's direct write under no_grad (an optimizer's `add_`: `run_write` gives it its
# event), where the profile once showed an out-of-place add and a copy.


def _format_time(time_us: float) -> str:
    """torch's format for a duration in microseconds: 1.234s, 1.234ms or 1.234us."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _in_unit(time_us: float, time_unit: str | None) -> str:
    """The duration in the unit a table asked for (s, ms, us), else in torch's automatic one."""
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(time_unit or "")
    return _format_time(time_us) if scale is None else f"{time_us / scale:.3f}{time_unit}"


class _TimeStrings:
    """The `*_str` properties torch's events and averages share."""

    cpu_time_total: float
    self_cpu_time_total: float
    count: int

    @property
    def cpu_time(self) -> float:
        """The average time of one call, in microseconds."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    # no device: torch's device columns read zero
    device_time_total = self_device_time_total = cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = 0


class FunctionEvent(_TimeStrings):
    """One recorded op, node or range: its name, thread, start and end (microseconds) and nesting."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,  # noqa: A002
                 fwd_thread: int | None = None, input_shapes: list | None = None, *, node_id: int = -1,
                 sequence_nr: int = -1, is_user_annotation: bool = False, **unrecorded: Any) -> None:
        """torch's signature; what torch records beyond these (memory, devices, flops) is accepted and not kept."""
        self.id = id
        self.trace_name = name  # the chrome trace's name; torch's tables count every step's range as one name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.thread = thread
        self.fwd_thread = fwd_thread
        self.node_id = node_id
        self.sequence_nr = sequence_nr
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes
        self.is_user_annotation = is_user_annotation
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1
        self.stack: list[str] = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={self.cpu_time_total_str} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_TimeStrings):
    """The events of one key (name, and input shapes when grouped by them) summed: count and times."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes: list | None = None
        self.is_user_annotation = False
        self.cpu_parent = None
        self.stack: list[str] = []

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Add another event's (or average's) count and times."""
        if self.key is None:
            self.key, self.input_shapes, self.is_user_annotation = other.key, other.input_shapes, \
                other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (or of averages) with torch's summaries: table, key_averages, chrome trace."""

    def __init__(self, *args: Any, base_time_ns: int = 0, **options: Any) -> None:
        """A list of `*args`; torch's options (use_device, profile_memory, with_flops) change nothing here."""
        super().__init__(*args)
        self._base_time_ns = base_time_ns  # wall-clock ns at perf_counter 0, for the trace

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One average per name (per name and input shapes with group_by_input_shape), in first-seen order."""
        averages: dict[tuple, FunctionEventAvg] = {}
        for event in self:
            key = (event.key, str(event.input_shapes)) if group_by_input_shape else (event.key,)
            averages.setdefault(key, FunctionEventAvg()).add(event)
        if not group_by_input_shape:
            for average in averages.values():
                average.input_shapes = None
        return EventList(averages.values(), base_time_ns=self._base_time_ns)

    def _populate_cpu_children(self) -> None:
        """Nest the events of each thread by time, as torch does for events it did not see open and close: an
        event is the child of the innermost earlier one that still holds its whole span."""
        for thread in dict.fromkeys(event.thread for event in self):
            open_events: list[FunctionEvent] = []
            for event in sorted((e for e in self if e.thread == thread), key=lambda e: (e.start_us, -e.end_us)):
                while open_events and (event.start_us >= open_events[-1].end_us
                                       or event.end_us > open_events[-1].end_us):
                    open_events.pop()
                if open_events:
                    open_events[-1].cpu_children.append(event)
                    event.cpu_parent = open_events[-1]
                open_events.append(event)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one average, keyed "Total"."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls
        (and Input Shapes when the events carry them), sorted by `sort_by` (an attribute, descending)."""
        return _build_table(self, sort_by, row_limit, max_name_column_width, max_shapes_column_width, header,
                            top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto) in torch's JSON layout."""
        _write_chrome_trace(self, path, self._base_time_ns)


def _build_table(events: EventList, sort_by: str | None, row_limit: int, max_name_width: int | None,
                 max_shapes_width: int | None, header: str | None, top_level_only: bool,
                 time_unit: str | None) -> str:
    """The table of EventList.table, laid out as torch's _build_table lays out a CPU-only profile."""
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda event: getattr(event, sort_by.replace("cuda", "device")), reverse=True)
    has_shapes = any(event.input_shapes for event in events)
    name_width = max(len(event.key) for event in events) + 4
    if max_name_width is not None:
        name_width = min(name_width, max_name_width)
    widths = [name_width] + [12] * 6
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    if has_shapes:
        shapes_width = max(len(str(event.input_shapes)) for event in events) + 4
        widths.append(shapes_width if max_shapes_width is None else min(shapes_width, max_shapes_width))
        headers.append("Input Shapes")
    row_format = "".join("{: >" + str(width) + "}  " for width in widths)
    separator = "".join("-" * width + "  " for width in widths)
    total = sum(event.self_cpu_time_total for event in events)
    lines = []
    if header is not None:
        lines += ["=" * (sum(widths) + 2 * len(widths) - 2), header]
    if top_level_only:
        lines += ["=" * (sum(widths) + 2 * len(widths) - 2), "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for event in events:
        if shown == row_limit:
            break
        if top_level_only and event.cpu_parent is not None:
            continue
        shown += 1
        name = event.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[:max_name_width - 3] + "..."
        row = [name, _format_time_share(event.self_cpu_time_total, total),
               _in_unit(event.self_cpu_time_total, time_unit),
               _format_time_share(event.cpu_time_total, total), _in_unit(event.cpu_time_total, time_unit),
               _in_unit(event.cpu_time, time_unit), event.count]
        if has_shapes:
            row.append(str(event.input_shapes)[:widths[-1]])
        lines.append(row_format.format(*row))
    lines += [separator, f"Self CPU time total: {_in_unit(total, time_unit)}"]
    return "\n".join(lines) + "\n"


def _write_chrome_trace(events: Iterable[FunctionEvent], path: str, base_time_ns: int) -> None:
    """torch's Chrome trace: metadata events naming the process, then one complete ("X") event per
    recorded event; gzipped for a path ending in .gz, as torch's; written to a temporary file beside
    `path` and moved over it, so a reader never sees half a trace."""
    pid = os.getpid()
    events = [event for event in events if isinstance(event, FunctionEvent)]
    start = min((event.start_us for event in events), default=0.0)
    trace_events: list[dict] = [
        {"ph": "M", "name": "process_name", "ts": start, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": start, "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "ts": start, "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    for thread in sorted({event.thread for event in events}):
        trace_events += [
            {"ph": "M", "name": "thread_name", "ts": start, "pid": pid, "tid": thread,
             "args": {"name": f"thread {thread}"}},
            {"ph": "M", "name": "thread_sort_index", "ts": start, "pid": pid, "tid": thread,
             "args": {"sort_index": thread}}]
    for index, event in enumerate(sorted(events, key=lambda event: event.start_us)):
        trace_events.append({"ph": "X", "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                             "name": event.trace_name, "pid": pid, "tid": event.thread, "ts": event.start_us,
                             "dur": event.cpu_time_total, "args": {"External id": event.id, "Ev Idx": index}})
    trace = {"schemaVersion": 1, "deviceProperties": [], "trace_id": uuid.uuid4().hex.upper(),
             "host_name": socket.gethostname(), "displayTimeUnit": "ms", "baseTimeNanoseconds": base_time_ns,
             "traceEvents": trace_events, "traceName": path}
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".trace-", suffix=".json")
    try:
        with os.fdopen(descriptor, "wb") as f:
            text = json.dumps(trace).encode()
            f.write(gzip.compress(text) if path.endswith(".gz") else text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# A row is named for the overload it implements (sum_all, sum_dim, add_scalar, eq_scalar_); torch's
# profiler names the op without the overload (aten::sum, aten::add, aten::eq_).
_OVERLOAD = re.compile(r"(?<=\w)_(all|dims?|scalar(_other|_self|_base)?|tensor(_tensor|_float)?|float_tensor|rounding|"
                       r"decimals|stable|result|legacy|value|from_to|to)$")
_TORCH_OVERLOAD_NAMES = frozenset({"unique_dim", "hash_tensor"})  # rows named as torch names an op of its own


@functools.cache
def aten_name(row: str) -> str:
    """The name torch's profiler gives the op a row of the rule table implements: `aten::` and the op's name."""
    if row in _TORCH_OVERLOAD_NAMES:
        return "aten::" + row
    inplace = "_" if row.endswith("_") else ""
    base = row[:-1] if inplace else row
    if base.endswith("_copy") and _OVERLOAD.search(base[:-5]):  # squeeze_dim_copy: squeeze_copy
        return "aten::" + _OVERLOAD.sub("", base[:-5]) + "_copy" + inplace
    return "aten::" + _OVERLOAD.sub("", base) + inplace


def kineto_available() -> bool:
    """False: retrograd's profiler is its own, not torch's Kineto library (it records the same events either way)."""
    return False


def _now_us() -> float:
    return time.perf_counter_ns() / 1000.0


class _Recording:
    """The events of one profiling session, and the hooks that feed it (Note [profiler events])."""

    def __init__(self, record_shapes: bool = False) -> None:
        self.record_shapes = record_shapes
        self.events: list[FunctionEvent] = []
        self.base_time_ns = time.time_ns() - time.perf_counter_ns()
        self._open = threading.local()  # .stack: this thread's open events, innermost last
        self._tracer = None  # the thread's tracer before this recording took the slot
        self._nodes: list[tuple[FunctionEvent, FunctionEvent]] = []  # open backward-node events (outer, inner)
        self._forward_threads: dict[int, int] = {}  # a recorded op's node's sequence number -> its op's thread
        self.recording = False

    # ---- on and off ------------------------------------------------------------------------
    def start(self) -> None:
        if transforms.profiler is not None:
            raise RuntimeError("retrograd records with one profiler at a time: another profiler is already "
                               "recording")
        self._tracer = grad_mode._state.tracer
        grad_mode._state.tracer = self
        transforms.profiler = self
        transforms.update()
        self.recording = True

    def stop(self) -> EventList:
        """Stop recording; the finished events, in the order they began."""
        self.recording = False
        if transforms.profiler is self:
            transforms.profiler = None
            transforms.update()
        if grad_mode._state.tracer is self:
            grad_mode._state.tracer = self._tracer
        finished = sorted((event for event in self.events if event.end_us >= event.start_us), key=lambda e: e.start_us)
        return EventList(finished, base_time_ns=self.base_time_ns)

    # ---- events -----------------------------------------------------------------------------
    def begin(self, name: str, input_shapes: list | None = None, is_user_annotation: bool = False) -> FunctionEvent:
        """Open an event now, as a child of the innermost event open on this thread."""
        stack = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        event = FunctionEvent(len(self.events) + 1, name, threading.get_ident(), _now_us(), -1.0,  # open
                              fwd_thread=0, input_shapes=input_shapes, is_user_annotation=is_user_annotation)
        if stack:
            event.cpu_parent = stack[-1]
        stack.append(event)
        self.events.append(event)
        return event

    def innermost(self) -> str:
        """The name of the innermost event open on this thread ('' when none is)."""
        stack = getattr(self._open, "stack", None)
        return stack[-1].name if stack else ""

    def end(self, event: FunctionEvent) -> None:
        """Close `event` (and any event left open inside it, as torch closes a range left open by an error)."""
        stack = self._open.stack
        now = _now_us()
        while stack:
            inner = stack.pop()
            inner.end_us = now
            if inner.cpu_parent is not None:
                inner.cpu_parent.cpu_children.append(inner)
            if inner is event:
                return

    def run_op(self, op: Any, args: tuple, params: tuple) -> Any:
        """Run an op of the rule table inside its event, the profiler off for the op's own run."""
        from ..ops import registry  # loaded already: only ops call this

        shapes = None
        if self.record_shapes:
            inputs = args[0] if op.variadic else args
            shapes = [list(getattr(x, "shape", ())) for x in inputs]
        event = self.begin(aten_name(op.name), shapes)
        inputs = args[0] if op.variadic else args
        nodes_before = [getattr(x, "grad_fn", None) for x in inputs]
        transforms.profiler = None
        transforms.update()
        try:
            out = registry.apply(op, args, params)
        finally:
            if self.recording:  # not if another thread stopped the profiler meanwhile
                transforms.profiler = self
                transforms.update()
            self.end(event)
        node = (out[0] if isinstance(out, tuple) else out).grad_fn
        if node is not None and all(node is not before for before in nodes_before):  # the node this op made
            event.sequence_nr = node._seq  # its backward's events carry the number too (node_starting)
            self._forward_threads[node._seq] = event.thread
        return out

    def run_write(self, name: str, operands: tuple, write: Callable[..., bool], *args: Any) -> bool:
        """An in-place method's direct write under no_grad (`add_`: ops/__init__, Note [unrecorded in-place
        arithmetic]), write(*args), inside its event, as the unprofiled run takes it; when the write declines,
        the event goes and the method's general path records its own."""
        shapes = [list(getattr(x, "shape", ())) for x in operands] if self.record_shapes else None
        event = self.begin(aten_name(name), shapes)
        try:
            written = write(*args)
        finally:
            self.end(event)
        if not written:
            self.events.remove(event)
            if event.cpu_parent is not None:
                event.cpu_parent.cpu_children.remove(event)
        return written

    def run_composite(self, name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """Run a composite op (forward_ad.composite) inside an event of its own; the rows it runs record inside."""
        shapes = None
        if self.record_shapes:  # of every argument of the signature, defaults too ([] for None), as torch's schema
            bound = inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            shapes = [list(getattr(x, "shape", ())) for x in bound.arguments.values()]
        event = self.begin(name, shapes)
        try:
            return fn(*args, **kwargs)
        finally:
            self.end(event)

    # ---- the backward engine's tracer calls (autograd.trace's protocol) ---------------------
    def node_starting(self, node: Any) -> None:
        """Open the node's two events: torch's `autograd::engine::evaluate_function: MulBackward0`, which ends once
        the node's gradients are added into the next nodes' inputs, and inside it `MulBackward0`, which ends when
        the node has run (here with its hooks)."""
        name = node.name()
        outer, inner = self.begin("autograd::engine::evaluate_function: " + name), self.begin(name)
        self._nodes.append((outer, inner))
        if type(node) is not AccumulateGrad:  # whose number, UINT64_MAX, torch's events show as -1
            for event in (outer, inner):
                event.sequence_nr = node._seq
                event.fwd_thread = self._forward_threads.get(node._seq, event.thread)
        if self._tracer is not None:
            self._tracer.node_starting(node)

    def node_ran(self, node: Any, grads: list, outs: list | None) -> None:
        if self._nodes:
            self.end(self._nodes[-1][1])  # the node's own event
        if self._tracer is not None:
            self._tracer.node_ran(node, grads, outs)

    def node_finished(self, node: Any) -> None:
        if self._nodes:
            self.end(self._nodes.pop()[0])
        if self._tracer is not None:
            self._tracer.node_finished(node)

    def note_sum(self, from_shape: tuple, to_shape: tuple) -> None:
        if self._tracer is not None:
            self._tracer.note_sum(from_shape, to_shape)


class record_function:  # noqa: N801 - torch's name
    """A named range in the profile (`with record_function("forward"):` or `@record_function("step")`);
    nothing happens when no profiler records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._event: FunctionEvent | None = None
        self._recording: _Recording | None = None

    def __enter__(self) -> record_function:
        recording = transforms.profiler
        if recording is not None:
            self._recording = recording
            self._event = recording.begin(self.name, is_user_annotation=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._event is not None:
            self._recording.end(self._event)
            self._event = self._recording = None

    def __call__(self, fn: Callable) -> Callable:
        """As a decorator: each call of fn runs inside a range of this name."""
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped


class profile:  # noqa: N801 - torch's name
    """The autograd profiler (torch.autograd.profiler.profile): records while its block runs.

    After the block, `function_events` holds the events; `key_averages()`, `table()`,
    `export_chrome_trace(path)` and `total_average()` summarise them as torch's do. `use_cuda`,
    `profile_memory`, `with_stack`, `with_flops` and `with_modules` are accepted; nothing of theirs is
    recorded (see the module docstring)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None, activity_filters: dict | None = None) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.function_events: EventList | None = None
        self._recording: _Recording | None = None

    def __enter__(self) -> profile:
        if self.enabled:
            self._recording = _Recording(self.record_shapes)
            self._recording.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._recording is not None:
            self.function_events = self._recording.stop()
            self._recording = None

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, *args: Any, **kwargs: Any) -> str:
        return self._events().table(*args, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()
