"""bfloat16 tensors against torch's (Note [bfloat16] in retrograd/_dtype.py): the dtype and its promotion, making,
printing and reinterpreting tensors, values of ops computed in float32 and rounded once, gradients, in-place
writes and views, saving and loading in torch's format both ways, CPU autocast, and the errors."""

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import retrograd

pytest.importorskip("ml_dtypes")  # the optional extra retrograd[bfloat16]; the test extra installs it

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128")


def bits(t) -> np.ndarray:
    """A bfloat16 tensor's 16-bit patterns (torch's or ours), as int64 for ulp distances."""
    lib = torch if isinstance(t, torch.Tensor) else retrograd
    return np.asarray(t.detach().view(lib.int16).tolist(), dtype=np.int64).reshape(tuple(t.shape))


def assert_bits(ours, theirs, ulps: int = 0) -> None:
    """Same dtype, same shape, values at most `ulps` bfloat16 steps apart (0: the same bits)."""
    assert str(ours.dtype) == str(theirs.dtype) == "torch.bfloat16"
    distance = np.abs(bits(ours) - bits(theirs))
    assert distance.max(initial=0) <= ulps, f"{distance.max()} ulps apart: {ours} vs {theirs}"


def both(make):
    """make(lib) for retrograd and torch (in this order), after the same seed."""
    out = []
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        out.append(make(lib))
    return out


def test_the_dtype_and_its_limits_are_torchs():
    assert repr(retrograd.bfloat16) == "torch.bfloat16"
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(retrograd.bfloat16, attr) == getattr(torch.bfloat16, attr)
    ours, theirs = retrograd.finfo(retrograd.bfloat16), torch.finfo(torch.bfloat16)
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)
    assert retrograd.ones(3, dtype=retrograd.bfloat16).element_size() == 2


def test_promotion_table_is_torchs():
    for a in DTYPES:
        for b in DTYPES:
            if "bfloat16" not in (a, b):
                continue
            theirs = torch.promote_types(getattr(torch, a), getattr(torch, b))
            assert repr(retrograd.promote_types(getattr(retrograd, a), getattr(retrograd, b))) == repr(theirs), (a, b)


@pytest.mark.parametrize("other", [1.5, 2, True, 1j, "0-d float32", "0-d int64", "float32", "float16", "int32"])
def test_result_type_with_numbers_and_tensors_is_torchs(other):
    def result(lib):
        x = lib.ones(3, dtype=lib.bfloat16)
        if isinstance(other, str):
            zero_d, _, name = other.rpartition(" ")
            y = lib.ones(() if zero_d else 3, dtype=getattr(lib, name))
        else:
            y = other
        return repr(lib.result_type(x, y)), repr((x + y).dtype), repr((y * x).dtype)

    assert result(retrograd) == result(torch)


def test_making_printing_and_reading_tensors():
    values = [1.1, -2.5, 3e38, 1e-40, 1 + 2**-8 + 2**-30, float("inf"), float("nan")]  # the last rounds through float
    ours, theirs = both(lambda lib: lib.tensor(values, dtype=lib.bfloat16))
    assert_bits(ours, theirs)
    assert repr(ours) == repr(theirs)
    assert str(retrograd.zeros(2, 2, dtype=retrograd.bfloat16, requires_grad=True)) == \
        str(torch.zeros(2, 2, dtype=torch.bfloat16, requires_grad=True))
    assert ours[:6].tolist() == theirs[:6].tolist()
    assert ours[1].item() == theirs[1].item() == -2.5
    for lib in (torch, retrograd):
        with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
            lib.ones(2, dtype=lib.bfloat16).numpy()
    for make in (lambda lib: lib.ones(2, 3, dtype=lib.bfloat16), lambda lib: lib.full((2,), 0.3, dtype=lib.bfloat16),
                 lambda lib: lib.arange(5, dtype=lib.bfloat16) / 3, lambda lib: lib.linspace(0, 1, 7).bfloat16(),
                 lambda lib: lib.eye(3).to(lib.bfloat16), lambda lib: lib.ones(3, dtype=lib.float64).to(lib.bfloat16)):
        assert_bits(*both(make))


