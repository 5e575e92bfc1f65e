"""Shape helpers and creation functions built for PyTorch's OpInfo entries (block_diag, combinations, broadcast_shapes,
broadcast_tensors, unravel_index, tril/triu_indices, scalar_tensor, empty_permuted, nonzero_static, constant_pad_nd,
grid_sampler_2d/3d, __rdiv__, __rmod__) against torch where the op database and the sweep do not reach: argument errors
(types and texts), edge cases, and the layouts retrograd refuses with a clear error (sparse)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd


def failure(call, lib):
    with pytest.raises(Exception) as info:
        call(lib)
    return type(info.value).__name__, str(info.value)


ERRORS = [
    lambda lib: lib.constant_pad_nd(lib.ones(2, 3), (1,)),
    lambda lib: lib.constant_pad_nd(lib.ones(2, 3), (1, 1, 1, 1, 1, 1)),
    lambda lib: lib.constant_pad_nd(lib.ones(2, 3), (-3, -1)),
    lambda lib: lib.broadcast_shapes((2, 3), (4,)),
    lambda lib: lib.broadcast_shapes((2, 3), (-1,)),
    lambda lib: lib.broadcast_shapes((2, 1), (3, 4), (5, 1)),
    lambda lib: lib.broadcast_shapes(2.5),
    lambda lib: lib.broadcast_tensors(lib.zeros(3), lib.ones(2)),
    lambda lib: lib.broadcast_tensors(lib.zeros(5, 3), lib.ones(2, 1, 1), lib.ones(2)),
    lambda lib: lib.distributions.Normal(lib.zeros(3), lib.ones(2)),
    lambda lib: lib.unravel_index(lib.tensor([1.0]), (2, 2)),
    lambda lib: lib.unravel_index(lib.tensor([True]), (2, 2)),
    lambda lib: lib.unravel_index(lib.tensor([1]), (2, -2)),
    lambda lib: lib.tril_indices(-1, 4),
    lambda lib: lib.triu_indices(3, -2),
    lambda lib: lib.triu_indices(3, 4, -1, dtype=lib.float32),
    lambda lib: lib.nonzero_static(lib.tensor([[0, 1], [2, 0]]), size=-1),
    lambda lib: lib.block_diag(lib.ones(2, 2, 2)),
    lambda lib: lib.combinations(lib.ones(2, 2)),
    lambda lib: lib.combinations(lib.ones(2), -1),
    lambda lib: lib.empty_permuted((2, 3, 4), (2, 0)),
    lambda lib: lib.grid_sampler_2d(lib.ones(1, 3, 3), lib.ones(1, 2, 2, 2), 0, 0, False),
    lambda lib: lib.grid_sampler_3d(lib.ones(1, 1, 3, 3), lib.ones(1, 2, 2, 2), 0, 0, False),
    lambda lib: lib.grid_sampler(lib.ones(1, 1, 1, 3, 3), lib.ones(1, 1, 2, 2, 3), 2, 0, False),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_argument_errors_are_torchs(k):
    assert failure(ERRORS[k], retrograd) == failure(ERRORS[k], torch)


SAME = [
    lambda lib: lib.broadcast_shapes(5, (3, 1), [2, 1, 1], ()),
    lambda lib: lib.unravel_index(lib.tensor([5, -1, 7], dtype=lib.int32), (2, 2)),
    lambda lib: lib.unravel_index(lib.tensor(3), (1, 9223372036854775807)),
    lambda lib: lib.scalar_tensor(3),
    lambda lib: lib.scalar_tensor(True, dtype=lib.int64),
    lambda lib: lib.tril_indices(3, 4, 1, dtype=lib.int32),
    lambda lib: lib.triu_indices(0, 5),
    lambda lib: lib.nonzero_static(lib.tensor([[0, 1], [2, 0]]), size=3),
    lambda lib: lib.nonzero_static(lib.tensor(0.0), size=2, fill_value=4),
    lambda lib: lib.block_diag(),
    lambda lib: lib.block_diag(lib.tensor(2), lib.ones(2, 1), lib.zeros(0)),
    lambda lib: lib.combinations(lib.arange(3), 0),
    lambda lib: lib.combinations(lib.arange(4), 3),
    lambda lib: lib.combinations(lib.arange(3), 2, with_replacement=True),
    lambda lib: lib.empty_permuted((2, 0, 4), (1, 2, 0)).stride(),
    lambda lib: lib.ones(3).__rdiv__(2),
    lambda lib: lib.arange(1, 4).__rmod__(7),
]


def plain(value):
    if isinstance(value, (torch.Tensor, retrograd.Tensor)):
        return str(value.dtype).split(".")[-1], tuple(value.shape), value.tolist()
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


@pytest.mark.parametrize("k", range(len(SAME)))
def test_results_are_torchs(k):
    assert plain(SAME[k](retrograd)) == plain(SAME[k](torch))


def test_block_diag_and_combinations_name_torchs_nodes():
    for lib in (retrograd, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        assert type(lib.block_diag(a, a[:2]).grad_fn).__name__ == "BlockDiagBackward0"
        assert type(lib.combinations(a).grad_fn).__name__ == "StackBackward0"
        assert type(a.__rdiv__(2.0).grad_fn).__name__ == "MulBackward0"


@pytest.mark.parametrize("layout", ["", "_coo", "_csr", "_csc", "_bsr", "_bsc"])
def test_sparse_tensors_are_refused_clearly(layout):
    """Every to_sparse* method torch has (a pruned weight's `to_sparse_csr()`, say) says sparse layouts are out of
    scope, not that the attribute is missing."""
    assert hasattr(torch.Tensor, f"to_sparse{layout}")
    with pytest.raises(RuntimeError, match="retrograd has no sparse tensors"):
        getattr(retrograd.ones(3, 3), f"to_sparse{layout}")()


def test_grid_sampler_takes_grid_samples_modes_by_number():
    rng = np.random.default_rng(0)
    x, grid = rng.normal(size=(1, 2, 3, 4)), rng.uniform(-1.2, 1.2, size=(1, 2, 3, 2))
    for mode, padding in ((0, 0), (1, 1), (2, 2)):
        ours = retrograd.grid_sampler_2d(retrograd.tensor(x), retrograd.tensor(grid), mode, padding, True)
        theirs = torch.grid_sampler_2d(torch.tensor(x), torch.tensor(grid), mode, padding, True)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


FACTORIES = {
    "zeros": lambda lib, **kw: lib.zeros(2, 3, **kw), "ones": lambda lib, **kw: lib.ones(2, **kw),
    "empty": lambda lib, **kw: lib.empty(0, **kw), "full": lambda lib, **kw: lib.full((2,), 1.5, **kw),
    "rand": lambda lib, **kw: lib.rand(3, **kw), "randn": lambda lib, **kw: lib.randn(3, **kw),
    "randint": lambda lib, **kw: lib.randint(0, 5, (3,), **kw), "randperm": lambda lib, **kw: lib.randperm(4, **kw),
    "eye": lambda lib, **kw: lib.eye(2, **kw), "arange": lambda lib, **kw: lib.arange(4, **kw),
    "linspace": lambda lib, **kw: lib.linspace(0, 1, 3, **kw),
    "logspace": lambda lib, **kw: lib.logspace(0, 1, 3, **kw),
    "tensor": lambda lib, **kw: lib.tensor([1.0], **{k: v for k, v in kw.items() if k != "layout"}),
    "hann_window": lambda lib, **kw: lib.hann_window(4, **kw),
    "zeros_like": lambda lib, **kw: lib.zeros_like(lib.ones(2), **kw),
    "rand_like": lambda lib, **kw: lib.rand_like(lib.ones(2), **kw),
    "full_like": lambda lib, **kw: lib.full_like(lib.ones(2), 3.0, **kw),
    "randint_like": lambda lib, **kw: lib.randint_like(lib.ones(2), 4, **kw),
    "new_zeros": lambda lib, **kw: lib.ones(2).new_zeros(3, **kw),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_take_torchs_layout_and_pin_memory(name):
    """Every factory takes torch's layout= and pin_memory= options: a strided layout and unpinned memory are what
    it makes, and pinned memory, an accelerator's, is refused with torch's error where none is found."""
    make = FACTORIES[name]
    for lib in (torch, retrograd):
        assert make(lib, layout=lib.strided, pin_memory=False).layout == lib.strided
    assert failure(lambda lib: make(lib, pin_memory=True), retrograd) == failure(lambda lib: make(lib, pin_memory=True),
                                                                                torch)


@pytest.mark.parametrize("name", ["rand_like", "randn_like", "randint_like"])
def test_random_like_factories_draw_from_the_generator_given(name):
    """rand_like, randn_like and randint_like take `generator=` as torch's do, and draw torch's numbers from it."""
    def draw(lib):
        generator = lib.Generator().manual_seed(7)
        like = getattr(lib, name)
        args = (4,) if name == "randint_like" else ()
        return like(lib.ones(5, dtype=lib.float64), *args, generator=generator).numpy()

    np.testing.assert_array_equal(draw(retrograd), draw(torch))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_rounds_each_point_as_torch(dtype):
    """torch's linspace counts up from start for the first half and down from end for the second, in the dtype,
    one rounding each (Note [linspace's rounding]): every point is torch's bit for bit, where NumPy's float64
    linspace rounded to float32 missed about a third of them."""
    for start, end in [(-1, 1), (0, 1), (-3.7, 2.2), (5, -2), (1e-3, 1e5), (2, 2)]:
        for steps in [*range(8), 16, 24, 33, 257, 1000]:
            ours = retrograd.linspace(start, end, steps, dtype=getattr(retrograd, dtype)).numpy()
            theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
            assert ours.dtype == theirs.dtype
            np.testing.assert_array_equal(ours, theirs, err_msg=f"linspace({start}, {end}, {steps})")
