"""In-place writes through views, scenario by scenario, against torch.

A view shares memory with its base, so writing into it changes the base: torch records that on the
base as CopySlices and regenerates the view's history (AsStridedBackward0). Each scenario is a
function of the library (`torch` or `retrograd`) that returns what it observed: values,
gradients, grad_fn names, version counters, and the type and text of the errors torch raises
(for leaf views, outputs of multi-output views, expanded views, views made in no_grad).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd

X = np.arange(12.0).reshape(3, 4) / 4 - 1  # no zeros among the products below, no ties


def observe(value):
    """Something comparable: tensors become (dtype, shape, values rounded to 1e-9)."""
    if hasattr(value, "detach") and hasattr(value, "dtype"):
        arr = value.detach().numpy()
        arr = np.stack([arr.real, arr.imag], -1) if np.iscomplexobj(arr) else arr.astype(np.float64)
        return ("tensor", str(value.dtype), tuple(value.shape), np.round(arr, 9).tolist())
    if isinstance(value, (list, tuple)):
        return [observe(v) for v in value]
    return value


def outcome(fn) -> object:
    """fn()'s observations, or the type and message of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return observe(fn())
    except Exception as e:  # noqa: BLE001 - the type and text are what is compared
        return ("raised", type(e).__name__, str(e))


def leaf(L, array=X):
    return L.tensor(array, dtype=L.float64, requires_grad=True)


def name(t) -> str | None:
    return None if t.grad_fn is None else t.grad_fn.name()


SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


# ---- writes through a view reach the base's gradient ------------------------------------------


@scenario
def mul_through_select(L):
    x = leaf(L)
    y = x * 1
    v = y[0]
    v.mul_(2)
    seen = [name(y), name(v), v._version, y._version, y]
    (y * y).sum().backward()
    return seen + [x.grad]


@scenario
def setitem_tensor(L):
    x, w = leaf(L), leaf(L, np.linspace(-1, 1, 4))
    y = x * 1
    y[0] = w * 3
    (y * y).sum().backward()
    return [name(y), y, x.grad, w.grad]


@scenario
def add_through_slice(L):
    x, z = leaf(L), leaf(L, np.ones((3, 3)) / 3)
    y = x * 1
    v = y[:, 1:]
    v.add_(z)
    (y * y).sum().backward()
    return [name(y), name(v), x.grad, z.grad]


def graph(fn, depth: int):
    """The names of a node and of those below it, `depth` levels down (Note [in-place through views])."""
    if fn is None or depth == 0:
        return None if fn is None else fn.name()
    return (fn.name(), tuple(graph(f, depth - 1) for f, _ in fn.next_functions))


@scenario
def copy_slices_edges_and_double_backward(L):
    """CopySlices wraps the in-place op's node: its edges are the base's old history and the op's other
    inputs, and its backward (copy, as_strided, clone, the op's node, copy_ back) records torch's nodes."""
    x, w = leaf(L, np.array([1.0, -2.0, 3.0, 4.0])), leaf(L, np.array([2.0, 5.0]))
    y = x * 1
    y[1:3].add_(w * w)
    seen = [graph(y.grad_fn, 2)]
    out = (y * y).sum()
    (gx,) = L.autograd.grad(out, x, create_graph=True)
    (gw,) = L.autograd.grad(out, w, create_graph=True)
    second = L.autograd.grad((gx * gx).sum() + gw.sum(), (x, w))
    return seen + [graph(gx.grad_fn, 4), graph(gw.grad_fn, 3), gx, gw, second]


@scenario
def copy_slices_double_backward_through_saved_result(L):
    """relu_ on a view saves its result, which unpacks with the view's fresh history: the double backward
    reaches relu_'s node only through CopySlices, as torch's does."""
    x = leaf(L, np.array([1.0, -2.0, 3.0, 4.0]))
    y = x * 1
    v = y[1:3]
    L.relu_(v)
    (g,) = L.autograd.grad((y * y).sum(), x, create_graph=True)
    return [graph(g.grad_fn, 4), g, L.autograd.grad(g.sum(), x)]


@scenario
def zero_through_transposed_view(L):
    x = leaf(L)
    y = x * 1
    v = y.t()[0]
    v.zero_()
    (y * y).sum().backward()
    return [name(y), name(v), y, x.grad]


