"""autograd.forward_ad against torch: dual levels, make_dual/unpack_dual and their errors, tangents
through ops, views, in-place ops and no_grad, custom Function jvp, and forward mode composed with
reverse mode both ways. (Every op's JVP is checked by test_ops.py::test_forward_ad.)"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))


def t(lib, array, grad=False):
    return lib.tensor(array, dtype=lib.float64, requires_grad=grad)


def values(x):
    return None if x is None else np.round(x.detach().numpy(), 12).tolist()


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return (type(e).__name__, str(e))


def test_documentation_example():
    """torch.autograd.forward_ad's docstring: fn(x, y) = x ** 2 + y ** 2 pushed along a tangent."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        primal, tangent, y = t(lib, A), t(lib, B), t(lib, A * 2)
        with fw.dual_level():
            dual_input = fw.make_dual(primal, tangent)
            out = dual_input ** 2 + y ** 2
            jvp = fw.unpack_dual(out).tangent
        return values(jvp), values(fw.unpack_dual(out).tangent)

    ours = scenario(retrograd)
    assert ours == scenario(torch)
    assert np.allclose(ours[0], 2 * A * B) and ours[1] is None  # the tangent is gone after the level


def test_make_dual_and_unpack_dual_details():
    def scenario(lib):
        fw = lib.autograd.forward_ad
        x = t(lib, A, grad=True)
        with fw.dual_level() as level:
            d = fw.make_dual(x, t(lib, B))
            primal, tangent = fw.unpack_dual(d)
            y = d.exp()
            plain = fw.unpack_dual(t(lib, A))
            return (level, d.grad_fn.name(), d._base is x, d.requires_grad, primal.grad_fn.name(),
                    values(tangent), values(fw.unpack_dual(y).tangent), fw.unpack_dual(y).primal.grad_fn.name(),
                    plain.tangent, type(fw.unpack_dual(y)).__name__, fw.unpack_dual(y)._fields)

    assert scenario(retrograd) == scenario(torch)


@pytest.mark.parametrize("case", ["no_level", "size", "int_primal", "int_tangent", "bad_level", "nested", "exit"])
def test_errors(case):
    def scenario(lib):
        fw = lib.autograd.forward_ad
        if case == "no_level":
            return fw.make_dual(t(lib, A), t(lib, B))
        if case == "exit":
            return fw.exit_dual_level()
        with fw.dual_level():
            if case == "size":
                return fw.make_dual(t(lib, A), t(lib, B[:2]))
            if case == "int_primal":
                return fw.make_dual(lib.arange(3), lib.arange(3))
            if case == "int_tangent":
                return fw.make_dual(lib.ones(3), lib.arange(3))
            if case == "bad_level":
                return fw.make_dual(t(lib, A), t(lib, B), level=3)
            with fw.dual_level():
                return None

    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


