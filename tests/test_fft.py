"""torch.fft against torch: values, dtypes, the whole recorded graph (node names along the chain),
gradients and second gradients of complex and real inputs, forward mode, argument errors.

The op database (tests/opdb/fft.py) runs the shared checks through view_as_real; here each
transform is called on complex tensors directly, with a complex cotangent, so that the conjugate
Wirtinger convention and the Hermitian-half gradients of rfft/irfft/hfft/ihfft are compared with
torch's own.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import retrograd
import retrograd.fft

ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_DIM = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
            "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ONE_DIM_ARGS = [{}, {"n": 3}, {"n": 8}, {"norm": "ortho"}, {"norm": "forward", "dim": 0}, {"n": 5, "norm": "backward"}]
MANY_DIM_ARGS = [{}, {"s": (3, 7)}, {"norm": "ortho"}, {"dim": (0, 2), "norm": "forward"},
                 {"s": (3, -1), "dim": (2, 0)}]


def graph(t) -> list[str]:
    """The node names along the first edges from t back to its leaf."""
    names, node = [], t.grad_fn
    while node is not None and type(node).__name__ != "AccumulateGrad":
        names.append(node.name())
        nxt = [n for n, _ in node.next_functions if n is not None]
        node = nxt[0] if nxt else None
    return names


def data(shape, complex_input, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_input else a


def numpy(t) -> np.ndarray:
    return t.detach().resolve_conj().numpy()


def cases():
    for name in ONE_DIM:
        for kwargs in ONE_DIM_ARGS:
            for complex_input in (False, True):
                if not (complex_input and name in REAL_ONLY):
                    yield pytest.param(name, (5, 6), complex_input, kwargs, id=f"{name}-{kwargs}-{complex_input}")
    for name in MANY_DIM:
        for kwargs in MANY_DIM_ARGS:
            for complex_input in (False, True):
                if not (complex_input and name in REAL_ONLY):
                    yield pytest.param(name, (4, 5, 6), complex_input, kwargs, id=f"{name}-{kwargs}-{complex_input}")


@pytest.mark.parametrize("name,shape,complex_input,kwargs", list(cases()))
def test_transform_against_torch(name, shape, complex_input, kwargs) -> None:
    """Value, dtype, graph, first and second gradient of a real loss, all as torch's."""
    a = data(shape, complex_input)
    results = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        y = getattr(lib.fft, name)(x, **kwargs)
        weights = lib.tensor(data(tuple(y.shape), y.is_complex(), seed=1))
        loss = (y * weights).real.sum() if y.is_complex() else (y * weights).sum()
        loss = loss + (y.abs() ** 2).sum() * 0.1  # a nonlinear term, so the second gradient is not zero
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (gg,) = lib.autograd.grad((g.abs() ** 2).sum(), x)
        results.append((numpy(y), str(y.dtype), graph(y), numpy(g), numpy(gg)))
    (ty, tdt, tgraph, tg, tgg), (ry, rdt, rgraph, rg, rgg) = results
    assert rdt == tdt and rgraph == tgraph
    np.testing.assert_allclose(ry, ty, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rg, tg, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rgg, tgg, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ONE_DIM + MANY_DIM)
@pytest.mark.parametrize("complex_input", [False, True])
def test_gradcheck_and_forward_mode(name, complex_input) -> None:
    """Finite differences in float64/complex128: backward, double backward and forward mode."""
    if complex_input and name in REAL_ONLY:
        return
    x = retrograd.tensor(data((3, 4), complex_input), requires_grad=True)

    def fn(t):
        return getattr(retrograd.fft, name)(t, norm="ortho")

    assert retrograd.autograd.gradcheck(fn, (x,))
    assert retrograd.autograd.gradgradcheck(fn, (x,))
    assert retrograd.autograd.gradcheck(fn, (x,), check_forward_ad=True, check_backward_ad=False)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "rfftn", "irfftn"])
def test_float32_and_integer_inputs_promote_as_torch(name) -> None:
    for values in (np.arange(6.0).reshape(2, 3).astype(np.float32), np.arange(6).reshape(2, 3)):
        ours = getattr(retrograd.fft, name)(retrograd.tensor(values))
        theirs = getattr(torch.fft, name)(torch.tensor(values))
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(numpy(ours), numpy(theirs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [None, 0, (0, 1), -1])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, dim) -> None:
    a = data((5, 4), True)
    outs = []
    for lib in (torch, retrograd):
        x = lib.tensor(a, requires_grad=True)
        y = getattr(lib.fft, name)(x, dim=dim)
        (g,) = lib.autograd.grad(y.real.sum() + (y.imag * lib.tensor(a.real)).sum(), x)
        outs.append((numpy(y), graph(y), numpy(g)))
    assert outs[0][1] == outs[1][1]
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])


