"""Op database rows: linear algebra (OPS.md H): products, einsum, inverses, determinants, solvers,
decompositions, pseudo-inverse, least squares, matrix functions and matrix norms.

Matrices that get inverted or solved against are well conditioned (`invertible`: diagonally
dominant; `spd`: X X^T + n I). Ops that assume a Hermitian input (cholesky, eigh, pinv with
hermitian=True) run on `a + a.mT`, so that finite differences stay on Hermitian matrices, as
torch's OpInfo does. Decompositions defined only up to signs (qr, svd, eigh) are compared through
gauge-fixed outputs (each singular/eigen vector flipped so that a chosen entry is positive),
and separately, without gradients, through their raw invariant outputs so that the node names
are checked too.
"""

from __future__ import annotations

import math

import numpy as np

from . import C, OpInfo, Sample, noncontig, rand


def invertible(rng, *shape):
    """Diagonally dominant matrices (condition number of a few units)."""
    n = shape[-1]
    return rand(rng, *shape, low=-1.0, high=1.0) + n * np.eye(n)


def spd(rng, *shape):
    """Symmetric positive-definite matrices X X^T + n I."""
    x = rand(rng, *shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def half_spd(rng, *shape):
    """Half of an SPD matrix: `a + a.mT` (as the Hermitian rows call) is SPD again."""
    return spd(rng, *shape) / 2


def hermitian(op):
    """Call `op` on a + a.mT (a Hermitian input that finite differences keep Hermitian)."""
    def call(m, a, *args, **kwargs):
        return op(m)(a + a.mT, *args, **kwargs)
    return call


def column_signs(m, x, row=0):
    """Signs of one row of x, used to fix the sign gauge of singular/eigen vectors (no gradient)."""
    return m.sgn(x.detach().narrow(-2, row, 1))


# ============================================================================================
# Products
# ============================================================================================


def mm_samples(rng):
    return [Sample((rand(rng, 2, 3), rand(rng, 3, 4)), name="2d"),
            Sample((noncontig(rand(rng, 2, 3)), rand(rng, 3, 2)), name="noncontig"),
            Sample((rand(rng, 2, 0), rand(rng, 0, 3)), name="empty_inner"),
            Sample((rand(rng, 1, 1), rand(rng, 1, 5)), name="size1")]


def matmul_samples(rng):
    shapes = [((3,), (3,), "1d_1d"), ((2, 3), (3,), "2d_1d"), ((3,), (3, 4), "1d_2d"), ((2, 3), (3, 4), "2d_2d"),
              ((2, 2, 3), (3,), "3d_1d"), ((3,), (2, 3, 4), "1d_3d"), ((2, 2, 3), (3, 4), "3d_2d_fold"),
              ((2, 3), (2, 3, 4), "2d_3d_clone"), ((1, 3), (2, 3, 4), "2d_3d_transpose"),
              ((2, 3), (2, 3, 1), "2d_3d_column"), ((2, 2, 3), (2, 3, 4), "3d_3d"),
              ((2, 1, 2, 3), (5, 3, 4), "broadcast_batch"), ((1, 2, 3), (2, 3, 4), "batch1_squeezed"),
              ((2, 2, 3), (1, 3, 4), "batch2_squeezed"), ((2, 2, 2, 3), (3, 2), "4d_2d"),
              ((4, 1, 3), (3,), "3d_vector")]
    samples = [Sample((rand(rng, *a), rand(rng, *b)), name=name) for a, b, name in shapes]
    samples.append(Sample((noncontig(rand(rng, 3, 2, 2)), rand(rng, 2, 3)), name="noncontig_3d_2d"))
    return samples


def addmm_samples(rng):
    return [Sample((rand(rng, 4), rand(rng, 2, 3), rand(rng, 3, 4)), name="bias_broadcast"),
            Sample((rand(rng, 2, 4), rand(rng, 2, 3), rand(rng, 3, 4)), {"beta": 0.5, "alpha": -2.0}, "scaled"),
            Sample((rand(rng, 2, 1), noncontig(rand(rng, 2, 3)), rand(rng, 3, 4)), {"beta": 0.0}, "beta0"),
            Sample((rand(rng), rand(rng, 2, 3), rand(rng, 3, 4)), name="0d_bias")]


def addmv_samples(rng):
    return [Sample((rand(rng, 2), rand(rng, 2, 3), rand(rng, 3)), name="plain"),
            Sample((rand(rng, 1), rand(rng, 2, 3), rand(rng, 3)), {"beta": 2.0, "alpha": 0.5}, "scaled_broadcast"),
            Sample((rand(rng), noncontig(rand(rng, 2, 3)), rand(rng, 3)), {"beta": 0.0}, "beta0")]


def baddbmm_samples(rng):
    return [Sample((rand(rng, 2, 2, 4), rand(rng, 2, 2, 3), rand(rng, 2, 3, 4)), name="plain"),
            Sample((rand(rng, 4), rand(rng, 2, 2, 3), rand(rng, 2, 3, 4)), {"beta": 0.5, "alpha": 3.0}, "broadcast")]


def addbmm_samples(rng):
    return [Sample((rand(rng, 2, 4), rand(rng, 3, 2, 3), rand(rng, 3, 3, 4)), name="plain"),
            Sample((rand(rng, 4), rand(rng, 3, 2, 3), rand(rng, 3, 3, 4)), {"beta": -1.0, "alpha": 0.5}, "broadcast")]


def cross_samples(dim_kw):
    def samples(rng):
        return [Sample((rand(rng, 2, 3), rand(rng, 2, 3)), {dim_kw: 1}, "rows"),
                Sample((rand(rng, 1, 3), rand(rng, 4, 3)), {dim_kw: -1}, "broadcast"),
                Sample((rand(rng, 3, 2), noncontig(rand(rng, 3, 2))), {dim_kw: 0}, "dim0_noncontig")]
    return samples


def einsum_samples(rng):
    cases = [("ij,jk->ik", [(2, 3), (3, 4)], "matmul"), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)], "bmm"),
             ("ii->i", [(3, 3)], "diagonal"), ("ii", [(3, 3)], "trace_implicit"), ("ij->", [(2, 3)], "sum"),
             ("ij->ji", [(2, 3)], "transpose"), ("i,i", [(4,), (4,)], "dot_implicit"),
             ("i,j->ij", [(2,), (3,)], "outer"), ("ij,jk", [(2, 3), (3, 2)], "implicit_matmul"),
             ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)], "ellipsis_broadcast"),
             ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)], "three_operands"),
             ("iij,kj->ik", [(2, 2, 3), (4, 3)], "diagonal_and_contract"), ("ij,k->ijk", [(2, 3), (2,)], "sum_free"),
             ("ijk,jl->li", [(2, 3, 4), (3, 5)], "own_label_summed"),
             ("bij,bjk->bik", [(1, 2, 3), (4, 3, 5)], "label_broadcast"),
             ("ij,jk", [(2, 1), (3, 4)], "contracted_size_one"),
             ("...ij,...jk->...ik", [(2, 1, 2, 1), (4, 3, 2)], "ellipsis_and_label_broadcast")]
    return [Sample((eq, *[rand(rng, *s) for s in shapes]), name=name) for eq, shapes, name in cases]


