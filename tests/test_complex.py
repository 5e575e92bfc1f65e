"""Complex tensors against torch: values, grad_fn names and gradients of real-valued losses.

torch's convention for a real loss L of z = x + iy is z.grad = dL/dx + i dL/dy. Each op is
checked three ways: forward values and node name against torch, the gradient against torch's,
and the gradient against central finite differences taken separately along the real and the
imaginary part of every element (retrograd's gradcheck works on real tensors only, so the
complex check is done here).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd

RNG = np.random.default_rng(0)


def complex_array(*shape, low=0.5, high=2.0):
    """Complex values of modulus in [low, high) (away from 0, where sgn, angle and abs have kinks)."""
    modulus = RNG.uniform(low, high, size=shape)
    angle = RNG.uniform(-np.pi, np.pi, size=shape)
    return modulus * np.exp(1j * angle)


def leaf(lib, array, dtype="complex128"):
    return lib.tensor(np.asarray(array).astype(dtype), requires_grad=True)


def losses(lib, out):
    """Real-valued losses of a complex (or real) output."""
    return {
        "norm2": (out * out.conj()).real.sum() if out.is_complex() else (out * out).sum(),
        "abs": out.abs().sum(),
        "parts": (out.real * 0.7 - out.imag * 1.3).sum() if out.is_complex() else (0.7 * out).sum(),
    }


def numerical_grad(fn, arrays, k, eps=1e-6):
    """dL/dx + i dL/dy for input k of a real scalar function of complex128 arrays."""
    base = [np.array(a, dtype=np.complex128) for a in arrays]
    grad = np.zeros_like(base[k])
    for idx in np.ndindex(base[k].shape):
        for direction in (1.0, 1j):
            plus = [a.copy() for a in base]
            minus = [a.copy() for a in base]
            plus[k][idx] += eps * direction
            minus[k][idx] -= eps * direction
            slope = (fn(plus) - fn(minus)) / (2 * eps)
            grad[idx] += slope * (1.0 if direction == 1.0 else 1j)
    return grad


UNARY = {
    "neg": lambda m, z: -z,
    "exp": lambda m, z: m.exp(z),
    "log": lambda m, z: m.log(z),
    "sin": lambda m, z: m.sin(z),
    "cos": lambda m, z: m.cos(z),
    "tan": lambda m, z: m.tan(z),
    "sinh": lambda m, z: m.sinh(z),
    "cosh": lambda m, z: m.cosh(z),
    "tanh": lambda m, z: m.tanh(z),
    "asin": lambda m, z: m.asin(z),
    "atan": lambda m, z: m.atan(z),
    "asinh": lambda m, z: m.asinh(z),
    "sigmoid": lambda m, z: m.sigmoid(z),
    "sqrt": lambda m, z: m.sqrt(z),
    "rsqrt": lambda m, z: m.rsqrt(z),
    "reciprocal": lambda m, z: m.reciprocal(z),
    "expm1": lambda m, z: m.expm1(z),
    "log1p": lambda m, z: m.log1p(z),
    "log2": lambda m, z: m.log2(z),
    "square": lambda m, z: m.square(z),
    "pow_int": lambda m, z: z ** 3,
    "pow_complex_exponent": lambda m, z: z ** (0.5 + 0.25j),
    "abs": lambda m, z: m.abs(z),
    "sgn": lambda m, z: m.sgn(z),
    "angle": lambda m, z: m.angle(z),
    "conj": lambda m, z: m.conj(z) * 1,
    "conj_physical": lambda m, z: m.conj_physical(z),
    "real": lambda m, z: m.real(z),
    "imag": lambda m, z: m.imag(z),
    "real_property": lambda m, z: z.real * z.imag,
    "view_as_real": lambda m, z: m.view_as_real(z),
    "mul_real_scalar": lambda m, z: z * 2.5,
    "mul_complex_scalar": lambda m, z: z * (1 - 2j),
    "add_alpha": lambda m, z: m.add(z, z * 1j, alpha=0.5 - 1j),
    "rsub": lambda m, z: 1j - z,
    "div_scalar_by": lambda m, z: (2 + 1j) / z,
    "sum": lambda m, z: z.sum(0),
    "mean": lambda m, z: z.mean(),
}

BINARY = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a ** b,
    "where": lambda m, a, b: m.where(m.tensor([True, False, True]), a, b),
    "mm": lambda m, a, b: a.reshape(3, 1) @ b.reshape(1, 3),
    "dot": lambda m, a, b: a @ b,
    "mv": lambda m, a, b: m.outer(a, b) @ b,
    "matmul_batched": lambda m, a, b: (a.reshape(1, 3, 1) * b.reshape(1, 1, 3)).expand(2, 3, 3) @ b.reshape(3, 1),
    "lerp": lambda m, a, b: m.lerp(a, b, 0.3),
    "addcmul": lambda m, a, b: m.addcmul(a, a, b, value=0.5),
    "addcdiv": lambda m, a, b: m.addcdiv(a, a, b, value=2),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
}


# the LU family on a complex matrix `a` whose pivots are unambiguous and a right-hand side `b`; rectangular
# inputs are made by stacking b onto a (its entries are far smaller than a's pivots)
LU = {
    "lu_factor": lambda m, a, b: m.linalg.lu_factor(a).LU @ b,
    "lu_L": lambda m, a, b: m.linalg.lu(a).L @ b,
    "lu_U_wide": lambda m, a, b: m.linalg.lu(m.cat([a, b], -1)).U,
    "lu_L_tall": lambda m, a, b: m.linalg.lu(m.cat([a, b.mT], -2)).L,
    "lu_unpack": lambda m, a, b: m.lu_unpack(*m.linalg.lu_factor(a)).U @ b,
    "lu_solve": lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b),
    "lu_solve_adjoint": lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),
    "lu_solve_right": lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False),
    "lu_solve_right_adjoint": lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b.mT, left=False,
                                                                adjoint=True),
}


def check_against_torch(fn, arrays, dtype="complex128", atol=1e-10, rtol=1e-8):
    """Forward values, node name and every loss's gradients against torch; gradients against finite
    differences too (complex128)."""
    ours_in = [leaf(retrograd, a, dtype) for a in arrays]
    theirs_in = [leaf(torch, a, dtype) for a in arrays]
    ours, theirs = fn(retrograd, *ours_in), fn(torch, *theirs_in)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.detach().resolve_conj().resolve_neg().numpy(),
                               theirs.detach().resolve_conj().resolve_neg().numpy(),
                               atol=atol, rtol=rtol)
    assert (ours.grad_fn and ours.grad_fn.name()) == (theirs.grad_fn and theirs.grad_fn.name())
    for name, loss in losses(retrograd, ours).items():
        grads = retrograd.autograd.grad(loss, ours_in, retain_graph=True)
        expected = torch.autograd.grad(losses(torch, theirs)[name], theirs_in, retain_graph=True)
        for k, (g, e) in enumerate(zip(grads, expected)):
            assert str(g.dtype) == str(e.dtype), f"{name}: grad dtype of input {k}"
            np.testing.assert_allclose(g.resolve_conj().numpy(), e.resolve_conj().numpy(), atol=atol, rtol=rtol,
                                       err_msg=f"{name}: input {k}")
            if dtype == "complex128":

                def scalar(values: list, name: str = name) -> float:
                    with retrograd.no_grad():
                        out = fn(retrograd, *[retrograd.tensor(v) for v in values])
                        return losses(retrograd, out)[name].item()

                np.testing.assert_allclose(g.resolve_conj().numpy(), numerical_grad(scalar, arrays, k), atol=1e-6,
                                           rtol=1e-5, err_msg=f"{name}: input {k} vs finite differences")


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str, dtype: str) -> None:
    tol = {} if dtype == "complex128" else {"atol": 1e-4, "rtol": 1e-4}
    check_against_torch(UNARY[name], [complex_array(2, 3)], dtype, **tol)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name: str, dtype: str) -> None:
    tol = {} if dtype == "complex128" else {"atol": 1e-4, "rtol": 1e-4}
    check_against_torch(BINARY[name], [complex_array(3), complex_array(3)], dtype, **tol)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", sorted(LU))
def test_lu(name: str, dtype: str) -> None:
    """Pivots chosen by |re| + |im| as LAPACK does: a row-shuffled dominant diagonal makes them unambiguous."""
    tol = {} if dtype == "complex128" else {"atol": 1e-4, "rtol": 1e-4}
    a = complex_array(3, 3) + 6 * np.eye(3)[[2, 0, 1]]
    check_against_torch(LU[name], [a, complex_array(3, 2)], dtype, **tol)


def test_complex_with_real_operand() -> None:
    """A real tensor in a complex computation gets a real gradient: the real part of the complex one."""
    z = complex_array(3)
    x = RNG.uniform(-2, 2, size=3)
    grads = []
    for lib in (retrograd, torch):
        zt, xt = leaf(lib, z), leaf(lib, x, "float64")
        loss = ((zt * xt + xt.exp()) * (zt / (xt + 3j))).abs().sum()
        loss.backward()
        assert xt.grad.dtype == lib.float64 and zt.grad.dtype == lib.complex128
        grads.append((zt.grad.numpy(), xt.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("name", ["polar", "complex"])
def test_construction_from_real_parts(name: str) -> None:
    """polar(abs, angle) and complex(real, imag): forward, node and gradients of both real inputs."""
    r, theta = RNG.uniform(0.5, 2, size=(2, 3)), RNG.uniform(-3, 3, size=3)
    results = []
    for lib in (retrograd, torch):
        a, b = leaf(lib, r, "float64"), leaf(lib, theta, "float64")
        z = getattr(lib, name)(a, b)
        assert z.dtype == lib.complex128 and z.grad_fn.name() == ("PolarBackward0" if name == "polar" else
                                                                   "ComplexBackward0")
        loss = (z * z * (0.3 - 1j)).real.sum() + z.abs().sum()
        results.append([z.detach().numpy()] + [g.numpy() for g in lib.autograd.grad(loss, [a, b])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parts_join_bit_for_bit_on_the_standards_path(dtype) -> None:
    """complex's kernel on array_api_strict's arrays (no writable .real/.imag there) gives NumPy's result bit for
    bit: signed zeros, infinities and NaN in either part (Note [complex numbers from parts])."""
    import array_api_strict

    from retrograd.ops.complex import _from_parts

    values = np.array([0.0, -0.0, 1.5, -2.25, 1e-310, -3e-320, 1e30, -1e30, np.inf, -np.inf, np.nan], dtype)
    re, im = (a.ravel() for a in np.meshgrid(values, values))
    expected = _from_parts(np, re, im)
    found = np.asarray(_from_parts(array_api_strict, array_api_strict.asarray(re), array_api_strict.asarray(im)))
    assert found.dtype == expected.dtype
    word = np.uint64 if dtype == np.float64 else np.uint32
    for part in ("real", "imag"):
        ours, numpys = getattr(found, part), getattr(expected, part)
        assert np.array_equal(np.isnan(ours), np.isnan(numpys))
        assert np.array_equal(ours.view(word)[~np.isnan(ours)], numpys.view(word)[~np.isnan(numpys)])


def test_view_as_complex_from_real_leaf() -> None:
    data = RNG.standard_normal((3, 2))
    results = []
    for lib in (retrograd, torch):
        x = leaf(lib, data, "float64")
        z = lib.view_as_complex(x)
        assert z.grad_fn.name() == "ViewAsComplexBackward0" and z.shape == (3,)
        loss = (z * z).imag.sum() + (z.exp() * z.conj()).real.sum()
        results.append(lib.autograd.grad(loss, x)[0].numpy())
    np.testing.assert_allclose(*results, atol=1e-12, rtol=1e-10)


def test_real_and_imag_are_select_views_of_view_as_real() -> None:
    for lib in (retrograd, torch):
        z = leaf(lib, complex_array(2, 3))
        for part, index in ((z.real, 0), (lib.imag(z), 1)):
            assert part.grad_fn.name() == "SelectBackward0"
            assert part.grad_fn.next_functions[0][0].name() == "ViewAsRealBackward0"
            assert part._base is z if lib is retrograd else part._is_view()
            assert part.dtype == lib.float64
            np.testing.assert_array_equal(part.detach().numpy(), lib.view_as_real(z).detach().numpy()[..., index])


def test_real_view_shares_memory() -> None:
    """Writing through z.real (without autograd) changes z, as in torch."""
    for lib in (retrograd, torch):
        z = lib.tensor([[1 + 2j, 3 - 1j]])
        z.real.mul_(10)
        z.imag[:, :1] = -5
        np.testing.assert_array_equal(z.numpy(), [[10 - 5j, 30 - 1j]])


def test_real_of_real_tensor_is_itself() -> None:
    x = retrograd.tensor([1.0, 2.0], requires_grad=True)
    assert retrograd.real(x) is x and x.real is x and retrograd.conj(x) is x and retrograd.conj_physical(x) is x


def test_conj_node_and_double_conj() -> None:
    z_data = complex_array(3)
    for lib in (retrograd, torch):
        z = leaf(lib, z_data)
        assert lib.conj(z).grad_fn.name() == "ConjBackward0"
        assert lib.conj_physical(z).grad_fn.name() == "ConjPhysicalBackward0"
        np.testing.assert_array_equal(lib.conj(lib.conj(z)).detach().resolve_conj().numpy(), z_data)


BIT_RECIPES = {
    "conj": lambda m, z: z.conj(),
    "conj_twice": lambda m, z: z.conj().conj(),
    "_conj": lambda m, z: m._conj(z),
    "neg_view": lambda m, z: z._neg_view(),
    "neg_view_twice": lambda m, z: z._neg_view()._neg_view(),
    "conj_neg_view": lambda m, z: z.conj()._neg_view(),
    "neg_view_of_real": lambda m, z: z.real._neg_view(),
    "select_of_conj": lambda m, z: z.conj()[0],
    "transpose_of_conj": lambda m, z: z.conj().t(),
    "reshape_of_conj": lambda m, z: z.conj().reshape(6),
    "unsqueeze_of_neg_view": lambda m, z: z._neg_view().unsqueeze(0),
    "detach_of_conj": lambda m, z: z.conj().detach(),
    "contiguous_of_conj": lambda m, z: z.conj().contiguous(),
    "clone_of_conj": lambda m, z: z.conj().clone(),
    "sum_of_conj": lambda m, z: z.conj() + 1,
    "real_of_conj": lambda m, z: z.conj().real,
    "imag_of_conj": lambda m, z: z.conj().imag,
    "real_of_neg_view": lambda m, z: z._neg_view().real,
    "imag_of_neg_view": lambda m, z: m.imag(z._neg_view()),
    "imag_of_conj_neg_view": lambda m, z: z.conj()._neg_view().imag,
    "view_as_real_of_neg_view": lambda m, z: m.view_as_real(z._neg_view()),
    "resolve_conj": lambda m, z: z.conj().resolve_conj(),
    "resolve_conj_of_neg_view": lambda m, z: z._neg_view().resolve_conj(),
    "resolve_conj_of_both": lambda m, z: z.conj()._neg_view().resolve_conj(),
    "resolve_neg": lambda m, z: m.resolve_neg(z._neg_view()),
    "resolve_neg_of_conj": lambda m, z: z.conj().resolve_neg(),
    "conj_physical_of_conj": lambda m, z: z.conj().conj_physical(),
}


@pytest.mark.parametrize("name", sorted(BIT_RECIPES))
def test_conjugate_and_negative_bits_match_torch(name: str) -> None:
    """torch's conjugate and negative bits (is_conj, is_neg), values, node and gradients where conj, _neg_view,
    their views, real/imag and resolve_conj/resolve_neg set, keep or drop them."""
    z_data = complex_array(2, 3)
    results = []
    for lib in (torch, retrograd):
        z = leaf(lib, z_data)
        out = BIT_RECIPES[name](lib, z * 1)  # not a leaf, so that the in-place recipe may write it
        values = out.detach().resolve_conj().resolve_neg()
        weights = lib.tensor(np.cos(np.arange(out.numel()) + 0.5j).reshape(tuple(out.shape)).astype(
            "complex128" if out.is_complex() else "float64"))
        loss = (out.resolve_conj().resolve_neg() * weights).sum()
        (grad,) = lib.autograd.grad(loss.real if loss.is_complex() else loss, z) if loss.requires_grad else (z,)
        results.append((out.is_conj(), out.is_neg(), lib.is_conj(out), lib.is_neg(out), str(out.dtype),
                        out.grad_fn and out.grad_fn.name(), values.numpy(), grad.detach().resolve_conj().numpy()))
    theirs, ours = results
    assert ours[:6] == theirs[:6]
    np.testing.assert_allclose(ours[6], theirs[6], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours[7], theirs[7], rtol=1e-12, atol=1e-12)


def test_inplace_op_on_conjugate_keeps_its_bit() -> None:
    """An in-place op on a tensor with the conjugate bit keeps the bit and writes the values torch's reads give
    (retrograd's `conj` is a copy: the write does not reach the input, Note [conjugate and negative bits])."""
    z_data = complex_array(2, 3)
    results = []
    for lib in (torch, retrograd):
        out = lib.tensor(z_data).conj().mul_(2j)
        results.append((out.is_conj(), out.resolve_conj().numpy()))
    assert results[1][0] is results[0][0] is True
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("primal_bits", ["none", "conj", "neg"])
@pytest.mark.parametrize("tangent_bits", ["none", "conj", "neg"])
def test_make_dual_copies_a_tangent_with_other_bits(primal_bits: str, tangent_bits: str) -> None:
    """make_dual keeps the tangent itself only where its conjugate and negative bits are the primal's (torch's
    has_same_meta); the copy has the primal's bits and the tangent's values."""
    make = {"none": lambda t: t, "conj": lambda t: t.conj(), "neg": lambda t: t._neg_view()}
    x_data, t_data = complex_array(2, 3), complex_array(2, 3)
    results = []
    for lib in (torch, retrograd):
        fw = lib.autograd.forward_ad
        x, t = make[primal_bits](lib.tensor(x_data)), make[tangent_bits](lib.tensor(t_data))
        with fw.dual_level():
            dual = fw.make_dual(x, t)
            tangent = fw.unpack_dual(dual).tangent
            parts = [fw.unpack_dual(part(dual)).tangent for part in (lib.real, lib.imag)]
            results.append((tangent is t, dual.is_conj(), dual.is_neg(), tangent.is_conj(), tangent.is_neg(),
                            tangent.resolve_conj().resolve_neg().numpy(),
                            [p.resolve_neg().numpy() for p in parts]))
    theirs, ours = results
    assert ours[:5] == theirs[:5]
    np.testing.assert_allclose(ours[5], theirs[5], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours[6], theirs[6], rtol=1e-12, atol=1e-12)


def test_sgn_of_real_has_zero_gradient() -> None:
    """torch gives a ZeroTensor for real sgn; compare its values."""
    for lib in (retrograd, torch):
        x = leaf(lib, [-1.5, 0.5, 2.0], "float64")
        (g,) = lib.autograd.grad(lib.sgn(x).sum(), x)
        np.testing.assert_array_equal((lib.zeros(3, dtype=lib.float64) + g).numpy(), [0.0, 0.0, 0.0])


def test_abs_and_angle_at_zero() -> None:
    """abs and angle of a complex zero have gradient 0 (torch's subgradient choice)."""
    results = []
    for lib in (retrograd, torch):
        z = leaf(lib, [0j, 1 + 1j, -2j])
        loss = z.abs().sum() + z.angle().sum()
        results.append(lib.autograd.grad(loss, z)[0].numpy())
    np.testing.assert_allclose(*results, atol=1e-12)
    np.testing.assert_array_equal(results[0][0], 0)


@pytest.mark.parametrize("fn", [
    lambda m, z: m.exp(z) * z.conj() + z * z,
    lambda m, z: m.tanh(z) * (0.3 + 2j),
    lambda m, z: m.sigmoid(z) / (z + 3),
    lambda m, z: m.sqrt(z) * m.log(z).conj(),
], ids=["exp_conj_mul", "tanh", "sigmoid_div", "sqrt_log"])
def test_second_derivative_through_complex_ops(fn) -> None:
    """create_graph=True: the gradient of a complex computation is itself differentiable."""
    z_data = complex_array(3)
    results = []
    for lib in (retrograd, torch):
        z = leaf(lib, z_data)
        loss = fn(lib, z).abs().sum() + (fn(lib, z) * (1 - 0.5j)).real.sum()
        (g,) = lib.autograd.grad(loss, z, create_graph=True)
        (gg,) = lib.autograd.grad((g * g.conj()).real.sum(), z)
        results.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, atol=1e-10, rtol=1e-8)


