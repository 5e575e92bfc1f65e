"""MultivariateNormal and LowRankMultivariateNormal (torch's multivariate_normal.py and
lowrank_multivariate_normal.py). MultivariateNormal is given by a covariance matrix, a precision matrix or a lower
Cholesky factor, kept internally as the unbroadcast Cholesky factor; log_prob, entropy and rsample go through
triangular solves and products with it, as torch's do. LowRankMultivariateNormal's covariance is
W W^T + diag(D): its log-determinant and Mahalanobis norm go through the m x m capacitance matrix
I + W^T D^-1 W (the Woodbury identity), never an n x n one."""

from __future__ import annotations

import math

import numpy as np

import retrograd

from .. import linalg
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution, _size, _standard_normal, at_loc, lazy_property

__all__ = ["LowRankMultivariateNormal", "MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Batched matrix-vector products with broadcasting."""
    return retrograd.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(scale_tril: Tensor, diff: Tensor) -> Tensor:
    """The squared Mahalanobis norm |L^-1 x|^2 of each vector x of `diff`, L broadcast against it."""
    n = diff.size(-1)
    batch = np.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1]))
    solved = linalg.solve_triangular(scale_tril.expand(batch + (n, n)), diff.expand(batch + (n,)).unsqueeze(-1),
                                     upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of the inverse of `precision`, without inverting it (torch's flip trick)."""
    flipped_factor = linalg.cholesky(retrograd.flip(precision, (-2, -1)))
    inverse_factor = retrograd.transpose(retrograd.flip(flipped_factor, (-2, -1)), -2, -1)
    identity = retrograd.eye(precision.shape[-1], dtype=precision.dtype)
    return linalg.solve_triangular(inverse_factor, identity, upper=False)


def _the_given_matrix(error: type[Exception], **matrices: Tensor | None) -> tuple[str, Tensor]:
    """(name, matrix) of the one matrix given among covariance_matrix, precision_matrix and scale_tril; `error`
    (torch's exception type for the distribution) when there is not exactly one."""
    given = {name: matrix for name, matrix in matrices.items() if matrix is not None}
    if len(given) != 1:
        raise error("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    ((name, matrix),) = given.items()
    return name, matrix


def _scale_tril_of(name: str, matrix: Tensor) -> Tensor:
    """The lower Cholesky factor of the scale given as `name` (scale_tril, covariance_matrix or precision_matrix)."""
    if name == "scale_tril":
        return matrix
    return linalg.cholesky(matrix) if name == "covariance_matrix" else _precision_to_scale_tril(matrix)


class _CholeskyScale:
    """scale_tril and covariance_matrix of a distribution whose scale is held as the unbroadcast Cholesky factor
    `_unbroadcasted_scale_tril` (MultivariateNormal, Wishart), expanded to the batch shape. Each keeps its own
    precision_matrix, as torch: cholesky_inverse in one, cholesky_solve against the identity in the other."""

    _batch_shape: retrograd.Size
    _unbroadcasted_scale_tril: Tensor

    def _matrix_shape(self) -> retrograd.Size:
        return self._batch_shape + self._unbroadcasted_scale_tril.shape[-2:]

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        factor = self._unbroadcasted_scale_tril
        return retrograd.matmul(factor, factor.mT).expand(self._matrix_shape())


class MultivariateNormal(_CholeskyScale, Distribution):
    """The multivariate normal distribution N(loc, covariance_matrix)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _params = ("loc", "covariance_matrix", "scale_tril", "precision_matrix")

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = _the_given_matrix(ValueError, covariance_matrix=covariance_matrix,
                                         precision_matrix=precision_matrix, scale_tril=scale_tril)
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = retrograd.Size(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(name, matrix)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> MultivariateNormal:
        new = super().expand(batch_shape, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return retrograd.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    mean = mode = at_loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self) -> Tensor:
        entropy = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return entropy if len(self._batch_shape) == 0 else entropy.expand(self._batch_shape)


def _batch_capacitance_tril(cov_factor: Tensor, cov_diag: Tensor) -> Tensor:
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W."""
    m = cov_factor.size(-1)
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    return linalg.cholesky(retrograd.matmul(wt_dinv, cov_factor) + retrograd.eye(m, dtype=cov_factor.dtype))


def _batch_lowrank_logdet(cov_factor: Tensor, cov_diag: Tensor, capacitance_tril: Tensor) -> Tensor:
    """log det(W W^T + D) = log det(capacitance) + log det(D)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + cov_diag.log().sum(-1)


def _batch_lowrank_mahalanobis(cov_factor: Tensor, cov_diag: Tensor, x: Tensor, capacitance_tril: Tensor
                               ) -> Tensor:
    """x^T (W W^T + D)^-1 x by the Woodbury identity."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    return (x.pow(2) / cov_diag).sum(-1) - _batch_mahalanobis(capacitance_tril, _batch_mv(wt_dinv, x))


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal distribution with covariance cov_factor @ cov_factor.T + diag(cov_diag)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None
                 ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = retrograd.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                          cov_diag.unsqueeze(-1))
        except RuntimeError as error:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, cov_diag "
                             f"{cov_diag.shape}") from error
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> LowRankMultivariateNormal:
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        loc_shape = retrograd.Size(batch_shape) + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril"):
            setattr(new, name, getattr(self, name))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> retrograd.Size:
        return self._batch_shape + self._event_shape + self._event_shape

    mean = mode = at_loc

    @lazy_property
    def variance(self) -> Tensor:
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        n = self._event_shape[0]
        diag_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_factor = self._unbroadcasted_cov_factor / diag_sqrt
        k = retrograd.matmul(scaled_factor, scaled_factor.mT) + retrograd.eye(n, dtype=scaled_factor.dtype)
        return (diag_sqrt * linalg.cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        factor = self._unbroadcasted_cov_factor
        return (retrograd.matmul(factor, factor.mT)
                + retrograd.diag_embed(self._unbroadcasted_cov_diag)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        return (retrograd.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a).expand(
            self._matrix_shape())

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps_w = _standard_normal(shape[:-1] + self.cov_factor.shape[-1:], dtype=self.loc.dtype)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self) -> Tensor:
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                                 value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + mahalanobis)

    def entropy(self) -> Tensor:
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return entropy if len(self._batch_shape) == 0 else entropy.expand(self._batch_shape)
