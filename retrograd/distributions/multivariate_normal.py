"""MultivariateNormal (torch/distributions/multivariate_normal.py): given by a covariance matrix, a precision
matrix or a lower Cholesky factor, kept internally as the unbroadcast Cholesky factor; log_prob, entropy and
rsample go through triangular solves and products with it, as torch's do."""

from __future__ import annotations

import math

import numpy as np

import retrograd

from .. import linalg
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution, _size, _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


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


class MultivariateNormal(Distribution):
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
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {name: matrix for name, matrix in given.items() if matrix is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        ((name, matrix),) = given.items()
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = retrograd.Size(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> MultivariateNormal:
        new = super().expand(batch_shape, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    def _matrix_shape(self) -> retrograd.Size:
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        factor = self._unbroadcasted_scale_tril
        return retrograd.matmul(factor, factor.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return retrograd.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

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
