"""The launcher, torchrun's role: `python -m retrograd.distributed.run --nproc-per-node N script.py [args]`.

It starts N ranks (times --nnodes, over the machines of --hostfile) through the mpirun that
`pip install retrograd[distributed]` put next to this Python, each as `python -m retrograd.run`
would run the script (so `import torch` gives retrograd), with the environment torchrun sets:
RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and
TORCHELASTIC_RUN_ID. When a rank fails, the launcher names it: each rank runs under a small watcher
process (the one mpirun started) that writes down how the rank ended, the uncaught exception it
raised, the signal that killed it or its exit code, before mpirun stops every rank.

Several machines: a hostfile lists them, one `host[:slots]` a line (MPICH's format), and
`--nnodes 2 --nproc-per-node 4 --hostfile hosts` starts 4 ranks on each of 2 hosts (the same Python
environment must exist at the same path on each, reachable through ssh).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

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
        command = [_find_mpirun(options.mpirun), "-n", str(world_size)]
        if options.hostfile:
            command += ["-f", options.hostfile, "-ppn", str(options.nproc_per_node)]
        command += [sys.executable, str(Path(__file__).resolve()), "--rank-bootstrap"]  # Note [the watcher]
        command += ["-m", options.script] if options.module else [options.script]
        command += options.script_args
        env = dict(os.environ, MASTER_ADDR=options.master_addr, MASTER_PORT=str(options.master_port),
                   TORCHELASTIC_RUN_ID=os.environ.get("TORCHELASTIC_RUN_ID", "none"), **{_ERROR_DIR: error_dir})
        if options.nproc_per_node > 1:
            env.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default: ranks sharing a machine share its cores
        code = subprocess.run(command, env=env).returncode
        if code != 0:
            print(f"retrograd.distributed.run: {_failure(Path(error_dir))}", file=sys.stderr)
        return code


def _failure(error_dir: Path) -> str:
    """Which ranks failed and how, first failure first, from the reports the ranks' watchers left (ranks that
    failed alike in one line)."""
    reports = sorted(error_dir.glob("rank-*.txt"), key=lambda p: (p.stat().st_mtime, p.name))
    if not reports:
        return "the ranks were stopped before any reported a failure (see mpirun's output above)"
    ranks_by_text: dict[str, list[str]] = {}
    for report in reports:
        ranks_by_text.setdefault(report.read_text().strip(), []).append(report.stem.split("-")[1])
    return "; ".join(f"rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)} {text}"
                     for text, ranks in ranks_by_text.items())


# ---- inside each rank ------------------------------------------------------------------------------------------

# Note [the watcher]
# mpirun starts this file as a script (not `-m retrograd.distributed.run`, which would import retrograd and
# NumPy first), and it forks at once: the parent, the process mpirun knows, stays a small watcher; the child
# imports retrograd and runs the rank. The watcher can always say how the rank ended, even when it was
# killed by a signal or left through os._exit; mpirun alone names no rank then. The child dies with its
# watcher (Linux's PR_SET_PDEATHSIG), so mpirun stopping the watchers stops the ranks.


def _rank_environment() -> None:
    """Set torchrun's variables from MPI's launcher (MPICH's PMI_* or Open MPI's OMPI_COMM_WORLD_*)."""
    env = os.environ
    rank = env.get("PMI_RANK", env.get("OMPI_COMM_WORLD_RANK", "0"))
    size = env.get("PMI_SIZE", env.get("OMPI_COMM_WORLD_SIZE", "1"))
    local_rank = env.get("MPI_LOCALRANKID", env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = env.get("MPI_LOCALNRANKS", env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    env.update(RANK=rank, WORLD_SIZE=size, LOCAL_RANK=local_rank, LOCAL_WORLD_SIZE=local_size,
               GROUP_RANK=str(int(rank) // max(int(local_size), 1)), ROLE_RANK=rank, ROLE_WORLD_SIZE=size)


def _report_exceptions(error_file: Path) -> None:
    """An uncaught exception of this rank is written to `error_file` for the launcher (then printed as usual)."""
    previous = sys.excepthook

    def report(kind: type, error: BaseException, traceback: object) -> None:
        error_file.write_text(f"failed with {kind.__name__}: {error}")
        previous(kind, error, traceback)
    sys.excepthook = report


def _watch(child: int, error_file: Path) -> int:
    """The process mpirun started, once it has forked the rank: pass signals on, wait, and write down an end
    the rank could not report itself (killed by a signal, or os._exit)."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, lambda received, frame: os.kill(child, received))
    status = os.waitpid(child, 0)[1]
    if os.WIFSIGNALED(status):
        if not error_file.exists():
            error_file.write_text(f"was killed by signal {os.WTERMSIG(status)}")
        return 128 + os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    if code and not error_file.exists():
        error_file.write_text(f"exited with code {code} without raising an exception")
    return code


def _die_with_parent() -> None:
    """Linux: the rank is killed when its watcher is (mpirun stops the ranks by stopping the processes it
    started). Elsewhere a rank left behind stops at its next collective's timeout."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _bootstrap(argv: list[str]) -> int:
    """Inside mpirun: set torchrun's variables, then run the script as retrograd.run does. Under the launcher,
    the rank runs in a forked child so that how it ended can always be reported, whatever killed it."""
    _rank_environment()
    error_dir = Path(os.environ.get(_ERROR_DIR, ""))
    if error_dir.name and error_dir.is_dir() and hasattr(os, "fork"):  # not on other machines of a hostfile
        error_file = error_dir / f"rank-{os.environ['RANK']}.txt"
        child = os.fork()
        if child:
            return _watch(child, error_file)
        _die_with_parent()
        _report_exceptions(error_file)
    from retrograd import run

    return run.main(argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank-bootstrap"]:
        sys.path[0] = str(Path(__file__).resolve().parents[2])  # run as a file: import retrograd from its checkout
        sys.exit(_bootstrap(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
