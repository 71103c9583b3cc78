"""The half-normal distribution: |X| for X ~ Normal(0, scale)."""

import math

from pyrt.distributions.half_distribution import HalfDistribution
from pyrt.distributions.normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(HalfDistribution):
    """HalfNormal(scale): density 2 N(x; 0, scale) on x >= 0."""

    _base_family = Normal

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
