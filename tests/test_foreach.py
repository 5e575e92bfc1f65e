"""torch._foreach_* against torch 2.13: every name torch has, out of place and in place, with each kind of second
operand (a number, a list of numbers, a list of tensors, a 0-d tensor), their gradients, and the lists' errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd
from retrograd import _foreach

LIBS = (torch, retrograd)
SHAPES = ((3,), (2, 4), ())
# values in (0.2, 0.8) keep every unary op inside its domain and away from its kinks and poles
VALUES = [np.random.default_rng(i).uniform(0.2, 0.8, shape) for i, shape in enumerate(SHAPES)]


def tensors(lib, requires_grad=False, scale=1.0, dtype="float64"):
    return [lib.tensor(v * scale, dtype=getattr(lib, dtype), requires_grad=requires_grad) for v in VALUES]


def same(ours, theirs):
    assert type(ours) is type(theirs) or isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_every_foreach_name_of_torch_is_here():
    assert sorted(n for n in dir(torch) if n.startswith("_foreach_") and not hasattr(retrograd, n)) == []


def operands(lib, kind):
    return {"number": 0.5, "numbers": [0.5, 1.5, 2.0], "tensors": tensors(lib, scale=2.0),
            "0-d tensor": lib.tensor(1.5, dtype=lib.float64)}[kind]


def run(lib, name, make_args, requires_grad):
    """The op's outputs and, when it records, the gradients of their sum."""
    inputs = tensors(lib, requires_grad)
    outputs = getattr(lib, name)(inputs, *make_args(lib))
    if not requires_grad:
        return outputs, []
    lib.stack([o.sum() for o in outputs]).sum().backward()
    return outputs, [t.grad for t in inputs]


UNARY_CASES = [(f"_foreach_{op}", lambda lib: ()) for op in _foreach.UNARY]
BINARY_CASES = [(f"_foreach_{op}", lambda lib, kind=kind: (operands(lib, kind),))
                for op in _foreach.BINARY for kind in ("number", "numbers", "tensors", "0-d tensor")
                if not (op in ("clamp_min", "clamp_max") and kind == "0-d tensor")]
OTHER_CASES = [
    ("_foreach_add", lambda lib: (tensors(lib, scale=2.0),), {"alpha": 3}),
    ("_foreach_add", lambda lib: (lib.tensor(2.0, dtype=lib.float64),), {"alpha": 0.5}),
    ("_foreach_sub", lambda lib: ([0.5, 1.0, 2.0],), {}),
    ("_foreach_sub", lambda lib: (tensors(lib, scale=2.0),), {"alpha": 0.5}),
    ("_foreach_addcmul", lambda lib: (tensors(lib, scale=2.0), tensors(lib, scale=3.0)), {}),
    ("_foreach_addcmul", lambda lib: (tensors(lib, scale=2.0), tensors(lib, scale=3.0), [0.5, 1.0, 2.0]), {}),
    ("_foreach_addcdiv", lambda lib: (tensors(lib, scale=2.0), tensors(lib, scale=3.0), 0.25), {}),
    ("_foreach_addcdiv", lambda lib: (tensors(lib, scale=2.0), tensors(lib, scale=3.0),
                                      lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64)), {}),
    ("_foreach_lerp", lambda lib: (tensors(lib, scale=3.0), 0.3), {}),
    ("_foreach_lerp", lambda lib: (tensors(lib, scale=3.0), [0.3, 0.6, 0.9]), {}),
    ("_foreach_lerp", lambda lib: (tensors(lib, scale=3.0), tensors(lib, scale=0.5)), {}),
]


