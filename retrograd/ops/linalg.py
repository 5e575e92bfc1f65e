"""Rule table: linear algebra (OPS.md section H) — products, inverses, solvers, decompositions, norms.

What lives here, top to bottom:
  - rows: matrix products (mm ... einsum), inverses and determinants, linear solvers (lu_solve
    among them), decompositions (cholesky, lu, qr, svd, eigh), pinv / lstsq and the matrix
    exponential;
  - formula helpers: the backward and forward-mode rules of those rows, written with
    differentiable ops only (so every rule can be differentiated again), after torch's
    derivatives.yaml / FunctionsManual;
  - NumPy kernels that NumPy lacks (LAPACK's pivoted LU, triangular solves, expm);
  - public functions with torch's signatures, argument checks and error texts, and the
    composites torch builds from the rows (matmul, tensordot, kron, multi_dot, logdet,
    matrix_power, matrix_norm, norm, cond).

`matmul` records the node torch records for each shape case (see Note [matmul nodes]).
Functions torch has twice with different signatures (torch.svd / torch.linalg.svd,
torch.cross / torch.linalg.cross, torch.slogdet / torch.linalg.slogdet, torch.norm /
torch.linalg.norm, torch.lu / torch.linalg.lu, torch.lu_solve / torch.linalg.lu_solve) keep
their torch.linalg version here as `linalg_<name>`; retrograd.linalg exports it under the plain
name.
"""

# torch.linalg's own argument names (A, B, UPLO) and the usual matrix notation (U, S, Vh, gA):
# ruff: noqa: N803, N806

from __future__ import annotations

import math
import string
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import arange, ones_like, randn
from .._tensor import Tensor, _wrap, _wrap_dim
from .._warn import warn_once_at_user
from ..autograd import grad_mode
from ..autograd.forward_ad import composite
from . import arrays as A
from .arrays import max_from  # these two where a parameter named A hides the module
from .arrays import reduce as reduce_array
from .pointwise import log, where
from .reduction import amax, amin, return_type, vector_norm
from .registry import apply, autocast_unifies, defop, namespace, unrecorded_arrays
from .shape import cat, diag_embed, diagonal, diagonal_scatter, reshape_alias_op, stack, tril, triu, unsafe_view
from .unsigned import LOW_PRECISION


class _LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix was singular or not positive-definite. Named as torch's class
    (torch._C._LinAlgError) so that `type(error).__name__` and an uncaught error's last line print as torch's."""


_LinAlgError.__module__ = "torch._C"
LinAlgError = _LinAlgError


# ============================================================================================
# Rows: matrix products
# ============================================================================================


@defop("mm", inputs=("self", "mat2"), params=("mat2_transposed",), self="grad.mm(conj(mat2).t())",
       mat2="mat2_grad(grad, self, mat2_transposed)", jvp="self_t.mm(mat2) + self.mm(mat2_t)")
def mm_op(xp, a, b, mat2_transposed):
    return A.matmul(xp, a, b)


@defop("mv", inputs=("self", "vec"), self="outer(grad, conj(vec))", vec="mv_vec_grad(self, grad)",
       jvp="self_t.mv(vec) + self.mv(vec_t)")
def mv_op(xp, a, v):
    return xp.matmul(a, v)


def mv_vec_grad(self: Tensor, grad: Tensor) -> Tensor:
    """The gradient of mv's vector, conj(self).t().mv(grad): when nothing records it, the same product on
    NumPy's transpose, without the view op (Note [unrecorded transposes] in shape.py)."""
    arrays = unrecorded_arrays(self, grad)
    if arrays is None:
        return self.conj().t().mv(grad)
    return _wrap(np.matmul(arrays[0].T, arrays[1]))


@defop("dot", inputs=("self", "tensor"), self="grad * conj(tensor)", tensor="grad * conj(self)",
       jvp="dot(self_t, tensor) + dot(self, tensor_t)")
def dot_op(xp, a, b):
    return A.dot(xp, a, b)


@defop("vdot", inputs=("self", "other"), self="conj(grad) * other", other="grad * self",
       jvp="vdot(self_t, other) + vdot(self, other_t)")
def vdot_op(xp, a, b):
    return A.dot(xp, xp.conj(a), b)


@defop("bmm", inputs=("self", "mat2"), self="grad.bmm(conj(mat2).transpose(1, 2))",
       mat2="conj(self).transpose(1, 2).bmm(grad)", jvp="self_t.bmm(mat2) + self.bmm(mat2_t)")
def bmm_op(xp, a, b):
    return xp.matmul(a, b)


@defop("outer", node="MulBackward0", inputs=("self", "vec2"), self="(grad * conj(vec2)).sum(1)",
       vec2="(grad * conj(self).unsqueeze(1)).sum(0)", jvp="outer(self_t, vec2) + outer(self, vec2_t)")
def outer_op(xp, a, b):
    return a[:, None] * b


# Note [matmul nodes]
# torch.matmul reaches different kernels by shape (aten/native/LinearAlgebra.cpp, _matmul_impl),
# so the node a user sees differs: DotBackward0 (1-d @ 1-d), MvBackward0, SqueezeBackward4
# (1-d @ 2-d), MmBackward0, UnsafeViewBackward0 (folded into mm/mv or batched through bmm),
# and, when a matrix multiplies a batch from the left through the transposed fold,
# CloneBackward0 (or TransposeBackward0 when the transposed result is already contiguous).
# One fused row does every case beyond 2-d; `matmul` picks the alias whose node torch shows.
# Batch broadcasting is summed back by the engine (Note [sum_to]).
@defop("matmul_nd", node="UnsafeViewBackward0", inputs=("self", "other"),
       self="matmul_grad_left(grad, other, len(self_shape))", other="matmul_grad_right(grad, self, len(other_shape))",
       jvp="matmul(self_t, other) + matmul(self, other_t)")
def matmul_nd(xp, a, b):
    if a.ndim > 2 and b.ndim == 2:  # a batch times a matrix: one GEMM over the batch folded into rows, as torch folds
        rows = math.prod(a.shape[:-1])  # not -1: an empty inner dim leaves it undetermined
        return xp.reshape(A.matmul(xp, xp.reshape(a, (rows, a.shape[-1])), b), a.shape[:-1] + b.shape[-1:])
    return A.matmul(xp, a, b)


matmul_vec_mat = matmul_nd.alias("matmul_vec_mat", "SqueezeBackward4")
matmul_folded_clone = matmul_nd.alias("matmul_folded_clone", "CloneBackward0")
matmul_folded_transpose = matmul_nd.alias("matmul_folded_transpose", "TransposeBackward0")


@defop("addmm", inputs=("self", "mat1", "mat2"), params=("beta", "alpha", "mat2_transposed"),
       self="addmm_self_grad(grad, self_shape, beta)", mat1="addmm_mat1_grad(grad, mat2, alpha)",
       mat2="addmm_mat2_grad(grad, mat1, alpha, mat2_transposed)",
       jvp="self_t * beta + (mat1_t.mm(mat2) + mat1.mm(mat2_t)) * alpha")
def addmm_op(xp, c, a, b, beta, alpha, mat2_transposed):
    return add_product(xp, c, a, b, beta, alpha)


@defop("addmv", inputs=("self", "mat", "vec"), params=("beta", "alpha"),
       self="scale_by(grad, beta)", mat="scale_by(outer(grad, conj(vec)), alpha)",
       vec="scale_by(conj(mat).t().mv(grad), alpha)",
       jvp="self_t * beta + (mat_t.mv(vec) + mat.mv(vec_t)) * alpha")
def addmv_op(xp, c, a, v, beta, alpha):
    return add_product(xp, c, a, v, beta, alpha)


@defop("addr", inputs=("self", "vec1", "vec2"), params=("beta", "alpha"),
       self="scale_by(grad, beta)", vec1="scale_by(grad.mv(conj(vec2)), alpha)",
       vec2="scale_by(grad.t().mv(conj(vec1)), alpha)",
       jvp="self_t * beta + (outer(vec1_t, vec2) + outer(vec1, vec2_t)) * alpha")
def addr_op(xp, c, a, b, beta, alpha):
    return add_scaled(xp, c, a[:, None] * b, beta, alpha)


@defop("baddbmm", inputs=("self", "batch1", "batch2"), params=("beta", "alpha"),
       self="scale_by(grad, beta)", batch1="scale_by(grad.bmm(conj(batch2).transpose(1, 2)), alpha)",
       batch2="scale_by(conj(batch1).transpose(1, 2).bmm(grad), alpha)",
       jvp="self_t * beta + (batch1_t.bmm(batch2) + batch1.bmm(batch2_t)) * alpha")
def baddbmm_op(xp, c, a, b, beta, alpha):
    return add_product(xp, c, a, b, beta, alpha)


@defop("addbmm", inputs=("self", "batch1", "batch2"), params=("beta", "alpha"),
       self="scale_by(grad, beta)",
       batch1="scale_by(grad.expand(batch1_shape[:1] + grad.shape).bmm(conj(batch2).transpose(1, 2)), alpha)",
       batch2="scale_by(conj(batch1).transpose(1, 2).bmm(grad.expand(batch2_shape[:1] + grad.shape)), alpha)",
       jvp="self_t * beta + (batch1_t.bmm(batch2) + batch1.bmm(batch2_t)).sum(0) * alpha")
def addbmm_op(xp, c, a, b, beta, alpha):
    return add_product(xp, c, a, b, beta, alpha, batches_summed=True)


@defop("trace", self="trace_backward(grad, self_shape)", jvp="trace(self_t)")
def trace_op(xp, x):
    return x.trace() if hasattr(x, "strides") else xp.linalg.trace(x)


@defop("linalg_cross", inputs=("self", "other"), params=("dim",), promote="binary",
       self="linalg_cross(conj(other), grad, dim=dim)", other="linalg_cross(grad, conj(self), dim=dim)",
       jvp="linalg_cross(self_t, other, dim=dim) + linalg_cross(self, other_t, dim=dim)")
def cross_op(xp, a, b, dim):
    if hasattr(a, "strides"):
        return xp.cross(a, b, axis=dim)
    return xp.linalg.cross(a, b, axis=dim - max(a.ndim, b.ndim) if dim >= 0 else dim)  # the standard's axis is < 0


# einsum contracts its operands pairwise, left to right, as torch does; each step is one row
# with one or two operands and an explicit equation over single letters (ellipses already
# spelled out by `einsum`). torch's final node depends on how it lowers the equation
# (ViewBackward0, PermuteBackward0, SumBackward1, ...); ours is always EinsumBackward0.
@defop("einsum", inputs=("self", "other"), params=("equation",),
       self="einsum_operand_grad(grad, equation, 0, self.shape, other)",
       other="einsum_operand_grad(grad, equation, 1, other.shape, self)",
       jvp="einsum_pair(equation, self_t, other) + (0 if other is None else einsum_pair(equation, self, other_t))")
def einsum_op(xp, a, b, equation):
    if xp is np:
        operands = (a,) if b is None else (a, b)
        if a.dtype == np.float16:  # float32 sums rounded once, as torch's bmm (Note [float16 sums] in reduction.py)
            return np.einsum(equation, *operands, dtype=np.float32).astype(np.float16)
        return np.einsum(equation, *operands)
    return _einsum_by_matmul(xp, equation, a, b)


def _einsum_by_matmul(xp: Any, equation: str, a: Any, b: Any) -> Any:
    """One einsum step with the standard's functions (it has no einsum): each operand's repeated labels taken down
    to their diagonal and its own labels summed, then one batched matmul over the shared labels."""
    inputs, out = equation.split("->")
    terms = inputs.split(",")
    operands = [_einsum_reduced(xp, x, term, out + (terms[1 - k] if b is not None else ""))
                for k, (x, term) in enumerate(zip((a, b) if b is not None else (a,), terms))]
    if b is None:
        x, term = operands[0]
        return xp.permute_dims(x, tuple(term.index(c) for c in out))
    (x, left), (y, right) = operands
    size = {**dict(zip(left, x.shape)), **dict(zip(right, y.shape))}
    batch = [c for c in left if c in right and c in out]
    shared = [c for c in left if c in right and c not in out]
    rows, columns = [c for c in left if c not in right], [c for c in right if c not in left]

    def laid_out(z: Any, term: str, groups: list) -> Any:
        moved = xp.permute_dims(z, tuple(term.index(c) for group in groups for c in group))
        return xp.reshape(moved, tuple(math.prod(size[c] for c in group) for group in groups))

    product = xp.matmul(laid_out(x, left, [batch, rows, shared]), laid_out(y, right, [batch, shared, columns]))
    labels = batch + rows + columns
    product = xp.reshape(product, tuple(size[c] for c in labels))
    return xp.permute_dims(product, tuple(labels.index(c) for c in out))


def _einsum_reduced(xp: Any, x: Any, term: str, elsewhere: str) -> tuple[Any, str]:
    """(x, term) with each repeated label's diagonal taken (the other places zeroed, then summed away) and the
    labels no other term or the output names summed."""
    while len(set(term)) < len(term):
        c = next(c for c in term if term.count(c) > 1)
        i, j = term.index(c), term.index(c, term.index(c) + 1)
        along_i, along_j = ([x.shape[i] if k == axis else 1 for k in range(x.ndim)] for axis in (i, j))
        places = xp.arange(x.shape[i], device=x.device)
        on_diagonal = xp.reshape(places, tuple(along_i)) == xp.reshape(places, tuple(along_j))
        x = xp.sum(xp.where(on_diagonal, x, xp.zeros((), dtype=x.dtype, device=x.device)), axis=j, dtype=x.dtype)
        term = term[:j] + term[j + 1:]
    alone = tuple(k for k, c in enumerate(term) if c not in elsewhere)
    if alone:
        x, term = xp.sum(x, axis=alone, dtype=x.dtype), "".join(c for c in term if c in elsewhere)
    return x, term


# ============================================================================================
# Rows: inverse, determinants, linear solvers
# ============================================================================================


@defop("linalg_inv_ex", outputs=("inverse", "info"), differentiable_outputs=(0,),
       self="-matmul(inverse.mH, matmul(grad, inverse.mH))", jvp="-matmul(matmul(inverse, self_t), inverse)")
def inv_ex_op(xp, a):
    return batched_or_singular(xp, a, xp.linalg.inv)


@defop("cholesky_inverse", params=("upper",), self="cholesky_inverse_backward(grad, self, upper, result)",
       jvp="cholesky_inverse_jvp(self_t, self, upper, result)")
def cholesky_inverse_op(xp, factor, upper):
    """(L L^H)^-1 from the Cholesky factor L (or (U^H U)^-1 from U when upper); only its triangle is read."""
    triangle = xp.triu(factor) if upper else xp.tril(factor)
    half = xp.conj(A.matrix_transpose(xp, triangle))
    return xp.linalg.inv(xp.matmul(half, triangle) if upper else xp.matmul(triangle, half))


@defop("linalg_householder_product", inputs=("self", "tau"),
       self="householder_product_backward(grad, self, tau)[0]", tau="householder_product_backward(grad, self, tau)[1]")
def householder_product_op(xp, a, tau):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i = (0, ..., 0, 1, a[i+1:, i])."""
    m, n = a.shape[-2:]
    q = A.copy(xp, xp.broadcast_to(xp.eye(m, n, dtype=a.dtype, device=a.device), a.shape))
    for i in reversed(range(tau.shape[-1])):
        v = _reflector(xp, a, i)
        q = q - tau[..., i, None, None] * v[..., :, None] * xp.matmul(xp.conj(v)[..., None, :], q)
    return q


def _reflector(xp: Any, a: Any, i: int) -> Any:
    """v_i of the i-th column of a: zeros above row i, 1 at row i, a's entries below (arrays or tensors)."""
    m = a.shape[-2]
    if isinstance(a, Tensor):
        rows = arange(m, device=a.device)
        return a[..., :, i] * (rows > i).to(a.dtype) + (rows == i).to(a.dtype)
    rows = xp.arange(m, device=a.device)
    return xp.where(rows > i, a[..., :, i], A.astype(xp, rows == i, a.dtype))


@defop("ormqr", inputs=("self", "input2", "input3"), params=("left", "transpose"),
       self="ormqr_backward(grad, self, input2, input3, left, transpose)[0]",
       input2="ormqr_backward(grad, self, input2, input3, left, transpose)[1]",
       input3="ormqr_backward(grad, self, input2, input3, left, transpose)[2]")
def ormqr_op(xp, a, tau, other, left, transpose):
    """op(Q) @ other (left) or other @ op(Q), Q = H_1 ... H_k the full square product of a's reflectors,
    op(Q) = Q^H when transpose."""
    q = householder_product_op.forward(xp, *_square_reflectors(xp, a, tau))
    if transpose:
        q = xp.conj(A.matrix_transpose(xp, q))
    return xp.matmul(q, other) if left else xp.matmul(other, q)


def _square_reflectors(xp: Any, a: Any, tau: Any) -> tuple:
    """a's first k = len(tau) columns and tau, padded with zero reflectors to the square (rows x rows) product."""
    rows, k = a.shape[-2], tau.shape[-1]
    columns, scales = a[..., :, :k], tau
    if k < rows:
        if isinstance(a, Tensor):
            columns = cat([columns, columns.new_zeros((*a.shape[:-1], rows - k))], -1)
            scales = cat([tau, tau.new_zeros((*tau.shape[:-1], rows - k))], -1)
        else:
            columns = xp.concat([columns, xp.zeros((*a.shape[:-1], rows - k), dtype=a.dtype, device=a.device)], axis=-1)
            scales = xp.concat([tau, xp.zeros((*tau.shape[:-1], rows - k), dtype=tau.dtype, device=a.device)], axis=-1)
    return columns, scales


# torch declares no derivative of the LDL factorisation nor of its solve: their nodes are NotImplemented
@defop("linalg_ldl_factor_ex", node="NotImplemented", outputs=3, differentiable_outputs=(0,),
       self="not_implemented('linalg_ldl_factor_ex')")
def ldl_factor_op(xp, a):
    """LAPACK's sytf2 (lower, Bunch-Kaufman pivoting) per matrix: (LD, pivots, info)."""
    batch, n = a.shape[:-2], a.shape[-1]
    stacked = A.reshape(xp, a, (math.prod(batch), n, n))  # -1 is ambiguous when a is empty
    factored = [_sytf2_lower(xp, A.copy(xp, stacked[k, ...])) for k in range(stacked.shape[0])]
    if not factored:
        return A.copy(xp, a), xp.zeros((*batch, n), dtype=xp.int32, device=a.device), \
            xp.zeros(batch, dtype=xp.int32, device=a.device)
    factors, pivots, info = zip(*factored)
    return (A.reshape(xp, xp.tril(xp.stack(factors)), a.shape),
            A.reshape(xp, xp.asarray(pivots, dtype=xp.int32, device=a.device), (*batch, n)),
            A.reshape(xp, xp.asarray(info, dtype=xp.int32, device=a.device), batch))


@defop("linalg_ldl_solve", node="NotImplemented", inputs=("LD", "B"), params=("pivots",),
       LD="not_implemented('linalg_ldl_solve')", B="not_implemented('linalg_ldl_solve')")
