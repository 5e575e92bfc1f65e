"""The driver: run each (workload, library) in its own child process, then print the tables.

Children get the same thread settings through the environment (read by OpenBLAS, MKL and
OpenMP when they load) and torch.set_num_threads; each prints one JSON line that the driver
collects. The full run writes the report to benchmarks/RESULTS.md as well.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from .harness import RESULT_MARKER, THREAD_VARIABLES, summarize
from .workloads import NUMPY, RETROGRAD, TORCH, WORKLOADS

ROOT = Path(__file__).resolve().parent.parent
RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS.md"
GPU_PATH = RESULTS_PATH.with_name("GPU.md")

# (workload, case) -> (baseline library, largest ratio retrograd / baseline), from the speed issue;
# baseline None: the largest time itself, in seconds
TIME_TARGETS = {
    ("overhead", "forward + backward"): (TORCH, 1.0),
    ("scalar", "forward + backward"): (TORCH, 1.0),
    ("mlp", "step, batch 64"): (NUMPY, 1.05),
    ("mlp", "step, batch 1024"): (NUMPY, 1.05),
    ("cnn", "step, batch 64"): (TORCH, 1.5),
    ("hvp", "grad of grad (autograd.grad, create_graph=True)"): (TORCH, 1.0),
    ("hvp", "autograd.functional.hvp"): (TORCH, 1.0),
    ("jacobian", "autograd.functional.jacobian, vectorize=True"): (TORCH, 1.0),
    ("import", "python -c 'import X', bytecode cached"): (None, 0.2),  # seconds, not a ratio
}
MEMORY_TARGETS = {("mlp", "step, batch 64"): 1.2, ("mlp", "step, batch 1024"): 1.2}  # vs the NumPy floor
UNIT_SCALE = {"µs": 1e6, "ms": 1e3}
NOISY = 0.3  # interquartile range above this fraction of the median gets a note


# --------------------------------------------------------------------------------------------
# Running the children
# --------------------------------------------------------------------------------------------

def run_child(lib: str, keys: list[str], quick: bool, threads: int, rounds: int, clock: str) -> dict:
    """One child process; on a crash every case of its workloads reads as an error."""
    env = dict(os.environ, **{name: str(threads) for name in THREAD_VARIABLES})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "benchmarks", "--child", lib, "--only", ",".join(keys), "--threads", str(threads),
           "--rounds", str(rounds), "--clock", clock]
    if quick:
        cmd.append("--quick")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER):])
    reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:160]
    return {"lib": lib, "results": {k: {"*": {"na": f"error (child failed: {reason})"}} for k in keys}, "env": {}}


def run_suite(keys: list[str], libs: list[str], quick: bool, threads: int, rounds: int,
              clock: str) -> tuple[dict, dict]:
    """results[workload][case][lib] and each library's environment.

    Children run one at a time, libraries interleaved workload by workload and round by round (in
    alternating order), so that load from other work on the machine falls on all of them alike."""
    per_round: dict[str, dict[str, dict[str, list]]] = {k: {} for k in keys}
    envs: dict[str, dict] = {}
    for r in range(rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        # quick: one child per library for all its workloads, which saves process start-ups
        steps = ([(lib, [k for k in keys if lib in WORKLOADS[k].libs]) for lib in order] if quick else
                 [(lib, [k]) for k in keys for lib in order if lib in WORKLOADS[k].libs])
        for lib, batch in steps:
            if not batch:
                continue
            print(f"  round {r + 1}/{rounds}: {', '.join(batch)} on {lib} ...", file=sys.stderr, flush=True)
            payload = run_child(lib, batch, quick, threads, rounds, clock)
            envs[lib] = envs.get(lib) or payload["env"]
            for key, cases in payload["results"].items():
                for case, row in cases.items():
                    per_round[key].setdefault(case, {}).setdefault(lib, []).append(row)
    results = {key: {case: {lib: merge_rounds(rows) for lib, rows in libs_rows.items()}
                     for case, libs_rows in cases.items()} for key, cases in per_round.items()}
    return results, envs


def merge_rounds(rows: list[dict]) -> dict:
    """One row from a case's rounds: all timing samples pooled, memory readings' medians."""
    failed = [row for row in rows if "na" in row]
    if failed:
        return failed[0]
    merged = dict(rows[0], **summarize([t for row in rows for t in row["samples"]]))
    for field in ("alloc_peak", "rss_peak"):
        if field in rows[0]:
            merged[field] = statistics.median(row[field] for row in rows)
    for kind, readings in rows[0].get("probe", {}).items():
        merged["probe"][kind] = {m: statistics.median(row["probe"][kind][m] for row in rows) for m in readings}
    return merged


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _time(row: dict | None) -> str:
    if row is None:
        return ""
    if "na" in row:
        return row["na"]
    return _number(row["time"] * UNIT_SCALE[row["unit"].split("/")[0]])


def _mib(n_bytes: int | None) -> str:
    return "" if n_bytes is None else f"{n_bytes / 2**20:.2f}"


def _ratio(a: dict | None, b: dict | None, field: str = "time") -> float | None:
    if not a or not b or a.get(field) is None or not b.get(field):
        return None
    return a[field] / b[field]


def _fmt_ratio(r: float | None) -> str:
    return "" if r is None else f"{r:.2f}"


def _unit(rows: dict) -> str:
    return next((r["unit"] for r in rows.values() if "unit" in r), "")


def time_table(results: dict) -> list[str]:
    lines = ["| workload | case | unit | retrograd | torch | NumPy floor | retrograd / torch | retrograd / NumPy "
             "| target | met |", "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for key, cases in results.items():
        title = WORKLOADS[key].title
        for case, rows in cases.items():
            rg, th, fl = rows.get(RETROGRAD), rows.get(TORCH), rows.get(NUMPY)
            vs_torch, vs_floor = _ratio(rg, th), _ratio(rg, fl)
            target, met = "", ""
            if (key, case) in TIME_TARGETS:
                baseline, limit = TIME_TARGETS[(key, case)]
                target = f"≤ {limit} s" if baseline is None else f"≤ {limit} vs {baseline}"
                value = (rg or {}).get("time") if baseline is None else vs_torch if baseline == TORCH else vs_floor
                met = "" if value is None else "yes" if value <= limit else "no"
            lines.append(f"| {title} | {case} | {_unit(rows)} | {_time(rg)} | {_time(th)} | {_time(fl)} "
                         f"| {_fmt_ratio(vs_torch)} | {_fmt_ratio(vs_floor)} | {target} | {met} |")
            title = ""
    return lines


def memory_table(results: dict) -> list[str]:
    lines = ["| workload | case | measure | retrograd (tracemalloc) | torch (profiler) | NumPy floor (tracemalloc) "
             "| retrograd / torch | retrograd / NumPy | target | retrograd RSS | torch RSS | NumPy floor RSS |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for key, cases in results.items():
        title = WORKLOADS[key].title
        for case, rows in cases.items():
            rg, th, fl = (rows.get(lib) or {} for lib in (RETROGRAD, TORCH, NUMPY))
            if any("alloc_peak" in r or "rss_peak" in r for r in (rg, th, fl)):
                vs_torch, vs_floor = _ratio(rg, th, "alloc_peak"), _ratio(rg, fl, "alloc_peak")
                limit = MEMORY_TARGETS.get((key, case))
                target = "" if limit is None else f"≤ {limit} vs numpy" + ("" if vs_floor is None else
                                                                         " (yes)" if vs_floor <= limit else " (no)")
                peaks = " | ".join(_mib(r.get("alloc_peak")) for r in (rg, th, fl))
                rss = " | ".join(_mib(r.get("rss_peak")) for r in (rg, th, fl))
                lines.append(f"| {title} | {case} | peak of one step | {peaks} | {_fmt_ratio(vs_torch)} "
                             f"| {_fmt_ratio(vs_floor)} | {target} | {rss} |")
                title = ""
            rg_probe, th_probe = rg.get("probe", {}), th.get("probe", {})
            for measure in rg_probe.get("tracemalloc", {}) or th_probe.get("rss", {}):
                traced, rg_rss, th_rss = (p.get(kind, {}).get(measure) for p, kind in
                                          ((rg_probe, "tracemalloc"), (rg_probe, "rss"), (th_probe, "rss")))
                lines.append(f"| {title} | {case} | {measure} | {_mib(traced)} | | | | | "
                             f"| {_mib(rg_rss)} | {_mib(th_rss)} | |")
                title = case = ""
    return lines


def notes(results: dict) -> list[str]:
    """Each case's notes (once, naming the libraries they apply to) and the rows whose quartiles are wide."""
    found: dict[tuple, list[str]] = {}
    for key, cases in results.items():
        number = WORKLOADS[key].title.split(".")[0]
        for case, rows in cases.items():
            for lib, row in rows.items():
                for note in row.get("notes", ()):
                    found.setdefault((number, case, note), []).append(lib)
                if "q1" in row and (row["q3"] - row["q1"]) / row["time"] > NOISY:
                    scale = UNIT_SCALE[row["unit"].split("/")[0]]
                    spread = f"noisy: quartiles {_number(row['q1'] * scale)} to {_number(row['q3'] * scale)}"
                    found[(number, case, spread)] = [lib]
    return [f"- {number}. {case} ({', '.join(libs)}): {note}" for (number, case, note), libs in found.items()]


