"""Data-parallel benchmark: retrograd.distributed (MPI) against torch's gloo backend, 1, 2 and 4 ranks.

`python -m benchmarks.distributed [--ranks 1 2 4] [--rounds 2]` runs benchmarks/ranks/distributed_rank.py (a torch
script) under `python -m retrograd.distributed.run` and under torch's `torchrun`, alternating the two in
each round, and writes the table (medians over the rounds) to benchmarks/DISTRIBUTED.md. Not part of the
test suite. On a machine with fewer cores than ranks the ranks share cores (oversubscribed), which both
libraries pay alike.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
RANK_SCRIPT = HERE / "ranks" / "distributed_rank.py"  # not beside profile.py, which would shadow the stdlib
BIN = Path(sys.executable).parent


def launch(library: str, ranks: int) -> dict:
    """One run of the rank script on `ranks` ranks; rank 0's measurements."""
    if library == "retrograd":
        command = [sys.executable, "-m", "retrograd.distributed.run", "--nproc-per-node", str(ranks)]
    else:
        command = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", str(ranks)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    run = subprocess.run([*command, str(RANK_SCRIPT)], capture_output=True, text=True, timeout=600, env=env)
    lines = [line for line in run.stdout.splitlines() if line.startswith("BENCH ")]
    if run.returncode != 0 or not lines:
        raise RuntimeError(f"{library} on {ranks} ranks failed:\n{run.stdout}\n{run.stderr}")
    return json.loads(lines[0][len("BENCH "):])


def launch_retrying(library: str, ranks: int, failures: list[str], attempts: int = 3) -> dict:
    """launch(), run again when a run crashes (noted in `failures`, which the report lists)."""
    for attempt in range(attempts):
        try:
            return launch(library, ranks)
        except RuntimeError as error:
            last_line = [line for line in str(error).splitlines() if any(c.isalpha() for c in line)][-1]
            failures.append(f"{library} on {ranks} ranks, attempt {attempt + 1}: {last_line.strip()}")
            print(failures[-1], file=sys.stderr)
    raise RuntimeError(f"{library} on {ranks} ranks failed {attempts} times")


def median_of(runs: list[dict], *path: str) -> float:
    values = []
    for run in runs:
        value = run
        for key in path:
            value = value[key]
        values.append(value)
    return statistics.median(values)


def table(results: dict, ranks: list[int], sizes: list[str]) -> str:
    rows = ["| measure | ranks | retrograd | torch (gloo) | retrograd / torch | retrograd step vs its 1 rank |",
            "|---|---:|---:|---:|---:|---:|"]

    def row(name: str, n: int, path: tuple, unit: str, scale_note: bool) -> None:
        ours, theirs = median_of(results["retrograd", n], *path), median_of(results["torch", n], *path)
        single = median_of(results["retrograd", ranks[0]], *path) if scale_note else float("nan")
        vs_one = f"{ours / single:.2f}x" if scale_note and n != ranks[0] else ""
        rows.append(f"| {name} | {n} | {ours:.3g} {unit} | {theirs:.3g} {unit} | {ours / theirs:.2f} | {vs_one} |")

    for n in ranks:
        row("DDP step, MLP 784-512-256-10, batch 64 per rank", n, ("step_ms",), "ms", True)
    for size in sizes:
        for n in ranks:
            row(f"all_reduce {float(size) * 1024:g} KiB float32: time", n, ("all_reduce", size, "ms"), "ms", False)
    for size in sizes:
        for n in ranks:
            if n > 1:
                nbytes = results["retrograd", n][0]["all_reduce"][size]["bytes"]
                ours, theirs = (bus_bandwidth(n, nbytes, median_of(results[library, n], "all_reduce", size, "ms"))
                                for library in ("retrograd", "torch"))
                rows.append(f"| all_reduce {float(size) * 1024:g} KiB: bus bandwidth | {n} | {ours:.3g} GB/s | "
                            f"{theirs:.3g} GB/s | {ours / theirs:.2f} | |")
    return "\n".join(rows)


def bus_bandwidth(ranks: int, nbytes: int, milliseconds: float) -> float:
    """GB/s by the measure NCCL's and gloo's benchmarks report: 2 (n - 1) / n * bytes / time."""
    return 2 * (ranks - 1) / ranks * nbytes / (milliseconds / 1e3) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", default=str(HERE / "DISTRIBUTED.md"))
    options = parser.parse_args()
    results: dict = {}
    failures: list[str] = []
    for round_index in range(options.rounds):
        order = ("retrograd", "torch") if round_index % 2 == 0 else ("torch", "retrograd")
        for ranks in options.ranks:
            for library in order:
                print(f"round {round_index + 1}: {library} on {ranks} rank(s)", file=sys.stderr, flush=True)
                results.setdefault((library, ranks), []).append(launch_retrying(library, ranks, failures))
    sizes = list(results["retrograd", options.ranks[0]][0]["all_reduce"])
    import numpy
    import torch

    text = (f"# Data-parallel benchmark: retrograd.distributed (MPI) vs torch (gloo)\n\n"
            f"Generated by `python -m benchmarks.distributed` on {datetime.datetime.now():%Y-%m-%d %H:%M}; do not "
            "edit by hand.\n\n"
            f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
            f"{platform.system()} {platform.release()}; load average (1 min) {os.getloadavg()[0]:.2f} after the run\n"
            f"- Python {platform.python_version()}, NumPy {numpy.__version__}, torch {torch.__version__}; "
            "one thread per rank (OMP_NUM_THREADS=1, torch.set_num_threads(1))\n"
            f"- the same script (benchmarks/ranks/distributed_rank.py) under `python -m retrograd.distributed.run` and "
            f"`torchrun --standalone`; medians of {options.rounds} round(s) that alternate the libraries, each the "
            "median over its steps; wall-clock times of rank 0\n"
            + "".join(f"- a crashed run, run again: {failure}\n" for failure in failures)
            + "\n" + table(results, options.ranks, sizes) + "\n")
    Path(options.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
