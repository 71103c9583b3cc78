"""HalfDistribution: |X| for X ~ F(0, scale) of a symmetric family F, the part HalfNormal and
HalfCauchy share. Folding the density about 0 doubles it on x >= 0, so log_prob adds log 2,
the cdf is 2 F(x) - 1, the icdf is F's at (p + 1) / 2 and the entropy loses log 2."""

import math
from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import AbsTransform

__all__ = ["HalfDistribution"]


class HalfDistribution(TransformedDistribution):
    """The absolute value of `_base_family`(0, scale) draws (a subclass names the family,
    whose constructor takes loc and scale)."""

    arg_constraints: ClassVar[dict] = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base_family = None

    def __init__(self, scale, validate_args=None):
        base_dist = self._base_family(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return self.scale * 0

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return log_prob.masked_fill(value < 0, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