def _cpu_model() -> str:
    """The CPU's name, with its family and model numbers where Linux gives them (two hosts named alike may differ)."""
    try:
        with open("/proc/cpuinfo") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line and not line.startswith("flags"))
    except OSError:
        return platform.processor() or "unknown"
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    name = fields.get("model name", platform.processor() or "unknown")
    return f"{name} (family {fields['cpu family']}, model {fields['model']})" if "cpu family" in fields else name


def _vector_extensions() -> str:
    """The widest vector instructions NumPy's loops use here: ratios move with them (with AVX-512 NumPy runs its
    float32 exp2, tanh and other transcendental functions through SVML; with AVX2 several are scalar)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        return "NumPy's vector extensions unknown"
    wide = [name for name in ("AVX512F", "AVX2", "ASIMD", "SVE") if features.get(name)]
    return "NumPy's loops use " + (", ".join(wide) if wide else "no AVX2, AVX-512, NEON or SVE")


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "retrograd"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        return head + (" + uncommitted changes in retrograd/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def header(envs: dict, quick: bool, threads: int, rounds: int, clock: str, command: str,
           load: tuple[float, float]) -> list[str]:
    any_env = next(iter(envs.values()), {})
    torch_env = envs.get(TORCH, {})
    return [
        "# Benchmark results: retrograd vs torch" + (" (quick mode: smaller sizes, 3 repeats)" if quick else ""),
        "",
        f"Generated by `{command}` on {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; do not edit by hand.",
        "",
        f"- machine: {_cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}; "
        f"{_vector_extensions()}",
        f"- Python {any_env.get('python', platform.python_version())}, NumPy {any_env.get('numpy', '?')} "
        f"({'; '.join(any_env.get('blas', []))}), torch {torch_env.get('torch', 'not installed')}",
        f"- retrograd commit {_commit()}",
        f"- load average (1 min) {load[0]:.2f} before the run, {load[1]:.2f} after (other work on the machine "
        "shares its CPUs and shows as noise)",
        f"- threads: {', '.join(f'{v}={threads}' for v in THREAD_VARIABLES)} in every child; torch "
        f"{torch_env.get('torch_threads', 'n/a')}; pools in the torch child: "
        f"{'; '.join(torch_env.get('blas', [])) or 'n/a'}",
        "",
        "Method: each (workload, library) runs in a fresh subprocess"
        + (" (quick mode: one per library)" if quick else "")
        + f", in {rounds} round(s) that interleave the libraries (alternating their order) so that load from other "
        "work falls on all of them alike. Every row is the median of all its repeats, pooled over the rounds "
        "(each round after its own warm-up calls), with Python's garbage collector on, as users run. "
        + ("Times are the process's CPU time (all its threads): unlike wall time, it leaves out the time other "
           "processes held the CPU; the import row is wall time, as its work runs in a fresh interpreter. "
           if clock == "cpu" else "Times are wall-clock. ")
        + "`forward + backward` rows and training steps include freeing the graph; `forward only` and "
        "`backward only` rows do not (the graph is built, or dropped, outside the clock).",
        "",
        "Peak memory of one warm step, above what was live before it: tracemalloc for retrograd and NumPy (exact: "
        "Python objects and NumPy buffers), torch's profiler memory timeline for torch (tensor storage only; "
        "tracemalloc cannot see C++ allocations). RSS: growth of the resident-set high-water mark over the first "
        "step after setup, before any timing; memory touched earlier is reused first, so it understates small "
        "peaks and includes one-time initialisation (a rough cross-check). Memory in MiB.",
        "",
    ]


def render(results: dict, envs: dict, quick: bool, threads: int, rounds: int, clock: str, command: str,
           load: tuple[float, float]) -> str:
    lines = [*header(envs, quick, threads, rounds, clock, command, load), "## Time", "", *time_table(results), "",
             "## Memory", "", *memory_table(results), ""]
    extra = notes(results)
    if extra:
        lines += ["## Notes", "", *extra, ""]
    return "\n".join(lines + gpu_section())


def gpu_section() -> list[str]:
    """The GPU table of GPU.md, measured separately on a lent GPU (tools/gpu_check.sh), never by this run."""
    table = next(block for block in GPU_PATH.read_text().split("\n\n") if block.startswith("|")).splitlines()
    return ["## On a GPU (measured separately)", "",
            "From `benchmarks/GPU.md` (its date, device and torch version there; `tools/gpu_check.sh` on a GPU "
            "machine), not re-run here:", "", *table, ""]


def main(argv: list[str] | None = None) -> None:
    """`python -m benchmarks [--quick] [--threads N] [--only a,b] [--libs retrograd,torch] [--output PATH]`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, 3 repeats, nothing written")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP/torch threads in every child (1)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"workloads, from {','.join(WORKLOADS)}")
    parser.add_argument("--libs", default=f"{RETROGRAD},{TORCH},{NUMPY}", help="libraries to run")
    parser.add_argument("--rounds", type=int, help="interleaved rounds the repeats are spread over (3; quick: 1)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="process CPU time (default: robust to other load on the machine) or wall time")
    parser.add_argument("--output", help="where to write the report (default: RESULTS.md after a full run)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    keys = [k for k in args.only.split(",") if k]
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    if args.child:
        from .harness import child_main

        child_main(args.child, keys, args.quick, args.threads, rounds, args.clock)
        return
    libs = [lib for lib in args.libs.split(",") if lib]
    if TORCH in libs and importlib.util.find_spec("torch") is None:
        print("torch is not installed: its columns stay empty", file=sys.stderr)
        libs.remove(TORCH)
    load_before = os.getloadavg()[0]
    results, envs = run_suite(keys, libs, args.quick, args.threads, rounds, args.clock)
    command = "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(results, envs, args.quick, args.threads, rounds, args.clock, command.strip(),
                  (load_before, os.getloadavg()[0]))
    print(text)
    complete = not args.quick and keys == list(WORKLOADS) and set(libs) == {RETROGRAD, TORCH, NUMPY}
    output = args.output or (RESULTS_PATH if complete else None)
    if output:
        Path(output).write_text(text)
        print(f"written to {output}", file=sys.stderr)
