"""Tensor attributes and methods, and torch functions, that real programs touch beyond the op table, against
torch 2.13: storages (tied weights found by their data_ptr), layout and device flags, in-place method forms
(`torch.exp_`), element-wise Python callables (`apply_`), subclass aliases, window functions, `asarray` /
`frombuffer`, and the functional forms torch exposes at top level with their own signatures."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from test_tensor_surface import name, outcome

import retrograd

LIBS = (torch, retrograd)


def same(scenario) -> None:
    """The scenario observes the same under torch and retrograd."""
    assert outcome(lambda: scenario(retrograd)) == outcome(lambda: scenario(torch))


# ---- storages ----------------------------------------------------------------------------------------------

STORAGE_SCENARIOS = {
    "offset of a slice": lambda lib: lib.arange(10.)[2:].storage_offset(),
    "offset of a transposed slice": lambda lib: lib.zeros(3, 4).t()[1:].storage_offset(),
    "offset of a 0-d tensor": lambda lib: lib.tensor(3.).storage_offset(),
    "offset of an element": lambda lib: lib.arange(12.).reshape(3, 4)[2, 1].storage_offset(),
    "offset through from_numpy": lambda lib: lib.from_numpy(np.arange(10.)[3:]).storage_offset(),
    "bytes of a view's storage": lambda lib: lib.arange(10.)[2:].untyped_storage().nbytes(),
    "size and len of a storage": lambda lib: (lib.ones(3, 2)[1].untyped_storage().size(),
                                              len(lib.ones(3, 2).untyped_storage())),
    "bytes of an empty storage": lambda lib: lib.zeros(0).untyped_storage().nbytes(),
    "a storage's bytes": lambda lib: lib.tensor([1.0, -2.0])[1:].untyped_storage().tolist(),
    "a storage's byte": lambda lib: lib.tensor([1.0])[0].untyped_storage()[3],
    "a byte out of range": lambda lib: lib.tensor([1.0]).untyped_storage()[4],
    "a storage's element size": lambda lib: lib.ones(2, dtype=lib.float64).untyped_storage().element_size(),
    "typed storage": lambda lib: (lambda s: (s.size(), len(s), s.element_size(), str(s.dtype), s.nbytes(),
                                            s.tolist(), s[1], s.is_shared()))(lib.arange(6).view(2, 3)[1].storage()),
    "typed element out of range": lambda lib: lib.arange(3.).storage()[3],
    "typed storage repr": lambda lib: repr(lib.arange(3.).storage()),
    "untyped storage repr": lambda lib: repr(lib.tensor([1], dtype=lib.int8).untyped_storage()),
    "views share the storage": lambda lib: (lambda x: (
        x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        x.t().detach().untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        x.clone().untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
        x.untyped_storage().data_ptr() == x.data_ptr()))(lib.ones(3, 4)),
    "tied weights": lambda lib: (lambda emb, head: (
        head.weight.untyped_storage().data_ptr() == emb.weight.untyped_storage().data_ptr()))(
        *(lambda e: (e, _tied_head(lib, e)))(lib.nn.Embedding(5, 3))),
    "from_numpy makes a storage per array": lambda lib: (lambda a: (
        lib.from_numpy(a).untyped_storage().data_ptr() == lib.from_numpy(a[2:]).untyped_storage().data_ptr(),
        lib.from_numpy(a[2:]).untyped_storage().nbytes()))(np.arange(10.)),
    "is_storage": lambda lib: (lib.is_storage(lib.ones(2).untyped_storage()), lib.is_storage(lib.ones(2).storage()),
                               lib.is_storage(lib.ones(2)), lib.is_storage([1])),
    "storage classes": lambda lib: (isinstance(lib.ones(1).untyped_storage(), lib.UntypedStorage),
                                    isinstance(lib.ones(1).storage(), lib.TypedStorage),
                                    type(lib.ones(1).storage()) is lib.storage.TypedStorage),
}


def _tied_head(lib, embedding):
    head = lib.nn.Linear(3, 5, bias=False)
    head.weight = embedding.weight
    return head


@pytest.mark.parametrize("scenario", list(STORAGE_SCENARIOS), ids=list(STORAGE_SCENARIOS))
def test_storage_as_torch(scenario):
    same(STORAGE_SCENARIOS[scenario])


def test_typed_storage_warns_once_as_torch():
    script = ("import sys, warnings\nwarnings.simplefilter('always')\nimport {lib} as lib\n"
              "with warnings.catch_warnings(record=True) as seen:\n    lib.ones(2).storage(); lib.ones(2).storage()\n"
              "print([(w.category.__name__, str(w.message)[:31], w.filename == '<string>') for w in seen])")
    seen = [subprocess.run([sys.executable, "-c", script.format(lib=lib.__name__)], capture_output=True, text=True,
                           check=True).stdout for lib in LIBS]
    assert seen[0] == seen[1] == "[('UserWarning', 'TypedStorage is deprecated. It ', True)]\n"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_shared_memory_is_written_by_a_forked_process():
    for lib in LIBS:
        t = lib.zeros(4)
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared() and t.untyped_storage().is_shared()
        pid = os.fork()
        if pid == 0:
            t[1] = 7.0
            os._exit(0)
        os.waitpid(pid, 0)
        assert t.tolist() == [0.0, 7.0, 0.0, 0.0]
        assert t[1:].is_shared()


# ---- flags and predicates ------------------------------------------------------------------------------

FLAGS = ("is_cpu", "is_cuda", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_meta", "is_mkldnn",
         "is_xpu", "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia", "nbytes", "itemsize")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "bool", "complex64"])
def test_flags_as_torch(dtype):
    same(lambda lib: [getattr(lib.ones(2, 3, dtype=getattr(lib, dtype))[1:], flag) for flag in FLAGS]
         + [lib.ones(2).get_device(), lib.get_device(lib.ones(2))])


PREDICATE_SCENARIOS = {
    "is_nonzero of zero": lambda lib: (lib.tensor([0.0]).is_nonzero(), lib.is_nonzero(lib.tensor(True))),
    "is_nonzero of a number": lambda lib: lib.tensor([[3]]).is_nonzero(),
    "is_nonzero of nothing": lambda lib: lib.tensor([]).is_nonzero(),
    "is_nonzero of two": lambda lib: lib.is_nonzero(lib.tensor([1, 2])),
    "is_same_size": lambda lib: (lib.ones(2, 3).is_same_size(lib.zeros(2, 3)),
                                 lib.is_same_size(lib.ones(1), lib.ones(()))),
    "is_same_size of a number": lambda lib: lib.ones(1).is_same_size(3),
    "is_signed": lambda lib: [lib.is_signed(lib.ones(1, dtype=d))
                              for d in (lib.uint8, lib.int8, lib.bool, lib.float16)],
    "a method form of no tensor": lambda lib: lib.exp_(3.0),
    "typename": lambda lib: [lib.typename(x)
                             for x in (lib.ones(1, dtype=lib.int64), 3, "s", len, lib.ones(1).double())],
}


@pytest.mark.parametrize("scenario", list(PREDICATE_SCENARIOS), ids=list(PREDICATE_SCENARIOS))
def test_predicates_as_torch(scenario):
    same(PREDICATE_SCENARIOS[scenario])


# ---- method forms: torch.exp_(x) is x.exp_() ---------------------------------------------------------------

def _samples(lib, low, high, shape, dtype="float64"):
    """Evenly spaced values made by NumPy (torch's float32 linspace may round its points another way)."""
    return lib.tensor(np.linspace(low, high, int(np.prod(shape))).reshape(shape).tolist(), dtype=getattr(lib, dtype))


def _extra_args(lib, form):
    """The arguments after the tensor for each method form that takes some (bounds away from the samples)."""
    other = _samples(lib, 0.2, 0.7, (2, 3))
    return {"addmv_": (_samples(lib, -1, 1, (3, 4)), _samples(lib, 0, 1, (4,))), "as_strided_": ((3, 2), (1, 3)),
            "clamp_": (0.25, 0.55), "clip_": (0.25, 0.55), "clamp_max_": (0.45,), "clamp_min_": (0.45,),
            "ldexp_": (lib.tensor([1, 2, 3]),), "xlogy_": (other,), "is_same_size": (other,),
            "logit_": (0.25,)}.get(form, ())


@pytest.mark.parametrize("form", [
    pytest.param(form, marks=pytest.mark.xfail(strict=True, reason="Tensor.conj_physical_ of a real tensor records "
                                                                   "no ConjPhysicalBackward1 node, torch's does"))
    if form == "conj_physical_" else form for form in retrograd._METHOD_FORMS])
def test_method_forms_as_torch(form):
    def scenario(lib):
        if form in ("gcd_", "lcm_"):
            x = lib.tensor([4, 6, 9])
            return getattr(lib, form)(x, lib.tensor([6, 4, 3])), x
        leaf = _samples(lib, 0.1, 0.6, (2, 3)).requires_grad_()
        x = leaf[0] * 1 if form == "addmv_" else leaf * 1
        out = getattr(lib, form)(x, *_extra_args(lib, form))
        if not isinstance(out, lib.Tensor):
            return out
        return out, out is x or out._base is x or form == "adjoint", name(out), out.sum().backward(), leaf.grad

    same(scenario)


# ---- Tensor methods ------------------------------------------------------------------------------------

def _grad_of(lib, fn, dtype="float64"):
    """fn of a non-leaf built from a leaf: fn's result, its grad_fn name and the leaf's gradient of its sum."""
    leaf = _samples(lib, -0.9, 0.8, (3, 4), dtype).requires_grad_()
    out = fn(leaf * 1)
    (out.abs() if out.is_complex() else out).sum().backward()
    return out, name(out), leaf.grad


METHOD_SCENARIOS = {
    "adjoint": lambda lib: _grad_of(lib, lambda x: x.adjoint()),
    "adjoint of a complex matrix": lambda lib: _grad_of(lib, lambda x: (x * (1 + 2j)).adjoint() * 1, "float64"),
    "adjoint of a vector": lambda lib: lib.ones(3).adjoint(),
    "argwhere": lambda lib: (lib.tensor([[0, 1], [2, 0]]).argwhere(), lib.tensor(3.0).argwhere()),
    "float_power": lambda lib: _grad_of(lib, lambda x: x.float_power(2)),
    "float_power of float32": lambda lib: _grad_of(lib, lambda x: x.float_power(lib.tensor(3)), "float32"),
    "float_power_ of double": lambda lib: _grad_of(lib, lambda x: x.float_power_(lib.tensor(2.0))),
    "float_power_ of float": lambda lib: lib.ones(2).float_power_(2),
    "float_power_ to a complex power": lambda lib: lib.ones(2, dtype=lib.float64).float_power_(1j),
    "float_power_ of complex": lambda lib: lib.ones(2, dtype=lib.complex128).float_power_(lib.tensor([1.0, 2.0])),
    "fill_diagonal_": lambda lib: _grad_of(lib, lambda x: x.fill_diagonal_(5)),
    "fill_diagonal_ tall": lambda lib: lib.zeros(7, 3).fill_diagonal_(2),
    "fill_diagonal_ wrapped": lambda lib: (lib.zeros(7, 3).fill_diagonal_(2, wrap=True),
                                           lib.zeros(8, 2).fill_diagonal_(1, True),
                                           lib.zeros(3, 5).fill_diagonal_(1, True)),
    "fill_diagonal_ of a cube": lambda lib: lib.zeros(3, 3, 3).fill_diagonal_(1.5),
    "fill_diagonal_ of unequal dims": lambda lib: lib.zeros(2, 2, 3).fill_diagonal_(1),
    "fill_diagonal_ of a vector": lambda lib: lib.zeros(3).fill_diagonal_(1),
    "fill_diagonal_ of a leaf": lambda lib: lib.zeros(2, 2, requires_grad=True).fill_diagonal_(1),
    "logical in place": lambda lib: (lambda x, y: (x.logical_and_(y).clone(), x.logical_or_(y).clone(),
                                                   x.logical_xor_(y).clone(), x.logical_not_()))(
        lib.tensor([0.0, 1.0, 2.0, 0.0]), lib.tensor([1, 0, 1, 0])),
    "bitwise in place": lambda lib: (lambda x, y: (x.bitwise_and_(y).clone(), x.bitwise_or_(y).clone(),
                                                   x.bitwise_xor_(y).clone(), x.bitwise_not_()))(
        lib.tensor([5, 6, -7]), lib.tensor([3, 3, 1])),
    "bitwise in place of bools": lambda lib: lib.tensor([True, False]).bitwise_xor_(lib.tensor([True, True])),
    "absolute_": lambda lib: _grad_of(lib, lambda x: x.absolute_()),
    "apply_": lambda lib: (lib.arange(4.0).apply_(lambda v: v * v), lib.arange(3).apply_(lambda v: v * 1.5),
                           lib.tensor(2.0).apply_(lambda v: v + 1), lib.tensor([True, False]).apply_(lambda v: not v)),
    "apply_ counts no version": lambda lib: (lambda t: (t.apply_(abs), t._version)[1])(lib.ones(2)),
    "apply_ with grad": lambda lib: lib.ones(2, requires_grad=True).apply_(lambda v: v),
    "map_": lambda lib: (lib.arange(4.0).map_(lib.tensor(2.0), lambda a, b: a * b),
                         lib.arange(6).view(2, 3).map_(lib.tensor([1, 2, 3]), max)),
    "map_ of another shape": lambda lib: lib.arange(4.0).map_(lib.ones(2), lambda a, b: a),
    "map_ of a tensor with grad": lambda lib: lib.ones(2).map_(lib.ones(2, requires_grad=True), lambda a, b: a),
    "map2_": lambda lib: lib.zeros(2, 2).map2_(lib.tensor([1.0, 2.0]), lib.tensor([[3.0], [4.0]]),
                                               lambda a, b, c: a + b * c),
}


@pytest.mark.parametrize("scenario", list(METHOD_SCENARIOS), ids=list(METHOD_SCENARIOS))
def test_methods_as_torch(scenario):
    same(METHOD_SCENARIOS[scenario])


def test_as_subclass_is_an_alias_as_torch():
    def scenario(lib):
        class Marked(lib.Tensor):
            pass

        leaf = lib.ones(2, 3, requires_grad=True)
        y = leaf * 2
        marked = y.as_subclass(Marked)
        (marked * 3).sum().backward()
        base = lib.zeros(3)
        plain = base.as_subclass(Marked)
        base.add_(1)
        return (type(marked) is Marked, name(marked), marked._base is y, marked.data_ptr() == y.data_ptr(),
                leaf.grad, leaf.as_subclass(Marked).is_leaf, plain.tolist(), plain._version)

    same(scenario)
    for lib in LIBS:
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.ones(1).as_subclass(int)


def test_no_warning_from_new_attributes():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = retrograd.ones(2)
        assert (x.nbytes, x.itemsize, x.storage_offset(), x.untyped_storage().nbytes()) == (8, 4, 0, 8)
