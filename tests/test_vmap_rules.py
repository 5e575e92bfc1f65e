"""vmap's batching rules for convolution, pooling, nll_loss and the shape ops the per-sample-gradient,
ensembling and NTK tutorials run into, against torch.func: values, and grad / jacrev through them,
with no per-example loop (the loop fallback's performance warning is an error here, as torch prints
none for these ops). Also the audit of which ops of the table still have only the loop."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import retrograd
from retrograd.autograd import batched

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 2, 2, 7, 7))  # vmap over 3: (N=2, C=2, 7, 7) each
W = RNG.standard_normal((3, 4, 2, 3, 3))  # an ensemble of 3 weights (F=4, C=2, 3, 3)
B = RNG.standard_normal((3, 4))
TARGETS = RNG.integers(0, 5, (3, 6))
LOGITS = RNG.standard_normal((3, 6, 5))


def t(lib, array):
    return lib.tensor(np.asarray(array), dtype=lib.float64 if np.asarray(array).dtype.kind == "f" else lib.int64)


def leaves(value):
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in leaves(v)]
    return [value]


def same(scenario):
    """The scenario under torch and under retrograd (any performance warning an error) gives the same tensors."""
    theirs = leaves(scenario(torch))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        ours = leaves(scenario(retrograd))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


# ---- convolution ---------------------------------------------------------------------------------

CONVS = {  # (input, weight, bias) -> output, each example's tensors logical
    "conv2d": lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, padding=1),
    "conv2d_groups_stride": lambda L, x, w, b: L.nn.functional.conv2d(x, w[:, :1], b, stride=2, groups=2),
    "conv_transpose2d": lambda L, x, w, b: L.nn.functional.conv_transpose2d(x, w.transpose(0, 1)[:2], b,
                                                                            stride=2, output_padding=1),
    "conv1d_unbatched": lambda L, x, w, b: L.nn.functional.conv1d(x[0, :, 0], w[:, :, 0], b, dilation=2),
}
IN_DIMS = {"input": (0, None, None), "weight": (None, 0, 0), "both": (0, 0, 0), "bias": (None, None, 0)}


@pytest.mark.parametrize("batched_args", IN_DIMS)
@pytest.mark.parametrize("conv", CONVS)
def test_convolution_under_vmap(conv, batched_args):
    """The input batched alone folds into N, a batched weight or bias into the groups."""
    in_dims = IN_DIMS[batched_args]

    def scenario(L):
        args = [t(L, a) if d == 0 else t(L, a[0]) for a, d in zip((X, W, B), in_dims)]
        return L.func.vmap(lambda x, w, b: CONVS[conv](L, x, w, b), in_dims=in_dims)(*args)

    same(scenario)


@pytest.mark.parametrize("conv", CONVS)
def test_per_example_gradients_through_convolution(conv):
    """vmap(grad): the forward is batched, its backward runs on the physical graph."""
    def scenario(L):
        loss = lambda w, b, x: CONVS[conv](L, x, w, b).tanh().sum()  # noqa: E731
        return L.func.vmap(L.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))(t(L, W[0]), t(L, B[0]), t(L, X))

    same(scenario)


@pytest.mark.parametrize("conv", CONVS)
def test_jacrev_through_convolution(conv):
    """jacrev runs convolution_backward with a batch of cotangents; vmap(jacrev) with batched inputs too."""
    def scenario(L):
        out = lambda w, b, x: CONVS[conv](L, x, w, b).sin().sum((-1, -2))  # noqa: E731
        jac = L.func.jacrev(out, argnums=(0, 1, 2))(t(L, W[0]), t(L, B[0]), t(L, X[0]))
        ensemble = L.func.vmap(L.func.jacrev(out, argnums=(0, 2)), in_dims=(0, None, 0))(t(L, W), t(L, B[0]), t(L, X))
        return jac, ensemble

    same(scenario)


def test_input_gradient_alone_folds_into_the_batch():
    """jacrev in the input only: convolution_backward wants no weight gradient, so the cotangents fold into N."""
    same(lambda L: L.func.jacrev(lambda x: L.nn.functional.conv2d(x, t(L, W[0])).cos().sum((0, 2, 3)))(t(L, X[0])))


# ---- pooling ---------------------------------------------------------------------------------------

POOLS = {
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(x, 2),
    "max_pool2d_overlapping": lambda L, x: L.nn.functional.max_pool2d(x, 3, stride=2, padding=1),
    "avg_pool2d": lambda L, x: L.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
    "adaptive_avg_pool2d": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
    "adaptive_max_pool2d": lambda L, x: L.nn.functional.adaptive_max_pool2d(x, 3),
    "max_pool1d_unbatched": lambda L, x: L.nn.functional.max_pool1d(x[0, :, 1], 2),
    "reflection_pad": lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect"),
    "bilinear": lambda L, x: L.nn.functional.interpolate(x, scale_factor=2, mode="bilinear"),
}


@pytest.mark.parametrize("pool", POOLS)
def test_pooling_under_vmap(pool):
    """Values, per-example gradients, jacrev (the backward under vmap) and vmap of jacrev."""
    def scenario(L):
        f = lambda x: POOLS[pool](L, x).exp().sum((-1, -2))  # noqa: E731
        return (L.func.vmap(lambda x: POOLS[pool](L, x))(t(L, X)),
                L.func.vmap(L.func.grad(lambda x: f(x).sum()))(t(L, X)),
                L.func.jacrev(f)(t(L, X[0])),
                L.func.vmap(L.func.jacrev(f))(t(L, X)))

    same(scenario)


# ---- nll_loss -----------------------------------------------------------------------------------

LOSSES = {
    "mean": {}, "sum": {"reduction": "sum"}, "none": {"reduction": "none"},
    "weighted_mean": {"weight": np.linspace(0.5, 2.0, 5)}, "ignored_mean": {"ignore_index": 2},
    "weighted_ignored_sum": {"weight": np.linspace(0.5, 2.0, 5), "ignore_index": 1, "reduction": "sum"},
}


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)])
def test_nll_loss_under_vmap(loss, in_dims):
    """The examples fold into the loss's batch; each one's reduction follows (a 'mean' over its own weights)."""
    def scenario(L):
        kwargs = {k: t(L, v) if k == "weight" else v for k, v in LOSSES[loss].items()}
        f = lambda x, y: L.nn.functional.nll_loss(x.log_softmax(-1), y, **kwargs)  # noqa: E731
        x, y = (t(L, a) if d == 0 else t(L, a[0]) for a, d in zip((LOGITS, TARGETS), in_dims))
        return (L.func.vmap(f, in_dims=in_dims)(x, y),
                L.func.vmap(L.func.grad(lambda x, y: f(x, y).sum()), in_dims=in_dims)(x, y),
                L.func.vmap(L.func.jacrev(f), in_dims=in_dims)(x, y))

    same(scenario)


def test_nll_loss_of_one_sample_and_of_images():
    """(C,) logits with a 0-d target (the tutorial's unsqueeze-free form) and (N, C, H, W) with (N, H, W)."""
    images = RNG.standard_normal((3, 2, 4, 3, 3))
    labels = RNG.integers(0, 4, (3, 2, 3, 3))

    def scenario(L):
        one = L.func.vmap(L.func.grad(lambda x, y: L.nn.functional.nll_loss(x.log_softmax(0), y)))
        two = L.func.vmap(L.func.jacrev(lambda x, y: L.nn.functional.nll_loss(x.log_softmax(1), y, reduction="sum")))
        return one(t(L, LOGITS[:, 0]), t(L, TARGETS[:, 0])), two(t(L, images), t(L, labels))

    same(scenario)


# ---- shape ops --------------------------------------------------------------------------------------

def test_unsqueeze_of_examples_that_are_numbers():
    """unsqueeze of a 0-d example (the tutorials' target.unsqueeze(0)) is a dim shift, not a loop."""
    same(lambda L: L.func.vmap(lambda y: (y.unsqueeze(0), y.unsqueeze(-1).unsqueeze(0)))(t(L, TARGETS[:, 0])))


def test_squeeze_of_one_dim_is_torchs_squeeze_of_dims():
    """squeeze(dim) under vmap (one or two levels, any dim, of size 1 or not) is squeeze.dims, as torch's rule:
    the graph a parameter sees ends in SqueezeBackward2, as an HNN's vmap(grad(lambda x: H(x).squeeze(-1))) shows."""
    weight = RNG.standard_normal((1, 4))

    def scenario(L):
        w = t(L, weight).requires_grad_()
        f = lambda x: ((x @ w.mT).squeeze(-1), x[None].squeeze(0), x.squeeze(1) * w.sum())  # noqa: E731
        outs = L.func.vmap(f)(t(L, TABLE[:, :, :4])) + L.func.vmap(L.func.vmap(f))(t(L, X[:, :, 0, :, :4]))
        return [(o, type(o.grad_fn).__name__) for o in outs]

    same(lambda L: [o for o, _ in scenario(L)])
    assert [n for _, n in scenario(retrograd)] == [n for _, n in scenario(torch)]


def test_reshape_of_strided_examples():
    """A reshape that views non-contiguous memory (_reshape_alias) and its backward under jacrev."""
    f = lambda x: x.transpose(0, 1).reshape(2, 2, 49)  # noqa: E731
    same(lambda L: (L.func.vmap(f)(t(L, X)), L.func.jacrev(lambda x: f(x).sin().sum(-1))(t(L, X[0]))))


# ---- other ops common in real code ----------------------------------------------------------------

TABLE = RNG.standard_normal((3, 7, 4))
TOKENS = RNG.integers(0, 7, (3, 5))
MATRICES = RNG.standard_normal((3, 4, 4)) + 4 * np.eye(4)
GRID = RNG.uniform(-1, 1, (3, 2, 3, 3, 2))
ALONG = RNG.integers(-4, 4, (3, 7, 2))  # indices along dim 1 of TABLE's examples, negative ones from the end
COMMON = {
    "layer_norm": lambda L, x, w: L.nn.functional.layer_norm(x, (7,), w.flatten()[:7], w.flatten()[7:14]),
    "group_norm": lambda L, x, w: L.nn.functional.group_norm(x, 2, w.flatten()[:2], w.flatten()[2:4]),
    "embedding": lambda L, i, w: L.nn.functional.embedding(i, w),
    "take": lambda L, x, i: x.take(i - 2),
    "solve_triangular": lambda L, a, b: L.linalg.solve_triangular(a.triu(), b, upper=True),
    "solve": lambda L, a, b: L.linalg.solve(a, b),
    "cholesky": lambda L, a, b: L.linalg.cholesky(a @ a.mT),
    "grid_sample": lambda L, x, g: L.nn.functional.grid_sample(x, g, align_corners=False),
    "attention": lambda L, q, kv: L.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True),
    "lstsq": lambda L, a, b: L.linalg.lstsq(a, b).solution,
    "addr": lambda L, a, b: L.addr(a, b[0], b[1], beta=0.5),
    "weight_norm": lambda L, v, g: L._weight_norm(v, g, 0),  # the norm over every dim but 0: not across examples
    "weight_norm_last_dim": lambda L, v, g: L._weight_norm(v, g.mT, 1),
    "cosine_similarity": lambda L, a, b: L.nn.functional.cosine_similarity(a, b, dim=-1),  # clamped norms
    "gather": lambda L, x, i: L.gather(x, 1, i.remainder(4)),  # the index's bounds checked over every example
    "take_along_dim": lambda L, x, i: L.take_along_dim(x, i, 1),
    "roll": lambda L, x, w: x.roll(3) * w.sum(),  # each example's flattening rolled
    "roll_dims": lambda L, x, w: x.roll((1, -2), (0, -1)) * w.sum(),
}
COMMON_ARGS = {"layer_norm": (X, W), "group_norm": (X, W), "embedding": (TOKENS, TABLE), "take": (X, TOKENS),
               "solve_triangular": (MATRICES, X[:, 0, 0, :4]), "solve": (MATRICES, X[:, 0, 0, :4, 0]),
               "cholesky": (MATRICES, None), "grid_sample": (X, GRID),
               "attention": (X[:, 0, :, :5, :4], X[:, 1, :, :6, :4]), "lstsq": (MATRICES[:, :, :3], X[:, 0, 0, :4]),
               "addr": (MATRICES, X[:, 0, 0, :2, :4]), "weight_norm": (MATRICES, X[:, 0, 0, :4, :1]),
               "weight_norm_last_dim": (MATRICES, X[:, 0, 0, :4, :1]), "cosine_similarity": (X, X[:, 1]),
               "gather": (TABLE, ALONG), "take_along_dim": (TABLE, ALONG), "roll": (X, W), "roll_dims": (X, W)}


