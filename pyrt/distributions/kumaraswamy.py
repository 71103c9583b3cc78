"""The Kumaraswamy distribution on [0, 1]: (1 - U^(1/b))^(1/a) for U uniform on [0, 1]."""

from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.gumbel import EULER_GAMMA
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import AffineTransform, PowerTransform
from pyrt.distributions.uniform import Uniform
from pyrt.distributions.utils import broadcast_all

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n / a, b) for X ~ Kumaraswamy(a, b)."""
    arg1 = 1 + n / a
    log_value = arg1.lgamma() + b.lgamma() - (arg1 + b).lgamma()
    return b * log_value.exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1, concentration0): density a b x^(a-1) (1 - x^a)^(b-1) for
    a = concentration1 > 0, b = concentration0 > 0."""

    arg_constraints: ClassVar[dict] = {"concentration1": constraints.positive,
                                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(
            concentration1, concentration0, names=("concentration1", "concentration0"))
        c0 = self.concentration0
        base_dist = Uniform(pyrt.zeros_like(c0), pyrt.ones_like(c0),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=c0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(*batch_shape)
        new.concentration0 = self.concentration0.expand(*batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """((a - 1) / (a b - 1))^(1/a), NaN where a < 1 or b < 1 (PyTorch's formula gives NaN
        for every a > 1, b > 1 as well)."""
        a, b = self.concentration1, self.concentration0
        undefined = (b < 1) | (a < 1)
        ratio = ((a - 1) / (a * b - 1)).masked_fill(undefined, 1.0)
        return (ratio.log() / a).exp().masked_fill(undefined, float("nan"))

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = (self.concentration0 + 1).digamma() + EULER_GAMMA
        return t0 + t1 * h0 - self.concentration1.log() - self.concentration0.log()