def ldl_solve_op(xp, factors, b, pivots):
    """LAPACK's sytrs (lower) per matrix: A X = B from sytrf's factors and pivots."""
    shape = np.broadcast_shapes(factors.shape[:-2], b.shape[:-2], pivots.shape[:-1])
    count = math.prod(shape)
    factors = A.reshape(xp, xp.broadcast_to(factors, (*shape, *factors.shape[-2:])), (count, *factors.shape[-2:]))
    pivots = A.reshape(xp, xp.broadcast_to(pivots, (*shape, pivots.shape[-1])), (count, pivots.shape[-1]))
    x = A.reshape(xp, xp.broadcast_to(b, (*shape, *b.shape[-2:])), (count, *b.shape[-2:]))
    if not count:
        return A.reshape(xp, A.copy(xp, x), (*shape, *b.shape[-2:]))
    solved = [_sytrs_lower(xp, factors[k, ...], _host_ints(pivots[k, ...]), A.copy(xp, x[k, ...]))
              for k in range(count)]
    return A.reshape(xp, xp.stack(solved), (*shape, *b.shape[-2:]))


def _host_ints(vector: Any) -> list[int]:
    """A 1-d integer array's values as Python ints (NumPy and CuPy: tolist; the standard: one read each)."""
    if hasattr(vector, "strides"):
        return vector.tolist()
    return [int(vector[i]) for i in range(vector.shape[0])]


def _magnitude(xp: Any, value: Any) -> float:
    """LAPACK's |.| of one element for pivoting: |x| for reals, |re| + |im| (cabs1) for complex numbers."""
    return float(xp.abs(xp.real(value)) + xp.abs(xp.imag(value)) if D.kind(value) == "c" else xp.abs(value))


def _largest(xp: Any, values: Any) -> int:
    """The position of the largest cabs1 magnitude in a vector (the first on ties), as LAPACK's i?amax."""
    return int(xp.argmax(xp.abs(xp.real(values)) + xp.abs(xp.imag(values)) if D.kind(values) == "c"
                         else xp.abs(values)))


def _swap(xp: Any, a: Any, first: tuple, second: tuple) -> None:
    """Exchange a[first] and a[second] in place (basic indices: the standard assigns through those only)."""
    held = A.copy(xp, a[first])
    a[first] = a[second]
    a[second] = held


def _sytf2_lower(xp: Any, a: Any) -> tuple[Any, list[int], int]:
    """The Bunch-Kaufman factorisation P L D L^T P^T of a symmetric matrix in place, in LAPACK's order of
    operations (dsytf2, UPLO='L'); returns the factors, LAPACK's 1-based pivots (negative for 2x2 blocks)
    and info. Each step's pivot choice reads a few numbers on the host."""
    n = a.shape[0]
    alpha = (1 + math.sqrt(17)) / 8
    pivots = [0] * n
    info = 0
    k = 0
    while k < n:
        step = 1
        absakk = _magnitude(xp, a[k, k])
        if k < n - 1:
            imax = k + 1 + _largest(xp, a[k + 1:, k])
            colmax = _magnitude(xp, a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            if absakk >= alpha * colmax:
                kp = k
            else:
                jmax = k + _largest(xp, a[imax, k:imax])
                rowmax = _magnitude(xp, a[imax, jmax])
                if imax < n - 1:
                    jmax = imax + 1 + _largest(xp, a[imax + 1:, imax])
                    rowmax = max(rowmax, _magnitude(xp, a[jmax, imax]))
                if absakk >= alpha * colmax * (colmax / rowmax):
                    kp = k
                elif _magnitude(xp, a[imax, imax]) >= alpha * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                _swap(xp, a, (slice(kp + 1, None), kk), (slice(kp + 1, None), kp))
                between = A.copy(xp, a[kk + 1:kp, kk])
                a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
                a[kp, kk + 1:kp] = between
                _swap(xp, a, (kk, kk), (kp, kp))
                if step == 2:
                    _swap(xp, a, (k + 1, k), (kp, k))
            if step == 1:
                if k < n - 1:
                    d11 = 1 / a[k, k]
                    column = A.copy(xp, a[k + 1:, k])
                    a[k + 1:, k + 1:] -= xp.tril(d11 * column[:, None] * column[None, :])
                    a[k + 1:, k] *= d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                d21 = (1 / (d11 * d22 - 1)) / d21
                wk = d21 * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                wkp1 = d21 * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                a[k + 2:, k + 2:] -= xp.tril(a[k + 2:, k, None] * wk[None, :] + a[k + 2:, k + 1, None] * wkp1[None, :])
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if step == 1:
            pivots[k] = kp + 1
        else:
            pivots[k] = pivots[k + 1] = -(kp + 1)
        k += step
    return a, pivots, info


def _sytrs_lower(xp: Any, a: Any, pivots: list[int], b: Any) -> Any:
    """Solve A X = B in place in b with sytrf's lower factors (LAPACK's dsytrs, UPLO='L'); returns b."""
    n = a.shape[0]
    k = 0
    while k < n:  # L D y = P^T b
        if pivots[k] > 0:
            _swap(xp, b, (k, ...), (pivots[k] - 1, ...))
            b[k + 1:, ...] -= a[k + 1:, k, None] * b[None, k, :]
            b[k, ...] /= a[k, k]
            k += 1
        else:
            _swap(xp, b, (k + 1, ...), (-pivots[k] - 1, ...))
            b[k + 2:, ...] -= a[k + 2:, k, None] * b[None, k, :] + a[k + 2:, k + 1, None] * b[None, k + 1, :]
            akm1k = a[k + 1, k]
            akm1, ak = a[k, k] / akm1k, a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k, ...] / akm1k, b[k + 1, ...] / akm1k
            b[k, ...], b[k + 1, ...] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T x = y
        if pivots[k] > 0:
            b[k, ...] -= a[k + 1:, k] @ b[k + 1:, ...]
            _swap(xp, b, (k, ...), (pivots[k] - 1, ...))
            k -= 1
        else:
            b[k, ...] -= a[k + 1:, k] @ b[k + 1:, ...]
            b[k - 1, ...] -= a[k + 1:, k - 1] @ b[k + 1:, ...]
            _swap(xp, b, (k, ...), (-pivots[k] - 1, ...))
            k -= 2
    return b


@defop("linalg_det", self="det_backward(grad, result, self)", jvp="det_jvp(self_t, result, self)")
def det_op(xp, a):
    return xp.linalg.det(a)


@defop("linalg_slogdet", inputs=("A",), outputs=("sign", "logabsdet"),
       A="slogdet_backward(grads[0], grads[1], A, sign)", jvp="slogdet_jvp(A_t, A, sign)")
def slogdet_op(xp, a):
    return tuple(xp.linalg.slogdet(a))


@defop("linalg_solve_ex", inputs=("A", "B"), params=("left", "vector"), outputs=("result", "info"),
       differentiable_outputs=(0,),
       A="solve_grad_a(grad, A, result, left, vector)", B="solve_grad_b(grad, A, left)",
       jvp="solve_jvp(A_t, B_t, A, result, left, vector)")
def solve_ex_op(xp, a, b, left, vector):
    if vector:
        b = b[..., None]
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = A.matrix_transpose(xp, a), A.matrix_transpose(xp, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])

    def solve_all(m: np.ndarray) -> np.ndarray:
        return xp.linalg.solve(xp.broadcast_to(m, batch + m.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))

    x, info = batched_or_singular(xp, a, solve_all)  # info belongs to A's own batch, as in torch
    if not left:
        x = A.matrix_transpose(xp, x)
    return (x[..., 0] if vector else x), info


@defop("linalg_solve_triangular", inputs=("self", "B"), params=("upper", "left", "unitriangular"),
       self="solve_triangular_grad_a(grad, self, result, upper, left, unitriangular)",
       B="solve_triangular(self.mH, grad, upper=not upper, left=left, unitriangular=unitriangular)",
       jvp="solve_triangular_jvp(self_t, B_t, self, result, upper, left, unitriangular)")
def solve_triangular_op(xp, a, b, upper, left, unitriangular):
    return triangular_solve_kernel(xp, a, b, upper, left, unitriangular)


@defop("triangular_solve", inputs=("self", "A"), params=("upper", "transpose", "unitriangular"),
       outputs=("solution", "cloned_coefficient"),
       self="triangular_solve_grad_b(grads[0], A, upper, transpose, unitriangular)",
       A="triangular_solve_grad_a(grads, A, solution, upper, transpose, unitriangular)",
       jvp="triangular_solve_jvp(self_t, A_t, A, solution, upper, transpose, unitriangular)")
def triangular_solve_op(xp, b, a, upper, transpose, unitriangular):
    coefficient = A.matrix_transpose(xp, a) if transpose else a
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    x = triangular_solve_kernel(xp, coefficient, b, upper != transpose, True, unitriangular)
    return A.copy(xp, xp.broadcast_to(x, batch + x.shape[-2:])), A.copy(xp, xp.broadcast_to(a, batch + a.shape[-2:]))


@defop("cholesky_solve", inputs=("self", "input2"), params=("upper",),
       self="cholesky_solve(grad, input2, upper)", input2="cholesky_solve_grad_factor(grad, input2, result, upper)",
       jvp="cholesky_solve_jvp(self_t, input2_t, input2, result, upper)")
def cholesky_solve_op(xp, b, factor, upper):
    lower = xp.conj(A.matrix_transpose(xp, factor)) if upper else factor
    y = triangular_solve_kernel(xp, lower, b, False, True, False)
    return triangular_solve_kernel(xp, xp.conj(A.matrix_transpose(xp, lower)), y, True, True, False)


@defop("linalg_lu_solve", inputs=("LU", "B"), params=("pivots", "left", "adjoint"),
       LU="lu_solve_grad_factor(grad, LU, pivots, result, left, adjoint)",
       B="lu_solve_op(LU, grad, pivots, left, not adjoint)",
       jvp="lu_solve_jvp(LU_t, B_t, LU, pivots, result, left, adjoint)")
def lu_solve_op(xp, lu, b, pivots, left, adjoint):
    return lu_solve_kernel(xp, lu, b, pivots, left, adjoint)


# ============================================================================================
# Rows: decompositions, pseudo-inverse, least squares, matrix exponential
# ============================================================================================


@defop("linalg_cholesky_ex", params=("upper",), outputs=("L", "info"), differentiable_outputs=(0,),
       self="cholesky_backward(grad, L, upper)", jvp="cholesky_jvp(self_t, L, upper)")
def cholesky_ex_op(xp, a, upper):
    factor, info = cholesky_kernel(xp, a)
    return (xp.conj(A.matrix_transpose(xp, factor)) if upper else factor), info


@defop("cholesky", params=("upper",), self="cholesky_backward(grad, result, upper)",
       jvp="cholesky_jvp(self_t, result, upper)")
def legacy_cholesky_op(xp, a, upper):
    factor, info = cholesky_ex_op.forward(xp, a, upper)
    _raise_info("cholesky", info, _not_positive_definite)
    return factor


@defop("geqrf", outputs=2, self="not_implemented_error('geqrf')")
def geqrf_op(xp, a):
    """LAPACK's geqrf: R on and above the diagonal, the Householder reflectors below it, and their scales."""
    m, n = a.shape[-2:]
    if min(m, n) == 0:
        return A.copy(xp, a), xp.zeros((*a.shape[:-2], 0), dtype=a.dtype, device=a.device)
    if xp is not np:
        return _householder_qr(xp, a)
    stacked = a.reshape(-1, m, n)
    raw = [np.linalg.qr(matrix, mode="raw") for matrix in stacked]  # (reflectors and R transposed, tau)
    factors = np.stack([np.swapaxes(h, -1, -2) for h, _ in raw]).reshape(a.shape)
    return factors, np.stack([tau for _, tau in raw]).reshape(*a.shape[:-2], min(m, n))


def _householder_qr(xp: Any, a: Any) -> tuple:
    """geqrf's layout from the standard's functions (it has no raw QR): LAPACK's unblocked geqr2, one reflector
    per column, chosen as larfg chooses it (beta = -sign(re alpha) |x|, tau = (beta - alpha) / beta, no reflection
    where the column below the diagonal is zero and alpha is real), vectorised over the batch."""
    m, n = a.shape[-2:]
    out = A.copy(xp, a)
    scales = []
    for j in range(min(m, n)):
        alpha, below = out[..., j, j], out[..., j + 1:, j]
        rest = xp.linalg.vector_norm(below, axis=-1)
        complex_alpha = D.kind(a) == "c"
        still = (rest == 0) & ((xp.imag(alpha) == 0) if complex_alpha else True)
        real_alpha = xp.real(alpha) if complex_alpha else alpha
        beta = -xp.copysign(xp.sqrt(xp.abs(alpha) ** 2 + rest ** 2), real_alpha)
        beta = xp.where(still, real_alpha, beta)
        safe = xp.where(still, xp.ones_like(beta), beta)
        tau = xp.where(still, xp.zeros_like(alpha), (A.astype(xp, beta, a.dtype) - alpha) / A.astype(xp, safe, a.dtype))
        shift = alpha - A.astype(xp, beta, a.dtype)
        v = below / xp.where(still, xp.ones_like(shift), shift)[..., None]
        out[..., j + 1:, j] = v
        out[..., j, j] = A.astype(xp, beta, a.dtype)
        if j + 1 < n:  # the trailing columns: A -= conj(tau) v (v^H A), v with its leading 1
            full = xp.concat([xp.ones_like(alpha)[..., None], v], axis=-1)[..., :, None]
            trailing = out[..., j:, j + 1:]
            projected = xp.sum(xp.conj(full) * trailing, axis=-2, keepdims=True)
            out[..., j:, j + 1:] = trailing - xp.conj(tau)[..., None, None] * full * projected
        scales.append(tau)
    return out, xp.stack(scales, axis=-1)


@defop("linalg_lu_factor_ex", inputs=("A",), outputs=("LU", "pivots", "info"), differentiable_outputs=(0,),
       A="lu_factor_ex_backward(grad, LU, pivots)", jvp="lu_factor_ex_jvp(A_t, LU, pivots)")
def lu_factor_ex_op(xp, a):
    return lu_kernel(xp, a)


@defop("linalg_lu", inputs=("A",), outputs=("P", "L", "U"), differentiable_outputs=(1, 2),
       A="lu_backward(grads[1], grads[2], P, L, U)", jvp="lu_jvp(A_t, P, L, U)")
def lu_op(xp, a):
    lu, pivots, _ = lu_kernel(xp, a)
    return lu_unpack_kernel(xp, lu, pivots, True, True)


@defop("lu_unpack", inputs=("LU_data",), params=("LU_pivots", "unpack_data", "unpack_pivots"), outputs=3,
       differentiable_outputs=(1, 2), LU_data="lu_unpack_backward(grads[1], grads[2], LU_data_shape)",
       jvp="lu_unpack_jvp(LU_data_t) if unpack_data else (None, None)")
def lu_unpack_op(xp, lu, pivots, unpack_data, unpack_pivots):
    return lu_unpack_kernel(xp, lu, pivots, unpack_data, unpack_pivots)


@defop("linalg_qr", params=("mode",), outputs=("Q", "R"),
       self="qr_backward(grads[0], grads[1], Q, R, mode)", jvp="qr_jvp(self_t, Q, R, mode)")
def qr_op(xp, a, mode):
    if mode == "r":
        return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r")
    q, r = xp.linalg.qr(a, mode=mode)
    return q, r


@defop("linalg_svd", params=("full_matrices",), outputs=("U", "S", "Vh"),
       self="svd_backward(grads, (U, S, Vh), full_matrices)", jvp="svd_jvp(self_t, (U, S, Vh), full_matrices)")
def svd_op(xp, a, full_matrices):
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


@defop("linalg_eigh", params=("UPLO",), outputs=("eigenvalues", "eigenvectors"),
       self="eigh_backward(grads[0], grads[1], eigenvalues, eigenvectors)",
       jvp="eigh_jvp(self_t, eigenvalues, eigenvectors)")
def eigh_op(xp, a, uplo):
    if not hasattr(a, "strides"):  # the standard's eigh reads the lower triangle: the upper one is conj(a^T)'s
        return xp.linalg.eigh(a if uplo == "L" else xp.conj(A.matrix_transpose(xp, a)))
    w, v = xp.linalg.eigh(a, UPLO=uplo)
    return w, v


@defop("linalg_eig", outputs=("eigenvalues", "eigenvectors"),
       self="eig_backward(grads[0], grads[1], eigenvalues, eigenvectors, self_dtype)",
       jvp="eig_jvp(self_t, eigenvalues, eigenvectors)")
def eig_op(xp, a):
    # NumPy's eig, or the standard's (its linalg.eig is new in the 2025.12 revision): the eigenvalues come in the
    # library's order, LAPACK geev's on NumPy as on torch's CPU (CuPy's documents no order)
    values, vectors = xp.linalg.eig(a)  # real when every eigenvalue is: torch's results are always complex
    complex_dtype = xp.result_type(a.dtype, xp.complex64)
    return A.astype(xp, values, complex_dtype, copy=False), A.astype(xp, vectors, complex_dtype, copy=False)


@defop("linalg_pinv", params=("atol", "rtol", "hermitian"),
       self="pinv_backward(grad, result, self)", jvp="pinv_jvp(self, result, self_t)")
def pinv_op(xp, a, atol, rtol, hermitian):
    if hermitian:
        w, v = xp.linalg.eigh(a)
        scale = xp.abs(w)
        left, right = v, xp.conj(A.matrix_transpose(xp, v))
    else:
        left, w, right = xp.linalg.svd(a, full_matrices=False)
        scale = w
        left, right = xp.conj(A.matrix_transpose(xp, right)), xp.conj(A.matrix_transpose(xp, left))
    top = A.max_from(xp, scale, -1, True, 0.0)
    keep = scale > xp.maximum(atol, rtol * top)
    inverse = A.astype(xp, xp.where(keep, 1 / xp.where(keep, w, 1), 0), a.dtype)
    return xp.matmul(left * inverse[..., None, :], right)


@defop("linalg_lstsq", inputs=("self", "b"), params=("rcond", "driver", "vector"),
       outputs=("solution", "residuals", "rank", "singular_values"), differentiable_outputs=(0, 1),
       self="lstsq_grad_a(grads[0], grads[1], self, b, solution, vector)",
       b="lstsq_grad_b(grads[0], grads[1], self, b, solution, vector)",
       jvp="lstsq_jvp(self_t, b_t, self, b, solution, residuals, vector)")
def lstsq_op(xp, a, b, rcond, driver, vector):
    return lstsq_kernel(xp, a, b[..., None] if vector else b, rcond, driver, vector)


@defop("linalg_matrix_exp", self="matrix_exp_differential(self, grad, adjoint=True)",
       jvp="matrix_exp_differential(self, self_t, adjoint=False)")
def matrix_exp_op(xp, a):
    if a.dtype == np.float16:  # NumPy's solve has no float16: in float32, rounded once (as bfloat16's opmath)
        return A.astype(xp, expm_kernel(xp, A.astype(xp, a, np.float32)), np.float16)
    return expm_kernel(xp, a)


# torch.linalg.matrix_power(A, 0) copies identities into a clone of A: the result depends on A
# only through that copy, whose node (torch::autograd::CopyBackwards) sends it a zero gradient.
@defop("matrix_power_zero", node="CopyBackwards", self="grad * 0", jvp="self_t * 0")
def matrix_power_zero(xp, a):
    return A.copy(xp, xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype, device=a.device), a.shape))


# ============================================================================================
# Formula helpers: products
# ============================================================================================


def scale_by(grad: Tensor, factor: complex) -> Tensor:
    """grad * conj(factor), skipping the multiplication when factor is 1 (torch's maybe_multiply)."""
    return grad if factor == 1 else grad * factor.conjugate()


