"""The half-Cauchy distribution: |X| for X ~ Cauchy(0, scale)."""

import math

from pyrt.distributions.cauchy import Cauchy
from pyrt.distributions.half_distribution import HalfDistribution

__all__ = ["HalfCauchy"]


class HalfCauchy(HalfDistribution):
    """HalfCauchy(scale): density 2 Cauchy(x; 0, scale) on x >= 0."""

    _base_family = Cauchy

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * 0 + math.inf

    @property
    def variance(self):
        return self.scale * 0 + math.inf