# ============================================================================================
# Inverses, determinants, solvers
# ============================================================================================


def inverse_samples(rng):
    return [Sample((invertible(rng, 3, 3),), name="3x3"),
            Sample((invertible(rng, 2, 3, 3),), name="batched"),
            Sample((noncontig(invertible(rng, 3, 3)),), name="noncontig"),
            Sample((invertible(rng, 1, 1),), name="1x1")]


# Rank 2 (third row = first + second) with a determinant that rounds to a tiny nonzero number in
# both libraries and both precisions; there torch's first-order gradient is the adjugate too (where
# the determinant rounds to exactly 0, torch's first-order backward returns 0 instead).
SINGULAR = np.array([[1.5, -0.4, 0.7], [0.2, 1.1, -0.9], [1.7, 0.7, -0.2]])


def det_samples(rng):
    mixed = np.stack([invertible(rng, 3, 3), SINGULAR])
    return [Sample((rand(rng, 3, 3),), name="3x3"),
            Sample((invertible(rng, 2, 2, 2),), name="batched"),
            Sample((SINGULAR.copy(),), name="singular"),
            Sample((mixed,), name="batch_singular_and_not"),
            Sample((noncontig(rand(rng, 3, 3)),), name="noncontig"),
            Sample((rand(rng, 1, 1),), name="1x1")]


def slogdet_samples(rng):
    negative = invertible(rng, 3, 3)
    negative[[0, 1]] = negative[[1, 0]]
    return [Sample((invertible(rng, 3, 3),), name="positive"), Sample((negative,), name="negative"),
            Sample((invertible(rng, 2, 3, 3),), name="batched")]


def solve_samples(rng):
    return [Sample((invertible(rng, 3, 3), rand(rng, 3, 2)), name="matrix_rhs"),
            Sample((invertible(rng, 3, 3), rand(rng, 3)), name="vector_rhs"),
            Sample((invertible(rng, 2, 3, 3), rand(rng, 3, 2)), name="broadcast_A_batch"),
            Sample((invertible(rng, 3, 3), rand(rng, 2, 3, 1)), name="broadcast_B_batch"),
            Sample((invertible(rng, 2, 3, 3), rand(rng, 2, 3)), name="batched_vectors"),
            Sample((invertible(rng, 3, 3), rand(rng, 2, 3)), {"left": False}, "right"),
            Sample((noncontig(invertible(rng, 3, 3)), noncontig(rand(rng, 3, 2))), name="noncontig")]


def solve_triangular_samples(rng):
    return [Sample((invertible(rng, 3, 3), rand(rng, 3, 2)), {"upper": True}, "upper"),
            Sample((invertible(rng, 3, 3), rand(rng, 3, 2)), {"upper": False}, "lower"),
            Sample((invertible(rng, 2, 3, 3), rand(rng, 2, 3)), {"upper": True, "left": False}, "right_batched"),
            Sample((invertible(rng, 3, 3), rand(rng, 3, 2)), {"upper": False, "unitriangular": True}, "unit"),
            Sample((invertible(rng, 3, 3), rand(rng, 2, 3, 2)), {"upper": True}, "broadcast_B")]