# Note [unrecorded addmm backward]
# A linear layer's node, AddmmBackward0, gives three gradients: the bias's (grad, summed over the rows by
# the engine's sum_to), grad @ mat2^T and mat1^T @ grad. Written as differentiable ops they are about eight
# dispatched ops (two conj, three t, two mm, the sum and its view), a cost that is all of the node's on a
# small layer. When nothing records them (unrecorded_arrays: no create_graph, no forward-mode level, vmap
# or saved-tensor hook) and the scale is 1, each of the row's three formulas computes its gradient in NumPy:
# the same products on the same operands and layouts as the ops' (so the same BLAS calls and bits), the bias's
# sum over the same axis, and the weight's gradient still handed on as the transpose of its product that
# mat2_grad makes (NumPy's, not the view op: Note [unrecorded transposes] in shape.py), so that AccumulateGrad
# keeps it as before. Each formula reads only the operand its product needs, so the node keeps mat2 only when
# mat1 wants a gradient and mat1 only when mat2 does, as torch's: an input that needs none (a first layer's
# batch) leaves the weight unsaved, and an optimizer step between two backwards through the layer is no error.


def addmm_self_grad(grad: Tensor, self_shape: tuple, beta: complex) -> Tensor:
    """addmm's gradient of self (a linear layer's bias): beta * grad, summed over the rows here when unrecorded
    (Note [unrecorded addmm backward]); any other shape goes to the engine's sum_to."""
    arrays = unrecorded_arrays(grad) if beta == 1 else None
    if arrays is None:
        return scale_by(grad, beta)
    g = arrays[0]
    return _wrap(g.sum(axis=0)) if g.ndim == 2 and tuple(self_shape) == g.shape[1:] else grad


def addmm_mat1_grad(grad: Tensor, mat2: Tensor, alpha: complex) -> Tensor:
    """addmm's gradient of mat1: alpha * grad @ mat2^H (Note [unrecorded addmm backward])."""
    arrays = unrecorded_arrays(grad, mat2) if alpha == 1 else None
    if arrays is None:
        return scale_by(grad.mm(mat2.conj().t()), alpha)
    g, b = arrays
    return _wrap(A.matmul(np, g, b.T))


def addmm_mat2_grad(grad: Tensor, mat1: Tensor, alpha: complex, mat2_transposed: bool) -> Tensor:
    """addmm's gradient of mat2: alpha * mat1^H @ grad, in mat2's layout (Note [unrecorded addmm backward])."""
    arrays = unrecorded_arrays(grad, mat1) if alpha == 1 else None
    if arrays is None:
        return scale_by(mat2_grad(grad, mat1, mat2_transposed), alpha)
    g, a = arrays
    return _wrap(np.matmul(g.T, a).T if mat2_transposed else np.matmul(a.T, g))


def mat2_grad(grad: Tensor, mat1: Tensor, mat2_transposed: bool) -> Tensor:
    """d(mat1 @ mat2)/d mat2 computed in mat2's own layout (torch's mm_mat2_backward): for a transposed
    matrix (the weight of x @ w.t()) the gradient's transpose is contiguous, so `.grad` keeps it as is."""
    mat1 = mat1.conj()
    if mat2_transposed:
        return grad.t().mm(mat1).t()
    return mat1.t().mm(grad)


def is_transposed(matrix: Tensor) -> bool:
    """A column-major 2-d tensor (strides (1, rows) in elements), as torch tests it."""
    data = matrix._data
    return hasattr(data, "strides") and data.strides == (data.itemsize, data.itemsize * data.shape[0])


def matmul_grad_left(grad: Tensor, other: Tensor, self_ndim: int) -> Tensor:
    """d(a @ b)/da for any matmul shapes; extra batch dims are summed away by the engine."""
    other = other.conj()
    if other.ndim == 1:
        return grad.unsqueeze(-1) * other
    if self_ndim == 1:
        return matmul(grad.unsqueeze(-2), other.mT).squeeze(-2)
    return matmul(grad, other.mT)


def matmul_grad_right(grad: Tensor, self: Tensor, other_ndim: int) -> Tensor:
    """d(a @ b)/db for any matmul shapes."""
    self = self.conj()
    if self.ndim == 1:
        return self.unsqueeze(-1) * grad.unsqueeze(-2) if other_ndim > 1 else grad.unsqueeze(-1) * self
    if other_ndim == 1:
        return matmul(self.mT, grad.unsqueeze(-1)).squeeze(-1)
    if other_ndim == 2 and self.ndim > 2:  # the batch folded into rows: one product, not one per batch then a sum
        rows = math.prod(self.shape[:-1])  # not -1: an empty inner dim leaves it undetermined
        return self.reshape(rows, self.shape[-1]).mT.mm(grad.reshape(rows, grad.shape[-1]))
    return matmul(self.mT, grad)


def trace_backward(grad: Tensor, shape: tuple) -> Tensor:
    """The gradient of trace: grad written on the diagonal of zeros, as torch's (not grad times an identity, which
    would make an inf gradient NaN off the diagonal and a negative one -0.)."""
    return diagonal_scatter(grad.new_zeros(shape), grad.expand(min(shape)))


def einsum_pair(equation: str, a: Tensor, b: Tensor | None) -> Tensor:
    """One contraction step of einsum (one or two operands, single-letter labels)."""
    return apply(einsum_op, (a, b), (equation,))


def einsum_operand_grad(grad: Tensor, equation: str, which: int, shape: tuple, other: Tensor | None) -> Tensor:
    """The gradient of one operand of an einsum step: an einsum of grad with the other operand (conjugated).

    Labels the operand repeats (a diagonal) are placed back on the diagonal of zeros;
    labels only it has were summed in the forward, so its gradient is constant along them.
    """
    inputs, out = equation.split("->")
    labels = inputs.split(",")
    mine, theirs = labels[which], (labels[1 - which] if other is not None else "")
    unique = "".join(dict.fromkeys(mine))
    wanted = "".join(c for c in unique if c in out or c in theirs)
    if other is None:
        g = einsum_pair(f"{out}->{wanted}", grad, None)
    elif which == 0:
        g = einsum_pair(f"{out},{theirs}->{wanted}", grad, other.conj())
    else:
        g = einsum_pair(f"{theirs},{out}->{wanted}", other.conj(), grad)
    size = {c: n for c, n in zip(mine, shape)}
    for i, c in enumerate(unique):  # labels summed only here: broadcast
        if c not in wanted:
            g = g.unsqueeze(i)
    g = g.expand(tuple(size[c] for c in unique))
    # each later occurrence of a repeated label: a new dim with g placed on its diagonal with the first occurrence,
    # zeros elsewhere (diag_embed, not a product with an identity, so an inf stays off the zeros)
    first: dict[str, int] = {}
    for i, c in enumerate(mine):
        if c in first:
            g = diag_embed(g.movedim(first[c], -1), 0, first[c], i)
        else:
            first[c] = i
    return g


# ============================================================================================
# Formula helpers: shared pieces
# ============================================================================================


def eye_of(n: int, m: int, like: Tensor) -> Tensor:
    """An n x m identity of like's dtype (a constant)."""
    return _wrap(namespace(like._data).eye(n, m, dtype=like._data.dtype, device=like._data.device))


def diag_of(x: Tensor) -> Tensor:
    """The main diagonal of the last two dims."""
    return diagonal(x, 0, -2, -1)


