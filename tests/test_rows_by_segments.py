"""Whole rows scattered with accumulation (ops/arrays.py, Note [rows added by segments]): embedding's backward
and index_put(accumulate=True) at sizes that take the sorted path, against torch, and the mostly-distinct case
against NumPy's add.at bit for bit."""

import numpy as np
import pytest
import torch

import retrograd
from retrograd.ops import arrays as A


@pytest.mark.parametrize("vocab, count", [(1000, 300), (7, 600)])  # mostly distinct rows / mostly repeated
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_backward_matches_torch(vocab, count, padding_idx):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((vocab, 24)).astype(np.float32)
    indices = rng.integers(0, vocab, (count // 3, 3))
    g = rng.standard_normal((count // 3, 3, 24)).astype(np.float32)
    grads = []
    for lib in (retrograd, torch):
        w = lib.tensor(weight, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(indices), w, padding_idx=padding_idx)
        grads.append(lib.autograd.grad(out, w, lib.tensor(g))[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding_idx, scale_grad_by_freq", [(None, False), (1, True)])
def test_embedding_backward_of_no_indices_is_zero_as_torch(padding_idx, scale_grad_by_freq):
    grads = []
    for lib in (retrograd, torch):
        w = lib.ones(4, 2, requires_grad=True)
        out = lib.nn.functional.embedding(lib.zeros(0, 3, dtype=lib.long), w, padding_idx=padding_idx,
                                          scale_grad_by_freq=scale_grad_by_freq)
        grads.append(lib.autograd.grad(out.sum(), w)[0].numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_index_put_accumulate_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 4, 30))
    rows = rng.integers(0, 50, 200)
    values = rng.standard_normal((200, 4, 30))
    ours, theirs = (lib.tensor(x).index_put((lib.tensor(rows),), lib.tensor(values), accumulate=True).numpy()
                    for lib in (retrograd, torch))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_mostly_distinct_rows_add_as_add_at():
    rng = np.random.default_rng(2)
    index = rng.integers(0, 5000, 400)
    values = rng.standard_normal((400, 32)).astype(np.float32)
    start = rng.standard_normal((5000, 32)).astype(np.float32)
    expected = start.copy()
    np.add.at(expected, index, values)
    assert np.array_equal(A.add_at(np, start.copy(), index, values), expected)
