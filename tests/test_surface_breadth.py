"""Tensor attributes and methods, and torch functions, that real programs touch beyond the op table, against
torch 2.13: storages (tied weights found by their data_ptr), layout and device flags, in-place method forms
(`torch.exp_`), element-wise Python callables (`apply_`), subclass aliases, window functions, `asarray` /
`frombuffer`, and the functional forms torch exposes at top level with their own signatures."""

from __future__ import annotations

import array
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


def _in_a_forked_child(work) -> None:
    """Run `work` in a forked child and wait for it. The child always ends by os._exit, never by returning or
    raising into the test runner (an xdist worker's fork that unwinds would go on running the worker's tests);
    the child's failure is the parent's."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            work()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child failed"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_shared_memory_is_written_by_a_forked_process():
    for lib in LIBS:
        t = lib.zeros(4)
        assert not t.is_shared()
        assert t.share_memory_() is t and t.is_shared() and t.untyped_storage().is_shared()
        _in_a_forked_child(lambda t=t: t.__setitem__(1, 7.0))
        assert t.tolist() == [0.0, 7.0, 0.0, 0.0]
        assert t[1:].is_shared()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_shared_models_weights_are_trained_by_a_forked_process():
    """Hogwild training (pytorch/examples' mnist_hogwild): model.share_memory(), then SGD steps in a forked
    process reach the parent's weights, and give torch's values (torch's taken in this process: torch refuses
    autograd in a forked child once its parent has started autograd's threads, which depends on earlier tests)."""
    weights = []
    for lib in LIBS:
        model = lib.nn.Linear(3, 1)
        with lib.no_grad():
            model.weight.copy_(lib.tensor([[0.5, -1.0, 2.0]]))
            model.bias.fill_(0.25)
        assert model.share_memory() is model and all(p.is_shared() for p in model.parameters())

        def train(lib=lib, model=model):
            optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            for _ in range(3):
                optimizer.zero_grad()
                model(lib.tensor([[1.0, 2.0, 3.0]])).pow(2).sum().backward()
                optimizer.step()

        if lib is retrograd:
            _in_a_forked_child(train)
        else:
            train()
        weights.append([round(v, 5) for v in model.weight.flatten().tolist() + model.bias.tolist()])
    assert weights[0] == weights[1] != [0.5, -1.0, 2.0, 0.25]


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


# ---- window functions ----------------------------------------------------------------------------------

WINDOWS = ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_windows_as_torch(window, dtype):
    """Values within a float32 ulp or two of torch's (NumPy's cos and I0 against torch's vectorised ones), float16 and
    bfloat16 rounded after each step as torch's kernels round them (Note [window functions])."""
    for length in (0, 1, 2, 3, 5, 8, 17, 64):
        for periodic in (True, False):
            made = [getattr(lib, window)(length, periodic, dtype=getattr(lib, dtype)) for lib in LIBS]
            assert [str(w.dtype) for w in made] == [f"torch.{dtype}"] * 2 and made[1].shape == made[0].shape
            expected, got = (w.double().numpy() for w in made)
            np.testing.assert_allclose(got, expected, rtol=0 if dtype in ("float16", "bfloat16") else 1e-6,
                                       atol=0 if dtype in ("float16", "bfloat16") else 3e-7)


WINDOW_SCENARIOS = {
    "hamming's alpha and beta": lambda lib: (lib.hamming_window(5, True, 0.6), lib.hamming_window(5, False, 0.6, 0.3)),
    "kaiser's beta": lambda lib: (lib.kaiser_window(5, True, 5.0, dtype=lib.float64),
                                  lib.kaiser_window(6, False, beta=0.0, dtype=lib.float64)),
    "keywords": lambda lib: lib.hann_window(window_length=4, periodic=False, dtype=lib.float64),
    "a leaf that requires grad": lambda lib: (lambda w: (w.requires_grad, w.is_leaf))(
        lib.hann_window(3, requires_grad=True)),
    "a negative length": lambda lib: lib.blackman_window(-1),
    "an integer dtype": lambda lib: lib.hann_window(4, dtype=lib.int64),
    "a bool dtype": lambda lib: lib.bartlett_window(4, dtype=lib.bool),
    "a complex dtype": lambda lib: lib.kaiser_window(3, dtype=lib.complex64),
    "a float length": lambda lib: lib.hann_window(5.0),
}


@pytest.mark.parametrize("scenario", list(WINDOW_SCENARIOS), ids=list(WINDOW_SCENARIOS))
def test_window_arguments_as_torch(scenario):
    _close(outcome(lambda: WINDOW_SCENARIOS[scenario](retrograd)), outcome(lambda: WINDOW_SCENARIOS[scenario](torch)))


def test_stft_with_a_hann_window_as_torch():
    signal = np.sin(np.linspace(0, 40, 256))
    spectra = [lib.stft(lib.tensor(signal), 64, window=lib.hann_window(64, dtype=lib.float64), return_complex=True)
               for lib in LIBS]
    np.testing.assert_allclose(spectra[1].numpy(), spectra[0].numpy(), atol=1e-10)


# ---- asarray, frombuffer -------------------------------------------------------------------------------

ARRAY = np.arange(6.0)


def _shares(t, array) -> bool:
    return t.data_ptr() == array.ctypes.data


ASARRAY_SCENARIOS = {
    "a tensor": lambda lib: (lambda t: (lib.asarray(t) is t, lib.asarray(t, dtype=lib.float64),
                                        lib.asarray(t, copy=True).data_ptr() == t.data_ptr()))(lib.ones(3)),
    "a tensor that must be cast, without copy": lambda lib: lib.asarray(lib.ones(3), dtype=lib.float64, copy=False),
    "a tensor made to require grad": lambda lib: (lambda t: (lib.asarray(t, requires_grad=True) is t,
                                                             t.requires_grad))(lib.ones(2)),
    "an array": lambda lib: (lambda t: (t, _shares(t, ARRAY)))(lib.asarray(ARRAY)),
    "an array cast": lambda lib: (lambda t: (t, _shares(t, ARRAY)))(lib.asarray(ARRAY, dtype=lib.float32)),
    "an array copied": lambda lib: _shares(lib.asarray(ARRAY, copy=True), ARRAY),
    "an array cast without copy": lambda lib: lib.asarray(ARRAY, dtype=lib.float32, copy=False),
    "a strided array": lambda lib: (lambda t: (t, t.stride(), _shares(t, ARRAY)))(lib.asarray(ARRAY[::2])),
    "an array that requires grad": lambda lib: lib.asarray(ARRAY, requires_grad=True),
    "an int array that requires grad": lambda lib: lib.asarray(np.arange(3), requires_grad=True),
    "a NumPy scalar": lambda lib: lib.asarray(np.float64(2.0)),
    "lists and numbers": lambda lib: (lib.asarray([1, 2]), lib.asarray([1.0, 2]), lib.asarray(3.5), lib.asarray(True),
                                      lib.asarray([[1, 2], [3, 4]], dtype=lib.float64)),
    "a list of tensors": lambda lib: lib.asarray([lib.tensor(1.0), lib.tensor(2.0)]),
    "a list without copy": lambda lib: lib.asarray([1, 2], copy=False),
    "a string": lambda lib: lib.asarray("abc"),
    "a buffer": lambda lib: (lambda b: (lib.asarray(b, dtype=lib.int32), lib.asarray(b)))(
        bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")),
}


@pytest.mark.parametrize("scenario", list(ASARRAY_SCENARIOS), ids=list(ASARRAY_SCENARIOS))
def test_asarray_as_torch(scenario):
    same(ASARRAY_SCENARIOS[scenario])


BUFFER = b"\x01\x00\x00\x00\x02\x00\x00\x00"
FROMBUFFER_SCENARIOS = {
    "whole": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int32),
    "count and offset": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int16, count=2, offset=2),
    "read-only bytes": lambda lib: lib.frombuffer(b"abcd", dtype=lib.uint8),
    "floats, requiring grad": lambda lib: (lambda t: (t, t.is_leaf))(
        lib.frombuffer(array.array("f", [1.0, 2.0]), dtype=lib.float32, requires_grad=True)),
    "a ragged length": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int64, offset=1),
    "a count too large": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int32, count=3),
    "an offset too large": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int32, offset=8),
    "a negative offset": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int32, offset=-1),
    "no buffer": lambda lib: lib.frombuffer([1, 2], dtype=lib.int32),
    "an empty buffer": lambda lib: lib.frombuffer(bytearray(), dtype=lib.int32),
    "no elements": lambda lib: lib.frombuffer(bytearray(BUFFER), dtype=lib.int32, count=0),
}


