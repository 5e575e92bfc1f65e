"""Losses given inputs and targets of different dtypes, or of dtypes their kernels lack, against torch: a float32
prediction beside a float64 target from NumPy is the common case (binary_cross_entropy refuses it, mse promotes,
binary_cross_entropy_with_logits computes in the target's dtype), integers and bool are refused by the kernel's
name, and complex inputs too."""

from __future__ import annotations

import pytest
import torch
from dtype_sweep import assert_same_outcome, outcome

import retrograd

LOSSES = {
    "binary_cross_entropy": lambda F, x, t: F.binary_cross_entropy(x, t),
    "binary_cross_entropy_with_logits": lambda F, x, t: F.binary_cross_entropy_with_logits(x, t),
    "mse_loss": lambda F, x, t: F.mse_loss(x, t),
    "smooth_l1_loss": lambda F, x, t: F.smooth_l1_loss(x, t),
    "huber_loss": lambda F, x, t: F.huber_loss(x, t),
    "logsigmoid": lambda F, x, t: F.logsigmoid(x),
}
PAIRS = [("float32", "float64"), ("float64", "float32"), ("float32", "int64"), ("int64", "float32"),
         ("int64", "int64"), ("bool", "bool"), ("int8", "int8"), ("complex64", "complex64"), ("float32", "complex64"),
         ("float16", "float32"), ("float32", "float32")]


@pytest.mark.parametrize("pair", PAIRS, ids=["/".join(p) for p in PAIRS])
@pytest.mark.parametrize("loss", list(LOSSES))
def test_loss_of_mixed_or_unsupported_dtypes_as_torch(loss, pair):
    def run(lib):
        x = lib.tensor([0.25, 0.5, 0.75]).to(getattr(lib, pair[0]))
        t = lib.tensor([0.0, 1.0, 1.0]).to(getattr(lib, pair[1]))
        return outcome(LOSSES[loss], lib.nn.functional, x, t)

    assert_same_outcome(run(retrograd), run(torch), f"{loss}{pair}")


def test_binary_cross_entropy_checks_dtype_before_range():
    """torch refuses complex input by its kernel name before it looks at the values' range."""
    for lib in (retrograd, torch):
        with pytest.raises(NotImplementedError, match="\"binary_cross_entropy\" not implemented for 'ComplexFloat'"):
            lib.nn.functional.binary_cross_entropy(lib.full((2,), 2 + 0j), lib.full((2,), 3 + 0j))
