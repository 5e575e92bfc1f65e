"""What the suite measures: twelve workloads, each written once against torch's API.

retrograd and torch run the same code: `torch = lib.module` is `retrograd` or `torch` itself; the NumPy floor
of the MLP step lives in `floor.py`. Every workload draws its data from a seeded NumPy generator
so that all libraries see the same numbers. A workload's `build(lib, quick)` returns its cases
for that library (none when the library does not take part); `quick` shrinks the sizes that
would make a CI smoke run slow.
"""

from __future__ import annotations

import gc
import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import floor, models
from .harness import Case, time_case

RETROGRAD, TORCH, NUMPY = "retrograd", "torch", "numpy"


class Lib:
    """One library under test: `module` is retrograd or torch (None for the NumPy floor)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.module = None if name == NUMPY else importlib.import_module(name)

    def tensor(self, array: np.ndarray, requires_grad: bool = False) -> Any:
        return self.module.tensor(array, requires_grad=requires_grad)


@dataclass
class Workload:
    key: str
    title: str
    libs: tuple[str, ...]
    build: Callable[[Lib, bool], list[Case]]


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _float32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# --------------------------------------------------------------------------------------------
# 1. Per-op overhead: 100 elementwise ops on a (4,) tensor
# --------------------------------------------------------------------------------------------

def _elementwise_chain(torch: Any, x: Any, c: Any, n_ops: int) -> Any:
    """`n_ops` ops cycling add (tensor), mul (Python scalar), tanh, exp; values stay in (1/e, e)."""
    y = x
    for _ in range(n_ops // 4):
        y = torch.exp(torch.tanh((y + c) * 0.5))
    return y


def _chain_cases(lib: Lib, n_ops: int, unit: str, per: int, repeats: int,
                 warmup: int) -> tuple[list[Case], Callable, tuple]:
    """forward+backward, forward, backward and no-grad forward of an elementwise chain; also the
    graph builder and the chain's input and constant, for readings of the graph itself."""
    torch = lib.module
    rng = _rng()
    x = lib.tensor(_float32(rng, 4), requires_grad=True)
    c = lib.tensor(_float32(rng, 4))
    seed = torch.ones(4)

    def reset_grad() -> None:
        x.grad = None

    def forward_backward(_: Any) -> None:
        _elementwise_chain(torch, x, c, n_ops).backward(seed)

    def built_graph() -> Any:
        x.grad = None
        return _elementwise_chain(torch, x, c, n_ops)

    def forward_no_grad(_: Any) -> Any:
        with torch.no_grad():
            return _elementwise_chain(torch, x, c, n_ops)

    cases = [
        Case("forward + backward", unit, forward_backward, prepare=reset_grad, per=per),
        Case("forward only (graph recorded)", unit, lambda _: _elementwise_chain(torch, x, c, n_ops), per=per),
        Case("backward only", unit, lambda y: y.backward(seed), prepare=built_graph, per=per),
        Case("forward, no_grad", unit, forward_no_grad, per=per),
    ]
    for case in cases:
        case.repeats, case.warmup = repeats, warmup
    return cases, built_graph, (x, c)


def per_op_overhead(lib: Lib, quick: bool) -> list[Case]:
    cases, _, _ = _chain_cases(lib, 100, "µs/op", per=100, repeats=200, warmup=20)
    return cases


# --------------------------------------------------------------------------------------------
# 2. Scalar graph: a tiny MLP on 0-d tensors, micrograd style
# --------------------------------------------------------------------------------------------

SCALAR_MLP_SIZES = (4, 28, 28, 1)


def _scalar_mlp_nodes(sizes: tuple[int, ...]) -> int:
    """Ops recorded by one forward: per neuron a mul and an add per input, tanh on hidden layers;
    then the squared error (sub, pow)."""
    nodes = 2
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        hidden = i < len(sizes) - 2
        nodes += fan_out * (2 * fan_in + hidden)
    return nodes