def solved_triangle(x: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The part of a matrix a triangular solve reads: its triangle, without the diagonal when unit."""
    return triu(x, int(unitriangular)) if upper else tril(x, -int(unitriangular))


def grad_defined(g: Tensor) -> bool:
    """Whether a cotangent carries anything: an output nobody used arrives as zeros, which we treat
    like torch's undefined gradient (the two are equivalent, and skipping avoids 0/0 in svd/eigh)."""
    return bool(A.reduce(namespace(g._data), "any", g._data))


def batch_mask(mask: Tensor) -> Tensor:
    """A per-matrix flag (...) as a (..., 1, 1) mask that broadcasts over matrices."""
    return mask.unsqueeze(-1).unsqueeze(-1)


def zero_padded(x: Tensor, size: int, dim: int) -> Tensor:
    """x with zeros appended along dim (-1 or -2) up to `size` (a rectangular factor's missing block)."""
    missing = size - x.shape[dim]
    if not missing:
        return x
    shape = list(x.shape)
    shape[dim] = missing
    return cat([x, x.new_zeros(*shape)], dim)


# ============================================================================================
# Formula helpers: determinants and solvers
# ============================================================================================


def det_backward(grad: Tensor, det: Tensor, A: Tensor) -> Tensor:
    """grad * adj(A)^H: grad conj(det) A^-H on invertible matrices and, where |det| < 100 eps, the
    adjugate through the SVD (differentiable again, as torch's create_graph path).

    det and A^-1 come from the same LU factorisation (NumPy's det and inv both factor A), so their
    product stays accurate for ill-conditioned matrices, as torch's lu_solve does. Unlike torch's
    first-order backward we do not return 0 for a determinant that rounds to exactly 0: the
    gradient there is the adjugate too.
    """
    if A.numel() == 0:
        return A * 0
    n = A.shape[-1]
    scaled = (grad * det.conj()).unsqueeze(-1).unsqueeze(-1)
    singular = abs(det) < 100 * D.finfo(det.dtype).eps
    if not reduce_array(namespace(singular._data), "any", singular._data):
        return scaled * inv(A).mH
    through_svd = det_backward_singular(grad, A)
    if reduce_array(namespace(singular._data), "all", singular._data):
        return through_svd
    mask = batch_mask(singular)
    return where(mask, through_svd, scaled * inv(where(mask, eye_of(n, n, A), A)).mH)


def det_backward_singular(grad: Tensor, A: Tensor) -> Tensor:
    """With A = U S Vh, det A = det U det Vh prod S, so the gradient is U diag(alpha prod_{j!=i} S_j) Vh."""
    U, S, Vh = linalg_svd(A)
    alpha = (det(U) * det(Vh)).conj() * grad
    return matmul(U * (products_of_others(S) * alpha.unsqueeze(-1)).unsqueeze(-2), Vh)


def products_of_others(s: Tensor) -> Tensor:
    """out[..., i] = prod_{j != i} s[..., j] by prefix and suffix products: no division, so it stays
    accurate, and differentiable again, when some s are zero or tiny (singular matrices)."""
    cols = s.unbind(-1)
    ones = ones_like(cols[0])
    before, after = [ones], [ones]
    for c in cols[:-1]:
        before.append(before[-1] * c)
    for c in reversed(cols[1:]):
        after.append(after[-1] * c)
    return stack([b * a for b, a in zip(before, reversed(after))], -1)


def det_jvp(A_t: Tensor, det: Tensor, A: Tensor) -> Tensor:
    """d det = tr(adj(A) dA), which is det * tr(A^-1 dA) on invertible matrices."""
    adjugate_h = det_backward(ones_like(det), det, A)
    return (adjugate_h.conj() * A_t).sum((-2, -1))


def slogdet_backward(grad_sign: Tensor, grad_logabsdet: Tensor, A: Tensor, sign: Tensor) -> Tensor:
    """(g_logabsdet - i Im(conj(g_sign) sign)) A^-H; the sign of a real matrix has no gradient."""
    g = grad_logabsdet
    if A.is_complex():
        g = g - 1j * (grad_sign.conj() * sign).imag
    n = A.shape[-1]
    rhs = diag_embed(g.unsqueeze(-1).expand(g.shape + (n,)))
    try:
        return solve(A.mH, rhs)
    except LinAlgError:  # exactly singular: torch solves with the forward's LU and its zero pivot (infinities)
        LU, pivots, _ = lu_factor_ex(A)
        return linalg_lu_solve(LU, pivots, rhs, adjoint=True)


def slogdet_jvp(A_t: Tensor, A: Tensor, sign: Tensor) -> tuple:
    """(sign * i Im tr(A^-1 dA), Re tr(A^-1 dA)); the sign of a real matrix is locally constant."""
    trace_term = diag_of(solve(A, A_t)).sum(-1)
    if A.is_complex():
        return sign * 1j * trace_term.imag, trace_term.real
    return sign * 0, trace_term


def as_matrix(x: Tensor, vector: bool) -> Tensor:
    return x.unsqueeze(-1) if vector else x


def as_vector(x: Tensor, vector: bool) -> Tensor:
    return x.squeeze(-1) if vector else x


def solve_grad_b(grad: Tensor, A: Tensor, left: bool) -> Tensor:
    """gB = A^-H gX (left) or gX A^-H (right)."""
    return solve(A.mH, grad, left=left)


def solve_grad_a(grad: Tensor, A: Tensor, X: Tensor, left: bool, vector: bool) -> Tensor:
    """gA = -gB X^H (left) or -X^H gB (right)."""
    gB = as_matrix(solve(A.mH, grad, left=left), vector)
    X = as_matrix(X, vector)
    return -matmul(gB, X.mH) if left else -matmul(X.mH, gB)


def solve_jvp(A_t: Tensor, B_t: Tensor, A: Tensor, X: Tensor, left: bool, vector: bool) -> Tensor:
    """dX = A^-1 (dB - dA X) (left) or (dB - X dA) A^-1 (right)."""
    X = as_matrix(X, vector)
    rhs = as_matrix(B_t, vector) - (matmul(A_t, X) if left else matmul(X, A_t))
    return as_vector(solve(A, rhs, left=left), vector)


def solve_triangular_grad_a(grad: Tensor, A: Tensor, X: Tensor, upper: bool, left: bool,
                            unitriangular: bool) -> Tensor:
    """-gB X^H (left) or -X^H gB, restricted to the triangle the solve reads."""
    gB = solve_triangular(A.mH, grad, upper=not upper, left=left, unitriangular=unitriangular)
    gA = -matmul(gB, X.mH) if left else -matmul(X.mH, gB)
    return solved_triangle(gA, upper, unitriangular)


def solve_triangular_jvp(A_t: Tensor, B_t: Tensor, A: Tensor, X: Tensor, upper: bool, left: bool,
                         unitriangular: bool) -> Tensor:
    """A^-1 (dB - tri(dA) X) (left) or (dB - X tri(dA)) A^-1."""
    A_t = solved_triangle(A_t, upper, unitriangular)
    rhs = B_t - (matmul(A_t, X) if left else matmul(X, A_t))
    return solve_triangular(A, rhs, upper=upper, left=left, unitriangular=unitriangular)


def triangular_solve_grad_b(grad_x: Tensor, A: Tensor, upper: bool, transpose: bool, unitriangular: bool) -> Tensor:
    """gb = op(A)^-H gx."""
    return apply(triangular_solve_op, (grad_x, A.conj()), (upper, not transpose, unitriangular))[0]


def triangular_solve_grad_a(grads: tuple, A: Tensor, X: Tensor, upper: bool, transpose: bool,
                            unitriangular: bool) -> Tensor:
    """The solve's gradient in A's triangle plus the gradient of the returned copy of A."""
    grad_x, grad_copy = grads
    gb = triangular_solve_grad_b(grad_x, A, upper, transpose, unitriangular)
    gA = -matmul(X.conj(), gb.mT) if transpose else -matmul(gb, X.mH)
    return solved_triangle(gA, upper, unitriangular) + grad_copy


def triangular_solve_jvp(b_t: Tensor, A_t: Tensor, A: Tensor, X: Tensor, upper: bool, transpose: bool,
                         unitriangular: bool) -> tuple:
    """(op(A)^-1 (db - op(tri(dA)) X), dA): the solve reads only A's triangle, the copy all of A."""
    A_tri = solved_triangle(A_t, upper, unitriangular)
    rhs = b_t - matmul(A_tri.mT if transpose else A_tri, X)
    return apply(triangular_solve_op, (rhs, A), (upper, transpose, unitriangular))[0], A_t


def cholesky_solve_grad_factor(grad: Tensor, factor: Tensor, X: Tensor, upper: bool) -> Tensor:
    """-(S + S^H) U (upper) or -L (S + S^H) (lower), S = (A^-1 gX) X^H."""
    common = matmul(cholesky_solve(grad, factor, upper), X.mH)
    common = common + common.mH
    return -matmul(factor, common) if upper else -matmul(common, factor)


def cholesky_solve_jvp(B_t: Tensor, factor_t: Tensor, factor: Tensor, X: Tensor, upper: bool) -> Tensor:
    """A^-1 (dB - dA X) with dA = dU^H U + U^H dU (upper) or dL L^H + L dL^H."""
    dK = matmul(factor_t.mH, factor) if upper else matmul(factor_t, factor.mH)
    return cholesky_solve(B_t - matmul(dK + dK.mH, X), factor, upper)


def lu_solve_grad_factor(gX: Tensor, LU: Tensor, pivots: np.ndarray, X: Tensor, left: bool, adjoint: bool) -> Tensor:
    """torch's linalg_lu_solve_LU: the gradient of the packed factors, tril(gL, -1) + triu(gU). With
    op(A) X = B read as A Y = C (Y = X or X^H), gR = -U^-H gY Y^H gives gU = triu(gR) and
    gL = tril(L^-H gR U^H, -1); for op(A) = A^H the roles of L and U swap around P."""
    P, L, U = lu_unpack_op(LU, pivots, True, left == adjoint)
    if left != adjoint:
        gR = solve_triangular(U.mH, -(matmul(gX, X.mH) if left else matmul(gX.mH, X)), upper=False)
        gL = solve_triangular(L.mH, matmul(gR, U.mH), upper=True, unitriangular=True)
        return tril(gL, -1) + triu(gR)
    gR = -matmul(matmul(P.mT, X if left else X.mH), matmul(gX.mH if left else gX, P))
    gR = solve_triangular(L.mH, gR, upper=True, left=False, unitriangular=True)
    gU = solve_triangular(U.mH, matmul(L.mH, gR), upper=False, left=False)
    return tril(gR, -1) + triu(gU)


def lu_solve_jvp(LU_t: Tensor, B_t: Tensor, LU: Tensor, pivots: np.ndarray, X: Tensor, left: bool,
                 adjoint: bool) -> Tensor:
    """torch's linalg_lu_solve_jvp: lu_solve(dB) plus the term of dL = tril(dLU, -1), dU = triu(dLU)."""
    S = lu_solve_op(LU, B_t, pivots, left, adjoint)
    if left != adjoint:  # dX = op(-U^-1 (dU + L^-1 dL U)) op(X)
        U = triu(LU)
        R = solve_triangular(LU, tril(LU_t, -1), upper=False, unitriangular=True)
        R = -solve_triangular(U, triu(LU_t) + matmul(R, U), upper=True)
        return (matmul(R, X) if left else matmul(X, R.mH)) + S
    P, L, U = lu_unpack_op(LU, pivots, True, True)  # dX = op(-op(X)^H P (L dU U^-1 + dL) L^-1 P^T)
    R = solve_triangular(U, matmul(L, triu(LU_t)), upper=True, left=False) + tril(LU_t, -1)
    R = -matmul(X.mH if left else X, matmul(P, R))
    R = matmul(solve_triangular(L, R, upper=False, left=False, unitriangular=True), P.mT)
    return (R.mH if left else R) + S


# ============================================================================================
# Formula helpers: decompositions
# ============================================================================================


def cholesky_backward(grad: Tensor, factor: Tensor, upper: bool) -> Tensor:
    """gA = L^-H phi(L^H gL) L^-1 with phi = tril with halved diagonal, made Hermitian (Murray 2016)."""
    L, gL = (factor.mH, grad.mH) if upper else (factor, grad)
    phi = tril(matmul(L.mH, gL))
    phi = 0.5 * (phi + tril(phi, -1).mH)
    gA = solve_triangular(L.mH, phi, upper=True, left=True)
    return solve_triangular(L, gA, upper=False, left=False)


def cholesky_jvp(A_t: Tensor, factor: Tensor, upper: bool) -> Tensor:
    """dL = L phi(L^-1 dA L^-H) with phi = tril with halved diagonal."""
    L = factor.mH if upper else factor
    inner = solve_triangular(L, solve_triangular(L, A_t, upper=False, left=True).mH, upper=False, left=True).mH
    phi = tril(inner) - 0.5 * diag_embed(diag_of(inner))
    dL = matmul(L, phi)
    return dL.mH if upper else dL


def lu_backward(gL: Tensor, gU: Tensor, P: Tensor, L: Tensor, U: Tensor) -> Tensor:
    """torch's linalg_lu_backward. For m <= n, A = P L (U1 | U2):
    gA = P L^-H [(tril(L^H gL - triu(gU) U^H, -1) U1^-H | 0) + triu(gU)] (the square case included);
    for m > n, A = P (L1; L2) U: gA = P [(L1^-H triu(gU U^H - L^H tril(gL, -1)); 0) + tril(gL, -1)] U^-H."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m <= n:
        inner = tril(matmul(L.mH, gL) - matmul(triu(gU), U.mH), -1)
        gA = solve_triangular(U.narrow(-1, 0, k).mH, inner, upper=False, left=False)
        gA = solve_triangular(L.mH, zero_padded(gA, n, -1) + triu(gU), upper=True, unitriangular=True)
    else:
        inner = triu(matmul(gU, U.mH) - matmul(L.mH, tril(gL, -1)))
        gA = solve_triangular(L.narrow(-2, 0, k).mH, inner, upper=True, unitriangular=True)
        gA = solve_triangular(U.mH, zero_padded(gA, m, -2) + tril(gL, -1), upper=False, left=False)
    return matmul(P, gA)


def lu_jvp(A_t: Tensor, P: Tensor, L: Tensor, U: Tensor) -> tuple:
    """torch's linalg_lu_jvp (dL, dU): with dK = L1^-1 P^T dA1 U1^-1 on the leading k x k block,
    dL1 = L1 tril(dK, -1) and dU1 = triu(dK) U1; the extra columns of a wide U or rows of a tall L follow
    from P^T dA2 = dL U2 + L dU2 (wide) or dL2 U + L2 dU (tall)."""
    m, n = A_t.shape[-2], A_t.shape[-1]
    k = min(m, n)
    PdA = matmul(P.mT, A_t)
    L1, U1 = L.narrow(-2, 0, k), U.narrow(-1, 0, k)
    dK = solve_triangular(L1, PdA.narrow(-2, 0, k).narrow(-1, 0, k), upper=False, unitriangular=True)
    dK = solve_triangular(U1, dK, upper=True, left=False)
    dL, dU = matmul(L1, tril(dK, -1)), matmul(triu(dK), U1)
    if m < n:
        dU2 = solve_triangular(L1, PdA.narrow(-1, k, n - k), upper=False, unitriangular=True)
        dU = cat([dU, dU2 - matmul(tril(dK, -1), U.narrow(-1, k, n - k))], -1)
    elif m > n:
        dL2 = solve_triangular(U1, PdA.narrow(-2, k, m - k), upper=True, left=False)
        dL = cat([dL, dL2 - matmul(L.narrow(-2, k, m - k), triu(dK))], -2)
    return dL, dU


def lu_factor_ex_backward(grad: Tensor, LU: Tensor, pivots: Tensor) -> Tensor:
    """The packed factors' gradient is gL = grad's first k columns and gU = its first k rows."""
    k = min(LU.shape[-2:])
    P, L, U = lu_unpack_op(LU, pivots._data, True, True)
    return lu_backward(grad.narrow(-1, 0, k), grad.narrow(-2, 0, k), P, L, U)


def lu_factor_ex_jvp(A_t: Tensor, LU: Tensor, pivots: Tensor) -> Tensor:
    """dL + dU packed as LU is (dL is zero on and above the diagonal)."""
    m, n = LU.shape[-2:]
    dL, dU = lu_jvp(A_t, *lu_unpack_op(LU, pivots._data, True, True))
    return dL + zero_padded(dU, m, -2) if m >= n else zero_padded(dL, n, -1) + dU


def lu_unpack_backward(gL: Tensor, gU: Tensor, shape: tuple) -> Tensor:
    """torch's lu_unpack_backward: L reads the strict lower part of LU's first k columns, U the upper part
    of its first k rows."""
    m, n = shape[-2:]
    return zero_padded(tril(gL, -1), n, -1) + zero_padded(triu(gU), m, -2)


def lu_unpack_jvp(LU_t: Tensor) -> tuple:
    k = min(LU_t.shape[-2:])
    return tril(LU_t.narrow(-1, 0, k), -1), triu(LU_t.narrow(-2, 0, k))


def qr_check_differentiable(mode: str, m: int, n: int) -> None:
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")


def qr_backward(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor, mode: str) -> Tensor:
    """torch's linalg_qr_backward: gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^-H for m >= n,
    and the trilImInv form on the leading square block for m < n."""
    m, n = Q.shape[-2], R.shape[-1]
    qr_check_differentiable(mode, m, n)
    M = matmul(gR, R.mH) - matmul(Q.mH, gQ)
    if m >= n:
        upper = triu(M)
        sym = upper + upper.mH
        sym = sym - 0.5 * diag_embed(diag_of(sym).real if sym.is_complex() else diag_of(sym))
        gA = matmul(Q, sym) + gQ
        return solve_triangular(R.mH, gA, upper=False, left=False)
    skew = tril(-M - (-M).mH)
    if skew.is_complex():
        skew = skew - 0.5j * diag_embed(diag_of(skew).imag)
    gA = solve_triangular(R.narrow(-1, 0, m).mH, matmul(Q, skew), upper=False, left=False)
    gA = cat([gA, gA.new_zeros(*gA.shape[:-1], n - m)], -1)
    return gA + matmul(Q, gR)


def qr_jvp(A_t: Tensor, Q: Tensor, R: Tensor, mode: str) -> tuple:
    """torch's linalg_qr_jvp (dQ, dR)."""
    m, n = A_t.shape[-2], A_t.shape[-1]
    qr_check_differentiable(mode, m, n)
    if m >= n:
        dA_Rinv = solve_triangular(R, A_t, upper=True, left=False)
        sym = matmul(Q.mH, dA_Rinv)
        sym = sym + sym.mH
        dR = triu(sym) - 0.5 * diag_embed(diag_of(sym))
        dQ = dA_Rinv - matmul(Q, dR)
        return dQ, matmul(dR, R)
    QhdA = matmul(Q.mH, A_t)
    X = solve_triangular(R.narrow(-1, 0, m), QhdA.narrow(-1, 0, m), upper=True, left=False)
    if X.is_complex():
        lower = tril(X)
        lower = lower - diag_embed(diag_of(lower).real)
        dQ = lower - lower.mH
        dQ = dQ - 0.5 * diag_embed(diag_of(dQ))
    else:
        lower = tril(X, -1)
        dQ = lower - lower.mT
    dR = QhdA - matmul(dQ, R)
    return matmul(Q, dQ), dR


def svd_backward(grads: tuple, results: tuple, full_matrices: bool) -> Tensor:
    """torch's svd_backward: gA = U [(skew(U^H gU) / E) S + S (skew(V^H gV) / E) + diag(gS)] V^H,
    plus the terms for rectangular A; only the first k = min(m, n) singular vectors count."""
    gU, gS, gVh = grads
    U, S, Vh = results
    k = S.shape[-1]
    if full_matrices:
        gU, U = gU.narrow(-1, 0, k), U.narrow(-1, 0, k)
        gVh, Vh = gVh.narrow(-2, 0, k), Vh.narrow(-2, 0, k)
    m, n = U.shape[-2], Vh.shape[-1]
    has_U, has_V = grad_defined(gU), grad_defined(gVh)
    if not has_U and not has_V:
        return matmul(U, gS.unsqueeze(-1) * Vh) if m >= n else matmul(U * gS.unsqueeze(-2), Vh)
    skew_U = skew(matmul(U.mH, gU)) if has_U else None
    skew_V = skew(matmul(Vh, gVh.mH)) if has_V else None
    if U.is_complex():
        svd_check_gauge(skew_U, skew_V, S)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_of(k, k, S)
    if has_U and has_V:
        inner = (skew_U * S.unsqueeze(-2) + S.unsqueeze(-1) * skew_V) / E
    elif has_U:
        inner = (skew_U / E) * S.unsqueeze(-2)
    else:
        inner = S.unsqueeze(-1) * (skew_V / E)
    inner = inner + diag_embed(gS)
    if U.is_complex() and has_U and has_V:
        inner = inner + diag_embed(diag_of(skew_U) / (2 * S))
    if m > n and has_U:
        gU_Sinv = gU / S.unsqueeze(-2)
        gA = matmul(U, inner) + gU_Sinv - matmul(U, matmul(U.mH, gU_Sinv))
        return matmul(gA, Vh)
    if m < n and has_V:
        Sinv_gVh = gVh / S.unsqueeze(-1)
        gA = matmul(inner, Vh) + Sinv_gVh - matmul(matmul(Sinv_gVh, Vh.mH), Vh)
        return matmul(U, gA)
    return matmul(U, matmul(inner, Vh)) if m >= n else matmul(matmul(U, inner), Vh)


def skew(X: Tensor) -> Tensor:
    return X - X.mH


def _imaginary_diagonal(x: Tensor | None) -> Any:
    """The imaginary parts of the main diagonal of x's last two dims, an array of x's namespace (0 for None)."""
    if x is None:
        return 0.0
    xp = namespace(x._data)
    return xp.imag(np.diagonal(x._data, 0, -2, -1) if xp is np else xp.linalg.diagonal(x._data))


def _all_close(a: Any, b: Any) -> bool:
    """NumPy's allclose(a, b, rtol=1e-2, atol=1e-2) for torch's phase checks: a and b arrays of one namespace, or one
    of them a number."""
    b_is_array = hasattr(b, "shape")
    xp = namespace(b if b_is_array else a)
    return bool(reduce_array(xp, "all", xp.abs(a - b) <= 1e-2 + 1e-2 * (xp.abs(b) if b_is_array else abs(b))))


def svd_check_gauge(skew_U: Tensor | None, skew_V: Tensor | None, S: Tensor) -> None:
    """A loss of complex singular vectors must not depend on their phases (torch's check)."""
    if not _all_close(_imaginary_diagonal(skew_U), -_imaginary_diagonal(skew_V)):
        raise RuntimeError("svd_backward: The singular vectors in the complex case are specified up to multiplication "
                           "by e^{i phi}. The specified loss function depends on this phase term, making it "
                           "ill-defined.")


def svd_jvp(A_t: Tensor, results: tuple, full_matrices: bool) -> tuple:
    """torch's linalg_svd_jvp (dU, dS, dVh), with dP = U^H dA V and E_jk = S_k^2 - S_j^2."""
    U, S, Vh = results
    m, n, k = A_t.shape[-2], A_t.shape[-1], S.shape[-1]
    if full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
    V = Vh.mH
    dP = matmul(matmul(U.mH, A_t), V)
    dS = diag_of(dP).real if dP.is_complex() else diag_of(dP)
    dX = dP - diag_embed(dS)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_of(k, k, S)
    sym_U = dX * S.unsqueeze(-2)
    dU_inner = (sym_U + sym_U.mH) / E
    sym_V = dX * (-S).unsqueeze(-1)
    dVh_inner = (sym_V + sym_V.mH) / E
    if dP.is_complex():
        imag_part = diag_embed(diag_of(dX) / (2 * S))
        dU_inner, dVh_inner = dU_inner + imag_part, dVh_inner + imag_part
    dU = matmul(U, dU_inner)
    dVh = matmul(dVh_inner, Vh)
    if m > n:
        dAVSinv = matmul(A_t, V / S.unsqueeze(-2))
        dU = dU + dAVSinv - matmul(U, matmul(U.mH, dAVSinv))
        if full_matrices:
            dU = cat([dU, dU.new_zeros(*dU.shape[:-1], m - n)], -1)
    if m < n:
        UhdASinv = matmul(U.mH / S.unsqueeze(-1), A_t)
        dVh = dVh + UhdASinv - matmul(matmul(UhdASinv, V), Vh)
        if full_matrices:
            dVh = cat([dVh, dVh.new_zeros(*dVh.shape[:-2], n - m, n)], -2)
    return dU, dS, dVh


def eigh_backward(gL: Tensor, gV: Tensor, L: Tensor, V: Tensor) -> Tensor:
    """torch's eig backward for Hermitian A: gA = V (diag(gL) + skewH(V^H gV) / E) V^H."""
    if not grad_defined(gV):
        return matmul(V * gL.unsqueeze(-2), V.mH)
    VhgV = matmul(V.mH, gV)
    _check_eigenvector_phase("linalg_eigh_backward", VhgV)
    n = L.shape[-1]
    VhgV = 0.5 * (VhgV - VhgV.mH)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye_of(n, n, L)
    inner = VhgV / E * (1 - eye_of(n, n, L)) + diag_embed(gL)
    return matmul(V, matmul(inner, V.mH))


def _check_eigenvector_phase(name: str, VhgV: Tensor) -> None:
    """torch's refusal of a loss that depends on the free phase of complex eigenvectors (V^H gV has an
    imaginary diagonal)."""
    if VhgV.is_complex() and not _all_close(_imaginary_diagonal(VhgV), 0.0):
        raise RuntimeError(f"{name}: The eigenvectors in the complex case are specified up to multiplication by "
                           "e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined.")


def eig_backward(gL: Tensor, gV: Tensor, L: Tensor, V: Tensor, A_dtype: Any) -> Tensor:
    """torch's eig backward: gA = V^-H (diag(gL) + P(V^H gV) / conj(E)) V^H, with E_ij = L_j - L_i off the
    diagonal and P removing what the unit-norm gauge of V's columns does not determine."""
    n = L.shape[-1]
    off = 1 - eye_of(n, n, L)
    inner = diag_embed(gL)
    if grad_defined(gV):
        VhgV = matmul(V.mH, gV)
        _check_eigenvector_phase("linalg_eig_backward", VhgV)
        VhgV = VhgV - matmul(V.mH, V * diag_of(VhgV).real.unsqueeze(-2))
        Lc = L.conj()
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye_of(n, n, L)
        inner = inner + VhgV / E * off
    gA = solve(V.mH, matmul(inner, V.mH))
    return gA if D.kind(A_dtype) == "c" else gA.real


def eig_jvp(A_t: Tensor, L: Tensor, V: Tensor) -> tuple:
    """(dL, dV) = (diag(dP), V (dP / E off the diagonal) minus its component along V's gauge), dP = V^-1 dA V."""
    n = L.shape[-1]
    dP = solve(V, matmul(A_t.to(V.dtype), V))
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye_of(n, n, L)
    dV = matmul(V, dP / E * (1 - eye_of(n, n, L)))
    return diag_of(dP), dV - V * diag_of(matmul(V.mH, dV)).real.unsqueeze(-2)


def eigh_jvp(A_t: Tensor, L: Tensor, V: Tensor) -> tuple:
    """(dL, dV) = (diag(V^H dA V), V ((V^H dA V) / E off the diagonal)); dA is taken Hermitian."""
    dP = matmul(matmul(V.mH, A_t), V)
    dL = diag_of(dP).real if dP.is_complex() else diag_of(dP)
    n = L.shape[-1]
    off = 1 - eye_of(n, n, L)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye_of(n, n, L)
    return dL, matmul(V, dP / E * off)


def pinv_backward(grad: Tensor, pinvA: Tensor, A: Tensor) -> Tensor:
    """torch's pinv_backward (Golub & Pereyra), arranged to multiply the smallest matrices."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = pinvA.mH, grad.mH
    if m <= n:
        K = matmul(gradh, pinvA)
        KpinvAh = matmul(K, pinvAh)
        return (-matmul(pinvA, K).mH + KpinvAh - matmul(matmul(A, pinvA), KpinvAh)
                + matmul(matmul(pinvAh, pinvA), gradh - matmul(K, A)))
    K = matmul(pinvA, gradh)
    pinvAhK = matmul(pinvAh, K)
    return (-matmul(K, pinvA).mH + matmul(matmul(gradh - matmul(A, K), pinvA), pinvAh) + pinvAhK
            - matmul(matmul(pinvAhK, pinvA), A))


def pinv_jvp(A: Tensor, pinvA: Tensor, A_t: Tensor) -> Tensor:
    """d(A+) = -A+ dA A+ + A+ A+^H dA^H (I - A A+) + (I - A+ A) dA^H A+^H A+."""
    dAh = A_t.mH
    first = -matmul(matmul(pinvA, A_t), pinvA)
    left_null = dAh - matmul(dAh, matmul(A, pinvA))
    right_null = dAh - matmul(matmul(pinvA, A), dAh)
    return (first + matmul(matmul(pinvA, pinvA.mH), left_null)
            + matmul(right_null, matmul(pinvA.mH, pinvA)))


def lstsq_grad_a(gX: Tensor, gL: Tensor, A: Tensor, B: Tensor, X: Tensor, vector: bool) -> Tensor:
    """Through the pseudo-inverse for the solution, 2 (gL r) X^H for the residuals (Danskin)."""
    B, X, gX = as_matrix(B, vector), as_matrix(X, vector), as_matrix(gX, vector)
    gA = pinv_backward(matmul(gX, B.mH), pinv(A), A)
    if gL.numel():
        gA = gA + 2 * matmul(gL.unsqueeze(-2) * (matmul(A, X) - B), X.mH)
    return gA


def lstsq_grad_b(gX: Tensor, gL: Tensor, A: Tensor, B: Tensor, X: Tensor, vector: bool) -> Tensor:
    """pinv(A)^H gX, and -2 gL r from the residuals."""
    gB = matmul(pinv(A).mH, as_matrix(gX, vector))
    if gL.numel():
        gB = gB - 2 * gL.unsqueeze(-2) * (matmul(A, as_matrix(X, vector)) - as_matrix(B, vector))
    return as_vector(gB, vector)


def lstsq_jvp(A_t: Tensor, B_t: Tensor, A: Tensor, B: Tensor, X: Tensor, residuals: Tensor, vector: bool) -> tuple:
    """(d(A+) B + A+ dB, 2 Re sum(r * conj(dA X - dB))) — residuals only where computed."""
    B, B_t, X = as_matrix(B, vector), as_matrix(B_t, vector), as_matrix(X, vector)
    pinvA = pinv(A)
    dX = as_vector(matmul(pinv_jvp(A, pinvA, A_t), B) + matmul(pinvA, B_t), vector)
    if residuals.numel() == 0:
        return dX, residuals * 0
    r = matmul(A, X) - B
    dr = matmul(A_t, X) - B_t
    return dX, 2 * (r * dr.conj()).real.sum(-2)


def matrix_exp_differential(A: Tensor, G: Tensor, adjoint: bool) -> Tensor:
    """The Fréchet derivative of exp at A along G (or its adjoint): exp([[A, G], [0, A]]) top-right block
    (Mathias 1996), with A -> A^H for the adjoint."""
    A = A.mH if adjoint else A
    n = A.shape[-1]
    top = cat([A, G], -1)
    bottom = cat([A * 0, A], -1)
    return matrix_exp(cat([top, bottom], -2)).narrow(-2, 0, n).narrow(-1, n, n)


# ============================================================================================
# NumPy kernels (forwards NumPy has no function for)
# ============================================================================================


def add_product(xp: Any, c: Any, a: Any, b: Any, beta: complex, alpha: complex, batches_summed: bool = False) -> Any:
    """beta * c + alpha * (a @ b), the product's batches summed for addbmm. float16 goes through float32 and is
    rounded once, as torch's CPU BLAS kernels keep half's sums and the added c in float (Note [float16 sums]);
    torch's addbmm adds one batch at a time (an addmm each), so its float16 rounds after each."""
    if a.dtype != np.float16:
        product = A.matmul(xp, a, b)
        return add_scaled(xp, c, A.reduce(xp, "sum", product, 0) if batches_summed else product, beta, alpha)
    if batches_summed:
        for a_batch, b_batch in zip(a, b):
            c, beta = add_product(xp, c, a_batch, b_batch, beta, alpha), 1
        return c if len(a) else add_scaled(xp, c, xp.zeros(c.shape, dtype=c.dtype), beta, alpha)
    c, a, b = (A.astype(xp, v, np.float32) for v in (c, a, b))
    return A.astype(xp, add_scaled(xp, c, xp.matmul(a, b), beta, alpha), np.float16)


def add_scaled(xp: Any, c: np.ndarray, product: np.ndarray, beta: complex, alpha: complex) -> np.ndarray:
    """beta * c + alpha * product; c is ignored (nan and inf included) when beta is 0, as in BLAS.
    `product` is the caller's fresh result, so c is added into it when it fits (a linear layer's bias)."""
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return A.astype(xp, xp.broadcast_to(out, xp.broadcast_shapes(c.shape, out.shape)), product.dtype)
    addend = c if beta == 1 else c * beta
    if addend.dtype == out.dtype and hasattr(out, "strides"):  # NumPy's in-place add
        try:
            return xp.add(out, addend, out=out)
        except ValueError:  # c broadcasts to more than the product's shape
            pass
    return A.astype(xp, out + addend, product.dtype, copy=False)


def lu_kernel(xp: Any, a: np.ndarray) -> tuple:
    """LAPACK getrf on every matrix of a batch: (LU, pivots, info). LU packs the unit lower L below the
    diagonal and U on and above it; pivots (1-based, int32) name the row swapped with row j at step j,
    chosen as LAPACK does (largest |re| + |im| in the column, the first on ties); info is the 1-based
    index of U's first zero diagonal element (0: none). Columns are eliminated one by one, each step
    vectorised over the batch."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    count = math.prod(batch)
    lu = A.reshape(xp, A.copy(xp, a), (count, m, n))
    pivots = xp.zeros((count, k), dtype=xp.int32, device=a.device)
    info = xp.zeros(count, dtype=xp.int32, device=a.device)
    for j in range(k):
        column = lu[:, j:, j]
        magnitude = xp.abs(xp.real(column)) + xp.abs(xp.imag(column)) if D.kind(a) == "c" else xp.abs(column)
        p = xp.argmax(magnitude, axis=-1) + j
        pivots[:, j] = A.astype(xp, p + 1, xp.int32)
        lu = swap_rows(xp, lu, j, p)
        head = lu[:, j, j]
        zero = head == 0
        info = xp.where((info == 0) & zero, j + 1, info)
        lu[:, j + 1:, j] /= xp.where(zero, xp.ones_like(head), head)[:, None]  # a zero pivot leaves its column
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return A.reshape(xp, lu, a.shape), A.reshape(xp, pivots, batch + (k,)), A.reshape(xp, info, batch)


def swap_rows(xp: Any, a: Any, j: int, p: Any) -> Any:
    """a with a[b, j] and a[b, p[b]] swapped for every b (in place on NumPy's arrays; the standard, which has
    no assignment through index arrays, builds the swapped array)."""
    if hasattr(a, "strides"):
        every = xp.arange(a.shape[0])
        row = a[:, j].copy()
        a[:, j] = a[every, p]
        a[every, p] = row
        return a
    trailing = (1,) * (a.ndim - 2)
    p = xp.reshape(p, (a.shape[0], 1, *trailing))
    rows = xp.reshape(xp.arange(a.shape[1], device=a.device), (1, a.shape[1], *trailing))
    at_p = xp.take_along_axis(a, xp.broadcast_to(p, (a.shape[0], 1, *a.shape[2:])), axis=1)
    return xp.where(rows == j, at_p, xp.where(rows == p, a[:, j:j + 1, ...], a))


def lu_permutation(xp: Any, pivots: np.ndarray, m: int) -> np.ndarray:
    """The row order LAPACK's swaps give (..., m): row i of P^T A is row perm[i] of A."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    count = math.prod(batch)
    perm = A.copy(xp, xp.broadcast_to(xp.arange(m, device=pivots.device), (count, m)))
    swaps = A.reshape(xp, pivots, (count, k)) - 1
    for j in range(k):
        perm = swap_rows(xp, perm, j, swaps[:, j])
    return A.reshape(xp, perm, batch + (m,))


def lu_unpack_kernel(xp: Any, lu: np.ndarray, pivots: np.ndarray, unpack_data: bool, unpack_pivots: bool) -> tuple:
    """(P, L, U) with A = P L U from getrf's packed factors; a part not asked for is an empty (0,) array."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = xp.zeros((0,), dtype=lu.dtype, device=lu.device)
    P = empty
    if unpack_pivots:  # P[..., r, i] = 1 where r is perm[..., i]
        rows = xp.reshape(xp.arange(m, device=lu.device), (m, 1))
        P = A.astype(xp, rows == lu_permutation(xp, pivots, m)[..., None, :], lu.dtype)
    if not unpack_data:
        return P, empty, empty
    L = xp.tril(lu[..., :k], k=-1) + xp.eye(m, k, dtype=lu.dtype, device=lu.device)
    return P, L, xp.triu(lu[..., :k, :])


def lu_solve_kernel(xp: Any, lu: np.ndarray, b: np.ndarray, pivots: np.ndarray, left: bool,
                    adjoint: bool) -> np.ndarray:
    """X with op(A) X = B (left) or X op(A) = B, A = P L U given by getrf's factors, op(A) = A or A^H."""
    if not left:  # X op(A) = B  <=>  op(A)^H X^H = B^H
        return _adjoint_of(xp, lu_solve_kernel(xp, lu, _adjoint_of(xp, b), pivots, True, not adjoint))
    n = lu.shape[-1]
    batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2], pivots.shape[:-1])
    perm = xp.broadcast_to(lu_permutation(xp, pivots, n)[..., None], batch + (n, b.shape[-1]))
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    if adjoint:  # A^H = U^H L^H P^T
        y = triangular_solve_kernel(xp, _adjoint_of(xp, lu), b, False, True, False)
        y = triangular_solve_kernel(xp, _adjoint_of(xp, lu), y, True, True, True)
        return xp.take_along_axis(y, A.argsort(xp, perm, -2), axis=-2)
    y = triangular_solve_kernel(xp, lu, xp.take_along_axis(b, perm, axis=-2), False, True, True)
    return triangular_solve_kernel(xp, lu, y, True, True, False)


