"""Where retrograd's microseconds go: `python -m benchmarks.profile` (findings in PROFILE.md).

Profiles the forward and the backward of workloads 1 (elementwise chain) and 2 (scalar MLP)
and the training step of workload 3 (MLP) on retrograd, each phase on its own, and prints per
phase:
- the unprofiled time per op (the figure to explain);
- self time by part of the machinery (dispatch, _wrap, node creation, engine loop, generated
  backward, _fit, accumulation, NumPy kernels ...), from pyinstrument's samples (low overhead,
  so its shares hold for the unprofiled time) when pyinstrument is installed, and from cProfile
  (CPU time; exact call counts, but its per-call overhead inflates the call-heavy parts);
- the functions with the most self time, with calls per op.
`--micro` times the building blocks of one op alone instead.
C functions (builtins, NumPy's methods) are charged to the Python function that called them;
NumPy ufuncs are not functions to cProfile, so their time is already in their caller's.
pyinstrument is not a dependency of the project: `pip install pyinstrument` to get its column.
BLAS runs single-threaded as in the suite unless OPENBLAS_NUM_THREADS etc. say otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from types import CodeType
from typing import Any

from .harness import THREAD_VARIABLES, Case, time_case

CodeKey = tuple[str, int, str]  # (file, first line, name): how both profilers name a function


def _key(code: CodeType) -> CodeKey:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _code(obj: Any) -> CodeType | None:
    obj = getattr(obj, "fget", obj)  # properties
    obj = getattr(obj, "__func__", obj)
    return getattr(obj, "__code__", None)


def categories() -> dict[CodeKey, str]:
    """Every function of the machinery, named by the part of the per-op cost it belongs to."""
    import retrograd
    from retrograd import _tensor
    from retrograd.autograd import engine, graph
    from retrograd.ops import registry

    parts: dict[str, list] = {
        "dispatch: apply, _arrays": [registry.apply, registry._arrays, registry.namespace, registry.Op.__call__,
                                     registry.Op.__get__],
        "_wrap (output tensor)": [_tensor._wrap, _tensor._wrap_many],
        "_record (node creation)": [registry._record, registry.SavedOutput.__init__, _tensor.Tensor._counter],
        "edge_of / AccumulateGrad lookup": [graph.edge_of, _tensor.Tensor._accumulator, _tensor.Tensor._extra_dict,
                                            _tensor.Tensor._leaf_hooks, graph.AccumulateGrad.__init__,
                                            graph.Node.__init__, graph.Node.hooks, graph.HookSet.__init__],
        "engine loop": [engine.run_backward, *(getattr(engine, n) for n in dir(engine) if n.startswith("_")
                                               and callable(getattr(engine, n))),
                        registry.OpNode.apply, registry.OpNode.release],
        "generated backward: unpack + formula glue": [registry.OpNode._unpack_saved, registry.OpNode._unpack_results,
                                                      registry.SavedOutput.unpack],
        "_fit / sum_to": [registry._fit, registry.sum_to],
        "accumulation into .grad": [graph.accumulate_into, graph.AccumulateGrad.apply, graph._stealable,
                                    graph._copy_of, _tensor.Tensor._post_acc_hooks],
        "autograd entry (backward, _make_grads)": [retrograd.autograd.backward, retrograd.autograd._make_grads,
                                                   retrograd.autograd._tensors, _tensor.Tensor.backward],
    }
    table = {_key(c): part for part, fns in parts.items() for fn in fns if (c := _code(fn)) is not None}
    for op in registry.OPS.values():
        if (c := _code(op.forward)) is not None:
            table.setdefault(_key(c), "op forwards (NumPy kernels)")
    return table


def _part(key: CodeKey, table: dict[CodeKey, str]) -> str:
    """The part a function belongs to: listed above, else by where it lives."""
    if key in table:
        return table[key]
    path, _, name = key
    path = path.replace(os.sep, "/")
    if path == "<string>" and name == "backward":
        return "generated backward: unpack + formula glue"
    if "/retrograd/ops/" in path:
        return "op wrappers and Tensor operators"
    if "/retrograd/autograd/grad_mode" in path:
        return "grad mode (no_grad, set_grad_enabled)"
    if "/retrograd/_dtype" in path or name == "dtype":
        return "dtype objects and promotion"
    if "/retrograd/" in path:
        return "other retrograd: " + path.rsplit("/retrograd/", 1)[1]
    if "/benchmarks/" in path:
        return "workload code (the user's loop)"
    return "other: " + name


def cprofile_parts(profile: cProfile.Profile, table: dict[CodeKey, str]) -> tuple[dict[str, float], pstats.Stats]:
    """Self time per part; a C function's time goes to the parts of its callers, call by call."""
    stats = pstats.Stats(profile)
    parts: dict[str, float] = defaultdict(float)
    for func, (_, _, tottime, _, callers) in stats.stats.items():
        if func[2].startswith("<method 'disable' of '_lsprof"):
            continue
        if func[0] == "~":  # a C function: charge its callers
            for caller, (_, _, caller_tt, _) in callers.items():
                parts[_part(caller, table)] += caller_tt
            if not callers:
                parts["other: " + func[2]] += tottime
        else:
            parts[_part(func, table)] += tottime
    return parts, stats


