"""The Gumbel (type-I extreme value) distribution, made as a transformed uniform:
loc - scale log(-log u)."""

import math
from typing import ClassVar

import numpy as np

from pyrt.distributions import constraints
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import AffineTransform, ExpTransform
from pyrt.distributions.uniform import Uniform
from pyrt.distributions.utils import broadcast_all

__all__ = ["Gumbel"]

EULER_GAMMA = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): cdf exp(-exp(-(x - loc) / scale))."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale, names=("loc", "scale"))
        info = np.finfo(np.float32)
        base = Uniform(self.loc * 0 + float(info.tiny), self.loc * 0 + float(1 - info.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-1),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(*batch_shape)
        new.scale = self.scale.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        """(loc - value) / scale - exp((loc - value) / scale) - log(scale), in closed form."""
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + EULER_GAMMA)
