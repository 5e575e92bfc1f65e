"""gradcheck and gradgradcheck against torch's: the same verdicts, warnings and error texts, on
correct functions and on deliberately wrong backward / jvp / double-backward implementations."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
W = RNG.standard_normal((5, 4))


def double(lib, array, grad=True):
    return lib.tensor(array, dtype=lib.float64, requires_grad=grad)


def outcome(fn):
    """('ok', value) or (exception type, first line of its message); warnings are recorded too."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
            result = ("ok", value)
        except Exception as e:  # noqa: BLE001 - the type and text are what we compare
            result = (type(e).__name__, str(e).split("\n")[0])
    return result, [str(w.message) for w in caught if "gradcheck" in str(w.message) or "Input #" in str(w.message)
                    or "Backwards compatibility" in str(w.message)]


def same(scenario):
    ours, theirs = outcome(lambda: scenario(retrograd)), outcome(lambda: scenario(torch))
    assert ours == theirs
    return ours


# ---- custom Functions with deliberate mistakes ------------------------------------------------

def functions(lib):
    class Sin(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class WrongSin(Sin):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * 1.01  # 1% off

    class OnceSin(Sin):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.detach().cos()  # right first derivative, no second

    class NotScaled(Sin):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() if bool((g != 0).any()) else lib.ones_like(g)

    class Noisy(Sin):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x.cos() + lib.rand(g.shape, dtype=g.dtype) * 1e-9)

    class WrongJvp(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)
            ctx.save_for_forward(output)

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

        @staticmethod
        def jvp(ctx, t):
            (r,) = ctx.saved_tensors
            return t * r * 2  # twice too big

    return {c.__name__: c for c in (Sin, WrongSin, OnceSin, NotScaled, Noisy, WrongJvp)}


# ---- verdicts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fast_mode", [False, True])
def test_correct_functions_pass(fast_mode):
    for fn in (lambda L, x: x.sin(), lambda L, x: (x @ x.t()).tanh(), lambda L, x: L.nn.functional.softmax(x, 1)):
        assert same(lambda L, fn=fn: L.autograd.gradcheck(lambda x: fn(L, x), (double(L, X),),
                                                          fast_mode=fast_mode))[0] == ("ok", True)


def test_documentation_example():
    """torch's docstring example: a linear layer of two double inputs, eps=1e-6, atol=1e-4."""
    def scenario(L):
        inputs = (double(L, RNG.standard_normal((20, 20))), double(L, RNG.standard_normal((30, 20))))
        return L.autograd.gradcheck(L.nn.functional.linear, inputs, eps=1e-6, atol=1e-4)

    assert same(scenario)[0] == ("ok", True)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_wrong_backward_is_caught(fast_mode):
    result, _ = same(lambda L: L.autograd.gradcheck(functions(L)["WrongSin"].apply, (double(L, X),),
                                                    fast_mode=fast_mode))
    assert result == ("GradcheckError", "Jacobian mismatch for output 0 with respect to input 0,")


def test_failure_names_input_output_and_shows_the_difference():
    inputs = (double(retrograd, X), double(retrograd, W))

    def f(x, w):
        return x.sin(), functions(retrograd)["WrongSin"].apply(w)

    with pytest.raises(retrograd.autograd.GradcheckError) as info:
        retrograd.autograd.gradcheck(f, inputs)
    text = str(info.value)
    assert text.startswith("Jacobian mismatch for output 1 with respect to input 1,\nnumerical:tensor(")
    numerical = np.cos(W).reshape(-1)
    assert "analytical:tensor(" in text and f"{numerical[0] * 1.01:.4f}" in text and f"{numerical[0]:.4f}" in text


def test_raise_exception_false_returns_false():
    assert same(lambda L: L.autograd.gradcheck(functions(L)["WrongSin"].apply, (double(L, X),),
                                               raise_exception=False))[0] == ("ok", False)


def test_wrong_double_backward_is_caught_by_gradgradcheck_only():
    assert same(lambda L: L.autograd.gradcheck(functions(L)["OnceSin"].apply, (double(L, X),)))[0] == ("ok", True)
    result, _ = same(lambda L: L.autograd.gradgradcheck(functions(L)["OnceSin"].apply, (double(L, X),)))
    assert result[0] == "GradcheckError" and result[1].startswith("Jacobian mismatch for output 0 with respect to")


