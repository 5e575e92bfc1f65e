"""torch's complex32 (chalf, ComplexHalf; Note [complex32] in retrograd/_dtype.py) against torch: the dtype's attributes
and promotion, making, converting, printing and saving tensors of it, gradients through the conversion, and every op
of PyTorch's OpInfo database that takes complex64, run on its samples converted to complex32: where torch computes,
retrograd computes the same dtype and values (complex32 and float16 results bit for bit: both compute in complex64 and
round once); where torch raises, retrograd raises the same error type and text.
"""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from dtype_sweep import assert_same_outcome as same_outcome
from dtype_sweep import first_mismatch, outcome, values
from test_op_db import ENTRIES, tensors

import retrograd

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex32",
          "complex64", "complex128", "uint16", "uint32", "uint64")


def assert_same_outcome(ours: tuple, theirs: tuple, what: str) -> None:
    """The sweep's comparison, complex32 and float16 results bit for bit."""
    same_outcome(ours, theirs, what, exact=(torch.complex32, torch.float16))


# ----------------------------------------------------------------------------------------------------------------
# the dtype


def test_dtype_attributes_match_torch():
    assert retrograd.chalf is retrograd.complex32 and repr(retrograd.complex32) == repr(torch.complex32)
    for attr in ("itemsize", "is_signed", "is_floating_point", "is_complex"):
        assert getattr(retrograd.complex32, attr) == getattr(torch.complex32, attr), attr
    for info in ("bits", "eps", "max", "min", "tiny", "resolution"):
        assert getattr(retrograd.finfo(retrograd.complex32), info) == getattr(torch.finfo(torch.complex32), info)


@pytest.mark.parametrize("other", DTYPES)
def test_promote_types_matches_torch(other):
    for a, b in (("complex32", other), (other, "complex32")):
        theirs = outcome(torch.promote_types, getattr(torch, a), getattr(torch, b))
        ours = outcome(retrograd.promote_types, getattr(retrograd, a), getattr(retrograd, b))
        assert (ours[0], str(ours[1:])) == (theirs[0], str(theirs[1:])), (a, b)


OPERANDS = {  # operands of result_type beside a complex32 or float16 vector, as code making each in either library
    "int": "1", "float": "1.5", "complex": "1j", "0-d float": "L.tensor(1.5)", "0-d complex64": "L.tensor(1j)",
    "0-d complex32": "L.tensor(1j, dtype=L.chalf)", "float16": "L.ones(2, dtype=L.half)",
    "float32": "L.ones(2)", "complex64": "L.ones(2, dtype=L.cfloat)", "long": "L.ones(2, dtype=L.long)"}


@pytest.mark.parametrize("vector", ["complex32", "float16"])
@pytest.mark.parametrize("operand", sorted(OPERANDS))
def test_result_type_and_add_match_torch(operand, vector):
    results = []
    for L in (retrograd, torch):
        x, other = L.ones(2, dtype=getattr(L, vector)), eval(OPERANDS[operand])  # noqa: S307 - our own table
        results.append([outcome(f, *pair) for f in (L.result_type, L.add) for pair in ((x, other), (other, x))])
    for ours, theirs in zip(*results):
        if ours[0] == theirs[0] == "ok" and not tensors(theirs[1]):
            assert str(ours[1]) == str(theirs[1]), operand
        else:
            assert_same_outcome(ours, theirs, operand)


# ----------------------------------------------------------------------------------------------------------------
# OpInfo's ops on complex32 tensors

COMPLEX_ENTRIES = sorted(name for name, op in ENTRIES.items() if torch.complex64 in op.supported_dtypes("cpu"))


def complex32_mismatch(name: str) -> str | None:
    """The first sample of entry `name` on which the two libraries disagree once made complex32, or None."""
    return first_mismatch(name, torch.complex64,
                          lambda t: t.to(torch.complex32) if t.dtype == torch.complex64 else t,
                          exact=(torch.complex32, torch.float16))


# entries whose samples, made complex32, still differ somewhere, and why
_MIXED = ("with one complex32 and one complex64 operand, torch checks the operands' dtypes in the op's own words, "
          "or refuses on the complex32 one before promoting; retrograd's composition checks or promotes first")
