"""Operands of Tensor operators and number arguments, against torch (Note [operands] in ops/registry.py):
Python numbers and NumPy scalars count as numbers (they never raise a tensor's dtype within its category),
other objects give Python's TypeError, and `-` refuses booleans; NumPy arrays and functions meet tensors as they
meet torch's (Note [NumPy interop] in _tensor.py). Each case compares the result's dtype and values, or the
exception's type and message."""

import operator
import subprocess
import sys

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
    "lib.add(i, i, alpha=2.0)", "lib.sub(i, 1, alpha=2.0)", "lib.rsub(i, i, alpha=0.5)", "lib.add(i, t, alpha=2.0)",
    "lib.add(i, i, alpha=np.float64(2))", "lib.add(i, i, alpha=np.int64(2))", "lib.add(i, i, alpha=True)",
    "lib.add(b, b, alpha=2)", "lib.add(b, b, alpha=True)", "lib.add(b, b, alpha=0)", "lib.add(t, t, alpha=1j)",
    "i.add_(i, alpha=2.0)",
    "lib.addcmul(t, t, t, value=np.float64(0.5))", "lib.addcdiv(t, t, t + 1, value=np.float64(0.5))",
    "lib.logit(t / 3, eps=np.float64(1e-6))", "lib.arange(np.int64(3))", "lib.arange(np.int64(1), np.int64(4))",
    "t.sum(np.int64(0))", "t.mean(dim=np.int32(0))", "t.mul_(np.float64(2))", "t.add_(np.float64(2))",
    "t.clamp_(np.float64(0), np.float64(1))", "lib.full_like(t, np.float64(1))", "lib.lerp(t, t * 2, np.float64(0.5))",
    "lib.tensor([np.float64(1), 2.0])", "lib.tensor([np.float32(1), 2.0])", "lib.tensor([np.int32(1), 2])",
    "lib.tensor([np.float16(1), 2])", "lib.tensor([[np.float64(1)], [2.0]])", "lib.tensor([np.int64(1), 2.5])",
    "lib.tensor([np.float32(1), lib.tensor(2.0)])",
    # a tensor where the dims (found down the first items) end is one number; above that, a sequence of its rows
    "lib.tensor([lib.tensor([0.5]), lib.tensor([1.5])])", "lib.tensor([lib.ones(2), lib.ones(2)])",
    "lib.tensor([lib.ones(1, 2)])", "lib.tensor([lib.zeros(0)])", "lib.as_tensor([lib.tensor([0.5]), t[:1]])",
    "lib.tensor([lib.tensor(1, dtype=lib.int32), 2])", "lib.tensor([lib.tensor(1.5, dtype=lib.float64), 2])",
    "lib.tensor([lib.tensor(1, dtype=lib.int32), lib.tensor(2, dtype=lib.int16)])",
    "lib.tensor([[lib.tensor(1.0), 2.0], [3.0, lib.tensor([4.0])]])", "lib.tensor((b[0], b[1]))",
    "lib.tensor([np.array([1.0, 2.0]), t])", "lib.tensor([t, np.array([1.0, 2.0])])", "lib.tensor([i[2], 2.5])",
    "lib.tensor([lib.tensor(0.1, dtype=lib.float64)], dtype=lib.float32)", "lib.tensor([[i[0]], [i[1]]])",
    # data NumPy does not take, read as torch reads it (Note [data NumPy does not take])
    "lib.tensor([[1, 2], [3]])", "lib.tensor([[1, 2], 3])", "lib.tensor([1, [2]])",
    "lib.tensor([[[1, 2]], [[3, 4], [5, 6]]])", "lib.tensor([[], [1]])", "lib.tensor(['a'])", "lib.tensor('a')",
    "lib.tensor(None)", "lib.tensor([1, None])",
    "lib.tensor({'a': 1})", "lib.tensor([2 ** 63])", "lib.tensor([-2 ** 63 - 1])", "lib.tensor([1, 2 ** 63])",
    "lib.tensor([1.5, 2 ** 70])", "lib.tensor([2 ** 63], dtype=lib.float32)", "lib.tensor([1, 'a'])",
    "lib.tensor([[1, 2], [3]], dtype=lib.float64)", "lib.as_tensor([[1, 2], [3]])", "lib.tensor([1.0, [2.0]])",
    # a shift's Python number promotes as any operand: a bool tensor shifted by an int is int64
    "b << 1", "b >> 1", "1 << b", "b << True", "i << 1.5", "lib.bitwise_right_shift(8, i)", "b.bitwise_left_shift(2)",
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


