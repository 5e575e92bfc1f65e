"""Where retrograd's microseconds go: `python -m benchmarks.profile` (findings in PROFILE.md).

Profiles the forward and the backward of workloads 1 (elementwise chain) and 2 (scalar MLP)
and the training step of workload 3 (MLP) on retrograd, each phase on its own, and prints per
phase:
- the unprofiled time per op (the figure to explain);
- self time by part of the machinery (dispatch, _wrap, node creation, engine loop, generated
  backward, _fit, accumulation, NumPy kernels ...), from pyinstrument's samples (low overhead,
  so its shares hold for the unprofiled time) when pyinstrument is installed, and from cProfile
  (exact call counts, but its per-call overhead inflates the Python-heavy parts);
- the functions with the most self time, with calls per op.
C functions (builtins, NumPy's methods) are charged to the Python function that called them;
NumPy ufuncs are not functions to cProfile, so their time is already in their caller's.
pyinstrument is not a dependency of the project: `pip install pyinstrument` to get its column.
BLAS runs single-threaded as in the suite unless OPENBLAS_NUM_THREADS etc. say otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
from collections import defaultdict
from collections.abc import Callable
from types import CodeType
from typing import Any

from .harness import Case, time_case

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


def phases(quick: bool) -> list[tuple[str, Case, int]]:
    """(name, case, ops per call) for the phases profiled, from the suite's own cases."""
    from .workloads import WORKLOADS, Lib

    lib = Lib("retrograd")
    out = []
    for key, wanted in (("overhead", ("forward only (graph recorded)", "backward only", "forward, no_grad")),
                        ("scalar", ("forward only (graph recorded)", "backward only")),
                        ("mlp", ("step, batch 64", "step, batch 1024"))):
        for case in WORKLOADS[key].build(lib, quick):
            if case.key in wanted:
                out.append((f"{WORKLOADS[key].title.split(':')[0]}: {case.key}", case, case.per))
    return out


def report(name: str, case: Case, per: int, table: dict[CodeKey, str], seconds: float, top: int) -> None:
    unit = case.unit.split("/")[1] if "/" in case.unit else "call"
    timing = time_case(case, quick=False)
    per_unit = timing["time"] * 1e6  # µs per op / node / step
    calls = max(1, int(seconds / (timing["time"] * per)))

    def runner() -> Callable[[], list]:
        """The timed part only: states are prepared beforehand and outputs freed afterwards."""
        states = [case.prepare() if case.prepare else None for _ in range(calls)]
        return lambda: [case.run(state) for state in states]

    sampled = pyinstrument_parts(runner(), table)
    run = runner()
    profile = cProfile.Profile()
    profile.enable()
    outs = run()
    profile.disable()
    del outs, run
    traced, stats = cprofile_parts(profile, table)
    ops = calls * per
    print(f"\n## {name}: {per_unit:.2f} µs/{unit} unprofiled ({calls} calls of {per} {unit}s)\n")
    print(f"| part | pyinstrument share | µs/{unit} (share x unprofiled) | cProfile share | cProfile µs/{unit} |")
    print("|---|---:|---:|---:|---:|")
    traced_total = sum(traced.values())
    sampled_total = sum(sampled.values()) if sampled else 0
    for part in sorted(traced, key=lambda p: -(sampled or traced).get(p, 0)):
        share = sampled.get(part, 0) / sampled_total if sampled else None
        shown = "" if share is None else f"{share:.1%} | {share * per_unit:.2f}"
        print(f"| {part} | {shown or ' | '} | {traced[part] / traced_total:.1%} | {traced[part] / ops * 1e6:.2f} |")
    print(f"\ntop {top} functions by self time (cProfile; calls per {unit}):\n")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (path, line, fn), (_, ncalls, tottime, _, _) in rows:
        where = "C" if path == "~" else f"{os.path.basename(path)}:{line}"
        print(f"  {tottime / ops * 1e6:7.2f} µs  {ncalls / ops:6.2f} calls  {fn}  ({where})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="profiled time per phase (2)")
    parser.add_argument("--top", type=int, default=15, help="functions listed per phase (15)")
    parser.add_argument("--quick", action="store_true", help="the suite's quick sizes")
    args = parser.parse_args(argv)
    from .report import THREAD_VARIABLES

    for variable in THREAD_VARIABLES:  # as in the suite; read when NumPy loads its BLAS, which is not yet
        os.environ.setdefault(variable, "1")
    table = categories()
    print(f"# retrograd profile (python {sys.version.split()[0]})")
    for name, case, per in phases(args.quick):
        report(name, case, per, table, args.seconds, args.top)


if __name__ == "__main__":
    main()