@pytest.mark.parametrize("in_dims", [(0, None), (None, 0), (0, 0)])
@pytest.mark.parametrize("op", COMMON)
def test_common_ops_under_vmap(op, in_dims):
    """Values and per-example gradients (of the floating operands) with either or both operands batched."""
    first, second = COMMON_ARGS[op]
    if second is None:
        in_dims, second = (0, None), first

    def scenario(L):
        a, b = (t(L, v) if d == 0 else t(L, v[0]) for v, d in zip((first, second), in_dims))
        f = lambda a, b: COMMON[op](L, a, b)  # noqa: E731
        floating = tuple(i for i, v in enumerate((a, b)) if v.is_floating_point())
        loss = L.func.grad(lambda a, b: f(a, b).sin().sum(), argnums=floating)
        return L.func.vmap(f, in_dims=in_dims)(a, b), L.func.vmap(loss, in_dims=in_dims)(a, b)

    same(scenario)



@pytest.mark.parametrize("randomness", ["different", "same"])
def test_dropout_masks_follow_the_randomness_of_vmap(randomness):
    """torch's draws: 'different' one mask per example (before, every example got the same one), 'same' one mask
    for all; nested levels, feature and alpha dropout, an input vmap does not batch, and per-example gradients
    through the masks."""
    def scenario(L):
        F = L.nn.functional
        L.manual_seed(0)
        flat = L.func.vmap(lambda a: F.dropout(a, 0.4), randomness=randomness)(t(L, X[:, 0, 0]).float())
        nested = L.func.vmap(L.func.vmap(lambda a: F.alpha_dropout(a, 0.3, True), randomness=randomness),
                             randomness=randomness)(t(L, X[:, 0]))
        features = L.func.vmap(lambda a: F.dropout2d(a, 0.5), randomness=randomness)(t(L, X))
        grads = L.func.vmap(L.func.grad(lambda w, a: F.dropout(a * w, 0.5).pow(2).sum()), in_dims=(None, 0),
                            randomness=randomness)(t(L, X[0, 0, 0, 0]), t(L, X[:, 0, 0]))
        unbatched = L.func.vmap(lambda w: F.dropout(t(L, X[0, 0, 0]), 0.5) * w, randomness=randomness)(
            t(L, X[:, 0, 0, 0, 0]))  # an input the level does not batch: 'different' still draws per example
        return flat, nested, features, grads, unbatched, L.rand(2)

    same(scenario)