@scenario
def view_of_view_and_the_view_between(L):
    x = leaf(L)
    y = x * 1
    w = y[1:]
    v = w[0]
    v.mul_(3)
    seen = [name(y), name(w), name(v), v._base is y, w._base is y]
    ((y * y).sum() + (w ** 3).sum() + v.sum()).backward()
    return seen + [x.grad]


@scenario
def base_changed_after_view_taken(L):
    x = leaf(L)
    y = x * 1
    v = y[0]
    y.mul_(2)
    seen = [name(v), v]
    (v * v).sum().backward()
    return seen + [x.grad]


@scenario
def several_writes_through_one_view(L):
    x = leaf(L)
    y = x * 1
    v = y[1]
    v.mul_(2)
    v.add_(v * 2)
    v[0] = -1.0
    (y ** 2).sum().backward()
    return [name(y), v._version, x.grad]


@scenario
def transposed_slice_of_view(L):
    x = leaf(L)
    y = x * 1
    y.t()[1:, :2].mul_(y[2, 1].clone())
    (y * y).sum().backward()
    return [name(y), y, x.grad]


@scenario
def factor_saved_from_the_written_base(L):
    x = leaf(L)
    y = x * 1
    y.t()[1:, :2].mul_(y[2, 0])  # mul_ saved y[2, 0], a view of y, which the write then changed
    return (y * y).sum().backward()


@scenario
def diagonal_and_as_strided_views(L):
    x = leaf(L)
    y = x * 1
    y.diagonal().mul_(5)
    y.as_strided((2, 2), (4, 1), 2).add_(1)
    (y * y).sum().backward()
    return [name(y), y, x.grad]


@scenario
def as_strided_counts_offsets_in_the_whole_storage(L):
    """A detached slice's storage is its source's memory: storage_offset() and as_strided's offset both count from
    its start, so `t.as_strided(t.size(), t.stride(), t.storage_offset())` is t, and a window may reach the memory
    before and after the slice; its gradient lands on the slice's own elements."""
    source = L.tensor(np.arange(6.0) - 2.5, dtype=L.float64)
    t = source[1:5].detach().requires_grad_()
    same = t.as_strided(t.size(), t.stride(), t.storage_offset())
    wide = t.as_strided((3,), (2,), 0)
    (same * same).sum().backward(retain_graph=True)
    first = t.grad.clone()
    (wide * 3).sum().backward()
    beyond = outcome(lambda: t.as_strided((7,), (1,), 0))
    return [t.storage_offset(), same, name(same), wide, first, t.grad, t.view(2, 2).as_strided((2,), (1,), 2),
            beyond, L.as_strided_copy(t.detach(), (5,), (1,), 0)]


@scenario
def as_strided_under_vmap_stays_inside_each_example(L):
    x = L.tensor(np.arange(12.0).reshape(3, 4), dtype=L.float64)
    inside = L.vmap(lambda e: e.as_strided((2,), (1,), 2))(x)
    return [inside, outcome(lambda: L.vmap(lambda e: e.as_strided((5,), (1,), 0))(x)),
            outcome(lambda: L.vmap(lambda e: e.as_strided((2,), (1,), 3))(x))]


@scenario
def as_strided_tangent_under_vmap_stays_inside_each_example(L):
    """Forward AD takes as_strided's window of the tangent itself (torch's self_t.as_strided), so a tangent
    batched by vmap, laid out as its own examples and not as the primal's storage, gets a window inside each
    example and is refused one that reaches past it."""
    fw = L.autograd.forward_ad
    primal = L.tensor(np.arange(5.0) - 2, dtype=L.float64)[:4].detach()
    tangents = L.tensor(np.arange(12.0).reshape(3, 4), dtype=L.float64)

    def window(size, stride, offset):
        def jvp(tangent):
            with fw.dual_level():
                return fw.unpack_dual(fw.make_dual(primal, tangent).as_strided(size, stride, offset)).tangent
        return L._vmap_internals._vmap(jvp, 0, 0)(tangents)

    try:  # the legacy vmap's message runs words together in torch: compare its phrase
        window((5,), (1,), 0)
        refused = False
    except RuntimeError as e:
        refused = "can access memory outside of `tensor`" in str(e)
    return [outcome(lambda: window((2,), (2,), 1)), refused]


