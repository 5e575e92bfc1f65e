"""torch.func against torch: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian and vmap on
their documentation examples, in every nesting order, on small networks (per-example gradients,
Jacobians and Hessians to 1e-10 in float64), with functional_call, custom Functions, and torch's
error texts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)


def t(lib, array):
    return lib.tensor(np.asarray(array, dtype=np.float64))


def structure(value):
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [structure(v) for v in value])
    if isinstance(value, dict):
        return {k: structure(v) for k, v in value.items()}
    if hasattr(value, "detach"):
        return (tuple(value.shape), str(value.dtype), np.round(value.detach().numpy(), 10).tolist())
    return value


def outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", structure(fn()))
        except Exception as e:  # noqa: BLE001 - compared with torch's
            return (type(e).__name__, str(e))


def same(scenario):
    ours, theirs = outcome(lambda: scenario(retrograd)), outcome(lambda: scenario(torch))
    assert ours == theirs
    return ours


X = RNG.standard_normal(5)
M = RNG.standard_normal((3, 5))
N = RNG.standard_normal((3, 5))


# ---- documentation examples ----------------------------------------------------------------------

DOCS = {
    "grad_sin": lambda L: L.func.grad(lambda x: L.sin(x))(t(L, 0.7)),
    "grad_grad_sin": lambda L: L.func.grad(L.func.grad(lambda x: L.sin(x)))(t(L, 0.7)),
    "grad_argnums": lambda L: L.func.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(t(L, X), t(L, X + 1)),
    "grad_has_aux": lambda L: L.func.grad(lambda x: (x.sin().sum(), {"cos": x.cos()}), has_aux=True)(t(L, X)),
    "grad_pytree": lambda L: L.func.grad(lambda d: (d["a"] * d["b"]).sum())({"a": t(L, X), "b": t(L, X + 1)}),
    "grad_and_value": lambda L: L.func.grad_and_value(lambda x: (x ** 2).sum())(t(L, X)),
    "vjp": lambda L: L.func.vjp(L.sin, t(L, X))[1](t(L, np.ones(5))),
    "vjp_tuple_outputs": lambda L: L.func.vjp(lambda x: (x.sin(), x.cos()), t(L, X))[1]((t(L, X), t(L, X))),
    "vjp_has_aux": lambda L: L.func.vjp(lambda x: (x.sin(), x.cos()), t(L, X), has_aux=True)[2],
    "jvp": lambda L: L.func.jvp(L.sin, (t(L, X),), (t(L, np.ones(5)),)),
    "jvp_two_inputs": lambda L: L.func.jvp(lambda x, y: x * y, (t(L, X), t(L, X + 1)), (t(L, X), t(L, X))),
    "jacrev": lambda L: L.func.jacrev(L.sin)(t(L, X)),
    "jacrev_argnums": lambda L: L.func.jacrev(lambda x, y: x.sin() * y, argnums=(0, 1))(t(L, X), t(L, X)),
    "jacrev_outputs": lambda L: L.func.jacrev(lambda x: (x.sin(), x.sum()))(t(L, X)),
    "jacrev_has_aux": lambda L: L.func.jacrev(lambda x: (x.sin(), x.cos()), has_aux=True)(t(L, X)),
    "jacrev_chunk": lambda L: L.func.jacrev(L.sin, chunk_size=2)(t(L, X)),
    "jacfwd": lambda L: L.func.jacfwd(L.sin)(t(L, X)),
    "jacfwd_argnums": lambda L: L.func.jacfwd(lambda x, y: x.sin() * y, argnums=1)(t(L, X), t(L, X)),
    "jacfwd_has_aux": lambda L: L.func.jacfwd(lambda x: (x.sin(), x.cos()), has_aux=True)(t(L, X)),
    "hessian": lambda L: L.func.hessian(lambda x: (x.sin() * x).sum())(t(L, X)),
    "vmap_dot": lambda L: L.func.vmap(L.dot)(t(L, M), t(L, N)),
    "vmap_in_dims": lambda L: L.func.vmap(L.mv, in_dims=(None, 0))(t(L, M.T @ M), t(L, N)),
    "vmap_in_dim_1": lambda L: L.func.vmap(L.sum, in_dims=1)(t(L, M)),
    "vmap_out_dims": lambda L: L.func.vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(t(L, M)),
    "vmap_nested": lambda L: L.func.vmap(L.func.vmap(L.dot))(t(L, M[None].repeat(2, 0)), t(L, N[None].repeat(2, 0))),
    "vmap_kwargs": lambda L: L.func.vmap(lambda x, scale=1.0: x * scale)(t(L, M), scale=3.0),
    "vmap_chunk": lambda L: L.func.vmap(lambda x: x.exp().sum(), chunk_size=2)(t(L, M)),
    "vmap_unbatched_output": lambda L: L.func.vmap(lambda x: t(L, X))(t(L, M)),
    "vmap_dict": lambda L: L.func.vmap(lambda d: d["a"] + d["b"])({"a": t(L, M), "b": t(L, N)}),
    "torch_vmap": lambda L: L.vmap(L.outer)(t(L, M), t(L, N)),
}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_documentation_examples(name):
    assert same(DOCS[name])[0] == "ok"


# ---- nesting -----------------------------------------------------------------------------------------

def scalar_fn(x):
    return (x.sin() * x.exp()).sum() + (x.tanh() ** 3).sum()


TRANSFORMS = ["jacrev", "jacfwd"]


@pytest.mark.parametrize("outer", TRANSFORMS)
@pytest.mark.parametrize("inner", TRANSFORMS)
def test_second_derivatives_in_every_order(outer, inner):
    same(lambda L: getattr(L.func, outer)(getattr(L.func, inner)(scalar_fn))(t(L, X)))


@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd", "hessian"])
def test_vmap_of_transforms(transform):
    same(lambda L: L.func.vmap(getattr(L.func, transform)(scalar_fn))(t(L, M)))


def test_transforms_of_vmap():
    same(lambda L: L.func.jacrev(L.func.vmap(lambda x: (x.sin() * x).sum()))(t(L, M)))
    same(lambda L: L.func.grad(lambda x: L.func.vmap(lambda r: (r.cos() * r).sum())(x).sum())(t(L, M)))
    same(lambda L: L.func.jacfwd(L.func.vmap(L.sin))(t(L, M)))


def test_third_order_and_grad_of_grad_of_grad():
    same(lambda L: L.func.grad(L.func.grad(L.func.grad(lambda x: x.sin() * x.exp())))(t(L, 0.3)))
    same(lambda L: L.func.jacfwd(L.func.jacrev(L.func.jacrev(scalar_fn)))(t(L, X[:3])))


# ---- networks: per-example gradients, Jacobians, Hessians -----------------------------------------

def mlp(L):
    model = L.nn.Sequential(L.nn.Linear(3, 6), L.nn.Tanh(), L.nn.Linear(6, 2)).double()
    rng = np.random.default_rng(5)
    with L.no_grad():
        for p in model.parameters():
            p.copy_(L.tensor(rng.standard_normal(tuple(p.shape))))
    return model


DATA = RNG.standard_normal((4, 3))
TARGET = np.array([0, 1, 1, 0])


def test_per_example_gradients_with_functional_call():
    """The torch.func tutorial's per-sample gradients: vmap(grad(loss)) over a batch, with the
    model's parameters passed through functional_call."""
    def scenario(L):
        model = mlp(L)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y):
            out = L.func.functional_call(model, p, (x.unsqueeze(0),))
            return L.nn.functional.cross_entropy(out, y.unsqueeze(0))

        return L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, t(L, DATA), L.tensor(TARGET))

    ours = outcome(lambda: scenario(retrograd))
    theirs = outcome(lambda: scenario(torch))
    assert ours[0] == "ok" and ours[1].keys() == theirs[1].keys()
    for k in ours[1]:
        np.testing.assert_allclose(ours[1][k][2], theirs[1][k][2], rtol=1e-10, atol=1e-12)