@pytest.mark.parametrize("kwargs", [{"n": 5}, {"n": 8, "d": 0.25}, {"n": 7, "d": 3.0, "dtype": "float32"},
                                    {"n": 1, "dtype": "float64", "requires_grad": True}])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies(name, kwargs) -> None:
    outs = []
    for lib in (torch, retrograd):
        kw = dict(kwargs, dtype=getattr(lib, kwargs["dtype"])) if "dtype" in kwargs else kwargs
        outs.append(getattr(lib.fft, name)(**kw))
    assert str(outs[0].dtype) == str(outs[1].dtype) and outs[0].requires_grad == outs[1].requires_grad
    np.testing.assert_array_equal(outs[1].detach().numpy(), outs[0].detach().numpy())


ERRORS = [
    lambda m: m.fft.fft(m.tensor(1.0)),
    lambda m: m.fft.fft(m.ones(3), n=0),
    lambda m: m.fft.fft(m.ones(3), norm="sideways"),
    lambda m: m.fft.fftn(m.ones(2, 3), dim=(0, 0)),
    lambda m: m.fft.fftn(m.ones(2, 3), s=(1, 2, 3)),
    lambda m: m.fft.fft2(m.ones(2, 3), s=(2,), dim=(0, 1)),
    lambda m: m.fft.fft2(m.ones(3)),
    lambda m: m.fft.irfft(m.ones(1)),
    lambda m: m.fft.fft(m.ones(3, dtype=m.float16)),
    lambda m: m.fft.rfft(m.ones(3, dtype=m.complex64)),
    lambda m: m.fft.ihfft(m.ones(3, dtype=m.complex128)),
    lambda m: m.fft.rfftn(m.ones(3, dtype=m.complex64)),
    lambda m: m.fft.ihfftn(m.ones(3, dtype=m.complex64)),
    lambda m: m.fft.rfftn(m.ones(2, 3), dim=()),
    lambda m: m.fft.fftfreq(4, dtype=m.int64),
    lambda m: m.fft.fftfreq(4, dtype=m.complex64),
    # stft checks its input's dtype after centring (the padded length in the text), before its dims; ATen names
    # the types without a legacy tensor class CPU<ScalarType>Type
    lambda m: m.stft(m.arange(20), 8, 2, window=m.ones(8), return_complex=True),
    lambda m: m.stft(m.ones(1, 1, 20, dtype=m.bool), 8, 2, window=m.ones(8, dtype=m.bool), return_complex=True),
    lambda m: m.stft(m.ones(1, 1, 20, dtype=m.complex64), 8, 2, window=m.ones(8, dtype=m.uint16),
                     center=False),
    lambda m: m.stft(m.ones(20, dtype=m.int32), 80, 2, center=False, return_complex=True),
    # half-precision frames reach the FFT kernel, past torch.fft's own dtype check
    lambda m: m.stft(m.ones(20, dtype=m.float16), 8, 2, return_complex=True),
    lambda m: m.stft(m.ones(20, dtype=m.bfloat16), 8, 2, window=m.ones(8, dtype=m.bfloat16), return_complex=True),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex32), 8, 2, window=m.ones(8, dtype=m.float16)),
    # a complex signal or window has no one-sided spectrum
    lambda m: m.stft(m.ones(20, dtype=m.complex64), 8, 2, window=m.ones(8), onesided=True, return_complex=True),
    lambda m: m.stft(m.ones(20), 8, 2, window=m.ones(8, dtype=m.complex64), onesided=True, return_complex=True),
    # istft's checks in torch's order, each with its call in the text (an empty one first; then the dims of
    # view_as_real(input): a 1-d spectrum has no bins dim)
    lambda m: m.istft(m.ones(5, 0, dtype=m.complex64), 8, 2, window=m.ones(8)),
    lambda m: m.istft(m.ones(5, dtype=m.complex64), 8, 2, window=m.ones(8)),
    lambda m: m.istft(m.tensor(1j), 8, 2, window=m.ones(8)),
    lambda m: m.istft(m.ones(1, 2, 5, 3, dtype=m.complex64), 8, 2, window=m.ones(8)),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, 2, window=m.ones(8), onesided=False),
    lambda m: m.istft(m.ones(8, 3, dtype=m.complex128), 8, 2, window=m.ones(8), onesided=True, length=9),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, 9, window=m.ones(8)),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, 2, win_length=9),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, 2, window=m.ones(2, 4)),
    lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, 2, window=m.zeros(8), center=False),
    # fftshift's dims as torch wraps them (no dim of a 0-d tensor), and roll's need of a shift
    lambda m: m.fft.fftshift(m.tensor(3.0), dim=-1),
    lambda m: m.fft.ifftshift(m.ones(2, 3), dim=()),
    lambda m: m.roll(m.ones(2, 3), shifts=[]),
    lambda m: m.roll(m.tensor(3.0), 1, 0),
    # istft's checks name the call, the input as its C++ type (CPUComplexFloatType[9, 0])
    lambda m: m.istft(m.ones(9, 0, dtype=m.complex64), 16),
    lambda m: m.istft(m.ones(5, dtype=m.complex64), 16),
    lambda m: m.istft(m.ones(2, 2, 9, 5, dtype=m.complex64), 16),
    lambda m: m.istft(m.ones(8, 5, dtype=m.complex128), 16, window=m.ones(16)),
    lambda m: m.istft(m.ones(8, 5, dtype=m.complex128), 16, window=m.ones(16, dtype=m.float64), onesided=True,
                      length=7, center=False, normalized=True, return_complex=True),
    lambda m: m.istft(m.ones(9, 5, dtype=m.complex64), 16, onesided=False),
    lambda m: m.istft(m.ones(9, 5, dtype=m.complex64), 16, hop_length=0),
    lambda m: m.istft(m.ones(9, 5, dtype=m.complex64), 16, win_length=20),
    lambda m: m.istft(m.ones(9, 5, dtype=m.complex64), 16, window=m.ones(3)),
    lambda m: m.istft(m.ones(9, 5), 16),
]