@pytest.mark.parametrize("scenario", list(FROMBUFFER_SCENARIOS), ids=list(FROMBUFFER_SCENARIOS))
def test_frombuffer_as_torch(scenario):
    same(FROMBUFFER_SCENARIOS[scenario])


def test_frombuffer_shares_the_buffer():
    for lib in LIBS:
        buffer = bytearray(BUFFER)
        t = lib.frombuffer(buffer, dtype=lib.int32)
        buffer[0] = 9
        t[1] = 5
        assert t.tolist() == [9, 5] and buffer[4] == 5


# ---- top-level functional forms -------------------------------------------------------------------------

def _leaf(lib, *shape, seed=0, low=-1.0, high=1.0):
    return lib.tensor(np.random.default_rng(seed).uniform(low, high, shape).tolist(), dtype=lib.float64,
                      requires_grad=True)


def _backward(out, *leaves):
    """out, its grad_fn name and the leaves' gradients of its sum."""
    out.sum().backward()
    return out, name(out), [leaf.grad for leaf in leaves]


def _losses(lib, reduction):
    """Each loss's top-level form at one reduction (0 none, 1 mean, 2 sum), with its gradients."""
    target = lib.tensor(np.random.default_rng(1).uniform(0.1, 1, (4, 3)).tolist(), dtype=lib.float64)
    signs = lib.tensor([1, -1, 1, -1])
    a, b, c = _leaf(lib, 4, 3), _leaf(lib, 4, 3, seed=2), _leaf(lib, 4, 3, seed=3)
    v, w = _leaf(lib, 4, seed=4), _leaf(lib, 4, seed=5)
    return [
        _backward(lib.kl_div(a, target, reduction), a),
        _backward(lib.kl_div(b, target.log(), reduction, log_target=True), b),
        _backward(lib.binary_cross_entropy_with_logits(a * 1, target, None, None, reduction), a),
        _backward(lib.binary_cross_entropy_with_logits(c, target, target, target[0] + 1, reduction), c),
        _backward(lib.cosine_embedding_loss(a * 1, b * 1, signs, 0.1, reduction), a, b),
        _backward(lib.margin_ranking_loss(v, w, signs, 0.2, reduction), v, w),
        _backward(lib.triplet_margin_loss(a * 1, b * 1, c * 1, 1.0, 2, 1e-6, True, reduction), a, b, c),
        _backward(lib.hinge_embedding_loss(a * 1, lib.tensor([[1, -1, 1]] * 4), 0.5, reduction), a),
        _backward(lib.poisson_nll_loss(a * 1, target, True, False, 1e-8, reduction), a),
        _backward(lib.poisson_nll_loss(b.abs() + 0.5, target * 3, False, True, 1e-8, reduction), b),
    ]


