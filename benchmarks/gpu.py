"""`python -m benchmarks.gpu`: training steps on a GPU, retrograd (CuPy behind 'cuda') against torch CUDA.

Both libraries run in one process on the same device, the same weights and batches: a large-batch MLP, a
GPT at two sizes (the small one of the CPU suite, and nanoGPT's character-level Shakespeare configuration:
6 layers, 384 wide, context 256, batch 64) and the CPU suite's ResNet blocks at CIFAR size. Each step is
timed between device synchronisations; the table gives medians, the ratio retrograd / torch, and the device
memory one warm step needs above what was live before it (torch: `max_memory_allocated`; retrograd: the peak
of the bytes CuPy's memory pool hands out during the step, counted by a memory hook, the same measure).
`--device cpu` runs the same steps on the CPU (a smoke run where no GPU is present). `--profile` adds
retrograd's cProfile of one GPT step: where the host time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from .models import _gpt, _resnet, _same_weights

MLP_WIDTHS = (1024, 4096, 4096, 10)


def _synchronize(lib: Any, device: str) -> None:
    if device != "cpu":
        lib.cuda.synchronize()


def _time(lib: Any, device: str, step: Callable[[], None], warmup: int, repeats: int) -> float:
    """Median milliseconds of `step`, each timed between device synchronisations."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        _synchronize(lib, device)
        start = time.perf_counter()
        step()
        _synchronize(lib, device)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _mlp_step(lib: Any, device: str, batch: int) -> Callable[[], None]:
    """A ReLU MLP (MLP_WIDTHS), cross-entropy, SGD with momentum: the large-batch step of issue #18."""
    nn = lib.nn
    layers = []
    for fan_in, fan_out in zip(MLP_WIDTHS, MLP_WIDTHS[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    _same_weights(lib, model)
    model.to(device)
    rng = np.random.default_rng(2)
    x = lib.tensor(rng.standard_normal((batch, MLP_WIDTHS[0])).astype(np.float32)).to(device)
    y = lib.tensor(rng.integers(0, MLP_WIDTHS[-1], batch)).to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def _gpt_step(lib: Any, device: str, size: tuple[int, int, int, int], exact: bool = False) -> Callable[[], None]:
    """The GPT of benchmarks/models.py (tanh-GELU by pow, masked_fill attention, dropout, AdamW, clipping)."""
    layers, width, context, batch = size
    vocab = 65
    model = _gpt(lib, layers, width, context, vocab, exact)
    _same_weights(lib, model)
    model.to(device)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.integers(0, vocab, (batch, context))).to(device)
    y = lib.tensor(rng.integers(0, vocab, (batch, context))).to(device)
    optimizer = lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def step() -> None:
        loss = lib.nn.functional.cross_entropy(model(x).view(-1, vocab), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def _resnet_step(lib: Any, device: str, channels: int, batch: int) -> Callable[[], None]:
    """The CPU suite's ResNet blocks (conv, BatchNorm, ReLU, shortcut) on 32x32 inputs, SGD with momentum."""
    model = _resnet(lib, channels)
    _same_weights(lib, model)
    model.to(device)
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)).to(device)
    y = lib.tensor(rng.integers(0, 10, batch)).to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)

    def step() -> None:
        optimizer.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def _peak_mib(lib: Any, device: str, step: Callable[[], None]) -> float | None:
    """Device memory (MiB) one step needs above what was live before it; None on the CPU."""
    if device == "cpu":
        return None
    _synchronize(lib, device)
    if lib.__name__ == "torch":
        lib.cuda.reset_peak_memory_stats()
        before = lib.cuda.memory_allocated()
        step()
        _synchronize(lib, device)
        return (lib.cuda.max_memory_allocated() - before) / 2**20
    import cupy

    class PeakHook(cupy.cuda.MemoryHook):
        """Follows the bytes CuPy's pool hands out during the step and keeps their peak above the start. (The
        pool's own growth undercounts: a step reuses blocks freed within it and blocks split from cached chunks.)"""

        name = "retrograd_peak"
        in_use = peak = 0

        def malloc_postprocess(self, **kwargs: Any) -> None:
            self.in_use += kwargs["mem_size"]
            self.peak = max(self.peak, self.in_use)

        def free_postprocess(self, **kwargs: Any) -> None:
            self.in_use -= kwargs["mem_size"]

    with PeakHook() as hook:
        step()
        _synchronize(lib, device)
    return hook.peak / 2**20


