"""Operands of dtypes the kernel does not take, against torch (found through an integer attention mask): each
product names the dtypes in the words of the kernel torch's matmul reaches (mm, mv through addmv, bmm, baddbmm),
scaled_dot_product_attention validates its inputs before either path (an integer mask is refused, never added), and
softmax / log_softmax refuse integers, bools and complex numbers by the kernel torch picks. Each case compares the
result's dtype and values, or the exception's type and message."""

import warnings

import numpy as np
import pytest
import torch

import retrograd


def _outcome(fn):
    """('ok', dtype, values) or (exception type, message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return type(e).__name__, str(e)
    return "ok", str(out.dtype), out.tolist()


def _ones(lib, *shape, dtype="float32", grad=False):
    return lib.ones(shape, dtype=getattr(lib, dtype), requires_grad=grad)


PRODUCTS = {
    "mm": lambda lib: lib.mm(_ones(lib, 2, 2), _ones(lib, 2, 2, dtype="float64")),
    "mv": lambda lib: lib.mv(_ones(lib, 2, 2), _ones(lib, 2, dtype="float64")),
    "mv long matrix": lambda lib: lib.mv(_ones(lib, 2, 2, dtype="int64"), _ones(lib, 2)),
    "bmm": lambda lib: lib.bmm(_ones(lib, 2, 2, 2), _ones(lib, 2, 2, 2, dtype="float64")),
    "bmm complex": lambda lib: lib.bmm(_ones(lib, 2, 2, 2, dtype="complex64"), _ones(lib, 2, 2, 2)),
    "matmul 1@1": lambda lib: _ones(lib, 2) @ _ones(lib, 2, dtype="float64"),
    "matmul 1@2": lambda lib: _ones(lib, 2) @ _ones(lib, 2, 2, dtype="float64"),
    "matmul 2@1": lambda lib: _ones(lib, 2, 2) @ _ones(lib, 2, dtype="float64"),
    "matmul 3@3": lambda lib: _ones(lib, 2, 2, 2) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul 4@4": lambda lib: _ones(lib, 1, 2, 2, 2) @ _ones(lib, 1, 2, 2, 2, dtype="float64"),
    "matmul 3@2": lambda lib: _ones(lib, 2, 2, 2) @ _ones(lib, 2, 2, dtype="float64"),
    "matmul 3@1": lambda lib: _ones(lib, 2, 2, 2) @ _ones(lib, 2, dtype="float64"),
    "matmul 4@2": lambda lib: _ones(lib, 2, 2, 2, 2) @ _ones(lib, 2, 2, dtype="float64"),
    "matmul 2@3": lambda lib: _ones(lib, 2, 2) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul 2@4": lambda lib: _ones(lib, 2, 2) @ _ones(lib, 2, 2, 2, 2, dtype="float64"),
    "matmul 1@3": lambda lib: _ones(lib, 2) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul 2 (grad) @3": lambda lib: _ones(lib, 2, 2, grad=True) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul 1 (grad) @3": lambda lib: _ones(lib, 2, grad=True) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul 2@3 (grad)": lambda lib: _ones(lib, 2, 2) @ _ones(lib, 2, 2, 2, dtype="float64", grad=True),
    "matmul 3 (grad) @3": lambda lib: _ones(lib, 2, 2, 2, grad=True) @ _ones(lib, 2, 2, 2, dtype="float64"),
    "matmul batch of one (grad) @3": lambda lib: _ones(lib, 1, 2, 2, grad=True) @ _ones(lib, 3, 2, 2, dtype="float64"),
    "matmul 3 @ batch of one (grad)": lambda lib: _ones(lib, 3, 2, 2) @ _ones(lib, 1, 2, 2, dtype="float64", grad=True),
    "baddbmm input": lambda lib: lib.baddbmm(_ones(lib, 2, 2, 2), _ones(lib, 2, 2, 2, dtype="float64"),
                                            _ones(lib, 2, 2, 2, dtype="float64")),
    "baddbmm batch2": lambda lib: lib.baddbmm(_ones(lib, 2, 2, 2), _ones(lib, 2, 2, 2),
                                             _ones(lib, 2, 2, 2, dtype="float64")),
    "baddbmm batch1": lambda lib: lib.baddbmm(_ones(lib, 2, 2, 2), _ones(lib, 2, 2, 2, dtype="float64"),
                                             _ones(lib, 2, 2, 2)),
    "baddbmm long input": lambda lib: lib.baddbmm(_ones(lib, 2, 2, dtype="int64"), _ones(lib, 2, 2, 2),
                                                 _ones(lib, 2, 2, 2)),
    "addbmm": lambda lib: lib.addbmm(_ones(lib, 2, 2), _ones(lib, 2, 2, 2, dtype="float64"),
                                     _ones(lib, 2, 2, 2, dtype="float64")),
}


@pytest.mark.parametrize("case", PRODUCTS)
def test_products_name_mismatched_dtypes_in_the_words_of_torchs_kernel(case):
    assert _outcome(lambda: PRODUCTS[case](retrograd)) == _outcome(lambda: PRODUCTS[case](torch))


def _attention(lib, dtype="float32", key_dtype=None, mask_dtype=None, shape=(1, 1, 2, 4), **kwargs):
    q = lib.arange(8.).view(1, 1, 2, 4).to(getattr(lib, dtype)).reshape(shape) / 8
    k = q.to(getattr(lib, key_dtype)) if key_dtype else q
    mask = None if mask_dtype is None else lib.tensor([[1, 0], [1, 1]]).to(getattr(lib, mask_dtype))
    return lib.nn.functional.scaled_dot_product_attention(q, k, q, attn_mask=mask, **kwargs)


ATTENTION = {
    "uint8 mask": dict(mask_dtype="uint8"), "int64 mask": dict(mask_dtype="int64"),
    "int32 mask, causal": dict(mask_dtype="int32", is_causal=True), "uint8 mask, 3-d": dict(mask_dtype="uint8",
                                                                                           shape=(1, 2, 4)),
    "uint8 mask, dropout": dict(mask_dtype="uint8", dropout_p=0.5), "bool mask": dict(mask_dtype="bool"),
    "float64 mask, float32 query": dict(mask_dtype="float64"),
    "float32 mask, float64 query": dict(dtype="float64", mask_dtype="float32"),
    "float16 mask, float64 query": dict(dtype="float64", mask_dtype="float16"),
    "key of another dtype": dict(key_dtype="float64"),
    "key of another dtype, integer mask": dict(key_dtype="float64", mask_dtype="int64"),
    "1-d inputs": dict(shape=(8,), mask_dtype="int32"),
    "integer inputs": dict(dtype="int64"), "integer inputs and mask": dict(dtype="int64", mask_dtype="int64"),
    "bool inputs, 3-d": dict(dtype="bool", shape=(1, 2, 4)), "complex inputs": dict(dtype="complex64"),
}


@pytest.mark.parametrize("case", ATTENTION)
def test_scaled_dot_product_attention_validates_its_inputs_as_torch(case):
    outcomes = [_outcome(lambda: _attention(lib, **ATTENTION[case])) for lib in (retrograd, torch)]
    if outcomes[1][0] == "ok":  # values to float32 accuracy
        assert outcomes[0][:2] == outcomes[1][:2]
        assert torch.tensor(outcomes[0][2]).allclose(torch.tensor(outcomes[1][2]), atol=1e-6)
    else:
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("shape_and_dim", [((2, 3), -1), ((2, 3), 0), ((3, 1), 0), ((), 0), ((0, 3), 1)])
@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8", "complex64", "complex128", "float16", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_refuses_integers_bools_and_complex_by_torchs_kernel(name, dtype, shape_and_dim):
    shape, dim = shape_and_dim
    assert _outcome(lambda: getattr(retrograd, name)(_ones(retrograd, *shape, dtype=dtype), dim)) == \
        _outcome(lambda: getattr(torch, name)(_ones(torch, *shape, dtype=dtype), dim))


CONV_DTYPES = [("float32", "float64", None), ("float64", "float32", None), ("float32", "float64", "float64"),
               ("float32", "float32", "float64"), ("float64", "float32", "float32"), ("float16", "float32", None),
               ("bfloat16", "float32", None), ("float32", "float16", None), ("int64", "float32", None),
               ("float32", "bfloat16", None), ("float32", "float32", "int64"), ("int64", "int64", None)]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("conv", ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"])
@pytest.mark.parametrize("dtypes", CONV_DTYPES, ids=["/".join(map(str, d)) for d in CONV_DTYPES])
def test_convolution_refuses_a_weight_or_bias_of_another_dtype_in_the_words_of_torchs_backend(dtypes, conv, groups,
                                                                                               batch):
    """A model moved to double given float input (or the reverse) is refused, worded by the backend torch picks
    (Note [convolution dtypes]); a transposed convolution's bias of another dtype is let through, as torch's."""
    nd = 1 if conv.endswith("1d") else 2

    def run(lib):
        x = _ones(lib, batch, 2, *(5,) * nd, dtype=dtypes[0])
        w = _ones(lib, 2, 2 // groups, *(2,) * nd, dtype=dtypes[1])
        b = None if dtypes[2] is None else _ones(lib, 2, dtype=dtypes[2])
        return _outcome(lambda: getattr(lib.nn.functional, conv)(x, w, b, groups=groups))

    ours, theirs = run(retrograd), run(torch)
    if dtypes[0] in HALF_ONEDNN and HALF_ONEDNN[dtypes[0]] != ONEDNN_KERNELS[dtypes[0]]():
        # this host's torch took the other backend for a half-precision input: the same exception, and words that
        # are one of the two backends'
        it, wt = (retrograd.__dict__[name] for name in dtypes[:2])
        native = f"expected scalar type {_scalar_name(it)} but found {_scalar_name(wt)}"
        onednn = (f"Input type ({_legacy_name(it)}) and weight type ({_legacy_name(wt)}) should be the same or input "
                  "should be a MKLDNN tensor and weight is a dense tensor")
        assert ours[0] == theirs[0] == "RuntimeError"
        assert {ours[1], theirs[1]} == {native, onednn}
    else:
        assert ours == theirs


# torch's CPU convolution takes oneDNN for a half-precision input only on a CPU with oneDNN kernels for its dtype
# (AVX-512 for bfloat16; AVX512-FP16 or AMX-FP16 for float16), and the words of its refusal follow the backend.
# retrograd words them as on a host with bfloat16 kernels and no float16 ones (Note [convolution dtypes]); on a
# host that differs, the test checks the exception and that each library's words are one backend's.
HALF_ONEDNN = {"bfloat16": True, "float16": False}
ONEDNN_KERNELS = {"bfloat16": torch.ops.mkldnn._is_mkldnn_bf16_supported,
                  "float16": torch.ops.mkldnn._is_mkldnn_fp16_supported}


def _scalar_name(dtype) -> str:
    return {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float"}[str(dtype).removeprefix("torch.")]


def _legacy_name(dtype) -> str:
    return {"float16": "torch.HalfTensor", "bfloat16": "CPUBFloat16Type",
            "float32": "torch.FloatTensor"}[str(dtype).removeprefix("torch.")]


NORMS = {
    "layer_norm": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), w, b),
    "group_norm": lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b),
    "batch_norm_train": lambda lib, x, w, b: lib.nn.functional.batch_norm(x, lib.zeros(4, dtype=b.dtype),
                                                                          lib.ones(4, dtype=b.dtype), w, None, True),
    "batch_norm_eval": lambda lib, x, w, b: lib.nn.functional.batch_norm(x, lib.zeros(4, dtype=b.dtype),
                                                                         lib.ones(4, dtype=b.dtype), w, w, False),
    "instance_norm": lambda lib, x, w, b: lib.nn.functional.instance_norm(x.reshape(2, 4, 2), weight=w, bias=b),
}
NORM_DTYPES = [("float32", "float64", "float64"), ("float64", "float32", "float32"), ("float32", "float32", "float64"),
               ("float16", "float32", "float32"), ("bfloat16", "float32", "float64"), ("float32", "float16", "float16"),
               ("float16", "float32", "float16"), ("float64", "float64", "float64")]


@pytest.mark.parametrize("dtypes", NORM_DTYPES, ids=["/".join(d) for d in NORM_DTYPES])
@pytest.mark.parametrize("norm", list(NORMS))
def test_normalisations_take_parameters_of_inputs_dtype_or_float32_beside_half(norm, dtypes):
    """A double model given float input is refused as torch's mixed-dtype rule words it ("expect parameter to have
    scalar type of Float", "all inputs must share same datatype."), a later parameter of another dtype by the
    kernel's "expected scalar type"; float32 parameters beside half or bfloat16 input compute in the input's dtype."""
    def run(lib):
        x = (lib.arange(16.0).reshape(4, 4) % 5).to(getattr(lib, dtypes[0]))
        w, b = (lib.full((4,), 0.5, dtype=getattr(lib, dt)) for dt in dtypes[1:])
        outcome = _outcome(lambda: NORMS[norm](lib, x, w, b))
        return outcome[:2]  # the error, or "ok" and the dtype (half results round apart: values compared elsewhere)

    assert run(retrograd) == run(torch)


RMS_DTYPES = [("float32", "float32"), ("float16", "float32"), ("float32", "float64"), ("float16", None),
              ("bfloat16", "bfloat16"), ("bfloat16", None), ("float64", "float64")]


@pytest.mark.parametrize("dtypes", RMS_DTYPES, ids=["/".join(map(str, d)) for d in RMS_DTYPES])
def test_rms_norm_computes_half_in_float32_and_casts_back_as_torchs_composite(dtypes):
    """torch's rms_norm takes half and bfloat16 through float32 (its eps too) and casts the result to input's dtype
    (ToCopyBackward0); a weight of another dtype warns that the fused kernel is not used."""
    def run(lib):
        lib.set_warn_always(True)
        x = (lib.arange(6.0).reshape(2, 3) / 7 + 0.3).to(getattr(lib, dtypes[0])).requires_grad_()
        w = None if dtypes[1] is None else (lib.arange(3.0) / 5 + 0.5).to(getattr(lib, dtypes[1])).requires_grad_()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                y = lib.nn.functional.rms_norm(x, (3,), w)
        finally:
            lib.set_warn_always(False)
        y.sum().backward()
        tiny = lib.nn.functional.rms_norm(lib.tensor([[1e-4, 2e-4, 3e-4]]).to(x.dtype), (3,))
        return ((y.dtype, y.grad_fn.name(), x.grad.dtype, [str(c.message) for c in caught]),
                [t.detach().double().numpy() for t in (y, x.grad, tiny)])

    (ours, our_values), (theirs, their_values) = run(retrograd), run(torch)
    assert str(ours) == str(theirs)
    for a, b in zip(our_values, their_values):
        np.testing.assert_allclose(a, b, rtol={"float64": 1e-12, "float32": 1e-5}.get(dtypes[0], 1e-2))


GRID_DTYPES = [("int64", "float32"), ("float32", "int64"), ("float32", "float64"), ("float64", "float32"),
               ("float16", "float32"), ("bool", "bool"), ("complex64", "complex64"), ("float16", "float16")]


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("dtypes", GRID_DTYPES, ids=["/".join(d) for d in GRID_DTYPES])
def test_grid_sample_refuses_kinds_then_a_grid_of_another_dtype(dtypes, rank, mode):
    """Integer, bool and complex input by the kernel's name, then a grid whose dtype is not the input's; half input
    with a half grid samples (it gave NaN: its fused multiply-add split half values as doubles)."""
    def run(lib):
        x = lib.arange(3.0 ** rank).reshape(1, 1, *(3,) * rank).to(getattr(lib, dtypes[0]))
        grid = (lib.arange(2.0 ** rank * rank).reshape(1, *(2,) * rank, rank) / 2 ** rank - 0.4)
        return _outcome(lambda: lib.nn.functional.grid_sample(x, grid.to(getattr(lib, dtypes[1])), mode=mode,
                                                              align_corners=False))

    ours, theirs = run(retrograd), run(torch)
    assert ours[:2] == theirs[:2]
    if ours[0] == "ok":  # half rounds each step in torch's kernel, once in retrograd's
        np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-2)


@pytest.mark.parametrize("dtypes", [("float64", "float32", "float32", None), ("float32", "float32", "float32", "int64"),
                                    ("float32", "float32", "float16", None), ("int64", "int64", "int64", None)])
def test_bilinear_wants_one_dtype_before_checking_sizes(dtypes):
    def run(lib):
        x1, x2, w = (lib.ones(shape, dtype=getattr(lib, dt)) for shape, dt in zip(((2, 3), (2, 3), (4, 3, 3)), dtypes))
        b = None if dtypes[3] is None else lib.ones(4, dtype=getattr(lib, dtypes[3]))
        return _outcome(lambda: lib.nn.functional.bilinear(x1, x2, w, b))

    assert run(retrograd) == run(torch)


# integer-only ops on floats, real-only ops on complex numbers: torch names its kernel (NumPy's TypeError leaked)
NO_LOOP = {
    "and_float": lambda lib: _ones(lib, 3) & _ones(lib, 3),
    "or_half_number": lambda lib: _ones(lib, 3, dtype="float16") | 1,
    "xor_bfloat16": lambda lib: _ones(lib, 3, dtype="bfloat16") ^ _ones(lib, 3, dtype="bfloat16"),
    "bitwise_not_double": lambda lib: lib.bitwise_not(_ones(lib, 3, dtype="float64")),
    "invert_complex": lambda lib: _ones(lib, 3, dtype="complex64").bitwise_not_(),
    "lshift_bfloat16": lambda lib: _ones(lib, 3, dtype="bfloat16") << 1,
    "gcd_bfloat16": lambda lib: lib.gcd(_ones(lib, 3, dtype="bfloat16"), _ones(lib, 3, dtype="bfloat16")),
    "atan2_complex": lambda lib: lib.atan2(_ones(lib, 3, dtype="complex64"), _ones(lib, 3, dtype="complex64")),
    "copysign_complex_number": lambda lib: lib.copysign(_ones(lib, 3, dtype="complex128"), 2.0),
    "remainder_complex": lambda lib: _ones(lib, 3, dtype="complex64") % _ones(lib, 3, dtype="complex64"),
    "fmod_complex_number": lambda lib: lib.fmod(_ones(lib, 3, dtype="complex64"), 2),
    "div_trunc_complex": lambda lib: lib.div(_ones(lib, 3, dtype="complex64"), 2, rounding_mode="trunc"),
    "signbit_complex": lambda lib: lib.signbit(_ones(lib, 2, dtype="complex64")),
    "atan2_double": lambda lib: lib.atan2(_ones(lib, 3, dtype="float64"), _ones(lib, 3, dtype="float64")),
    "and_int_bool": lambda lib: _ones(lib, 3, dtype="int64") & _ones(lib, 3, dtype="bool"),
    "frac_bool": lambda lib: lib.frac(_ones(lib, 3, dtype="bool")),
    "lerp_bool": lambda lib: lib.lerp(_ones(lib, 3, dtype="bool"), _ones(lib, 3, dtype="bool"), 0.5),
    "nll_loss_bool": lambda lib: lib.nn.functional.nll_loss(_ones(lib, 2, 3, dtype="bool"), lib.zeros(2).long()),
    "frac_int": lambda lib: lib.frac(_ones(lib, 3, dtype="int32")),
    "erf_complex": lambda lib: lib.erf(_ones(lib, 3, dtype="complex64")),
    "erf_complex_0d": lambda lib: lib.erf(_ones(lib, dtype="complex128")),
    "trigamma_complex": lambda lib: lib.polygamma(1, _ones(lib, 3, dtype="complex64")),
    "deg2rad_complex": lambda lib: lib.deg2rad(_ones(lib, 3, dtype="complex64")),
    "xlogy_complex_number": lambda lib: lib.xlogy(_ones(lib, 3, dtype="complex64"), 2.0),
    "exponential_complex": lambda lib: _ones(lib, 3, dtype="complex64").exponential_(),
    "bessel_j0_half": lambda lib: lib.special.bessel_j0(_ones(lib, 3, dtype="float16")),
    "erf_uint16": lambda lib: lib.erf(_ones(lib, 3, dtype="uint16")),
    "frac_complex": lambda lib: lib.frac(_ones(lib, 3, dtype="complex64")),
    "polar_half": lambda lib: lib.polar(_ones(lib, 3, dtype="float16"), _ones(lib, 3, dtype="float16")),
    "masked_amax_bool": lambda lib: lib.masked.amax(_ones(lib, 3, dtype="bool"), 0, mask=_ones(lib, 3, dtype="bool")),
    "masked_softmax_bool": lambda lib: lib.masked.softmax(_ones(lib, 3, dtype="bool"), 0,
                                                          mask=_ones(lib, 3, dtype="bool")),
    "bessel_j0_bfloat16": lambda lib: lib.special.bessel_j0(_ones(lib, 3, dtype="bfloat16")),
    "zeta_half_number": lambda lib: lib.special.zeta(_ones(lib, 3, dtype="float16"), 2.0),
    "multi_margin_bfloat16": lambda lib: lib.nn.functional.multi_margin_loss(_ones(lib, 2, 3, dtype="bfloat16"),
                                                                             lib.zeros(2).long()),
    "cumsum_to_bool": lambda lib: lib.cumsum(_ones(lib, 3), 0, dtype=lib.bool),
    "sum_to_bool": lambda lib: lib.sum(_ones(lib, 3), dtype=lib.bool),
    "bernoulli_int": lambda lib: lib.bernoulli(_ones(lib, 3, dtype="int64")),
    "normal_int_mean": lambda lib: lib.normal(_ones(lib, 3, dtype="int32"), 1.0),
    "rand_int": lambda lib: lib.rand(3, dtype=lib.int32),
    "rand_empty_bool": lambda lib: lib.rand(0, dtype=lib.bool),
    "ormqr_int": lambda lib: lib.ormqr(_ones(lib, 3, 1, dtype="int64"), _ones(lib, 1, dtype="int64"),
                                       _ones(lib, 3, 1, dtype="int64")),
    "geometric_complex": lambda lib: _ones(lib, 3, dtype="complex64").geometric_(0.5),
    "max_unpool_complex": lambda lib: lib.nn.functional.max_unpool1d(_ones(lib, 1, 1, 3, dtype="complex64"),
                                                                     lib.zeros(1, 1, 3).long(), 1),
    "hypot_int": lambda lib: lib.hypot(_ones(lib, 3, dtype="int64"), _ones(lib, 3, dtype="int64")),
    "mvlgamma_bool": lambda lib: lib.mvlgamma(_ones(lib, 3, dtype="bool"), 1),
    "mvlgamma_int": lambda lib: lib.mvlgamma(_ones(lib, 3, dtype="int64") * 3, 2),
    "normalize_bool": lambda lib: lib.nn.functional.normalize(_ones(lib, 2, 3, dtype="bool")),
    "renorm_int": lambda lib: lib.renorm(_ones(lib, 2, 2, dtype="int64"), 2, 0, 1.0),
    # and the words torch's composites check dtypes with
    "trapezoid_bool_points": lambda lib: lib.trapezoid(_ones(lib, 3, dtype="float64"), _ones(lib, 3, dtype="bool")),
    "cumulative_trapezoid_bool": lambda lib: lib.cumulative_trapezoid(_ones(lib, 3, dtype="bool"), _ones(lib, 3)),
    "vdot_mixed": lambda lib: lib.vdot(_ones(lib, 3, dtype="bool"), _ones(lib, 3, dtype="float64")),
    "tensordot_mixed": lambda lib: lib.tensordot(_ones(lib, 2, 3), _ones(lib, 3, 2, dtype="float64"), 1),
    "inner_mixed": lambda lib: lib.inner(_ones(lib, 3, dtype="bool"), _ones(lib, 3, dtype="float64")),
    "scatter_reduce_mixed": lambda lib: lib.zeros(3, dtype=lib.complex64).scatter_reduce(
        0, lib.zeros(3).long(), _ones(lib, 3, dtype="float64"), "sum"),
    "var_mean_bool": lambda lib: lib.var_mean(_ones(lib, 3, dtype="bool")),
    "std_mean_int": lambda lib: lib.std_mean(_ones(lib, 3, dtype="int64"), dim=0),
}


@pytest.mark.parametrize("name", NO_LOOP)
def test_ops_without_a_loop_for_the_dtype_raise_as_torch(name):
    assert _outcome(lambda: NO_LOOP[name](retrograd)) == _outcome(lambda: NO_LOOP[name](torch))