def triangular_solve_samples(rng):
    return [Sample((rand(rng, 3, 2), invertible(rng, 3, 3)), name="upper"),
            Sample((rand(rng, 3, 2), invertible(rng, 3, 3), False), name="lower"),
            Sample((rand(rng, 2, 3, 2), invertible(rng, 3, 3)), {"transpose": True}, "transpose_batched"),
            Sample((rand(rng, 3, 1), invertible(rng, 3, 3)), {"unitriangular": True}, "unit")]


def cholesky_solve_samples(rng):
    return [Sample((rand(rng, 3, 2), invertible(rng, 3, 3)), name="lower"),
            Sample((rand(rng, 3, 2), invertible(rng, 3, 3), True), name="upper"),
            Sample((rand(rng, 2, 3, 1), invertible(rng, 3, 3)), name="batched_rhs")]


def pivoted(rng, *shape):
    """Matrices whose partial pivoting is unambiguous: a diagonal block of 2 max(m, n) against entries in
    [-1, 1], rows shuffled, so LAPACK swaps rows and each pivot wins by a margin no rounding (float32)
    or finite difference can overturn."""
    m, n = shape[-2:]
    k = min(m, n)
    a = rand(rng, *shape, low=-1.0, high=1.0)
    a[..., range(k), range(k)] += 2 * max(m, n)
    return a[..., rng.permutation(m), :]


def lu_samples(rng):
    return [Sample((pivoted(rng, 3, 3),), name="3x3"), Sample((pivoted(rng, 4, 3),), name="tall"),
            Sample((pivoted(rng, 3, 5),), name="wide"), Sample((pivoted(rng, 2, 4, 4),), name="batched"),
            Sample((pivoted(rng, 2, 1, 2, 3),), name="batched_wide"),
            Sample((noncontig(pivoted(rng, 3, 3)),), name="noncontig"), Sample((pivoted(rng, 1, 1),), name="1x1")]


def lu_unpack_of_factors(m, a, **kwargs):
    return m.lu_unpack(*m.linalg.lu_factor(a), **kwargs)


def packed_factors(rng, *shape):
    """An LU factorisation as lu_factor packs it (unit L below the diagonal, U on and above it) with
    pivots that swap rows: well conditioned, so it is differentiated as an input of its own."""
    *batch, n = shape[:-1]
    pivots = np.broadcast_to(rng.integers(np.arange(1, n + 1), n + 1), (*batch, n)).astype(np.int32)
    return invertible(rng, *shape), C(pivots.copy())


def lu_solve_samples(rng):
    samples = []
    for left in (True, False):
        for adjoint in (False, True):
            b = rand(rng, 3, 2) if left else rand(rng, 2, 3)
            samples.append(Sample((*packed_factors(rng, 3, 3), b), {"left": left, "adjoint": adjoint},
                                  f"left{int(left)}_adjoint{int(adjoint)}"))
    return samples + [Sample((*packed_factors(rng, 2, 3, 3), rand(rng, 3, 1)), name="broadcast_B"),
                      Sample((*packed_factors(rng, 3, 3), rand(rng, 2, 3, 2)), {"adjoint": True}, "broadcast_LU"),
                      Sample((*packed_factors(rng, 2, 1, 3, 3), rand(rng, 3, 2, 3)), {"left": False}, "batched"),
                      Sample((*packed_factors(rng, 3, 3), noncontig(rand(rng, 3, 3))), name="noncontig_B")]


def lu_solve_after_factor(m, a, b, **kwargs):
    """lu_solve on lu_factor's output: A's gradient goes through both nodes."""
    return m.linalg.lu_solve(*m.linalg.lu_factor(a), b, **kwargs)


def lu_solve_factored_samples(rng):
    return [Sample((pivoted(rng, 3, 3), rand(rng, 3, 2)), name="left"),
            Sample((pivoted(rng, 2, 3, 3), rand(rng, 2, 3)), {"left": False, "adjoint": True}, "right_adjoint")]


def triangular_factor(m, b, factor, upper=False):
    """cholesky_solve reads only the factor's triangle; differentiate through that triangle."""
    return m.cholesky_solve(b, factor.triu() if upper else factor.tril(), upper)


# ============================================================================================
# Decompositions
# ============================================================================================


def hermitian_samples(rng):
    return [Sample((half_spd(rng, 3, 3),), name="3x3"), Sample((half_spd(rng, 2, 3, 3),), name="batched"),
            Sample((half_spd(rng, 1, 1),), name="1x1")]


def low_rank(rng, m, n, rank):
    """An m x n matrix of rank `rank` exactly, with well-separated singular values."""
    return rand(rng, m, rank) @ np.diag(np.arange(rank, 0, -1) * 2.0) @ np.linalg.qr(rand(rng, n, rank))[0].T


def cholesky_samples(rng):
    return hermitian_samples(rng) + [Sample((half_spd(rng, 3, 3),), {"upper": True}, "upper")]