@pytest.mark.parametrize("randomness", ["different", "same"])
@pytest.mark.parametrize("outer", [None, "different", "same"])
def test_random_factories_follow_the_randomness_of_vmap(randomness, outer):
    """rand, randn, randint, normal of numbers and the _like factories inside vmap draw torch's numbers: 'different'
    one sample per example at each such level (before, every example got the same one), 'same' one for all
    (Note [random factories under vmap])."""
    def scenario(L):
        def noisy(v):
            return (v + L.rand(2) + L.randn(2, dtype=L.float64) + L.randint(0, 9, (2,)) + L.normal(1.0, 2.0, (2,))
                    + L.randn_like(v) * L.rand_like(v) + L.randint_like(v, 5))

        L.manual_seed(0)
        f = L.func.vmap(noisy, randomness=randomness)
        if outer is not None:
            f = L.func.vmap(f, randomness=outer)
        return f(t(L, X[:2, :3, 0, 0, :2] if outer else X[:3, 0, 0, 0, :2])), L.rand(2)

    same(scenario)


SAMPLERS = {  # each called inside vmap on an example v (float64, shape (2,))
    "normal_": lambda L, v: v.clone().normal_(1.0, 2.0), "uniform_": lambda L, v: v.clone().uniform_(-1, 1),
    "bernoulli_": lambda L, v: v.clone().bernoulli_(0.3), "exponential_": lambda L, v: v.clone().exponential_(),
    "random_": lambda L, v: v.clone().random_(0, 7), "unbatched normal_": lambda L, v: v + L.empty(2).normal_(),
    "bernoulli": lambda L, v: L.bernoulli(v * 0 + 0.4), "normal of tensors": lambda L, v: L.normal(v, 1.0),
    "multinomial": lambda L, v: L.multinomial(v.abs() + 0.1, 1).double(), "poisson": lambda L, v: L.poisson(v.abs()),
}