def test_gradgradcheck_passes_and_takes_grad_outputs():
    assert same(lambda L: L.autograd.gradgradcheck(lambda x: (x * x).tanh(), (double(L, X),)))[0] == ("ok", True)
    assert same(lambda L: L.autograd.gradgradcheck(lambda x: x.exp(), (double(L, X),), (double(L, W[:3]),)))[0] \
        == ("ok", True)
    assert same(lambda L: L.autograd.gradgradcheck(lambda x: x.exp(), (double(L, X),),
                                                   gen_non_contig_grad_outputs=True))[0] == ("ok", True)


def test_wrong_jvp_is_caught_with_check_forward_ad():
    fn = "WrongJvp"
    assert same(lambda L: L.autograd.gradcheck(functions(L)[fn].apply, (double(L, X),)))[0] == ("ok", True)
    result, _ = same(lambda L: L.autograd.gradcheck(functions(L)[fn].apply, (double(L, X),), check_forward_ad=True))
    assert result == ("GradcheckError", "Jacobian computed with forward mode mismatch for output 0 with respect to "
                                        "input 0,")
    assert same(lambda L: L.autograd.gradcheck(lambda x: x.sin() * x, (double(L, X),), check_forward_ad=True,
                                               check_batched_forward_grad=True))[0] == ("ok", True)


def test_backward_not_multiplied_by_grad_output():
    result, _ = same(lambda L: L.autograd.gradcheck(functions(L)["NotScaled"].apply, (double(L, X),)))
    assert result == ("GradcheckError", "backward not multiplied by grad_output")


def test_nondeterministic_backward_and_nondet_tol():
    result, _ = same(lambda L: L.autograd.gradcheck(functions(L)["Noisy"].apply, (double(L, X),)))
    assert result[0] == "GradcheckError" and result[1].startswith("Backward is not reentrant")
    assert same(lambda L: L.autograd.gradcheck(functions(L)["Noisy"].apply, (double(L, X),),
                                               nondet_tol=1e-6))[0] == ("ok", True)


def test_batched_grad_check():
    assert same(lambda L: L.autograd.gradcheck(lambda x, w: (x @ w.t()).sigmoid(), (double(L, X), double(L, W)),
                                               check_batched_grad=True))[0] == ("ok", True)
    assert same(lambda L: L.autograd.gradgradcheck(lambda x: (x * x).sum(1), (double(L, X),),
                                                   check_batched_grad=True))[0] == ("ok", True)


def test_non_double_warning_and_no_grad_error():
    result, warned = same(lambda L: L.autograd.gradcheck(lambda x: x * 2, (L.tensor(X, dtype=L.float32,
                                                                                  requires_grad=True),)))
    assert warned and warned[0].startswith("Input #0 requires gradient and is not a double precision")
    result, _ = same(lambda L: L.autograd.gradcheck(lambda x: x * 2, (double(L, X, grad=False),)))
    assert result == ("ValueError", "gradcheck expects at least one input tensor to require gradient, but none of "
                                    "them have requires_grad=True.")


def test_argument_assertions():
    for kwargs in ({"check_forward_ad": False, "check_backward_ad": False},
                   {"check_batched_grad": True, "check_backward_ad": False, "check_forward_ad": True},
                   {"check_batched_forward_grad": True}):
        result, _ = same(lambda L, kw=kwargs: L.autograd.gradcheck(lambda x: x, (double(L, X),), **kw))
        assert result[0] == "AssertionError"


def test_complex_inputs_and_outputs():
    z = X + 1j * W[:3]

    def scenario(L, fn, **kwargs):
        inp = L.tensor(z, dtype=L.complex128, requires_grad=True)
        return L.autograd.gradcheck(lambda t: fn(L, t), (inp,), **kwargs)

    for fn in (lambda L, t: (t * t.conj()).real, lambda L, t: t * t, lambda L, t: t.exp().abs()):
        assert same(lambda L, fn=fn: scenario(L, fn))[0] == ("ok", True)
        assert same(lambda L, fn=fn: scenario(L, fn, check_forward_ad=True))[0] == ("ok", True)
        assert same(lambda L, fn=fn: scenario(L, fn, fast_mode=True))[0] == ("ok", True)