@pytest.mark.parametrize("n", [3, 15, 16, 37, 1000])
def test_random_draws_are_torchs_bits(n):
    """rand and randn in bfloat16 draw as torch's CPU generator does (float32 arithmetic, rounded), bit for bit."""
    for draw in ("rand", "randn"):
        assert_bits(*both(lambda lib: getattr(lib, draw)(n, dtype=lib.bfloat16)))
    assert_bits(*both(lambda lib: lib.empty(n, dtype=lib.bfloat16).normal_(2.0, 3.0)))
    assert_bits(*both(lambda lib: lib.empty(n, dtype=lib.bfloat16).uniform_(-1.0, 5.0)))


def test_bits_reinterpreted_both_ways():
    ours, theirs = both(lambda lib: lib.tensor([1.5, -0.0, 3.1], dtype=lib.bfloat16))
    assert ours.view(retrograd.int16).tolist() == theirs.view(torch.int16).tolist()
    back = retrograd.tensor([16320, -32768, 16454], dtype=retrograd.int16).view(retrograd.bfloat16)
    assert_bits(back, theirs)
    assert ours.view(retrograd.uint8).tolist() == theirs.view(torch.uint8).tolist()


# Exact: torch's CPU kernel computes each element in float32 and rounds once, as the choke point does.
ELEMENTWISE = {
    "exp": lambda lib, x, y: x.exp(), "tanh": lambda lib, x, y: x.tanh(), "sigmoid": lambda lib, x, y: x.sigmoid(),
    "log": lambda lib, x, y: x.abs().log(), "sqrt": lambda lib, x, y: x.abs().sqrt(), "sin": lambda lib, x, y: x.sin(),
    "reciprocal": lambda lib, x, y: x.reciprocal(),
    "relu": lambda lib, x, y: x.relu(), "gelu": lambda lib, x, y: lib.nn.functional.gelu(x),
    "gelu_tanh": lambda lib, x, y: lib.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda lib, x, y: lib.nn.functional.silu(x), "neg": lambda lib, x, y: -x,
    "add": lambda lib, x, y: x + y, "sub": lambda lib, x, y: x - y, "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / y, "pow": lambda lib, x, y: x.abs() ** y, "square": lambda lib, x, y: x ** 2,
    "add_number": lambda lib, x, y: x + 1.1, "mul_number": lambda lib, x, y: x * 0.3, "rsub": lambda lib, x, y: 2.7 - x,
    "add_alpha": lambda lib, x, y: lib.add(x, y, alpha=0.25), "maximum": lambda lib, x, y: lib.maximum(x, y),
    "div_number": lambda lib, x, y: x / 0.3, "add_int": lambda lib, x, y: x + 257,
    "pow_number": lambda lib, x, y: x.abs() ** 1.3,
    "clamp": lambda lib, x, y: x.clamp(-0.5, 0.5), "where": lambda lib, x, y: lib.where(x > 0, x, y),
    "with_int": lambda lib, x, y: x + lib.arange(x.shape[-1]), "lerp": lambda lib, x, y: lib.lerp(x, y, 0.3),
    "addcmul": lambda lib, x, y: lib.addcmul(x, x, y, value=0.5), "nextafter": lambda lib, x, y: lib.nextafter(x, y),
}
# Within one ulp: a float32 sum (reductions, matmul, normalisation) whose order of additions differs from
# torch's vectorised kernels can land on the other side of a bfloat16 rounding boundary; so can torch's
# vectorised rsqrt and integer powers, which are not correctly rounded in float32, and its add with an alpha,
# whose scalar tail loop rounds alpha * other to bfloat16 before adding.
ACCUMULATING = {
    "add_alpha_0.3": lambda lib, x, y: lib.add(x, y, alpha=0.3),
    "sum": lambda lib, x, y: x.sum(1), "mean": lambda lib, x, y: x.mean(0), "rsqrt": lambda lib, x, y: x.abs().rsqrt(),
    "cube": lambda lib, x, y: x ** 3,
    "cumsum": lambda lib, x, y: x.cumsum(1), "var": lambda lib, x, y: x.var(1), "norm": lambda lib, x, y: x.norm(),
    "softmax": lambda lib, x, y: x.softmax(-1), "log_softmax": lambda lib, x, y: x.log_softmax(-1),
    "matmul": lambda lib, x, y: x @ y.T, "linear": lambda lib, x, y: lib.nn.functional.linear(x, y, y[:, 0]),
    "layer_norm": lambda lib, x, y: lib.nn.functional.layer_norm(x, (x.shape[-1],), y[0], y[1]),
    "cross_entropy": lambda lib, x, y: lib.nn.functional.cross_entropy(x, lib.tensor([0, 1, 2, 3, 4])),
    "logsumexp": lambda lib, x, y: x.logsumexp(1), "max": lambda lib, x, y: x.amax(1),
}


