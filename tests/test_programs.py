"""Real-program idioms, run unchanged under torch and under `python -m retrograd.run` (tests/programs/): each
program prints its losses step by step, and the printed numbers must agree to float32 accuracy and every other word
exactly. A program that seeds torch's generator runs plainly under both, nothing shared: retrograd draws torch's
numbers from the seed (Note [torch's CPU random streams]), so the initial weights, batches and noise are torch's.
Every program also runs with its initial weights shared (the torch run writes them to WEIGHTS, the retrograd run
loads them) and torch's draws replayed (tests/programs/_draws.py), which is what makes the unseeded ones
comparable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"
NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")
CASES = [("gpt.py",), ("gpt.py", "--manual-attention"), ("lstm_lm.py",), ("lbfgs_sine.py",), ("polynomial.py",),
         ("infinite_sampler.py",), ("classifier.py",), ("vae.py",), ("packed_rnn.py",), ("policy.py",), ("dcgan.py",),
         ("seq2seq.py",), ("per_sample_grads.py",), ("backprop_ninja.py",), ("wgan_gp.py",), ("wgan_gp.py", "--clip"),
         ("wgan_gp.py", "--conv"), ("maml_sine.py",), ("maml_sine.py", "--first-order"), ("pinn_burgers.py",),
         ("transformer_lm.py",), ("mingpt_sort.py",), ("fno_heat.py",), ("tabular.py",),
         ("ctc_speech.py",), ("ddpm.py",), ("gnn.py",), ("llama.py",), ("vit_distill.py",), ("unet_seg.py",),
         ("realnvp_flow.py",), ("simclr.py",), ("dqn_gridworld.py",),
         ("tiny_detector.py",), ("text_classify.py",), ("func_ensemble.py",),
         ("stn_style.py",), ("moe_recsys.py",), ("tcn_forecast.py",),
         ("gp_regression.py",), ("hnn_ode.py",), ("siamese_metric.py",), ("interpretability.py",),
         ("mamba_kan.py",), ("crf_word2vec.py",), ("vocoder_stft.py",),
         ("ppo_continuous.py",), ("mobilenet_timm.py",), ("prune_lottery.py",), ("bayes_vi.py",), ("pointnet.py",),
         ("transformer_translate.py",), ("qat_ste.py",), ("sngan_ema.py",)]
# their batches, noise or actions come from torch's random draws
DRAWING = {"infinite_sampler.py", "classifier.py", "vae.py", "policy.py", "dcgan.py", "wgan_gp.py", "mingpt_sort.py",
           "fno_heat.py", "tabular.py", "ctc_speech.py", "ddpm.py", "gnn.py", "llama.py", "vit_distill.py",
           "unet_seg.py", "realnvp_flow.py", "simclr.py", "tiny_detector.py", "text_classify.py",
           "stn_style.py", "moe_recsys.py", "tcn_forecast.py", "interpretability.py",
           "mamba_kan.py", "crf_word2vec.py", "ppo_continuous.py",
           "mobilenet_timm.py", "prune_lottery.py", "bayes_vi.py", "pointnet.py", "transformer_translate.py",
           "qat_ste.py", "sngan_ema.py"}
UNSEEDED = {"classifier.py", "packed_rnn.py"}  # they never call torch.manual_seed
RUNS = [(case, True) for case in CASES] + [(case, False) for case in CASES if case[0] not in UNSEEDED]


def run(script_and_args: tuple[str, ...], weights: Path | None, through_retrograd: bool, cwd: Path) -> str:
    """The program's output under torch or retrograd; with `weights`, its initial weights and draws shared. Both run
    with one thread whatever the machine has or an earlier test left in the environment: torch's sums split over
    threads round otherwise, which flips a near-tie in transformer_translate.py's greedy decoding (two threads)."""
    if weights is not None and script_and_args[0] in DRAWING:
        mode = "replay" if through_retrograd else "record"
        launcher = [sys.executable, str(PROGRAMS / "_draws.py"), mode, str(cwd / "draws.json")]
    else:
        launcher = [sys.executable, "-m", "retrograd.run"] if through_retrograd else [sys.executable]
    env = {name: value for name, value in os.environ.items() if name != "WEIGHTS"}
    env.update(dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"), "1"))
    if weights is not None:
        env["WEIGHTS"] = str(weights)
    out = subprocess.run(launcher + [str(PROGRAMS / script_and_args[0]), *script_and_args[1:]], capture_output=True,
                         text=True, timeout=600, env=env, cwd=cwd)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


@pytest.mark.parametrize(("program", "shared"), RUNS,
                         ids=[" ".join(c) + (", shared" if shared else ", from the seed") for c, shared in RUNS])
def test_program_prints_torchs_numbers(program, shared, tmp_path):
    weights = tmp_path / "weights.npz" if shared else None
    theirs = run(program, weights, through_retrograd=False, cwd=tmp_path)  # writes its initial weights
    assert weights is None or weights.exists()
    ours = run(program, weights, through_retrograd=True, cwd=tmp_path)
    assert NUMBER.sub("#", ours) == NUMBER.sub("#", theirs)
    our_numbers, their_numbers = ([float(n) for n in NUMBER.findall(text)] for text in (ours, theirs))
    assert len(our_numbers) > 5
    assert our_numbers == pytest.approx(their_numbers, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("saver", ["torch", "retrograd"])
def test_checkpoint_saved_by_one_library_resumes_in_both(saver, tmp_path):
    """tests/programs/resume.py saves model, optimiser and schedule with torch.save; each library loads the
    other's file (torch with its default weights_only=True) and trains on to the same losses."""
    checkpoint = tmp_path / "checkpoint.pt"
    run(("resume.py", "save", str(checkpoint)), tmp_path / "unused.npz", saver == "retrograd", tmp_path)
    outputs = [run(("resume.py", "resume", str(checkpoint)), tmp_path / "unused.npz", through, tmp_path)
               for through in (False, True)]
    assert NUMBER.sub("#", outputs[0]) == NUMBER.sub("#", outputs[1])
    numbers = [[float(n) for n in NUMBER.findall(text)] for text in outputs]
    assert len(numbers[0]) == 8 and numbers[1] == pytest.approx(numbers[0], rel=1e-5, abs=1e-6)
