"""Shared test set-up: the op database is importable as `opdb`, torch is the oracle, and a test module's generator
starts each test afresh."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _generators_reseeded(request):
    """A test module's NumPy generator (`rng` or `RNG` at module level) reseeded with its own seed before each test:
    a test's data must not depend on which tests ran before it in the same process, which pytest-xdist varies from
    run to run (a float32 comparison failed only when the tests before it had drawn other numbers)."""
    module = request.module
    for name in ("rng", "RNG"):
        generator = getattr(module, name, None)
        if isinstance(generator, np.random.Generator):
            setattr(module, name, np.random.default_rng(generator.bit_generator.seed_seq.entropy))
