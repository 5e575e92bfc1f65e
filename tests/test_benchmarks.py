"""The benchmark suite runs end to end (quick mode) and prints its table; nothing about time is asserted."""

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def test_quick_suite_prints_every_workload():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "| workload | case | unit | retrograd | torch | NumPy floor |" in out
    for number in range(1, 12):  # the micro-workloads (1-7) and the real models (8-11)
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


def test_gap_charges_every_backward_node_to_its_layer():
    """`benchmarks.gap` names each node of the MLP's backward graph after the floor's phase it matches."""
    import retrograd
    from benchmarks import gap

    nnf = retrograd.nn.functional
    params = [retrograd.randn(*shape, requires_grad=True) for shape in ((5, 4), (5,), (3, 5), (3,), (2, 3), (2,))]
    h = nnf.relu(nnf.linear(retrograd.randn(6, 4), params[0], params[1]))
    h = nnf.relu(nnf.linear(h, params[2], params[3]))
    loss = nnf.cross_entropy(nnf.linear(h, params[4], params[5]), retrograd.tensor([0, 1, 0, 1, 1, 0]))
    phase_of = gap._backward_phases(loss.grad_fn)
    named = {(type(node).__name__, phase) for node, phase in phase_of.items()}
    assert {phase for _, phase in named} == {"backward: cross-entropy", "backward: relu 1", "backward: relu 2",
                                             "backward: linear 1", "backward: linear 2", "backward: linear 3"}
    assert ("LogSoftmaxBackward0", "backward: cross-entropy") in named
    assert {phase for name, phase in named if name == "AddmmBackward0"} == {"backward: linear 1", "backward: linear 2",
                                                                            "backward: linear 3"}
    leaves = {node.variable: phase for node, phase in phase_of.items() if hasattr(node, "variable")}
    assert [leaves[p] for p in params] == [f"backward: linear {k}" for k in (1, 1, 2, 2, 3, 3)]


def test_gap_times_both_steps_phase_by_phase():
    """`python -m benchmarks.gap` (a few steps): every phase of the floor, the same phases for retrograd
    plus the engine's tail, and a whole-step row."""
    from benchmarks import floor, gap

    order, medians, totals = gap.measure(batch=64, steps=2, warmup=1)
    marked = []
    floor_phases = [p for p in order if p not in (gap.AFTER_LAST_NODE, gap.RETURN)]
    arrays = [np.zeros(s, np.float32) for s in ((512, 784), (512,), (256, 512), (256,), (10, 256), (10,))]
    floor.mlp_step(arrays, np.zeros((2, 784), np.float32), np.array([0, 1]), 0.1, marked.append)
    assert floor_phases == marked
    assert all(medians["retrograd"][p] > 0 for p in order)
    assert medians["floor"][gap.AFTER_LAST_NODE] == 0
    assert all(totals[side] >= max(medians[side].values()) for side in totals)
    text = gap.table(order, medians, totals)
    assert text.count("\n") == len(order) + 2 and "| whole step (median of totals) |" in text


def test_row_winograd_is_the_convolution():
    """benchmarks/winograd.py's F(2,3) forward gives conv2d's values (float64; an odd width, a last part short)."""
    import torch

    from benchmarks.winograd import RowWinograd

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((5, 3, 7, 9)), rng.standard_normal((4, 3, 3, 3))
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(RowWinograd(x, w, part=2)(), expected, rtol=1e-12, atol=1e-12)
