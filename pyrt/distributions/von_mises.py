"""The von Mises distribution: a normal distribution wrapped onto the circle."""

import math
from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.host_draws import draw
from pyrt.distributions.utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def log_bessel_i0(x):
    """log I0(x) for x > 0, as log(i0e(x)) + x (the exponentially scaled form never
    overflows)."""
    return pyrt.special.i0e(x).log() + x


def log_bessel_i1(x):
    """log I1(x) for x > 0."""
    return pyrt.special.i1e(x).log() + x


class VonMises(Distribution):
    """VonMises(loc, concentration): density exp(concentration cos(x - loc)) /
    (2 pi I0(concentration)) of an angle x; loc and values may be any real numbers, taken
    modulo 2 pi. Samples lie in [-pi, pi)."""

    arg_constraints: ClassVar[dict] = {"loc": constraints.real,
                                       "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration,
                                                     names=("loc", "concentration"))
        super().__init__(tuple(self.loc.shape), (), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(VonMises, batch_shape, _instance)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - log_bessel_i0(self.concentration)

    def sample(self, sample_shape=()):
        """numpy's von Mises sampler (Best and Fisher's rejection method), shifted by loc
        and wrapped into [-pi, pi)."""
        shape = self._extended_shape(sample_shape)
        x = draw("vonmises", shape, self.loc.detach() * 0, self.concentration.detach(),
                 like=self.loc)
        return (x + math.pi + self.loc.detach()).remainder(2 * math.pi) - math.pi

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance, 1 - I1(concentration) / I0(concentration)."""
        return 1 - (log_bessel_i1(self.concentration)
                    - log_bessel_i0(self.concentration)).exp()
