"""Operands of Tensor operators and number arguments, against torch (Note [operands] in ops/registry.py):
Python numbers and NumPy scalars count as numbers (they never raise a tensor's dtype within its category),
other objects give Python's TypeError, and `-` refuses booleans. Each case compares the result's dtype and
values, or the exception's type and message."""

import operator

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)

OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
             "==": operator.eq, "!=": operator.ne, "<": operator.lt, "//": operator.floordiv, "@": operator.matmul}

OPERANDS = {
    "int": 3, "float": 2.5, "bool": True, "complex": 2 + 1j,
    "np.float64": np.float64(2.5), "np.float32": np.float32(2.5), "np.int64": np.int64(3), "np.int32": np.int32(3),
    "np.bool_": np.bool_(True), "np.complex128": np.complex128(2 + 1j),
    "str": "a", "None": None, "list": [1, 2], "object": object(),
}

DTYPES = ("float32", "float64", "int64", "int32", "bool", "complex64")


def _tensor(lib, dtype):
    return lib.tensor([1, 2], dtype=getattr(lib, dtype)) if dtype != "bool" else lib.tensor([True, True])


def _outcome(fn):
    """('ok', dtype name, values) or (exception type name, message)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return type(e).__name__, str(e)
    if not hasattr(out, "dtype"):
        return "ok", type(out).__name__, out
    return "ok", str(out.dtype).replace("torch.", ""), out.tolist()


def _same(expected, got):
    if expected[0] != "ok" or got[0] != "ok" or expected[1] != got[1] or not isinstance(expected[2], list):
        return expected == got
    return np.allclose(np.asarray(expected[2], dtype=complex), np.asarray(got[2], dtype=complex), equal_nan=True)


# torch's own quirks that retrograd does not copy (README Limits): bool ** bool stays bool in torch.
KNOWN = {("bool", "**", "bool")}


CASES = [pytest.param(dtype, symbol, name, marks=pytest.mark.xfail(
              strict=True, reason="bool ** bool: NumPy's power gives int8 where torch keeps bool (README Limits)"))
         if (dtype, symbol, name) in KNOWN else (dtype, symbol, name)
         for dtype in DTYPES for symbol in OPERATORS for name in OPERANDS]


@pytest.mark.parametrize(("dtype", "symbol", "name"), CASES)
def test_operator_operands_as_torch(dtype, symbol, name):
    fn, value = OPERATORS[symbol], OPERANDS[name]
    for swapped in (False, True):
        outcomes = [_outcome(lambda lib=lib: fn(value, _tensor(lib, dtype)) if swapped
                             else fn(_tensor(lib, dtype), value)) for lib in LIBS]
        if outcomes[0][0] == "TypeError" and outcomes[1][0] == "TypeError":
            continue  # Python's own "unsupported operand" text names the operand types the same way
        assert _same(*outcomes), f"{'reflected ' if swapped else ''}{dtype} {symbol} {name}: {outcomes}"


@pytest.mark.parametrize("call", [
    "lib.add(t, np.float64(2))", "lib.mul(t, np.int64(3))", "lib.sub(t, np.float32(1))", "lib.pow(i, 0.5)",
    "lib.pow(i, np.float64(2))", "lib.pow(2.5, i)", "lib.pow(np.float64(2), i)", "i ** -1",
    "lib.full((2,), np.float64(1))", "lib.full((2,), np.bool_(True))", "lib.tensor(np.float64(1))",
    "lib.clamp(t, np.float64(0))", "lib.where(t > 1, t, np.float64(2))",
    "lib.where(t > 1, np.float64(1), np.float64(2))", "t.masked_fill(t > 1, np.float64(2))",
    "b - b", "b - 1", "t - b", "b.sub(1)", "t.sub(True)", "lib.rsub(t, True)", "t == np.array([1.0, 0.0])",
    "lib.add(t, 1, alpha=np.float64(2))", "lib.sub(t, 1, alpha=np.float32(2))",
    "lib.addcmul(t, t, t, value=np.float64(0.5))", "lib.addcdiv(t, t, t + 1, value=np.float64(0.5))",
    "lib.logit(t / 3, eps=np.float64(1e-6))", "lib.arange(np.int64(3))", "lib.arange(np.int64(1), np.int64(4))",
    "t.sum(np.int64(0))", "t.mean(dim=np.int32(0))", "t.mul_(np.float64(2))", "t.add_(np.float64(2))",
    "t.clamp_(np.float64(0), np.float64(1))", "lib.full_like(t, np.float64(1))", "lib.lerp(t, t * 2, np.float64(0.5))",
    "lib.tensor([np.float64(1), 2.0])", "lib.tensor([np.float32(1), 2.0])", "lib.tensor([np.int32(1), 2])",
    "lib.tensor([np.float16(1), 2])", "lib.tensor([[np.float64(1)], [2.0]])", "lib.tensor([np.int64(1), 2.5])",
    "lib.tensor([np.float32(1), lib.tensor(2.0)])",
])
def test_number_arguments_as_torch(call):
    outcomes = []
    for lib in LIBS:
        t, i, b = lib.tensor([1.0, 2.0]), lib.arange(3), lib.tensor([True, False])
        outcomes.append(_outcome(lambda: eval(call, {"lib": lib, "np": np, "t": t, "i": i, "b": b})))  # noqa: S307
    assert _same(*outcomes), f"{call}: {outcomes}"


def test_numpy_learning_rate_updates_in_float32():
    """An optimiser step with an np.float64 learning rate computes in float32, exactly as with the Python float."""
    rng = np.random.default_rng(0)
    start, grad = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    results = []
    for lr in (0.0123456789, np.float64(0.0123456789)):
        p = retrograd.tensor(start.copy(), requires_grad=True)
        p.grad = retrograd.tensor(grad)
        retrograd.optim.SGD([p], lr=lr).step()
        results.append(p.detach().numpy())
    assert results[1].dtype == np.float32 and np.array_equal(results[0], results[1])


def test_numpy_scalar_keeps_float32_through_a_graph():
    """A NumPy scalar in a formula-like expression keeps the graph float32, as in torch (it used to promote)."""
    for lib in LIBS:
        w = lib.ones(3, requires_grad=True)
        y = (w * np.sqrt(np.float64(2)) + np.float32(1)) ** np.float64(2)
        y.sum().backward()
        assert y.dtype == lib.float32 and w.grad.dtype == lib.float32
        assert y.grad_fn.name() == "PowBackward0"
