"""The convolution kernels' layouts (ops/conv.py, Notes [flat rows] and [batch parts]) against torch: batches
split in parts, flat rows with their junk positions, and non-finite inputs, whose junk reads must not leak
into the weight gradient."""

import warnings

import numpy as np
import pytest
import torch

import retrograd
import retrograd.ops.conv as conv

LIBS = (torch, retrograd)


def conv_grads(lib, x, w, b, **kwargs):
    """Output and the gradients of x, w, b for a fixed cotangent."""
    x, w, b = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
    y = lib.nn.functional.conv2d(x, w, b, **kwargs)
    cotangent = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(x.detach().numpy().dtype))
    y.backward(cotangent)
    return [t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)]


@pytest.mark.parametrize("kwargs", [{"padding": 1}, {"padding": (2, 0), "dilation": 2}, {"stride": 2, "padding": 1},
                                    {"padding": 1, "groups": 2}])
@pytest.mark.parametrize("part_bytes", [1, 1 << 12, 1 << 30])
def test_batch_parts_match_torch(monkeypatch, kwargs, part_bytes):
    """Any split of the batch (one sample per part, a few, all at once) gives torch's values."""
    monkeypatch.setattr(conv, "_PART_BYTES", part_bytes)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 8, 9, 7))
    w = rng.standard_normal((6, 8 // kwargs.get("groups", 1), 3, 3))
    b = rng.standard_normal(6)
    for ours, theirs in zip(conv_grads(retrograd, x, w, b, **kwargs), conv_grads(torch, x, w, b, **kwargs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


ROW_STACKED = [((3, 3), {"padding": 1}), ((3, 3), {"padding": (2, 0), "dilation": 2}),
               ((2, 5), {"padding": (1, 2), "dilation": (2, 1)}), ((4, 1), {})]


@pytest.mark.parametrize("kernel, kwargs", ROW_STACKED)
@pytest.mark.parametrize("part_bytes", [1, 1 << 30])
def test_row_stacked_columns_match_torch(monkeypatch, kernel, kwargs, part_bytes):
    """Note [row-stacked columns]: 16 channels in and out take that path forward and backward; any kernel shape,
    dilation and padding, and any split of the batch, give torch's values."""
    monkeypatch.setattr(conv, "_PART_BYTES", part_bytes)
    stacked_products = []
    product = conv._stacked_product_into
    monkeypatch.setattr(conv, "_stacked_product_into", lambda *args: stacked_products.append(product(*args)))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 16, 7, 9))
    w = rng.standard_normal((16, 16, *kernel))
    b = rng.standard_normal(16)
    for ours, theirs in zip(conv_grads(retrograd, x, w, b, **kwargs), conv_grads(torch, x, w, b, **kwargs)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
    assert len(stacked_products) >= 2  # the forward's and the backward's


@pytest.mark.parametrize("channels", [(8, 4), (16, 16)])  # flat rows; row-stacked columns
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_input_stays_where_torch_puts_it(bad, channels):
    """A non-finite input element reaches the same outputs and weight-gradient entries as in torch; the junk
    positions of flat rows (which read it too) are never multiplied into the result."""
    c, f = channels
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, c, 6, 6))
    x[1, 3, 2, 5] = bad  # the last column: the junk positions at the end of the row before read it
    w = rng.standard_normal((f, c, 3, 3))
    b = rng.standard_normal(f)
    for ours, theirs in zip(conv_grads(retrograd, x, w, b, padding=1), conv_grads(torch, x, w, b, padding=1)):
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
        finite = np.isfinite(theirs)
        np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("channels", [(6, 5), (16, 16)])  # flat rows; row-stacked columns
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_gradient_stays_where_torch_puts_it(bad, channels):
    """A non-finite incoming gradient reaches the same input- and weight-gradient entries as in torch, NaN where
    it meets x's zero padding (Note [one im2col for both gradients]: then the two kernels run separately)."""
    c, f = channels
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, c, 6, 6))
    w = rng.standard_normal((f, c, 3, 3))
    g = rng.standard_normal((2, f, 6, 6))
    g[0, 2, 3, 5] = bad  # the last column: junk positions of the row before read it
    grads = []
    for lib in LIBS:
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        lib.nn.functional.conv2d(xt, wt, padding=1).backward(lib.tensor(g))
        grads.append([xt.grad.numpy(), wt.grad.numpy()])
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
        finite = np.isfinite(theirs)
        np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-10, atol=1e-10)


