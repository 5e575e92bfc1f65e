"""AddmmBackward0 in both of its paths (ops/linalg.py, Note [unrecorded addmm backward]): the NumPy kernel used
when nothing records the gradients and the differentiable formulas used under create_graph give the same bits,
and both match torch, with the layout torch gives `.grad` and double backward through the second."""

import numpy as np
import pytest
import torch

import retrograd

CASES = {  # input shape, weight shape, bias shape (None: no bias), which inputs require grad
    "linear": ((6, 5), (3, 5), (3,), (True, True, True)),
    "linear, 3-d input": ((2, 4, 5), (3, 5), (3,), (True, True, True)),
    "first layer": ((6, 5), (3, 5), (3,), (False, True, True)),
    "frozen weight": ((6, 5), (3, 5), (3,), (True, False, True)),
    "row bias": ((6, 5), (3, 5), (1, 3), (True, True, True)),
}


def linear_grads(lib, arrays, wanted, create_graph, beta=1, alpha=1):
    """Gradients of the inputs that require grad for the cotangent g (addmm with a row bias or scaled terms,
    linear otherwise); under create_graph also the gradients of <grads, grads> (double backward)."""
    x, w, b, g = arrays
    inputs = [lib.tensor(a, requires_grad=r) for a, r in zip((x, w, b), wanted)]
    tx, tw, tb = inputs
    if tb.ndim == 2 or beta != 1 or alpha != 1:
        y = lib.addmm(tb, tx, tw.t(), beta=beta, alpha=alpha)
    else:
        y = lib.nn.functional.linear(tx, tw, tb)
    leaves = [t for t in inputs if t.requires_grad]
    grads = lib.autograd.grad(y, leaves, lib.tensor(g), create_graph=create_graph)
    out = [t.detach().numpy() for t in grads]
    second = sum((t * t).sum() for t in grads)
    if create_graph and second.requires_grad:  # the weight's gradient needs x, x's needs the weight
        out += [t.detach().numpy() for t in lib.autograd.grad(second, leaves, allow_unused=True) if t is not None]
    return out


@pytest.mark.parametrize(("case", "scaled"), [(case, scaled) for case in CASES for scaled in (False, True)
                                               if not scaled or len(CASES[case][0]) == 2])  # addmm takes matrices
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addmm_gradients_same_bits_in_both_paths_and_match_torch(case, dtype, scaled):
    x_shape, w_shape, b_shape, wanted = CASES[case]
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (x_shape, w_shape, b_shape))
    g = rng.standard_normal((*x_shape[:-1], w_shape[0])).astype(dtype)
    scale = dict(beta=0.5, alpha=2.0) if scaled else {}
    arrays = (x, w, b, g)
    fast = linear_grads(retrograd, arrays, wanted, False, **scale)
    recorded = linear_grads(retrograd, arrays, wanted, True, **scale)
    theirs = linear_grads(torch, arrays, wanted, True, **scale)
    for a, e in zip(fast, recorded):
        assert a.tobytes() == e.tobytes()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert len(recorded) == len(theirs)
    for a, e in zip(recorded, theirs):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def test_linear_weight_grad_keeps_torchs_layout():
    """The weight's gradient reaches `.grad` as torch stores it (contiguous in the weight's layout), and the
    bias's as a standalone tensor."""
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (3, 5), (3,)))
    grads = {}
    for lib in (retrograd, torch):
        tw, tb = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        lib.nn.functional.linear(lib.tensor(x), tw, tb).sum().backward()
        grads[lib] = tw.grad, tb.grad
    for ours, theirs in zip(grads[retrograd], grads[torch]):
        assert ours.stride() == theirs.stride()
        assert ours._base is None
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize(("batch", "matrix", "transposed"), [
    ((4, 3, 5), (5, 2), False), ((3, 4, 5), (5, 2), True), ((2, 3, 0), (0, 4), False), ((2, 0, 3), (3, 4), False),
    ((0, 2, 3), (3, 4), False)])
def test_batch_times_matrix_folds_like_torch(batch, matrix, transposed):
    """A batch times a matrix runs as one product over the batch folded into rows (forward, and the matrix's
    gradient), for non-contiguous and empty batches too: torch's values and gradients, to float64 rounding."""
    rng = np.random.default_rng(0)
    a, b, g = rng.standard_normal(batch), rng.standard_normal(matrix), rng.standard_normal(batch[:-1] + matrix[-1:])
    found = []
    for lib in (torch, retrograd):
        x = lib.tensor(a.transpose(1, 0, 2).copy() if transposed else a, requires_grad=True)
        w = lib.tensor(b, requires_grad=True)
        out = (x.transpose(0, 1) if transposed else x) @ w
        target = lib.tensor(g.transpose(1, 0, 2).copy() if transposed else g)
        (out * (target.transpose(0, 1) if transposed else target)).sum().backward()
        found.append([t.detach().numpy() for t in (out, x.grad, w.grad)])
    for ours, theirs in zip(*reversed(found)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


FLOAT16_PRODUCTS = {
    "linear": lambda lib, c, a, b: lib.nn.functional.linear(a, b.t(), c[0]),
    "addmm, scaled": lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0),
    "addmv": lambda lib, c, a, b: lib.addmv(c[:, 0], a, b[:, 0]),
    "baddbmm": lambda lib, c, a, b: lib.baddbmm(c[None], a[None], b[None]),
}


