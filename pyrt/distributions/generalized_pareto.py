"""The generalized Pareto distribution, the law of the excesses over a high threshold: its
survival function is (1 + xi z)^(-1/xi) with z = (x - loc) / scale and xi the
concentration, and exp(-z) at xi = 0. Samples invert the cdf at uniform draws, so they are
reparameterized."""

import math
from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.utils import broadcast_all, standard_uniform

__all__ = ["GeneralizedPareto"]


def _is_zero(value):
    # torch.isclose(value, 0) with its default tolerances: |value| <= atol = 1e-8.
    return value.abs() <= 1e-8


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration): on [loc, inf) for concentration >= 0 and
    on [loc, loc - scale / concentration] below 0; concentration 0 is the exponential
    distribution shifted to loc, -1 the uniform one."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real, "scale": constraints.positive,
                                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(
            loc, scale, concentration, names=("loc", "scale", "concentration"))
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, _instance)

    def _safe_concentration(self):
        """(whether the concentration is 0, the concentration with 1 where it is 0): the
        xi != 0 formulas divide by xi, and where() would pass their NaN gradients on."""
        eq_zero = _is_zero(self.concentration)
        return eq_zero, pyrt.where(eq_zero, 1.0, self.concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self.loc))

    def log_prob(self, value):
        """-log scale - (1 / xi + 1) log(1 + xi z), or -log scale - z at xi = 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._safe_concentration()
        y = 1 / xi + 1
        # y = 0 (xi = -1, the uniform case) leaves 0 * log(0) at the upper end: take 0.
        where_nonzero = pyrt.where(y == 0, y, y * (xi * z).log1p())
        return -self.scale.log() - pyrt.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """log P(X > value): -log(1 + xi z) / xi, or -z at xi = 0."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._safe_concentration()
        return pyrt.where(eq_zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        """loc + scale ((1 - u)^(-xi) - 1) / xi, or loc - scale log(1 - u) at xi = 0."""
        eq_zero, xi = self._safe_concentration()
        log1m_u = (-value).log1p()
        where_nonzero = self.loc + self.scale / xi * (-xi * log1m_u).expm1()
        return pyrt.where(eq_zero, self.loc - self.scale * log1m_u, where_nonzero)

    @property
    def mean(self):
        """loc + scale / (1 - xi), NaN for xi >= 1."""
        valid = self.concentration < 1
        xi = pyrt.where(valid, self.concentration, 0.5)
        return pyrt.where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self):
        """scale^2 / ((1 - xi)^2 (1 - 2 xi)), NaN for xi >= 1/2."""
        valid = self.concentration < 0.5
        xi = pyrt.where(valid, self.concentration, 0.25)
        return pyrt.where(valid, self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)),
                          math.nan)

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        """log scale + xi + 1."""
        return (self.scale.log() + self.concentration + 1).expand(*self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        negative = self.concentration < 0
        xi = pyrt.where(negative, self.concentration, -1.0)
        upper = pyrt.where(negative, self.loc - self.scale / xi, math.inf)
        return constraints.interval(self.loc, upper)