def scalar_graph(lib: Lib, quick: bool) -> list[Case]:
    torch = lib.module
    rng = _rng()

    def scalar(value: float, requires_grad: bool = False) -> Any:
        return lib.tensor(np.array(value, dtype=np.float32), requires_grad=requires_grad)

    layers = [[([scalar(v, True) for v in rng.uniform(-1, 1, fan_in)], scalar(rng.uniform(-1, 1), True))
               for _ in range(fan_out)]
              for fan_in, fan_out in zip(SCALAR_MLP_SIZES, SCALAR_MLP_SIZES[1:])]
    params = [p for layer in layers for ws, b in layer for p in (*ws, b)]
    inputs = [scalar(v) for v in rng.uniform(-1, 1, SCALAR_MLP_SIZES[0])]
    target = scalar(0.5)

    def loss() -> Any:
        act = inputs
        for i, layer in enumerate(layers):
            out = []
            for ws, b in layer:
                s = b
                for w, a in zip(ws, act):
                    s = s + w * a
                out.append(torch.tanh(s) if i < len(layers) - 1 else s)
            act = out
        return (act[0] - target) ** 2

    def reset_grads() -> None:
        for p in params:
            p.grad = None

    def built_graph() -> Any:
        reset_grads()
        return loss()

    nodes = _scalar_mlp_nodes(SCALAR_MLP_SIZES)
    note = f"{nodes} nodes, {len(params)} leaf parameters"
    return [
        Case("forward + backward", "µs/node", lambda _: loss().backward(), prepare=reset_grads, per=nodes,
             repeats=30, notes=[note]),
        Case("forward only (graph recorded)", "µs/node", lambda _: loss(), per=nodes, repeats=30),
        Case("backward only", "µs/node", lambda y: y.backward(), prepare=built_graph, per=nodes, repeats=30),
    ]


# --------------------------------------------------------------------------------------------
# 3. MLP training step and 4. CNN training step
# --------------------------------------------------------------------------------------------

MLP_SIZES = (784, 512, 256, 10)
LEARNING_RATE = 0.01


def _linear_params(rng: np.random.Generator, fan_in: int, fan_out: int) -> list[np.ndarray]:
    """torch.nn.Linear's initialisation: weight (out, in) and bias uniform in ±1/sqrt(in)."""
    bound = 1 / np.sqrt(fan_in)
    return [rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
            rng.uniform(-bound, bound, fan_out).astype(np.float32)]


def _linear(lib: Lib, notes: list[str]) -> Callable:
    """F.linear where the library has it (torch's nn.Linear path), else x @ w.t() + b."""
    nnf = lib.module.nn.functional
    if hasattr(nnf, "linear"):
        return nnf.linear
    notes.append("linear as x @ w.t() + b (no nn.functional.linear)")
    return lambda x, w, b: x @ w.t() + b


def sgd(lib: Lib, params: list) -> None:
    """SGD as torch.optim.SGD's single-tensor path does it (`add_` with alpha, no temporary), then
    the gradients are dropped as zero_grad(set_to_none=True) does."""
    with lib.module.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-LEARNING_RATE)
            p.grad = None


def _training_cases(lib: Lib, arrays: list[np.ndarray], batches: dict[str, tuple], loss_of: Callable,
                    repeats: int, notes: list[str], requires: tuple[str, ...] = ()) -> list[Case]:
    """One 'step' case per batch: loss, backward, SGD; the graph is freed inside the step."""
    nnf = lib.module.nn.functional
    params = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
    cases = []
    for key, (x, target) in batches.items():
        x, target = lib.tensor(x), lib.tensor(target)

        def step(_: Any, x: Any = x, target: Any = target) -> None:
            nnf.cross_entropy(loss_of(x, params), target).backward()
            sgd(lib, params)

        cases.append(Case(key, "ms/step", step, memory=True, repeats=repeats, warmup=3, notes=notes,
                          requires=requires))
    return cases


def _mlp_batches(rng: np.random.Generator) -> dict[str, tuple]:
    return {f"step, batch {n}": (_float32(rng, n, MLP_SIZES[0]), rng.integers(0, MLP_SIZES[-1], n))
            for n in (64, 1024)}


def mlp_data() -> tuple[list[np.ndarray], dict[str, tuple]]:
    """The MLP's initial weights and biases (w1, b1, w2, b2, w3, b3) and its batches, by case name."""
    rng = _rng()
    arrays = [a for fan_in, fan_out in zip(MLP_SIZES, MLP_SIZES[1:]) for a in _linear_params(rng, fan_in, fan_out)]
    return arrays, _mlp_batches(rng)


def mlp_step(lib: Lib, quick: bool) -> list[Case]:
    arrays, batches = mlp_data()
    if lib.name == NUMPY:
        params = [a.copy() for a in arrays]
        return [Case(key, "ms/step", lambda _, x=x, t=t: floor.mlp_step(params, x, t, LEARNING_RATE), memory=True,
                     repeats=30, warmup=3)
                for key, (x, t) in batches.items()]
    notes: list[str] = []
    linear = _linear(lib, notes)
    relu = lib.module.nn.functional.relu

    def logits(x: Any, p: list) -> Any:
        h = relu(linear(x, p[0], p[1]))
        h = relu(linear(h, p[2], p[3]))
        return linear(h, p[4], p[5])

    return _training_cases(lib, arrays, batches, logits, repeats=30, notes=notes)