@pytest.mark.parametrize("case", FLOAT16_PRODUCTS)
def test_float16_products_with_an_added_term_round_once_as_torch(case):
    """torch's CPU kernels keep half's sums and the added term in float and round once: (nearly) every element is
    the exactly computed result rounded to float16, where rounding the product and then the sum misses about a
    quarter of them. Counted, not compared bit for bit: the sums' order (so a rare tie) is the host BLAS's."""
    rng = np.random.default_rng(0)
    c, a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((64, 48), (64, 96), (96, 48)))
    for lib in (torch, retrograd):
        got = FLOAT16_PRODUCTS[case](lib, *(lib.tensor(v) for v in (c, a, b)))
        exact = FLOAT16_PRODUCTS[case](lib, *(lib.tensor(v.astype(np.float64)) for v in (c, a, b)))
        assert got.dtype == lib.float16
        assert np.mean(got.numpy() == exact.numpy().astype(np.float16)) > 0.99, lib.__name__


def test_float16_addbmm_rounds_after_each_batch_as_torch():
    """torch's addbmm is an addmm per batch into the result, so float16 rounds once per batch."""
    rng = np.random.default_rng(1)
    c, a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((16, 8), (3, 16, 24), (3, 24, 8)))
    ours, theirs = (lib.addbmm(*(lib.tensor(v) for v in (c, a, b)), beta=0.5).numpy() for lib in (retrograd, torch))
    stepwise = c * np.float16(0.5)
    for a_batch, b_batch in zip(a, b):
        stepwise = (stepwise.astype(np.float32) + a_batch.astype(np.float32) @ b_batch.astype(np.float32)).astype(
            np.float16)
    assert np.mean(ours == stepwise) > 0.99 and np.mean(theirs == stepwise) > 0.99


def test_a_step_between_two_backwards_through_a_layer_is_no_error_unless_torchs():
    """AddmmBackward0 keeps the weight only when its input wants a gradient, as torch's: a first layer's two
    losses (a GAN's discriminator on real and fake batches) may be stepped between their backwards; when the input
    wants a gradient the weight was saved, and the step then makes backward refuse in both."""
    outcomes = []
    for lib in (torch, retrograd):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
        first, second = layer(lib.randn(4, 3)).pow(2).mean(), layer(lib.randn(4, 3)).abs().mean()
        first.backward()
        optimizer.step()
        second.backward()
        third = layer(lib.randn(4, 3, requires_grad=True)).sum()
        optimizer.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            third.backward()
        outcomes.append([layer.weight.grad.numpy().copy(), layer.bias.grad.numpy().copy()])
    for ours, theirs in zip(outcomes[1], outcomes[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


FEW_ROW_CASES = {  # input shape, weight shape (out, in): Note [few-row products] in ops/arrays.py
    "an LSTM step's hidden state": ((20, 200), (800, 200)),
    "two rows": ((2, 784), (512, 784)),
    "a small batch, deep": ((64, 784), (512, 784)),
    "a small batch, shallow": ((33, 128), (384, 128)),
    "folded 3-d input": ((2, 8, 128), (384, 128)),
    "one row": ((1, 256), (256, 256)),
    "small weight": ((16, 64), (10, 64)),
}


@pytest.mark.parametrize("case", FEW_ROW_CASES)
@pytest.mark.parametrize("form", ["linear", "matmul by the transpose", "matmul, weight stored (in, out)"])
def test_few_row_products_match_torch_in_values_gradients_and_layout(case, form):
    """x @ W.T with few rows goes through W @ x.T (Note [few-row products]) in the forward and in a backward whose
    product has that form: torch's values and gradients within float32 rounding, and its strides."""
    x_shape, w_shape = FEW_ROW_CASES[case]
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal(x_shape).astype(np.float32), rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    g = rng.standard_normal((*x_shape[:-1], w_shape[0])).astype(np.float32)
    found = []
    for lib in (torch, retrograd):
        tx, tb = lib.tensor(x, requires_grad=True), lib.tensor(b, requires_grad=True)
        tw = lib.tensor(w.T.copy() if form.endswith("(in, out)") else w, requires_grad=True)
        if form == "linear":
            out = lib.nn.functional.linear(tx, tw, tb)
        else:
            out = (tx @ (tw if form.endswith("(in, out)") else tw.t())) + tb
        out.backward(lib.tensor(g))
        found.append([(t.detach().numpy(), t.stride()) for t in (out, tx.grad, tw.grad, tb.grad)])
    for (theirs, their_stride), (ours, our_stride) in zip(*found):
        assert our_stride == their_stride
        # sums of up to 784 products of unit normals (up to about 100 in size): float32 rounding, summed in BLAS's
        # own orders, leaves up to a few 1e-5 on every element, cancelled ones too
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)
