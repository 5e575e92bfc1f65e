"""Custom autograd.Function against torch: vjp/backward/jvp resolution, outputs that are inputs,
non-tensors or non-differentiable, mark_dirty, once_differentiable, the legacy API, and the checks
torch makes on what a jvp returns (custom_function.cpp's _process_forward_mode_AD)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e))


def values(x):
    return None if x is None else np.round(x.detach().numpy(), 12).tolist()


def leaf(lib, grad=True):
    return lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=grad)


@pytest.mark.parametrize("defines", ["vjp", "backward", "both", "neither"])
def test_vjp_or_backward_not_both(defines):
    def scenario(lib):
        def formula(ctx, g):
            return g * 2

        attrs = {"forward": staticmethod(lambda ctx, x: x * 2)}
        attrs.update({name: staticmethod(formula) for name in {"both": ("vjp", "backward")}.get(defines, (defines,))
                      if name != "neither"})
        double = type("Double", (lib.autograd.Function,), attrs)
        x = leaf(lib)
        double.apply(x).sum().backward()
        return values(x.grad)

    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


def test_outputs_that_are_inputs_non_tensors_or_non_differentiable():
    """An input returned as-is is a view of it; non-tensor outputs get None gradients; marked or integer
    outputs get zeros, or None with ctx._materialize_non_diff_grads = False."""
    def scenario(lib, materialize):
        seen = []

        class Mixed(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                marked = x.clone()
                ctx.mark_non_differentiable(marked)
                ctx._materialize_non_diff_grads = materialize
                return x, 3, marked, x.long(), y, x * 2

            @staticmethod
            def backward(ctx, *grads):
                seen.extend(None if g is None else values(g) for g in grads)
                return grads[0] + grads[5], None

        x, y = leaf(lib), leaf(lib, grad=False)
        same, _, marked, integer, same_y, doubled = Mixed.apply(x, y)
        flags = [(o._base is i, o is i, o.requires_grad, o.grad_fn is not None)
                 for o, i in ((same, x), (marked, None), (integer, None), (same_y, y), (doubled, None))]
        (same.sum() + doubled.sum()).backward()
        return flags, seen, values(x.grad)

    for materialize in (True, False):
        assert scenario(retrograd, materialize) == scenario(torch, materialize)


@pytest.mark.parametrize("saved", [3, "s", [1.0], np.float64(1.0), None])
def test_save_for_backward_takes_tensors_and_none_only(saved):
    """A non-tensor saved is refused with torch's TypeError once forward has returned (forward itself runs on),
    only where a graph is recorded; None is kept and read back."""
    def scenario(lib):
        ran = []

        class Keep(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, saved)
                ran.append("forward")
                return x * 2

            @staticmethod
            def backward(ctx, g):
                ran.append(type(ctx.saved_tensors[1]).__name__)
                return g

        untracked = values(Keep.apply(leaf(lib, grad=False)))
        return untracked, outcome(lambda: Keep.apply(leaf(lib)).sum().backward()), ran

    assert scenario(retrograd) == scenario(torch)


def test_mark_dirty():
    def scenario(lib, case):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                a.add_(1)
                ctx.mark_dirty(a)
                if case == "not_returned":
                    return a.clone()
                if case == "two_outputs":
                    return a, a * 2
                if case == "not_an_input":
                    c = a * 3
                    ctx.mark_dirty(c)
                    return c
                return a

            @staticmethod
            def backward(ctx, *grads):
                return grads[0]

        base = leaf(lib)
        a = {"leaf": base, "leaf_no_grad": leaf(lib, grad=False)}.get(case, base.clone())
        if case == "two_outputs":
            a = a.view_as(a)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = AddOne.apply(a)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        return (out is a, type(out.grad_fn).__name__, a._version, values(base.grad),
                [str(w.message).split(" (Triggered internally")[0] for w in caught])

    for case in ("clone", "leaf", "leaf_no_grad", "not_returned", "two_outputs", "not_an_input"):
        assert outcome(lambda: scenario(retrograd, case)) == outcome(lambda: scenario(torch, case)), case


def test_once_differentiable_refuses_a_second_derivative():
    def scenario(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale):
                ctx.save_for_backward(x)
                return x ** 3 * scale

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * g, None, None

        x = leaf(lib)
        y = Cube.apply(x, 2.0)
        (g,) = lib.autograd.grad(y, x, lib.ones_like(y, requires_grad=True), create_graph=True)
        node = g.grad_fn
        return (values(g), node.name(), [(type(n).__name__, nr) for n, nr in node.next_functions],
                outcome(lambda: g.sum().backward()))

    assert scenario(retrograd) == scenario(torch)


def test_mark_shared_storage_is_a_deprecated_no_op():
    """Old Functions still call ctx.mark_shared_storage: torch warns FutureWarning at that line and goes on."""
    seen = []
    for lib in (torch, retrograd):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_shared_storage((x, x))
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        x = leaf(lib)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Twice.apply(x).sum().backward()
        seen.append([(w.category, str(w.message), w.filename, w.lineno) for w in caught] + [values(x.grad)])
    assert seen[1] == seen[0]
    assert seen[0][0][0] is FutureWarning


def test_legacy_api_and_defaults():
    def scenario(lib):
        class Legacy(lib.autograd.Function):
            def forward(self, x):
                return x

        class Inplace(lib.autograd.function.InplaceFunction):
            @staticmethod
            def forward(ctx, a, b):
                ctx.mark_dirty(a)
                return a.add_(b)

            @staticmethod
            def backward(ctx, g):
                return g, g

        class Pow(lib.autograd.Function):
            @staticmethod
            def forward(x, y=3):
                return x ** y

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.inputs_seen = len(inputs)

            @staticmethod
            def backward(ctx, g):
                return g, None

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            legacy = outcome(lambda: Legacy()(lib.ones(2)))
        x = lib.zeros(2)
        y = leaf(lib)[:2]
        q = Inplace.apply(x, y)
        p = Pow.apply(leaf(lib))
        return (legacy, [type(w.message).__name__ for w in caught], q is x, q.requires_grad,
                Inplace(inplace=True).inplace, p.grad_fn.inputs_seen, Pow.generate_vmap_rule,
                outcome(lambda: Pow.vmap(None, (0,), x)))

    assert scenario(retrograd) == scenario(torch)


def jvp_scenario(lib, jvp, forward=lambda ctx, x: x * 2, prepare=lambda x: x, dirty=False):
    """Apply a Function with this forward and jvp to a dual tensor; the tangent out, or the error."""
    fw = lib.autograd.forward_ad

    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = forward(ctx, x)
            if dirty:
                ctx.mark_dirty(x)
            return out

        @staticmethod
        def vjp(ctx, g):
            return g

    Fn.jvp = staticmethod(jvp)
    with fw.dual_level():
        x_t = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)
        x = prepare(fw.make_dual(lib.zeros(4, dtype=lib.float64), x_t))
        out = Fn.apply(x)
        tangent = fw.unpack_dual(out[0] if isinstance(out, tuple) else out).tangent
        return values(tangent), tangent._base is not None, x_t._version


JVP_CASES = {
    "ok": {"jvp": lambda ctx, t: t * 2},
    "too_many": {"jvp": lambda ctx, t: (t * 2, t)},
    "not_a_tensor": {"jvp": lambda ctx, t: 3},
    "non_differentiable": {"forward": lambda ctx, x: (x * 2, x.long()), "jvp": lambda ctx, t: (t, t)},
    "marked": {"forward": lambda ctx, x: (lambda o: (ctx.mark_non_differentiable(o), o)[1])(x * 2),
               "jvp": lambda ctx, t: t},
    "as_is_view": {"forward": lambda ctx, x: x, "jvp": lambda ctx, t: t.view_as(t)},
    "as_is_not_view": {"forward": lambda ctx, x: x, "jvp": lambda ctx, t: t},
    "narrow_ok": {"forward": lambda ctx, x: x.narrow(0, 0, 2), "jvp": lambda ctx, t: t.narrow(0, 0, 2)},
    "narrow_other": {"forward": lambda ctx, x: x.narrow(0, 0, 2), "jvp": lambda ctx, t: t.narrow(0, 0, 2).clone()
                     .view_as(t.narrow(0, 0, 2))},
    "narrow_other_base": {"forward": lambda ctx, x: x.narrow(0, 0, 2),
                          "jvp": lambda ctx, t: t.clone().narrow(0, 0, 2), "prepare": lambda x: x.view_as(x)},
    "dirty_ok": {"forward": lambda ctx, x: x.mul_(2), "jvp": lambda ctx, t: t.mul_(2), "dirty": True},
    "dirty_not_inplace": {"forward": lambda ctx, x: x.mul_(2), "jvp": lambda ctx, t: t * 2, "dirty": True},
    "dirty_other_tensor": {"forward": lambda ctx, x: x.mul_(2), "jvp": lambda ctx, t: (t.mul_(2), t.clone().mul_(1))[1],
                           "dirty": True},
}


@pytest.mark.parametrize("case", JVP_CASES)
def test_jvp_results_are_checked(case):
    def scenario(lib):
        kwargs = dict(JVP_CASES[case])
        if kwargs.get("dirty"):
            kwargs["prepare"] = lambda x: x.clone()
        return jvp_scenario(lib, **kwargs)

    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


def test_jvp_sees_what_forward_saved_for_it():
    """In jvp, ctx.saved_tensors are the tensors given to save_for_forward (none when it was not called);
    inputs without a tangent get zeros, integer tensors and non-tensors None."""
    def scenario(lib, save_for_forward):
        fw = lib.autograd.forward_ad
        seen = []

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, n, k):
                ctx.save_for_backward(x, y)
                if save_for_forward:
                    ctx.save_for_forward(x, y)
                return x * y * k

            @staticmethod
            def jvp(ctx, x_t, y_t, n_t, k_t):
                seen.append((len(ctx.saved_tensors), values(y_t), n_t, k_t))
                return x_t * 2

            @staticmethod
            def vjp(ctx, g):
                x, y = ctx.saved_tensors
                return g * y, g * x, None, None

        x = leaf(lib)
        with fw.dual_level():
            out = Scale.apply(fw.make_dual(x, lib.ones(3, dtype=lib.float64)), leaf(lib, grad=False),
                              lib.arange(3), 2)
            out.sum().backward()
        return seen, values(x.grad)

    for save in (True, False):
        assert scenario(retrograd, save) == scenario(torch, save)


def test_a_function_without_setup_context_is_refused_by_every_func_transform():
    """torch refuses such a Function whenever a torch.func transform runs, even on tensors the transform does not
    see (an unbatched argument under vmap), and so refuses a module's full backward hook (one) under grad."""
    def scenario(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        module = lib.nn.Linear(3, 3).double()
        module.register_full_backward_hook(lambda *a: None)
        x = leaf(lib, grad=False)
        F = lib.func
        return [outcome(lambda: values(F.vmap(lambda b: Double.apply(x) + b)(x.expand(2, 3)))),
                outcome(lambda: values(F.grad(lambda a: Double.apply(a).sum())(x))),
                outcome(lambda: values(F.jvp(Double.apply, (x,), (x,))[1])),
                outcome(lambda: values(F.grad(lambda a: module(a).sum())(x))),
                outcome(lambda: values(Double.apply(x)))]

    assert scenario(retrograd) == scenario(torch)


def test_a_functions_node_prints_as_torchs():
    """torch prints a Function's node as the Python class it makes in torch.autograd.function; an op's node bare."""
    reprs = []
    for lib in (torch, retrograd):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x

            @staticmethod
            def backward(ctx, grad):
                return grad

        x = lib.ones(2, requires_grad=True)
        reprs.append([repr(node).split(" object at ")[0] for node in (Square.apply(x).grad_fn, (x * 2).grad_fn)])
    assert reprs[0] == reprs[1] == ["<torch.autograd.function.SquareBackward", "<MulBackward0"]