@pytest.mark.filterwarnings("ignore:There is a performance drop")  # 'different' loops over the examples here
@pytest.mark.parametrize("randomness", ["different", "same"])
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_samplers_follow_the_randomness_of_vmap_as_torch(sampler, randomness):
    """In-place samplers under 'same' write one draw into every example (they raised), refuse an unbatched self
    under 'different' (it silently drew one for all); samplers of a batched parameter refuse 'same' in torch's words
    (Note [random samplers under vmap]). Under 'different' the in-place samplers and those of parameters loop over
    the examples here: torch's shapes and distributions, not its numbers; multinomial draws torch's numbers."""
    def run(L):
        L.manual_seed(0)
        try:
            return L.func.vmap(lambda v: SAMPLERS[sampler](L, v), randomness=randomness)(t(L, X[:3, 0, 0, 0, :2]))
        except RuntimeError as e:
            return str(e)

    theirs, ours = run(torch), run(retrograd)
    if isinstance(theirs, str):
        assert ours == theirs
    elif randomness == "same" or sampler == "multinomial":
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    else:
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype.is_floating_point

PROBABILITIES = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.0]])
MULTINOMIAL_CASES = {  # L, probabilities (3, 4) -> a draw under vmap
    "rows, with replacement": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 5, True), randomness="different")(p),
    "rows, without": lambda L, p: L.func.vmap(lambda q: q.multinomial(3), randomness="different")(p),
    "one sample": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 1), randomness="different")(p),
    "matrices": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 2), randomness="different")(p.expand(2, 3, 4)),
    "unbatched": lambda L, p: L.func.vmap(lambda z: L.multinomial(p, 2, True) + z, randomness="different")(
        L.zeros(2, dtype=L.int64)),
    "batch dim 1, without": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 2), in_dims=1,
                                                     randomness="different")(p.t().contiguous()),
    "nested": lambda L, p: L.func.vmap(L.func.vmap(lambda q: L.multinomial(q, 2, True), randomness="different"),
                                       randomness="different")(p.expand(2, 3, 4)),
    "inner different, outer same": lambda L, p: L.func.vmap(lambda z: L.func.vmap(
        lambda q: L.multinomial(q, 2, True), randomness="different")(p) + z, randomness="same")(
        L.zeros(2, dtype=L.int64)),
    "inner same, outer different": lambda L, p: L.func.vmap(lambda q: L.func.vmap(
        lambda z: L.multinomial(q, 2) + z, randomness="same")(L.zeros(3, dtype=L.int64)), randomness="different")(p),
    "same, unbatched": lambda L, p: L.func.vmap(lambda z: L.multinomial(p, 2) + z, randomness="same")(
        L.zeros(2, dtype=L.int64)),
    "same, batched": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 2), randomness="same")(p),
    "outer same, batched": lambda L, p: L.func.vmap(L.func.vmap(lambda q: L.multinomial(q, 2), randomness="different"),
                                                    randomness="same")(p.expand(2, 3, 4)),
    "error": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 2))(p),
    "a zero probability drawn": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 4), randomness="different")(p),
    "too many samples": lambda L, p: L.func.vmap(lambda q: L.multinomial(q, 5), randomness="different")(p),
}