def complex_grads(lib, fn, x, w, g, v):
    """First-order gradients of (x, w) for the cotangent g, and the gradients of <grads, v> (double backward)."""
    x, w = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
    y = fn(lib, x, w)
    gx, gw = lib.autograd.grad(y, (x, w), lib.tensor(g), create_graph=True)
    inner = (gx * lib.tensor(v[0])).sum() + (gw * lib.tensor(v[1])).sum()
    second = lib.autograd.grad(inner.real, (x, w))
    return [t.detach().numpy() for t in (y, gx, gw, *second)]


@pytest.mark.parametrize("name, fn, shapes", [
    ("conv2d", lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1), ((2, 4, 5, 5), (3, 4, 3, 3))),
    ("conv_transpose2d", lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2, padding=1),
     ((2, 3, 3, 3), (3, 4, 3, 3))),
    ("conv_transpose2d_stride1", lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, padding=1),
     ((2, 3, 4, 4), (3, 4, 3, 3))),
])
def test_complex_gradients_match_torch(name, fn, shapes):
    """Complex convolutions: the gradients conjugate the other factor (torch's convention), at every order."""
    rng = np.random.default_rng(2)

    def z(shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    x, w = z(shapes[0]), z(shapes[1])
    y_shape = tuple(fn(torch, torch.tensor(x), torch.tensor(w)).shape)
    g, v = z(y_shape), (z(shapes[0]), z(shapes[1]))
    for ours, theirs in zip(complex_grads(retrograd, fn, x, w, g, v), complex_grads(torch, fn, x, w, g, v)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


LAYOUT_CASES = {
    "conv stride 2 padded": lambda F, a: F.conv2d(a, a.new_ones(2, 3, 3, 3), stride=2, padding=1),
    "conv grouped padded": lambda F, a: F.conv2d(a, a.new_ones(3, 1, 3, 3), stride=2, padding=1, groups=3),
    "conv_transpose padded": lambda F, a: F.conv_transpose2d(a, a.new_ones(3, 2, 4, 4), stride=2, padding=1),
    "conv_transpose output padding": lambda F, a: F.conv_transpose2d(a, a.new_ones(3, 2, 3, 3), stride=2, padding=1,
                                                                     output_padding=1),
    "avg_pool padded": lambda F, a: F.avg_pool2d(a, 3, stride=2, padding=1),
    "fold padded": lambda F, a: F.fold(F.unfold(a, 2, padding=1), (4, 4), 2, padding=1),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_outputs_and_input_gradients_are_contiguous_as_torchs(case):
    """Padded kernels compute in a padded buffer; what they hand back is contiguous, as torch's is, so `.view` on it
    works (WGAN-GP's gradient penalty views the input gradient of a strided, padded conv)."""
    def layouts(lib):
        x = lib.tensor(np.linspace(-1, 1, 96).reshape(2, 3, 4, 4), requires_grad=True)
        y = LAYOUT_CASES[case](lib.nn.functional, x)
        (g,) = lib.autograd.grad(y, x, lib.ones_like(y), create_graph=True)
        return [(t.is_contiguous(), t.stride(), t.view(t.size(0), -1).shape) for t in (y, g)]

    assert layouts(retrograd) == layouts(torch)


def test_same_padding_with_an_odd_total_warns_as_torch():
    """padding='same' pads asymmetrically where dilation * (kernel - 1) is odd (an even kernel, odd dilation);
    torch warns of the copy that costs, once per process, and not for symmetric padding."""
    def warned(lib):
        lib.set_warn_always(True)
        x = lib.ones(1, 2, 9)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for kernel, dilation in ((3, 1), (4, 2), (4, 1), (2, 3)):
                    lib.nn.functional.conv1d(x, lib.ones(2, 2, kernel), padding="same", dilation=dilation)
                lib.nn.functional.conv2d(lib.ones(1, 1, 5, 5), lib.ones(1, 1, 3, 2), padding="same")
        finally:
            lib.set_warn_always(False)
        return [(w.category, str(w.message), w.filename) for w in caught]

    assert len(warned(torch)) == 3
    assert warned(retrograd) == warned(torch)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "uint16", "uint64", "complex64"])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_non_constant_padding_of_every_dtype_as_torch(dims, mode, dtype):
    """Circular padding is copies of slices in torch, so it takes every dtype; the reflection and replication
    kernels have no boolean nor wide unsigned version and refuse them with torch's text."""
    def padded(lib):
        x = lib.arange(1 * 2 * 5 ** dims).reshape(1, 2, *[5] * dims).to(getattr(lib, dtype))
        try:
            y = lib.nn.functional.pad(x, (2, 1) * dims, mode=mode)
        except NotImplementedError as error:
            return str(error)
        return y.dtype is x.dtype, y.to(lib.int64).tolist() if dtype != "complex64" else y.real.tolist()

    assert padded(retrograd) == padded(torch)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_transposed_output_padding_refusal_as_torch(d):
    """An output padding as large as both stride and dilation is refused; torch names a 1-d convolution's numbers
    as those of the 2-d one of height 1 it runs."""
    def refusal(lib):
        fn = getattr(lib.nn.functional, f"conv_transpose{d}d")
        with pytest.raises(RuntimeError) as info:
            fn(lib.ones(1, 2, *[5] * d), lib.ones(2, 1, *[3] * d), stride=2, dilation=(1,) * (d - 1) + (3,),
               output_padding=(0,) * (d - 1) + (3,))
        return str(info.value)

    assert refusal(retrograd) == refusal(torch)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape", [(1, 1, 0), (1, 0, 5), (0, 1, 5), (1, 0), (0, 5), (1, 1, 5, 0), (0, 1, 5, 5, 5)])
def test_non_constant_padding_of_empty_inputs_as_torch(shape, mode):
    """Reflection and replication pad refuse an empty dim other than the batch's before their padding-size check;
    circular padding copies slices of whatever is there."""
    def padded(lib):
        x = lib.ones(shape)
        try:
            return tuple(lib.nn.functional.pad(x, (1, 1) * (x.ndim - 2 if x.ndim > 2 else 1), mode=mode).shape)
        except RuntimeError as error:
            return str(error)

    assert padded(retrograd) == padded(torch)


class _FreshMemory:
    """A namespace other than NumPy whose arrays carry NumPy's dtypes, as CuPy's do, and whose `empty` is
    memory holding garbage (NaN here), as a GPU's fresh memory may."""

    @staticmethod
    def empty(shape, dtype, device):
        return np.full(shape, np.nan, dtype=dtype)


def test_another_librarys_padding_is_written_after_a_numpy_request_of_its_shape():
    """The scratch buffer's border is NumPy's alone: after NumPy's padded copy of a shape, another library's
    padded copy of the same shape writes its own border (its memory is fresh; CuPy's conv1d read garbage there)."""
    x = np.arange(6.0).reshape(1, 2, 3)
    expected = np.pad(x, ((0, 0), (0, 0), (2, 2)))
    np.testing.assert_array_equal(conv._padded(np, x, ((2, 2),), 0.0, "pad"), expected)
    np.testing.assert_array_equal(conv._padded(_FreshMemory, x, ((2, 2),), 0.0, "pad"), expected)
    np.testing.assert_array_equal(conv._padded(np, x, ((2, 2),), 0.0, "pad"), expected)