def test_network_jacobian_and_hessian_to_1e_10():
    def scenario(L):
        model = mlp(L)
        params = {k: v.detach() for k, v in model.named_parameters()}
        x = t(L, DATA)
        jac_x = L.func.jacrev(lambda inp: model(inp))(x)
        jac_fwd = L.func.jacfwd(lambda inp: model(inp))(x)
        hess = L.func.hessian(lambda p: L.func.functional_call(model, p, (x,)).pow(2).sum())(params)
        return jac_x, jac_fwd, hess

    ours, theirs = outcome(lambda: scenario(retrograd)), outcome(lambda: scenario(torch))
    assert ours[0] == theirs[0] == "ok"

    def close(a, b):
        if isinstance(a, tuple) and len(a) == 3 and isinstance(a[0], tuple) and isinstance(a[1], str):
            assert a[:2] == b[:2]
            np.testing.assert_allclose(a[2], b[2], rtol=1e-10, atol=1e-10)
        elif isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                close(a[k], b[k])
        else:
            for u, v in zip(a[1], b[1]):
                close(u, v)

    close(ours[1], theirs[1])


def test_functional_call_details():
    def scenario(L):
        model = L.nn.Linear(3, 2).double()
        with L.no_grad():
            model.bias.copy_(t(L, RNG_B[::-1].copy()))
        x = t(L, DATA)
        w, b = t(L, RNG_W), t(L, RNG_B)
        out = L.func.functional_call(model, {"weight": w, "bias": b}, (x,))
        partial = L.func.functional_call(model, {"weight": w}, x)
        strict = outcome(lambda: L.func.functional_call(model, {"weight": w}, (x,), strict=True))
        split = L.func.functional_call(model, ({"weight": w}, {"bias": b}), (x,))
        return out, partial, strict, split, model.weight.shape, model.weight is not w

    assert same(scenario)[0] == "ok"