def rectangular_samples(rng):
    return [Sample((rand(rng, 3, 3),), name="square"), Sample((rand(rng, 4, 3),), name="tall"),
            Sample((rand(rng, 3, 4),), name="wide"), Sample((rand(rng, 2, 3, 2),), name="batched"),
            Sample((noncontig(rand(rng, 2, 4)),), name="noncontig")]


def matrix_rank_samples(rng):
    deficient = rand(rng, 2, 4, 3)
    deficient[0, :, 2] = deficient[0, :, 0]
    symmetric = rand(rng, 3, 3)
    return rectangular_samples(rng) + [
        Sample((deficient,), name="deficient"), Sample((deficient,), {"atol": 1.0}, "atol"),
        Sample((deficient,), {"rtol": 0.5}, "rtol"), Sample((deficient,), {"atol": 0.1, "rtol": 0.6}, "atol_rtol"),
        Sample((deficient, 0.5), name="tol"), Sample((np.zeros((0, 3)),), name="empty"),
        Sample((symmetric + symmetric.T,), {"hermitian": True}, "hermitian")]


def pinv_samples(rng):
    """rectangular_samples with the leading diagonal raised by 2: singular values away from zero, so the
    gradient (which grows like 1/sigma_min^2) is not dominated by float32 rounding of a near-singular matrix."""
    samples = rectangular_samples(rng)
    for sample in samples:
        a = sample.args[0]
        k = min(a.shape[-2:])
        a[..., range(k), range(k)] += 2.0
    return samples


def qr_samples(rng):
    return rectangular_samples(rng) + [Sample((rand(rng, 3, 3), "complete"), name="complete_square"),
                                       Sample((rand(rng, 2, 4), "complete"), name="complete_wide")]


def qr_gauge_fixed(m, a, mode="reduced"):
    """Q and R with R's diagonal made positive (the QR decomposition is unique up to those signs)."""
    q, r = m.linalg.qr(a, mode)
    k = min(a.shape[-2:])
    d = m.sgn(r.detach().diagonal(0, -2, -1))
    return q.narrow(-1, 0, k) * d.unsqueeze(-2), r * d.unsqueeze(-1)


def svd_samples(rng):
    return rectangular_samples(rng) + [Sample((rand(rng, 4, 3), True), name="full_tall"),
                                       Sample((rand(rng, 2, 3), True), name="full_wide")]


def svd_gauge_fixed(m, a, full_matrices=False):
    """U, S, Vh with each pair of singular vectors flipped so that U's first row is positive;
    only the first min(m, n) vectors, the ones the decomposition determines."""
    U, S, Vh = m.linalg.svd(a, full_matrices)
    k = S.shape[-1]
    U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
    s = column_signs(m, U)
    return U * s, S, Vh * s.mT


def torch_svd_gauge_fixed(m, a, some=True):
    U, S, V = m.svd(a, some)
    k = S.shape[-1]
    U, V = U.narrow(-1, 0, k), V.narrow(-1, 0, k)
    s = column_signs(m, U)
    return U * s, S, V * s


def eigh_gauge_fixed(m, a, UPLO="L"):  # noqa: N803
    L, V = m.linalg.eigh(a + a.mT, UPLO)
    return L, V * column_signs(m, V)


def well_separated(rng, *batch_and_n):
    """P D P^-1 with P near the identity and D holding well-separated eigenvalues, a complex-conjugate pair
    (1 +- 2i, from a rotation block) among them: the eigenvectors are well conditioned, so float32 results
    do not hang on rounding."""
    *batch, n = batch_and_n
    D = np.diag(np.linspace(-3.0, 3.0, n)).astype(float)
    if n >= 3:
        D[:2, :2] = [[1.0, 2.0], [-2.0, 1.0]]
    P = np.eye(n) + 0.1 * rng.standard_normal((*batch, n, n))
    return P @ D @ np.linalg.inv(P)


def eig_samples(rng):
    """General square matrices (complex-conjugate eigenvalue pairs included), batched, and 1 x 1."""
    return [Sample((well_separated(rng, 3, 3),), name="3x3"), Sample((well_separated(rng, 2, 4, 4),), name="batched"),
            Sample((rand(rng, 1, 1),), name="1x1")]


def eig_matrix_function(m, a):
    """V diag(exp(L)) V^-1 (= matrix_exp(A)): reads eigenvalues and eigenvectors, yet depends on neither
    their order nor the phase of each eigenvector, which LAPACK builds may choose differently."""
    L, V = m.linalg.eig(a)
    return m.view_as_real(m.matmul(V * m.exp(L).unsqueeze(-2), m.linalg.inv(V)))


def eigvals_power_sums(m, a):
    """sum(L^k) for k = 1..3: symmetric in the eigenvalues, so independent of their order."""
    L = m.linalg.eigvals(a)
    return m.view_as_real(m.stack([(L ** k).sum(-1) for k in (1, 2, 3)], -1))