def _operands(lib):
    x = lib.randn(5, 16).to(lib.bfloat16)
    return x, lib.randn(5, 16).to(lib.bfloat16) + 0.5


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_values_are_torchs_bits(name):
    assert_bits(*both(lambda lib: ELEMENTWISE[name](lib, *_operands(lib))))


@pytest.mark.parametrize("name", sorted(ACCUMULATING))
def test_accumulating_values_are_within_one_ulp_of_torchs(name):
    assert_bits(*both(lambda lib: ACCUMULATING[name](lib, *_operands(lib))), ulps=1)


def test_products_are_within_a_few_ulps_of_torchs():
    """torch's CPU prod reduces in bfloat16 itself (each partial product rounded); retrograd's, in float32, is
    the more accurate, a few bfloat16 ulps away over 16 factors."""
    assert_bits(*both(lambda lib: _operands(lib)[0].prod(1)), ulps=4)


def test_sums_accumulate_in_float32():
    """A sum NumPy would run in bfloat16 (ml_dtypes' add) stalls at 256 + 1 = 256; torch's, in float32, does not."""
    for lib in (torch, retrograd):
        assert lib.ones(1024, dtype=lib.bfloat16).sum().item() == 1024
        assert (lib.ones(1, 1024, dtype=lib.bfloat16) @ lib.ones(1024, 1, dtype=lib.bfloat16)).item() == 1024


def test_bfloat16_as_the_default_dtype():
    """Numbers and integer tensors promote to the default dtype: bfloat16, computed as any bfloat16 op."""
    def made(lib):
        lib.set_default_dtype(lib.bfloat16)
        try:
            ints = lib.arange(5)
            return [lib.tensor([1.1, 2.0]), ints * 1.1, ints + 1.1, ints.exp(), ints / 3, lib.randn(4),
                    lib.nn.Linear(2, 2).weight.detach()]
        finally:
            lib.set_default_dtype(lib.float32)

    for ours, theirs in zip(*both(made)):
        assert_bits(ours, theirs)


def test_a_dtype_argument_keeps_its_dtype():
    for make in (lambda lib: lib.ones(3, dtype=lib.bfloat16).sum(dtype=lib.float32),
                 lambda lib: lib.ones(3, dtype=lib.bfloat16).to(lib.float64) / 3,
                 lambda lib: lib.ones(3, dtype=lib.bfloat16).softmax(0, dtype=lib.float32),
                 lambda lib: lib.ones(3, dtype=lib.bfloat16) + lib.ones(3) / 3,
                 lambda lib: (lib.ones(3, dtype=lib.bfloat16) * 3.3).int()):
        ours, theirs = both(make)
        assert str(ours.dtype) == str(theirs.dtype) and ours.tolist() == theirs.tolist()