def pyinstrument_parts(run: Callable[[], list], table: dict[CodeKey, str]) -> dict[str, float] | None:
    """Self time per part from pyinstrument's samples, or None when pyinstrument is not installed."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return None
    profiler = Profiler(interval=0.0001)
    profiler.start()
    outs = run()
    profiler.stop()
    del outs
    parts: dict[str, float] = defaultdict(float)
    stack = [(profiler.last_session.root_frame(), None)]
    while stack:
        frame, owner = stack.pop()
        if "/pyinstrument/" in (frame.file_path or ""):
            continue  # the profiler's own stop()
        if frame.is_synthetic:  # "[self]" and the like: time of the frame above
            if owner is not None:
                parts[owner] += frame.time
            continue
        owner = _part((frame.file_path, frame.line_no, frame.function), table)
        for child in frame.children:
            stack.append((child, owner))
        if not frame.children:
            parts[owner] += frame.time
    return parts


def phases(quick: bool, keys: list[str]) -> list[tuple[str, Case, int]]:
    """(name, case, ops per call) for the phases profiled, from the suite's own cases."""
    from .workloads import WORKLOADS, Lib

    lib = Lib("retrograd")
    out = []
    for key, wanted in (("overhead", ("forward only (graph recorded)", "backward only", "forward, no_grad")),
                        ("scalar", ("forward only (graph recorded)", "backward only")),
                        ("mlp", ("step, batch 64", "step, batch 1024"))):
        if key not in keys:
            continue
        for case in WORKLOADS[key].build(lib, quick):
            if case.key in wanted:
                out.append((f"{WORKLOADS[key].title.split(':')[0]}: {case.key}", case, case.per))
    return out


def report(name: str, case: Case, per: int, table: dict[CodeKey, str], seconds: float, top: int) -> None:
    unit = case.unit.split("/")[1] if "/" in case.unit else "call"
    timing = time_case(case, quick=False)
    per_unit = timing["time"] * 1e6  # µs per op / node / step
    gc.disable()
    without_gc = time_case(case, quick=False)["time"] * 1e6
    gc.enable()
    calls = max(1, int(seconds / (timing["time"] * per)))

    def runner() -> Callable[[], list]:
        """The timed part only: states are prepared beforehand and outputs freed afterwards."""
        states = [case.prepare() if case.prepare else None for _ in range(calls)]
        return lambda: [case.run(state) for state in states]

    sampled = pyinstrument_parts(runner(), table)
    run = runner()
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    outs = run()
    profile.disable()
    del outs, run
    traced, stats = cprofile_parts(profile, table)
    ops = calls * per
    print(f"\n## {name}: {per_unit:.2f} µs/{unit} unprofiled, CPU time ({without_gc:.2f} with the garbage "
          f"collector off; profiled: {calls} calls of {per} {unit}s)\n")
    print(f"| part | pyinstrument share | µs/{unit} (share x unprofiled) | cProfile share |")
    print("|---|---:|---:|---:|")
    traced_total = sum(traced.values())
    sampled_total = sum(sampled.values()) if sampled else 0
    for part in sorted(traced, key=lambda p: -(sampled or traced).get(p, 0)):
        share = sampled.get(part, 0) / sampled_total if sampled else None
        shown = "" if share is None else f"{share:.1%} | {share * per_unit:.2f}"
        print(f"| {part} | {shown or ' | '} | {traced[part] / traced_total:.1%} |")
    print(f"\ntop {top} functions by self time (cProfile share, which inflates call-heavy code; calls per {unit}):\n")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (path, line, fn), (_, ncalls, tottime, _, _) in rows:
        where = "C" if path == "~" else f"{os.path.basename(path)}:{line}"
        print(f"  {tottime / traced_total:6.1%}  {ncalls / ops:7.2f} calls  {fn}  ({where})")