ARRAY = np.array([2.0, 0.5])
INTEROP = {
    "t + array": lambda t: t + ARRAY, "array + t": lambda t: ARRAY + t, "array * t": lambda t: ARRAY * t,
    "t * float32 array": lambda t: t * ARRAY.astype(np.float32), "t - array": lambda t: t - ARRAY,
    "t / array": lambda t: t / ARRAY, "array / t": lambda t: ARRAY / t, "t ** array": lambda t: t ** ARRAY,
    "t // int array": lambda t: t // np.array([1, 2]), "t % array": lambda t: t % ARRAY,
    "t < array": lambda t: t < ARRAY, "array < t": lambda t: ARRAY < t, "t == array": lambda t: t == ARRAY,
    "t @ array": lambda t: t @ ARRAY, "array @ t": lambda t: ARRAY @ t, "t + 0-d array": lambda t: t + np.array(2.0),
    "np.float64 * t": lambda t: np.float64(2) * t, "np.exp(t)": np.exp, "np.add(t, array)": lambda t: np.add(t, ARRAY),
    "np.greater(t, 1)": lambda t: np.greater(t, 1.0), "np.maximum(t, array)": lambda t: np.maximum(t, ARRAY),
    "np.sqrt(t[0])": lambda t: np.sqrt(t[0]), "np.asarray(t)": np.asarray,
    "np.array(t, float32)": lambda t: np.array(t, dtype=np.float32), "np.concatenate": lambda t: np.concatenate([t, t]),
    "array += t": lambda t: operator.iadd(ARRAY.copy(), t), "float(t[0])": lambda t: float(t[0]),
}


def _interop_outcome(fn):
    """Like _outcome, also telling a NumPy array from a tensor."""
    outcome = _outcome(fn)
    try:
        kind = type(fn()).__name__
    except Exception:  # noqa: BLE001 - the exception is in the outcome already
        kind = None
    return (*outcome, kind if kind in ("ndarray", "Tensor") else None)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", sorted(INTEROP))
def test_numpy_meets_tensors_as_torch(name, requires_grad):
    """NumPy computes `t + array` and `np.exp(t)` and hands back a tensor (booleans as uint8); with grad it
    is refused with torch's RuntimeError (Note [NumPy interop])."""
    fn = INTEROP[name]
    expected, got = (_interop_outcome(lambda lib=lib: fn(lib.tensor([1.0, 2.0], requires_grad=requires_grad)))
                     for lib in LIBS)
    assert expected[-1] == got[-1]
    assert _same(expected[:-1], got[:-1]), (expected, got)


SCALAR_OF_GRAD = """
import warnings
warnings.simplefilter("always")
import {lib} as torch
t = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    float(t[0])
float(t[0]); float(t[1]); complex(t[0]); t[0].item(); int(t[1]); float(t[0].detach())
"""


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch():
    """torch warns once per process when float() or complex() drops a tensor's grad with grad mode on (under
    no_grad it does not, as LBFGS reads its closure's loss); item() and int() do not."""
    runs = [subprocess.run([sys.executable, "-c", SCALAR_OF_GRAD.format(lib=lib)], capture_output=True, text=True,
                           check=True).stderr for lib in ("torch", "retrograd")]
    assert [run.count("UserWarning: Converting a tensor with requires_grad=True to a scalar") for run in runs] == [1, 1]
    assert [run.startswith("<string>:8: ") for run in runs] == [True, True]  # at line 8, after no_grad, not in it
    assert runs[0] == runs[1]  # torch's words, its C++ suffix included