def _mlp(lib):
    """Linear, layer norm, gelu, softmax and cross entropy in bfloat16, with its gradients."""
    x = lib.randn(6, 8).to(lib.bfloat16).requires_grad_()
    first, second = lib.nn.Linear(8, 16).bfloat16(), lib.nn.Linear(16, 4).bfloat16()
    norm = lib.nn.LayerNorm(16).bfloat16()
    logits = second(lib.nn.functional.gelu(norm(first(x))))
    loss = lib.nn.functional.cross_entropy(logits, lib.tensor([0, 1, 2, 3, 0, 1])) + logits.softmax(-1)[:, 0].sum()
    loss.backward()
    names = [loss.grad_fn.name(), logits.grad_fn.name(), x.grad.dtype, first.weight.grad.dtype]
    return loss, names, [x.grad, first.weight.grad, first.bias.grad, norm.weight.grad, second.weight.grad]


def test_mlp_forward_and_gradients_in_bfloat16():
    """The forward is torch's to one ulp (accumulations). Gradients come out of formulas written as several ops,
    each rounded to bfloat16, where torch runs some backward kernels (layer norm's, log_softmax's) in float32 and
    rounds once: they agree to a few bfloat16 ulps of the gradient's scale."""
    (loss, names, grads), (tloss, tnames, tgrads) = both(_mlp)
    assert_bits(loss, tloss, ulps=1)
    assert [str(n) for n in names] == [str(n) for n in tnames]
    for ours, theirs in zip(grads, tgrads):
        assert str(ours.dtype) == "torch.bfloat16" and ours.shape == theirs.shape
        scale = theirs.float().abs().max().item()
        np.testing.assert_allclose(ours.float().tolist(), theirs.float().tolist(), rtol=0, atol=8 * 2**-8 * scale)


def test_gradients_of_single_ops_are_torchs_bits():
    """Where torch's backward is the formula's own op (mul, matmul, sum, exp, tanh, sigmoid), the bits agree."""
    def gradients(lib):
        x, y = (t.requires_grad_() for t in _operands(lib))
        out = (x * y).tanh().exp() + (x @ y.T).sum(1, keepdim=True) + y.sigmoid()
        out.backward(lib.randn(out.shape).to(lib.bfloat16))
        return x.grad, y.grad

    (gx, gy), (tgx, tgy) = both(gradients)
    assert_bits(gx, tgx, ulps=1)
    assert_bits(gy, tgy, ulps=1)


def test_in_place_writes_and_views():
    def written(lib):
        x = lib.randn(4, 3).to(lib.bfloat16)
        y = x.clone()
        y.add_(1.1)
        y[0] = 7.7
        y[1:, 1].mul_(x[1:, 0])
        y.T[2].sub_(0.3)
        out = lib.empty(3, dtype=lib.bfloat16)
        lib.exp(x[0], out=out)
        z = lib.zeros(3, dtype=lib.bfloat16)
        z += 0.1
        return y, out, z, y._version

    ours, theirs = both(written)
    for a, b in zip(ours[:3], theirs[:3]):
        assert_bits(a, b)
    assert ours[3] == theirs[3]


def test_saved_by_torch_loaded_by_retrograd_and_back():
    state = {"w": torch.tensor([[1.1, -2.5], [3e38, 1e-40]], dtype=torch.bfloat16)[:, 1], "step": 3}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    for weights_only in (True, False):
        loaded = retrograd.load(io.BytesIO(buffer.getvalue()), weights_only=weights_only)
        assert loaded["step"] == 3
        assert_bits(loaded["w"], state["w"])
    module = retrograd.nn.Linear(3, 2).bfloat16()
    buffer = io.BytesIO()
    retrograd.save({"model": module.state_dict(), "view": module.weight.detach()[1:]}, buffer)
    theirs = torch.load(io.BytesIO(buffer.getvalue()))
    assert_bits(module.weight.detach(), theirs["model"]["weight"])
    assert_bits(module.bias.detach(), theirs["model"]["bias"])
    assert_bits(module.weight.detach()[1:], theirs["view"])