def test_tangents_through_views_detach_inplace_and_no_grad():
    def scenario(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(t(lib, A), t(lib, B))
            view = d[1:, ::2].t()
            detached = d.detach()
            with lib.no_grad():
                under_no_grad = (d * 3).sum(0)
            y = d.clone()
            y.mul_(2)
            y.sin_()
            return [values(fw.unpack_dual(v).tangent) for v in (view, detached, under_no_grad, y)]

    assert scenario(retrograd) == scenario(torch)


def test_argmax_and_comparisons_have_no_tangent():
    def scenario(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(t(lib, A), t(lib, B))
            return [fw.unpack_dual(v).tangent for v in (d.argmax(), d > 0, d.max(1).indices)]

    assert scenario(retrograd) == scenario(torch) == [None, None, None]


def custom_functions(lib):
    class Exp(lib.autograd.Function):
        """torch's Function.jvp example: forward, setup_context with save_for_forward, jvp."""

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            (result,) = ctx.saved_tensors
            return g * result

        @staticmethod
        def jvp(ctx, x_t):
            (result,) = ctx.saved_tensors
            return x_t * result

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Exp, NoJvp


def test_custom_function_jvp():
    def scenario(lib):
        fw = lib.autograd.forward_ad
        exp, no_jvp = custom_functions(lib)
        with fw.dual_level():
            d = fw.make_dual(t(lib, A), t(lib, B))
            tangent = values(fw.unpack_dual(exp.apply(d)).tangent)
            missing = outcome(lambda: no_jvp.apply(d))
            untouched = fw.unpack_dual(no_jvp.apply(t(lib, A))).tangent
        return tangent, missing, untouched

    ours = scenario(retrograd)
    assert ours == scenario(torch)
    assert np.allclose(ours[0], np.exp(A) * B)


def test_forward_over_reverse_is_a_hessian_vector_product():
    """The tangent of a gradient: H v, as torch.autograd.functional.hvp computes it."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        x = t(lib, A, grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, t(lib, B))
            (g,) = lib.autograd.grad((d.sin() * d.exp()).sum() + (d ** 3).sum(), d, create_graph=True)
            hv = fw.unpack_dual(g).tangent
        return values(hv)

    ours = scenario(retrograd)
    assert ours == scenario(torch)
    _, expected = torch.autograd.functional.hvp(lambda x: (x.sin() * x.exp()).sum() + (x ** 3).sum(),
                                                t(torch, A), t(torch, B))
    np.testing.assert_allclose(ours, expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("method", ["exp_", "tanh_", "sigmoid_", "sqrt_", "reciprocal_"])
def test_forward_over_reverse_through_an_inplace_op_that_saves_its_result(method):
    """An in-place op whose backward reads its result (exp_: grad * result) saves the written tensor with the
    tangent it now has: forward-over-reverse gives torch's H v, as through the out-of-place op (the tangent
    was dropped, so the second-order term was missing)."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        x = t(lib, np.abs(A) + 0.5, grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, t(lib, B))
            y = getattr(d.clone(), method)()
            (g,) = lib.autograd.grad((y * y).sum(), d, create_graph=True)
            return values(fw.unpack_dual(g).tangent)

    np.testing.assert_allclose(scenario(retrograd), scenario(torch), rtol=1e-10)


def test_reverse_over_forward_differentiates_a_tangent():
    def scenario(lib):
        fw = lib.autograd.forward_ad
        x = t(lib, A, grad=True)
        v = t(lib, B, grad=True)
        with fw.dual_level():
            out = (fw.make_dual(x, v).tanh() ** 2).sum()
            tangent = fw.unpack_dual(out).tangent
        gx, gv = lib.autograd.grad(tangent, (x, v))
        return values(tangent), values(gx), values(gv)

    assert scenario(retrograd) == scenario(torch)


def test_jvps_of_a_small_network_match_torch():
    w1, w2 = RNG.standard_normal((4, 8)), RNG.standard_normal((8, 2))

    def scenario(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(t(lib, A), t(lib, B))
            h = lib.nn.functional.softmax((x @ t(lib, w1)).relu() @ t(lib, w2), dim=1)
            loss = lib.nn.functional.cross_entropy(h, lib.tensor([0, 1, 1]))
            return values(fw.unpack_dual(h).tangent), values(fw.unpack_dual(loss).tangent)

    assert scenario(retrograd) == scenario(torch)


def test_forward_ad_costs_nothing_when_off():
    """Without an open level the op path does not consult tangents at all."""
    assert not retrograd.autograd.forward_ad.transforms.active
    x = t(retrograd, A)
    assert (x * 2)._extra is None


COMPLEX_FUNCTIONS = {
    **{name: (lambda name: lambda L, z: getattr(L, name)(z))(name)
       for name in ("exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal", "sinh", "cosh",
                    "asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "square",
                    "abs", "angle", "sgn")},
    "pow": lambda L, z: z ** 3, "pow_tensor": lambda L, z: z ** (z * 0 + 1.5), "pow_base": lambda L, z: 2 ** z,
    "pow_self": lambda L, z: z ** z, "prod": lambda L, z: z.prod(), "cumprod": lambda L, z: z.cumprod(0),
    "logsumexp": lambda L, z: L.logsumexp(z, 0), "det": lambda L, z: L.linalg.det(L.stack([z, z * z, z.exp()])),
    "inv": lambda L, z: L.linalg.inv(L.stack([z, z * z, z.exp()])), "vdot": lambda L, z: L.vdot(z, z * 2),
    "lu": lambda L, z: L.linalg.lu(L.stack([z, z * z, z.exp()])).U,
    "lu_solve": lambda L, z: L.linalg.lu_solve(*L.linalg.lu_factor(L.stack([z, z * z, z.exp()])),
                                               L.stack([z, z.exp()], -1), adjoint=True),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FUNCTIONS))
def test_complex_tangents_match_torch(name):
    """Forward mode on complex inputs, incl. holomorphic ops whose JVP is the conjugated VJP (torch's
    auto_element_wise) and points left of the branch cuts (acosh's derivative there)."""
    z = np.array([0.3 + 0.4j, -0.5 + 0.2j, 0.7 - 0.6j])
    dz = np.array([1 + 0.5j, -0.3 + 1j, 0.2 - 0.7j])
    tangents = []
    for lib in (torch, retrograd):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            out = COMPLEX_FUNCTIONS[name](lib, fw.make_dual(lib.tensor(z), lib.tensor(dz)))
            tangents.append(fw.unpack_dual(out).tangent.resolve_conj().numpy())
    np.testing.assert_allclose(tangents[1], tangents[0], rtol=1e-10, atol=1e-12)


def test_current_level_printing_and_tangents_with_tangents():
    """forward_ad._current_level (-1 outside a level), `tangent=` in a dual tensor's repr only, and
    torch's refusal of a tangent that has a tangent of its own at the same level."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        levels = [fw._current_level]
        with fw.dual_level():
            levels.append(fw._current_level)
            a = t(lib, A[0])
            dual = fw.make_dual(a, t(lib, B[0]))
            primal, tangent = fw.unpack_dual(dual)
            shown = [("tangent=" in str(x), "tangent=" in repr(x)) for x in (a, dual, primal, tangent)]
            nested = outcome(lambda: fw.make_dual(t(lib, A[1]), dual))
            views = (dual._is_view(), a._is_view())
        levels.append(fw._current_level)
        return levels, shown, str(dual), nested, views

    assert scenario(retrograd) == scenario(torch)


def test_legacy_vmap_refuses_random_operations():
    """torch._vmap_internals._vmap (the vmap gradcheck's batched forward check uses) maps like vmap
    and refuses random draws with its own text; vmap(randomness='error') refuses factories too."""
    def scenario(lib):
        legacy = importlib.import_module(f"{lib.__name__}._vmap_internals")._vmap
        xs = t(lib, A)
        return (values(legacy(lambda x: x * 2)(xs)),
                outcome(lambda: legacy(lambda x: lib.randn_like(x))(xs)),
                outcome(lambda: legacy(lambda x: x + lib.rand(4))(xs)),
                outcome(lambda: lib.vmap(lambda x: x + lib.randn(4))(xs)))

    assert scenario(retrograd) == scenario(torch)


def test_empty_strided_window_past_the_end():
    """as_strided to zero elements may start past the storage's end (torch checks nothing to read);
    such a tensor takes an empty tangent as it is."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        primal = lib.tensor([1.0]).as_strided((0,), (1,), 1)
        tangent = lib.tensor([1.0]).as_strided((0,), (1,), 2)
        with fw.dual_level():
            kept = fw.unpack_dual(fw.make_dual(primal, tangent)).tangent is tangent
        return tuple(primal.shape), tuple(tangent.shape), values(tangent), kept

    assert scenario(retrograd) == scenario(torch)


def _tangents_while_switched_off(lib):
    """What forward AD shows while torch._C._set_fwd_grad_enabled(False) holds, and after it is switched back."""
    fw = lib.autograd.forward_ad
    seen = []
    with fw.dual_level():
        x = lib.tensor([1.0, 2.0], dtype=lib.float64)
        dual = fw.make_dual(x, lib.tensor([1.0, 0.5], dtype=lib.float64))
        with fw._set_fwd_grad_enabled(False):
            seen += [fw._is_fwd_grad_enabled(), fw.unpack_dual(dual.sin()).tangent, fw.unpack_dual(dual).tangent]
        seen += [fw._is_fwd_grad_enabled(), fw.unpack_dual(dual.sin()).tangent.tolist()]
        lib._C._set_fwd_grad_enabled(False)
        try:
            seen.append(fw.unpack_dual(dual * 2).tangent)
        finally:
            lib._C._set_fwd_grad_enabled(True)
    return seen


def test_forward_ad_switched_off_computes_and_shows_no_tangent():
    assert _tangents_while_switched_off(retrograd) == _tangents_while_switched_off(torch)


def test_clamped_norm_of_cosine_similarity_keeps_its_tangent():
    """torch clamps cosine_similarity's norms at eps in place under no_grad, which forward AD still sees: a row
    whose norm is below eps gets the clamp's tangent (zero) for its norm, not the unclamped norm's."""
    def scenario(lib):
        fw = lib.autograd.forward_ad
        a = A.copy()
        a[1] = 1e-10
        with fw.dual_level():
            dual = fw.make_dual(t(lib, a), t(lib, B))
            return values(fw.unpack_dual(lib.nn.functional.cosine_similarity(dual, t(lib, A[::-1].copy()))).tangent)

    assert scenario(retrograd) == pytest.approx(scenario(torch), rel=1e-12)