@pytest.mark.parametrize("name, make_args", UNARY_CASES + BINARY_CASES, ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("requires_grad", [False, True])
def test_foreach_op_and_its_gradients_match_torch(name, make_args, requires_grad):
    if requires_grad and name.split("_foreach_")[1] in ("ceil", "floor", "round", "trunc", "sign", "frac"):
        requires_grad = False  # no gradient worth comparing (zero or one everywhere)
    ours, theirs = run(retrograd, name, make_args, requires_grad), run(torch, name, make_args, requires_grad)
    same(ours[0], theirs[0])
    same(ours[1], theirs[1])


@pytest.mark.parametrize("name, make_args, kwargs", OTHER_CASES)
def test_foreach_with_more_operands_matches_torch(name, make_args, kwargs):
    for inplace in (False, True):
        results = []
        for lib in LIBS:
            inputs = tensors(lib)
            returned = getattr(lib, name + "_" * inplace)(inputs, *make_args(lib), **kwargs)
            assert (returned is inputs) == inplace
            results.append(inputs if inplace else returned)
        same(*results)


@pytest.mark.parametrize("op", _foreach.UNARY + _foreach.BINARY)
def test_inplace_forms_write_each_tensor_and_return_the_list(op):
    results = []
    for lib in LIBS:
        inputs = tensors(lib)
        args = () if op in _foreach.UNARY else (operands(lib, "numbers"),)
        assert getattr(lib, f"_foreach_{op}_")(inputs, *args) is inputs
        results.append(inputs)
    same(*results)


@pytest.mark.parametrize("call", [
    lambda lib: lib._foreach_norm(tensors(lib)), lambda lib: lib._foreach_norm(tensors(lib), 1),
    lambda lib: lib._foreach_norm(tensors(lib), float("inf")),
    lambda lib: lib._foreach_norm(tensors(lib, dtype="float32"), dtype=lib.float64),
    lambda lib: lib._foreach_powsum(tensors(lib, scale=-1.0), 3), lambda lib: lib._foreach_max(tensors(lib)),
    lambda lib: lib._foreach_mm([lib.ones(2, 3, dtype=lib.float64)], [lib.ones(3, 4, dtype=lib.float64)]),
    lambda lib: lib._foreach_clone(tensors(lib)), lambda lib: lib._foreach_pow(2.0, tensors(lib)),
    lambda lib: lib._foreach_add([lib.ones(2, dtype=lib.int64)], 1.5),
    lambda lib: lib._foreach_mul([lib.ones(2, dtype=lib.float16)], [lib.ones(2)]),
    lambda lib: lib._foreach_zero_(tensors(lib)),
    lambda lib: lib._foreach_copy_(tensors(lib), tensors(lib, scale=2.0)),
])
def test_reductions_and_helpers_match_torch(call):
    same(call(retrograd), call(torch))


@pytest.mark.parametrize("call", [
    lambda lib: lib._foreach_add(tensors(lib), tensors(lib)[:1]),
    lambda lib: lib._foreach_add([], 1.0),
    lambda lib: lib._foreach_add(tensors(lib), [1.0]),
    lambda lib: lib._foreach_mul_(tensors(lib), tensors(lib)[::-1]),
    lambda lib: lib._foreach_exp(tensors(lib)[0]),
    lambda lib: lib._foreach_norm(5),
    lambda lib: lib._foreach_add(tensors(lib), lib.ones(2)),
    lambda lib: lib._foreach_add_(tensors(lib, requires_grad=True), 1.0),
    lambda lib: lib._foreach_addcdiv(tensors(lib), tensors(lib), tensors(lib), lib.ones(2)),
    lambda lib: lib._foreach_max([lib.ones(0)]),
    lambda lib: lib._foreach_norm([lib.ones(2, dtype=lib.int64)]),
])
def test_errors_are_torchs(call):
    raised = []
    for lib in LIBS:
        with pytest.raises(Exception) as error:
            call(lib)
        raised.append((error.type, str(error.value).split("\n")[0]))
    assert raised[0] == raised[1]


def test_invalid_operand_types_raise_torchs_type_error():
    for lib in LIBS:
        with pytest.raises(TypeError, match=r"^_foreach_add\(\) received an invalid combination of arguments - got "
                                            r"\(list, str\), but expected one of:"):
            lib._foreach_add(tensors(lib), "x")
