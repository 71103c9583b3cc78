"""The Cauchy (Lorentz) distribution."""

import math
from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.utils import broadcast_all, standard_draws

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)); it has no mean
    (NaN) and an infinite variance."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale, names=("loc", "scale"))
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Cauchy, batch_shape, _instance)

    @property
    def mean(self):
        return self.loc * 0 + math.nan

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.loc * 0 + math.inf

    def rsample(self, sample_shape=()):
        eps = standard_draws("standard_cauchy", self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