def test_functional_call_strict_lists_keys_sorted_as_torch():
    """strict=True names the unexpected and the missing keys each sorted (tied names each count without
    tie_weights), in torch's message."""
    def scenario(L):
        class Tied(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.b, self.a = L.nn.Linear(1, 1), L.nn.Linear(1, 1)
                self.a.weight = self.b.weight
                self.register_buffer("z", L.ones(1))

        given = {"b.weight": L.ones(1, 1), "a.bias": L.ones(1), "b.bias": L.ones(1), "z": L.ones(1)}
        return [outcome(lambda: L.func.functional_call(Tied(), values, L.ones(1), strict=True, tie_weights=tie))
                for values, tie in (({"x": L.ones(1), "c": L.ones(1)}, True), (given, False))]

    same(scenario)


def test_functional_call_sets_attributes_as_torch():
    """Names that are not parameters or buffers go through setattr, as torch's: a weight_norm'd layer's "weight"
    is used as given (through right_inverse), a plain tensor attribute is replaced, a non-tensor value or attribute
    is refused; a buffer the forward reassigns is written back into the caller's dict."""
    def scenario(L):
        class Counter(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", L.zeros((), dtype=L.float64))
                self.lin = L.nn.utils.parametrizations.weight_norm(L.nn.Linear(3, 2).double())
                self.scale = t(L, 2.0)

            def forward(self, x):
                self.count = self.count + 1
                return self.lin(x) * self.scale

        L.manual_seed(0)
        model, x = Counter(), t(L, DATA)
        given = {"count": t(L, 5.0), "lin.weight": t(L, RNG_W), "scale": t(L, 3.0)}
        out = L.func.functional_call(model, given, (x,))
        refused = [outcome(lambda: L.func.functional_call(model, {name: value}, (x,)))
                   for name, value in (("training", t(L, 1.0)), ("lin.bias", 3.0))]
        return out, given["count"], model.count, model.scale, model.lin.weight, refused

    assert same(scenario)[0] == "ok"


RNG_W = RNG.standard_normal((2, 3))
RNG_B = RNG.standard_normal(2)


# ---- custom Functions -----------------------------------------------------------------------------

def custom(L):
    class Cube(L.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * g * x ** 2

        @staticmethod
        def jvp(ctx, x_t):
            (x,) = ctx.saved_tensors
            return 3 * x_t * x ** 2

    class Scale(L.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            return Scale.apply(x, k), in_dims[0]

    class NoRule(L.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class OldStyle(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Cube, Scale, NoRule, OldStyle


def test_custom_functions_under_transforms():
    same(lambda L: L.func.vmap(custom(L)[0].apply)(t(L, M)))
    same(lambda L: L.func.jacrev(custom(L)[0].apply)(t(L, X)))
    same(lambda L: L.func.jacfwd(custom(L)[0].apply)(t(L, X)))
    same(lambda L: L.func.vmap(L.func.grad(lambda x: custom(L)[0].apply(x).sum()))(t(L, M)))
    same(lambda L: L.func.vmap(custom(L)[1].apply, in_dims=(0, None))(t(L, M), 3.0))


def test_custom_function_without_vmap_support_errors():
    assert same(lambda L: L.func.vmap(custom(L)[2].apply)(t(L, M)))[0] == "RuntimeError"
    assert same(lambda L: L.func.vmap(custom(L)[3].apply)(t(L, M)))[0] == "RuntimeError"


# ---- errors -------------------------------------------------------------------------------------

ERRORS = {
    "grad_not_scalar": lambda L: L.func.grad(lambda x: x)(t(L, X)),
    "grad_argnum_out_of_range": lambda L: L.func.grad(lambda x: x.sum(), argnums=1)(t(L, X)),
    "grad_argnums_repeated": lambda L: L.func.grad(lambda x: x.sum(), argnums=(0, 0))(t(L, X)),
    "grad_argnums_type": lambda L: L.func.grad(lambda x: x.sum(), argnums=1.5)(t(L, X)),
    "grad_aux_not_pair": lambda L: L.func.grad(lambda x: x.sum(), has_aux=True)(t(L, X)),
    "grad_non_tensor": lambda L: L.func.grad(lambda x: x.sum())(1.0),
    "jvp_primals_not_tuple": lambda L: L.func.jvp(L.sin, t(L, X), t(L, X)),
    "jvp_structure": lambda L: L.func.jvp(L.sin, (t(L, X),), (t(L, X), t(L, X))),
    "jvp_tangent_size": lambda L: L.func.jvp(L.sin, (t(L, X),), (t(L, M),)),
    "jvp_tangent_type": lambda L: L.func.jvp(L.sin, (t(L, X),), (1.0,)),
    "jvp_output_type": lambda L: L.func.jvp(lambda x: 1, (t(L, X),), (t(L, X),)),
    "vjp_non_tensor": lambda L: L.func.vjp(L.sin, 1.0),
    "vjp_cotangent_shape": lambda L: L.func.vjp(L.sin, t(L, X))[1](t(L, M)),
    "vmap_sizes": lambda L: L.func.vmap(L.add)(t(L, M), t(L, M[:2])),
    "vmap_in_dims_structure": lambda L: L.func.vmap(L.sin, in_dims=(0, 0))(t(L, M)),
    "vmap_non_tensor": lambda L: L.func.vmap(lambda a, b: a, in_dims=(0, 0))(t(L, M), 1),
    "vmap_in_dim_range": lambda L: L.func.vmap(L.sin, in_dims=3)(t(L, M)),
    "vmap_in_dims_type": lambda L: L.func.vmap(L.sin, in_dims=1.5)(t(L, M)),
    "vmap_none_in_dims": lambda L: L.func.vmap(L.sin, in_dims=None)(t(L, M)),
    "vmap_every_in_dim_none": lambda L: L.func.vmap(L.sin, in_dims=(None,))(t(L, M)),
    "vmap_in_dim_not_int": lambda L: L.func.vmap(L.sin, in_dims=(1.5,))(t(L, M)),
    "vmap_no_inputs": lambda L: L.func.vmap(lambda: t(L, M))(),
    "vmap_in_dims_tuple_for_list": lambda L: L.func.vmap(lambda a, b: a, in_dims=(0, (0,)))(t(L, M), [t(L, M)]),
    "vmap_in_dims_nested_structure": lambda L: L.func.vmap(lambda a, d: a, in_dims=(0, {"a": 0, "b": (0, 0)}))(
        t(L, M), {"a": t(L, M), "b": (t(L, M),)}),
    "vmap_out_dims_tuple_for_list": lambda L: L.func.vmap(lambda a: [a, a], out_dims=(0, 0))(t(L, M)),
    "vmap_returns_int": lambda L: L.func.vmap(lambda a: 1)(t(L, M)),
    "vmap_out_dims_structure": lambda L: L.func.vmap(lambda a: (a, a), out_dims=(0,))(t(L, M)),
    "vmap_out_dim_range": lambda L: L.func.vmap(lambda a: a, out_dims=2)(t(L, M)),
    "vmap_item": lambda L: L.func.vmap(lambda a: a.sum().item())(t(L, M)),
    "vmap_control_flow": lambda L: L.func.vmap(lambda a: a if bool(a.sum() > 0) else -a)(t(L, M)),
    "vmap_randomness_value": lambda L: L.func.vmap(L.sin, randomness="sometimes")(t(L, M)),
    "vmap_nonzero": lambda L: L.func.vmap(L.nonzero)(t(L, M)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    ours, theirs = outcome(lambda: ERRORS[name](retrograd)), outcome(lambda: ERRORS[name](torch))
    assert ours[0] == theirs[0] != "ok"
    assert ours[1].split("\n")[0] == theirs[1].split("\n")[0]
    if "TreeSpec" in theirs[1]:  # torch's pytree specs, over several lines
        assert ours[1] == theirs[1]


def test_is_grads_batched_is_one_vectorised_pass():
    """autograd.grad(is_grads_batched=True) equals one backward per cotangent, computed in a single
    engine run (the torch documentation's use: rows of a Jacobian at once)."""
    def scenario(L):
        x = L.tensor(X, requires_grad=True)
        y = (x.sin() * x.exp()).cumsum(0)
        return L.autograd.grad(y, x, L.eye(5, dtype=L.float64), is_grads_batched=True)

    assert same(scenario)[0] == "ok"


@pytest.mark.parametrize("out_dims", [0, 1])
def test_vmap_hands_back_the_tensor_itself_when_its_batch_dim_is_in_place(out_dims: int) -> None:
    """torch's vmap returns an output that is its input, batched at the wanted dim, as that very tensor
    (forward AD's tests check tangents by identity through it); at another dim, a view of it."""
    def identities(lib):
        t = lib.zeros(3, 2)
        out = lib.func.vmap(lambda x: x, out_dims=out_dims)(t)
        legacy = lib._vmap_internals._vmap(lambda x: x, 0, out_dims)(t)
        return out is t, legacy is t, out._base is t, lib.func.vmap(lambda x: x * 1)(t)._is_view()

    assert identities(retrograd) == identities(torch)


# ---- ensembles, linearize, batch norm without running statistics ------------------------------------------

def _models(L, n=3, cls="Linear"):
    L.manual_seed(0)
    return [L.nn.Sequential(L.nn.Linear(5, 4), L.nn.BatchNorm1d(4), L.nn.Tanh()).double() for _ in range(n)] \
        if cls == "Sequential" else [L.nn.Linear(5, 2).double() for _ in range(n)]


def _ensemble(L):
    models = [L.nn.Sequential(m, L.nn.Tanh(), L.nn.Linear(2, 3).double()) for m in _models(L)]
    params, buffers = L.func.stack_module_state(models)
    flags = {k: (v.requires_grad, v.is_leaf) for k, v in {**params, **buffers}.items()}

    def fmodel(p, b, x):
        return L.func.functional_call(models[0], (p, b), (x,))

    out = L.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, t(L, M))
    out.sum().backward()
    return out, flags, {k: v.grad for k, v in params.items()}


def _batch_norm_ensemble(L, mode):
    models = [getattr(m, mode)() for m in _models(L, cls="Sequential")]
    params, buffers = L.func.stack_module_state(models)
    out = L.func.vmap(lambda p, b, x: L.func.functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
        params, buffers, t(L, M))
    out.pow(2).sum().backward()
    return out, buffers, {k: v.grad for k, v in params.items()}


ENSEMBLES = {
    "stack_module_state under vmap": _ensemble,
    "batch norm ensemble, training": lambda L: _batch_norm_ensemble(L, "train"),
    "batch norm ensemble, eval": lambda L: _batch_norm_ensemble(L, "eval"),
    "batch norm, running statistics not batched": lambda L: L.func.vmap(_models(L, 1, "Sequential")[0])(
        t(L, M.reshape(3, 1, 5).repeat(2, 1))),
    "in-place write of a batch into an unbatched tensor": lambda L: L.func.vmap(lambda x: L.zeros(3).add_(x))(
        t(L, M)),
    "in-place write of a batch into a batched tensor": lambda L: L.func.vmap(lambda x, b: b.mul_(x))(t(L, M), t(L, N)),
    "batch norm without running statistics": lambda L: L.func.vmap(L.func.replace_all_batch_norm_modules_(
        _models(L, 1, "Sequential")[0]))(t(L, M.reshape(3, 1, 5).repeat(2, 1))),
    "no models": lambda L: L.func.stack_module_state([]),
    "mixed modes": lambda L: L.func.stack_module_state([_models(L)[0], _models(L)[1].eval()]),
    "mixed classes": lambda L: L.func.stack_module_state([_models(L)[0], L.nn.Linear(5, 2, bias=False)]),
    "mixed requires_grad": lambda L: L.func.stack_module_state([_models(L)[0], _models(L)[1].requires_grad_(False)]),
    "linearize": lambda L: (lambda out, fn: (out, fn(t(L, X)), fn(t(L, M[0]))))(*L.func.linearize(
        lambda x: (x.sin() * x).cumsum(0), t(L, X))),
    "linearize pytree": lambda L: L.func.linearize(lambda d: d["a"] * d["b"].exp(),
                                                   {"a": t(L, X), "b": t(L, M[0])})[1]({"a": t(L, M[1]), "b": t(L, X)}),
    "linearize wrong shape": lambda L: L.func.linearize(L.sin, t(L, X))[1](t(L, M)),
    "linearize wrong dtype": lambda L: L.func.linearize(L.sin, t(L, X))[1](t(L, X).float()),
    "replace_all_batch_norm_modules_": lambda L: (lambda m: (m[1].running_mean, m[1].track_running_stats,
                                                             m(t(L, M))))(
        L.func.replace_all_batch_norm_modules_(_models(L, 1, "Sequential")[0])),
}


@pytest.mark.parametrize("name", ENSEMBLES)
def test_ensembles_and_linearize_match_torch(name):
    same(ENSEMBLES[name])


def _functionalize_facts(lib):
    """What a caller sees of functionalize: values, the input mutated, outputs that do not alias the inputs."""
    def f(x):
        y = x.view(-1)
        y.add_(1)
        return y, x * 2

    facts = []
    for mode in ("mutations", "mutations_and_views"):
        x = lib.ones(2, 2)
        y, z = lib.func.functionalize(f, remove=mode)(x)
        facts += [mode, x.sum().item(), y._base is x, z.sum().item()]
        y.mul_(10)
        facts.append(x.sum().item())
    x = lib.ones(2, requires_grad=True)
    facts.append(lib.func.functionalize(lambda a: (a * 3).sin())(x).grad_fn.name())
    facts.append(lib.func.grad(lib.func.functionalize(lambda a: (a.clone().add_(1) ** 2).sum()))(lib.ones(2)).tolist())
    facts.append(lib.func.functionalize(f).__name__)
    with pytest.raises(RuntimeError) as error:
        lib.func.functionalize(f, remove="views")
    facts.append(str(error.value))
    return facts


def test_functionalize_shows_torchs_values_mutations_and_no_aliasing():
    assert _functionalize_facts(retrograd) == _functionalize_facts(torch)


def _debug_unwrap_facts(lib):
    vmap, unwrap = lib.func.vmap, lib.func.debug_unwrap
    x = lib.arange(24.0).view(2, 3, 4)
    return [vmap(lambda t: lib.tensor(unwrap(t).shape))(x).tolist(),
            vmap(vmap(lambda t: lib.tensor(unwrap(t).shape)))(x).tolist(),
            vmap(vmap(lambda t: lib.tensor(unwrap(t, recurse=False).shape)))(x).tolist(),
            vmap(vmap(lambda t: unwrap(t, recurse=False)[0].sum()))(x).tolist(), unwrap(x) is x]


def test_debug_unwrap_gives_the_batch_inside_vmap():
    assert _debug_unwrap_facts(retrograd) == _debug_unwrap_facts(torch)


def test_batched_tensor_repr_nests_as_torchs():
    """Printed inside vmap, a tensor shows torch's wrappers: the innermost vmap's outermost, each numbered by its
    depth among the running vmaps (a second vmap call starts again at 1), blank lines of the value left blank."""
    def scenario(L):
        seen = []

        def look(x):
            seen.append(repr(x))
            return x

        L.func.vmap(look)(t(L, M))
        L.func.vmap(L.func.vmap(look))(t(L, np.stack([M, N])))
        L.func.vmap(lambda a: L.func.vmap(look)(a * 2))(t(L, M))
        return [text.replace("torch.", "").replace("retrograd.", "") for text in seen]

    assert scenario(retrograd) == scenario(torch)


def test_tensors_print_their_grad_and_jvp_wrappers_as_torchs():
    """Inside grad, vjp and jvp a tensor computed from the inputs prints torch's GradTrackingTensor around the tensor
    as it is outside (its requires_grad / grad_fn there, no tangent), nested with vmap's BatchedTensor in the order
    the transforms run, str as repr; the results outside print plain."""
    def scenario(L):
        seen = []
        F = L.func

        def look(x):
            seen.append(repr(x))
            seen.append(str(x * 2))
            return x

        def scalar(x):
            return look(x).sin().sum()

        ones = L.ones(2, dtype=L.float64)
        seen.append(repr(F.grad(scalar)(ones)))
        F.grad(scalar)(L.ones(2, dtype=L.float64, requires_grad=True))
        F.grad(F.grad(scalar))(L.tensor(1.0))
        F.grad(lambda x: F.vmap(look)(x.reshape(2, 1).expand(2, 3)).sum())(ones)
        F.vmap(F.grad(scalar))(L.ones(3, 2))
        F.vjp(look, ones)
        F.jvp(look, (ones,), (ones,))
        F.vmap(lambda x: F.jvp(look, (x,), (x,)))(L.ones(3, 2))
        F.jvp(F.vmap(look), (L.ones(3, 2),), (L.ones(3, 2),))
        F.grad(lambda x: F.jvp(look, (x,), (x,))[1].sum())(ones)
        F.jacrev(look)(ones)
        F.jacfwd(look)(ones)
        with L.autograd.forward_ad.dual_level():  # a public dual level's tangent is printed, as outside
            dual = L.autograd.forward_ad.make_dual(ones, ones * 3)
            F.grad(lambda x: scalar(x * dual))(ones)
        return [text.replace("torch.", "").replace("retrograd.", "") for text in seen]

    assert scenario(retrograd) == scenario(torch)


def test_values_returned_by_grad_and_vjp_do_not_require_grad_as_torchs():
    """grad_and_value's value and vjp's output leave the transform cut from its graph (requires_grad False, as
    torch's), still carrying an outer jvp's tangent and an outer graph when there is one."""
    def scenario(L):
        F = L.func
        x = t(L, [0.5, 1.5])

        def f(a):
            return (a.sin() * 2).sum()

        out = [F.grad_and_value(f)(x)[1], F.vjp(lambda a: a.exp(), x)[0],
               F.vmap(F.grad_and_value(f))(x.expand(3, 2))[1]]
        facts = [(o.requires_grad, o.grad_fn is None) for o in out]
        tangent = F.jvp(lambda a: F.grad_and_value(f)(a)[1], (x,), (L.ones_like(x),))[1]
        outer = F.grad_and_value(f)(x.clone().requires_grad_())[1]
        return facts, structure([tangent, *out]), outer.requires_grad, type(outer.grad_fn).__name__

    assert scenario(retrograd) == scenario(torch)


def _flags(value):
    """Each tensor's requires_grad and grad_fn name, in the value's structure."""
    if isinstance(value, (tuple, list)):
        return [_flags(v) for v in value]
    if isinstance(value, dict):
        return {k: _flags(v) for k, v in value.items()}
    return value.requires_grad, type(value.grad_fn).__name__


AUX = {
    "grad": lambda L, x, w: L.func.grad(lambda a: ((a * a).sum(), a.sum()), has_aux=True)(x)[1],
    "grad_and_value": lambda L, x, w: L.func.grad_and_value(lambda a: ((a * a).sum(), {"m": a * 2}),
                                                            has_aux=True)(x)[1],
    "vjp": lambda L, x, w: L.func.vjp(lambda a: (a.sin(), [a.sum(), a.cos()]), x, has_aux=True)[2],
    "jacrev": lambda L, x, w: L.func.jacrev(lambda a: (a.sin(), a.sum()), has_aux=True)(x)[1],
    "vmap(grad)": lambda L, x, w: L.func.vmap(L.func.grad(lambda a: ((a * a).sum(), a.sum()), has_aux=True))(
        x.expand(2, 3))[1],
    "aux of a tensor outside": lambda L, x, w: L.func.grad(lambda a: ((a * w).sum(), (a * w).sum()), has_aux=True)(x),
    "nested aux": lambda L, x, w: L.func.grad(lambda b: L.func.grad(lambda a: ((a * b).sum(), (a * b).sum()),
                                                                    has_aux=True)(x)[1])(x * 1),
    "nested value": lambda L, x, w: L.func.grad(lambda b: L.func.grad_and_value(lambda a: (a * b).sum())(x)[1])(x),
}


@pytest.mark.parametrize("case", AUX)
def test_aux_and_values_leave_the_transform_without_its_graph(case):
    """has_aux's aux, like the value, comes back without the graph inside the transform (a plain tensor, unless it
    depends on a tensor outside that requires grad): `.numpy()` works on it, as on torch's."""
    found = []
    for lib in (torch, retrograd):
        x = lib.ones(3, dtype=lib.float64)
        w = lib.full((3,), 2.0, dtype=lib.float64, requires_grad=True)
        out = AUX[case](lib, x, w)
        found.append((_flags(out), structure(out)))
    assert found[1] == found[0]