def _adjoint_of(xp: Any, a: np.ndarray) -> np.ndarray:
    return A.matrix_transpose(xp, xp.conj(a))


def batched_or_singular(xp: Any, a: np.ndarray, solve_fn: Callable) -> tuple:
    """solve_fn over a batch of matrices, plus torch's `info`; singular matrices give nan results
    instead of stopping the whole batch."""
    try:
        return solve_fn(a), xp.zeros(a.shape[:-2], dtype=D.native(xp, np.int32), device=a.device)
    except np.linalg.LinAlgError:
        info = lu_kernel(xp, a)[2]
        singular = (info > 0)[..., None, None]
        out = solve_fn(xp.where(singular, xp.eye(a.shape[-1], dtype=a.dtype), a))
        return xp.where(singular, xp.asarray(math.nan, dtype=out.dtype, device=out.device), out), info


def triangular_solve_kernel(xp: Any, a: np.ndarray, b: np.ndarray, upper: bool, left: bool,
                            unitriangular: bool) -> np.ndarray:
    """Solve with the triangle of `a` only (its other half is never read, as in LAPACK trtrs)."""
    n = a.shape[-1]
    rows = xp.reshape(xp.arange(n, device=a.device), (n, 1))
    cols = xp.reshape(xp.arange(n, device=a.device), (1, n))
    tri = xp.where(cols >= rows if upper else cols <= rows, a, xp.zeros((), dtype=a.dtype, device=a.device))
    if unitriangular:
        tri = xp.where(cols == rows, xp.ones((), dtype=a.dtype, device=a.device), tri)
    if not left:
        tri, b = A.matrix_transpose(xp, tri), A.matrix_transpose(xp, b)
    batch = np.broadcast_shapes(tri.shape[:-2], b.shape[:-2])
    tri, b = xp.broadcast_to(tri, batch + tri.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:])
    try:
        x = xp.linalg.solve(tri, b)
    except np.linalg.LinAlgError:  # a zero on the diagonal: BLAS's substitution divides by it, it does not raise
        x = _substituted(xp, tri, b, upper if left else not upper)
    return A.matrix_transpose(xp, x) if not left else x


def _substituted(xp: Any, tri: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """X with tri X = B by substitution, a row at a time as trsm goes, so a zero on the diagonal gives
    infinities and NaNs (0 / 0 too, as MKL's trsm, which torch's CPU wheels call), not an error."""
    x = A.copy(xp, b)
    n = tri.shape[-1]
    for k in range(n - 1, -1, -1) if upper else range(n):
        x[..., k, :] /= tri[..., k, k, None]
        rest = slice(0, k) if upper else slice(k + 1, n)
        x[..., rest, :] -= tri[..., rest, k, None] * x[..., k, None, :]
    return x


def cholesky_kernel(xp: Any, a: np.ndarray) -> tuple:
    """Lower Cholesky factors and torch's `info` (the order of the first leading minor that is not
    positive-definite); factors of failing matrices are nan."""
    try:
        return xp.linalg.cholesky(a), xp.zeros(a.shape[:-2], dtype=D.native(xp, np.int32), device=a.device)
    except np.linalg.LinAlgError:
        pass
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    info = np.zeros(len(flat), dtype=np.int32)
    for i, m in enumerate(flat):
        for order in range(1, n + 1):
            try:
                xp.linalg.cholesky(m[:order, :order])
            except np.linalg.LinAlgError:
                info[i] = order
                break
    info = info.reshape(a.shape[:-2])
    failing = (info > 0)[..., None, None]
    factor = xp.linalg.cholesky(xp.where(failing, xp.eye(n, dtype=a.dtype), a))
    return xp.where(failing, xp.asarray(math.nan, dtype=a.dtype, device=a.device), factor), info


# Padé [13/13] coefficients and the 1-norm bound up to which they are accurate to double
# precision without scaling (Higham, "The scaling and squaring method for the matrix
# exponential revisited", 2005).
_EXPM_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
                40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_EXPM_THETA13 = 5.371920351148152


def expm_kernel(xp: Any, a: np.ndarray) -> np.ndarray:
    """exp(A) by scaling and squaring with the [13/13] Padé approximant, per matrix of a batch."""
    n = a.shape[-1]
    if a.size == 0:
        return A.copy(xp, a)
    norm1 = A.astype(xp, A.reduce(xp, "max", A.reduce(xp, "sum", xp.abs(a), -2), -1), np.float64)
    squarings = xp.maximum(xp.ceil(xp.log2(xp.maximum(norm1, 1e-300) / _EXPM_THETA13)), 0)  # whole numbers
    scaled = a / A.astype(xp, (2.0 ** squarings)[..., None, None], a.dtype)
    b = _EXPM_PADE13
    eye = xp.eye(n, dtype=a.dtype, device=a.device)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = scaled @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for step in range(int(A.reduce(xp, "max", squarings)) if squarings.size else 0):
        r = xp.where((step < squarings)[..., None, None], r @ r, r)
    return A.astype(xp, r, a.dtype, copy=False)


LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq_kernel(xp: Any, a: np.ndarray, b: np.ndarray, rcond: float | None, driver: str, vector: bool) -> tuple:
    """(solution, residuals, rank, singular_values) shaped as torch's LAPACK drivers return them:
    gelsy gives the rank, gelsd/gelss the rank and singular values, gels neither; residuals
    exist when m > n, the driver is not gelsy and every matrix has full rank."""
    m, n = a.shape[-2:]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    cutoff = rcond if rcond is not None and rcond > 0 else float(xp.finfo(a.dtype).eps) * max(m, n)
    if xp is np:
        solution = np.empty(batch + (n, b.shape[-1]), dtype=a.dtype)
        ranks = np.zeros(batch, dtype=np.int64)
        values = np.zeros(batch + (min(m, n),), dtype=np.finfo(a.dtype).dtype)
        for idx in np.ndindex(*batch):
            x, _, rank, sv = np.linalg.lstsq(a[idx], b[idx], rcond=cutoff)
            solution[idx], ranks[idx], values[idx] = x, rank, sv
    else:  # the standard has no lstsq: gelsd's minimum-norm solution is the pseudo-inverse's, at the same cutoff
        values = xp.linalg.svdvals(a)
        top = A.max_from(xp, values, -1, True, 0)
        ranks = A.astype(xp, xp.count_nonzero(values > cutoff * top, axis=-1), xp.int64)
        solution = xp.matmul(xp.linalg.pinv(a, rtol=cutoff), b)
    full_rank = A.reduce(xp, "all", ranks == min(m, n))
    real = xp.finfo(a.dtype).dtype
    if m > n and driver != "gelsy" and full_rank:
        residuals = A.reduce(xp, "sum", xp.abs(xp.matmul(a, solution) - b) ** 2, -2)
    else:
        residuals = xp.zeros((0,), dtype=real, device=a.device)
    rank = ranks if driver != "gels" else xp.zeros((0,), dtype=xp.int64, device=a.device)
    singular_values = values if driver in ("gelsd", "gelss") else xp.zeros((0,), dtype=real, device=a.device)
    return (solution[..., 0] if vector else solution), A.astype(xp, residuals, real), rank, singular_values


# ============================================================================================
# Public functions: checks shared by many
# ============================================================================================


def _check_float(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t.dtype.category < 2:
            raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                               f"{D.scalar_type_name(t.dtype)}")


def _check_precision(name: str, A: Tensor) -> None:
    """A composite that refuses float16 and bfloat16 before its LAPACK-backed parts (Note [low-precision linear
    algebra] in ops/unsigned.py)."""
    if A.dtype is D.float16 or A.dtype is D.bfloat16:
        raise RuntimeError(LOW_PRECISION.format(name, D.scalar_type_name(A.dtype)))


def householder_product_backward(grad: Tensor, input: Tensor, tau: Tensor) -> tuple[Tensor, Tensor]:
    """With Q = H_1 ... H_k = L_i H_i R_i and K_i = L_i^H [grad, 0] R_i^H: d tau_i = -(v^H K_i v) and
    d v_i = -(conj(tau_i) K_i v + tau_i K_i^H v), whose entries below the diagonal are column i's gradient."""
    m, n = input.shape[-2:]
    k = tau.shape[-1]
    eye = eye_of(m, m, input)
    full_grad = cat([grad, grad.new_zeros((*grad.shape[:-1], m - n))], -1) if m > n else grad
    reflectors = [_reflector(np, input, i) for i in range(k)]
    householders = [eye - tau[..., i, None, None] * reflectors[i].unsqueeze(-1) * reflectors[i].conj().unsqueeze(-2)
                    for i in range(k)]
    suffixes = [eye] * (k + 1)  # R_i = H_{i+1} ... H_k
    for i in reversed(range(k)):
        suffixes[i] = householders[i] if i == k - 1 else matmul(householders[i], suffixes[i + 1])
    prefix = eye  # L_i = H_1 ... H_{i-1}
    tau_grads, column_grads = [], []
    for i in range(k):
        v = reflectors[i]
        after = suffixes[i + 1] if i + 1 < k else eye
        kernel = matmul(prefix.mH, matmul(full_grad, after.mH))
        kv = matmul(kernel, v.unsqueeze(-1)).squeeze(-1)
        tau_grads.append(-(v.conj() * kv).sum(-1))
        t = tau[..., i, None]
        v_grad = -(t.conj() * kv + t * matmul(kernel.mH, v.unsqueeze(-1)).squeeze(-1))
        column_grads.append(v_grad * (arange(m, device=input.device) > i).to(input.dtype))
        prefix = matmul(prefix, householders[i])
    if not k:  # no reflectors: Q is the identity's first n columns, whatever the input holds
        return input.new_zeros(input.shape), tau.new_zeros(tau.shape)
    zeros = input.new_zeros((*input.shape[:-1], n - k))
    input_grad = cat([stack(column_grads, -1), zeros], -1) if n > k else stack(column_grads, -1)
    return input_grad, stack(tau_grads, -1)


def ormqr_backward(grad: Tensor, input: Tensor, tau: Tensor, other: Tensor, left: bool,
                   transpose: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Through the square product Q of the reflectors: other's gradient is op(Q)^H grad (or grad op(Q)^H), Q's
    gradient goes to the reflectors and tau by householder_product's backward."""
    columns, scales = _square_reflectors(np, input, tau)
    q = apply(householder_product_op, (columns, scales))
    op_q = q.mH if transpose else q
    if left:
        other_grad, op_q_grad = matmul(op_q.mH, grad), matmul(grad, other.mH)
    else:
        other_grad, op_q_grad = matmul(grad, op_q.mH), matmul(other.mH, grad)
    q_grad = op_q_grad.mH if transpose else op_q_grad
    column_grad, scale_grad = householder_product_backward(q_grad, columns, scales)
    k, n = tau.shape[-1], input.shape[-1]
    input_grad = column_grad[..., :, :k]
    if n > k:
        input_grad = cat([input_grad, input_grad.new_zeros((*input.shape[:-1], n - k))], -1)
    return input_grad, scale_grad[..., :k], other_grad


def cholesky_inverse_backward(grad: Tensor, factor: Tensor, upper: bool, inverse: Tensor) -> Tensor:
    """torch's: -(R (G + G^H) R) L for a lower factor, -L (R (G + G^H) R) for an upper one (R the result)."""
    common = matmul(inverse, matmul(grad + grad.mH, inverse))
    return -matmul(factor, common) if upper else -matmul(common, factor)


def cholesky_inverse_jvp(factor_t: Tensor, factor: Tensor, upper: bool, inverse: Tensor) -> Tensor:
    """d (L L^H)^-1 = -R (dL L^H + L dL^H) R, with L = U^H for an upper factor."""
    lower, lower_t = (factor.mH, factor_t.mH) if upper else (factor, factor_t)
    product = matmul(lower_t, lower.mH)
    return -matmul(inverse, matmul(product + product.mH, inverse))


def _check_matrix(name: str, A: Tensor, square: bool = True, arg: str = "A", floating: bool = True) -> None:
    """At least 2 dims (and square), floating point (unless not `floating`), in torch's words."""
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A._data.shape[-1] != A._data.shape[-2]:
        rows, cols = A._data.shape[-2:]
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are {rows} by {cols} matrices")
    if floating:
        _check_float(name, A)


def _check_same_dtype(name: str, A: Tensor, B: Tensor) -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                           f"{D.scalar_type_name(A.dtype)} and B of type {D.scalar_type_name(B.dtype)} instead")


def _raise_info(name: str, info: np.ndarray, message: Callable[[int], str], error: type = LinAlgError) -> None:
    """torch's LinAlgError (or `error`) for the first failing matrix, naming its batch element when batched.
    Under vmap `info` is a batched view: any() sees every example, `physical` holds them all."""
    if not A.reduce(namespace(info), "any", info > 0):
        return
    whole = getattr(info, "physical", None)
    info = np.asarray(info if whole is None else whole)
    failing = np.argwhere(info > 0)
    where_ = failing[0]
    batch = f"(Batch element {int(np.ravel_multi_index(tuple(where_), info.shape))}): " if info.ndim else ""
    raise error(f"{name}: {batch}{message(int(info[tuple(where_)]))}")


def _mm_dtypes(a: Tensor, b: Tensor, first: str = "m1", second: str = "m2") -> None:
    if a._data.dtype is b._data.dtype:  # one NumPy dtype object: the same dtype, no look-up
        return
    if a.dtype is not b.dtype and not autocast_unifies(a, b):
        raise RuntimeError(f"expected {first} and {second} to have the same dtype, but got: "
                           f"{D.CPP_TYPE_NAMES[a.dtype.name]} != {D.CPP_TYPE_NAMES[b.dtype.name]}")


# ============================================================================================
# Public functions: products
# ============================================================================================


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-d tensors."""
    if input._data.ndim != 2 or mat2._data.ndim != 2:
        raise RuntimeError(f"{'self' if input._data.ndim != 2 else 'mat2'} must be a matrix")
    if input._data.shape[1] != mat2._data.shape[0]:
        (n, k), (k2, m) = input._data.shape, mat2._data.shape
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _mm_dtypes(input, mat2)
    return apply(mm_op, (input, mat2), (is_transposed(mat2),))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec._data.ndim}, {input._data.ndim}, "
                           f"{vec._data.ndim}")
    if input._data.shape[1] != vec._data.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0]}), mat ({input._data.shape[0]}x"
                           f"{input._data.shape[1]}), vec ({vec._data.shape[0]})")
    if input.dtype is not vec.dtype and not autocast_unifies(input, vec):
        raise _mv_dtype_error(input, vec)
    return apply(mv_op, (input, vec))


def _mv_dtype_error(mat: Tensor, vec: Tensor) -> RuntimeError:
    """torch's mv is addmv into a result of vec's dtype, and names the three dtypes (result, mat, vec)."""
    return RuntimeError(f"addmv input tensors must have the same dtype, but got {D.scalar_type_name(vec.dtype)}, "
                        f"{D.scalar_type_name(mat.dtype)}, and {D.scalar_type_name(vec.dtype)}")


def _bmm_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError(f"expected scalar type {D.scalar_type_name(a.dtype)} but found {D.scalar_type_name(b.dtype)}")


def _check_vectors(name: str, a: Tensor, b: Tensor) -> None:
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors")
    if a._data.shape != b._data.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._data.shape[0]}] and src "
                           f"[{b._data.shape[0]}] to have the same number of elements, but got "
                           f"{a._data.shape[0]} and {b._data.shape[0]} elements respectively")
    if a.dtype is not b.dtype and not autocast_unifies(a, b):
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found "
                           f"{D.scalar_type_name(a.dtype)} and {D.scalar_type_name(b.dtype)}")


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-d tensors."""
    _check_vectors("dot", input, tensor)
    return apply(dot_op, (input, tensor))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product conjugating the first vector: sum(conj(input) * other)."""
    _check_vectors("dot", input, other)  # torch's vdot checks with dot's words
    return apply(vdot_op, (input, other))


def _check_batches(a: Tensor, b: Tensor) -> None:
    if a._data.ndim != 3 or b._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a._data.ndim != 3 else "batch2 must be a 3D tensor")
    (batch, _, k), (batch2, k2, _) = a._data.shape, b._data.shape
    if batch != batch2 or k != k2:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: "
                           f"[{batch2}, {k2}].")


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of (b, n, m) and (b, m, p) tensors."""
    _check_batches(input, mat2)
    if input.dtype is not mat2.dtype and not autocast_unifies(input, mat2):
        raise _bmm_dtype_error(input, mat2)
    return apply(bmm_op, (input, mat2))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two 1-d tensors (torch records it as a broadcast multiplication)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    return apply(outer_op, (input, vec2))


ger = outer


def _matmul_row(a: Tensor, b: Tensor) -> object:
    """The row (and so the node name) torch's _matmul_impl ends in for these operands (Note [matmul nodes])."""
    da, db = a._data.ndim, b._data.ndim
    if da == 3 and db == 3 and a._data.shape[0] != b._data.shape[0]:
        if a._data.shape[0] == 1 and a._requires_grad:
            da = 2
        elif b._data.shape[0] == 1 and b._requires_grad:
            return matmul_nd
    if da == 2 and db >= 3 and a._requires_grad:  # folded through b^T (torch's should_fold)
        rows, cols = a._data.shape[-2], b._data.shape[-1]
        return matmul_folded_transpose if rows == 1 or cols == 1 or b._data.size == 0 else matmul_folded_clone
    return matmul_nd


def _matmul_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    """The dtype message of the kernel torch's matmul reaches for operands of two dtypes (a batch on either side):
    mm or mv on a batch folded against a matrix or vector (a batch of one that requires grad counts as a matrix), the
    operands swapped where the matrix or vector on the left requires grad (folded through b^T), else bmm."""
    (da, db), (sa, sb) = (a._data.ndim, b._data.ndim), (a._data.shape, b._data.shape)
    one_left = da == db == 3 and sa[0] == 1 != sb[0] and a._requires_grad
    one_right = da == db == 3 and sb[0] == 1 != sa[0] and b._requires_grad and not one_left
    if db <= 2 or one_right:
        folded, other = a, b
    elif da <= 2 and a._requires_grad or one_left:
        folded, other = b, a
    else:
        return _bmm_dtype_error(a, b)
    if other._data.ndim == 1:
        return _mv_dtype_error(folded, other)
    return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {D.CPP_TYPE_NAMES[folded.dtype.name]} != "
                        f"{D.CPP_TYPE_NAMES[other.dtype.name]}")