@scenario
def narrow_and_unfold_views(L):
    x = leaf(L)
    y = x * 1
    y.narrow(1, 1, 2).mul_(-1)
    y.unfold(1, 2, 2)[..., 0].add_(10)
    (y * y).sum().backward()
    return [name(y), y, x.grad]


@scenario
def copy_into_views(L):
    x, w = leaf(L), leaf(L, np.linspace(-1, 1, 4))
    y = x * 1
    y[0].copy_(L.zeros(4, dtype=L.float64))  # a constant: no gradient reaches x[0]
    y[1].copy_(w)
    z = L.zeros(3, 4, dtype=L.float64)  # a base without history gets one from the write
    z[2].copy_(x[1] * 2)
    ((y * y).sum() + (z * z).sum()).backward()
    return [name(y), name(z), z.requires_grad, x.grad, w.grad]


@scenario
def fill_and_zero(L):
    x, s = leaf(L), L.tensor(0.5, dtype=L.float64, requires_grad=True)
    a, b, c = x * 1, x * 2, x * 3
    a.fill_(2.0)
    b.fill_(s)
    c.zero_()
    c[1].fill_(s)
    seen = [name(a), name(b), name(c), a, b, c]
    (a.sum() + (b * x).sum() + (c * c).sum()).backward()
    return seen + [x.grad, s.grad]


@scenario
def in_place_ops_on_views(L):
    x, src = leaf(L), leaf(L, np.ones((2, 2)))
    y = x * 1
    y[1:].index_add_(1, L.tensor([0, 0]), src)
    y[:, 2:].masked_fill_(L.tensor([True, False]), 7.0)
    y[0].scatter_add_(0, L.tensor([3, 3]), src[0])
    (y * y).sum().backward()
    return [name(y), y, x.grad, src.grad]


@scenario
def second_order_through_copy_slices(L):
    x = leaf(L)
    y = x * x
    y[0].mul_(x[1])
    (g,) = L.autograd.grad((y ** 2).sum(), x, create_graph=True)
    g.sum().backward()
    return [g, x.grad]


@scenario
def forward_ad_through_view(L):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(L.tensor(X), L.ones(3, 4, dtype=L.float64))
        y = x * 1
        y[0].mul_(y[1])
        y[:, 3] = 2.0
        return [y, fw.unpack_dual(y).tangent]


# ---- views of another dtype (view_as_real, .real, .imag) are replayed, not as_strided -------------

Z = X[:, :2] + 1j * X[:, 2:]
W = np.arange(1.0, 13.0).reshape(3, 2, 2)


def complex_leaf(L):
    return L.tensor(Z, dtype=L.complex128, requires_grad=True)


@scenario
def writes_through_real_and_imag(L):
    z = complex_leaf(L)
    c = z * (1 + 2j)
    c.real.mul_(L.tensor([2.0, 3.0]))
    c.imag.add_(c.real)
    seen = [name(c), c]
    (L.view_as_real(c) * L.tensor(W)).sum().backward()
    return seen + [z.grad]


@scenario
def writes_through_view_as_real_and_its_views(L):
    grads = []
    for make in (lambda c: L.view_as_real(c), lambda c: L.view_as_real(c).transpose(0, 1),
                 lambda c: L.view_as_real(c.t()), lambda c: L.view_as_real(c)[1],
                 lambda c: L.view_as_complex(L.view_as_real(c))):
        z = complex_leaf(L)
        c = z.clone()
        v = make(c)
        v.mul_(L.arange(1.0, 1 + v.numel(), dtype=L.float64).reshape(v.shape))
        (L.view_as_real(c) * L.tensor(W)).sum().backward()
        grads += [name(v), name(c), z.grad]
    return grads


@scenario
def transposed_in_place_keeps_the_recorded_view(L):
    """torch regenerates view_as_real(z) untransposed after transpose_ (its TODO in
    test_autograd_inplace_views_cross_dtype): the gradient comes out transposed."""
    z = complex_leaf(L)
    b = L.view_as_real(z.clone()[:2])
    b.transpose_(0, 1)
    b += 1
    b.backward(L.arange(0.0, 8.0, dtype=L.float64).view(2, 2, 2))
    return [name(b), z.grad]


@scenario
def view_as_complex_of_a_real_base(L):
    x = leaf(L)
    y = x.clone().view(3, 2, 2)
    c = L.view_as_complex(y).reshape(6)
    c.mul_(2 - 1j)
    (y ** 2).sum().backward()
    return [name(c), name(y), x.grad]


