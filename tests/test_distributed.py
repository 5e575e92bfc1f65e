"""retrograd.distributed over MPI: each test starts ranks with the virtualenv's mpirun (2 and 4 of them,
oversubscribing small machines) running a script from tests/distributed/, always under a timeout.

The collectives are checked against their NumPy definitions inside the ranks; DDP training against
single-process training on the whole batch; the single-process API (answers and error texts) against
torch's gloo backend; faults by the ranks' exit and the error that names the failed rank.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "distributed"
BIN = Path(sys.executable).parent
MPIRUN = str(BIN / "mpirun")
TIMEOUT = 240  # seconds for a whole run of ranks: far above their few seconds, so only a hang reaches it


def ranks(n: int, script: str, *args: str) -> subprocess.CompletedProcess:
    """Run tests/distributed/<script> on n ranks through mpirun."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([MPIRUN, "-n", str(n), sys.executable, str(SCRIPTS / script), *args], capture_output=True,
                          text=True, timeout=TIMEOUT, env=env)


def launcher(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "retrograd.distributed.run", *args], capture_output=True, text=True,
                          timeout=TIMEOUT)


def ranks_done(stdout: str) -> list[int]:
    """The ranks that printed "ok <rank>" (mpirun may join the ranks' lines without their newlines)."""
    return sorted(int(r) for r in re.findall(r"ok (\d+)", stdout))


def json_objects(stdout: str) -> list:
    """The JSON objects the ranks printed, wherever mpirun's joining of their lines left them."""
    decoder, found, at = json.JSONDecoder(), [], stdout.find("{")
    while at != -1:
        value, end = decoder.raw_decode(stdout, at)
        found.append(value)
        at = stdout.find("{", end)
    return found


@pytest.mark.parametrize("n", [2, 4])
def test_every_collective_matches_its_numpy_definition(n):
    run = ranks(n, "collectives.py")
    assert run.returncode == 0, run.stderr
    assert ranks_done(run.stdout) == list(range(n))


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_ddp_training_equals_single_process_training_on_the_whole_batch(n, model):
    """20 SGD steps with momentum; rank r starts from its own random weights, which DDP replaces by rank 0's."""
    run = ranks(n, "ddp_train.py", model)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["difference"] < 1e-10 and result["replicas_equal"]
    assert result["keys"] == ["module.0.weight", "module.0.bias"]


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_gradient_accumulation_with_no_sync(n):
    run = ranks(n, "ddp_train.py", "mlp", "accumulate")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["difference"] < 1e-10


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_overlap_unused_parameters_model_check_and_buffers(n):
    """Buckets start their all-reduce during backward; find_unused_parameters averages with zeros and leaves
    parameters unused everywhere without a gradient; without it the next forward names the parameters; a
    model that differs between ranks is refused; buffers come from rank 0."""
    run = ranks(n, "ddp_features.py")
    assert run.returncode == 0, run.stderr
    assert ranks_done(run.stdout) == list(range(n))


def test_single_process_api_answers_as_torch_gloo():
    """World size 1: results, flags and error texts of the API as torch's gloo backend gives them."""
    answers = {}
    for name in ("torch", "retrograd"):
        run = subprocess.run([sys.executable, str(SCRIPTS / "single_process.py"), name], capture_output=True,
                             text=True, timeout=TIMEOUT)
        assert run.returncode == 0, run.stderr
        answers[name] = json.loads(run.stdout)
    assert answers["retrograd"] == answers["torch"]
    assert answers["torch"]["before"][0] == ["ValueError", "Default process group has not been initialized, please "
                                             "make sure to call init_process_group."]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize(("how", "report"), [
    ("raise", r"rank 1 failed with ValueError: rank 1 gives up"),
    ("exit", r"rank 1 exited with code 3 without raising an exception"),
    ("kill", r"rank 1 was killed by signal 9"),
    ("shapes", r"ranks? [\d, ]+ failed with RuntimeError: all_reduce: the ranks' tensors differ in shape or "
               r"dtype: rank 0 has float32 \[2\], rank 1 has float32 \[3\]"),
    ("absent", r"ranks? [\d, ]+ failed with RuntimeError: \[rank [023]\] all_reduce \(shape check\) timed out after "
               r"3 s: another rank did not take part"),
])
def test_a_failing_rank_stops_every_rank_and_the_launcher_names_it(n, how, report):
    """A rank that raises, exits, is killed, passes another shape, or never arrives: no rank goes on, none
    hangs (a missing rank is noticed after the group's timeout), and the launcher's last line names the rank."""
    run = launcher("--nproc-per-node", str(n), str(SCRIPTS / "faults.py"), how)
    assert run.returncode != 0
    assert re.search("^retrograd.distributed.run: " + report, run.stderr.splitlines()[-1]), run.stderr
    assert "finished" not in run.stdout


def test_the_launcher_sets_torchruns_environment_and_runs_torch_scripts_on_retrograd():
    run = launcher("--nproc-per-node", "2", "--master-port", "29511", str(SCRIPTS / "environment.py"), "--lr", "3")
    assert run.returncode == 0, run.stderr
    lines = sorted(json_objects(run.stdout), key=lambda d: d["rank"])
    assert [d["rank"] for d in lines] == [0, 1]
    for rank, seen in enumerate(lines):
        assert seen["module"] == "retrograd" and seen["world"] == 2 and seen["args"] == ["--lr", "3"]
        assert seen["env"] == {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"}
        assert seen["indices"] == list(range(10))[rank::2]  # DistributedSampler reads the default group
        assert seen["ddp"] == "retrograd.distributed.ddp"


def test_importing_the_package_imports_no_mpi():
    code = ("import sys, retrograd, retrograd.distributed, retrograd.nn.parallel; "
            "assert retrograd.distributed.is_available(); assert 'mpi4py' not in sys.modules, 'imported'")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr


def test_the_ddp_example_trains_on_two_ranks():
    """examples/ddp_digits.py, the README's multi-process run: rank 0 reports 4 epochs, ending above 85%."""
    run = launcher("--nproc-per-node", "2", str(Path(__file__).parent.parent / "examples" / "ddp_digits.py"))
    assert run.returncode == 0, run.stderr
    epochs = run.stdout.splitlines()
    assert len(epochs) == 4 and all(line.endswith("(2 ranks)") for line in epochs)
    assert float(epochs[-1].split("test accuracy ")[1].split("%")[0]) > 85