def _matmul_shape_error(a: Tensor, b: Tensor) -> RuntimeError:
    """The message of the kernel torch reaches for mismatched shapes: mm/mv on a folded operand
    (a batch times a matrix, or a matrix/vector that requires grad times a batch), else bmm."""
    sa, sb = a._data.shape, b._data.shape
    if len(sa) >= 3 and len(sb) <= 2:
        rows = math.prod(sa[:-1])
        if len(sb) == 1:
            return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{sa[-1]}), vec ({sb[0]})")
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sa[-1]} and {sb[0]}x{sb[1]})")
    if len(sa) <= 2 and a._requires_grad:  # b^T folded against a^T
        rows = math.prod(sb[:-2]) * sb[-1]
        if len(sa) == 1:
            return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{sb[-2]}), vec ({sa[0]})")
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sb[-2]} and {sa[1]}x{sa[0]})")
    _check_batch_broadcast(sa[:-2], sb[:-2])  # torch expands the batch dims before it checks the product's sizes
    batch = math.prod(np.broadcast_shapes(sa[:-2], sb[:-2]))
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {sa[-1]}] but got: "
                        f"[{batch}, {sb[-2] if len(sb) > 1 else sb[0]}].")


@composite("aten::matmul")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product for every shape combination, as torch.matmul (batch dims broadcast)."""
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 2 and db == 2:
        return mm(input, other)
    inner_a = input._data.shape[-1]
    inner_b = other._data.shape[-2] if db > 1 else other._data.shape[0]
    if inner_a != inner_b:
        raise _matmul_shape_error(input, other)
    if da == 1 and db == 2:
        _mm_dtypes(input, other)  # torch: input.unsqueeze(0).mm(other)
        return apply(matmul_vec_mat, (input, other))
    if input.dtype is not other.dtype and not autocast_unifies(input, other):
        raise _matmul_dtype_error(input, other)
    _check_batch_broadcast(input._data.shape[:-2], other._data.shape[:-2] if db > 1 else ())
    row = _matmul_row(input, other)
    if db > 2 and da > 1 and row is matmul_nd:  # the batched product (bmm in torch)
        input, other = _folded_for_saving(input, other), _folded_for_saving(other, input)
    elif db <= 2 and other._requires_grad:  # a batch times a matrix: torch's mm on input folded to rows
        input = _folded_for_saving(input, other, rows=True)
    return apply(row, (input, other))


# Note [matmul saves its fold]
# torch's matmul reshapes a batched operand to the 3-d (or, times a matrix, 2-d) shape its bmm (mm) takes, and
# the product saves that reshape: a view where the operand's strides allow one, else a contiguous copy. The
# fused row saves the operand itself; where it is a view into a larger array whose fold torch would copy (the
# attention's v, k: views of one QKV projection, three times their size), saving it would keep that whole
# array alive through the backward. There the operand goes in as torch's copy (`contiguous()`, a recorded
# CloneBackward0 as in torch's graph, so double backward and in-place changes to the view after the product
# behave as torch's): the same memory as torch's saved tensor. Only when the partner requires grad (the only
# case in which the operand is saved), and on NumPy's arrays (whose `base` tells a view into a larger array).


def _folded_for_saving(operand: Tensor, partner: Tensor, rows: bool = False) -> Tensor:
    """operand, or its contiguous copy where torch's matmul would save a copy of its fold and the operand's memory
    is part of a larger array (Note [matmul saves its fold]); rows: folded to 2-d (a batch times a matrix)."""
    data = operand._data
    if not (partner._requires_grad and grad_mode._state.enabled and type(data) is np.ndarray
            and type(data.base) is np.ndarray and data.base.nbytes > data.nbytes):
        return operand
    try:
        data.reshape((-1, data.shape[-1]) if rows else (-1,) + data.shape[-2:], copy=False)
    except ValueError:  # not a view: torch's reshape copies
        return operand.contiguous()
    return operand


def _check_batch_broadcast(a: tuple, b: tuple) -> None:
    """Batch dims must broadcast (torch's message names the sizes and the dim)."""
    n = max(len(a), len(b))
    for i in range(1, n + 1):
        x, y = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {n - i}")


def _check_scaled_product(self: Tensor, mat: Tensor, other: Tensor) -> None:
    if (self.dtype is not other.dtype or mat.dtype is not other.dtype) and not autocast_unifies(self, mat, other):
        culprit = self if self.dtype is not other.dtype else mat
        raise RuntimeError(f"{'self' if culprit is self else 'mat1'} and mat2 must have the same dtype, but got "
                           f"{D.scalar_type_name(culprit.dtype)} and {D.scalar_type_name(other.dtype)}")


def _check_broadcast(input: Tensor, shape: tuple) -> None:
    """`input` must broadcast to the product's shape (torch's expand message otherwise)."""
    src = input._data.shape
    if len(src) > len(shape):
        raise RuntimeError(f"The expanded size of the tensor ({shape[0] if shape else 0}) must match the existing size "
                           f"({src[0]}) at non-singleton dimension 0.  Target sizes: {list(shape)}.  Tensor sizes: "
                           f"{list(src)}")
    for i in range(1, len(src) + 1):
        if src[-i] != 1 and src[-i] != shape[-i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[-i]}) must match the existing size "
                               f"({src[-i]}) at non-singleton dimension {len(shape) - i}.  Target sizes: "
                               f"{list(shape)}.  Tensor sizes: {list(src)}")


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: complex = 1, alpha: complex = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); input broadcasts (the bias of a linear layer)."""
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m._data.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m._data.ndim}-D tensor")
    if mat1._data.shape[1] != mat2._data.shape[0]:
        (n, k), (k2, p) = mat1._data.shape, mat2._data.shape
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{p})")
    _check_scaled_product(input, mat1, mat2)
    _check_broadcast(input, (mat1._data.shape[0], mat2._data.shape[1]))
    return apply(addmm_op, (input, mat1, mat2), (beta, alpha, is_transposed(mat2)))


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: complex = 1, alpha: complex = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    if mat._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, {mat._data.ndim}, "
                           f"{vec._data.ndim}")
    if mat._data.shape[1] != vec._data.shape[0] or input._data.shape not in ((), (1,), (mat._data.shape[0],)):
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0] if input._data.ndim else 1}), mat "
                           f"({mat._data.shape[0]}x{mat._data.shape[1]}), vec ({vec._data.shape[0]})")
    _check_scaled_product(input, mat, vec)
    return apply(addmv_op, (input, mat, vec), (beta, alpha))


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: complex = 1, alpha: complex = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    _check_broadcast(input, (vec1._data.shape[0], vec2._data.shape[0]))
    _check_scaled_product(input, vec1, vec2)
    return apply(addr_op, (input, vec1, vec2), (beta, alpha))


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: complex = 1, alpha: complex = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batch by batch."""
    _check_batches(batch1, batch2)
    if (input.dtype is not batch1.dtype or batch1.dtype is not batch2.dtype) \
            and not autocast_unifies(input, batch1, batch2):
        if input.dtype is not batch1.dtype:
            raise RuntimeError(f"Input dtypes must be the same, got: input {D.CPP_TYPE_NAMES[input.dtype.name]}, "
                               f"batch1: {D.CPP_TYPE_NAMES[batch1.dtype.name]}, batch2: "
                               f"{D.CPP_TYPE_NAMES[batch2.dtype.name]}")
        raise _bmm_dtype_error(batch1, batch2)
    _check_broadcast(input, batch1._data.shape[:2] + batch2._data.shape[2:])
    return apply(baddbmm_op, (input, batch1, batch2), (beta, alpha))


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: complex = 1, alpha: complex = 1) -> Tensor:
    """beta * input + alpha * sum_b (batch1[b] @ batch2[b])."""
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1._data.shape[0] != batch2._data.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1._data.shape[0]} and "
                           f"{batch2._data.shape[0]}")
    if batch1._data.shape[2] != batch2._data.shape[1]:
        (_, n, k), (_, k2, p) = batch1._data.shape, batch2._data.shape
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and {k2}x{p})")
    _check_scaled_product(input, batch1, batch2)
    _check_broadcast(input, (batch1._data.shape[1], batch2._data.shape[2]))
    return apply(addbmm_op, (input, batch1, batch2), (beta, alpha))


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    return apply(trace_op, (input,))


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """torch.linalg.cross: the cross product of 3-vectors along `dim` (batch dims broadcast)."""
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _wrap_dim(dim, input._data.ndim)
    if input._data.shape[d] != 3 or other._data.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input._data.shape[d]} and "
                           f"{other._data.shape[d]}")
    np.broadcast_shapes(input._data.shape, other._data.shape)
    return apply(cross_op, (input, other), (d,))


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """torch.cross: linalg.cross, where dim defaults to the first dimension of size 3."""
    if dim is None:
        warn_once_at_user("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                          "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                          "agree with that of linalg.cross in a future release. (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/Cross.cpp:63.)")
        dim = next((i for i, n in enumerate(input._data.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: every element of input scales a copy of other (UnsafeViewBackward0, as torch)."""
    ndim = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (ndim - input._data.ndim) + input._data.shape
    sb = (1,) * (ndim - other._data.ndim) + other._data.shape
    a = input.reshape(tuple(n for d in sa for n in (d, 1)))
    b = other.reshape(tuple(n for d in sb for n in (1, d)))
    return apply(unsafe_view, (a * b,), (tuple(x * y for x, y in zip(sa, sb)),))


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum over the last dims of both (a product when either is 0-d): tensordot over dims -1 and -1."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def tensordot(a: Tensor, b: Tensor, dims: int | Sequence = 2, out: None = None) -> Tensor:
    """Contract dims of a with dims of b: permute, fold to matrices, mm, unfold (as torch)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype and not autocast_unifies(a, b):
        raise RuntimeError("both inputs should have same dtype")
    for da_, db_ in zip(dims_a, dims_b):  # a size-1 contracted dim broadcasts: the other side is summed over it
        if b._data.shape[db_] == 1:
            a = a.sum(da_, keepdim=True)
        elif a._data.shape[da_] == 1:
            b = b.sum(db_, keepdim=True)
        elif a._data.shape[da_] != b._data.shape[db_]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._data.shape[da_]} in dim "
                               f"{da_} and second has size {b._data.shape[db_]} in dim {db_}")
    dims_a = [_wrap_dim(d, a._data.ndim) for d in dims_a]
    dims_b = [_wrap_dim(d, b._data.ndim) for d in dims_b]
    free_a = [d for d in range(a._data.ndim) if d not in dims_a]
    free_b = [d for d in range(b._data.ndim) if d not in dims_b]
    size = math.prod(a._data.shape[d] for d in dims_a)
    left = a.permute(*free_a, *dims_a).reshape(math.prod(a._data.shape[d] for d in free_a), size)
    right = b.permute(*dims_b, *free_b).reshape(size, math.prod(b._data.shape[d] for d in free_b))
    shape = tuple(a._data.shape[d] for d in free_a) + tuple(b._data.shape[d] for d in free_b)
    return mm(left, right).reshape(shape)


def _chain_order(shapes: list) -> list:
    """Optimal parenthesisation of a matrix chain (classic dynamic programme): split[i][j]."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """A chain of matrix products in the cheapest order; the ends may be vectors (torch.linalg.multi_dot)."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    for which, t in (("first", first), ("last", last)):
        if t._data.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {t._data.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t._data.ndim}D")
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype is not first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{D.scalar_type_name(first.dtype)} and tensor {i} {D.scalar_type_name(t.dtype)}")
    out_shape = ([] if first._data.ndim == 1 else [first._data.shape[0]]) + \
                ([] if last._data.ndim == 1 else [last._data.shape[-1]])
    mats = list(tensors)
    mats[0] = first.unsqueeze(0) if first._data.ndim == 1 else first
    mats[-1] = last.unsqueeze(-1) if last._data.ndim == 1 else last
    for i in range(1, n):
        if mats[i - 1]._data.shape[1] != mats[i]._data.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {list(mats[i - 1]._data.shape)} and "
                               f"{list(mats[i]._data.shape)} cannot be multiplied")
    split = _chain_order([m._data.shape for m in mats])

    def product(i: int, j: int) -> Tensor:
        return mats[i] if i == j else mm(product(i, split[i][j]), product(split[i][j] + 1, j))

    return product(0, n - 1).view(tuple(out_shape))


def chain_matmul(*matrices: Tensor) -> Tensor:
    """Deprecated torch.chain_matmul: multi_dot of 2-d matrices (a single one is cloned)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    for m in matrices:
        if m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# ============================================================================================
# Public functions: einsum
# ============================================================================================


def _sublist_equation(args: tuple) -> tuple[str, list]:
    """einsum(op1, [0, 1], op2, [1, 2], [0, 2]) -> ('ab,bc->ac', [op1, op2]); labels keep their order."""
    def letters(sub: Sequence) -> str:
        return "".join("..." if s is Ellipsis else string.ascii_letters[(s + 26) % 52] for s in sub)

    pairs = len(args) // 2
    equation = ",".join(letters(args[2 * i + 1]) for i in range(pairs))
    if len(args) % 2:
        equation += "->" + letters(args[-1])
    return equation, [args[2 * i] for i in range(pairs)]


def _einsum_check_dots(term: str, where: str) -> None:
    """torch's refusal of a '.' outside one ellipsis in an operand's or the output's subscripts."""
    at = term.find(".")
    if at == -1:
        return
    output = where == "output"
    if term[at:at + 3] != "...":
        raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis"
                           + (" (...)" if output else ""))
    if "." in term[at + 3:]:
        raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found" if output else
                           f"einsum(): found '.' for {where} for which an ellipsis was already found")


