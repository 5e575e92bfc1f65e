"""`python -m retrograd.run script.py` runs an unchanged PyTorch training script on retrograd.

The tutorial-style script below is run twice, once by Python with real torch and once through
retrograd's import hook; apart from the last line (which library answered `import torch`) the
two outputs must be identical: same losses, same gradients, same grad_fn names.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = '''
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import grad
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 8)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


# data: y = x0 * x1 on a grid, with no randomness so both libraries see the same numbers
x = torch.tensor([[a / 5, b / 5] for a in range(-5, 6, 2) for b in range(-5, 6, 2)])
y = (x[:, 0] * x[:, 1]).unsqueeze(1)
model = Net()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
optimizer = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
scheduler = StepLR(optimizer, step_size=3, gamma=0.5)
loader = DataLoader(TensorDataset(x, y), batch_size=9)
for epoch in range(6):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    scheduler.step()
    print(f"epoch {epoch} loss {total / len(loader):.6f} lr {scheduler.get_last_lr()[0]:.4f}")
print("grad_fn", loss.grad_fn.name(), model.fc1.weight.grad.shape)

t = torch.tensor(2.0, requires_grad=True)
(g,) = grad(t ** 3, t, create_graph=True)
(h,) = grad(g, t)
print("d/dt t^3 =", g.item(), " d2 =", h.item())
print("args", sys.argv[1:])
print(torch.__name__)
'''


def run(*command, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_torch_script_runs_unchanged_with_the_same_output(script, tmp_path):
    real = run(sys.executable, str(script), "--flag", cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    ours = run(sys.executable, "-m", "retrograd.run", str(script), "--flag", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    real_lines, our_lines = real.stdout.splitlines(), ours.stdout.splitlines()
    assert real_lines[-1] == "torch" and our_lines[-1] == "retrograd"
    assert our_lines[:-1] == real_lines[:-1]
    assert "args ['--flag']" in our_lines


def test_module_form_and_missing_submodules(tmp_path):
    (tmp_path / "job.py").write_text("import torch.nn.functional as F\nimport torch\nprint(F.relu(torch.tensor([-1.0, "
                                     "2.0])).tolist())\n")
    ours = run(sys.executable, "-m", "retrograd.run", "-m", "job", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == "[0.0, 2.0]"
    (tmp_path / "cuda.py").write_text("import torch.sparse\n")
    failed = run(sys.executable, "-m", "retrograd.run", str(tmp_path / "cuda.py"), cwd=tmp_path)
    assert failed.returncode == 1
    assert "torch.sparse has no retrograd counterpart" in failed.stderr
    usage = run(sys.executable, "-m", "retrograd.run", cwd=tmp_path)
    assert usage.returncode == 2 and "usage: python -m retrograd.run script.py" in usage.stdout


def test_a_relative_script_path_names_main_as_python_does(tmp_path):
    """`python x.py` makes __main__.__file__ (and so its warnings' file names) absolute, keeping sys.argv[0]."""
    (tmp_path / "where.py").write_text("import sys, warnings\nprint(__file__, sys.argv[0], __name__)\n"
                                       "warnings.warn('w')\n")
    for name in ("where.py", "./where.py"):
        real = run(sys.executable, name, cwd=tmp_path)
        ours = run(sys.executable, "-m", "retrograd.run", name, cwd=tmp_path)
        assert real.returncode == ours.returncode == 0, ours.stderr
        assert ours.stdout == real.stdout == f"{tmp_path}/{name} {name} __main__\n"
        assert ours.stderr == real.stderr


def test_install_in_process():
    code = ("import retrograd.run as r; r.install(); import torch, torch.optim as o, torch.utils.data as d; "
            "print(torch.__name__, o.__name__, d.__name__)")
    out = run(sys.executable, "-c", code, cwd=ROOT)
    assert out.stdout.split() == ["retrograd", "retrograd.optim", "retrograd.utils.data"]


def test_importing_a_submodule_keeps_the_parents_name_for_it():
    """torch.autograd.gradcheck is a function although torch/autograd/gradcheck.py exists: importing the submodule
    through the hook must not replace the function by the module (as importing torch's own does not)."""
    code = ("import retrograd.run as r; r.install(); import torch.autograd.gradcheck; "
            "from torch.autograd.gradcheck import GradcheckError; import torch; "
            "print(type(torch.autograd.gradcheck).__name__, GradcheckError.__name__)")
    out = run(sys.executable, "-c", code, cwd=ROOT)
    assert out.stdout.split() == ["function", "GradcheckError"], out.stderr



def test_a_module_imported_through_the_hook_keeps_its_own_spec():
    """Python gives a module the spec of the name it was imported by; the hook puts retrograd's back, so a relative
    import run later inside it (checkpoint_sequential's `from ..nn import Sequential`) raises no ImportWarning
    (`__package__ != __spec__.parent`), which -W error made an exception."""
    code = ("import retrograd.run as r; r.install(); import torch, torch.utils.checkpoint as c; "
            "s = torch.nn.Sequential(torch.nn.Linear(2, 2)); "
            "c.checkpoint_sequential(s, 1, torch.ones(1, 2, requires_grad=True), use_reentrant=False); "
            "print(c.__spec__.name, hasattr(c, '__path__'))")
    out = run(sys.executable, "-W", "error::ImportWarning", "-c", code, cwd=ROOT)
    assert out.stdout.split() == ["retrograd.utils.checkpoint", "False"], out.stderr

PROFILE_ATTENTION_SPAWN = '''
import torch
import torch.multiprocessing as mp
from torch.autograd.profiler import record_function
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile


def work(rank, queue):
    queue.put((rank, torch.ones(2).mul(rank).tolist(), torch.__name__))


if __name__ == "__main__":
    x = torch.ones(2, 2, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("step"):
            y = torch.mm(x, x).sum()
        y.backward()
    wanted = {"step", "aten::mm", "aten::sum", "autograd::engine::evaluate_function: MmBackward0"}
    print(sorted(wanted & {average.key for average in prof.key_averages()}))
    with sdpa_kernel(SDPBackend.MATH):
        print(torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled())
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(work, args=(queue,), nprocs=2)
    results = sorted(queue.get() for _ in range(2))
    print([values for _, values, _ in results])
    print(torch.__name__, *[name for _, _, name in results])
'''


def test_profiler_attention_and_spawn_under_the_hook(tmp_path):
    """torch.profiler, torch.nn.attention and torch.multiprocessing answer through the hook; the processes spawn
    starts import retrograd as torch too."""
    path = tmp_path / "job.py"
    path.write_text(PROFILE_ATTENTION_SPAWN)
    real = run(sys.executable, str(path), cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    ours = run(sys.executable, "-m", "retrograd.run", str(path), cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    real_lines, our_lines = real.stdout.splitlines(), ours.stdout.splitlines()
    assert real_lines[-1] == "torch torch torch" and our_lines[-1] == "retrograd retrograd retrograd"
    assert our_lines[:-1] == real_lines[:-1]
