"""torch.nn.attention: SDPBackend and sdpa_kernel as torch has them; retrograd's one math kernel runs under
every backend choice."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention

import retrograd
from retrograd.nn import attention


def test_backends_are_torchs():
    assert [(m.name, int(m)) for m in attention.SDPBackend] == \
        [(name, int(m)) for name, m in torch.nn.attention.SDPBackend.__members__.items()]
    assert set(attention.__all__) == set(torch.nn.attention.__all__)
    assert attention.list_flash_attention_impls() == torch.nn.attention.list_flash_attention_impls()
    assert attention.current_flash_attention_impl() is None


@pytest.mark.parametrize("choice", ["MATH", "FLASH_ATTENTION", ["EFFICIENT_ATTENTION", "MATH"], ["CUDNN_ATTENTION"]])
def test_sdpa_kernel_sets_and_restores_torchs_flags(choice):
    def flags(lib):
        cuda = lib.backends.cuda
        return (cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled(),
                cuda.cudnn_sdp_enabled())

    def run(lib):
        backend = lib.nn.attention.SDPBackend
        chosen = [getattr(backend, n) for n in choice] if isinstance(choice, list) else getattr(backend, choice)
        with lib.nn.attention.sdpa_kernel(chosen) as inside:
            during = flags(lib)
        return inside, during, flags(lib)

    assert run(retrograd) == run(torch)


def test_every_backend_runs_the_math_kernel():
    q = retrograd.tensor(np.linspace(-1, 1, 24).reshape(1, 2, 3, 4), requires_grad=True)
    expected = retrograd.nn.functional.scaled_dot_product_attention(q, q, q)
    for backend in attention.SDPBackend:
        with attention.sdpa_kernel(backend, set_priority=True):
            out = retrograd.nn.functional.scaled_dot_product_attention(q, q, q)
        assert retrograd.equal(out, expected)
    theirs = torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(q.detach().numpy())] * 3)
    np.testing.assert_allclose(expected.detach().numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", ["math", 0, None, (attention.SDPBackend.MATH,)])
def test_invalid_backends_raise_as_torch(bad):
    torch_bad = (torch.nn.attention.SDPBackend.MATH,) if isinstance(bad, tuple) else bad
    with pytest.raises(AssertionError) as theirs, torch.nn.attention.sdpa_kernel(torch_bad):
        pass
    with pytest.raises(AssertionError) as ours, attention.sdpa_kernel(bad):
        pass
    assert str(ours.value) == str(theirs.value)


def test_unbuilt_submodules_say_so():
    with pytest.raises(AttributeError, match="does not build torch.nn.attention.flex_attention"):
        attention.flex_attention  # noqa: B018
    assert retrograd.nn.attention is attention  # reached as an attribute, as torch.nn.attention is


def _sdpa(lib, arrays, dtype, mask=None, causal=False):
    """Fused attention of the arrays (query, key, value) as `dtype`, its output and gradients as float64."""
    q, k, v = (lib.tensor(a).to(getattr(lib, dtype)).requires_grad_() for a in arrays)
    out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else lib.tensor(mask),
                                                         is_causal=causal)
    (out * out).sum().backward()
    return [t.detach().double().numpy() for t in (out, q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_narrow_attention_rounds_as_torchs_kernel(dtype, causal):
    """bfloat16 and float16 attention gives torch's numbers: the exponentials rounded to the query's dtype before
    their product with v, the product divided by the rows' sums (Note [attention in torch's order])."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3, 7, 4)).astype(np.float32) for _ in range(3)]
    ours, theirs = _sdpa(retrograd, arrays, dtype, causal=causal)[0], _sdpa(torch, arrays, dtype, causal=causal)[0]
    np.testing.assert_array_equal(ours, theirs)


