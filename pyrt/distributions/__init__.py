"""Probability distributions with torch.distributions' API: parameterized families with
sample/rsample, log_prob, cdf, icdf, entropy and moments, batched over broadcast parameters;
constraints on parameters and supports; transforms and transformed distributions; and the
KL divergence between pairs of families. Draws come from pyrt's generator (pyrt.manual_seed);
log densities and reparameterized samples are built from pyrt's differentiable ops, so that
gradients reach the parameters.

How to add a family: see distribution.py's docstring; register its KL divergences with
``@register_kl(P, Q)`` and its support's transform with ``biject_to.register``.
"""

from pyrt.distributions import constraints, transforms
from pyrt.distributions.bernoulli import Bernoulli
from pyrt.distributions.beta import Beta
from pyrt.distributions.binomial import Binomial
from pyrt.distributions.categorical import Categorical
from pyrt.distributions.cauchy import Cauchy
from pyrt.distributions.chi2 import Chi2
from pyrt.distributions.constraint_registry import biject_to, transform_to
from pyrt.distributions.continuous_bernoulli import ContinuousBernoulli
from pyrt.distributions.dirichlet import Dirichlet
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.exponential import Exponential
from pyrt.distributions.fishersnedecor import FisherSnedecor
from pyrt.distributions.gamma import Gamma
from pyrt.distributions.generalized_pareto import GeneralizedPareto
from pyrt.distributions.geometric import Geometric
from pyrt.distributions.gumbel import Gumbel
from pyrt.distributions.half_cauchy import HalfCauchy
from pyrt.distributions.half_normal import HalfNormal
from pyrt.distributions.independent import Independent
from pyrt.distributions.inverse_gamma import InverseGamma
from pyrt.distributions.kl import kl_divergence, register_kl
from pyrt.distributions.kumaraswamy import Kumaraswamy
from pyrt.distributions.laplace import Laplace
from pyrt.distributions.lkj_cholesky import LKJCholesky
from pyrt.distributions.log_normal import LogNormal
from pyrt.distributions.logistic_normal import LogisticNormal
from pyrt.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from pyrt.distributions.mixture_same_family import MixtureSameFamily
from pyrt.distributions.multinomial import Multinomial
from pyrt.distributions.multivariate_normal import MultivariateNormal
from pyrt.distributions.negative_binomial import NegativeBinomial
from pyrt.distributions.normal import Normal
from pyrt.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from pyrt.distributions.pareto import Pareto
from pyrt.distributions.poisson import Poisson
from pyrt.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from pyrt.distributions.relaxed_categorical import (
    ExpRelaxedCategorical,
    RelaxedOneHotCategorical,
)
from pyrt.distributions.student_t import StudentT
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import (
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
from pyrt.distributions.uniform import Uniform
from pyrt.distributions.von_mises import VonMises
from pyrt.distributions.weibull import Weibull
from pyrt.distributions.wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
    "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor",
    "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky",
    "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
    "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart", "biject_to",
    "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
    "transforms"
]