_COMPOSITE = ("torch's composite reaches another kernel or check first (or skips it on these samples); retrograd's "
              "row or composition refuses with its own kernel's name, or computes")
_RANDOM = ("complex draws fill both parts as torch's do (complex64 matches), but some complex32 elements differ from "
           "torch's (not investigated)")
KNOWN = {
    **dict.fromkeys(("__rmatmul__", "addmv", "addr", "bmm", "cholesky_solve", "cross",
                     "dot", "index_copy", "inner", "linalg.cross", "linalg.lstsq", "linalg.lstsq.grad_oriented",
                     "linalg.solve_triangular", "masked_scatter", "matmul", "nn.functional.conv1d",
                     "nn.functional.conv2d", "nn.functional.conv3d", "nn.functional.conv_transpose1d",
                     "nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d", "tensordot",
                     "triangular_solve"), _MIXED),
    **dict.fromkeys(("einsum", "ldexp", "linalg.vecdot", "logdet", "lu_solve", "nn.functional.linear",
                     "nn.functional.rms_norm", "norm.nuc", "sum_to_size"), _COMPOSITE),
    **dict.fromkeys(("normal.in_place", "rand_like", "randn_like", "uniform"), _RANDOM),
    "renorm": "torch fails an internal assert (AccumulateType has no ComplexHalf); retrograd refuses as for a kernel",
    "to_sparse": "retrograd has no sparse tensors",
}


def test_known_differences_name_swept_entries():
    assert not set(KNOWN) - set(COMPLEX_ENTRIES)


@pytest.mark.parametrize("name", COMPLEX_ENTRIES)
def test_opinfo_samples_made_complex32_match_torch(name):
    mismatch = complex32_mismatch(name)
    if name in KNOWN:
        assert mismatch is not None, f"{name} now matches torch: take it out of KNOWN"
        pytest.xfail(KNOWN[name])
    assert mismatch is None, mismatch


# ----------------------------------------------------------------------------------------------------------------
# making, converting, viewing, computing, printing