@pytest.mark.parametrize("case", MULTINOMIAL_CASES)
def test_multinomial_follows_the_randomness_of_vmap_with_torchs_numbers(case):
    """multinomial of batched (or, under 'different', unbatched) probabilities draws each example's rows by torch's
    batching rule, torch's numbers for the seed (Note [random samplers under vmap]); 'same' and 'error' as torch."""
    def run(L):
        L.manual_seed(0)
        try:
            drawn = MULTINOMIAL_CASES[case](L, L.tensor(PROBABILITIES))
        except RuntimeError as e:
            return str(e)
        return tuple(drawn.shape), str(drawn.dtype), drawn.tolist()

    assert run(retrograd) == run(torch)


# ---- the tutorials' program ------------------------------------------------------------------------

def test_tutorial_program_runs_without_the_loop(tmp_path):
    """tests/programs/per_sample_grads.py (its numbers are torch's: tests/test_programs.py) under retrograd with
    UserWarnings as errors: none of its vmap'd ops falls back to the per-example loop."""
    program = Path(__file__).resolve().parent / "programs" / "per_sample_grads.py"
    out = subprocess.run([sys.executable, "-W", "error::UserWarning", "-m", "retrograd.run", str(program)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "ntk-vector products" in out.stdout


# ---- the audit ---------------------------------------------------------------------------------------

def test_ops_that_still_loop():
    """Ops of the table that have only the per-example loop: random draws, data-dependent or in-place layout
    ops and the rarer kernels. The count may only go down; a new op with no rule fails here until it gets one
    or joins the list."""
    from retrograd.ops.registry import OPS

    looping = sorted(name for name, op in OPS.items() if batched.batching_rule(op) == "_loop")
    assert len(looping) <= LOOPING_OPS, f"{len(looping)} ops loop under vmap (was {LOOPING_OPS}): {looping}"


LOOPING_OPS = 69  # mkldnn_rnn_layer joined: torch has no batching rule for nn.LSTM at all (vmap raises there)


def test_roll_of_numbers_under_vmap_leaves_them_alone():
    """roll of a 0-d example is that number, as outside vmap. torch's rule rolls the batch instead (vmap(lambda a:
    a.roll(1))(arange(3.)) gives [2., 0., 1.] under torch 2.13): retrograd keeps roll's meaning, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = retrograd.func.vmap(lambda a: a.roll(1))(retrograd.arange(3.0))
    assert out.tolist() == [0.0, 1.0, 2.0]
