"""torch.profiler: the profiler training scripts use, with torch's schedule of steps.

For example::

    with torch.profiler.profile(activities=[ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
                                on_trace_ready=torch.profiler.tensorboard_trace_handler("./log")) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

It records what torch.autograd.profiler records (ops as `aten::` events, backward nodes,
`record_function` ranges: see retrograd/autograd/profiler.py), through the same recording. A
schedule moves the profiler through torch's actions step by step (NONE, WARMUP, RECORD,
RECORD_AND_SAVE): steps in RECORD or RECORD_AND_SAVE are recorded, each inside a
`ProfilerStep#N` range, and the end of each active cycle hands the profiler to `on_trace_ready`.
Only the CPU activity records anything (retrograd has no device kernels); memory, stacks, FLOPs
and modules are accepted and not recorded.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .autograd.profiler import EventList, _Recording, kineto_available, record_function

__all__ = ["ProfilerAction", "ProfilerActivity", "kineto_available", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What a profiler watches; retrograd records the CPU activity only."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does in a step, as a schedule says."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The action of each step: skip `skip_first` steps, then cycles of `wait` idle, `warmup` and `active`
    recorded steps (the last one saves), `repeat` times (0: until the profiler stops)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[profile], None]:
    """An on_trace_ready that writes each cycle's Chrome trace to `dir_name` as
    `{worker_name}.{time_ns}.pt.trace.json` (`.gz` added with use_gzip), the files TensorBoard's profiler plugin
    reads."""

    def handler_fn(prof: profile) -> None:
        nonlocal worker_name
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn


class profile:  # noqa: N801 - torch's name
    """Record a program's ops, backward nodes and ranges, every step or as `schedule` says (see the module
    docstring); `on_trace_ready(prof)` runs at the end of each recorded cycle, and `events()` holds that cycle's
    events (every cycle's with acc_events=True)."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        self.record_shapes = record_shapes
        self.schedule = schedule if schedule is not None else (lambda step: ProfilerAction.RECORD)
        self.record_steps = schedule is not None  # torch marks steps only under a schedule
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events  # keep the events of every cycle, not only the last one's
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recording: _Recording | None = None  # the cycle being recorded
        self._events: EventList | None = None  # the last finished cycle's events
        self._step_range: record_function | None = None

    # torch's transitions (profiler.py's action_map): what runs when the action changes from one step to the next
    def _transit(self, previous: ProfilerAction | None, current: ProfilerAction | None) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.WARMUP and current in (ProfilerAction.NONE, None):
            if current is not None:
                warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
            self._start_trace()
            self._stop_trace()
        elif previous == ProfilerAction.RECORD and current in (ProfilerAction.NONE, ProfilerAction.WARMUP):
            warnings.warn(f"Incorrect schedule: RECORD followed by {current.name}", stacklevel=3)
            self._stop_trace()
        elif previous in recording and current is None:
            self._stop_trace()
            self._trace_ready()
        elif previous == ProfilerAction.RECORD_AND_SAVE:
            self._stop_trace()
            self._trace_ready()
            if current in recording:
                self._start_trace()
        elif current in recording and previous in (ProfilerAction.NONE, ProfilerAction.WARMUP):
            self._start_trace()

    def _start_trace(self) -> None:
        self._recording = _Recording(self.record_shapes)
        self._recording.start()

    def _stop_trace(self) -> None:
        if self._recording is not None:
            events = self._recording.stop()
            self._events = events if not self.acc_events or self._events is None else \
                EventList([*self._events, *events], base_time_ns=events._base_time_ns)
            self._recording = None

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step_range(self) -> None:
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step_range(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step_range()

    def stop(self) -> None:
        self._exit_step_range()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step begins: move to the schedule's action for it."""
        self._exit_step_range()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step_range()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def events(self) -> EventList:
        """The events of the last recorded cycle."""
        if self._events is None:
            raise AssertionError("Profiler must be initialized before getting events")  # torch's words
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)