EXPRESSIONS = [  # run with L = torch or retrograd and z = a complex32 vector made by each
    "L.zeros(2, 3, dtype=L.chalf)", "L.ones(2, dtype=L.complex32)", "L.full((2,), 2 - 1j, dtype=L.chalf)",
    "L.empty(2, dtype=L.chalf).fill_(1.5j)", "L.tensor([1 + 1j, 0.1], dtype=L.chalf)", "L.tensor(3.3, dtype=L.chalf)",
    "L.linspace(0, 1, 5, dtype=L.chalf)", "L.eye(2, dtype=L.chalf)", "L.zeros_like(z)", "L.ones_like(z)",
    "L.tensor([1e5 + 1e-9j, 70000.0])", "L.tensor([1 + 2 ** -11 + 2 ** -40], dtype=L.double).chalf()",
    "L.tensor([0.1, 2.7], dtype=L.double).to(L.complex32)", "L.tensor([3, -1]).chalf()", "L.tensor([True]).chalf()",
    "L.tensor([1.5, 2], dtype=L.half).chalf()", "L.tensor([[1., 2.]], dtype=L.half).view(L.complex32)",
    "z.cfloat()", "z.cdouble()", "z.half()", "z.float()", "z.to(L.int32)", "z.bool()", "z.chalf() is z",
    "z.clone()", "z.t()", "z.view(3, 1)", "z.reshape(1, 3).expand(2, 3).contiguous()", "z[1]", "z[L.tensor([2, 0])]",
    "z[z.abs() > 2]", "z.flip(0)", "z.view(3, 1).flip(0)", "z.view(3, 1).flip(1)", "z.roll(1)", "L.cat([z, z])",
    "L.stack([z, z], 1)", "L.cat([z, z.cfloat()])", "L.where(L.tensor([True, False, True]), z, z * 2)",
    "L.view_as_real(z)", "z.real", "z.imag", "L.view_as_complex(L.view_as_real(z))", "z.conj()", "z.conj().imag",
    "z.conj().resolve_conj()", "z.conj_physical()", "z + z", "z - 1", "z * z", "z * 1.5", "2 * z", "z * 1j",
    "z + L.tensor([1.5])", "z + L.tensor(1.5)", "z + L.tensor([1.5], dtype=L.half)", "z * L.ones(3, dtype=L.cdouble)",
    "L.ones(3, dtype=L.half) * 1j", "L.ones(3, dtype=L.half) + L.tensor(1j)", "-z", "z.abs()", "z.sgn()",
    "z == z", "z != 1", "z.isnan()", "z.isfinite()", "z.any()", "z.all()", "z.count_nonzero()", "z.nonzero()",
    "L.addcmul(z, z, z, value=0.7)", "z.var()", "z.std()", "L.std_mean(z)", "L.var_mean(z.view(3, 1), 0)",
    "L.linalg.vector_norm(z)", "z.norm()", "L.dist(z, z * 2)", "L.isclose(z, z + 1e-3)", "L.equal(z, z)",
    "L.equal(z, z.cfloat())", "L.outer(z, z)", "z / z", "z / 2", "z.exp()", "z.sum()", "z.mean()", "z.prod()",
    "z.cumsum(0)", "z @ z", "z.pow(2)", "z.sqrt()", "z.sin()", "z.reciprocal()", "z.angle()", "z.log()", "z < z",
    "z.sort()", "z.max()", "L.zeros(0, dtype=L.chalf).sum()", "L.zeros((), dtype=L.chalf).cumsum(0)",
    "L.linalg.inv(L.ones(2, 2, dtype=L.chalf))", "L.fft.fft(z)", "z.numpy()", "z.tolist()", "z[0].item()",
    "z.type()", "z.element_size()", "z.is_complex()", "z.is_signed()", "z.is_floating_point()", "z.dtype",
    "z.stride()", "z.t().stride()", "repr(z)", "str(z.view(3, 1))", "repr(L.tensor(1.5 + 0j, dtype=L.chalf))",
    "repr(L.zeros(2, 2, dtype=L.chalf))", "repr(z.requires_grad_())", "L.promote_types(L.half, L.cfloat)",
    "L.result_type(z, 1.5)", "L.result_type(z, L.tensor([1.5]))", "L.finfo(L.chalf).eps",
]
_Z = "L.tensor([1 + 2j, 3.3 - 0.001j, -0.5 + 7j]).chalf()"


def _run(code: str, L):
    return eval(code, {"L": L, "z": eval(_Z, {"L": L})})  # noqa: S307 - our own table