def test_attention_to_no_key_is_zero():
    """A query row every key is masked from attends to nothing: zeros, with zero gradients, as torch's kernel gives
    (softmax alone would give NaN)."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((1, 2, 3, 4)) for _ in range(3)]
    mask = np.array([[True, True, False], [False, False, False], [True, False, True]])
    ours, theirs = _sdpa(retrograd, arrays, "float64", mask), _sdpa(torch, arrays, "float64", mask)
    assert not ours[0][:, :, 1].any()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _saved_names(node):
    return sorted(a for a in dir(node) if a.startswith("_saved_"))


@pytest.mark.parametrize("options", [{"is_causal": True}, {"mask": "bool", "scale": 0.5}, {"mask": "float"}])
def test_attention_node_saves_what_torchs_saves(options):
    """The fused node saves torch's values under torch's names: the inputs, the output, each row's log-sum-exp of
    the scores (0 in a row masked from every key, laid out (N, L, H) in memory), the additive mask (a bool one as
    0 and -inf), is_causal, dropout_p and the scale as given."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 4, 5))
    mask = {"bool": np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1]], dtype=bool),
            "float": np.where(rng.random((4, 4)) > 0.3, 0.0, -np.inf)}.get(options.get("mask"))

    def node(lib):
        x = lib.tensor(q).requires_grad_()
        out = lib.nn.functional.scaled_dot_product_attention(
            x, x * 2, x * 3, attn_mask=None if mask is None else lib.tensor(mask),
            is_causal=options.get("is_causal", False), scale=options.get("scale"))
        return out, out.grad_fn

    (ours, mine), (theirs, their) = node(retrograd), node(torch)
    assert type(mine).__name__ == type(their).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert _saved_names(mine) == _saved_names(their)
    for name in ("_saved_is_causal", "_saved_dropout_p", "_saved_scale"):
        assert getattr(mine, name) == getattr(their, name)
    np.testing.assert_allclose(mine._saved_logsumexp.numpy(), their._saved_logsumexp.numpy(), rtol=1e-12)
    assert mine._saved_logsumexp.stride() == their._saved_logsumexp.stride()
    assert not mine._saved_logsumexp.requires_grad
    np.testing.assert_array_equal(mine._saved_output.detach().numpy(), ours.detach().numpy())
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    if mask is None:
        assert mine._saved_attn_mask is None and their._saved_attn_mask is None
    else:
        np.testing.assert_array_equal(mine._saved_attn_mask.numpy(), their._saved_attn_mask.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["plain", "causal", "wider_keys_scaled", "bool_mask", "float_mask", "empty_rows"])
def test_attention_backward_from_the_log_sum_exp_is_torchs(dtype, case):
    """The fused row's gradients, taken from its saved output and log-sum-exp (Note [attention backward from the
    log-sum-exp]), are torch's, with masks, a causal mask, more keys than queries and rows masked from every key;
    and the recomputing path (create_graph) gives the same."""
    rng = np.random.default_rng(3)
    length, source = (4, 6) if case == "wider_keys_scaled" else (5, 5)
    arrays = [rng.standard_normal((2, 3, n, 8)) for n in (length, source, source)]
    options = {"causal": {"is_causal": True}, "wider_keys_scaled": {"scale": 0.3},
               "bool_mask": {"attn_mask": rng.random((5, 5)) > 0.4},
               "float_mask": {"attn_mask": np.where(rng.random((5, 5)) > 0.3, 0.0, -np.inf).astype(dtype)},
               "empty_rows": {"attn_mask": np.eye(5, dtype=bool)[::-1].copy(), "is_causal": True}}.get(case, {})
    tolerance = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-10, "atol": 1e-12}}[dtype]

    def grads(lib, create_graph=False):
        q, k, v = (lib.tensor(a, dtype=getattr(lib, dtype)).requires_grad_() for a in arrays)
        kwargs = {**options, "attn_mask": lib.tensor(options["attn_mask"])} if "attn_mask" in options else options
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        seed = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)), dtype=getattr(lib, dtype))
        return [g.detach().double().numpy() for g in lib.autograd.grad(out, (q, k, v), seed,
                                                                       create_graph=create_graph)]

    theirs = grads(torch)
    for ours in (grads(retrograd), grads(retrograd, create_graph=True)):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, **tolerance)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("offset", [0.0, 70.0, 200.0])
