"""The two-parameter Weibull distribution: scale E^(1/concentration), E ~ Exponential(1)."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.exponential import Exponential
from pyrt.distributions.gumbel import EULER_GAMMA
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import AffineTransform, PowerTransform
from pyrt.distributions.utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): cdf 1 - exp(-(x / scale)^concentration), x > 0."""

    arg_constraints: ClassVar[dict] = {"scale": constraints.positive,
                                       "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration,
                                                       names=("scale", "concentration"))
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(self.scale * 0 + 1, validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = tuple(batch_shape)
        new.scale = self.scale.expand(*batch_shape)
        new.concentration = self.concentration.expand(*batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        super(Weibull, new).__init__(base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * (((c - 1) / c).log() / c).exp()

    @property
    def variance(self):
        return self.scale.pow(2) * ((1 + 2 * self.concentration_reciprocal).lgamma().exp()
                                    - (2 * (1 + self.concentration_reciprocal).lgamma()).exp())

    def entropy(self):
        return (EULER_GAMMA * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)
