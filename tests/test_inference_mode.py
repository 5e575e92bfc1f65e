"""Grad modes, inference mode and inference tensors, view creation modes and in-place view ops, against torch.

Each scenario is a function of the library module (`torch` or `retrograd`) returning a list of
observations (flags, grad_fn names, values, exception types and full messages); both libraries must
observe exactly the same things.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import retrograd

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def raises(fn) -> tuple:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and text are what we compare
        return (type(e).__name__, str(e))
    return ("no error",)


def name(fn) -> str | None:
    return None if fn is None else fn.name()


@scenario
def inference_mode_switches(L):
    out = []
    with L.inference_mode():
        out.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
        with L.inference_mode(False):
            out.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
        with L.enable_grad():  # grad mode on, yet nothing is recorded in inference mode
            x = L.ones(2, requires_grad=True)
            out.append((L.is_grad_enabled(), (x * 2).requires_grad))
    with L.no_grad():
        with L.inference_mode(mode=False):  # inference mode off means grad mode on
            out.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
        out.append(L.is_grad_enabled())
    out.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))

    def f(x):
        return L.is_inference_mode_enabled(), L.is_inference(x * 2)

    out += [L.inference_mode(f)(L.ones(1)), L.inference_mode(mode=f)(L.ones(1)), L.inference_mode(False)(f)(L.ones(1))]
    return out


@scenario
def inference_tensors(L):
    with L.inference_mode():
        c = L.ones(2, 3)
        r = L.ones(2, 3, requires_grad=True)
        made = [L.is_inference(t) for t in (c, r, c * 2, L.tensor([1.0]), c.view(-1), c.detach(), c.data)]
        c.add_(1)  # allowed inside, and no version is counted
        c.transpose_(0, 1)
        c.resize_(2, 2)
        flags = [r.requires_grad, (r * 2).requires_grad, c.shape, c.tolist()]
    n = L.ones(2)
    out = [made, flags, c.is_inference(), n.is_inference(), raises(lambda: c._version)]
    out.append(raises(lambda: c.add_(1)))
    out.append(c.tolist())  # written before the refusal, as torch does
    out.append(raises(lambda: c.requires_grad_()))
    out.append(raises(lambda: setattr(c, "requires_grad", True)))
    c.requires_grad_(False)
    out.append([L.is_inference(t) for t in (c * 2, c.clone(), c.view(-1), c[0], c.detach())])
    v = r.view(-1)  # a view of an inference tensor is one too, and no view; nothing is recorded
    out.append((L.is_inference(v), v._is_view(), v.requires_grad, v.is_leaf, name(r.exp().grad_fn)))
    s = L.ones(2, 3, requires_grad=True)
    y = r.add(s)  # recorded: s is a normal tensor; nothing is saved
    out.append((L.is_inference(y), name(y.grad_fn), name((r + 1).grad_fn)))
    y.sum().backward()
    out.append(r.grad.tolist())
    out.append(raises(lambda: r * s))  # mul saves its inputs
    out.append(raises(lambda: L.is_inference(3)))
    out.append((raises(lambda: c.resize_(1, 4)), raises(lambda: c.transpose_(0, 1)), c.stride()))  # changed, refused
    return out


@scenario
def normal_tensors_in_inference_mode(L):
    s = L.ones(2, 3, requires_grad=True)
    a = s.clone()
    out = a * a  # saves a
    with L.inference_mode():
        v = a.view(-1)
        w = v.view(3, 2)
        made = (v.is_leaf, name(v.grad_fn), name(w.grad_fn))
        a.add_(1)  # counted: backward through `out` is refused
        first = [L.is_inference(t) for t in (a, v, w, a * 2, a.detach())]
        first += [v._is_view(), v.requires_grad, w._base is a, a._version, raises(lambda: v.is_leaf)]
    err = raises(lambda: out.backward(L.ones_like(out)))
    return [made, first, err[0], err[1][:80], raises(lambda: v.add_(1)), raises(lambda: w.grad_fn),
            raises(lambda: w.transpose_(0, 1)), v.requires_grad, repr(w)[-22:]]


@scenario
def view_creation_modes(L):
    """Views made in no_grad, in inference mode, by multi-output ops and inside custom Functions: written
    in place themselves, and read after their base was written."""
    class MyFn(L.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Same(L.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp

        @staticmethod
        def backward(ctx, grad):
            return grad

    out = []
    leaf = L.ones(2, 3, requires_grad=True)
    for make in ("no_grad", "inference"):
        mode = L.no_grad if make == "no_grad" else L.inference_mode
        a = leaf.clone()
        with mode():
            v = a.view(-1)
        w = v.view(3, 2)  # a view of a view made in that mode
        out += [raises(lambda: v.mul_(2)), raises(lambda: w.mul_(2)), name(w.grad_fn)]
        a.add_(1)
        out += [raises(lambda: v.grad_fn), raises(lambda: w.grad_fn), raises(lambda: v * 2), v.requires_grad]
        b = leaf.clone()
        with mode():
            u = b[0]
            u.mul_(2)  # written inside the mode: its history is refused afterwards too
        out.append(raises(lambda: u.grad_fn))
        x = L.zeros(2)
        with mode():
            y = x.view(2)
        out.append(raises(lambda: y.add_(L.ones(2, requires_grad=True))))  # another input requires grad
    a = leaf.clone()
    parts = a.unbind()
    a.add_(1)
    out.append(raises(lambda: parts[0].grad_fn))
    for fn in (MyFn, Same):
        a = leaf.clone()
        f = fn.apply(a)
        out += [f._is_view(), f._base is a, name(f.grad_fn), raises(lambda: f.add_(1))]
        a.add_(1)
        out.append(raises(lambda: f.grad_fn))
        plain = fn.apply(L.rand(1, 2))
        out.append(raises(lambda: plain.copy_(L.rand(1, requires_grad=True))))
    a = leaf.clone()
    with L.no_grad():
        v = a.view(-1)
    with L.inference_mode():
        w = v.view(2, 3)  # inference mode outranks how the view it is taken of was made
    out.append(raises(lambda: w.mul_(2)))
    return out


@scenario
def inplace_view_ops(L):
    leaf = L.ones(2, 1, 3, requires_grad=True)
    out = []
    for op in (lambda a: a.transpose_(0, 2), lambda a: a.swapdims_(0, 1), lambda a: a.swapaxes_(2, 0),
               lambda a: a.squeeze_(), lambda a: a.squeeze_(1), lambda a: a.squeeze_((1,)),
               lambda a: a.unsqueeze_(-1), lambda a: a[:, 0].t_()):
        a = leaf.clone()
        r = op(a)
        out.append((r is a, name(r.grad_fn), [name(n) for n, _ in r.grad_fn.next_functions], tuple(r.shape),
                    r.stride(), r._version, r._is_view()))
    a = leaf.clone()
    v, w = a[0], a[1]
    v.transpose_(0, 1)
    out.append((name(v.grad_fn), v._base is a, name(w.grad_fn), name(a.grad_fn), a._version))
    (v.sum() * 2 + a.sum() + w.sum() * 3).backward()
    out.append(leaf.grad.tolist())
    out.append(raises(lambda: leaf.transpose_(0, 1)))
    with L.no_grad():
        b = leaf.clone().mul(1)
    b.t_() if b.dim() == 2 else b.squeeze_(1).t_()
    out.append((tuple(b.shape), b._version, name(b.grad_fn)))
    return out


@scenario
def inplace_view_ops_keep_how_views_were_made(L):
    """An in-place view op on a view made in one grad mode, run in another, then a write through it."""
    class Func(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, x):
            return x

    out = []
    for op in (lambda v: v.as_strided_((1, 0), (2, 2)), lambda v: v.transpose_(0, 0), lambda v: v.unsqueeze_(0)):
        for make in (lambda b: b.view_as(b), lambda b: b.unbind()[0], Func.apply):
            for grad_view in (True, False):
                for grad_op in (True, False):
                    base = L.rand(2, 3, requires_grad=True).clone()
                    with L.set_grad_enabled(grad_view):
                        v = make(base)
                    with L.set_grad_enabled(grad_op):
                        first = raises(lambda: op(v))
                    out.append((first, raises(lambda: v.add_(1)) if first == ("no error",) else None))
    return out


@scenario
def resize(L):
    out = [raises(lambda: L.ones(2, requires_grad=True).clone().resize_(1))]
    with L.no_grad():
        out.append(tuple(L.ones(2, requires_grad=True).clone().resize_(1).shape))
    for shape, make in (((2, 2), lambda: L.arange(6.0).view(2, 3)), ((6,), lambda: L.arange(6.0).view(2, 3).t()),
                        ((2, 2), lambda: L.arange(6.0).view(2, 3).t()), ((2, 3), lambda: L.ones(2, 3)),
                        ((3, 3), lambda: L.arange(6.0))):
        x = make()
        x.resize_(*shape)
        out.append((x[:2].tolist() if x.numel() > 6 else x.tolist(), x._version))
    with L.inference_mode():  # autograd's check is skipped there, for inference and normal tensors alike
        out.append([tuple(t.resize_(3).shape) for t in (L.ones(2, requires_grad=True),
                                                        L.ones(1, 2, requires_grad=True))])
    x = L.arange(6.0)
    v = x.view(2, 3)
    x.resize_(2, 2)
    x.mul_(10)  # still x's memory
    out.append((v.tolist(), x.resize_as_(L.ones(4)).tolist()))
    return out


@scenario
def forward_ad_is_off_in_inference_mode(L):
    fw = L.autograd.forward_ad
    x = L.ones(2)
    with fw.dual_level():
        d = fw.make_dual(x, L.ones(2))
        with L.inference_mode():
            e = d * 2
            f = fw.make_dual(x, L.ones(2))
            inside = [fw.unpack_dual(t).tangent for t in (d, e, f)] + [L.is_inference(e), f._is_view()]
        outside = [fw.unpack_dual(t).tangent for t in (d * 2, e, f)]
    with L.inference_mode():
        g = L.rand(2)
        with fw.dual_level():
            dual = fw.make_dual(g, L.rand(2))
            dual += 1  # an inference tensor's view is one too, no view: the write goes into g
    return [inside, outside[0].tolist(), outside[1:], dual._is_view(), (dual - g).abs().max().item()]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_against_torch(name):
    fn = SCENARIOS[name]
    assert fn(retrograd) == fn(torch)


def test_resize_that_numpy_cannot_do_is_refused():
    """Growing a view, or resizing a tensor whose elements leave gaps in memory: torch moves the shared
    storage, which NumPy arrays do not have; retrograd says so instead of breaking the sharing."""
    x = retrograd.ones(2, 3)
    for grow in (lambda: x[0].resize_(5, 5), lambda: x[:, ::2].resize_(1)):
        with pytest.raises(RuntimeError, match="NumPy arrays own no storage"):
            grow()


def generator_modes(L):
    seen = []

    @L.no_grad()
    def gen():
        for i in range(3):
            seen.append(("in", L.is_grad_enabled()))
            try:
                got = yield i
            except ValueError:
                seen.append(("thrown", L.is_grad_enabled()))
                got = "recovered"
            except GeneratorExit:
                seen.append(("closed", L.is_grad_enabled()))
                raise
            seen.append(("got", got, L.is_grad_enabled()))
        return "done"

    with L.enable_grad():
        g = gen()
        seen.append(("out", next(g), L.is_grad_enabled()))
        seen.append(("out", g.send("a"), L.is_grad_enabled()))
        seen.append(("out", g.throw(ValueError), L.is_grad_enabled()))
        g.close()
    g = gen()
    seen.append([x for x in g])
    return seen


def test_grad_modes_on_generators():
    assert generator_modes(retrograd) == generator_modes(torch)


def test_grad_mode_reprs_and_class_decoration():
    for L in (retrograd, torch):
        with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
            @L.no_grad()
            class Made:
                def __init__(self) -> None:
                    self.grad = L.is_grad_enabled()

                def method(self):
                    return L.is_grad_enabled()

        made = Made()
        assert (made.grad, made.method()) == (False, True)
        mode = L.set_grad_enabled(False)
        try:
            observed = (repr(mode), L.is_grad_enabled())
        finally:
            L.set_grad_enabled(True)
        assert observed == ("torch.autograd.grad_mode.set_grad_enabled(mode=False)", False)


def test_warn_always_makes_once_per_process_warnings_repeat():
    def warned(L):
        x = L.ones(1, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            float(x)
            float(x)
        return [str(w.message) for w in caught]

    messages = []
    for L in (retrograd, torch):
        was = L.is_warn_always_enabled()
        try:
            L.set_warn_always(True)
            assert L.is_warn_always_enabled()
            always = warned(L)
            L.set_warn_always(False)
            once = warned(L)  # given once per process, at most: an earlier test may have had it
        finally:
            L.set_warn_always(was)
        assert len(always) == 2 and len(once) <= 1
        messages.append(always)
    assert [m.startswith(messages[0][0]) for m in messages[1]] == [True, True]  # torch adds where it was raised