@scenario
def second_order_and_tangents_through_view_as_real(L):
    z = complex_leaf(L)
    c = z * z
    L.view_as_real(c)[:, 0].mul_(3.0)
    (g,) = L.autograd.grad((L.view_as_real(c) ** 2).sum(), z, create_graph=True)
    (gg,) = L.autograd.grad(L.view_as_real(g).sum(), z)
    fw = L.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(L.tensor(Z), L.ones(3, 2, dtype=L.complex128))
        e = d * d
        L.view_as_real(e)[:, 0].mul_(3.0)
        tangent = fw.unpack_dual(e).tangent
    return [g, gg, tangent]


@scenario
def view_replay_mode(L):
    """With torch.autograd._force_original_view_tracking(True) every view records its ops, and a write
    regenerates the views by replaying them (ViewBackward0, SelectBackward0, ...), not as as_strided."""
    x = leaf(L)
    seen = []
    with L.autograd._force_original_view_tracking(True):
        y = x * 2
        a, b, c = y.t()[0], y.view(-1), y[1].unsqueeze(0)
        a.mul_(3)
        seen += [name(y), name(a), name(b), name(c), repr(y).split("grad_fn=")[1], L.autograd.is_view_replay_enabled()]
        (y * y).sum().backward()
    seen.append(L.autograd.is_view_replay_enabled())
    L.autograd._force_original_view_tracking(True)
    try:
        d = x.clone().view(-1)
        d.add_(1)
    finally:
        L.autograd._force_original_view_tracking(False)
    return seen + [x.grad, name(d), L.autograd.is_view_replay_enabled()]


# ---- forward AD: a view's tangent is a view of its base's tangent --------------------------------


@scenario
def tangents_of_views_share_memory(L):
    fw = L.autograd.forward_ad
    foo, bar = L.tensor([1.0, 2.0, 3.0]), L.tensor([0.5, -1.0, 2.0])
    with fw.dual_level():
        dual = fw.make_dual(foo, bar)  # a view of foo that is not forward differentiable
        view = dual.narrow(0, 0, 2)  # a forward-differentiable view of dual
        view *= 2
        seen = [fw.unpack_dual(foo).tangent, fw.unpack_dual(dual).tangent, fw.unpack_dual(view).tangent, bar]
        dual *= 3  # writes into bar, the tangent make_dual was given
        seen += [bar, fw.unpack_dual(view).tangent]
        primal, tangent = fw.unpack_dual(dual)
        primal *= 2  # the primal view carries no tangent: dual's stays
        tangent *= 2  # it is bar itself
        seen += [fw.unpack_dual(primal).tangent, fw.unpack_dual(dual)]
    return seen


@scenario
def writes_of_duals_into_plain_tensors(L):
    fw = L.autograd.forward_ad
    seen = []
    with fw.dual_level():
        dual = fw.make_dual(L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.tensor([[0.1, 0.2], [0.3, 0.4]]))
        for write in (lambda v: v.add_(dual), lambda v: v.mul_(dual), lambda v: v.copy_(dual)):
            base = L.tensor([[5.0, 6.0], [7.0, 8.0]])
            view = base.transpose(0, 1)
            write(view)
            view *= 2  # the base's tangent follows: the view's tangent is a view of it
            seen += [fw.unpack_dual(view).tangent, fw.unpack_dual(base).tangent]
        row = L.zeros(2, 2)
        row[0] = dual[1]  # the rest of row's new tangent is zero
        detached = L.ones(2, 2)
        alias = detached.detach()
        alias += dual  # a detached alias is not a view: its tangent stays its own
        plain = L.ones(2, 2)
        plain.copy_(dual)
        fresh = fw.unpack_dual(plain).tangent is not fw.unpack_dual(dual).tangent
        seen += [fw.unpack_dual(row).tangent, fw.unpack_dual(detached).tangent, fresh]
    return seen


@scenario
def saved_value_changed_through_view(L):
    x = leaf(L)
    e = (x * 1).exp()
    e[0].mul_(2)
    return e.sum().backward()


@scenario
def no_grad_writes_through_views_of_a_leaf(L):
    x = leaf(L)
    with L.no_grad():
        x[0].mul_(2)
        x[1] = 0.5
        x.t()[2].zero_()
    return [x, x._version, x.requires_grad, name(x)]


