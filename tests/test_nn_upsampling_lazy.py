"""Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle, PixelUnshuffle and LazyLinear against
torch: reprs, attributes, forward values and gradients (inputs and parameters), and LazyLinear's materialisation."""

import warnings

import numpy as np
import pytest
import torch

import retrograd


@pytest.fixture
def rng():
    """Each test's own generator, seeded alike: its data does not depend on which tests ran before it."""
    return np.random.default_rng(0)


CASES = [
    ("Upsample", (), dict(scale_factor=2), (1, 2, 3, 4)),
    ("Upsample", (), dict(size=(5, 7), mode="bilinear"), (2, 2, 3, 4)),
    ("Upsample", (), dict(scale_factor=(2, 3), mode="bicubic", align_corners=True), (1, 1, 3, 3)),
    ("Upsample", (), dict(scale_factor=1.5, mode="linear"), (2, 3, 4)),
    ("Upsample", (), dict(size=4, mode="trilinear"), (1, 1, 2, 3, 2)),
    ("UpsamplingNearest2d", (), dict(scale_factor=3), (1, 2, 2, 3)),
    ("UpsamplingBilinear2d", (), dict(size=(4, 6)), (1, 2, 2, 3)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("PixelUnshuffle", (3,), {}, (1, 2, 6, 3)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), CASES)
def test_module_matches_torch(name, args, kwargs, shape, rng):
    t_mod = getattr(torch.nn, name)(*args, **kwargs)
    r_mod = getattr(retrograd.nn, name)(*args, **kwargs)
    assert repr(r_mod) == repr(t_mod)
    assert vars(r_mod).keys() >= {k for k in vars(t_mod) if not k.startswith("_")}
    for key in (k for k in vars(t_mod) if not k.startswith("_") and k != "training"):
        assert getattr(r_mod, key) == getattr(t_mod, key), key
    x = rng.standard_normal(shape)
    t_x, r_x = torch.tensor(x, requires_grad=True), retrograd.tensor(x, requires_grad=True)
    t_out, r_out = t_mod(t_x), r_mod(r_x)
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-7, atol=1e-9)
    w = rng.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (r_out * retrograd.tensor(w)).sum().backward()
    np.testing.assert_allclose(r_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("bias", [True, False])
def test_lazy_linear_materialises_like_torch(bias, rng):
    torch.manual_seed(0)
    t_mod, r_mod = torch.nn.LazyLinear(4, bias=bias), retrograd.nn.LazyLinear(4, bias=bias)
    assert repr(r_mod) == repr(t_mod)
    assert r_mod.has_uninitialized_params()
    x = rng.standard_normal((3, 2, 5)).astype(np.float32)
    t_out = t_mod(torch.tensor(x))
    r_mod.load_state_dict({k: retrograd.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})
    r_out = r_mod(retrograd.tensor(x))
    assert type(r_mod) is retrograd.nn.Linear and type(t_mod) is torch.nn.Linear
    assert repr(r_mod) == repr(t_mod)
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), atol=1e-6)


def test_lazy_linear_first_call_draws_torch_initialisation_bounds():
    r_mod = retrograd.nn.LazyLinear(6)
    r_mod(retrograd.randn(2, 9))
    assert type(r_mod) is retrograd.nn.Linear and r_mod.in_features == 9
    assert tuple(r_mod.weight.shape) == (6, 9) and tuple(r_mod.bias.shape) == (6,)
    bound = 1 / 9 ** 0.5
    assert r_mod.weight.abs().max().item() <= bound and r_mod.bias.abs().max().item() <= bound
    assert r_mod.weight.std().item() > 0.05  # drawn, not left empty
    assert [n for n, _ in r_mod.named_parameters()] == ["weight", "bias"]
    r_mod.weight.sum().backward()
    assert r_mod.weight.grad is not None