def test_function_without_differentiable_outputs():
    assert same(lambda L: L.autograd.gradcheck(lambda x: (x > 0).double(), (double(L, X),)))[0] == ("ok", True)


def test_seed_004_gradcheck_usage():
    """Seed 004 lists gradcheck as the tool that checks numerical against analytic gradients."""
    def scenario(L):
        x = L.rand(3, 4, dtype=L.float64, requires_grad=True)
        return L.autograd.gradcheck(lambda t: (t ** 2).sum(), (x,))

    assert same(scenario)[0] == ("ok", True)


def test_deprecated_jacobian_helpers():
    """get_numerical_jacobian / get_analytical_jacobian: torch's FutureWarning, Jacobians laid out
    (numel_in, numel_out), the reentrancy flag and the refusal of grad_out != 1."""
    def scenario(lib):
        gc = importlib.import_module(f"{lib.__name__}.autograd.gradcheck")
        a = lib.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[0.5, 0.6], [0.7, 0.8]], dtype=lib.float64, requires_grad=True)

        def fn(inputs):
            return inputs[0] * inputs[1] + 2 * inputs[0], inputs[1]

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            numerical = gc.get_numerical_jacobian(fn, (a, b), eps=1e-6)
            on_target = gc.get_numerical_jacobian(fn, (a, b), target=(b,), eps=1e-6)
            jacobians, reentrant, sizes_ok, types_ok = gc.get_analytical_jacobian((a, b), fn((a, b))[0])
        refused = [outcome(lambda f=f: f(grad_out=2.0))[0] for f in (
            lambda **k: gc.get_numerical_jacobian(fn, (a, b), **k),
            lambda **k: gc.get_analytical_jacobian((a, b), fn((a, b))[0], **k))]
        rounded = [np.round(j.numpy(), 6).tolist() for j in (*numerical, *on_target, *jacobians)]
        return (rounded, reentrant, sizes_ok, types_ok, refused,
                sorted({(type(w.message).__name__, str(w.message)[:60]) for w in caught}))

    assert scenario(retrograd) == scenario(torch)


def test_undefined_gradients_reach_hooks_and_zero_tangents_match_absent_ones():
    """A backward that fails on an undefined output gradient fails gradcheck (the tensor hook sees
    None); a jvp whose output depends on whether a tangent was given as zeros fails check_forward_ad."""
    def scenario(lib):
        def fails_on_none(x):
            def hook(g):
                if g is None:
                    raise RuntimeError("x is undefined")

            y = x.clone()
            y.register_hook(hook)
            return y

        class Counts(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def vjp(ctx, g):
                return g, g

            @staticmethod
            def jvp(ctx, x_t, y_t):
                return x_t + y_t + 1

        x = lib.tensor([0.5], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([0.25], dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (outcome(lambda: lib.autograd.gradcheck(fails_on_none, (x,)))[0][0],
                    lib.autograd.gradcheck(fails_on_none, (x,), raise_exception=False),
                    outcome(lambda: lib.autograd.gradcheck(Counts.apply, (x, y), check_forward_ad=True,
                                                           check_backward_ad=False))[0][0])

    assert scenario(retrograd) == scenario(torch) == ("GradcheckError", False, "GradcheckError")


def _wrong_square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x
    return Square.apply


@pytest.mark.parametrize("fast_mode", [False, True])
def test_failure_message_and_random_stream_as_torch(fast_mode):
    """Fast mode's random directions are torch's (its own generator, Note [gradcheck's random vectors]), so the
    failure shows torch's numbers; gradgradcheck's grad_outputs come from the global generator as torch's, so
    a script's draws after it are torch's too."""
    outcomes = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        with pytest.raises(Exception) as caught:
            lib.autograd.gradcheck(_wrong_square(lib), (x,), fast_mode=fast_mode)
        lib.autograd.gradgradcheck(lambda t, lib=lib: t ** 3, (x,), fast_mode=fast_mode)
        outcomes.append((type(caught.value).__name__, str(caught.value), lib.rand(3).tolist()))
    assert outcomes[0] == outcomes[1]
