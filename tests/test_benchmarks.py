"""The benchmark suite runs end to end (quick mode) and prints its table; nothing about time is asserted."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_suite_prints_every_workload():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "| workload | case | unit | retrograd | torch | NumPy floor |" in out
    for number in range(1, 8):  # the seven workloads of the speed issue
        assert f"\n| {number}. " in out, f"workload {number} missing from the table"
    # every cell holds a number or says why not: "n/a (...)" for what is not built yet is fine, while
    # "error (...)" means a workload broke, which the suite reports but this test does not accept
    errors = [line for line in out.splitlines() if "| error (" in line]
    assert not errors, "\n".join(errors)
    assert "child failed" not in out


def test_profile_repeat_runs_each_phase_that_often(monkeypatch):
    """`python -m benchmarks.profile --repeat N` (the instruction-count mode) runs every selected phase N times."""
    from benchmarks import profile

    runs = []
    real = profile.phases

    def counted(quick, keys):
        out = real(quick, keys)
        for name, case, _ in out:
            run = case.run
            case.run = lambda state, run=run, name=name: runs.append(name) or run(state)
        return out

    monkeypatch.setattr(profile, "phases", counted)
    profile.main(["--quick", "--only", "overhead", "--repeat", "2"])
    assert len(runs) == 6 and len(set(runs)) == 3  # workload 1's three phases, twice each