def _einsum_parse(equation: str, operands: list) -> tuple[list[str], str, list[Tensor]]:
    """Explicit single-letter labels per operand and for the output; ellipsis dims become fresh letters and their
    operands are unsqueezed to the widest ellipsis. Sizes are checked as torch's: a dim of size 1 broadcasts (against
    another operand's label or ellipsis dim, by `_einsum_broadcast` at each pair), a repeated label's sizes match."""
    lhs, arrow, rhs = equation.partition("->")
    for at, label in [(i, c) for i, c in enumerate(lhs)] + [(len(lhs) + 2 + i, c) for i, c in enumerate(rhs)]:
        if label not in " .," and label not in string.ascii_letters:
            raise RuntimeError(f"einsum(): invalid subscript given at index {at} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for k, term in enumerate(terms):
        _einsum_check_dots(term, f"operand {k}")
    _einsum_check_dots(rhs, "output")
    used = set(equation) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    ranks = []
    for term, op in zip(terms, operands):
        named = len(term.replace("...", ""))
        if "..." not in term and named != op._data.ndim or named > op._data.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({op._data.ndim}) for operand {len(ranks)}"
                               + ("" if "..." in term else " and no ellipsis was given"))
        ranks.append(op._data.ndim - named if "..." in term else 0)
    width = max(ranks, default=0)
    ellipsis = "".join(spare[:width])
    own_labels = [term.replace("...", ellipsis[width - r:]) for term, r in zip(terms, ranks)]  # right-aligned
    _einsum_check_sizes(own_labels, operands, ellipsis)
    prepared = []
    for term, op, r in zip(terms, operands, ranks):
        for _ in range(width - r if "..." in term else 0):
            op = op.unsqueeze(term.index("..."))
        prepared.append(op)
    labels = [term.replace("...", ellipsis) for term in terms]
    if arrow:
        out = rhs.replace("...", ellipsis)
        for at, c in enumerate(out):
            if c not in lhs and c not in ellipsis:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            if c in out[:at]:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    else:
        counts = "".join(labels)
        out = ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ellipsis))
    return labels, out, prepared


def _einsum_check_sizes(labels: list[str], operands: list, ellipsis: str) -> None:
    """torch's size checks, operand by operand and dim by dim: a label (or a dim the ellipsis covers, labelled from
    `ellipsis`) sized other than 1 must agree with the last such size seen, and a repeated label's dims must match."""
    seen: dict[str, int] = {}
    for i, (term, op) in enumerate(zip(labels, operands)):
        shape, first = op._data.shape, {}
        for dim, (c, n) in enumerate(zip(term, shape)):
            if c in first:
                if n != shape[first[c]]:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {n} != {shape[first[c]]}")
                continue
            first[c] = dim
            if n != 1 and seen.setdefault(c, n) != n:
                if c in ellipsis:  # torch's text has no space before "has"
                    raise RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size {n} "
                                       f"which does not broadcast with previously seen ellipsis with size {seen[c]} "
                                       "for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not broadcast "
                                   f"with previously seen size {seen[c]}")


def _einsum_broadcast(x: Tensor, labels: str, other_sizes: dict) -> Tensor:
    """x with each dim of size 1 expanded to the size its label has in the other operand of a pair, as torch
    broadcasts them (the expand's backward sums the gradient back to x's shape)."""
    target = tuple(other_sizes.get(c, 1) if n == 1 else n for c, n in zip(labels, x._data.shape))
    return x if target == x._data.shape else x.expand(target)


def _einsum_pair_dtypes(a: Tensor, a_labels: str, b: Tensor, b_labels: str, keep: str, order: str) -> None:
    """torch contracts two operands by bmm where a label they both have (not broadcast) is summed between them, and
    bmm refuses two dtypes, naming the operands in the order it takes them: swapped where all the dims only the
    second has come before those only the first has (torch's sumproduct_pair). A pair with nothing summed between
    them is a broadcast multiplication, which promotes."""
    if a.dtype is b.dtype:
        return
    sizes_a, sizes_b = dict(zip(a_labels, a._data.shape)), dict(zip(b_labels, b._data.shape))
    if not any(sizes_a[c] != 1 and sizes_b.get(c, 1) != 1 for c in sizes_a if c not in keep):
        return
    only_a = [order.index(c) for c in keep if sizes_a.get(c, 1) != 1 and sizes_b.get(c, 1) == 1]
    only_b = [order.index(c) for c in keep if sizes_b.get(c, 1) != 1 and sizes_a.get(c, 1) == 1]
    swapped = only_a and only_b and max(only_b) < min(only_a)
    if not autocast_unifies(a, b):
        raise _bmm_dtype_error(*((b, a) if swapped else (a, b)))


def einsum(*args: Any) -> Tensor:
    """Einstein summation: einsum('ij,jk->ik', a, b), einsum(eq, [a, b]) or the sublist form.

    >>> einsum("bij,bjk->bik", x, y)   # batched matrix product
    """
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    labels, out, operands = _einsum_parse(equation, operands)
    result, result_labels = operands[0], labels[0]
    if len(operands) == 1:
        return einsum_pair(f"{result_labels}->{out}", result, None)
    order = out + "".join(sorted(set("".join(labels)) - set(out)))  # torch's dims: the output's, then A-Z, a-z
    for i in range(1, len(operands)):
        later = set(out).union(*labels[i + 1:])
        both = result_labels + labels[i]
        keep = out if i == len(operands) - 1 else "".join(dict.fromkeys(c for c in both if c in later))
        _einsum_pair_dtypes(result, result_labels, operands[i], labels[i], keep, order)
        left, right = dict(zip(result_labels, result._data.shape)), dict(zip(labels[i], operands[i]._data.shape))
        result = einsum_pair(f"{result_labels},{labels[i]}->{keep}", _einsum_broadcast(result, result_labels, right),
                             _einsum_broadcast(operands[i], labels[i], left))
        result_labels = keep
    return result


# ============================================================================================
# Public functions: inverse, determinants, solvers
# ============================================================================================

linalg_inv_ex_result = return_type("linalg_inv_ex", "inverse info")
geqrf_result = return_type("geqrf", "a tau")
linalg_slogdet_result = return_type("linalg_slogdet", "sign logabsdet")
slogdet_result = return_type("slogdet", "sign logabsdet")
linalg_solve_ex_result = return_type("linalg_solve_ex", "result info")
linalg_cholesky_ex_result = return_type("linalg_cholesky_ex", "L info")
linalg_qr_result = return_type("linalg_qr", "Q R")
qr_result = return_type("qr", "Q R")
linalg_svd_result = return_type("linalg_svd", "U S Vh")
svd_result = return_type("svd", "U S V")
linalg_eigh_result = return_type("linalg_eigh", "eigenvalues eigenvectors")
linalg_eig_result = return_type("linalg_eig", "eigenvalues eigenvectors")
linalg_lstsq_result = return_type("linalg_lstsq", "solution residuals rank singular_values")
triangular_solve_result = return_type("triangular_solve", "solution cloned_coefficient")
linalg_lu_factor_result = return_type("linalg_lu_factor", "LU pivots")
linalg_lu_factor_ex_result = return_type("linalg_lu_factor_ex", "LU pivots info")
lu_with_info_result = return_type("_lu_with_info", "LU pivots info")
linalg_lu_result = return_type("linalg_lu", "P L U")
lu_unpack_result = return_type("lu_unpack", "P L U")


def _singular_pivot(order: int) -> str:
    return (f"The diagonal element {order} is zero, the inversion could not be completed because the input matrix "
            "is singular.")


def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple:
    """(inverse, info): info[i] > 0 marks a singular matrix instead of raising."""
    return _inverse(A, "linalg.inv_ex" if check_errors else None)


def _inverse(A: Tensor, raised_by: str | None) -> tuple:
    """inv_ex's (inverse, info), raising for a singular matrix in the name of the function `raised_by`, if any."""
    _check_matrix("linalg.inv", A)
    inverse, info = apply(inv_ex_op, (A,))
    if raised_by:
        _raise_info(raised_by, info._data, _singular_pivot)
    return linalg_inv_ex_result(inverse, info)


def inv(A: Tensor) -> Tensor:
    """The inverse of a (batch of) square matrices; raises LinAlgError for singular ones."""
    return _inverse(A, "linalg.inv")[0]


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of A = L L^H (or U^H U when upper) from its Cholesky factor."""
    _check_matrix("cholesky_inverse", input)
    return apply(cholesky_inverse_op, (input,), (upper,))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of the product of the Householder reflectors stored below A's diagonal (geqrf's
    output) with scales tau: the Q of a QR decomposition."""
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {D.scalar_type_name(tau.dtype)} does not match input dtype "
                           f"{D.scalar_type_name(A.dtype)}")
    return apply(householder_product_op, (A, tau))


orgqr = householder_product


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """Multiply input3 by the Q whose reflectors (input, scales input2) geqrf returned, without forming Q's
    thin form: op(Q) input3 (left) or input3 op(Q), op(Q) = Q^H when transpose."""
    a, tau, other = input, input2, input3
    if a.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != a.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] != min(other.shape[side], a.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not a.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{D.scalar_type_name(a.dtype)} and {name} has dtype {D.scalar_type_name(t.dtype)}")
    return apply(ormqr_op, (a, tau, other), (left, transpose))


linalg_ldl_factor_ex_result = return_type("linalg_ldl_factor_ex", "LD pivots info")
linalg_ldl_factor_result = return_type("linalg_ldl_factor", "LD pivots")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> tuple:
    """(LD, pivots, info): the Bunch-Kaufman LDL^T factorisation of symmetric A as LAPACK's sytrf stores it
    (its lower triangle read); info > 0 where D has a zero pivot."""
    name = "torch.linalg.ldl_factor_ex"
    _check_matrix(name, A)
    if A.is_complex() and hermitian:
        raise NotImplementedError("retrograd's linalg.ldl_factor does not implement hermitian=True for complex "
                                  "inputs (LAPACK's hetrf)")
    LD, pivots, info = apply(ldl_factor_op, (A,))
    if check_errors and reduce_array(namespace(info._data), "any", info._data > 0):
        raise RuntimeError(f"torch.linalg.ldl_factor: Unknown error code: {int(info._data.max())}.")
    return linalg_ldl_factor_ex_result(LD, pivots, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple:
    """(LD, pivots) of ldl_factor_ex, raising where the factorisation failed."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return linalg_ldl_factor_result(LD, pivots)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """The solution X of A X = B from ldl_factor's LD and pivots."""
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(B.ndim, 1)}, "
                         f"{max(B.ndim, 1) - 1}], but got -2)")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {LD.shape[-2]} "
                           f"by {LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{D.scalar_type_name(B.dtype)} and A of type {D.scalar_type_name(LD.dtype)} instead.")
    if LD.is_complex() and hermitian:
        raise NotImplementedError("retrograd's linalg.ldl_solve does not implement hermitian=True for complex "
                                  "inputs (LAPACK's hetrs)")
    return apply(ldl_solve_op, (LD, B), (A.astype(namespace(pivots._data), pivots._data, np.int64),))


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A seen as a linear map from its last dims to its first `ind`: shape A.shape[ind:] +
    A.shape[:ind] (composed of reshape and linalg.inv_ex, as torch)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    start, end = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(end) != math.prod(start):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(end)} != {math.prod(start)}")
    result, info = inv_ex(A.reshape(math.prod(end), math.prod(end)))
    if reduce_array(namespace(info._data), "any", info._data > 0):
        raise LinAlgError("inv: The diagonal element 1 is zero, the inversion could not be completed because "
                          "the input matrix is singular.")
    return apply(reshape_alias_op, (result,), ((*end, *start),))  # torch's C++ reshape: ReshapeAliasBackward0


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A's dims `dims` moved last, then linalg.solve on the flattened
    square system (as torch)."""
    if dims is not None:
        A = A.movedim(tuple(dims), tuple(range(A.ndim - len(dims), A.ndim)))
    result_shape = tuple(A.shape[B.ndim:])
    size = math.prod(result_shape)
    if size != math.prod(B.shape):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {size} != {math.prod(B.shape)}")
    return solve(A.reshape(size, size), B.flatten()).reshape(result_shape)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y) along dim, broadcasting x and y."""
    _check_float("linalg.vecdot", x)
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{D.scalar_type_name(x.dtype)} and y of type {D.scalar_type_name(y.dtype)} instead")
    return ((x.conj() if x.is_complex() else x) * y).sum(dim)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """torch.vander: the columns x^(N-1), ..., x, 1 of a 1-d x (increasing: 1, x, ..., x^(N-1)); integers in int64.
    Built as torch builds it: ones, x copied into the columns after the first, their cumprod copied back, flipped
    unless increasing."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    result = x.new_empty((x.shape[0], n), dtype=D.promote_types(x.dtype, D.int64))
    if n > 0:
        result.fill_(1)
        if n > 1:
            result.narrow(1, 1, n - 1).copy_(x.unsqueeze(1))
            result.narrow(1, 1, n - 1).copy_(result.narrow(1, 1, n - 1).cumprod(1))
    return result if increasing else result.flip(1)


_NO_VANDER = (D.bool_, D.float16, D.bfloat16, D.complex32)  # torch's check names the types it takes


def linalg_vander(x: Tensor, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of x: columns x^0, x^1, ..., x^(N-1) (a column of ones, then cumprod, as torch)."""
    if D.kind(x._data) not in "fciu" or x.dtype in _NO_VANDER:
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{D.scalar_type_name(x.dtype)}")
    column = x.unsqueeze(-1) if x.ndim == 0 else x
    n = column.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = column.unsqueeze(-1).expand(*column.shape, n - 1).cumprod(-1)
    return cat([powers.new_ones((*column.shape, 1)), powers], -1)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: torch.diagonal over the last two dims by default."""
    return diagonal(A, offset, dim1, dim2)


def det(A: Tensor) -> Tensor:
    """The determinant; its gradient is defined for singular matrices too (through the adjugate)."""
    _check_matrix("linalg.det", A)
    return apply(det_op, (A,))


def linalg_slogdet(A: Tensor) -> tuple:
    """torch.linalg.slogdet: (sign, log|det|), for determinants that over- or underflow."""
    _check_matrix("linalg.slogdet", A)
    return linalg_slogdet_result(*apply(slogdet_op, (A,)))


def slogdet(input: Tensor) -> tuple:
    """torch.slogdet: linalg.slogdet under torch.return_types.slogdet."""
    return slogdet_result(*linalg_slogdet(input))


def logdet(input: Tensor) -> Tensor:
    """log det, nan for a negative determinant (composed from slogdet as torch does)."""
    _check_matrix("logdet", input)
    _check_precision("logdet", input)
    sign, logabsdet = linalg_slogdet(input)
    if input.is_complex():
        return log(sign) + logabsdet
    return where(sign == -1, math.nan, logabsdet)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """torch treats B as a (batch of) vector(s) when it is 1-d or has A's shape without the last dim."""
    return B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1 and B._data.shape == A._data.shape[:-1])


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> tuple:
    """(result, info) of solving AX = B (left) or XA = B; info > 0 marks singular matrices."""
    _check_matrix("linalg.solve", A)
    _check_same_dtype("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    n = A._data.shape[-1]
    rows = (B._data.shape[-1] if left else 1) if vector else B._data.shape[-2 if left else -1]
    if rows != n:
        b_rows, b_cols = (B._data.shape[-1], 1) if vector else B._data.shape[-2:]
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
                           f"{b_rows}x{b_cols})")
    result, info = apply(solve_ex_op, (A, B), (left, vector))
    if check_errors and reduce_array(namespace(info._data), "any", info._data > 0):
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.")
    return linalg_solve_ex_result(result, info)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of AX = B (or XA = B with left=False); B may be a (batch of) vector(s)."""
    return solve_ex(A, B, left=left, check_errors=True)[0]


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool | None = None, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """Solve AX = B (or XA = B) reading only A's upper or lower triangle (`upper` is required, as in torch)."""
    if upper is None:
        raise TypeError('linalg_solve_triangular() missing 1 required positional arguments: "upper"')
    _check_matrix("linalg.solve_triangular", A)
    if B._data.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    _check_same_dtype("linalg.solve_triangular", A, B)
    n = A._data.shape[-1]
    if B._data.shape[-2 if left else -1] != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {B._data.shape[-2]}x{B._data.shape[-1]})")
    return apply(solve_triangular_op, (A, B), (upper, left, unitriangular))


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> tuple:
    """Deprecated torch.triangular_solve: (solution of op(A) X = input, a copy of A)."""
    warn_once_at_user("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
                      "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed "
                      "and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\n"
                      "should be replaced with\nX = torch.linalg.solve_triangular(A, B). (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2273.)")
    for name, t in (("b", input), ("A", A)):
        if t._data.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: The input tensor {name} must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2] or A._data.shape[-1] != input._data.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A._data.shape[-2]} by "
                           f"{A._data.shape[-1]} but each b matrix is {input._data.shape[-2]} by "
                           f"{input._data.shape[-1]}")
    return triangular_solve_result(*apply(triangular_solve_op, (input, A), (upper, transpose, unitriangular)))


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """Solve A X = input given A's Cholesky factor input2 (lower, or upper with upper=True)."""
    for name, t in (("b", input), ("u", input2)):
        if t._data.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {t._data.ndim} dimensions instead")
    n = input2._data.shape[-1]
    if input2._data.shape[-2] != n or input._data.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {input2._data.shape[-2]} "
                           f"by {n} but each b matrix is {input._data.shape[-2]} by {input._data.shape[-1]}")
    _check_float("cholesky_solve", input, input2)
    return apply(cholesky_solve_op, (input, input2), (upper,))


def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """torch.linalg.lu_solve: X with A X = B (left) or X A = B, or with A^H for adjoint, given
    A = P L U as lu_factor's (LU, pivots); B's batch dims broadcast with LU's."""
    _check_float("torch.linalg.lu_solve", LU)
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{D.scalar_type_name(LU.dtype)} and B of type {D.scalar_type_name(B.dtype)} instead")
    if pivots.dtype is not D.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    _check_matrix("torch.linalg.lu_solve", LU)
    if B._data.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU._data.shape[-1]
    if B._data.shape[-2 if left else -1] != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B._data.shape[-2]}x{B._data.shape[-1]})")
    if pivots._data.ndim == 0 or pivots._data.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix")
    if pivots._data.shape != LU._data.shape[:-1]:
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots "
                           f"with shape {list(pivots._data.shape)} instead")
    _check_batch_broadcast(B._data.shape[:-2], LU._data.shape[:-2])
    return apply(lu_solve_op, (LU, B), (pivots._data, left, adjoint))


def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Deprecated torch.lu_solve: linalg.lu_solve with its arguments reversed."""
    warn_once_at_user("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a "
                      "future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                      "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, "
                      "B) (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                      "BatchLinearAlgebra.cpp:2230.)")
    return linalg_lu_solve(LU_data, LU_pivots, input)


# ============================================================================================
# Public functions: decompositions, pseudo-inverse, least squares, matrix functions
# ============================================================================================


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """(L, info) with A = L L^H; info > 0 is the order of a leading minor that is not positive-definite."""
    return _cholesky(A, upper, "linalg.cholesky_ex" if check_errors else None)


def _cholesky(A: Tensor, upper: bool, raised_by: str | None) -> tuple:
    """cholesky_ex's (L, info), raising for a matrix not positive-definite in the name of `raised_by`, if any."""
    _check_matrix("linalg.cholesky", A)
    factor, info = apply(cholesky_ex_op, (A,), (upper,))
    if raised_by:
        _raise_info(raised_by, info._data, _not_positive_definite)
    return linalg_cholesky_ex_result(factor, info)


def _not_positive_definite(order: int) -> str:
    return ("The factorization could not be completed because the input is not positive-definite (the leading minor "
            f"of order {order} is not positive-definite).")