def _close(observed, expected):
    """Observations compared with tensors to 1e-12 (a running statistic's update may round another way)."""
    if isinstance(expected, tuple) and expected and expected[0] == "tensor":
        assert observed[:3] == expected[:3]
        np.testing.assert_allclose(np.array(eval(observed[3])), np.array(eval(expected[3])), rtol=1e-12, atol=1e-12)
    elif isinstance(expected, list):
        assert len(observed) == len(expected)
        for o, e in zip(observed, expected):
            _close(o, e)
    else:
        assert observed == expected


@pytest.mark.parametrize("reduction", [0, 1, 2, 5])
def test_top_level_losses_as_torch(reduction):
    _close(outcome(lambda: _losses(retrograd, reduction)), outcome(lambda: _losses(torch, reduction)))


FUNCTIONAL_SCENARIOS = {
    "embedding": lambda lib: (lambda w: _backward(lib.embedding(w, lib.tensor([[0, 2], [4, 2]])), w))(_leaf(lib, 5, 3)),
    "embedding with padding": lambda lib: (lambda w: _backward(lib.embedding(w, lib.tensor([[0, 2], [4, 2]]), 2), w))(
        _leaf(lib, 5, 3)),
    "embedding scaled by frequency": lambda lib: (lambda w: _backward(
        lib.embedding(w, lib.tensor([0, 2, 2]), -1, True), w))(_leaf(lib, 5, 3)),
    "embedding_renorm_": lambda lib: (lambda w: (lib.embedding_renorm_(w, lib.tensor([1, 3, 1]), 1.0, 2.0) is w, w))(
        lib.ones(4, 3, dtype=lib.float64) * 2),
    "batch_norm training": lambda lib: (lambda x, wt, bs, rm, rv: (
        _backward(lib.batch_norm(x, wt, bs, rm, rv, True, 0.1, 1e-5, True) * lib.arange(5.0), x, wt, bs), rm, rv))(
        _leaf(lib, 4, 3, 5), _leaf(lib, 3, seed=4), _leaf(lib, 3, seed=5), lib.zeros(3, dtype=lib.float64),
        lib.ones(3, dtype=lib.float64)),
    "batch_norm evaluating": lambda lib: (lambda x: _backward(lib.batch_norm(
        x, None, None, lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64), False, 0.1, 1e-5, False), x))(
        _leaf(lib, 4, 3, 5)),
    "instance_norm": lambda lib: (lambda x, wt, bs: _backward(
        lib.instance_norm(x, wt, bs, None, None, True, 0.1, 1e-5, False) * lib.arange(5.0), x, wt, bs))(
        _leaf(lib, 4, 3, 5), _leaf(lib, 3, seed=4), _leaf(lib, 3, seed=5)),
    "kl_div's reduction by name": lambda lib: lib.kl_div(lib.ones(2), lib.ones(2), "mean"),
    "dropouts that keep all": lambda lib: (lambda x: [f(x, p, train) is x for f in (
        lib.dropout, lib.alpha_dropout, lib.feature_dropout, lib.feature_alpha_dropout)
        for p, train in ((0.0, True), (0.5, False))])(lib.ones(2, 3)),
    "dropouts that drop all": lambda lib: (lambda x: [_backward(f(x * 1, 1.0, True), x) for f in (
        lib.dropout, lib.alpha_dropout, lib.feature_dropout, lib.feature_alpha_dropout)])(_leaf(lib, 2, 3, 2)),
    "in-place dropouts": lambda lib: [(lambda x: (getattr(lib, name)(x, 1.0, True) is x, x))(lib.ones(2, 3, 2)) for name
                                      in ("dropout_", "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_")],
    "dropout's probability": lambda lib: lib.dropout(lib.ones(2), 1.5, True),
    "newaxis": lambda lib: (lib.newaxis, lib.ones(2)[lib.newaxis].shape),
    "GradScaler": lambda lib: lib.GradScaler is lib.amp.GradScaler,
}