def lstsq_samples(rng):
    return [Sample((rand(rng, 4, 3), rand(rng, 4, 2)), name="tall"),
            Sample((rand(rng, 3, 4), rand(rng, 3, 2)), name="wide"),
            Sample((rand(rng, 4, 3), rand(rng, 4)), name="vector"),
            Sample((rand(rng, 2, 4, 3), rand(rng, 1, 4, 2)), name="batched_broadcast"),
            Sample((rand(rng, 2, 4, 3), rand(rng, 2, 4)), name="batched_vectors"),
            Sample((rand(rng, 4, 3), rand(rng, 4, 2)), {"driver": "gelsd"}, "gelsd_residuals"),
            Sample((rand(rng, 4, 2), rand(rng, 4)), {"driver": "gels"}, "gels_vector_residuals"),
            Sample((rand(rng, 3, 2), rand(rng, 3, 2)), {"driver": "gelss"}, "gelss")]


def lstsq_differentiable(result):
    """The solution and the residuals (rank and singular values carry no gradient)."""
    return result.solution, result.residuals


# ============================================================================================
# Matrix functions and norms
# ============================================================================================


def matrix_exp_samples(rng):
    return [Sample((rand(rng, 3, 3, low=-1.0, high=1.0),), name="3x3"),
            Sample((rand(rng, 2, 2, 2),), name="batched"),
            Sample((rand(rng, 3, 3) * 3,), name="large_norm_squaring"),
            Sample((noncontig(rand(rng, 3, 3)),), name="noncontig"),
            Sample((rand(rng, 1, 1),), name="1x1")]


def matrix_power_samples(rng):
    return [Sample((rand(rng, 3, 3, low=-1.0, high=1.0), n), name=f"n{n}") for n in (0, 1, 2, 3, 6)] + \
           [Sample((invertible(rng, 3, 3), n), name=f"neg{-n}") for n in (-1, -3)] + \
           [Sample((rand(rng, 2, 3, 3, low=-1.0, high=1.0), 5), name="batched")]


def matrix_norm_samples(rng):
    ords = [("fro", "fro"), ("nuc", "nuc"), (2, "2"), (-2, "neg2"), (1, "1"), (-1, "neg1"), (math.inf, "inf"),
            (-math.inf, "neginf")]
    samples = [Sample((rand(rng, 3, 4),), {"ord": o}, name) for o, name in ords]
    return samples + [Sample((rand(rng, 2, 3, 3),), {"ord": "nuc", "keepdim": True}, "nuc_keepdim_batched"),
                      Sample((rand(rng, 3, 2, 4),), {"ord": 2, "dim": (0, 2), "keepdim": True}, "2_dims_keepdim"),
                      Sample((rand(rng, 3, 2, 4),), {"ord": 1, "dim": (2, 0)}, "1_dims_reversed"),
                      Sample((rand(rng, 3, 2, 4),), {"ord": -math.inf, "dim": (0, 1), "keepdim": True},
                             "neginf_keepdim")]


def norm_samples(rng):
    return [Sample((rand(rng, 3, 4),), name="default_2d"), Sample((rand(rng, 2, 3, 4),), name="default_3d"),
            Sample((rand(rng, 3, 4), "nuc"), name="nuc"), Sample((rand(rng, 3, 4), 2), name="spectral"),
            Sample((rand(rng, 4), 3), name="vector_ord3"), Sample((rand(rng, 2, 3, 4), 1, (0, 2)), name="matrix_dims"),
            Sample((rand(rng, 2, 3), None, 1, True), name="vector_dim_keepdim")]


def cond_samples(rng):
    return [Sample((invertible(rng, 3, 3),), name="default"), Sample((rand(rng, 3, 4),), name="rectangular"),
            Sample((invertible(rng, 2, 3, 3), -2), name="neg2_batched"),
            Sample((invertible(rng, 3, 3), "nuc"), name="nuc")]


def cond_inverse_norm_samples(rng):
    """Invertible matrices only: on an exactly singular one torch's value is its LAPACK's rounding
    (1.5e8 or inf by CPU); test_numerics checks there that cond is inf, the defined answer."""
    return [Sample((invertible(rng, 3, 3), p), name=str(p)) for p in ("fro", 1, -math.inf)] + \
           [Sample((invertible(rng, 2, 2, 2), p), name=f"batched_{p}") for p in ("fro", "nuc")]


def cholesky_inverse_call(m, factor, upper=False):
    """cholesky_inverse reads only the factor's triangle; differentiate through that triangle."""
    return m.cholesky_inverse(factor.triu() if upper else factor.tril(), upper)


def tensorinv_samples(rng):
    return [Sample((invertible(rng, 6, 6).reshape(2, 3, 6),), {"ind": 2}, "ind2"),
            Sample((invertible(rng, 4, 4).reshape(4, 2, 2),), {"ind": 1}, "ind1")]


def tensorsolve_samples(rng):
    return [Sample((invertible(rng, 6, 6).reshape(2, 3, 6), rand(rng, 2, 3)), name="flat"),
            Sample((invertible(rng, 6, 6).reshape(2, 3, 6).transpose(2, 0, 1).copy(), rand(rng, 2, 3)),
                   {"dims": (0,)}, "dims")]


