"""Distributions over matrices (torch's lkj_cholesky.py and wishart.py): LKJCholesky over lower Cholesky factors
of correlation matrices, drawn by the onion method, and Wishart over positive definite matrices, drawn by the
Bartlett decomposition with chi-squared diagonals, so its rsample is reparameterised (the chi-squared draws carry
Gamma's implicit gradient). log_prob and entropy are torch's formulas in retrograd ops."""

from __future__ import annotations

import math
import warnings
from numbers import Number

import numpy as np

import retrograd

from .. import _dtype as D
from .. import linalg
from .._tensor import Tensor
from . import constraints
from .continuous import Beta, Chi2
from .distribution import Distribution, ExponentialFamily, _size, _standard_normal, broadcast_all, lazy_property
from .multivariate_normal import _CholeskyScale, _scale_tril_of, _the_given_matrix

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


# Note [LKJ onion method]
# LKJCholesky.sample builds L row by row (section 3.2 of Lewandowski, Kurowicka and Joe 2009, as NumPyro does):
# row i >= 1 is sqrt(y_i) times a uniform direction in its first i coordinates, with the diagonal entry making
# its norm 1, and y_i ~ Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2); row 0 draws a Beta it does not
# use. torch 2.13 draws y_i from Beta(i - 1 / 2, ...) instead, so for dim >= 3 its rows below the second are more
# correlated than the LKJ distribution its log_prob describes. Here every off-diagonal correlation has the LKJ
# marginal, 2 Beta(b, b) - 1 with b = concentration - 1 + dim / 2 (tests/test_distributions.py checks it).


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors L of dim x dim correlation matrices: the density of
    L L^T is proportional to det(L L^T) ** (concentration - 1), so concentration 1 is uniform over them."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the radii of the onion method, one Beta per row (Note [LKJ onion method])
        offset = 0.5 * retrograd.arange(dim - 1, dtype=self.concentration.dtype)
        offset = retrograd.cat([offset.new_zeros((1,)), offset])
        marginal_concentration = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, marginal_concentration.unsqueeze(-1) - offset)
        super().__init__(self.concentration.size(), (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = retrograd.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: _size = ()) -> Tensor:
        with retrograd.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = _standard_normal(self._extended_shape(sample_shape), y.dtype).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere[..., 0, :] = 0.0  # row 0 was 0 / 0
            w = y.sqrt() * u_hypersphere
            diagonal = (1 - (w ** 2).sum(-1)).clamp(min=D.finfo(w.dtype).tiny).sqrt()
            return w + retrograd.diag_embed(diagonal)

    def log_prob(self, value: Tensor) -> Tensor:
        """log det(L L^T) ** (concentration - 1) plus the log-Jacobian sum_i (dim - i) log L_ii of L -> L L^T,
        less the log normaliser (page 1999 of Lewandowski et al.)."""
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - retrograd.arange(2, self.dim + 1)
        unnormalized = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = (0.5 * dm1 * math.log(math.pi) + retrograd.mvlgamma(alpha - 0.5, dm1)
                      - retrograd.lgamma(alpha) * dm1)
        return unnormalized - normalizer


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function: the derivative of mvlgamma(x, p), sum_i digamma(x - i / 2)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return retrograd.digamma(x.unsqueeze(-1) - retrograd.arange(p, dtype=x.dtype).div(2).expand(x.shape + (-1,))
                             ).sum(-1)


class Wishart(_CholeskyScale, ExponentialFamily):
    """The Wishart distribution of positive definite p x p matrices with `df` degrees of freedom (> p - 1) and a
    scale given by a covariance matrix, a precision matrix or a lower Cholesky factor (kept internally as the
    unbroadcast factor, as in MultivariateNormal)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        name, matrix = _the_given_matrix(AssertionError, covariance_matrix=covariance_matrix,
                                         precision_matrix=precision_matrix, scale_tril=scale_tril)
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = retrograd.Size(matrix.shape[:-2])
            self.df = retrograd.tensor(df, dtype=matrix.dtype)
        else:
            batch_shape = retrograd.Size(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        p = matrix.shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, matrix.shape[-2:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(name, matrix)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self) -> Chi2:
        """The chi-squared laws of the squared diagonal of the Bartlett factor: df - i degrees of freedom for row i."""
        p = self._event_shape[-1]
        steps = retrograd.arange(p, dtype=self._unbroadcasted_scale_tril.dtype).expand(self._batch_shape + (-1,))
        return Chi2(self.df.unsqueeze(-1) - steps)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = retrograd.Size(batch_shape)
        matrix_shape = batch_shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(matrix_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(matrix_shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def precision_matrix(self) -> Tensor:
        identity = retrograd.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return retrograd.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_matrix(self, df: Tensor) -> Tensor:
        """A batch-shaped tensor viewed to multiply a batch of matrices."""
        return df.view(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        return self._df_matrix(retrograd.where(factor <= 0, math.nan, factor)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        covariance = self.covariance_matrix
        diagonal = covariance.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (covariance.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: _size) -> Tensor:
        """L A A^T L^T, with A lower triangular: sqrt of chi-squared draws on the diagonal, N(0, 1) below it (drawn
        for the strictly lower entries only, row by row, as torch draws them)."""
        p = self._event_shape[-1]
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt()
        noise = retrograd.diag_embed(diagonal.clamp(min=D.finfo(diagonal.dtype).eps))
        rows, cols = retrograd.tril_indices(p, p, offset=-1)
        below = retrograd.Size(sample_shape) + self._batch_shape + (p * (p - 1) // 2,)
        noise[..., rows, cols] = _standard_normal(below, noise.dtype)
        factor = self._unbroadcasted_scale_tril @ noise
        return factor @ factor.mT

    def rsample(self, sample_shape: _size = (), max_try_correction: int | None = None) -> Tensor:
        """A reparameterised sample; draws found singular are redrawn, with a warning, up to `max_try_correction` (10)
        times, and one may still be returned. As in torch 2.13, whose first test marks the draws that pass the
        positive-definite check: every call warns and draws its samples twice (the same random numbers as torch)."""
        sample = self._bartlett_sampling(sample_shape)
        batch_dims = tuple(range(-len(self._batch_shape), 0))
        redraw = self.support.check(sample)
        if batch_dims:
            redraw = redraw.amax(batch_dims)
        if redraw.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(10 if max_try_correction is None else max_try_correction):
                redrawn = self._bartlett_sampling(redraw[redraw].shape)
                sample[redraw] = redrawn
                still = ~self.support.check(redrawn)
                if batch_dims:
                    still = still.amax(batch_dims)
                redraw[redraw.clone()] = still
                if not redraw.any():
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = retrograd.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - retrograd.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + retrograd.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + retrograd.mvlgamma(y + (p + 1) / 2, p=p))
