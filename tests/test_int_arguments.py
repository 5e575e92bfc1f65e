"""Integer arguments (dims, sizes, counts) as torch's argument parser takes them: Python ints, NumPy's integers and
one-element integer tensors are ints; a float or a bool is refused with a TypeError, where Python's own int() or
indexing would truncate the float or take the bool as 0 or 1 and compute something silently."""

import collections
import fractions

import numpy as np
import pytest
import torch

import retrograd

LIBS = {"torch": torch, "retrograd": retrograd}

REFUSED = {
    "view(float, int)": lambda lib: lib.ones(2, 4).view(4.0, 2),
    "view([float, int])": lambda lib: lib.ones(2, 4).view([4.0, 2]),
    "view(bool, int)": lambda lib: lib.ones(2, 4).view(True, 8),
    "reshape(float, int)": lambda lib: lib.ones(2, 4).reshape(4.0, 2),
    "reshape((float, int))": lambda lib: lib.ones(2, 4).reshape((4.0, 2)),
    "expand(float, int)": lambda lib: lib.ones(1, 4).expand(3.0, 4),
    "permute(float, int)": lambda lib: lib.ones(2, 4).permute(1.0, 0),
    "repeat(bool, int)": lambda lib: lib.ones(2, 4).repeat(True, 1),
    "flip(float)": lambda lib: lib.ones(2, 4).flip(0.0),
    "zeros(bool, int)": lambda lib: lib.zeros(True, 3),
    "ones(float, int)": lambda lib: lib.ones(2.0, 3),
    "ones((int, float))": lambda lib: lib.ones((2, 3.0)),
    "randn(float)": lambda lib: lib.randn(2.0),
    "randn(int, size=)": lambda lib: lib.randn(2, size=(3,)),
    "rand(size=int)": lambda lib: lib.rand(size=4),
    "new_zeros(float)": lambda lib: lib.ones(2).new_zeros(2.0),
    "unsqueeze(bool)": lambda lib: lib.ones(2, 4).unsqueeze(True),
    "unsqueeze(float)": lambda lib: lib.ones(2, 4).unsqueeze(0.0),
    "sum(bool)": lambda lib: lib.ones(2, 4).sum(True),
    "sum(float)": lambda lib: lib.ones(2, 4).sum(1.0),
    "sum([int, float])": lambda lib: lib.ones(2, 4).sum([0, 1.0]),
    "transpose(float, int)": lambda lib: lib.ones(2, 4).transpose(0.0, 1),
    "softmax(float)": lambda lib: lib.ones(2, 4).softmax(1.0),
    "cat(dim=float)": lambda lib: lib.cat([lib.ones(2), lib.ones(2)], 0.0),
    "flatten(float)": lambda lib: lib.ones(2, 4).flatten(0.0),
    "select(float, int)": lambda lib: lib.ones(2, 4).select(0.0, 1),
    "narrow(int, float, int)": lambda lib: lib.ones(2, 4).narrow(1, 1.0, 2),
    "narrow(int, int, float)": lambda lib: lib.ones(2, 4).narrow(1, 0, 2.0),
    "topk(bool)": lambda lib: lib.arange(5.0).topk(True),
    "topk(float)": lambda lib: lib.arange(5.0).topk(2.0),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_float_or_bool_integer_argument_is_a_type_error(case):
    for lib in LIBS.values():
        with pytest.raises(TypeError):
            REFUSED[case](lib)


SAME_MESSAGE = {
    "reshape((float, int))": lambda lib: lib.ones(2, 4).reshape((4.0, 2)),
    "zeros((bool, int))": lambda lib: lib.zeros((True, 3)),
    "zeros(range)": lambda lib: lib.zeros(range(2, 4)),
    "ones(ndarray)": lambda lib: lib.ones(np.array([2, 3])),
    "randn(tensor of sizes)": lambda lib: lib.randn(lib.tensor([2, 3])),
    "reshape(ndarray)": lambda lib: lib.ones(2, 4).reshape(np.array([4, 2])),
    # a class defined in Python is named bare, as CPython's tp_name (an extension's carries its module)
    "reshape(Fraction)": lambda lib: lib.ones(2, 4).reshape(fractions.Fraction(8)),
    "reshape(OrderedDict)": lambda lib: lib.ones(2, 4).reshape(collections.OrderedDict()),
    "zeros(int, size=)": lambda lib: lib.zeros(2, size=(3,)),
    "zeros(size=int)": lambda lib: lib.zeros(size=4),
    # an int list's later element fails as the list is unpacked: another message than the first element's
    "zeros(int, float)": lambda lib: lib.zeros(1, 0.5),
    "view(int, float)": lambda lib: lib.ones(2, 4).view(4, 2.0),
    "flip(bool)": lambda lib: lib.ones(2, 4).flip(True),
    "pad((float, int))": lambda lib: lib.nn.functional.pad(lib.ones(2, 4), (1.5, 1)),
    "pad(int)": lambda lib: lib.nn.functional.pad(lib.ones(2, 4), 1),
    "unflatten(int, int)": lambda lib: lib.ones(2, 4).unflatten(1, 4),
    # only a method gathers varargs for its one int-list parameter; a function takes the list alone
    "torch.flip(int)": lambda lib: lib.flip(lib.ones(2, 4), 1),
    "torch.permute(int, int)": lambda lib: lib.permute(lib.ones(2, 4), 1, 0),
    "torch.reshape(int)": lambda lib: lib.reshape(lib.ones(2, 4), 8),
    "torch.tile(int)": lambda lib: lib.tile(lib.ones(2, 4), 2),
    "torch.reshape(x, (int, float))": lambda lib: lib.reshape(lib.ones(2, 4), (8, 1.0)),
    "permute(float, int)": lambda lib: lib.ones(2, 4).permute(1.0, 0),
    "permute()": lambda lib: lib.ones(2, 4).permute(),
    "tile(int, dims=)": lambda lib: lib.ones(2, 4).tile(2, dims=(2,)),
    "flip(dim=int)": lambda lib: lib.ones(2, 4).flip(dim=0),
}


@pytest.mark.parametrize("case", SAME_MESSAGE)
def test_a_shape_that_is_not_a_tuple_of_ints_has_torchs_message(case):
    """One tuple or list of ints, or ints one by one: any other container of sizes is refused, as is a bad element."""
    messages = []
    for lib in LIBS.values():
        with pytest.raises(TypeError) as caught:
            SAME_MESSAGE[case](lib)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


ACCEPTED = {
    "view(np.int64, int)": lambda lib: lib.arange(8.0).view(np.int64(4), 2),
    "view(tensor, int)": lambda lib: lib.arange(8.0).view(lib.tensor(4), 2),
    "reshape(torch.Size)": lambda lib: lib.arange(8.0).reshape(lib.Size([2, 4])),
    "expand(np.int32, int)": lambda lib: lib.arange(4.0).view(1, 4).expand(np.int32(3), 4),
    "zeros(np.int64)": lambda lib: lib.zeros(np.int64(3)),
    "ones(list)": lambda lib: lib.ones([2, 3]),
    "view(one-element tensor)": lambda lib: lib.arange(8.0).view(lib.tensor([8])),
    "unsqueeze(np.int64)": lambda lib: lib.arange(4.0).unsqueeze(np.int64(0)),
    "unsqueeze(tensor)": lambda lib: lib.arange(4.0).unsqueeze(lib.tensor(1)),
    "sum(tensor)": lambda lib: lib.arange(8.0).view(2, 4).sum(lib.tensor(1)),
    "narrow(int, tensor, int)": lambda lib: lib.arange(6.0).narrow(0, lib.tensor(1), 2),
    "topk(np.int64)": lambda lib: lib.arange(5.0).topk(np.int64(2)).values,
    "flip(np.int64)": lambda lib: lib.arange(4.0).flip(np.int64(0)),
    "zeros(size=tuple)": lambda lib: lib.zeros(size=(2, 3)),
    "ones(size=list)": lambda lib: lib.ones(size=[2, 3], dtype=lib.float64),
    "empty(size=Size).zero_()": lambda lib: lib.empty(size=lib.Size([3])).zero_(),
    "rand(size=tuple).shape": lambda lib: lib.tensor(lib.rand(size=(2, 3)).shape),
    "randn(size=list).shape": lambda lib: lib.tensor(lib.randn(size=[4]).shape),
    "new_zeros(size=tuple)": lambda lib: lib.ones(2).new_zeros(size=(2, 3)),
    "new_full(size=, fill_value=)": lambda lib: lib.ones(2).new_full(size=(2,), fill_value=7.0),
    "ones(int, bool)": lambda lib: lib.ones(2, True),
    "tile(int)": lambda lib: lib.arange(6.0).view(2, 3).tile(2),
    "tile(int, int)": lambda lib: lib.arange(6.0).view(2, 3).tile(2, 1),
    "flip(int, int)": lambda lib: lib.arange(6.0).view(2, 3).flip(0, 1),
    "permute(dims=list)": lambda lib: lib.arange(6.0).view(2, 3).permute(dims=[1, 0]),
    "torch.permute(x, dims=tuple)": lambda lib: lib.permute(lib.arange(6.0).view(2, 3), dims=(1, 0)),
    "reshape(shape=list)": lambda lib: lib.arange(6.0).reshape(shape=[3, 2]),
    "torch.reshape(x, shape=tuple)": lambda lib: lib.reshape(lib.arange(6.0), shape=(3, 2)),
    "flip(dims=list)": lambda lib: lib.arange(6.0).view(2, 3).flip(dims=[0]),
    "torch.tile(x, dims=tuple)": lambda lib: lib.tile(lib.arange(3.0), dims=(2,)),
    "view(size=tuple)": lambda lib: lib.arange(6.0).view(size=(3, 2)),
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_integers_of_other_types_are_taken_as_torch_takes_them(case):
    theirs, ours = (ACCEPTED[case](lib) for lib in LIBS.values())
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
