"""torch.distributions.constraint_registry: `biject_to(constraint)` and `transform_to(constraint)` give a transform
from unconstrained reals onto a constraint's set (a bijection, or any map onto it), as torch's registries do; used
to optimise constrained parameters in an unconstrained space."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes to factories of transforms onto them."""

    def __init__(self) -> None:
        self._registry: dict[type, Callable] = {}

    def register(self, constraint: type | constraints.Constraint, factory: Callable | None = None) -> Callable:
        """Register `factory(constraint) -> Transform` for a constraint class (or an instance's class); a
        decorator when `factory` is left out."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _register_both(*kinds: constraints.Constraint | type) -> Callable:
    """Register one factory in both tables for each of `kinds`."""

    def decorator(factory: Callable) -> Callable:
        for kind in kinds:
            biject_to.register(kind, factory)
            transform_to.register(kind, factory)
        return factory

    return decorator


@_register_both(constraints.real)
def _transform_to_real(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@_register_both(constraints.positive, constraints.nonnegative)
def _transform_to_positive(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.ExpTransform()


@_register_both(constraints.greater_than, constraints.greater_than_eq)
def _transform_to_greater_than(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_register_both(constraints.less_than)
def _transform_to_less_than(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@_register_both(constraints.interval, constraints.half_open_interval)
def _transform_to_interval(constraint: constraints.Constraint) -> transforms.Transform:
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, Number) and lower == 0 and isinstance(upper, Number) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lower,
                                                                                                  upper - lower)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.SoftmaxTransform()


@_register_both(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


def _register_piecewise(registry: ConstraintRegistry) -> None:
    """Map cat and stack constraints to Cat and Stack transforms of `registry`'s transform for each piece."""
    registry.register(constraints.cat, lambda c: transforms.CatTransform([registry(p) for p in c.cseq], c.dim,
                                                                          c.lengths))
    registry.register(constraints.stack, lambda c: transforms.StackTransform([registry(p) for p in c.cseq], c.dim))


_register_piecewise(biject_to)
_register_piecewise(transform_to)


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()