@scenario
def no_grad_view_of_a_leaf_written_twice_in_no_grad(L):
    """An optimizer's step: a view made and written in place again and again, all under no_grad (the writes record
    nothing, so none reads the view's history); its grad_fn, and a write with grad mode on, raise afterwards."""
    x = leaf(L)
    with L.no_grad():
        row = x[0]
        row.add_(1)
        row.addcdiv_(L.ones(4), L.full((4,), 2.0), value=-1.0)
        row.mul_(3)
    return [x, x._version, outcome(lambda: row.grad_fn), outcome(lambda: row.add_(1))]


@scenario
def detached_alias_shares_version(L):
    x = leaf(L)
    y = x * 1
    d = y.detach()
    d.mul_(2)
    return [y._version, name(y), d.requires_grad, y]


# ---- x[key] = value ------------------------------------------------------------------------


@scenario
def setitem_kinds(L):
    x, w = leaf(L), leaf(L, np.array([[0.5], [-2.0]]))
    names, ys = [], []
    for key, value in [(([0, 0],), w), ((L.tensor([True, False, True]),), 0.0), ((0, [1, 2]), w[:, 0]),
                       ((Ellipsis,), 2.0), ((slice(None),), w[0]), ((slice(None), [1]), w[0]), ((None, 1), 3.0),
                       ((True,), w[0]), ((slice(1, None), slice(None, None, 2)), w)]:
        y = x * 1
        y[key] = value
        names.append(name(y))
        ys.append(y)
    sum(((y * y).sum() for y in ys), L.zeros((), dtype=L.float64)).backward()
    return names + ys + [x.grad, w.grad]


@scenario
def setitem_on_a_tensor_without_history(L):
    w = L.tensor(2.0, dtype=L.float64, requires_grad=True)
    y = L.zeros(3, dtype=L.float64)
    y[0] = w
    y[1] = w * 3
    z = L.zeros(3, dtype=L.float64)
    z[[2]] = w
    seen = [name(y), name(z), y, z]
    (y.sum() + z.sum()).backward()
    return seen + [w.grad]


def _edges(t):
    """The node of t and the names of its next nodes (None for an edge to nothing)."""
    node = t.grad_fn
    return None if node is None else (node.name(), [None if n is None else n.name() for n, _ in node.next_functions])


@scenario
def setitem_graphs_of_every_key_and_value(L):
    """torch's copy_to: a value of the target's sizes is copied, a 0-d one fills (FillBackward3, or inside
    CopySlices), another one is expanded first (ExpandBackward0); a lone True writes x.unsqueeze(0); advanced
    keys put (IndexPutBackward0); values broadcast to the indexing result's shape or torch's error; and a leaf
    that requires grad (or a view of one) refuses before anything else but a shape error."""
    keys = [0, slice(0, 1), Ellipsis, None, True, (True,), slice(None, None, 2), (0, 1), [0, 2], (slice(None), [0]),
            L.tensor([True, False, True]), L.tensor([[True, False], [False, True], [True, True]])]
    values = [lambda: 1.0, lambda: L.tensor([5.0, 6.0], dtype=L.float64, requires_grad=True),
              lambda: L.tensor(2.0, dtype=L.float64, requires_grad=True),
              lambda: L.tensor([[7.0, 8.0]], dtype=L.float64)]
    seen = []
    for key in keys:
        for value in values:
            base = L.tensor(X[:3, :2], requires_grad=True)
            y = base * 1

            def write(target, key=key, value=value):
                target[key] = value()
                return target

            seen.append(outcome(lambda: _edges(write(y))))
            seen.append(outcome(lambda: (y.sum().backward(), base.grad)[1]) if y.grad_fn is not None else None)
            seen.append(outcome(lambda: write(L.tensor(X[:3, :2], requires_grad=True))))
            seen.append(outcome(lambda: write(leaf(L)[:3, :2])))
    return seen


@scenario
def index_put_takes_tensor_values(L):
    y = L.zeros(3, 2)
    return [outcome(lambda: y.index_put_((L.tensor([0, 1]),), 1.0)),
            outcome(lambda: y.index_put_((L.tensor([0, 1]),), L.ones(1, 2, 2))),
            outcome(lambda: y.index_put_((L.tensor([0, 1]),), L.ones(2, 1)))]