@pytest.mark.parametrize("call", ERRORS)
def test_errors_as_torch(call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(retrograd)
    assert str(ours.value) == str(theirs.value)


def test_stft_and_istft_without_a_window_warn_as_torch():
    """A rectangular window by default: each warns its own words (once per process, every time under
    set_warn_always), istft before any check of its input; a given window silences both."""
    seen = []
    for lib in (torch, retrograd):
        was = lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                spectrum = lib.stft(lib.ones(64), 16, return_complex=True)
                lib.istft(spectrum, 16)
                with pytest.raises(RuntimeError):
                    lib.istft(spectrum[:3], 16)
                lib.istft(lib.stft(lib.ones(64), 16, window=lib.ones(16), return_complex=True), 16,
                          window=lib.ones(16))
        finally:
            lib.set_warn_always(was)
        seen.append([(w.category, str(w.message)) for w in caught])
    assert seen[1] == seen[0]
    assert len(seen[0]) == 3


def test_out_and_torch_mapping() -> None:
    """`out=` as torch's, and `import torch.fft` under retrograd.run reaching retrograd.fft."""
    out = retrograd.empty(0, dtype=retrograd.complex128)
    result = retrograd.fft.rfft(retrograd.tensor([1.0, 2.0, 3.0, 4.0], dtype=retrograd.float64), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), np.fft.rfft([1.0, 2.0, 3.0, 4.0]))
    code = ("import retrograd.run as r; r.install(); import torch.fft, torch.special; "
            "print(torch.fft.rfft.__module__, torch.special.ndtr.__module__, torch.fft.__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True, text=True)
    assert out.stdout.split() == ["retrograd.ops.fft", "retrograd.ops.special", "retrograd.fft"], out.stderr


@pytest.mark.parametrize("batched", [False, True])
def test_stft_records_torchs_in_place_nodes_and_runs_under_vmap(batched):
    """stft transposes (and squeezes a 1-d signal's batch) in place, as torch: TransposeBackward1 and
    SqueezeBackward4, with torch's gradient; under vmap each signal's spectrum has torch's shape."""
    def scenario(lib):
        x = lib.tensor(np.sin(np.arange(32.0)), requires_grad=True)
        signal = x.reshape(2, 16) if batched else x
        y = lib.stft(signal, 8, return_complex=True)
        (g,) = lib.autograd.grad(y.abs().sum(), x)
        mapped = lib.func.vmap(lambda s: lib.stft(s, 8, return_complex=True))(x.detach().reshape(2, 16))
        return (tuple(y.shape), y.grad_fn.name(), y.grad_fn.next_functions[0][0].name(),
                np.round(g.numpy(), 9).tolist(), tuple(mapped.shape), round(mapped.abs().sum().item(), 9))

    assert scenario(retrograd) == scenario(torch)


def test_stft_takes_a_half_signal_through_a_float_window():
    """The window's product promotes the frames before the FFT: a float16 signal under a float32 window is fine."""
    def spectrum(lib):
        y = lib.stft(lib.arange(20.0).half(), 8, 2, window=lib.hann_window(8), return_complex=True)
        return y.dtype is lib.complex64, np.round(y.abs().numpy(), 3).tolist()

    assert spectrum(retrograd) == spectrum(torch)


def test_stft_and_istft_warn_as_torch():
    """torch warns once per process (every time under set_warn_always) of a missing window, in stft and in
    istft, of stft's deprecated return_complex=False and of an istft length past the last frame (padded with
    zeros); a given window, return_complex=True and a length within the frames are silent."""
    def warned(lib):
        lib.set_warn_always(True)
        signal, window = lib.linspace(-1, 1, 40).reshape(2, 20), lib.hann_window(8)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                lib.stft(signal, 8, 2, return_complex=True)
                lib.stft(signal, 8, 2, window=window, return_complex=False)
                spectrum = lib.stft(signal, 8, 2, window=window, return_complex=True)
                lib.istft(spectrum, 8, 2)
                lib.istft(spectrum, 8, 2, window=window)
                lib.istft(spectrum, 8, 2, window=window, length=20)
                lib.istft(spectrum, 8, 2, window=window, length=25)  # past the last frame: zeros, with a warning
        finally:
            lib.set_warn_always(False)
        return [(w.category, str(w.message)) for w in caught]

    assert len(warned(torch)) == 4
    assert warned(retrograd) == warned(torch)