@pytest.mark.parametrize("scenario", list(FUNCTIONAL_SCENARIOS), ids=list(FUNCTIONAL_SCENARIOS))
def test_top_level_functional_forms_as_torch(scenario):
    _close(outcome(lambda: FUNCTIONAL_SCENARIOS[scenario](retrograd)),
           outcome(lambda: FUNCTIONAL_SCENARIOS[scenario](torch)))


def test_dropout_draws_are_torchs_after_a_seed():
    drawn = []
    for lib in LIBS:
        lib.manual_seed(3)
        drawn.append(lib.dropout(lib.ones(40), 0.5, True).tolist())
    assert drawn[0] == drawn[1]


# ---- more of torch's namespace ---------------------------------------------------------------------------

def _conv(lib, transposed):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.normal(size=(1, 2, 5, 5)).tolist(), dtype=lib.float64, requires_grad=True)
    w = lib.tensor(rng.normal(size=(2, 3, 3, 3) if transposed else (3, 2, 3, 3)).tolist(), dtype=lib.float64,
                   requires_grad=True)
    return _backward(lib.convolution(x, w, None, [2, 1], [1, 0], [1, 1], transposed, [1, 0] if transposed else [0, 0],
                                     1), x, w)


NAMESPACE_SCENARIOS = {
    "range": lambda lib: (lib.range(1, 4), lib.range(0, 1, 0.25, dtype=lib.float64), lib.range(1, 4, dtype=lib.int64),
                          lib.range(5, 1, -2), lib.range(0, 0.95, 0.1), lib.range(0, 2, requires_grad=True)),
    "range of inconsistent bounds": lambda lib: lib.range(4, 1),
    "range of no step": lambda lib: lib.range(0, 1, 0),
    "deterministic debug mode": lambda lib: [(lib.set_deterministic_debug_mode(mode),
                                              lib.get_deterministic_debug_mode(),
                                              lib.are_deterministic_algorithms_enabled(),
                                              lib.is_deterministic_algorithms_warn_only_enabled())
                                             for mode in ("warn", 2, "default")],
    "a wrong debug mode": lambda lib: lib.set_deterministic_debug_mode("loud"),
    "autocast queries": lambda lib: (lib.is_autocast_cpu_enabled(), str(lib.get_autocast_cpu_dtype()),
                                     str(lib.get_autocast_dtype("cpu")), str(lib.get_autocast_gpu_dtype()),
                                     str(lib.get_autocast_dtype("cuda"))),
    "autocast queries inside autocast": lambda lib: _inside_autocast(lib, lambda: (
        lib.is_autocast_cpu_enabled(), str(lib.get_autocast_cpu_dtype()), str(lib.get_autocast_dtype("cpu")))),
    "errors": lambda lib: (issubclass(lib.OutOfMemoryError, RuntimeError),
                           issubclass(lib.AcceleratorError, RuntimeError)),
    "interop threads": lambda lib: (lib.set_num_interop_threads(3), lib.get_num_interop_threads(),
                                    lib.init_num_threads()),
    "convolution": lambda lib: _conv(lib, False),
    "transposed convolution": lambda lib: _conv(lib, True),
    "adaptive_max_pool1d": lambda lib: (lambda x: (_backward(lib.adaptive_max_pool1d(x, [2])[0], x),
                                                   lib.adaptive_max_pool1d(x, [2])[1]))(_leaf(lib, 2, 5)),
    "affine_grid_generator": lambda lib: (lambda theta: _backward(lib.affine_grid_generator(theta, [1, 1, 2, 3], False),
                                                                  theta))(_leaf(lib, 1, 2, 3)),
    "compiler queries": lambda lib: (lib.compiler.is_compiling(), lib.compiler.is_dynamo_compiling(),
                                     lib.compiler.is_exporting(), lib.compiler.disable(len)([1, 2]),
                                     lib.compiler.disable(recursive=False)(len)([1])),
    "to_dense": lambda lib: (lambda x: (x.to_dense() is x, _backward(x.to_dense(lib.float64), x)))(
        lib.ones(2, 3, requires_grad=True)),
    "dim_order": lambda lib: [t.dim_order() for t in (lib.ones(2, 3), lib.ones(2, 3).t(), lib.ones(2, 1, 3),
                                                      lib.ones(2, 3, 4, 5).permute(0, 2, 3, 1), lib.ones(3, 1).t(),
                                                      lib.ones(2, 6)[:, ::2], lib.ones(()))],
    "is_set_to": lambda lib: (lambda x: (x.is_set_to(x), x.is_set_to(x.detach()), x.is_set_to(x.view(3, 2)),
                                         x.is_set_to(x[0]), x.is_set_to(x.clone())))(lib.ones(2, 3)),
    "is_distributed and const_data_ptr": lambda lib: (lambda x: (x.is_distributed(),
                                                                 x.const_data_ptr() == x.data_ptr()))(lib.ones(2)),
    "torch.cpu": lambda lib: (lib.cpu.is_available(), lib.cpu.device_count(), lib.cpu.current_device(),
                              lib.cpu.synchronize(), lib.cpu.is_initialized()),
    "device modules": lambda lib: [lib.get_device_module(where).__name__.rsplit(".")[-1]
                                   for where in ("cpu", None, lib.device("cpu"), "cuda")],
    "torch.cpu.amp.autocast": lambda lib: _inside(lib.cpu.amp.autocast(), lambda: (
        lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu")))),
    "BFloat16Tensor": lambda lib: (str(lib.BFloat16Tensor(2).dtype), str(lib.ones(2).type(lib.BFloat16Tensor).dtype),
                                   lib.ones(1, dtype=lib.bfloat16).type(),
                                   isinstance(lib.ones(1, dtype=lib.bfloat16), lib.BFloat16Tensor)),
    "anomaly switch": lambda lib: (lib.set_anomaly_enabled(True), lib.is_anomaly_enabled(),
                                   lib.set_anomaly_enabled(False), lib.is_anomaly_enabled()),
    "no vulkan, no cudnn": lambda lib: (lib.is_vulkan_available(), lib.cudnn_is_acceptable(lib.ones(1))),
}


def _inside(context, query):
    with context:
        return query()


def _inside_autocast(lib, query):
    with lib.autocast("cpu", dtype=lib.float16):
        return query()


@pytest.mark.parametrize("scenario", list(NAMESPACE_SCENARIOS), ids=list(NAMESPACE_SCENARIOS))
def test_namespace_as_torch(scenario):
    try:
        _close(outcome(lambda: NAMESPACE_SCENARIOS[scenario](retrograd)),
               outcome(lambda: NAMESPACE_SCENARIOS[scenario](torch)))
    finally:
        for lib in LIBS:
            lib.use_deterministic_algorithms(False)


def test_deprecated_spellings_warn_as_torch():
    for lib in LIBS:
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            lib.range(0, 1)
        with pytest.warns(DeprecationWarning, match=r"torch.get_autocast_cpu_dtype\(\) is deprecated"):
            lib.get_autocast_cpu_dtype()


def test_set_default_tensor_type_as_torch():
    for lib in LIBS:
        try:
            with pytest.warns(UserWarning, match="set_default_tensor_type"):
                lib.set_default_tensor_type(lib.DoubleTensor)
            assert lib.ones(1).dtype is lib.float64
            lib.set_default_tensor_type("torch.FloatTensor")
            assert lib.ones(1).dtype is lib.float32
        finally:
            lib.set_default_dtype(lib.float32)


def test_dlpack_as_torch():
    for lib in LIBS:
        array = np.arange(3.0)
        shared = lib.from_dlpack(array)
        assert shared.dtype is lib.float64 and shared.data_ptr() == array.ctypes.data
        assert lib.from_dlpack(lib.to_dlpack(lib.arange(2.0))).tolist() == [0.0, 1.0]
        assert np.from_dlpack(lib.ones(2)).tolist() == [1.0, 1.0]
        with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
            lib.from_dlpack(lib.ones(2, requires_grad=True))


def test_from_file_as_torch(tmp_path):
    path = tmp_path / "elements.bin"
    for lib in LIBS:
        np.arange(6, dtype=np.float32).tofile(path)
        assert lib.from_file(str(path), size=4, dtype=lib.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
        assert lib.from_file(str(path)).shape == (0,)
        with pytest.raises(RuntimeError, match="size <24> is smaller than the required mapping size <40>"):
            lib.from_file(str(path), size=10, dtype=lib.float32)
        mapped = lib.from_file(str(path), shared=True, size=2, dtype=lib.float32)
        mapped[0] = 7
        assert mapped.is_shared() and np.fromfile(path, dtype=np.float32)[0] == 7
        private = lib.from_file(str(path), shared=False, size=2, dtype=lib.float32)
        private[1] = 9
        assert np.fromfile(path, dtype=np.float32)[1] == 1


# ---- recurrent cells ------------------------------------------------------------------------------------

def _cell(lib, cell, gates, biased):
    """One step of a top-level cell: its outputs, node names and gradients of their sum."""
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return lib.tensor(rng.normal(size=shape).tolist(), dtype=lib.float64, requires_grad=True)

    x, h, c = leaf(2, 3), leaf(2, 4), leaf(2, 4)
    weights = [leaf(4 * gates, 3), leaf(4 * gates, 4)] + ([leaf(4 * gates), leaf(4 * gates)] if biased else [])
    out = getattr(lib, cell)(x, (h, c) if cell == "lstm_cell" else h, *weights)
    out = out if isinstance(out, tuple) else (out,)
    sum(t.sum() for t in out).backward()
    return list(out), [name(t) for t in out], [t.grad for t in (x, h, *weights)]


CELLS = {"lstm_cell": 4, "gru_cell": 3, "rnn_tanh_cell": 1, "rnn_relu_cell": 1}


@pytest.mark.parametrize("cell", list(CELLS))
@pytest.mark.parametrize("biased", [True, False])
def test_cells_as_torch(cell, biased):
    _close(outcome(lambda: _cell(retrograd, cell, CELLS[cell], biased)),
           outcome(lambda: _cell(torch, cell, CELLS[cell], biased)))


CELL_ERRORS = {
    "input size": lambda lib: lib.lstm_cell(lib.ones(2, 5), (lib.ones(2, 4), lib.ones(2, 4)), lib.ones(16, 3),
                                            lib.ones(16, 4)),
    "one hidden state for an LSTM": lambda lib: lib.lstm_cell(lib.ones(2, 3), (lib.ones(2, 4),), lib.ones(16, 3),
                                                              lib.ones(16, 4)),
    "batch size": lambda lib: lib.gru_cell(lib.ones(2, 3), lib.ones(3, 4), lib.ones(12, 3), lib.ones(12, 4)),
    "hidden size": lambda lib: lib.rnn_tanh_cell(lib.ones(2, 3), lib.ones(2, 5), lib.ones(4, 3), lib.ones(4, 4)),
}


@pytest.mark.parametrize("scenario", list(CELL_ERRORS), ids=list(CELL_ERRORS))
def test_cell_errors_as_torch(scenario):
    same(CELL_ERRORS[scenario])