def micro() -> None:
    """The building blocks of one op, timed alone (CPU time, µs per call): the floor each part
    of the machinery could reach and what NumPy itself costs."""
    import timeit

    import numpy as np

    import retrograd as torch
    from retrograd import _tensor
    from retrograd.autograd import graph
    from retrograd.ops import registry
    from retrograd.ops.pointwise import add_op

    a = np.ones(4, dtype=np.float32)
    x = torch.tensor(a, requires_grad=True)
    c = torch.tensor(a)
    y = x * 1.0  # a non-leaf
    y_plain = torch.tensor(a)
    zero_d, scalar = a[0:1].reshape(()), np.float32(1)

    def empty() -> None:
        pass

    def fresh_leaf() -> Any:
        t = torch.tensor(a, requires_grad=True)
        return t._accumulator()

    def accumulate_twice() -> None:
        t = torch.tensor(a, requires_grad=True)
        graph.accumulate_into(t, _tensor._wrap(a.copy()))
        graph.accumulate_into(t, _tensor._wrap(a.copy()))

    def no_grad_add() -> Any:
        with torch.no_grad():
            return y + c

    blocks: list[tuple[str, Callable[[], Any]]] = [
        ("empty Python function call", empty),
        ("np.add((4,), (4,))", lambda: np.add(a, a)),
        ("np.tanh((4,))", lambda: np.tanh(a)),
        ("np.multiply(0-d, 0-d) (returns a NumPy scalar)", lambda: np.multiply(zero_d, zero_d)),
        ("np.asarray(NumPy scalar)", lambda: np.asarray(scalar)),
        ("_wrap(array)", lambda: _tensor._wrap(a)),
        ("edge_of(non-leaf)", lambda: graph.edge_of(y)),
        ("SavedOutput(tensor)", lambda: registry.SavedOutput(y)),
        ("new leaf + its AccumulateGrad", fresh_leaf),
        ("new leaf + accumulate_into twice", accumulate_twice),
        ("apply(add_op), nothing requires grad", lambda: registry.apply(add_op, (y_plain, c), (1,))),
        ("y + c, nothing requires grad", lambda: y_plain + c),
        ("y + c under no_grad (incl. the context manager)", no_grad_add),
        ("y + c, recorded (AddBackward0)", lambda: y + c),
        ("torch.tanh(y), recorded (saves its result)", lambda: torch.tanh(y)),
    ]
    print("\n## building blocks (CPU time per call, µs)\n")
    for label, fn in blocks:
        timer = timeit.Timer(fn, timer=time.process_time)
        n, _ = timer.autorange()
        best = min(timer.repeat(5, n)) / n
        print(f"  {best * 1e6:7.3f}  {label}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="profiled time per phase (2)")
    parser.add_argument("--top", type=int, default=15, help="functions listed per phase (15)")
    parser.add_argument("--quick", action="store_true", help="the suite's quick sizes")
    parser.add_argument("--micro", action="store_true", help="only time the building blocks of one op")
    parser.add_argument("--only", default="overhead,scalar,mlp", help="workloads to profile (overhead,scalar,mlp)")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="only run each phase N times (its prepare step included), untimed: a noise-free "
                             "instruction count under `valgrind --tool=callgrind` is the difference between N and 0")
    args = parser.parse_args(argv)
    for variable in THREAD_VARIABLES:  # as in the suite; read when NumPy loads its BLAS, which is not yet
        os.environ.setdefault(variable, "1")
    if args.micro:
        micro()
        return
    if args.repeat is not None:
        for _, case, _ in phases(args.quick, args.only.split(",")):
            for _ in range(args.repeat):
                case.run(case.prepare() if case.prepare else None)
        return
    table = categories()
    print(f"# retrograd profile (python {sys.version.split()[0]})")
    for name, case, per in phases(args.quick, args.only.split(",")):
        report(name, case, per, table, args.seconds, args.top)


if __name__ == "__main__":
    main()
