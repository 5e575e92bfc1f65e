"""uint8 ("byte") masks, the masks of code written before torch.bool (pytorch-crf's default `mask`), against torch:
`torch.where` takes one with a deprecation warning, all/any of one stay uint8, indexing by one warns every time,
`x[mask] = 0` and index_put_ of one element refuse one (torch writes them by masked_fill_), and each mask-taking
op refuses the other dtypes in its own words. Each case compares values and dtype, or the exception's type and text,
and the warnings with the line they point at."""

import warnings

import numpy as np
import pytest
import torch

import retrograd

LIBS = (torch, retrograd)
DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
          "complex128", "uint16", "uint32", "uint64")


def _outcome(fn):
    """(('ok', dtype, values) or (exception type, message), [(warning text, file name)]), with warn-once warnings
    given every time so that each call shows its own."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn()
            result = ("ok", str(out.dtype), out.tolist()) if out is not None else ("ok",)
        except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
            result = (type(e).__name__, str(e))
    return result, [(str(w.message), w.filename) for w in caught]


@pytest.fixture
def warn_always():
    """torch.set_warn_always(True) in both libraries for the test (where's uint8 warning is a once-per-process one)."""
    for lib in LIBS:
        lib.set_warn_always(True)
    yield
    for lib in LIBS:
        lib.set_warn_always(False)


def _mask(lib, dtype="uint8"):
    return lib.tensor([0, 2, 1]).to(getattr(lib, dtype))


WHERE_CASES = {
    "tensors": lambda lib, c: lib.where(c, lib.tensor([1., 2., 3.]), lib.zeros(3)),
    "method": lambda lib, c: lib.tensor([1., 2., 3.]).where(c, lib.zeros(3)),
    "numbers": lambda lib, c: lib.where(c, 1., 0.),
    "tensor and number": lambda lib, c: lib.where(c, lib.tensor([1, 2, 3]), -1),
    "broadcast": lambda lib, c: lib.where(c.unsqueeze(1), lib.ones(3, 2), lib.zeros(1, 2)),
    "nonzero": lambda lib, c: lib.where(c)[0],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", WHERE_CASES)
def test_where_takes_a_byte_condition_with_torchs_warning_and_refuses_other_dtypes(case, dtype, warn_always):
    assert _outcome(lambda: WHERE_CASES[case](retrograd, _mask(retrograd, dtype))) == \
        _outcome(lambda: WHERE_CASES[case](torch, _mask(torch, dtype)))


def test_where_on_a_byte_condition_passes_the_gradient_where_it_is_nonzero():
    grads = []
    for lib in LIBS:
        a = lib.tensor([1., 2., 3.], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = lib.where(_mask(lib), a, lib.zeros(3))
        (out * lib.tensor([1., 10., 100.])).sum().backward()
        grads.append((out.grad_fn.name(), a.grad.tolist()))
    assert grads[0] == grads[1]


REDUCTIONS = {
    "all": lambda t: t.all(), "any": lambda t: t.any(), "all dim": lambda t: t.view(3, 1).all(0),
    "any keepdim": lambda t: t.view(1, 3).any(dim=1, keepdim=True), "torch.all": lambda t: t.all(-1),
    "any of dims": lambda t: t.view(3, 1).any((0, 1)), "empty all": lambda t: t[:0].all(),
}


@pytest.mark.parametrize("dtype", ("uint8", "int8", "bool", "float32"))
@pytest.mark.parametrize("case", REDUCTIONS)
def test_all_and_any_of_a_byte_tensor_stay_uint8(case, dtype):
    assert _outcome(lambda: REDUCTIONS[case](_mask(retrograd, dtype))) == \
        _outcome(lambda: REDUCTIONS[case](_mask(torch, dtype)))


MASKED = {
    "masked_fill": lambda lib, m: lib.tensor([1., 2., 3.]).masked_fill(m, 0.),
    "masked_scatter": lambda lib, m: lib.tensor([1., 2., 3.]).masked_scatter(m, lib.ones(3)),
    "masked_select": lambda lib, m: lib.tensor([1., 2., 3.]).masked_select(m),
    "index": lambda lib, m: lib.tensor([1., 2., 3.])[m],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MASKED)
def test_mask_ops_refuse_other_dtypes_in_torchs_words(case, dtype):
    assert _outcome(lambda: MASKED[case](retrograd, _mask(retrograd, dtype))) == \
        _outcome(lambda: MASKED[case](torch, _mask(torch, dtype)))


def _write(lib, key, value, accumulate=None, shape=(3,)):
    """x[key] = value (or index_put_ with accumulate) on a clone of a leaf, and what came of it."""
    x = lib.zeros(shape, requires_grad=True).clone()
    if accumulate is None:
        x[key] = value
    else:
        x.index_put_(key, value, accumulate=accumulate)
    return x


WRITES = {
    "scalar": lambda lib, m: _write(lib, m, 1.),
    "int": lambda lib, m: _write(lib, m, 4),
    "0-d": lambda lib, m: _write(lib, m, lib.tensor(2.)),
    "one element": lambda lib, m: _write(lib, m, lib.tensor([2.])),
    "two elements": lambda lib, m: _write(lib, m, lib.tensor([2., 3.])),
    "index_put_": lambda lib, m: _write(lib, (m,), lib.tensor(2.), False),
    "index_put_ accumulate": lambda lib, m: _write(lib, (m,), lib.tensor(2.), True),
    "torch.index_put": lambda lib, m: lib.index_put(lib.zeros(3), (m,), lib.tensor(2.)),
    "after a slice": lambda lib, m: _write(lib, (slice(None), m), 4., None, (2, 3)),
    "after an integer": lambda lib, m: _write(lib, (0, m), 4., None, (2, 3)),
    "after an ellipsis": lambda lib, m: _write(lib, (..., m), 4., None, (2, 3)),
    "beside a long index": lambda lib, m: _write(lib, (lib.tensor([0, 1]), m), 4., None, (2, 3)),
}


@pytest.mark.parametrize("dtype", ("uint8", "bool"))
@pytest.mark.parametrize("case", WRITES)
def test_one_element_written_through_a_lone_byte_mask_is_refused_by_masked_fill(case, dtype):
    assert _outcome(lambda: WRITES[case](retrograd, _mask(retrograd, dtype))) == \
        _outcome(lambda: WRITES[case](torch, _mask(torch, dtype)))


INDEX_KEYS = {
    "0-d byte": lambda lib: lib.tensor(1, dtype=lib.uint8), "0-d byte zero": lambda lib: lib.tensor(0, dtype=lib.uint8),
    "0-d int8": lambda lib: lib.tensor(1, dtype=lib.int8), "0-d uint16": lambda lib: lib.tensor(1, dtype=lib.uint16),
    "int16": lambda lib: lib.tensor([0, 2], dtype=lib.int16), "int32": lambda lib: lib.tensor([0, 2], dtype=lib.int32),
    "int8 array": lambda lib: np.array([0, 2], dtype=np.int8), "uint8 array": lambda lib: np.array([0, 2, 1], np.uint8),
    "list holding a tensor": lambda lib: [lib.tensor([0, 1]), 0],
}


@pytest.mark.parametrize("write", (False, True))
@pytest.mark.parametrize("key", INDEX_KEYS)
def test_index_tensors_are_long_int_byte_or_bool_and_a_0d_byte_is_a_mask(key, write):
    def index(lib):
        x = lib.tensor([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])
        if not write:
            return x[INDEX_KEYS[key](lib)]
        x[INDEX_KEYS[key](lib)] = 0.
        return x

    assert _outcome(lambda: index(retrograd)) == _outcome(lambda: index(torch))


def test_index_put_refuses_an_int8_index():
    assert _outcome(lambda: retrograd.zeros(3).index_put_((retrograd.tensor([0], dtype=retrograd.int8),),
                                                          retrograd.tensor(5.))) == \
        _outcome(lambda: torch.zeros(3).index_put_((torch.tensor([0], dtype=torch.int8),), torch.tensor(5.)))


INDEX_OPS = {
    "index_select": lambda lib, i: lib.arange(6.).view(2, 3).index_select(1, i),
    "index_fill": lambda lib, i: lib.arange(6.).view(2, 3).index_fill(1, i, 0.),
    "index_add_": lambda lib, i: lib.arange(6.).view(2, 3).index_add_(1, i, lib.ones(2, 2)),
}
INDEXES = {
    **{dtype: (lambda dtype: lambda lib: lib.tensor([0, 1]).to(getattr(lib, dtype)))(dtype)
       for dtype in ("uint8", "int8", "int16", "int32", "int64", "uint16", "float32", "bool")},
    "2-d int64": lambda lib: lib.zeros(2, 2, dtype=lib.int64), "2-d float": lambda lib: lib.zeros(2, 2),
    "0-d int32": lambda lib: lib.tensor(1, dtype=lib.int32),
}


@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("op", INDEX_OPS)
def test_index_ops_take_the_index_dtypes_torch_takes_and_check_them_in_its_order(op, index):
    assert _outcome(lambda: INDEX_OPS[op](retrograd, INDEXES[index](retrograd))) == \
        _outcome(lambda: INDEX_OPS[op](torch, INDEXES[index](torch)))


def test_index_reduce_warns_that_it_is_in_beta_after_checking_its_arguments(warn_always):
    def calls(lib):
        x = lib.arange(6.).view(2, 3)
        return [_outcome(lambda: x.index_reduce(1, lib.tensor([0, 1]), lib.ones(2, 2), "sum")),
                _outcome(lambda: x.index_reduce(1, lib.tensor([0, 1]), lib.ones(2, 2), "prod"))]

    assert calls(retrograd) == calls(torch)
