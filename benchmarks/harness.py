"""How a case is measured, inside one child process: timing, memory meters and the JSON hand-off.

A `Case` is one row of the table for one library: `run(state)` is the timed call and
`prepare()` (optional, untimed) builds its state, so "backward only" rows can build the graph
outside the clock. Whatever `run` returns is dropped after the clock stops (a forward row does
not pay for freeing its graph; a row that builds and frees a graph inside `run` does).

Memory is measured two ways:
- allocation peak of one warm call, above what was live before it: tracemalloc for retrograd and
  NumPy (exact bytes of Python objects and NumPy buffers), torch's profiler memory timeline for
  torch (its tensors' storage; tracemalloc cannot see C++ allocations);
- RSS (every library): growth of the process's resident-set high-water mark (VmHWM, reset
  through /proc/self/clear_refs) over the first call after setup, before any timing. Memory the
  process touched earlier (imports, setup) is reused first, so this understates small peaks and
  includes one-time initialisation: a rough cross-check, the one reading all libraries share.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RESULT_MARKER = "BENCHMARK-RESULT "
# read by OpenMP, MKL and OpenBLAS when they load: set before NumPy or torch is imported
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


@dataclass
class Case:
    """One measured row: `run(prepare())` timed, divided by `per` (ops, nodes) to report per unit."""

    key: str
    unit: str  # "µs/op", "µs/node", "µs/call", "ms/step", "ms"
    run: Callable[[Any], Any]
    prepare: Callable[[], Any] | None = None
    per: int = 1
    memory: bool = False  # also measure the peak memory of one call
    probe: Callable[[Meter], dict[str, int]] | None = None  # custom memory readings (bytes)
    requires: tuple[str, ...] = ()  # attribute paths of the library the case needs ("nn.functional.conv2d")
    repeats: int = 20
    warmup: int = 3
    notes: list[str] = field(default_factory=list)
    clock: str | None = None  # "wall" for a case whose work runs in a process of its own (import time)


# --------------------------------------------------------------------------------------------
# Memory meters
# --------------------------------------------------------------------------------------------

class Meter:
    """Reads a process's memory: `reset()` starts a peak window, `now()` and `peak()` in bytes."""

    kind = ""

    def reset(self) -> None:
        raise NotImplementedError

    def now(self) -> int:
        raise NotImplementedError

    def peak(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Stop measuring (tracemalloc slows every allocation down)."""


class TraceMeter(Meter):
    """tracemalloc: Python objects and NumPy buffers, byte-exact, allocations since `reset` only."""

    kind = "tracemalloc"

    def reset(self) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start()
        tracemalloc.reset_peak()

    def now(self) -> int:
        return tracemalloc.get_traced_memory()[0]

    def peak(self) -> int:
        return tracemalloc.get_traced_memory()[1]

    def close(self) -> None:
        tracemalloc.stop()


class TorchProfilerMeter(Meter):
    """torch's profiler memory timeline: the peak of live tensor storage since `reset` (peak only)."""

    kind = "torch profiler"

    def __init__(self) -> None:
        self._profiler: Any = None

    def reset(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self._profiler = profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                                 with_stack=True)
        self._profiler.__enter__()

    def now(self) -> int:
        return 0  # readings are relative to reset()

    def peak(self) -> int:
        from torch.profiler._memory_profiler import Action  # private, stable across torch 2.x so far

        self._profiler.__exit__(None, None, None)
        live = peak = 0
        for _, action, _, size in self._profiler._memory_profile().timeline:
            live += size if action == Action.CREATE else -size if action == Action.DESTROY else 0
            peak = max(peak, live)
        return peak


class RssMeter(Meter):
    """Resident set size from /proc/self/status; the high-water mark is reset with clear_refs."""

    kind = "rss"

    @staticmethod
    def _status(field_name: str) -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name):
                    return int(line.split()[1]) * 1024
        raise OSError(f"{field_name} not in /proc/self/status")

    def reset(self) -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def now(self) -> int:
        return self._status("VmRSS:")

    def peak(self) -> int:
        return self._status("VmHWM:")