@scenario
def setitem_value_shapes(L):
    y = L.zeros(3, 4, dtype=L.float64)
    y[0] = L.ones(1, 4, dtype=L.float64)       # leading size-1 dims are dropped
    y[1:] = L.arange(4.0, dtype=L.float64)     # broadcast
    y[2, 1:3] = L.tensor(7, dtype=L.int64)     # cast
    return [y]


@pytest.mark.parametrize("key, value", [
    ("basic_mismatch", "torch.ones(5)"), ("basic_rank", "torch.ones(2, 1, 4)"), ("advanced_mismatch", "torch.ones(3)"),
    ("advanced_dtype", "torch.ones(4, dtype=torch.float32)"), ("list", "[1.0, 2.0, 3.0, 4.0]"),
])
def test_setitem_errors(key: str, value: str) -> None:
    def attempt(L):
        y = L.zeros(3, 4, dtype=L.float64)
        v = eval(value, {"torch": L})  # noqa: S307 - our own expressions
        if key.startswith("advanced"):
            y[[0, 1]] = v
        else:
            y[0] = v
    ours, theirs = outcome(lambda: attempt(retrograd)), outcome(lambda: attempt(torch))
    assert ours == theirs


# ---- what torch refuses ----------------------------------------------------------------------


@scenario
def view_of_a_leaf(L):
    x = leaf(L)
    return [outcome(lambda: x[0].mul_(2)), outcome(lambda: x.t().zero_()), outcome(lambda: x.__setitem__(0, 1.0)),
            outcome(lambda: x[0:1].expand(3, 4).mul_(2)), x._version]


@scenario
def leaf_itself(L):
    x = leaf(L)
    return [outcome(lambda: x.mul_(2)), outcome(lambda: x.__setitem__([0], 1.0))]


@scenario
def outputs_of_multi_output_views(L):
    y = leaf(L) * 1
    a, b = y.split(2)
    c = y.split([1, 2])[1]
    parts = y.unbind()
    first = y.chunk(3, 1)[0]
    return [outcome(lambda: a.mul_(2)), outcome(lambda: b.add_(1)), outcome(lambda: c.zero_()),
            outcome(lambda: parts[1].mul_(2)), outcome(lambda: first.div_(2)),
            outcome(lambda: parts[0][1:].mul_(2)), outcome(lambda: parts[2].view(2, 2).mul_(2)),
            outcome(lambda: a.__setitem__(0, 1.0)), y._version]


@scenario
def multi_output_views_without_grad(L):
    z = L.zeros(4, dtype=L.float64)
    a, b = z.split(2)
    a.add_(1)
    y = leaf(L) * 1
    with L.no_grad():
        y.unbind()[0].mul_(0)
    return [z, y]


@scenario
def expanded_views(L):
    y = leaf(L) * 1
    base = L.zeros(3, 1, dtype=L.float64)
    big = y.expand(2, 3, 4)
    big[1].mul_(2)  # one slice of an expanded view does not overlap itself: allowed
    with L.no_grad():
        in_no_grad = outcome(lambda: y[0:1].expand(3, 4).mul_(2))
    return [outcome(lambda: y[0:1].expand(3, 4).mul_(2)), outcome(lambda: base.expand(3, 4).add_(1)),
            outcome(lambda: y.expand(2, 3, 4).__setitem__((slice(None), 0), 1.0)), in_no_grad, name(y), y]


@scenario
def view_made_in_no_grad(L):
    y = leaf(L) * 1
    with L.no_grad():
        v = y[0]
    return [outcome(lambda: v.mul_(2)), outcome(lambda: v.__setitem__(0, 5.0))]


@scenario
def detach_in_place_on_a_view(L):
    y = leaf(L) * 1
    v = y[0]
    return [outcome(lambda: v.detach_()), outcome(lambda: L.zeros(3)[0].detach_().requires_grad)]


# ---- in-place view ops: self becomes the view -------------------------------------------------

IN_PLACE_VIEWS = {
    "as_strided_": lambda v: v.as_strided_((1, 0), (2, 2)), "transpose_": lambda v: v.transpose_(0, 1),
    "t_": lambda v: v.t_(), "squeeze_dim": lambda v: v.squeeze_(0), "squeeze_all": lambda v: v.squeeze_(),
    "squeeze_dims": lambda v: v.squeeze_((0, 1)), "unsqueeze_": lambda v: v.unsqueeze_(0),
    "swapdims_": lambda v: v.swapdims_(0, 0), "swapaxes_": lambda v: v.swapaxes_(0, 1),
}


