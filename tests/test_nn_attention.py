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
