"""The inverse gamma distribution: 1 / X for X ~ Gamma(concentration, rate)."""

import math
from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.gamma import Gamma
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """InverseGamma(concentration, rate): density rate^c x^(-c-1) e^(-rate / x) / Gamma(c) on
    x > 0."""

    arg_constraints: ClassVar[dict] = {"concentration": constraints.positive,
                                       "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = pyrt.full((), -1.0, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        """rate / (concentration - 1), infinite where concentration <= 1."""
        result = self.rate / (self.concentration - 1)
        return result.masked_fill(self.concentration <= 1, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        """rate^2 / ((c - 1)^2 (c - 2)), infinite where c <= 2."""
        c = self.concentration
        result = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return result.masked_fill(c <= 2, math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