def test_a_tensor_made_from_tensors_that_require_grad_warns_as_torch():
    """tensor() reads a one-element tensor inside a list as a number, with float()'s warning, at the user's line."""
    code = "import {lib} as torch\nt = torch.ones(2, requires_grad=True)\nprint(torch.tensor([t[0], t[1]]))\n"
    runs = [subprocess.run([sys.executable, "-W", "always", "-c", code.format(lib=lib)], capture_output=True,
                           text=True, check=True) for lib in ("torch", "retrograd")]
    assert runs[0].stderr == runs[1].stderr and runs[0].stderr.startswith("<string>:3: UserWarning: Converting")
    assert runs[0].stdout == runs[1].stdout


@pytest.mark.parametrize("convert", [float, int, complex, lambda t: "%.2f" % t])  # noqa: UP031
@pytest.mark.parametrize("shape", [(3,), (0,), (2, 2)])
def test_a_python_scalar_of_a_tensor_not_of_one_element_is_torchs_value_error(convert, shape):
    """float(t), int(t), complex(t) and %-formatting refuse a tensor of any other count than one with torch's
    ValueError (a loop's `float(loss_per_sample)`); t.item() says a RuntimeError instead."""
    raised = []
    for lib in LIBS:
        with pytest.raises(ValueError) as error:
            convert(lib.ones(shape))
        with pytest.raises(RuntimeError) as item_error:
            lib.ones(shape).item()
        raised.append((str(error.value), str(item_error.value)))
    assert raised[0] == raised[1]


NUMPY_WRAPS = """
import numpy as np
import {lib} as torch
t = torch.tensor([1.0, 2.0])
t + np.array([2.0, 3.0])
np.exp(t)
np.greater(t, 1.0)
t * np.float64(2.0)
np.asarray(t)
"""


def test_numpy_wrapping_a_result_warns_as_with_torch():
    """torch's Tensor.__array_wrap__ takes the array alone, so each NumPy function it wraps a result for (not a
    NumPy scalar's operator, not asarray) gets NumPy 2's DeprecationWarning, shown at the caller's line."""
    runs = [subprocess.run([sys.executable, "-c", NUMPY_WRAPS.format(lib=lib)], capture_output=True, text=True,
                           check=True).stderr for lib in ("torch", "retrograd")]
    assert runs[1] == runs[0]
    warned = [line.split(":")[1] for line in runs[0].splitlines()
              if "DeprecationWarning: __array_wrap__ must accept context and return_scalar" in line]
    assert warned == (["5", "6", "7"] if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else [])


@pytest.mark.parametrize(("data", "dtype"), [
    ([0.3], "float64"), (0.3, "float64"), ([[0.1, 0.2]], "float64"), ([1, 2**40 + 1], "float64"), ([0.3], "float32"),
    ([0.3], "float16"), ([0.1 + 0.2j], "complex128"), ([np.float32(0.3)], "float64"), ([True, False], "float64"),
    ([2**53 + 1], "int64"), ([1.5, 2], "int64"), ([-1.7], "int32"), ([1e40], "float32"), ([0.3], None),
    ([np.float64(0.3), 1], None),
])
def test_tensor_keeps_python_numbers_exact_up_to_its_dtype(data, dtype):
    """tensor(data, dtype=float64) holds the numbers themselves, not their float32 roundings: bit for bit as torch."""
    expected, got = (lib.tensor(data, dtype=None if dtype is None else getattr(lib, dtype)) for lib in LIBS)
    assert str(got.dtype) == str(expected.dtype)
    assert got.tolist() == expected.tolist()


# every dtype as a 1-d and a 0-d tensor, and each kind of number (float16 with complex gives complex32)
_PROMOTION_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                     "complex32", "complex64", "complex128")
_PROMOTION_OPERANDS = [(d, n) for d in _PROMOTION_DTYPES for n in (1, 0)] + [
    (v, None) for v in (True, 3, 2.5, 1j, np.float64(2.5), np.int32(3))]


