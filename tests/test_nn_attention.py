"""torch.nn.attention: SDPBackend and sdpa_kernel as torch has them; retrograd's one math kernel runs under
every backend choice."""

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