def test_empty_complex_tensors() -> None:
    for lib in (retrograd, torch):
        z = lib.zeros(0, 3, dtype=lib.complex128, requires_grad=True)
        out = lib.view_as_real(z.exp())
        assert tuple(out.shape) == (0, 3, 2)
        (g,) = lib.autograd.grad(z.exp().real.sum() + z.abs().sum(), z)  # torch's ViewAsReal backward fails here
        assert tuple(g.shape) == (0, 3) and g.dtype == lib.complex128
        assert tuple(lib.view_as_complex(lib.zeros(0, 3, 2)).shape) == (0, 3)


@pytest.mark.parametrize("call", [
    lambda m: m.view_as_real(m.tensor([1.0, 2.0])),
    lambda m: m.view_as_complex(m.tensor([1, 2])),
    lambda m: m.view_as_complex(m.zeros(3, 3)),
    lambda m: m.view_as_complex(m.zeros(2, 3).t()),
    lambda m: m.imag(m.tensor([1.0])),
    lambda m: m.complex(m.tensor([1, 2]), m.tensor([1, 2])),
    lambda m: m.complex(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64)),
    lambda m: m.polar(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64)),
], ids=["view_as_real_of_real", "view_as_complex_of_int", "view_as_complex_size3", "view_as_complex_stride",
        "imag_of_real", "complex_of_ints", "complex_mixed", "polar_mixed"])