def symmetric(rng, *shape, diagonal=1.0):
    """Symmetric matrices; a small diagonal makes Bunch-Kaufman choose 2x2 pivots."""
    x = rand(rng, *shape)
    x = x + np.swapaxes(x, -1, -2)
    return x - (1 - diagonal) * x * np.eye(shape[-1])


def ldl_solve_call(m, a, b, **kwargs):
    factors, pivots = m.linalg.ldl_factor(a)
    return m.linalg.ldl_solve(factors, pivots, b, **kwargs)


OPS = [
    # products
    OpInfo("mm", mm_samples, method=True),
    OpInfo("bmm", lambda rng: [Sample((rand(rng, 2, 2, 3), rand(rng, 2, 3, 4)), name="3d"),
                               Sample((noncontig(rand(rng, 2, 2, 3)), rand(rng, 2, 3, 2)), name="noncontig")],
           method=True),
    OpInfo("matmul", matmul_samples, method=True),
    OpInfo("linalg.matmul", lambda rng: [Sample((rand(rng, 2, 2, 3), rand(rng, 3, 4)), name="3d_2d")]),
    OpInfo("mv", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 4)), name="plain"),
                              Sample((noncontig(rand(rng, 3, 4)), rand(rng, 4)), name="noncontig")], method=True),
    OpInfo("dot", lambda rng: [Sample((rand(rng, 5), rand(rng, 5)), name="plain")], method=True),
    OpInfo("vdot", lambda rng: [Sample((rand(rng, 5), rand(rng, 5)), name="plain")], method=True),
    OpInfo("outer", lambda rng: [Sample((rand(rng, 3), rand(rng, 4)), name="plain")], method=True),
    OpInfo("ger", lambda rng: [Sample((rand(rng, 2), rand(rng, 3)), name="plain")], method=True),
    OpInfo("addmm", addmm_samples, method=True),
    OpInfo("addmv", addmv_samples, method=True),
    OpInfo("baddbmm", baddbmm_samples, method=True),
    OpInfo("addbmm", addbmm_samples, method=True),
    OpInfo("trace", lambda rng: [Sample((rand(rng, 3, 3),), name="square"), Sample((rand(rng, 2, 4),), name="wide"),
                                 Sample((noncontig(rand(rng, 4, 3)),), name="noncontig")], method=True),
    OpInfo("cross", cross_samples("dim"), method=True),
    OpInfo("linalg.cross", cross_samples("dim")),
    OpInfo("kron", lambda rng: [Sample((rand(rng, 2, 2), rand(rng, 3, 1)), name="2d"),
                                Sample((rand(rng, 2), rand(rng, 3)), name="1d"),
                                Sample((rand(rng, 2, 1, 2), rand(rng, 2, 2)), name="mixed_ndim")], method=True),
    OpInfo("tensordot", lambda rng: [Sample((rand(rng, 2, 3, 4), rand(rng, 3, 4, 2)), name="dims2"),
                                     Sample((rand(rng, 3, 2, 4), rand(rng, 2, 3)), {"dims": ([1, 0], [0, 1])}, "lists"),
                                     Sample((rand(rng, 2, 3), rand(rng, 2)), {"dims": 0}, "outer")]),
    # torch lowers einsum to views, permutes and bmm, so its last node depends on the equation
    # (ViewBackward0, PermuteBackward0, SumBackward1, ...); ours is one EinsumBackward0 per contraction
    OpInfo("einsum", einsum_samples, skip_grad_fn=True),
    OpInfo("einsum", lambda rng: [Sample((rand(rng, 2, 3), [0, 1], rand(rng, 3, 4), [1, 2], [0, 2]), name="sublist")],
           skip_grad_fn=True, aliases=("einsum_sublist",)),
    OpInfo("chain_matmul", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 3, 4), rand(rng, 4, 2)), name="three"),
                                        Sample((rand(rng, 2, 3),), name="single")]),
    OpInfo("linalg.multi_dot", lambda rng: [
        Sample(([rand(rng, 2, 3), rand(rng, 3, 4)],), name="two"),
        Sample(([rand(rng, 3), rand(rng, 3, 4), rand(rng, 4, 2)],), name="vector_first"),
        Sample(([rand(rng, 2, 3), rand(rng, 3, 1), rand(rng, 1, 4), rand(rng, 4)],), name="four_vector_last"),
        Sample(([rand(rng, 3), rand(rng, 3)],), name="vectors")]),
    # inverses, determinants, solvers
    OpInfo("linalg.inv", inverse_samples),
    OpInfo("inverse", inverse_samples, method=True),
    OpInfo("linalg.inv_ex", inverse_samples),
    OpInfo("linalg.det", det_samples),
    OpInfo("det", det_samples, method=True),
    OpInfo("linalg.slogdet", slogdet_samples),
    OpInfo("slogdet", slogdet_samples, method=True),
    OpInfo("logdet", lambda rng: [Sample((spd(rng, 3, 3),), name="spd"), Sample((spd(rng, 2, 2, 2),), name="batched")],
           method=True),
    OpInfo("linalg.solve", solve_samples),
    OpInfo("linalg.solve_ex", solve_samples),
    OpInfo("linalg.solve_triangular", solve_triangular_samples),
    OpInfo("triangular_solve", triangular_solve_samples, method=True),
    OpInfo("cholesky_solve", cholesky_solve_samples, call=triangular_factor),
    OpInfo("cholesky_inverse", lambda rng: [Sample((invertible(rng, 3, 3),), name="lower"),
                                            Sample((invertible(rng, 2, 3, 3), True), name="upper_batched")],
           call=cholesky_inverse_call),
    OpInfo("linalg.tensorinv", tensorinv_samples, aliases=("tensorinv",)),
    OpInfo("linalg.householder_product",
           lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 3)), name="full"),
                        Sample((rand(rng, 2, 5, 3), rand(rng, 2, 2)), name="batched_fewer_reflectors")],
           aliases=("householder_product", "orgqr"), forward_ad=False),
    OpInfo("linalg.ldl_factor", lambda rng: [Sample((symmetric(rng, 5, 5),), name="1x1_pivots"),
                                             Sample((symmetric(rng, 2, 5, 5, diagonal=0.01),), name="2x2_pivots")],
           differentiable=False, aliases=("ldl_factor",)),
    OpInfo("linalg.ldl_factor_ex", lambda rng: [Sample((symmetric(rng, 4, 4, diagonal=0.01),), name="ex")],
           differentiable=False, aliases=("ldl_factor_ex",)),
    OpInfo("linalg.ldl_solve", lambda rng: [Sample((C(symmetric(rng, 5, 5, diagonal=0.01)), C(rand(rng, 5, 2))),
                                                   name="solve")],
           call=ldl_solve_call, differentiable=False, aliases=("ldl_solve",)),
    OpInfo("ormqr", lambda rng: [Sample((rand(rng, 4, 3), rand(rng, 3), rand(rng, 4, 2)), name="left"),
                                 Sample((rand(rng, 4, 3), rand(rng, 3), rand(rng, 2, 4)),
                                        {"left": False, "transpose": True}, "right_transpose"),
                                 Sample((rand(rng, 2, 4, 5), rand(rng, 2, 4), rand(rng, 2, 4, 3)),
                                        {"transpose": True}, "wide_batched")],
           forward_ad=False),
    OpInfo("linalg.tensorsolve", tensorsolve_samples, aliases=("tensorsolve",)),
    OpInfo("linalg.vecdot", lambda rng: [Sample((rand(rng, 3, 4), rand(rng, 4)), name="broadcast"),
                                         Sample((rand(rng, 3, 4), rand(rng, 3, 4)), {"dim": 0}, "dim0")],
           aliases=("vecdot",)),
    OpInfo("linalg.vander", lambda rng: [Sample((rand(rng, 2, 4),), name="square"),
                                         Sample((rand(rng, 3),), {"N": 5}, "N")]),
    # torch.vander writes the cumprod of its own columns back in place: torch's backward refuses (the saved
    # columns were modified), so only values, dtypes and grad_fn names are compared
    OpInfo("vander", lambda rng: [Sample((rand(rng, 4),), name="square"),
                                  Sample((rand(rng, 3),), {"N": 5, "increasing": True}, "increasing"),
                                  Sample((rand(rng, 3),), {"N": 1}, "one_column"),
                                  Sample((rand(rng, 3),), {"N": 0}, "no_column")], differentiable=False),
    OpInfo("linalg.diagonal", lambda rng: [Sample((rand(rng, 2, 3, 4),), name="last_two"),
                                           Sample((rand(rng, 3, 4, 2),), {"offset": 1, "dim1": 0, "dim2": 1},
                                                  "offset_dims")]),
    OpInfo("linalg.lu_solve", lu_solve_samples),
    OpInfo("linalg.lu_solve", lu_solve_factored_samples, call=lu_solve_after_factor,
           aliases=("linalg.lu_solve_factored",)),
    OpInfo("lu_solve", lambda rng: [Sample((rand(rng, 3, 2), *packed_factors(rng, 3, 3)), name="plain")],
           method=True),
    # decompositions
    OpInfo("linalg.cholesky", cholesky_samples, call=hermitian(lambda m: m.linalg.cholesky)),
    OpInfo("linalg.cholesky_ex", cholesky_samples, call=hermitian(lambda m: m.linalg.cholesky_ex)),
    OpInfo("cholesky", cholesky_samples, call=hermitian(lambda m: m.cholesky), aliases=("cholesky_legacy",)),
    OpInfo("linalg.lu_factor", lu_samples),
    OpInfo("linalg.lu_factor_ex", lu_samples),
    OpInfo("linalg.lu", lu_samples),
    OpInfo("lu_unpack", lu_samples, call=lu_unpack_of_factors),
    OpInfo("lu_unpack", lambda rng: [Sample((pivoted(rng, 2, 3, 4),), {"unpack_pivots": False}, "no_pivots"),
                                     Sample((pivoted(rng, 3, 3),), {"unpack_data": False}, "no_data")],
           call=lu_unpack_of_factors, differentiable=False, aliases=("lu_unpack_parts",)),
    OpInfo("lu", lambda rng: [Sample((pivoted(rng, 3, 3),), name="plain"),
                              Sample((pivoted(rng, 2, 4, 3), True, True), name="get_infos")], method=True),
    OpInfo("linalg.qr", qr_samples, call=qr_gauge_fixed),
    OpInfo("linalg.qr", lambda rng: [Sample((rand(rng, 4, 3),), name="tall"), Sample((rand(rng, 3, 4),), name="wide")],
           outputs=lambda r: (r.R.abs(),), differentiable=False, aliases=("linalg.qr_raw",)),
    OpInfo("qr", lambda rng: [Sample((rand(rng, 4, 3),), name="tall"), Sample((rand(rng, 3, 4), False), name="full")],
           outputs=lambda r: (r.R.abs(),), differentiable=False, method=True, aliases=("qr_legacy",)),
    # geqrf: LAPACK's own layout, the same in both libraries; no derivative (GeqrfBackward0 raises)
    OpInfo("geqrf", lambda rng: [Sample((rand(rng, 4, 3),), name="tall"), Sample((rand(rng, 2, 3, 4),), name="wide")],
           method=True, differentiable=False),
    # randomized: for an input of rank q exactly, the singular values do not depend on the random projection
    OpInfo("svd_lowrank", lambda rng: [Sample((low_rank(rng, 5, 4, 2),), {"q": 2}, name="rank2")],
           outputs=lambda r: (r[1],), differentiable=False),
    OpInfo("pca_lowrank", lambda rng: [Sample((low_rank(rng, 5, 4, 2),), {"q": 2, "center": False}, name="rank2")],
           outputs=lambda r: (r[1],), differentiable=False),
    OpInfo("linalg.svd", svd_samples, call=svd_gauge_fixed),
    OpInfo("linalg.svd", rectangular_samples, outputs=lambda r: (r.S,), differentiable=False,
           aliases=("linalg.svd_raw",)),
    OpInfo("svd", rectangular_samples, call=torch_svd_gauge_fixed),
    OpInfo("svd", lambda rng: [Sample((rand(rng, 4, 3), False), name="full")], outputs=lambda r: (r.S,),
           differentiable=False, aliases=("svd_raw",)),
    OpInfo("svd", lambda rng: [Sample((rand(rng, 3, 4), True, False), name="no_uv")], aliases=("svd_no_uv",)),
    OpInfo("linalg.svdvals", rectangular_samples),
    OpInfo("linalg.matrix_rank", matrix_rank_samples, differentiable=False),
    OpInfo("linalg.eigh", hermitian_samples, call=eigh_gauge_fixed),
    OpInfo("linalg.eigh", lambda rng: [Sample((half_spd(rng, 3, 3), "U"), name="upper")], call=eigh_gauge_fixed,
           aliases=("linalg.eigh_upper",)),
    OpInfo("linalg.eigh", lambda rng: [Sample((spd(rng, 3, 3),), name="raw")], outputs=lambda r: (r.eigenvalues,),
           differentiable=False, aliases=("linalg.eigh_raw",)),
    OpInfo("linalg.eigvalsh", hermitian_samples, call=hermitian(lambda m: m.linalg.eigvalsh)),
    OpInfo("linalg.eig", eig_samples, call=eig_matrix_function),
    OpInfo("linalg.eigvals", eig_samples, call=eigvals_power_sums),
    OpInfo("linalg.pinv", pinv_samples),
    OpInfo("linalg.pinv", hermitian_samples, call=hermitian(lambda m: lambda a: m.linalg.pinv(a, hermitian=True)),
           aliases=("linalg.pinv_hermitian",)),
    OpInfo("pinverse", lambda rng: [Sample((rand(rng, 4, 3),), name="tall")], method=True),
    OpInfo("linalg.lstsq", lstsq_samples, outputs=lstsq_differentiable),
    OpInfo("linalg.lstsq", lstsq_samples, differentiable=False, aliases=("linalg.lstsq_all_outputs",)),
    # matrix functions and norms
    OpInfo("linalg.matrix_exp", matrix_exp_samples),
    OpInfo("matrix_exp", matrix_exp_samples, method=True),
    OpInfo("linalg.matrix_power", matrix_power_samples),
    OpInfo("matrix_power", matrix_power_samples, method=True),
    OpInfo("linalg.matrix_norm", matrix_norm_samples),
    OpInfo("linalg.norm", norm_samples),
    OpInfo("linalg.cond", cond_samples),
    # through norm(A) * norm(A^-1): torch ends in nan_to_num (NanToNumBackward0) for most orders and
    # its backward fails (the inverse it saved was filled in place), so only the values are compared
    OpInfo("linalg.cond", cond_inverse_norm_samples, skip_grad_fn=True, differentiable=False,
           aliases=("linalg.cond_inverse_norms",)),
]

OPS += [
    OpInfo("inner", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 4, 3)), name="matrices"),
                                 Sample((rand(rng), rand(rng, 3)), name="0d")], method=True),
    OpInfo("addr", lambda rng: [Sample((rand(rng, 2, 3), rand(rng, 2), rand(rng, 3)), {"beta": 0.5, "alpha": 2.0},
                                       name="scaled"),
                                Sample((rand(rng, 3), rand(rng, 2), rand(rng, 3)), name="broadcast")], method=True),
]
