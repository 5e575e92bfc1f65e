"""torch's unsigned dtypes uint16, uint32 and uint64 (Note [unsigned dtypes] in retrograd/ops/unsigned.py) against
torch: the dtypes' attributes and promotion, making, converting, printing and saving tensors of them, and every op of
PyTorch's OpInfo database that takes int64, run on its samples converted to each unsigned dtype: where torch computes,
retrograd computes the same values and dtype; where torch raises, retrograd raises the same error type and text.
"""

from __future__ import annotations

import io

import pytest
import torch
from dtype_sweep import assert_same_outcome, first_mismatch, outcome
from test_op_db import ENTRIES, tensors

import retrograd

UNSIGNED = ("uint16", "uint32", "uint64")
OTHERS = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
          "complex128")


# ----------------------------------------------------------------------------------------------------------------
# the dtypes


@pytest.mark.parametrize("name", UNSIGNED)
def test_dtype_attributes_match_torch(name):
    ours, theirs = getattr(retrograd, name), getattr(torch, name)
    assert repr(ours) == repr(theirs) == f"torch.{name}"
    for attr in ("itemsize", "is_signed", "is_floating_point", "is_complex"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert (retrograd.iinfo(ours).min, retrograd.iinfo(ours).max) == (torch.iinfo(theirs).min, torch.iinfo(theirs).max)
    assert repr(retrograd.iinfo(ours)) == repr(torch.iinfo(theirs))
    assert_same_outcome(outcome(retrograd.finfo, ours), outcome(torch.finfo, theirs), "finfo")


@pytest.mark.parametrize("name", UNSIGNED)
def test_promote_types_matches_torch_for_every_pair(name):
    for other in (*OTHERS, "bfloat16", *UNSIGNED):
        for a, b in ((name, other), (other, name)):
            theirs = outcome(torch.promote_types, getattr(torch, a), getattr(torch, b))
            ours = outcome(retrograd.promote_types, getattr(retrograd, a), getattr(retrograd, b))
            if theirs[0] == "ok":
                assert ours[0] == "ok" and str(ours[1]) == str(theirs[1]), f"{a}, {b}: {ours} vs {theirs}"
            else:
                assert ours == theirs, f"{a}, {b}"


OPERANDS = {  # operands of result_type with a uint64 vector, as code making each in either library
    "int": "1", "bool": "True", "float": "1.5", "complex": "1j", "0-d long": "L.tensor(1)",
    "0-d float": "L.tensor(1.5)", "0-d bool": "L.tensor(True)", "0-d uint16": "L.tensor(1, dtype=L.uint16)",
    "long": "L.tensor([1, 2])", "float32": "L.tensor([1., 2.])", "uint16": "L.tensor([1], dtype=L.uint16)",
    "complex64": "L.tensor([1j])"}


@pytest.mark.parametrize("operand", sorted(OPERANDS))
def test_result_type_with_a_uint64_tensor_matches_torch(operand):
    results = []
    for L in (retrograd, torch):
        u, other = L.tensor([1, 2], dtype=L.uint64), eval(OPERANDS[operand])  # noqa: S307 - our own table
        results.append([outcome(L.result_type, *pair) for pair in ((u, other), (other, u))])
    for ours, theirs in zip(*results):
        assert_same_outcome(ours, theirs, operand) if ours[0] == "raises" else \
            (str(ours[1]) == str(theirs[1])) or pytest.fail(f"{operand}: {ours[1]} vs {theirs[1]}")


# ----------------------------------------------------------------------------------------------------------------
# OpInfo's ops on unsigned tensors

INT_ENTRIES = sorted(name for name, op in ENTRIES.items() if torch.int64 in op.supported_dtypes("cpu"))


def unsigned_mismatch(name: str) -> str | None:
    """The first sample of entry `name` on which the two libraries disagree once its int64 tensors are made unsigned
    (their absolute values), or None."""
    for dtype in (torch.uint16, torch.uint32, torch.uint64):
        mismatch = first_mismatch(name, torch.int64, lambda t, d=dtype: t.abs().to(d) if t.dtype == torch.int64 else t,
                                  f"{dtype} ")
        if mismatch:
            return mismatch
    return None


# entries whose samples, made unsigned, still differ somewhere, and why
_MIXED = ("with one unsigned and one int64 operand, torch first checks the operands' dtypes in the op's own words "
          "(or promotes them in another order); retrograd raises the promotion or kernel error")
_SHORTCUT = "torch computes a 0-d or empty sample without reaching the kernel retrograd refuses on unsigned input"
_COMPOSITE = ("torch's composite calls a kernel with no unsigned version (neg, le, add) or checks an identity; "
              "retrograd's composes other rows")
KNOWN = {
    **dict.fromkeys(("__rmatmul__", "__rsub__", "addmv", "addr", "bmm", "clamp", "cross",
                     "equal", "inner", "ldexp",
                     "linalg.cross", "masked_scatter", "matmul", "native_dropout_backward",
                     "nn.functional.bilinear", "nn.functional.conv3d", "outer", "put", "rsub", "searchsorted",
                     "tensordot"), _MIXED),
    **dict.fromkeys(("combinations", "count_nonzero", "einsum", "index_select", "isin", "nn.functional.linear",
                     "sum_to_size"), _SHORTCUT),
    **dict.fromkeys(("masked.amax", "masked.amin", "masked.argmax", "masked.argmin", "masked.logsumexp",
                     "nn.functional.margin_ranking_loss", "nn.functional.poisson_nll_loss",
                     "nn.functional.softmin.with_dtype"), _COMPOSITE),
    "to_sparse": "retrograd has no sparse tensors",
}


def test_known_differences_name_swept_entries():
    assert not set(KNOWN) - set(INT_ENTRIES)


@pytest.mark.parametrize("name", INT_ENTRIES)
def test_opinfo_samples_made_unsigned_match_torch(name):
    mismatch = unsigned_mismatch(name)
    if name in KNOWN:
        assert mismatch is not None, f"{name} now matches torch: take it out of KNOWN"
        pytest.xfail(KNOWN[name])
    assert mismatch is None, mismatch


# ----------------------------------------------------------------------------------------------------------------
# making, converting, reducing, printing, saving

EXPRESSIONS = [  # run with L = torch or retrograd and d one of the unsigned dtypes
    "L.tensor([1, 2], dtype=d)", "L.tensor([1, -1], dtype=d)", "L.tensor([[0, 7]], dtype=d).t()",
    "L.zeros(2, 3, dtype=d)", "L.ones(2, dtype=d)", "L.full((2,), 7, dtype=d)", "L.full((2,), -8, dtype=d)",
    "L.empty(2, dtype=d).fill_(3)", "L.scalar_tensor(3, dtype=d)", "L.arange(3, dtype=d)",
    "L.linspace(0, 4, 5, dtype=d)",
    "L.logspace(0, 2, 3, dtype=d)", "L.eye(2, dtype=d)", "L.randperm(4, dtype=d)", "L.tril_indices(3, 3, dtype=d)",
    "L.randint(0, 5, (6,), dtype=d)", "L.zeros(6, dtype=d).random_(0, 9)", "L.zeros(2, dtype=d).random_()",
    "L.rand(2, dtype=d)", "L.randn(2, dtype=d)", "L.zeros(2, dtype=d).bernoulli_(0.5)",
    "L.zeros(2, dtype=d).exponential_()", "L.zeros(2, dtype=d).cauchy_()",
    "L.tensor([-1.5, 3.7, 300.0]).to(d)", "L.tensor([-1, 5]).to(d)", "L.tensor([4, 1], dtype=d).to(L.int64)",
    "L.tensor([4, 1], dtype=d).double()", "L.tensor([4, 1], dtype=d).bool()", "L.tensor([4, 1], dtype=d).half()",
    "L.tensor([4, 1], dtype=d).cfloat()", "L.tensor([1., 2.]).copy_(L.tensor([4, 1], dtype=d))",
    "L.tensor([4, 1], dtype=d).copy_(L.tensor([1.5, 2.]))", "L.tensor([4, 1], dtype=d).clone()",
    "L.tensor([4, 1], dtype=d).view(-1, 1).expand(2, 3).contiguous()", "L.tensor([4, 1, 3], dtype=d)[L.tensor([0, 2])]",
    "L.tensor([4, 1, 3], dtype=d).tolist()", "L.tensor([4, 1, 3], dtype=d)[1].item()",
    "L.tensor([4, 1, 3], dtype=d).type()", "L.tensor([4, 1, 3], dtype=d).element_size()",
    "L.tensor([4, 1, 3], dtype=d).is_signed()", "L.tensor([4, 1, 3], dtype=d).sum()",
    "L.tensor([[4, 1, 3]], dtype=d).sum(1, keepdim=True)", "L.tensor([4, 1, 3], dtype=d).sum(dtype=d)",
    "L.tensor([4, 1, 3], dtype=d).prod()", "L.tensor([4, 1, 3], dtype=d).prod(dtype=d)",
    "L.tensor([4, 1, 3], dtype=d).cumsum(0)", "L.tensor([4, 1, 3], dtype=d).cumsum(0, dtype=d)",
    "L.tensor([4, 1, 3], dtype=d).mean()", "L.tensor([4, 1, 3], dtype=d).max()", "L.tensor([4, 1, 3], dtype=d).sort()",
    "L.tensor([4, 1, 4], dtype=d).unique(return_counts=True)", "L.tensor([4, 1, 3], dtype=d).nonzero()",
    "L.tensor([4, 1, 3], dtype=d).bincount()", "L.tensor([4, 1, 3], dtype=d) * L.tensor([2, 2, 2], dtype=d)",
    "L.tensor([4, 1, 3], dtype=d) * 3", "L.tensor([4, 1, 3], dtype=d) * 1.5", "L.tensor([4, 1, 3], dtype=d) / 2",
    "L.tensor([4, 1, 3], dtype=d) + 1", "L.tensor([4, 1, 3], dtype=d) + L.tensor([1.5])", "-L.tensor([4], dtype=d)",
    "L.tensor([4, 1, 3], dtype=d) // 2", "L.tensor([4, 1, 3], dtype=d) % 2", "L.tensor([4, 1, 3], dtype=d) ** 2",
    "L.tensor([4, 1, 3], dtype=d) == 1", "L.tensor([4, 1, 3], dtype=d) > 1", "L.tensor([4, 1, 3], dtype=d) & 6",
    "L.tensor([4, 1, 3], dtype=d) << 1", "~L.tensor([4, 1, 3], dtype=d)", "L.tensor([4, 1, 3], dtype=d).abs()",
    "L.tensor([4, 1, 3], dtype=d).exp()", "L.tensor([4, 1, 3], dtype=d).softmax(0)",
    "L.tensor([4, 1, 3], dtype=d).flip(0)",
    "L.tensor([[4, 1, 3]], dtype=d).flip(0)", "L.tensor([4, 1, 3], dtype=d).outer(L.tensor([4, 1, 3], dtype=d))",
    "L.tensor([4, 1, 3], dtype=d).dot(L.tensor([4, 1, 3], dtype=d))", "L.tensor([4, 1, 3], dtype=d).clamp(0, 2)",
    "L.cat([L.tensor([1], dtype=d), L.tensor([1])])", "L.stack([L.tensor([1], dtype=d), L.tensor([1], dtype=d)])",
    "L.where(L.tensor([True, False]), L.tensor([1, 2], dtype=d), L.tensor([3, 4], dtype=d))",
    "L.mm(L.ones(2, 2, dtype=d), L.ones(2, 2))", "L.nn.functional.conv2d(L.ones(1, 1, 3, 3, dtype=d), "
    "L.ones(1, 1, 2, 2, dtype=d), dilation=2)", "L.tensor([4, 1, 3], dtype=d).div(2, rounding_mode='trunc')",
    "repr(L.tensor([2 ** 16 - 1, 0], dtype=d))", "repr(L.tensor(5, dtype=d))", "str(L.zeros(2, 2, dtype=d))",
]


@pytest.mark.parametrize("name", UNSIGNED)
@pytest.mark.parametrize("code", EXPRESSIONS)
def test_tensors_of_unsigned_dtypes_match_torch(code, name):
    results = []
    for lib in (retrograd, torch):
        lib.manual_seed(0)
        results.append(outcome(eval, code, {"L": lib, "d": getattr(lib, name)}))  # noqa: S307 - our own table
    ours, theirs = results
    assert theirs[0] == "ok" or theirs[1] != "NameError", code
    if ours[0] == theirs[0] == "ok" and not tensors(theirs[1]):  # a number, list, string or dtype
        assert str(ours[1]).replace("retrograd", "torch") == str(theirs[1]), code
        return
    assert_same_outcome(ours, theirs, code)


def test_a_torch_file_of_unsigned_tensors_loads_and_saves_as_torch_does():
    data = {"u64": torch.tensor([1, 2 ** 64 - 1], dtype=torch.uint64),
            "u16": torch.tensor([[3, 4]], dtype=torch.uint16).t(), "u32": torch.tensor([7], dtype=torch.uint32),
            "f": torch.tensor([1.5])}
    saved = io.BytesIO()
    torch.save(data, saved)
    ours = retrograd.load(io.BytesIO(saved.getvalue()))
    for key, t in data.items():
        assert str(ours[key].dtype) == str(t.dtype) and ours[key].tolist() == t.tolist(), key
    again = io.BytesIO()
    retrograd.save(ours, again)
    back = torch.load(io.BytesIO(again.getvalue()))
    for key, t in data.items():
        assert back[key].dtype == t.dtype and torch.equal(back[key], t) and back[key].stride() == t.stride(), key


# ----------------------------------------------------------------------------------------------------------------
# hash_tensor (its op-database row, tests/opdb/reduction.py, compares values on float64, int64 and bool samples)

HASH_CALLS = [
    "L.hash_tensor(L.tensor([[1.5, -2.0, 0.25], [3.0, -0.0, float('nan')]]))",
    "L.hash_tensor(L.tensor([[1.5, -2.0], [3.0, 7.0]], dtype=L.float64), 1, keepdim=True)",
    "L.tensor([[1.5, -2.0], [3.0, 7.0]], dtype=L.float16).hash_tensor([0, 1])",
    "L.hash_tensor(L.tensor([-1, 2], dtype=L.int8))", "L.hash_tensor(L.tensor([200, 3], dtype=L.uint8), dim=0)",
    "L.hash_tensor(L.tensor([True, False, True]))", "L.hash_tensor(L.tensor(2.5), 0)",
    "L.hash_tensor(L.ones(2, 2), None)", "L.hash_tensor(L.ones(2, 2), [])", "L.hash_tensor(L.zeros(0, 3), 1)",
    "L.hash_tensor(L.zeros(0))", "L.hash_tensor(L.zeros(0, 3), 0)", "L.hash_tensor(L.ones(2), mode=1)",
    "L.hash_tensor(L.ones(2, 2), 2)", "L.hash_tensor(L.ones(2, 2), (0, 0))", "L.hash_tensor(L.tensor([1j]))",
    "L.hash_tensor(L.ones(2, dtype=L.uint32))", "L.hash_tensor(L.ones(2), 0, True)",
    "L.hash_tensor(L.ones(2, requires_grad=True)).requires_grad",
]


@pytest.mark.parametrize("code", HASH_CALLS)
def test_hash_tensor_matches_torch(code):
    ours, theirs = (outcome(eval, code, {"L": lib}) for lib in (retrograd, torch))  # noqa: S307 - our own table
    assert theirs[0] == "ok" or theirs[1] != "NameError", code
    assert_same_outcome(ours, theirs, code)