CNN_OPS = ("nn.functional.conv2d", "nn.functional.max_pool2d")


def cnn_step(lib: Lib, quick: bool) -> list[Case]:
    """conv(1->8, 3x3, pad 1) relu pool2 -> conv(8->16, 3x3, pad 1) relu pool2 -> linear(784->10)."""
    rng = _rng()
    bound1, bound2 = 1 / 3, 1 / np.sqrt(8 * 9)
    arrays = [rng.uniform(-bound1, bound1, (8, 1, 3, 3)).astype(np.float32),
              rng.uniform(-bound1, bound1, 8).astype(np.float32),
              rng.uniform(-bound2, bound2, (16, 8, 3, 3)).astype(np.float32),
              rng.uniform(-bound2, bound2, 16).astype(np.float32),
              *_linear_params(rng, 16 * 7 * 7, 10)]
    batches = {"step, batch 64": (_float32(rng, 64, 1, 28, 28), rng.integers(0, 10, 64))}
    notes: list[str] = []
    nnf = lib.module.nn.functional
    linear = _linear(lib, notes)

    def logits(x: Any, p: list) -> Any:
        h = nnf.max_pool2d(nnf.relu(nnf.conv2d(x, p[0], p[1], padding=1)), 2)
        h = nnf.max_pool2d(nnf.relu(nnf.conv2d(h, p[2], p[3], padding=1)), 2)
        return linear(h.reshape(h.shape[0], -1), p[4], p[5])

    return _training_cases(lib, arrays, batches, logits, repeats=15, notes=notes, requires=CNN_OPS)


# --------------------------------------------------------------------------------------------
# 5. Hessian-vector product and 6. Jacobian (higher-order and repeated backward)
# --------------------------------------------------------------------------------------------

def hvp(lib: Lib, quick: bool) -> list[Case]:
    torch = lib.module
    rng = _rng()
    n = 256
    w = lib.tensor(_float32(rng, n, n, scale=1 / np.sqrt(n)))
    x_data, v = _float32(rng, n), lib.tensor(_float32(rng, n))
    x = lib.tensor(x_data, requires_grad=True)
    x_plain = lib.tensor(x_data)

    def f(x: Any) -> Any:
        return (torch.tanh(w @ x) ** 2).sum()

    def two_grads(_: Any) -> Any:
        (g,) = torch.autograd.grad(f(x), x, create_graph=True)
        return torch.autograd.grad(g, x, v)[0]

    def functional(_: Any) -> Any:
        return torch.autograd.functional.hvp(f, x_plain, v)[1]

    return [
        Case("grad of grad (autograd.grad, create_graph=True)", "µs/call", two_grads, repeats=100, warmup=10),
        Case("autograd.functional.hvp", "µs/call", functional, requires=("autograd.functional.hvp",), repeats=100,
             warmup=10),
    ]


def jacobian(lib: Lib, quick: bool) -> list[Case]:
    torch = lib.module
    rng = _rng()
    n = 64
    w = lib.tensor(_float32(rng, n, n, scale=1 / np.sqrt(n)))
    x_data = _float32(rng, n)
    x = lib.tensor(x_data, requires_grad=True)
    x_plain = lib.tensor(x_data)
    eye = np.eye(n, dtype=np.float32)
    basis = [lib.tensor(row) for row in eye]
    batched_basis = lib.tensor(eye)

    def f(x: Any) -> Any:
        return torch.tanh(w @ x)

    def functional(vectorize: bool) -> Callable:
        return lambda _: torch.autograd.functional.jacobian(f, x_plain, vectorize=vectorize)

    def row_by_row(_: Any) -> Any:
        y = f(x)
        return torch.stack([torch.autograd.grad(y, x, e, retain_graph=True)[0] for e in basis])

    def batched(_: Any) -> Any:
        return torch.autograd.grad(f(x), x, batched_basis, is_grads_batched=True)[0]

    needs = ("autograd.functional.jacobian",)
    return [
        Case("autograd.functional.jacobian", "µs/call", functional(False), requires=needs),
        Case("autograd.functional.jacobian, vectorize=True", "µs/call", functional(True), requires=needs),
        Case("row by row: 64 x autograd.grad + stack", "µs/call", row_by_row),
        Case("one autograd.grad, is_grads_batched=True", "µs/call", batched),
    ]