def _cases(quick: bool) -> dict[str, Callable[[Any, str], Callable[[], None]]]:
    small, nanogpt = ((1, 32, 16, 4), (2, 64, 32, 8)) if quick else ((4, 128, 64, 32), (6, 384, 256, 64))
    mlp_batch = 64 if quick else 8192
    resnet = (4, 4) if quick else (64, 128)
    return {
        f"MLP {'-'.join(map(str, MLP_WIDTHS))}, batch {mlp_batch}, SGD": lambda lib, d: _mlp_step(lib, d, mlp_batch),
        f"GPT {small[0]}x{small[1]}, batch {small[3]}x{small[2]}, AdamW": lambda lib, d: _gpt_step(lib, d, small),
        f"GPT {nanogpt[0]}x{nanogpt[1]}, batch {nanogpt[3]}x{nanogpt[2]}, AdamW":
            lambda lib, d: _gpt_step(lib, d, nanogpt),
        f"GPT {small[0]}x{small[1]} exact GELU + SDPA": lambda lib, d: _gpt_step(lib, d, small, exact=True),
        f"ResNet blocks, {resnet[0]} channels, batch {resnet[1]} on 32x32, SGD":
            lambda lib, d: _resnet_step(lib, d, *resnet),
    }


def _profile(lib: Any, step: Callable[[], None], device: str) -> str:
    """cProfile of three steps: the 25 functions with the most own time."""
    step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        step()
    _synchronize(lib, device)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--profile", action="store_true", help="print retrograd's profile of each case")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    import torch

    import retrograd

    libs = {"retrograd": retrograd, "torch": torch}
    device_name = torch.cuda.get_device_name(0) if args.device != "cpu" else "CPU"
    print(f"device: {device_name}; torch {torch.__version__}; retrograd on "
          f"{retrograd.cuda.get_device_name(0) if args.device != 'cpu' else 'NumPy'}")
    rows = []
    for name, build in _cases(args.quick).items():
        if args.only and args.only not in name:
            continue
        row: dict[str, Any] = {"case": name}
        for lib_name, lib in libs.items():
            try:
                step = build(lib, args.device)
                row[lib_name] = _time(lib, args.device, step, warmup=1 if args.quick else 3,
                                      repeats=3 if args.quick else args.repeats)
                row[f"{lib_name} MiB"] = _peak_mib(lib, args.device, step)
                if args.profile and lib is retrograd:
                    print(f"## profile, {name}\n{_profile(lib, step, args.device)}")
            except Exception as e:  # noqa: BLE001 - a failing case is reported, the others still run
                row[lib_name] = f"{type(e).__name__}: {e}"[:300]
                traceback.print_exc()
        ours, theirs = row["retrograd"], row["torch"]
        row["ratio"] = ours / theirs if isinstance(ours, float) and isinstance(theirs, float) else None
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("\n| case | retrograd ms/step | torch ms/step | ratio | retrograd MiB | torch MiB |"
          "\n|---|---:|---:|---:|---:|---:|")
    for row in rows:
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v)
                 for v in (row["retrograd"], row["torch"], row.get("retrograd MiB"), row.get("torch MiB"))]
        ratio = f"{row['ratio']:.2f}" if row["ratio"] else "-"
        print(f"| {row['case']} | {cells[0]} | {cells[1]} | {ratio} | {cells[2]} | {cells[3]} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device_name, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