@pytest.mark.parametrize("code", EXPRESSIONS)
def test_complex32_tensors_match_torch(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "ComplexHalf support is experimental"
        ours, theirs = (outcome(_run, code, L) for L in (retrograd, torch))
    assert theirs[0] == "ok" or theirs[1] != "NameError", code
    if ours[0] == theirs[0] == "ok" and not tensors(theirs[1]):  # a number, list, string or dtype
        assert str(ours[1]).replace("retrograd", "torch") == str(theirs[1]), code
        return
    assert_same_outcome(ours, theirs, code)


@pytest.mark.parametrize("code", ["z.add_(z)", "z.mul_(2)", "z.add_(L.ones(3, dtype=L.cfloat))", "z.copy_(L.ones(3))",
                                  "z.zero_()", "z.fill_(2 - 1j)", "z.neg_()", "z.div_(2)", "z.exp_()",
                                  "L.view_as_real(z).mul_(2)", "z.real.add_(1)", "z[1:].add_(z[:2])"])
def test_in_place_ops_on_complex32_match_torch(code):
    results = []
    for L in (retrograd, torch):
        z = eval(_Z, {"L": L})  # noqa: S307 - our own table
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append((outcome(eval, code, {"L": L, "z": z}), z))  # noqa: S307
    (ours, z_ours), (theirs, z_theirs) = results
    assert ours[0] == theirs[0], (code, ours, theirs)
    if ours[0] == "raises":
        assert ours[1:] == theirs[1:], code
    np.testing.assert_array_equal(values(z_ours), values(z_theirs), err_msg=code)


# ----------------------------------------------------------------------------------------------------------------
# gradients through the conversion


@pytest.mark.parametrize("source", ["double", "float", "cfloat", "cdouble", "half"])
def test_gradient_through_chalf_goes_back_to_the_input_dtype(source):
    results = []
    for L in (retrograd, torch):
        x = getattr(L.tensor([0.5, -1.25, 3.0]), source)().requires_grad_()
        z = x.chalf()
        loss = (L.view_as_real(z).float() * L.tensor([1.0, 2.0])).sum()
        (grad,) = L.autograd.grad(loss, x)
        results.append((type(z.grad_fn).__name__, z.requires_grad, grad))
    (node, requires, grad), (t_node, t_requires, t_grad) = results
    assert (node, requires) == (t_node, t_requires) == ("ToCopyBackward0", True)
    assert str(grad.dtype) == str(t_grad.dtype) == f"torch.{getattr(torch, source)}".replace("torch.torch", "torch")
    np.testing.assert_array_equal(values(grad), values(t_grad))


def test_gradient_of_complex32_arithmetic_matches_torch():
    results = []
    for L in (retrograd, torch):
        x = L.tensor([0.5 + 1j, -1.25, 3.0 - 2j], requires_grad=True)
        z = x.chalf()
        out = (z * z + z).abs()
        (grad,) = L.autograd.grad(out.float().sum(), x)
        results.append((type(out.grad_fn).__name__, str(out.dtype), grad))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_allclose(values(results[0][2]), values(results[1][2]), rtol=2e-3)


# ----------------------------------------------------------------------------------------------------------------
# torch's file format


def test_a_torch_file_of_complex32_tensors_loads_and_saves_as_torch_does():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.tensor([[1 + 2j, 3.5 - 1j], [0.1j, -2]]).chalf()
    data = {"c": t, "view": t.t(), "f": torch.tensor([1.5])}
    saved = io.BytesIO()
    torch.save(data, saved)
    ours = retrograd.load(io.BytesIO(saved.getvalue()))
    for key, expected in data.items():
        assert str(ours[key].dtype) == str(expected.dtype) and ours[key].stride() == expected.stride(), key
        np.testing.assert_array_equal(values(ours[key]), values(expected), err_msg=key)
    again = io.BytesIO()
    retrograd.save(ours, again)
    back = torch.load(io.BytesIO(again.getvalue()))
    for key, expected in data.items():
        assert back[key].dtype == expected.dtype and back[key].stride() == expected.stride(), key
        np.testing.assert_array_equal(values(back[key]), values(expected), err_msg=key)


COMPLEX32_WARNING = """
import warnings, {lib} as torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.zeros(2, dtype=torch.complex32)
    torch.ones(2).to(torch.chalf)
    torch.randn(3, dtype=torch.chalf) + 1
print([(str(w.message), w.filename) for w in caught])
"""


def test_complex32_memory_warns_once_per_process_at_the_callers_line():
    """torch warns that ComplexHalf is experimental the first time complex32 memory is made, at the user's line
    (a fresh process each: the warning is given once)."""
    def warned(lib):
        return subprocess.run([sys.executable, "-c", COMPLEX32_WARNING.format(lib=lib)], capture_output=True,
                              text=True, check=True).stdout

    assert warned("retrograd") == warned("torch")
    assert "ComplexHalf support is experimental" in warned("torch")


@pytest.mark.parametrize("make", [lambda L: L.empty(2, dtype=L.complex32), lambda L: L.full((2,), 1j, dtype=L.chalf),
                                  lambda L: L.tensor([1 + 2j], dtype=L.chalf), lambda L: L.zeros(2).type(L.chalf)],
                         ids=["empty", "full", "tensor", "type"])
def test_complex32_factories_warn_under_warn_always(make):
    def messages(lib):
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                make(lib)
        finally:
            lib.set_warn_always(False)
        return {(str(w.message), w.filename) for w in caught}

    assert messages(retrograd) == messages(torch)
