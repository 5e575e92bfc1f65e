"""The op database: one OpInfo row per public op, with deliberately chosen sample inputs.

From each row tests/test_ops.py derives, with no per-op test code: forward against torch
(values, dtype, shape, grad_fn name), backward against torch with a random cotangent,
gradcheck and gradgradcheck in float64 against finite differences, and forward mode.

Rows live in one module per op family (pointwise.py, reduction.py, ...); each exports `OPS`.
A sample's positional and keyword arguments may hold:
  - NumPy float/complex arrays: become tensors that require grad (in both libraries);
  - `C(array)`: a tensor that does not require grad (indices, masks, targets);
  - anything else (ints, tuples, dtypes given as strings via `Dt`): passed as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class C:
    """A constant tensor argument: converted to a tensor that does not require grad."""

    array: np.ndarray


@dataclass(frozen=True)
class Dt:
    """A dtype argument by name, resolved in each library (e.g. Dt('float64'))."""

    name: str


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    gradcheck: bool = True  # False at a kink (ties, NaN): compared with torch's backward only


@dataclass
class OpInfo:
    """How to call one public op and which checks apply to it."""

    name: str                                  # the name in retrograd / torch (e.g. "exp", "nn.functional.relu")
    samples: Callable[[np.random.Generator], list[Sample]]
    call: Callable[..., Any] | None = None     # call(module, *args, **kwargs); default: module.<name>(...)
    method: bool = False                       # also call as args[0].<name>(*rest) and compare
    differentiable: bool = True
    gradgrad: bool = True
    forward_ad: bool = True
    atol: float | None = None
    rtol: float | None = None
    fd_eps: float = 1e-6
    skip_grad_fn: bool = False                 # grad_fn name differs from torch for a documented reason
    outputs: Callable[[Any], tuple] | None = None  # pick the tensor outputs to compare (default: all tensors)
    aliases: tuple[str, ...] = ()              # other public names tested by this row

    def resolve(self, module: Any) -> Callable:
        if self.call is not None:
            return lambda *a, **k: self.call(module, *a, **k)
        target = module
        for part in self.name.split("."):
            target = getattr(target, part)
        return target


FAMILIES = ("pointwise", "activation", "complex", "reduction", "selection", "shape", "indexing", "linalg", "nn",
            "nn_extra", "random", "fft", "special", "numeric", "statistics")


def all_ops() -> list[OpInfo]:
    ops: list[OpInfo] = []
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"opdb.{fam}")
        except ModuleNotFoundError as e:
            if e.name != f"opdb.{fam}":
                raise
            continue
        ops.extend(mod.OPS)
    return ops


def rand(rng: np.random.Generator, *shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """float64 values in [low, high) (tests cast to other dtypes as needed)."""
    return np.asarray(rng.uniform(low, high, size=shape))


def positive(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asarray(rng.uniform(0.5, 2.0, size=shape))


def distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values with no ties and gaps of at least 0.1 (safe for finite differences of max/sort)."""
    n = int(np.prod(shape)) if shape else 1
    vals = rng.permutation(n) * 0.25 - n * 0.125
    return vals.reshape(shape).astype(np.float64)


def noncontig(a: np.ndarray) -> np.ndarray:
    """The same values, stored transposed (a non-contiguous view)."""
    return np.ascontiguousarray(a.T).T