def peak_of_call(meter: Meter, case: Case) -> int:
    """Bytes allocated at the peak of one call of the case, above what was live just before it."""
    state = case.prepare() if case.prepare else None
    gc.collect()
    meter.reset()
    base = meter.now()
    out = case.run(state)
    peak = meter.peak() - base
    del out, state
    return max(peak, 0)


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_case(case: Case, quick: bool, rounds: int = 1, clock: str = "cpu") -> dict:
    """Per-unit times of the repeats (this round's share of them), after the warm-up calls.

    The "cpu" clock is the process's CPU time (all its threads): unlike wall time it does not count
    the time other processes held the CPU, so a shared machine measures the work itself."""
    timer = CLOCKS[case.clock or clock]
    warmup, repeats = (1, 3) if quick else (case.warmup, max(2, -(-case.repeats // rounds)))
    for _ in range(warmup):
        out = case.run(case.prepare() if case.prepare else None)
        del out
    samples = []
    for _ in range(repeats):
        state = case.prepare() if case.prepare else None
        start = timer()
        out = case.run(state)
        samples.append((timer() - start) / case.per)
        del out, state
    return summarize(samples)


def summarize(samples: list[float]) -> dict:
    """Median and quartiles of per-unit times (also used to merge the rounds of a run)."""
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"time": statistics.median(samples), "q1": quartiles[0], "q3": quartiles[2], "samples": samples}


# --------------------------------------------------------------------------------------------
# The child process: one library, some workloads
# --------------------------------------------------------------------------------------------

def resolve(module: Any, path: str) -> Any:
    """`module.a.b.c`, importing submodules on the way (`retrograd.autograd.functional`); None if absent."""
    import importlib

    obj, dotted = module, module.__name__
    for part in path.split("."):
        dotted += "." + part
        if not hasattr(obj, part):
            try:
                importlib.import_module(dotted)
            except ImportError:
                return None
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _unavailable(exc: BaseException) -> str:
    """How a failed case shows in the table: "n/a" for what is not built yet, "error" for a bug."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
    not_built = isinstance(exc, (NotImplementedError, ModuleNotFoundError))
    return f"n/a (not implemented: {text})" if not_built else f"error ({text})"


def _missing(case: Case, module: Any) -> str | None:
    for path in case.requires:
        if module is None or resolve(module, path) is None:
            return f"n/a (missing op {path.removeprefix('nn.functional.')})"
    return None


def measure_workload(cases: list[Case], module: Any, meters: list[Meter], quick: bool, rounds: int,
                     clock: str) -> dict[str, dict]:
    """Every reading of the table for a workload's cases, in three passes over them: RSS while the
    allocator is cold, then timing, then tracemalloc (which slows allocation down while it runs)."""
    rows: dict[str, dict] = {}
    for case in cases:
        missing = _missing(case, module)
        rows[case.key] = {"na": missing} if missing else {"unit": case.unit, "per": case.per, "notes": case.notes}
    rss = [m for m in meters if m.kind == "rss"]
    exact = [m for m in meters if m.kind != "rss"]

    def cold(case: Case, row: dict) -> None:
        for meter in rss:
            if case.memory:
                row["rss_peak"] = peak_of_call(meter, case)
            if case.probe is not None:
                row.setdefault("probe", {})[meter.kind] = case.probe(meter)

    def timed(case: Case, row: dict) -> None:
        row.update(time_case(case, quick, rounds, clock))

    def warm(case: Case, row: dict) -> None:
        for meter in exact:
            if case.probe is not None and meter.kind == "tracemalloc":
                row.setdefault("probe", {})[meter.kind] = case.probe(meter)
            if case.memory:
                row["alloc_peak"] = peak_of_call(meter, case)
            meter.close()

    for measure in (cold, timed, warm):
        for case in cases:
            if "na" not in rows[case.key]:
                try:
                    measure(case, rows[case.key])
                except Exception as exc:  # noqa: BLE001 - a broken op must show in the table, not end the suite
                    rows[case.key] = {"na": _unavailable(exc)}
    return rows


def environment(lib: str, threads: int) -> dict:
    """What this child ran with: versions and the thread pools actually in use."""
    import platform

    import numpy as np

    env: dict[str, Any] = {"python": platform.python_version(), "numpy": np.__version__}
    try:
        from threadpoolctl import threadpool_info

        env["blas"] = [f"{p['internal_api']} {p.get('version') or ''} ({p['num_threads']} threads)".replace("  ", " ")
                       for p in threadpool_info()]
    except ImportError:
        env["blas"] = ["threadpoolctl not installed: pools set through OMP/MKL/OPENBLAS_NUM_THREADS"]
    if lib == "torch":
        import torch

        env["torch"] = torch.__version__
        env["torch_threads"] = f"{torch.get_num_threads()} intra-op, {torch.get_num_interop_threads()} inter-op"
    return env


def child_main(lib: str, workload_keys: list[str], quick: bool, threads: int, rounds: int, clock: str) -> None:
    """Entry point of a child process: measure the given workloads on one library, print JSON."""
    from .workloads import WORKLOADS, Lib

    if lib == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)
    library = Lib(lib)
    meters: list[Meter] = []
    try:
        RssMeter().reset()
        meters.append(RssMeter())
    except OSError:
        pass  # no /proc: RSS columns stay empty
    meters.append(TorchProfilerMeter() if lib == "torch" else TraceMeter())
    results = {}
    for key in workload_keys:
        workload = WORKLOADS[key]
        cases = workload.build(library, quick)
        results[key] = measure_workload(cases, library.module, meters, quick, rounds, clock)
        del cases
        gc.collect()
    payload = {"lib": lib, "results": results, "env": environment(lib, threads)}
    sys.stdout.write(RESULT_MARKER + json.dumps(payload) + "\n")