def _promotion_operand(lib, kind):
    value, ndim = kind
    return value if ndim is None else lib.ones((2,) * ndim, dtype=getattr(lib, value))


@pytest.mark.parametrize("a", _PROMOTION_OPERANDS, ids=str)
def test_result_type_as_torch(a):
    """torch.result_type's tiers (dimensioned tensors > 0-d tensors > numbers) for every pair, one home
    (_dtype.result_type) for every caller."""
    for b in _PROMOTION_OPERANDS:
        if a[1] is None and b[1] is None:
            continue
        expected = torch.result_type(_promotion_operand(torch, a), _promotion_operand(torch, b))
        assert str(retrograd.result_type(_promotion_operand(retrograd, a), _promotion_operand(retrograd, b))) == \
            str(expected), (a, b)
        if a[1] is not None and b[1] is not None and expected != torch.bool:  # an op promotes the same way
            got = retrograd.add(_promotion_operand(retrograd, a), _promotion_operand(retrograd, b)).dtype
            assert str(got) == str(expected), (a, b)


AUGMENTED = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
             "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "&=": operator.iand,
             "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift, ">>=": operator.irshift}


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
@pytest.mark.parametrize("symbol", AUGMENTED)
def test_augmented_assignment_writes_in_place_as_torch(dtype, symbol):
    """`view op= other` changes the tensor itself (so its base too) and keeps its identity, or raises as torch:
    without the in-place dunder Python would rebind the name to an out-of-place result."""
    outcomes = []
    for lib in LIBS:
        base = lib.tensor([6, -7, 8, 9], dtype=getattr(lib, dtype))
        view = base[1:3]
        other = lib.tensor([2, 3], dtype=getattr(lib, dtype)) if dtype != "bool" else lib.tensor([True, False])

        def update(view=view, other=other):
            result = AUGMENTED[symbol](view, other)
            return lib.tensor([*base.tolist(), result is view], dtype=lib.float64)
        outcomes.append(_outcome(update))
    assert _same(*outcomes), f"{dtype} {symbol}: {outcomes}"


def test_reversed_iterates_the_first_dim_backwards_as_torch():
    for lib in LIBS:
        assert [t.tolist() for t in reversed(lib.arange(4).view(2, 2))] == [[2, 3], [0, 1]]
        assert reversed(lib.tensor(5.0)).tolist() == 5.0


SCALE_FIRST = """
import warnings
import {lib} as torch
p = torch.ones(3); g = torch.full((3,), 2.0); d = torch.full((3,), 4.0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = [p.clone().add_(-0.1, g), p.add(2, g), torch.add(p, 2, g), p.sub(2, g), p.clone().sub_(2, g),
           torch.sub(p, 2, g), p.clone().addcmul_(1, g, g), p.addcmul(0.5, g, g), torch.addcmul(p, 0.5, g, g),
           p.clone().addcdiv_(-0.1, g, d), torch.addcdiv(p, 0.5, g, d), p.add(2, 3), torch.add(p, 2, 3)]
print([o.tolist() for o in out], [str(w.message) for w in caught])
x = torch.ones(2, requires_grad=True)
y = x.add(3, x)
y.sum().backward()
print(x.grad, y.grad_fn.name())
"""


def test_deprecated_scale_first_overloads_run_and_warn_once_as_torch():
    """Old optimizer code's `p.add_(-lr, g)` and `addcmul_(value, t1, t2)`: torch still takes the scale first,
    as methods, in place and as functions, warning once per process (Note [deprecated scale-first overloads])."""
    runs = [subprocess.run([sys.executable, "-c", SCALE_FIRST.format(lib=lib)], capture_output=True, text=True,
                           check=True).stdout for lib in ("torch", "retrograd")]
    assert runs[0] == runs[1] and "This overload of add_ is deprecated" in runs[0]
