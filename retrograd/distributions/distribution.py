"""The Distribution base class and the helpers every distribution shares (torch/distributions/distribution.py
and utils.py): shapes, argument and sample validation with torch's ValueError texts, broadcasting of parameters,
the probs/logits conversions and lazily computed parameters."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import update_wrapper
from numbers import Number
from operator import attrgetter
from typing import Any

import retrograd

from .. import _dtype as D
from .._tensor import Tensor
from . import constraints

_size = Sequence[int]


class lazy_property:  # noqa: N801 - torch's name
    """A parameter computed from another on first use (probs from logits, ...) and then kept on the instance."""

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with retrograd.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def forwarded(holder: str, name: str) -> property:
    """A read-only property answering with the `name` of the object in attribute `holder` (a wrapped
    distribution or categorical), so the wrappers do not each spell the same three-line property out."""
    def get(self: Any) -> Any:
        return getattr(getattr(self, holder), name)

    return property(get, doc=f"self.{holder}.{name}")


# the mean or mode of a distribution centred or peaked at its `loc`, written once instead of a property per class
at_loc = property(attrgetter("loc"), doc="self.loc")


def broadcast_all(*values: Tensor | Number) -> tuple[Tensor, ...]:
    """Broadcast tensors and numbers together; numbers take the first tensor's dtype (the default dtype if none)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), D.get_default_dtype())
    tensors = [v if isinstance(v, Tensor) else retrograd.tensor(v, dtype=dtype) for v in values]
    return tuple(retrograd.broadcast_tensors(*tensors))


def _batch_shape_of(first: Tensor, *given: Tensor | Number) -> retrograd.Size:
    """The batch shape of broadcast parameters: () when every given parameter was a Python number."""
    return retrograd.Size() if all(isinstance(v, Number) for v in given) else first.size()


def _standard_normal(shape: _size, dtype: D.dtype) -> Tensor:
    """Draws of N(0, 1) of `shape`, outside any graph."""
    with retrograd.no_grad():
        return retrograd.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the `dim` rightmost dims of `value`."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for a binary variable, softmax over the last dim otherwise."""
    return retrograd.sigmoid(logits) if is_binary else retrograd.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped into [eps, 1 - eps] of their dtype, so that their logs stay finite."""
    eps = D.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: log-odds for a binary variable, log-probabilities otherwise."""
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


def _tril_mask(n: int, diag: int) -> Tensor:
    """The n x n bool mask of the entries on or below diagonal `diag`."""
    arange = retrograd.arange(n)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (a batch of) square matrices on or below diagonal `diag`, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of tril_matrix_to_vec: square matrices, zero above diagonal `diag`, filled in row order."""
    # n is the positive root of n^2 + (1 + 2 diag) n - |diag| (diag + 1) - 2 len(vec) = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > D.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    mat[..., _tril_mask(n, diag)] = vec
    return mat


class Distribution:
    """A batch of probability distributions of `batch_shape`, each over events of `event_shape`."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for every distribution made later."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: _size = (), event_shape: _size = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = retrograd.Size(batch_shape)
        self._event_shape = retrograd.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()

    def _validate_parameters(self) -> None:
        """Check every parameter against its constraint in `arg_constraints`, with torch's ValueError text."""
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # cannot be checked
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue  # not constructed: it is computed from a checked one
            value = getattr(self, param)
            if not retrograd._is_all_true(constraint.check(value)):
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to satisfy the constraint {constraint!r}, but found "
                                 f"invalid values:\n{value}")

    _params: tuple[str, ...] = ()  # the tensor parameters `expand` expands (those that have been made)

    def expand(self, batch_shape: _size, _instance: Distribution | None = None) -> Distribution:
        """A distribution with the parameters expanded (not copied) to `batch_shape`; parameters are not checked
        again."""
        if not self._params:
            raise NotImplementedError
        library_class = next(c for c in type(self).__mro__ if c.__module__.startswith(__package__))
        new = self._get_checked_instance(library_class, _instance)
        batch_shape = retrograd.Size(batch_shape)
        for name in self._params:
            if name in self.__dict__:
                value = self.__dict__[name]
                setattr(new, name, value.expand(batch_shape + value.shape[len(self._batch_shape):]))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> retrograd.Size:
        return self._batch_shape

    @property
    def event_shape(self) -> retrograd.Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: _size = ()) -> Tensor:
        """A sample (or a batch of `sample_shape` samples) outside the graph."""
        with retrograd.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: _size = ()) -> Tensor:
        """A reparameterised sample: gradients flow back to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """n samples, deprecated: torch's `@deprecated` decorator warns FutureWarning at the caller's line."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(retrograd.Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: _size = ()) -> retrograd.Size:
        """The shape of a sample: sample_shape + batch_shape + event_shape."""
        return retrograd.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value: Tensor) -> None:
        """Check that `value` fits the event and batch shapes and lies in the support (torch's ValueError texts)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.size(), retrograd.Size(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not retrograd._is_all_true(support.check(value)):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls: type, _instance: Distribution | None = None) -> Distribution:
        """A blank instance for `expand` (torch's refusal for subclasses with their own __init__)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        params = [k for k in self.arg_constraints if k in self.__dict__]
        shown = (f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                 for p in params)
        return f"{type(self).__name__}({', '.join(shown)})"


class ExponentialFamily(Distribution):
    """A distribution of the exponential family p(x; theta) = h(x) exp(<theta, t(x)> - F(theta)), described by its
    natural parameters theta, log-normaliser F and E[log h(x)] (`_mean_carrier_measure`). From them come a generic
    entropy and the Bregman-divergence KL between two members of one family (kl.py), as in torch."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """F(theta) - <theta, grad F(theta)> - E[log h(x)], grad F taken by autograd."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = retrograd.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for nparam, g in zip(nparams, gradients):
            result = result - (nparam * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