def test_errors_match_torch(call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(retrograd)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("base", ["tensor", "number"])
def test_real_negative_base_to_a_complex_power(base):
    """d(b ** e)/de = b ** e log(b): a negative real base has a complex log (log(-1) = i pi), not NaN."""
    def grads(lib):
        b = -lib.ones(2, dtype=lib.float64) * 1.5 if base == "tensor" else -1.5
        e = lib.tensor(np.array([0.3 + 0.2j, -0.5 + 1.0j]), requires_grad=True)
        assert lib.autograd.gradcheck(lambda x: lib.pow(b, x), (e,))
        (g,) = lib.autograd.grad(lib.pow(b, e).abs().sum(), e)
        return g.detach().numpy()

    np.testing.assert_allclose(grads(retrograd), grads(torch), rtol=1e-12, atol=1e-15)


CLAMPS = {
    "clamp_number": lambda lib, z, x: lib.clamp(z, min=0.1),
    "clamp_max_number": lambda lib, z, x: z.clamp(max=1.0),
    "clamp_tensors": lambda lib, z, x: lib.clamp(z, min=lib.tensor(0.1), max=lib.tensor(1.0)),
    "clamp_min_number": lambda lib, z, x: lib.clamp_min(z, 0.1),
    "clamp_max_in_place": lambda lib, z, x: z.clone().clamp_max_(0.1),
    "clip": lambda lib, z, x: lib.clip(z, 0, 1),
    "clamp_empty": lambda lib, z, x: lib.clamp(z[:0], min=0.1),
    "clamp_complex32": lambda lib, z, x: lib.clamp(z.to(lib.complex32), min=0.1),
    "clamp_min_complex_number": lambda lib, z, x: lib.clamp_min(x, 0.1j),
    "clamp_complex_number": lambda lib, z, x: lib.clamp(x, max=0.1j),
    "clamp_in_place_complex_number": lambda lib, z, x: x.clone().clamp_(min=0.1j),
    "clamp_complex_tensor_bound": lambda lib, z, x: lib.clamp(x, max=lib.tensor(0.1j)),
    "clamp_complex_tensor_bounds": lambda lib, z, x: lib.clamp(x, min=lib.tensor(0.1j), max=lib.tensor(2j)),
    "clamp_min_tensor": lambda lib, z, x: lib.clamp_min(z, lib.tensor(0.1)),
    "clamp_max_tensor_in_place": lambda lib, z, x: z.clone().clamp_max_(lib.tensor(0.1)),
}


@pytest.mark.parametrize("call", CLAMPS.values(), ids=CLAMPS.keys())
def test_clamp_refuses_complex_numbers_as_torch(call) -> None:
    """Complex numbers have no order: a complex self (or complex number bound) is refused by clamp's own check,
    a complex tensor bound by the max/min kernel the bounds dispatch to, each with torch's type and text."""
    def refusal(lib):
        z = lib.tensor(complex_array(3).astype("complex64"), requires_grad=True)
        with pytest.raises(Exception) as info:
            call(lib, z, lib.ones(3))
        return type(info.value), str(info.value)

    assert refusal(retrograd) == refusal(torch)


REAL_ONLY = {
    "relu": lambda lib, F, z: F.relu(z), "relu_": lambda lib, F, z: F.relu_(z.clone()),
    "relu6": lambda lib, F, z: F.relu6(z), "hardtanh_": lambda lib, F, z: F.hardtanh_(z.clone()),
    "threshold": lambda lib, F, z: F.threshold(z, 0.1, 0.0), "leaky_relu": lambda lib, F, z: F.leaky_relu(z),
    "rrelu": lambda lib, F, z: F.rrelu(z), "rrelu_training": lambda lib, F, z: F.rrelu(z, training=True),
    "elu": lambda lib, F, z: F.elu(z), "celu_": lambda lib, F, z: F.celu(z.clone(), inplace=True),
    "selu": lambda lib, F, z: F.selu(z), "gelu_tanh": lambda lib, F, z: F.gelu(z, approximate="tanh"),
    "mish": lambda lib, F, z: F.mish(z), "softplus": lambda lib, F, z: F.softplus(z),
    "logsigmoid": lambda lib, F, z: F.logsigmoid(z), "hardsigmoid": lambda lib, F, z: F.hardsigmoid(z),
    "hardswish_": lambda lib, F, z: F.hardswish(z.clone(), inplace=True),
    "softshrink": lambda lib, F, z: F.softshrink(z),
    "hardshrink": lambda lib, F, z: F.hardshrink(z), "glu": lambda lib, F, z: F.glu(z),
    "logit": lambda lib, F, z: lib.logit(z, eps=1e-6), "mse_loss": lambda lib, F, z: F.mse_loss(z, z * 2),
    "smooth_l1_loss": lambda lib, F, z: F.smooth_l1_loss(z, z), "huber_loss": lambda lib, F, z: F.huber_loss(z, z),
    "bce_with_logits": lambda lib, F, z: F.binary_cross_entropy_with_logits(z, z),
    "multilabel_soft_margin": lambda lib, F, z: F.multilabel_soft_margin_loss(z[None], z[None]),
    "hinge_embedding": lambda lib, F, z: F.hinge_embedding_loss(z, lib.ones(2)),
    "kl_div": lambda lib, F, z: F.kl_div(z, z, reduction="batchmean"),
    "cosine_similarity": lambda lib, F, z: F.cosine_similarity(z[None], z[None]),
    "prelu": lambda lib, F, z: F.prelu(z, lib.tensor([0.25 + 0j])),
    "prelu_mixed": lambda lib, F, z: F.prelu(z, lib.tensor([0.25])),
    "prelu_long": lambda lib, F, z: F.prelu(lib.ones(0, 3, dtype=lib.long), lib.tensor([1])),
    "cosine_similarity_long": lambda lib, F, z: F.cosine_similarity(lib.ones(2, 3, dtype=lib.long),
                                                                    lib.ones(2, 3, dtype=lib.long)),
}


@pytest.mark.parametrize("call", REAL_ONLY.values(), ids=REAL_ONLY.keys())
def test_real_only_activations_and_losses_refuse_complex_as_torch(call) -> None:
    """torch's kernels of the rectifiers, smooth activations and losses exist for real types only (relu and
    hardtanh are clamps in torch): a complex input is refused with torch's words, where NumPy would compute."""
    def refusal(lib):
        z = lib.tensor([1 + 1j, -2j], dtype=lib.complex64)
        with pytest.raises(Exception) as info:
            call(lib, lib.nn.functional, z)
        return type(info.value), str(info.value)

    assert refusal(retrograd) == refusal(torch)


@pytest.mark.parametrize("name", ["softsign", "tanhshrink", "silu", "l1_loss", "soft_margin_loss"])
def test_activations_and_losses_torch_computes_on_complex(name) -> None:
    """The compositions torch computes on complex numbers stay computed."""
    def value(lib):
        z = lib.tensor([1 + 1j, -2j], dtype=lib.complex64)
        fn = getattr(lib.nn.functional, name)
        out = fn(z, z * 2) if name.endswith("loss") else fn(z)
        return np.round(out.detach().numpy(), 5).tolist()

    assert value(retrograd) == value(torch)


def test_logaddexp_at_infinite_real_parts_as_torch() -> None:
    """torch's complex logaddexp keeps the smaller operand when both real parts are -inf, and NaN stays NaN."""
    a = np.array([complex(-np.inf, 0), complex(np.inf, 0), complex(np.nan, 0), 1 + 2j])
    b = np.array([complex(-np.inf, 1), complex(np.inf, 2), 1j, complex(-np.inf, 0)])
    got = retrograd.logaddexp(retrograd.tensor(a), retrograd.tensor(b)).numpy()
    np.testing.assert_array_equal(got, torch.logaddexp(torch.tensor(a), torch.tensor(b)).numpy())
