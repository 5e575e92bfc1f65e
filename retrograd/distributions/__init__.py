"""torch.distributions: parameterised probability distributions for sampling and scoring (VAEs, policy
gradients, Bayesian models), with torch's classes, constraints, transforms and KL divergences.

Built on retrograd's public ops, so log_prob, entropy, moments, cdf/icdf and KL give torch's numbers and
gradients (checked against torch in tests/test_distributions.py); `rsample` is reparameterised, so gradients
flow from samples to parameters. Samples come from retrograd's generator, which draws torch's numbers
(Note [torch's CPU random streams]): Normal, Uniform, Bernoulli, Categorical, Exponential, MultivariateNormal,
Gamma, Beta, Dirichlet, Poisson, Binomial, ... sample torch's values for the same seed (those built on log or exp
to within float rounding). Validation follows torch (on unless `python -O` or
`Distribution.set_default_validate_args(False)`), with its ValueError texts.
"""

import sys

from . import (
    constraints,  # noqa: F401 - an attribute as torch's, which `import *` does not bind (not in __all__)
    distribution,
    transforms,  # noqa: F401 - as constraints
)
from .compound import Independent, MixtureSameFamily
from .constraint_registry import biject_to, transform_to
from .continuous import (
    Beta,
    Cauchy,
    Chi2,
    Dirichlet,
    Exponential,
    FisherSnedecor,
    Gamma,
    GeneralizedPareto,
    Laplace,
    Normal,
    StudentT,
    Uniform,
    VonMises,
)
from .discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    ContinuousBernoulli,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from .distribution import Distribution, ExponentialFamily
from .kl import kl_divergence, register_kl
from .matrix import LKJCholesky, Wishart
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .transformed import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    LogNormal,
    Pareto,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
    TransformedDistribution,
    Weibull,
)
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical", "Cauchy",
    "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
    "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
    "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal",
    "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform", "PowerTransform",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "identity_transform",
    "kl_divergence", "register_kl", "transform_to",
]  # torch's: `import *` binds neither the submodules nor the relaxed distributions' Exp/Logit bases

# torch defines each distribution in a module of its own (torch.distributions.normal, ...); here they are grouped
# by kind. torch's module names are registered as aliases of the modules that hold them, so that
# `from torch.distributions.normal import Normal` runs unchanged, and each class names torch's module as its own
# (`__module__`): a pickled distribution then loads in torch, and messages print torch's class paths.
_TORCH_MODULES = {
    "independent": ["Independent"], "mixture_same_family": ["MixtureSameFamily"], "beta": ["Beta"],
    "cauchy": ["Cauchy"], "chi2": ["Chi2"], "dirichlet": ["Dirichlet"], "exponential": ["Exponential"],
    "fishersnedecor": ["FisherSnedecor"], "gamma": ["Gamma"], "generalized_pareto": ["GeneralizedPareto"],
    "laplace": ["Laplace"], "normal": ["Normal"], "studentT": ["StudentT"], "uniform": ["Uniform"],
    "von_mises": ["VonMises"], "bernoulli": ["Bernoulli"], "binomial": ["Binomial"], "categorical": ["Categorical"],
    "continuous_bernoulli": ["ContinuousBernoulli"], "geometric": ["Geometric"], "multinomial": ["Multinomial"],
    "negative_binomial": ["NegativeBinomial"], "one_hot_categorical": ["OneHotCategorical",
                                                                       "OneHotCategoricalStraightThrough"],
    "poisson": ["Poisson"], "exp_family": ["ExponentialFamily"], "lkj_cholesky": ["LKJCholesky"],
    "wishart": ["Wishart"], "lowrank_multivariate_normal": ["LowRankMultivariateNormal"], "gumbel": ["Gumbel"],
    "half_cauchy": ["HalfCauchy"], "half_normal": ["HalfNormal"], "inverse_gamma": ["InverseGamma"],
    "kumaraswamy": ["Kumaraswamy"], "log_normal": ["LogNormal"], "logistic_normal": ["LogisticNormal"],
    "pareto": ["Pareto"], "relaxed_bernoulli": ["RelaxedBernoulli"],
    "relaxed_categorical": ["RelaxedOneHotCategorical"], "transformed_distribution": ["TransformedDistribution"],
    "weibull": ["Weibull"],
}
for _name, _classes in _TORCH_MODULES.items():
    _module = sys.modules[globals()[_classes[0]].__module__]  # the module that holds them
    sys.modules.setdefault(f"{__name__}.{_name}", _module)
    globals().setdefault(_name, _module)  # torch.distributions.normal is an attribute too
    for _class in _classes:
        globals()[_class].__module__ = f"{__name__}.{_name}"
sys.modules.setdefault(f"{__name__}.utils", distribution)
globals().setdefault("utils", distribution)
