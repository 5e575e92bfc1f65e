"""torch's view copies (permute_copy, ...) and scatters (select_scatter, ...) against torch where the op database and
the OpInfo sweep do not reach: argument errors (types and texts), node names, memory of their own, and
as_strided_scatter, whose gradient torch gets wrong, against finite differences (Note [view copies and scatters])."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd


def failure(call, lib):
    with pytest.raises(Exception) as info:
        call(lib)
    return type(info.value).__name__, str(info.value)


X = np.random.default_rng(0).normal(size=(3, 4))
ERRORS = [
    lambda lib: lib.permute_copy(lib.tensor(X), (0, 0)),
    lambda lib: lib.permute_copy(lib.tensor(X), (0,)),
    lambda lib: lib.t_copy(lib.ones(2, 3, 4)),
    lambda lib: lib.expand_copy(lib.tensor(X), (2, 4)),
    lambda lib: lib.narrow_copy(lib.tensor(X), 0, 2, 2),
    lambda lib: lib.diagonal_copy(lib.tensor(X), 0, 1, 1),
    lambda lib: lib.unbind_copy(lib.tensor(1.0)),
    lambda lib: lib.unfold_copy(lib.tensor(X), 1, 5, 1),
    lambda lib: lib.view_copy(lib.tensor(X), (5, -1)),
    lambda lib: lib.split_with_sizes_copy(lib.tensor(X), [1, 1]),
    lambda lib: lib.as_strided_copy(lib.tensor(X), (4,), (4,)),
    lambda lib: lib.select_scatter(lib.tensor(X), lib.ones(3, 2, dtype=lib.float64), 1, 0),
    lambda lib: lib.select_scatter(lib.tensor(X), lib.ones(3, dtype=lib.float64), 1, 7),
    lambda lib: lib.slice_scatter(lib.tensor(X), lib.ones(3, 1, dtype=lib.float64), 1, 0, 2),
    lambda lib: lib.slice_scatter(lib.tensor(X), lib.ones(3, 2, dtype=lib.float64), 1, 0, 2, 0),
    lambda lib: lib.diagonal_scatter(lib.tensor(X), lib.ones(4, dtype=lib.float64)),
    lambda lib: lib.as_strided_scatter(lib.tensor(X), lib.ones(4, dtype=lib.float64), (4,), (4,)),
    lambda lib: lib.as_strided_scatter(lib.tensor(X), lib.ones(3, dtype=lib.float64), (4,), (1,)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_argument_errors_are_torchs(k):
    assert failure(ERRORS[k], retrograd) == failure(ERRORS[k], torch)


CALLS = [
    lambda lib, x: lib.permute_copy(x, (1, 0)),
    lambda lib, x: lib.squeeze_copy(x.unsqueeze(0), 0),
    lambda lib, x: lib.squeeze_copy(x.unsqueeze(0), (0,)),
    lambda lib, x: lib.narrow_copy(x, 1, 1, 2),
    lambda lib, x: lib.alias_copy(x),
    lambda lib, x: lib.unbind_copy(x, 1)[2],
    lambda lib, x: lib.slice_scatter(x, x[:, 1:3] * 2, 1, 1, 3),
    lambda lib, x: x.select_scatter(x[1] * 2, 0, 1),
    lambda lib, x: lib.as_strided_scatter(x, x[0, :2] * 2, (2,), (3,), 1),
]


@pytest.mark.parametrize("k", range(len(CALLS)))
def test_copies_own_their_memory_and_name_torchs_nodes(k):
    ours, theirs = (CALLS[k](lib, lib.tensor(X, requires_grad=True)) for lib in (retrograd, torch))
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert ours._base is None and ours.is_contiguous()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())


def test_a_view_copy_of_a_noncontiguous_input_reshapes_as_torchs():
    for lib in (retrograd, torch):
        x = lib.tensor(X).t()
        assert lib.view_copy(x, (12,)).tolist() == lib.tensor(X).t().reshape(12).tolist()


def test_as_strided_scatter_values_are_torchs_and_gradients_pass_gradcheck():
    """torch computes the values right and the gradient of self wrong (inside the window rather than outside)."""
    rng = np.random.default_rng(1)
    x, src = rng.normal(size=(3, 3)), rng.normal(size=(2, 2))
    args = ((2, 2), (1, 2), 1)
    ours = retrograd.as_strided_scatter(retrograd.tensor(x), retrograd.tensor(src), *args)
    np.testing.assert_allclose(ours.numpy(), torch.as_strided_scatter(torch.tensor(x), torch.tensor(src), *args))
    inputs = (retrograd.tensor(x, requires_grad=True), retrograd.tensor(src, requires_grad=True))
    fn = lambda a, b: retrograd.as_strided_scatter(a, b, *args)  # noqa: E731
    assert retrograd.autograd.gradcheck(fn, inputs)
    assert retrograd.autograd.gradgradcheck(fn, inputs)
    (grad,) = retrograd.autograd.grad(fn(*inputs), inputs[0], retrograd.ones(3, 3, dtype=retrograd.float64))
    assert grad.reshape(-1).tolist() == [1, 0, 0, 0, 0, 1, 1, 1, 1]  # the window (places 1..4) was overwritten
    assert not torch.autograd.gradcheck(lambda a: torch.as_strided_scatter(a, torch.tensor(src), *args),
                                        (torch.tensor(x, requires_grad=True),), raise_exception=False)