# --------------------------------------------------------------------------------------------
# 7. A long chain: backward time and graph memory
# --------------------------------------------------------------------------------------------

def long_chain(lib: Lib, quick: bool) -> list[Case]:
    n_ops = 10_000 if quick else 100_000
    cases, built_graph, (x, c) = _chain_cases(lib, n_ops, "ms", per=1, repeats=3, warmup=1)
    forward, backward = cases[1], cases[2]
    torch = lib.module
    seed = torch.ones(4)

    def probe(meter: Any) -> dict[str, int]:
        """Bytes above the starting point: graph after forward, peak, after backward, after del."""
        _elementwise_chain(torch, x, c, 4).backward(seed)  # one-time engine start-up stays out of the reading
        meter.reset()
        base = meter.now()
        y = built_graph()
        graph = meter.now() - base
        y.backward(seed)
        after = meter.now() - base
        peak = meter.peak() - base
        del y
        gc.collect()
        return {"graph after forward": graph, "peak, forward + backward": peak,
                "left after backward (output alive)": after, "left after del output": meter.now() - base}

    backward.probe = probe
    for case in (forward, backward):
        case.notes = [f"{n_ops:,} ops"]
    return [forward, backward]


# --------------------------------------------------------------------------------------------
# 12. Import time: `python -c "import X"` in a fresh interpreter, bytecode cached
# --------------------------------------------------------------------------------------------

def _interpreter_run(code: str) -> Callable[[Any], None]:
    """A fresh interpreter running `code`, bytecode written and read (the warm-up call caches it), in this
    process's folder and thread settings: what a user's `python script.py` pays before its first line."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run(_: Any) -> None:
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return run


def import_time(lib: Lib, quick: bool) -> list[Case]:
    """Wall time of `import retrograd`, `import torch`, and `import numpy` as the floor (retrograd needs it)."""
    case = Case("python -c 'import X', bytecode cached", "ms", _interpreter_run(f"import {lib.name}"),
                repeats=5 if quick else 20, warmup=2, clock="wall")
    if lib.name == NUMPY:
        start = Case("", "", _interpreter_run("pass"), repeats=5, warmup=1, clock="wall")
        case.notes = [f"Python's own start (python -c pass): {time_case(start, quick)['time'] * 1e3:.0f} ms"]
    return [case]


WORKLOADS: dict[str, Workload] = {w.key: w for w in [
    Workload("overhead", "1. per-op overhead: 100 elementwise ops on a (4,) tensor", (RETROGRAD, TORCH),
             per_op_overhead),
    Workload("scalar", "2. scalar graph: tiny MLP on 0-d tensors (micrograd style)", (RETROGRAD, TORCH),
             scalar_graph),
    Workload("mlp", "3. MLP 784-512-256-10 ReLU cross-entropy SGD step, float32", (RETROGRAD, TORCH, NUMPY),
             mlp_step),
    Workload("cnn", "4. CNN step: 2 x (conv2d 3x3, relu, max_pool2d) + linear, 28x28", (RETROGRAD, TORCH),
             cnn_step),
    Workload("hvp", "5. Hessian-vector product of sum(tanh(W @ x) ** 2), x in R^256", (RETROGRAD, TORCH), hvp),
    Workload("jacobian", "6. Jacobian of tanh(W @ x), R^64 -> R^64", (RETROGRAD, TORCH), jacobian),
    Workload("long_chain", "7. chain of 100,000 elementwise ops on a (4,) tensor", (RETROGRAD, TORCH), long_chain),
    Workload("gpt", "8. GPT (pow tanh-GELU, masked_fill attention, dropout, AdamW, clipping)", (RETROGRAD, TORCH),
             models.gpt),
    Workload("gpt_exact", "9. GPT with scaled_dot_product_attention and exact GELU", (RETROGRAD, TORCH),
             models.gpt_exact),
    Workload("lstm", "10. LSTM language model (2 layers, tied weights, clipping, SGD)", (RETROGRAD, TORCH),
             models.lstm_lm),
    Workload("resnet", "11. ResNet basic blocks with BatchNorm, SGD momentum", (RETROGRAD, TORCH), models.resnet_block),
    Workload("import", "12. import time (wall)", (RETROGRAD, TORCH, NUMPY), import_time),
]}