@scenario
def in_place_view_ops(L):
    seen = []
    for change in IN_PLACE_VIEWS.values():
        x = leaf(L, X[:1, :3])
        y = x * 1
        v = y.view_as(y)
        seen += [change(v) is v, name(v), name(v.grad_fn.next_functions[0][0]), v._version, v._base is y, v.shape,
                 v.stride()]
        v.mul_(2)
        seen += [name(v), name(y)]
        (y * y).sum().backward()
        b = x * 1
        change(b)
        seen += [x.grad, name(b), b._base is None, b._version, outcome(lambda: change(leaf(L)))]
    return seen


@scenario
def in_place_view_ops_and_how_the_view_was_made(L):
    """torch's refusals by creation meta: made in no_grad, or by a multi-output op (Note [in-place view ops])."""
    seen = []
    for change in (IN_PLACE_VIEWS["t_"], IN_PLACE_VIEWS["unsqueeze_"]):
        for multi in (False, True):
            for grad_at_view in (True, False):
                for grad_at_change in (True, False):
                    base = leaf(L) * 1
                    with L.set_grad_enabled(grad_at_view):
                        v = base.unbind()[0] if multi else base.view_as(base)
                    with L.set_grad_enabled(grad_at_change):
                        first = outcome(lambda: change(v))
                    seen += [first, outcome(lambda: name(v.add_(1)))]
    return seen


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_torch(name: str) -> None:
    ours = outcome(lambda: SCENARIOS[name](retrograd))
    theirs = outcome(lambda: SCENARIOS[name](torch))
    assert ours == theirs


EXPANDED_WRITES = {
    "fill_": lambda lib, t: t.fill_(1.0), "zero_": lambda lib, t: t.zero_(), "add_": lambda lib, t: t.add_(1),
    "mul_": lambda lib, t: t.mul_(2), "relu_": lambda lib, t: t.relu_(), "sigmoid_": lambda lib, t: t.sigmoid_(),
    "clamp_": lambda lib, t: t.clamp_(0, 1), "copy_": lambda lib, t: t.copy_(lib.ones(3)),
    "eq_": lambda lib, t: t.eq_(0.0), "normal_": lambda lib, t: t.normal_(),
    "masked_fill_": lambda lib, t: t.masked_fill_(lib.tensor([True, False, True]), 2.0),
}


@pytest.mark.parametrize("detached", [False, True], ids=["view", "detached_alias"])
@pytest.mark.parametrize("op", sorted(EXPANDED_WRITES))
def test_write_into_expanded_memory_as_torch(op: str, detached: bool) -> None:
    """Writes into memory that several elements share: torch refuses most in-place ops ("more than one
    element of the written-to tensor refers to a single memory location"), fills and masked writes go
    through; the same whether the tensor is the expanded view or an alias of it."""
    def scenario(lib):
        target = lib.zeros(1).expand(3)
        target = target.detach() if detached else target
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation warning for masked_fill_ on expanded tensors
            try:
                EXPANDED_WRITES[op](lib, target)
            except RuntimeError as e:
                return "RuntimeError", str(e).split("\n")[0]
        return "ok", None if op == "normal_" else observe(target)

    assert scenario(retrograd) == scenario(torch)


def test_views_list_is_scanned_a_bounded_number_of_times(monkeypatch):
    """Note [views and in-place writes]: the dead views are dropped from the version counter in amortised O(1) a
    view, also when so many views stay alive that a pruned list ends one short of a power of two (1021 kept views
    and one view at a time made and dropped: every view made scanned the whole list)."""
    import retrograd._tensor as tensor_module
    import retrograd.ops.registry as registry

    scans = []
    prune = tensor_module.prune_views

    def counting(counter):
        scans.append(len(counter))
        prune(counter)

    monkeypatch.setattr(tensor_module, "prune_views", counting)
    monkeypatch.setattr(registry, "prune_views", counting)
    base = retrograd.randn(1021, 4, requires_grad=True).clone()
    kept = base.unbind(0)
    for _ in range(3000):
        view = base[0:1]
        del view
    assert len(kept) == 1021 and len(scans) <= 10
    assert len(base._vc) <= 4 * 1024  # the dead are still dropped