RESIZES = [
    ((2, 3, 16, 16), dict(size=(10, 10))),  # torchvision's RandomResizedCrop / Resize on tensors
    ((1, 2, 11, 13), dict(size=(16, 3))),  # up one way, down the other
    ((1, 1, 7, 9), dict(size=(1, 2), align_corners=True)),
    ((1, 2, 13, 10), dict(scale_factor=(0.6, 2.5))),
    ((1, 2, 13, 10), dict(scale_factor=0.3, recompute_scale_factor=True)),
]
ANTIALIASED = [(mode, shape, kwargs) for mode in ("bilinear", "bicubic", "lanczos") for shape, kwargs in RESIZES
               if not (mode == "lanczos" and kwargs.get("align_corners"))]  # lanczos refuses align_corners


@pytest.mark.parametrize(("mode", "shape", "kwargs"), ANTIALIASED)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_interpolate_antialias_matches_torch(mode, shape, kwargs, dtype, rng):
    """antialias=True (a filter stretched over every source pixel when downsampling): values, gradients, grad_fn
    names and a channels_last input's layout as torch's."""
    x = rng.standard_normal(shape).astype(dtype)
    t_x, r_x = torch.tensor(x, requires_grad=True), retrograd.tensor(x, requires_grad=True)
    t_out = torch.nn.functional.interpolate(t_x, mode=mode, antialias=True, **kwargs)
    r_out = retrograd.nn.functional.interpolate(r_x, mode=mode, antialias=True, **kwargs)
    assert type(r_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    assert r_out.dtype == getattr(retrograd, dtype) and r_out.shape == t_out.shape
    # float32: torch rounds its filter weights to float32 and sums them in its own order (values of order 1 in,
    # differences of a few float32 ulps of 1 out)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r_out.detach().numpy(), t_out.detach().numpy(), **tol)
    w = rng.standard_normal(tuple(t_out.shape)).astype(dtype)
    t_out.backward(torch.tensor(w))
    r_out.backward(retrograd.tensor(w))
    np.testing.assert_allclose(r_x.grad.numpy(), t_x.grad.numpy(), **tol)
    t_cl = torch.nn.functional.interpolate(torch.tensor(x).to(memory_format=torch.channels_last), mode=mode,
                                           antialias=True, **kwargs)
    r_cl = retrograd.nn.functional.interpolate(retrograd.tensor(x).to(memory_format=retrograd.channels_last),
                                               mode=mode, antialias=True, **kwargs)
    assert r_cl.is_contiguous(memory_format=retrograd.channels_last) == t_cl.is_contiguous(
        memory_format=torch.channels_last)


@pytest.mark.parametrize(("shape", "mode"), [((1, 1, 8), "linear"), ((1, 1, 8, 8), "nearest"),
                                             ((1, 1, 4, 4, 4), "trilinear"), ((1, 1, 8, 8), "area")])
def test_interpolate_antialias_rejects_other_modes_as_torch(shape, mode):
    with pytest.raises(ValueError) as theirs:
        torch.nn.functional.interpolate(torch.zeros(shape), size=(5,) * (len(shape) - 2), mode=mode, antialias=True)
    with pytest.raises(ValueError) as ours:
        retrograd.nn.functional.interpolate(retrograd.zeros(shape), size=(5,) * (len(shape) - 2), mode=mode,
                                            antialias=True)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(("mode", "antialias"), [("bilinear", False), ("bicubic", False), ("bilinear", True),
                                                 ("bicubic", True), ("lanczos", True)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_interpolate_uint8_images_match_torch_exactly(mode, antialias, channels_last, rng):
    """A uint8 image resized (torchvision's Resize of a tensor) is torch's to the last pixel: fixed-point weights,
    width first, each pass rounded and saturated (Note [uint8 resampling]); uint8 out, the input's layout kept."""
    for h, w, out_h, out_w in [(13, 9, 5, 17), (6, 20, 6, 7), (9, 9, 24, 3)]:
        x = rng.integers(0, 256, (2, 3, h, w)).astype(np.uint8)
        t_x, r_x = torch.tensor(x), retrograd.tensor(x)
        if channels_last:
            t_x, r_x = t_x.to(memory_format=torch.channels_last), r_x.to(memory_format=retrograd.channels_last)
        for corners in (False, True) if mode != "lanczos" else (False,):
            t_out = torch.nn.functional.interpolate(t_x, size=(out_h, out_w), mode=mode, antialias=antialias,
                                                    align_corners=corners)
            r_out = retrograd.nn.functional.interpolate(r_x, size=(out_h, out_w), mode=mode, antialias=antialias,
                                                        align_corners=corners)
            assert r_out.dtype == retrograd.uint8
            np.testing.assert_array_equal(r_out.numpy(), t_out.numpy())
            assert r_out.stride() == t_out.stride()


@pytest.mark.parametrize(("shape", "kwargs"), [
    ((1, 1, 4, 4), dict(mode="lanczos")),
    ((1, 1, 4, 4), dict(mode="lanczos", antialias=True, align_corners=True)),
    ((1, 1, 4), dict(mode="lanczos")),
    ((1, 1, 4), dict(mode="lanczos", antialias=True)),
])
def test_interpolate_lanczos_refuses_as_torch(shape, kwargs):
    with pytest.raises((ValueError, NotImplementedError)) as theirs:
        torch.nn.functional.interpolate(torch.zeros(shape), size=(2,) * (len(shape) - 2), **kwargs)
    with pytest.raises(theirs.type) as ours:
        retrograd.nn.functional.interpolate(retrograd.zeros(shape), size=(2,) * (len(shape) - 2), **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "int64"])
@pytest.mark.parametrize(("ndim", "kwargs"), [
    (4, dict(mode="nearest")), (3, dict(mode="nearest")), (4, dict(mode="nearest-exact")), (4, dict(mode="area")),
    (3, dict(mode="linear")), (4, dict(mode="bilinear")), (4, dict(mode="bicubic")), (5, dict(mode="trilinear")),
    (4, dict(mode="bilinear", antialias=True)), (4, dict(mode="lanczos", antialias=True)),
])
def test_interpolate_integer_dtypes_as_torch(dtype, ndim, kwargs, rng):
    """Integer and bool images: uint8 resampled where torch's kernels take it, the rest refused in torch's words, never
    a silently wrong image."""
    x = rng.integers(0, 2 if dtype == "bool" else 100, (1, 2) + (5,) * (ndim - 2))
    size = (3,) * (ndim - 2)
    try:
        theirs = torch.nn.functional.interpolate(torch.tensor(x).to(getattr(torch, dtype)), size=size, **kwargs)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as ours:
            retrograd.nn.functional.interpolate(retrograd.tensor(x).to(getattr(retrograd, dtype)), size=size, **kwargs)
        assert str(ours.value) == str(e)
        return
    ours = retrograd.nn.functional.interpolate(retrograd.tensor(x).to(getattr(retrograd, dtype)), size=size, **kwargs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_deprecated_upsample_functions_warn_at_the_callers_line_as_torch():
    """F.upsample, upsample_nearest and upsample_bilinear are interpolate under a deprecation warning each call; the
    Upsample modules call interpolate and stay silent."""
    seen = []
    for lib in (torch, retrograd):
        F, image = lib.nn.functional, lib.arange(4.0).reshape(1, 1, 2, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [F.upsample(image, scale_factor=2), F.upsample_nearest(image, size=3),
                    F.upsample_bilinear(image, scale_factor=2), lib.nn.Upsample(scale_factor=2)(image),
                    lib.nn.UpsamplingBilinear2d(scale_factor=2)(image)]
            with pytest.raises(ValueError):
                F.upsample(image)
        seen.append(([(w.category, str(w.message), w.filename) for w in caught], [o.numpy() for o in outs]))
    assert seen[1][0] == seen[0][0]
    assert len(seen[0][0]) == 4 and all(filename == __file__ for _, _, filename in seen[0][0])
    for ours, theirs in zip(seen[1][1], seen[0][1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
