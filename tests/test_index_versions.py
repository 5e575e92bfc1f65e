"""Index, mask and target tensors changed in place after an op read them: torch saved them with the node and
refuses backward with its version error; retrograd must do the same rather than compute a gradient from the
changed indices (Note [index tensors] in ops/registry.py)."""

import gc
import weakref

import pytest
import torch

import retrograd

LIBS = {"torch": torch, "retrograd": retrograd}


def _setitem(lib, x, index):
    y = x * 1
    y[index] = 0.0
    return y


def _setitem_mask(lib, x, mask):
    y = x * 1
    y[mask] = 0.0
    return y


# name: (the index tensor, the op reading it, the in-place change)
CASES = {
    "getitem": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x[i], lambda i: i.__setitem__(0, 1)),
    "getitem mask": (lambda lib: lib.tensor([True, False, True]), lambda lib, x, m: x[m], lambda m: m.logical_not_()),
    "getitem tuple": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x[i, 1:], lambda i: i.add_(0)),
    "setitem": (lambda lib: lib.tensor([0, 2]), _setitem, lambda i: i.fill_(1)),
    "setitem mask": (lambda lib: lib.tensor([True, False, True]), _setitem_mask, lambda m: m.zero_()),
    "index_put": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x.index_put((i,), x.new_tensor(1.0)),
                  lambda i: i.add_(1)),
    "index_select": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x.index_select(1, i), lambda i: i.add_(1)),
    "index_add": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x.new_zeros(4, 4).index_add(0, i, x[:2]),
                  lambda i: i.add_(1)),
    "index_copy": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x.new_zeros(4, 4).index_copy(0, i, x[:2]),
                   lambda i: i.add_(1)),
    "index_fill": (lambda lib: lib.tensor([0, 2]), lambda lib, x, i: x.index_fill(1, i, 0.0), lambda i: i.add_(1)),
    "gather": (lambda lib: lib.tensor([[0], [2], [1]]), lambda lib, x, i: x.gather(1, i), lambda i: i.add_(1)),
    "scatter": (lambda lib: lib.tensor([[0], [2], [1]]), lambda lib, x, i: x.scatter(1, i, x[:, :1]),
                lambda i: i.add_(1)),
    "scatter_add": (lambda lib: lib.tensor([[0], [2], [1]]), lambda lib, x, i: x.scatter_add(1, i, x[:, :1]),
                    lambda i: i.add_(1)),
    "take": (lambda lib: lib.tensor([0, 5]), lambda lib, x, i: x.take(i), lambda i: i.add_(1)),
    "masked_fill": (lambda lib: lib.eye(3, 4, dtype=lib.bool), lambda lib, x, m: x.masked_fill(m, 0.0),
                    lambda m: m.logical_not_()),
    "masked_fill_": (lambda lib: lib.eye(3, 4, dtype=lib.bool), lambda lib, x, m: (x * 1).masked_fill_(m, 0.0),
                     lambda m: m.logical_not_()),
    "masked_select": (lambda lib: lib.eye(3, 4, dtype=lib.bool), lambda lib, x, m: x.masked_select(m),
                      lambda m: m.logical_not_()),
    "where": (lambda lib: lib.eye(3, 4, dtype=lib.bool), lambda lib, x, m: lib.where(m, x, 0.0),
              lambda m: m.logical_not_()),
    "embedding": (lambda lib: lib.tensor([[0, 1]]), lambda lib, x, i: lib.nn.functional.embedding(i, x),
                  lambda i: i.add_(1)),
    "nll_loss": (lambda lib: lib.tensor([0, 1, 2]), lambda lib, x, t: lib.nn.functional.nll_loss(x, t),
                 lambda t: t.__setitem__(0, 3)),
    "cross_entropy": (lambda lib: lib.tensor([0, 1, 2]), lambda lib, x, t: lib.nn.functional.cross_entropy(x, t),
                      lambda t: t.__setitem__(0, 3)),
    "multi_margin_loss": (lambda lib: lib.tensor([0, 1, 2]),
                          lambda lib, x, t: lib.nn.functional.multi_margin_loss(x, t), lambda t: t.add_(1)),
}


def _outcome(lib, case: str, change: bool) -> tuple:
    """What backward does after the op (and the in-place change of its index tensor, if `change`)."""
    make_index, op, mutate = CASES[case]
    x = lib.arange(12.0, dtype=lib.float64).reshape(3, 4).requires_grad_()
    index = make_index(lib)
    y = op(lib, x, index)
    if change:
        mutate(index)
    try:
        (y * lib.arange(1.0, 1.0 + y.numel(), dtype=lib.float64).reshape(y.shape)).sum().backward()
    except RuntimeError as e:
        return "raised", str(e)
    return "grad", type(y.grad_fn).__name__, x.grad.flatten().tolist()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("change", [True, False], ids=["changed", "unchanged"])
def test_index_changed_in_place_refuses_backward_as_torch(case: str, change: bool) -> None:
    expected = _outcome(torch, case, change)
    assert expected[0] == ("raised" if change else "grad")  # the oracle does what this test is about
    got = _outcome(retrograd, case, change)
    assert got[:2] == expected[:2]  # the error's message, or the node's name
    if change is False:
        assert got[2] == pytest.approx(expected[2], rel=1e-12)


def test_index_tensors_go_with_the_graph() -> None:
    """Like any saved tensor, a node's index tensors are let go by backward, and live no longer than its graph."""
    x = retrograd.ones(3, requires_grad=True)
    index = retrograd.tensor([0, 2])
    y = x[index]
    gone = weakref.ref(index)
    del index
    assert gone() is not None  # the node holds it until backward
    y.sum().backward()
    gc.collect()
    assert gone() is None


def test_retained_graph_checks_again() -> None:
    """A retained graph checks its index tensors each time it runs backward."""
    x = retrograd.ones(3, requires_grad=True)
    index = retrograd.tensor([0, 2])
    y = x[index].sum()
    y.backward(retain_graph=True)
    index.add_(0)
    with pytest.raises(RuntimeError, match=r"\[torch.LongTensor \[2\]\] is at version 1; expected version 0"):
        y.backward()


def test_unrecorded_op_keeps_nothing() -> None:
    """Without a node (no input requires grad) there is nothing to check, and the index may change freely."""
    index = retrograd.tensor([0, 2])
    y = retrograd.ones(3)[index]
    index.add_(1)
    assert y.grad_fn is None and y.tolist() == [1.0, 1.0]


def test_in_place_index_op_on_a_view_checks_its_index() -> None:
    """An in-place index op on a view records CopySlices on the base, wrapping the op's node: that node checks."""
    results = []
    for lib in (torch, retrograd):
        x = lib.ones(2, 3, requires_grad=True)
        y = x * 1
        index = lib.tensor([0, 2])
        y[0].index_fill_(0, index, 0.0)
        index.add_(1)
        with pytest.raises(RuntimeError) as error:
            y.sum().backward()
        results.append(str(error.value))
    assert results[0] == results[1]


def test_no_grad_in_place_op_leaves_the_earlier_node_alone() -> None:
    """Under no_grad an in-place index op records nothing; the tensor's grad_fn is an earlier op's node, whose
    backward must not come to depend on the new op's index."""
    x = retrograd.ones(4, requires_grad=True)
    y = x.masked_fill(retrograd.tensor([True, False, False, False]), 0.0)
    mask = retrograd.tensor([False, True, False, False])
    with retrograd.no_grad():
        y.masked_fill_(mask, 0.0)
    mask.logical_not_()
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0]