def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """torch.linalg.cholesky: the Cholesky factor of a Hermitian positive-definite matrix (lower, or upper = L^H)."""
    return _cholesky(A, upper, "linalg.cholesky")[0]


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The deprecated torch.cholesky: linalg.cholesky under its own node (CholeskyBackward0)."""
    warn_once_at_user("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                      "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                      "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\n"
                      "U = torch.linalg.cholesky(A).mH\n"
                      "This transform will produce equivalent results for all valid (symmetric positive definite) "
                      "inputs. (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:1765.)")
    _check_legacy_matrix("cholesky", input, "cholesky_cpu")
    return apply(legacy_cholesky_op, (input,), (upper,))


def _check_legacy_matrix(name: str, A: Tensor, kernel: str, square: bool = True) -> None:
    """A legacy LAPACK op's checks: dims (and square) first, then the kernel's refusal of integer dtypes."""
    if A.ndim >= 2 and (not square or A.shape[-1] == A.shape[-2]) and A.dtype.category < 2:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{D.scalar_type_name(A.dtype)}'")
    _check_matrix(name, A, square=square)


def geqrf(input: Tensor) -> tuple:
    """(a, tau) as LAPACK's geqrf leaves them: the input of householder_product and ormqr (no derivative)."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _check_legacy_matrix("geqrf", input, "geqrf_cpu", square=False)
    return geqrf_result(*apply(geqrf_op, (input,)))


def _check_lu_input(name: str, A: Tensor, pivot: bool) -> None:
    """torch's checks before an LU factorisation: dims, pivoting (LAPACK always pivots), then the dtype."""
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(A._data.shape)} "
                           "instead")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    if A.dtype.category < 2 or A._data.dtype == np.float16:
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{D.scalar_type_name(A.dtype)}'")


def _zero_pivot(order: int) -> str:
    return (f"U[{order},{order}] is zero and using it on lu_solve would result in a division by zero. If you still "
            "want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> tuple:
    """(LU, pivots, info): the partially pivoted LU factorisation A = P L U packed as LAPACK's getrf
    leaves it, the 1-based row swaps, and info > 0 where U has a zero on its diagonal."""
    _check_lu_input("torch.lu_factor", A, pivot)
    LU, pivots, info = apply(lu_factor_ex_op, (A,))
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info._data, _zero_pivot, RuntimeError)
    return linalg_lu_factor_ex_result(LU, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple:
    """(LU, pivots) of lu_factor_ex; raises where U would have a zero on its diagonal."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_info("torch.linalg.lu_factor", info._data, _zero_pivot, RuntimeError)
    return linalg_lu_factor_result(LU, pivots)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """Deprecated torch.lu: (LU, pivots) of linalg.lu_factor_ex, with info when get_infos (never raises)."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                  "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
                  "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                  "torch.linalg.lu_factor_ex(A, compute_pivots)", UserWarning, stacklevel=2)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)


def linalg_lu(A: Tensor, *, pivot: bool = True) -> tuple:
    """torch.linalg.lu: (P, L, U) with A = P L U, L unit lower-triangular (m x k) and U upper (k x n),
    k = min(m, n); P carries no gradient."""
    _check_lu_input("linalg.lu", A, pivot)
    return linalg_lu_result(*apply(lu_op, (A,)))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True) -> tuple:
    """(P, L, U) from lu_factor's (LU, pivots); the parts not unpacked are empty tensors."""
    if LU_data._data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data._data.shape)} instead")
    pivots = LU_pivots._data
    if unpack_pivots:
        if LU_pivots.dtype is not D.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                               "dtype.\nNote: this function is intended to be used with the output produced by "
                               "torch.linalg.lu_factor")
        m, n = LU_data._data.shape[-2:]
        expected = LU_data._data.shape[:-2] + (min(m, n),)
        if pivots.shape != expected:  # torch reads past the end of a short pivots tensor
            raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots of shape {list(expected)}, but got "
                               f"{list(pivots.shape)}. Did you properly pass the result of lu_factor?")
        if reduce_array(namespace(pivots), "any", (pivots < 1) | (pivots > m)):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                               "properly pass the result of lu_factor?")
    return lu_unpack_result(*apply(lu_unpack_op, (LU_data,), (pivots, unpack_data, unpack_pivots)))


def qr(input: Tensor, some: bool = True) -> tuple:
    """The deprecated torch.qr: linalg.qr, reduced unless some=False."""
    warn_once_at_user("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                      "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                      "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                      "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete') (Triggered internally at "
                      "/__w/pytorch/pytorch/aten/src/ATen/native/BatchLinearAlgebra.cpp:2505.)")
    return qr_result(*linalg_qr(input, "reduced" if some else "complete"))


def linalg_qr(A: Tensor, mode: str = "reduced") -> tuple:
    """torch.linalg.qr: A = QR with orthonormal Q and upper-triangular R (mode 'reduced', 'complete' or 'r')."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    _check_matrix("linalg.qr", A, square=False)
    return linalg_qr_result(*apply(qr_op, (A,), (mode,)))


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> tuple:
    """torch.linalg.svd: A = U diag(S) Vh, singular values in descending order."""
    _check_matrix("linalg.svd", A, square=False)
    return linalg_svd_result(*apply(svd_op, (A,), (full_matrices,)))


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values (the node keeps U and Vh for the gradient, as torch's does)."""
    _check_matrix("linalg.svd", A, square=False)
    return apply(svd_op, (A,), (False,))[1]


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:
    """torch.svd: (U, S, V) with V = Vh^H; without compute_uv, U and V are zero-filled."""
    if not compute_uv:
        _check_matrix("linalg.svd", input, square=False)
        m, n = input._data.shape[-2:]
        batch = input._data.shape[:-2]
        xp, data = namespace(input._data), input._data
        return svd_result(_wrap(xp.zeros(batch + (m, m), dtype=data.dtype, device=data.device)), svdvals(input),
                          _wrap(xp.zeros(batch + (n, n), dtype=data.dtype, device=data.device)))
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.mH)


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """q orthonormal columns Q with Q Q^H (A - M) close to A - M: a random projection refined by niter subspace
    iterations (Halko, Martinsson and Tropp 2009, algorithm 4.4, as torch._lowrank does it)."""
    dtype = A.dtype if A.dtype.category >= 2 else D.float32
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)

    def times(left: Tensor, right: Tensor) -> Tensor:
        return matmul(left, right) if M is None else matmul(left, right) - matmul(M if left is A else M.mH, right)

    Q = linalg_qr(times(A, R)).Q
    for _ in range(niter):
        Q = linalg_qr(times(A.mH, Q)).Q
        Q = linalg_qr(times(A, Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None) -> tuple:
    """(U, S, V) with A - M close to U diag(S) V^H, of rank q, by a randomized SVD (Halko et al. 2009, algorithm
    5.1); its random projection comes from retrograd's generator."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mH, A) if M is None else matmul(Q.mH, A) - matmul(Q.mH, M)
    U, S, Vh = linalg_svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mH
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """Principal components of the rows of A (centred unless center=False): svd_lowrank of rank q (min(6, m, n)
    by default)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True) if center else A, q, niter=niter)


def _check_uplo(UPLO: str) -> None:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A: Tensor, UPLO: str = "L") -> tuple:  # noqa: N803 - torch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian matrix (reads one triangle)."""
    _check_uplo(UPLO)
    _check_matrix("linalg.eigh", A)
    return linalg_eigh_result(*apply(eigh_op, (A,), (UPLO,)))


def _check_eig_input(A: Tensor) -> None:
    if A.dtype.category < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {D.scalar_type_name(A.dtype)}")
    _check_matrix("linalg.eig", A)


def eig(A: Tensor) -> tuple:
    """torch.linalg.eig: complex eigenvalues and unit-norm eigenvectors (columns) of a square matrix."""
    _check_eig_input(A)
    return linalg_eig_result(*apply(eig_op, (A,)))


def eigvals(A: Tensor) -> Tensor:
    """The complex eigenvalues (the node keeps the eigenvectors for the gradient, as torch's does)."""
    _check_eig_input(A)
    return apply(eig_op, (A,))[0]


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - torch's name
    """Eigenvalues of a Hermitian matrix (the node keeps the eigenvectors for the gradient)."""
    _check_uplo(UPLO)
    _check_matrix("linalg.eigh", A)
    return apply(eigh_op, (A,), (UPLO,))[0]


def _tolerance(value: float | Tensor | None, default: float) -> float | np.ndarray:
    """A tolerance as pinv's kernel takes it: a number, or per-matrix values shaped (..., 1)."""
    if value is None:
        return default
    return value._data[..., None] if isinstance(value, Tensor) else value


def pinv(A: Tensor, rcond: float | Tensor | None = None, hermitian: bool = False, *,
         atol: float | Tensor | None = None, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse: singular values at most max(atol, rtol * largest) count as
    zero; rtol defaults to eps * max(m, n) unless a positive atol is given (rcond is rtol)."""
    if A._data.ndim < 2 or A.dtype.category < 2:
        described = f"{D.scalar_type_name(A.dtype)}{{{list(A._data.shape)}}}"
        raise RuntimeError(f"linalg.pinv({described}): expected a tensor with 2 or more dimensions of float, double, "
                           "cfloat or cdouble types")
    if rcond is not None:
        rtol = rcond
    atol_given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
    default_rtol = 0.0 if atol_given else D.finfo(A.dtype).eps * max(A._data.shape[-2:])
    return apply(pinv_op, (A,), (_tolerance(atol, 0.0), _tolerance(rtol, default_rtol), hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with a relative cut-off rcond."""
    return pinv(input, rcond)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> tuple:
    """Least-squares solution of AX = B with torch's (solution, residuals, rank, singular_values)."""
    driver = driver or "gelsy"
    if driver not in LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    _check_matrix("torch.linalg.lstsq", A, square=False, arg="input")
    if not 0 <= A._data.ndim - B._data.ndim <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B._data.ndim == A._data.ndim - 1
    if (B._data.shape[-1] if vector else B._data.shape[-2]) != A._data.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {D.scalar_type_name(A.dtype)} and other's dtype {D.scalar_type_name(B.dtype)}")
    if driver == "gels":
        _raise_info("torch.linalg.lstsq", _gels_info(A._data), _not_full_rank)
    return linalg_lstsq_result(*apply(lstsq_op, (A, B), (rcond, driver, vector)))


def _gels_info(a: Any) -> Any:
    """LAPACK gels's info for each matrix: 1 + the index of the first exact zero on the diagonal of the triangular
    factor it solves with (R of A = QR, or of A^H where A is wide), 0 where there is none. gels assumes full rank
    and stops there; the other drivers find the rank and solve regardless."""
    xp = namespace(a)
    m, n = a.shape[-2:]
    if min(m, n) == 0:
        return xp.zeros(a.shape[:-2], dtype=xp.int64)
    r = xp.linalg.qr(a if m >= n else xp.conj(xp.matrix_transpose(a)))[1]
    zero = (np.diagonal(r, 0, -2, -1) if xp is np else xp.linalg.diagonal(r)) == 0
    first = xp.argmax(xp.astype(zero, xp.int8), axis=-1) + 1
    return xp.where(xp.any(zero, axis=-1), first, 0)


def _not_full_rank(info: int) -> str:
    return (f"The least squares solution could not be computed because the input matrix does not have full rank "
            f"(error code: {info}).")


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential (scaling and squaring with a Padé approximant)."""
    _check_matrix("linalg.matrix_exp", A)
    return apply(matrix_exp_op, (A,))


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n by repeated squaring; n < 0 inverts first, n == 0 gives identities (zero gradient), as torch. Integer
    matrices take a power n >= 0 (products only; the inverse refuses them, in linalg.inv's words)."""
    _check_matrix("linalg.matrix_power", A, floating=False)
    if n == 0:
        return apply(matrix_power_zero, (A,))
    if n < 0:
        A, n = inv(A), -n
        if n == 1:
            return A
    elif n == 1:
        return A.clone()
    if n in (2, 3):
        return matmul(A, A) if n == 2 else matmul(matmul(A, A), A)
    result = square = None
    while n:
        square = A if square is None else matmul(square, square)
        if n % 2:
            result = square if result is None else matmul(result, square)
        n //= 2
    return result


def _backshift(dims: Sequence[int], ndim: int) -> list[int]:
    """The permutation moving `dims` to the end (matrix norms work on the last two dims)."""
    return [i for i in range(ndim) if i not in dims] + list(dims)


def matrix_norm(A: Tensor, ord: float | str = "fro", dim: Sequence[int] = (-2, -1), keepdim: bool = False, *,  # noqa: A002
                dtype: D.dtype | None = None) -> Tensor:
    """'fro', 'nuc', ±2 (largest/smallest singular value), ±1 (max/min column sum), ±inf (row sum)."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dims = [_wrap_dim(d, A._data.ndim) for d in dim]
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    if ord not in ("fro", "nuc") and (isinstance(ord, str) or abs(ord) not in (1, 2, math.inf)):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    _check_float("linalg.matrix_norm", A)
    if ord == "nuc" or ord in (2, -2):
        _check_precision("linalg.matrix_norm", A)
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim, dtype=dtype)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "nuc" or abs(ord) == 2:
        perm = _backshift(dims, A._data.ndim)
        values = svdvals(A.permute(*perm))
        result = values.sum(-1, keepdim=keepdim) if ord == "nuc" else (amax if ord > 0 else amin)(values, -1, keepdim)
        if keepdim:
            result = result.unsqueeze(-1).permute(*sorted(range(len(perm)), key=perm.__getitem__))
        return result
    first, second = dims if abs(ord) == 1 else dims[::-1]
    if not keepdim and first < second:
        second -= 1
    return (amax if ord > 0 else amin)(vector_norm(A, 1, first, keepdim), second, keepdim)


def linalg_norm(A: Tensor, ord: float | str | None = None, dim: int | Sequence[int] | None = None,  # noqa: A002
                keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:
    """torch.linalg.norm: a matrix norm for ord over two dims (or 2-d input), else a vector norm."""
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    elif ord is not None and A._data.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A._data.ndim}D.")
    if ord is not None and (isinstance(ord, str) or (len(dim) == 2 if dim is not None else A._data.ndim == 2)):
        return matrix_norm(A, ord, dim or (-2, -1), keepdim, dtype=dtype)  # 'fro' and 'nuc' are matrix norms
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(A: Tensor, p: float | str | None = None) -> Tensor:
    """The condition number: sigma_max / sigma_min for p in (None, 2, -2), else norm(A) * norm(A^-1)
    (inf for singular matrices)."""
    if p is None or p in (2, -2):
        _check_matrix("linalg.cond", A, square=False)
        values = svdvals(A)
        largest, smallest = values.narrow(-1, 0, 1), values.narrow(-1, values.shape[-1] - 1, 1)
        return (smallest / largest if p == -2 else largest / smallest).squeeze(-1)
    _check_matrix(f"linalg.cond(ord={p})", A)
    inverse, info = inv_ex(A)
    singular = info > 0
    if not reduce_array(namespace(singular._data), "any", singular._data):
        return matrix_norm(A, p) * matrix_norm(inverse, p)
    n = A.shape[-1]
    safe_inverse = inv(where(batch_mask(singular), eye_of(n, n, A), A))
    return where(singular, math.inf, matrix_norm(A, p) * matrix_norm(safe_inverse, p))


def matrix_rank(A: Tensor, tol: float | None = None, hermitian: bool = False, *, atol: float | Tensor | None = None,
                rtol: float | Tensor | None = None) -> Tensor:
    """The number of singular values above max(atol, rtol * largest) (int64, no gradient); rtol defaults to
    eps * max(m, n) unless only a positive atol is given; `tol` is the older spelling of atol."""
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if A.dtype not in (D.float32, D.float64, D.complex64, D.complex128):  # LAPACK's types only, as torch's
        raise RuntimeError("This function doesn't handle types other than float and double")
    if hermitian:
        _check_matrix("linalg.eigh", A)
    data = A._data
    xp = namespace(data)
    values = xp.abs(xp.linalg.eigvalsh(data)) if hermitian else xp.linalg.svdvals(data)
    atol = tol if atol is None else atol
    atol_value = 0.0 if atol is None else (atol._data if isinstance(atol, Tensor) else atol)
    if rtol is None:
        eps = D.finfo(D.of_array(values)).eps * max(data.shape[-2:])
        rtol = 0.0 if atol is not None and np.all(np.asarray(atol_value) > 0) else eps
    rtol_value = rtol._data if isinstance(rtol, Tensor) else rtol
    largest = max_from(xp, values, -1, False, 0.0)
    threshold = xp.maximum(atol_value, rtol_value * largest)
    return _wrap(xp.astype(xp.count_nonzero(values > threshold[..., None], axis=-1), xp.int64))


# Note [removed linear algebra]
# torch.matrix_rank, solve, lstsq, symeig and eig were removed in 1.9 but are still names in torch (and
# Tensor.solve, lstsq, symeig, eig methods): calling one raises RuntimeError with the replacement, which
# code written for old torch meets first. One message each, torch's words.
_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_REMOVED_MESSAGES = {
    "matrix_rank": f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' "
                   "was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
    "solve": f"{_REMOVED} `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
             "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
             "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, "
             "A).solution should be replaced with:\nX = torch.linalg.solve(A, B)",
    "lstsq": f"{_REMOVED} `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
             "reversed arguments and does not return the QR decomposition in the returned tuple (although it returns "
             "other information about the problem).\n\nTo get the QR decomposition consider using "
             "`torch.linalg.qr`.\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution in "
             "the last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are "
             "in the field 'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ "
             "= torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, "
             "B).solution",
    "symeig": f"{_REMOVED} The default behavior has changed from using the upper triangular portion of the matrix by "
              "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
              "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
              "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if "
              "upper else 'L')",
    "eig": f"{_REMOVED} `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
           "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
           "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced "
           "with:\nL_complex, V_complex = torch.linalg.eig(A)",
}


def _removed(name: str) -> Callable[..., Any]:
    """torch.<name>, removed in 1.9: raises with the replacement (Note [removed linear algebra])."""
    def removed(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(_REMOVED_MESSAGES[name])
    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = "Removed in torch 1.9; raises RuntimeError naming its replacement."
    return removed


REMOVED = {name: _removed(name) for name in _REMOVED_MESSAGES}


__all__ = ["addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul", "cholesky", "cholesky_inverse",
           "cholesky_solve", "cross", "det", "dot", "einsum", "geqrf", "ger", "inner", "inverse", "kron", "logdet",
           "lu", "lu_solve", "lu_unpack", "matmul", "matrix_exp", "matrix_power", "mm", "mv", "orgqr", "ormqr",
           "outer", "pca_lowrank", "pinverse", "qr", "slogdet", "svd", "svd_lowrank", "tensordot", "trace",
           "triangular_solve", "vdot", "vander"]
METHODS = ["addbmm", "addmm", "addmv", "addr", "baddbmm", "cholesky", "cholesky_inverse", "cholesky_solve", "cross",
           "det", "geqrf", "inner", "inverse", "kron", "logdet", "lu", "lu_solve", "matrix_exp", "matrix_power",
           "orgqr", "ormqr", "pinverse", "qr", "slogdet", "svd", "trace", "triangular_solve", "vdot"]
INPLACE = ["addbmm", "addmm", "addmv", "addr", "baddbmm"]
LINALG = ["cholesky", "cholesky_ex", "cond", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "inv_ex",
          "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
          "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
          "svdvals", "tensorinv", "tensorsolve", "vecdot", "vander", "diagonal", "householder_product",
          "ldl_factor", "ldl_factor_ex", "ldl_solve"]
