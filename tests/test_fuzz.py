"""CI profile of the differential fuzzer: a fixed-seed hypothesis run of 500 short programs (tests/fuzz), the
shrunk programs that once found a mismatch, and the view/no_grad scenarios behind them, against torch."""

import warnings

import pytest
import torch
from fuzz import Program, Step, check, programs
from hypothesis import HealthCheck, given, seed, settings

import retrograd


@seed(20261121)
@settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs)
def test_torch_and_retrograd_agree_on_random_programs(program: Program) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        difference = check(program)
    assert difference is None, difference


# ---- shrunk programs from `python -m tests.fuzz` runs, each with what differed before its fix ----
REGRESSIONS = {
    # in-place under no_grad on a view of a leaf: torch regenerates the view's node (AsStridedBackward0)
    "no_grad_inplace_on_view_of_leaf": Program(
        inputs=(((), "float32", False), ((), "float32", False), ((), "float32", True)), seed=0,
        steps=(Step("abs", 0, 0, False), Step("abs", 0, 0, False), Step("abs", 0, 0, False),
               Step("squeeze", 2, 0, False), Step("inplace_mul", 6, 0, True))),
    # the same on a view of a non-leaf (the write is a NumPy in-place ufunc, no _become)
    "no_grad_inplace_on_view_of_nonleaf": Program(
        inputs=(((), "float32", True),), seed=0,
        steps=(Step("abs", 0, 0, False), Step("transpose", 0, 0, False), Step("inplace_mul", 2, 0, True))),
    # `x[..., 1:]` of an empty dim: SliceBackward0, not an alias (torch skips only slices written from 0)
    "slice_from_one_of_empty_dim": Program(
        inputs=(((0,), "float32", True),), seed=0, steps=(Step("abs", 0, 0, False), Step("slice", 0, 0, False))),
    # in-place on an empty expanded view: allowed (retrograd raised "more than one element ... single memory location")
    "inplace_on_empty_expanded_view": Program(
        inputs=(((0,), "float32", False),), seed=0,
        steps=(Step("abs", 0, 0, False), Step("abs", 0, 0, False), Step("expand", 0, 0, False),
               Step("inplace_mul", 3, 0, False))),
    # a float64 leaf's second derivative through a float32 one: float32 precision (the fuzzer's tolerance was wrong)
    "float64_grad_through_float32": Program(
        inputs=(((), "float64", True), ((), "float32", True)), seed=0,
        steps=(Step("abs", 1, 0, False), Step("mul", 0, 1, False))),
    # second derivatives that are zero in exact arithmetic come out as rounding noise in one library or the other
    # (the fuzzer compared "exactly zero" before comparing values)
    "softmax_second_derivative_noise": Program(
        inputs=(((3, 3, 2), "float32", True),), seed=0, steps=(Step("abs", 0, 0, False), Step("softmax", 0, 0, False))),
    "norm_of_norm_second_derivative_noise": Program(
        inputs=(((), "float32", True),), seed=0,
        steps=(Step("norm", 0, 0, False), Step("norm", 0, 0, False), Step("abs", 1, 0, False))),
    "norm_of_small_norm_second_derivative_noise": Program(
        inputs=(((), "float32", True),), seed=1220,
        steps=(Step("norm", 0, 0, False), Step("norm", 0, 0, False), Step("abs", 1, 0, False))),
    # reshape of non-contiguous memory that can be viewed: ReshapeAliasBackward0 (retrograd said ViewBackward0)
    "reshape_of_expanded_scalar": Program(
        inputs=(((), "float32", True),), seed=0,
        steps=(Step("expand", 0, 0, False), Step("reshape_flat", 1, 0, False))),
    # batch dims that do not broadcast, with mismatched inner sizes too: torch's broadcast RuntimeError first
    "matmul_batch_mismatch_before_inner": Program(
        inputs=(((0, 0, 2), "float32", False),), seed=0,
        steps=(Step("permute_rev", 0, 0, False), Step("matmul", 0, 1, False))),
    # in-place on max(dim).values: its backward reads only the indices (retrograd checked the values' version)
    "inplace_on_max_dim_values": Program(
        inputs=(((), "float32", True),), seed=0,
        steps=(Step("max_dim", 0, 0, False), Step("inplace_mul", 1, 0, False))),
    # cat's gradient for a 1-d empty input is fresh zeros, without history (retrograd's was a piece of the graph)
    "cat_of_empty_1d_double_backward": Program(
        inputs=(((0,), "float32", True), ((), "float32", False), ((), "float32", False)), seed=0,
        steps=(Step("abs", 1, 0, False), Step("cat", 0, 0, False), Step("abs", 4, 0, False))),
    # a no_grad write into a leaf regenerates its views (retrograd tracked views of non-leaves only), and
    # as_strided's gradient for an empty output is fresh zeros, without history
    "empty_regenerated_view_double_backward": Program(
        inputs=(((0,), "float32", True),), seed=0,
        steps=(Step("slice", 0, 0, False), Step("inplace_mul", 0, 0, True), Step("abs", 1, 0, False))),
    # a view of a tensor without history, which an in-place op then gives one: torch regenerates the view's node
    # (retrograd registered views only of bases that required grad, so the view kept none)
    "inplace_gives_history_to_base_of_earlier_view": Program(
        inputs=(((), "float32", True), ((), "float32", False)), seed=0,
        steps=(Step("expand", 1, 0, False), Step("inplace_add", 1, 0, False))),
    # an in-place write into a detached alias of an expanded view: torch refuses (elements share memory); retrograd
    # checked that only for views
    "inplace_into_detached_expanded_alias": Program(
        inputs=(((), "float32", False), ((), "float32", False)), seed=0,
        steps=(Step("abs", 0, 0, False), Step("expand", 0, 0, False), Step("detach", 3, 0, False),
               Step("inplace_mul", 4, 0, False))),
    # an in-place add reading its own memory through a transpose: torch refuses (partial overlap), retrograd computed
    "inplace_add_reading_own_transpose": Program(
        inputs=(((2, 2), "float32", False),), seed=0,
        steps=(Step("transpose", 0, 0, False), Step("inplace_add", 0, 1, False))),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_fuzz_regression(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        difference = check(REGRESSIONS[name])
    assert difference is None, difference


# ---- views made under no_grad and in-place writes under no_grad, observed in both libraries ----
def _name(t) -> str | None:
    return None if t.grad_fn is None else t.grad_fn.name()


def _outcome(fn) -> object:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return ("raised", type(e).__name__, str(e))


def no_grad_view_of_leaf(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.no_grad():
        v = x[1:]
    w = v[0]  # a view of it made with grad: it has a node, but gradients still stop at v
    y = (v * 2).sum()
    y.backward()
    v.requires_grad_(False)  # cannot be switched off: its base requires grad
    return [v.requires_grad, v.is_leaf, _name(v), _name(y), x.grad, v.grad, w.requires_grad, _name(w),
            _outcome(lambda: L.autograd.grad((v * 2).sum(), [v])), _outcome(lambda: v.mul_(2)),
            _outcome(lambda: w.mul_(2)), v.detach().requires_grad]


def no_grad_view_of_nonleaf(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    with L.no_grad():
        v = y.unsqueeze(0)
        parts = y.unbind()
    return [v.requires_grad, v.is_leaf, _name(v), parts[0].requires_grad,
            _outcome(lambda: parts[0].mul_(2)), _outcome(lambda: v.add_(1))]


def no_grad_writes_regenerate_views(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v, w = y[1:], y[:2]
    with L.no_grad():
        v.mul_(2)
    seen = [_name(v), _name(w), _name(y)]
    (v * w).sum().backward()
    z = x * 3
    u = z[1:].t()
    with L.no_grad():
        z.sigmoid_()
    leaf_view = x[1:]
    with L.no_grad():
        x.mul_(2)
    return seen + [x.grad.tolist(), _name(u), _name(z), _name(leaf_view)]


def leaf_view_made_with_requires_grad(L):
    v = L.zeros(3)[1:]
    v.requires_grad_()
    return _outcome(lambda: v.mul_(2))


@pytest.mark.parametrize("scenario", [no_grad_view_of_leaf, no_grad_view_of_nonleaf, no_grad_writes_regenerate_views,
                                      leaf_view_made_with_requires_grad], ids=lambda f: f.__name__)
def test_views_and_no_grad_as_torch(scenario) -> None:
    ours, theirs = scenario(retrograd), scenario(torch)
    assert str(ours) == str(theirs)