def test_cpu_autocast_runs_torchs_listed_ops_in_bfloat16():
    def autocast_step(lib):
        layer, x = lib.nn.Linear(8, 4), lib.randn(5, 8, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            enabled = lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled()
            y = layer(x)
            product = x @ x.T
            pointwise = x.exp()
            loss = lib.nn.functional.mse_loss(y, lib.zeros(5, 4))
            with lib.autocast("cpu", enabled=False):
                inner = x @ x.T
        outside = x @ x.T
        loss.backward()
        dtypes = [y.dtype, product.dtype, pointwise.dtype, loss.dtype, inner.dtype, outside.dtype, x.grad.dtype]
        return enabled, [str(d) for d in dtypes], y.grad_fn.name(), y, loss, x.grad, layer.weight.grad

    ours, theirs = both(autocast_step)
    assert ours[:3] == theirs[:3]
    assert_bits(ours[3], theirs[3], ulps=1)
    np.testing.assert_allclose(ours[4].item(), theirs[4].item(), rtol=2**-7)
    for a, b in zip(ours[5:], theirs[5:]):
        np.testing.assert_allclose(a.tolist(), b.tolist(), rtol=2**-6, atol=2**-6 * b.abs().max().item())


def test_cpu_autocast_training_step_of_an_mlp():
    """Linears in bfloat16 with float32 weights, cross entropy in float32 (torch runs the whole loss in float32,
    log_softmax included), a float64 product left alone, conv and bmm of mixed inputs in bfloat16."""
    def step(lib):
        model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
        x = lib.randn(5, 8)
        with lib.autocast("cpu"):
            logits = model(x)
            loss = lib.nn.functional.cross_entropy(logits, lib.tensor([0, 1, 2, 3, 0]))
            batched = lib.bmm(lib.randn(2, 3, 4), lib.randn(2, 4, 5).bfloat16())
            conv = lib.nn.functional.conv1d(lib.randn(1, 2, 5), lib.randn(3, 2, 2))
            double = lib.randn(3, 3).double() @ lib.randn(3, 3).double()
        loss.backward()
        dtypes = [str(t.dtype) for t in (logits, loss, batched, conv, double, model[0].weight.grad)]
        return dtypes, loss, model[0].weight.grad, logits, batched

    ours, theirs = both(step)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1].item(), theirs[1].item(), rtol=1e-6)
    np.testing.assert_allclose(ours[2].tolist(), theirs[2].tolist(), rtol=1e-5, atol=1e-6)
    assert_bits(ours[3], theirs[3], ulps=1)
    assert_bits(ours[4], theirs[4], ulps=1)


def test_cpu_autocast_to_an_unsupported_dtype_disables_itself_with_torchs_warning():
    def caught(lib):
        with warnings.catch_warnings(record=True) as found:
            warnings.simplefilter("always")
            with lib.autocast("cpu", dtype=lib.float64):
                enabled = lib.is_autocast_enabled("cpu")
        return enabled, [str(w.message) for w in found]

    assert caught(retrograd) == caught(torch)


def test_without_ml_dtypes_a_bfloat16_tensor_names_the_extra_and_import_stays_numpy_only():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import retrograd\n"
            "assert retrograd.bfloat16.is_floating_point\n"
            "try:\n"
            "    retrograd.ones(2).bfloat16()\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'retrograd[bfloat16]'" in out
    loaded = subprocess.run([sys.executable, "-c", "import sys, retrograd; print('ml_dtypes' in sys.modules)"],
                            capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"


def test_another_array_namespace_has_no_bfloat16():
    array_api_strict = pytest.importorskip("array_api_strict")
    from retrograd import _xp

    with _xp.use("cuda", array_api_strict, (array_api_strict.Device("device1"),)):
        for make in (lambda: retrograd.ones(2, dtype=retrograd.bfloat16, device="cuda"),
                     lambda: retrograd.ones(2, dtype=retrograd.bfloat16).cuda(),
                     lambda: retrograd.ones(2, device="cuda").bfloat16()):
            with pytest.raises(RuntimeError, match="array_api_strict has no bfloat16; keep them on the CPU"):
                make()
