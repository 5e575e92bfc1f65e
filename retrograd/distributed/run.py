"""The launcher, torchrun's role: `python -m retrograd.distributed.run --nproc-per-node N script.py [args]`.

It starts N ranks (times --nnodes, over the machines of --hostfile) through the mpirun that
`pip install retrograd[distributed]` put next to this Python, each as `python -m retrograd.run`
would run the script (so `import torch` gives retrograd), with the environment torchrun sets:
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and
TORCHELASTIC_RUN_ID. When a rank fails, the launcher names it: a rank that raised writes its error to
a file before every rank is stopped; a rank that died (killed, os._exit) is found from the process id
that mpirun reports.

Several machines: a hostfile lists them, one `host[:slots]` a line (MPICH's format), and
`--nnodes 2 --nproc-per-node 4 --hostfile hosts` starts 4 ranks on each of 2 hosts (the same Python
environment must exist at the same path on each, reachable through ssh).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

_ERROR_DIR = "RETROGRAD_DISTRIBUTED_ERROR_DIR"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m retrograd.distributed.run",
                                     description="Start a training script on several ranks through mpirun.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                        help="ranks per machine (default 1)")
    parser.add_argument("--nnodes", type=int, default=1, help="number of machines (default 1)")
    parser.add_argument("--hostfile", help="MPICH hostfile: the machines, one `host[:slots]` a line")
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                        help="MASTER_ADDR for the script (MPI needs none)")
    parser.add_argument("--master-port", "--master_port", type=int, default=29500,
                        help="MASTER_PORT for the script (MPI needs none)")
    parser.add_argument("--mpirun", help="the mpirun to use (default: the one next to this Python, else PATH's)")
    parser.add_argument("-m", "--module", action="store_true", help="run the script argument as a module")
    parser.add_argument("script", help="the training script (or module with -m)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def _find_mpirun(given: str | None) -> str:
    if given:
        return given
    found = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
    if found is None:
        raise SystemExit("retrograd.distributed.run: mpirun not found; pip install 'retrograd[distributed]' "
                         "(mpi4py and mpich) or pass --mpirun")
    return found


def main(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    world_size = options.nproc_per_node * options.nnodes
    with tempfile.TemporaryDirectory(prefix="retrograd-run-") as error_dir:
        command = [_find_mpirun(options.mpirun), "-print-all-exitcodes", "-n", str(world_size)]
        if options.hostfile:
            command += ["-f", options.hostfile, "-ppn", str(options.nproc_per_node)]
        command += [sys.executable, "-m", "retrograd.distributed.run", "--rank-bootstrap"]
        command += ["-m", options.script] if options.module else [options.script]
        command += options.script_args
        env = dict(os.environ, MASTER_ADDR=options.master_addr, MASTER_PORT=str(options.master_port),
                   TORCHELASTIC_RUN_ID=os.environ.get("TORCHELASTIC_RUN_ID", "none"), **{_ERROR_DIR: error_dir})
        if options.nproc_per_node > 1:
            env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default: ranks sharing a machine share its cores
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace")
        streams = [_Forwarder(process.stdout, sys.stdout), _Forwarder(process.stderr, sys.stderr)]
        code = process.wait()
        for stream in streams:
            stream.join()
        if code != 0:
            report = _failure(Path(error_dir), "".join(stream.text for stream in streams))
            print(f"retrograd.distributed.run: {report}", file=sys.stderr)
        return code


class _Forwarder(threading.Thread):
    """Copies one of mpirun's streams to ours line by line, keeping what mpirun itself says about the ranks'
    ends (its lines start with '=' or '[mpiexec'; the exit code list it prints for us is kept only)."""

    def __init__(self, source: IO[str], target: IO[str]) -> None:
        super().__init__(daemon=True)
        self.source, self.target, self.text = source, target, ""
        self.start()

    def run(self) -> None:
        for line in self.source:
            if line.startswith(("=", "[mpiexec")):
                self.text += line
                if "Exit codes:" in line:  # asked for by the launcher, read by _failure, not the user's
                    continue
            self.target.write(line)
            self.target.flush()


def _failure(error_dir: Path, mpirun_said: str) -> str:
    """Which rank failed, and how. First the ranks' own reports of an uncaught exception; else a rank that
    exited with a nonzero code (mpirun's -print-all-exitcodes list, raw wait statuses in rank order, in which
    the ranks it stopped afterwards show 0 or a signal); else the process mpirun saw die of a signal."""
    errors = sorted(error_dir.glob("error-*.txt"), key=lambda p: int(p.stem.split("-")[1]))
    if errors:
        return "; ".join(f"rank {p.stem.split('-')[1]} failed with {p.read_text().strip()}" for p in errors)
    listed = re.search(r"Exit codes: (.*)", mpirun_said)
    statuses = [int(s) for s in re.findall(r"\d+", re.sub(r"\[[^]]*\]", "", listed.group(1)))] if listed else []
    exited = [f"rank {rank} exited with code {status >> 8}" for rank, status in enumerate(statuses)
              if status & 0x7F == 0 and status >> 8]
    if exited:
        return "; ".join(exited) + " without raising an exception"
    pids = {p.read_text().strip(): p.stem.split("-")[1] for p in error_dir.glob("pid-*.txt")}
    dead = re.search(r"PID (\d+) RUNNING AT \S+\s*=\s*EXIT CODE: (\d+)", mpirun_said)
    if dead and dead.group(1) in pids:
        return f"rank {pids[dead.group(1)]} was killed by signal {dead.group(2)}"
    return "a rank failed without reporting how (see mpirun's output above)"


# ---- inside each rank ------------------------------------------------------------------------------------------


def _rank_environment() -> None:
    """Set torchrun's variables from MPI's launcher (MPICH's PMI_* or Open MPI's OMPI_COMM_WORLD_*)."""
    env = os.environ
    rank = env.get("PMI_RANK", env.get("OMPI_COMM_WORLD_RANK", "0"))
    size = env.get("PMI_SIZE", env.get("OMPI_COMM_WORLD_SIZE", "1"))
    local_rank = env.get("MPI_LOCALRANKID", env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = env.get("MPI_LOCALNRANKS", env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    env.update(RANK=rank, WORLD_SIZE=size, LOCAL_RANK=local_rank, LOCAL_WORLD_SIZE=local_size,
               GROUP_RANK=str(int(rank) // max(int(local_size), 1)), ROLE_RANK=rank, ROLE_WORLD_SIZE=size)


def _report_errors(error_dir: str) -> None:
    """Leave this rank's process id for the launcher, and its uncaught exception if it raises one."""
    rank = os.environ["RANK"]
    Path(error_dir, f"pid-{rank}.txt").write_text(str(os.getpid()))
    previous = sys.excepthook

    def report(kind: type, error: BaseException, traceback: object) -> None:
        Path(error_dir, f"error-{rank}.txt").write_text(f"{kind.__name__}: {error}")
        previous(kind, error, traceback)
    sys.excepthook = report


def _bootstrap(argv: list[str]) -> int:
    from .. import run

    _rank_environment()
    if os.environ.get(_ERROR_DIR):
        _report_errors(os.environ[_ERROR_DIR])
    return run.main(argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank-bootstrap"]:
        sys.exit(_bootstrap(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
