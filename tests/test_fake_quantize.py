"""Fake quantization, the op of quantization-aware training: torch.fake_quantize_per_tensor_affine and
fake_quantize_per_channel_affine against torch, bit for bit (values, straight-through gradients, nodes, saved
mask) and with torch's errors."""

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)


def _run(lib, dtype, quantize, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal(shape) * 2, dtype=getattr(lib, dtype), requires_grad=True)
    out = quantize(lib, x)
    mask = out.grad_fn._saved_mask.numpy()
    out.backward(lib.tensor(rng.standard_normal(shape), dtype=getattr(lib, dtype)))
    return (out.detach().double().numpy(), x.grad.double().numpy(), type(out.grad_fn).__name__, mask,
            out.dtype == getattr(lib, dtype))


PER_TENSOR = {
    "numbers": lambda lib, x: lib.fake_quantize_per_tensor_affine(x, 0.037, 3, -64, 63),
    "tensor qparams": lambda lib, x: lib.fake_quantize_per_tensor_affine(x, lib.tensor(0.05), lib.tensor(-2), -8, 7),
    "unsigned range": lambda lib, x: lib.fake_quantize_per_tensor_affine(x, 0.1, 128, 0, 255),
}
PER_CHANNEL = {
    "int32 zero points": lambda lib, x: lib.fake_quantize_per_channel_affine(
        x, lib.tensor([0.1, 0.2, 0.3, 0.05, 0.7]), lib.tensor([0, 1, -1, 2, -3], dtype=lib.int32), 1, -8, 7),
    "float zero points": lambda lib, x: lib.fake_quantize_per_channel_affine(
        x, lib.tensor([0.1, 0.2, 0.3, 0.05, 0.7]), lib.tensor([0.5, 1.0, -1.25, 2.0, -3.0]), 1, -8, 7),
    "last axis": lambda lib, x: lib.fake_quantize_per_channel_affine(
        x, lib.tensor([0.25, 0.125, 0.5, 0.3]), lib.tensor([0, 0, 1, -1], dtype=lib.int32), 2, -128, 127),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("case", PER_TENSOR)
def test_per_tensor_matches_torch_bit_for_bit(case, dtype):
    theirs, ours = (_run(lib, dtype, PER_TENSOR[case], (40, 25)) for lib in LIBS)
    for a, b in zip(theirs, ours):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("case", PER_CHANNEL)
def test_per_channel_matches_torch_bit_for_bit(case):
    theirs, ours = (_run(lib, "float32", PER_CHANNEL[case], (3, 5, 4)) for lib in LIBS)
    for a, b in zip(theirs, ours):
        np.testing.assert_array_equal(b, a)


REFUSED = {
    "quant_min above quant_max": lambda lib: lib.fake_quantize_per_tensor_affine(lib.ones(3), 0.1, 0, 8, 7),
    "zero point out of range": lambda lib: lib.fake_quantize_per_tensor_affine(lib.ones(3), 0.1, 9, -8, 7),
    "integer input": lambda lib: lib.fake_quantize_per_tensor_affine(lib.ones(3, dtype=lib.int64), 0.1, 0, -8, 7),
    "int64 zero points": lambda lib: lib.fake_quantize_per_channel_affine(
        lib.ones(2, 3), lib.ones(3), lib.zeros(3, dtype=lib.int64), 1, -8, 7),
    "negative axis": lambda lib: lib.fake_quantize_per_channel_affine(
        lib.ones(2, 3), lib.ones(3), lib.zeros(3, dtype=lib.int32), -1, -8, 7),
    "too few channels": lambda lib: lib.fake_quantize_per_channel_affine(
        lib.ones(2, 3), lib.ones(2), lib.zeros(2, dtype=lib.int32), 1, -8, 7),
}


@pytest.mark.parametrize("case", REFUSED)
def test_bad_arguments_raise_torchs_error(case):
    caught = []
    for lib in LIBS:
        with pytest.raises(Exception) as error:
            REFUSED[case](lib)
        caught.append((type(error.value), str(error.value).splitlines()[0]))
    assert caught[0] == caught[1]


def test_under_vmap_each_example_is_quantized_alone():
    """vmap's elementwise rule (the per-channel scales broadcast from the right, past the batch dim) gives what
    each example gives alone, values and straight-through gradients."""
    rng = np.random.default_rng(3)
    x = retrograd.tensor(rng.standard_normal((4, 3, 5)), dtype=retrograd.float32)
    scale, zero = retrograd.tensor([0.1, 0.2, 0.3]), retrograd.tensor([0, 1, -1], dtype=retrograd.int32)

    def per_channel(v):
        return retrograd.fake_quantize_per_channel_affine(v, scale, zero, 0, -8, 7)

    def per_tensor(v):
        return retrograd.fake_quantize_per_tensor_affine(v, 0.1, 2, -8, 7)

    for quantize in (per_channel, per_tensor):
        slope_of = retrograd.func.grad(lambda v, quantize=quantize: quantize(v).sum())
        batched, slopes = retrograd.func.vmap(quantize)(x), retrograd.func.vmap(slope_of)(x)
        for k in range(x.shape[0]):
            np.testing.assert_array_equal(batched[k].numpy(), quantize(x[k]).numpy())
            np.testing.assert_array_equal(slopes[k].numpy(), slope_of(x[k]).numpy())