def test_attention_without_the_shift_is_torchs(dtype, offset):
    """Note [softmax without the shift] in the fused row: scores taken unshifted (offset 0 and 70 in float32, all
    in float64), rows taken again with the shift (far below the others: their exps underflow; masked from every
    key), and whole calls shifted (float32 scores near 200, where exp overflows): torch's output, log-sum-exp and
    gradients."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 3, 6, 8)) for _ in range(3)]
    mask = np.zeros((6, 6))
    mask[1] -= 300.0  # every score of the row far below exp's range
    mask[2] = -np.inf
    mask += offset  # what the scores' scale and mask add to every row
    tolerance = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-10, "atol": 1e-12}}[dtype]

    def run(lib):
        q, k, v = (lib.tensor(a, dtype=getattr(lib, dtype)).requires_grad_() for a in arrays)
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=lib.tensor(mask,
                                                                                          dtype=getattr(lib, dtype)))
        logsumexp = out.grad_fn._saved_logsumexp
        grads = lib.autograd.grad(out, (q, k, v), lib.ones_like(out))
        return [t.detach().double().numpy() for t in (out, logsumexp, *grads)]

    for ours, theirs in zip(run(retrograd), run(torch)):
        np.testing.assert_allclose(ours, theirs, **tolerance)


def test_attention_aten_row_returns_output_and_log_sum_exp():
    """torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: (output, logsumexp), the second without a
    gradient; a bfloat16 query's log-sum-exp in float32, as torch's."""
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    results = {}
    for lib in (retrograd, torch):
        x = lib.tensor(q).requires_grad_()
        out, lse = lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(x, x, x, 0.0, True)
        narrow = lib.ops.aten._scaled_dot_product_flash_attention_for_cpu(*[x.bfloat16()] * 3)[1]
        assert out.requires_grad and not lse.requires_grad and narrow.dtype == lib.float32
        results[lib] = out.detach().numpy(), lse.numpy()
    for a, b in zip(results[retrograd], results[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_deprecated_sdp_kernel_sets_the_flags_for_its_block_as_torch():
    """torch.backends.cuda.sdp_kernel (2023-era LLM code): a FutureWarning, the backends' flags for the block only."""
    seen = []
    for lib in (torch, retrograd):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False) as context:
                inside = (context, lib.backends.cuda.flash_sdp_enabled(), lib.backends.cuda.math_sdp_enabled(),
                          lib.backends.cuda.mem_efficient_sdp_enabled(), lib.backends.cuda.cudnn_sdp_enabled())
        after = (lib.backends.cuda.flash_sdp_enabled(), lib.backends.cuda.mem_efficient_sdp_enabled())
        seen.append((inside, after, [(w.category, str(w.message)) for w in caught]))
    assert seen[1] == seen[0]


@pytest.mark.parametrize(("q", "k", "mask", "options"), [
    ((1, 2, 3, 4), (1, 2, 5, 4), (3, 3), {}), ((2, 3, 4), (2, 5, 4), (3, 3), {}),
    ((1, 2, 3, 4), (1, 2, 5, 4), (4, 1, 1), {}), ((1, 2, 3, 4), (1, 2, 5, 4), (3, 3), {"dropout_p": 0.5})])
def test_a_mask_that_does_not_broadcast_to_the_scores_is_refused_in_torchs_words(q, k, mask, options):
    """The scores (..., L, S) are tensor a of torch's broadcast error, the mask tensor b, on either path."""
    messages = []
    for lib in (torch, retrograd):
        with pytest.raises(RuntimeError) as error:
            lib.nn.functional.scaled_dot_product_attention(lib.ones(q), lib.ones(k), lib.ones(k),
                                                           attn_mask=lib.ones(mask, dtype=lib.bool), **options)
        messages.append(str(error.value))
    assert messages[1] == messages[0]
