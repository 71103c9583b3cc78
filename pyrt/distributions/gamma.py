"""The gamma distribution, with reparameterized samples (gamma_sampling.standard_gamma)."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.gamma_sampling import standard_gamma
from pyrt.distributions.utils import broadcast_all, tiny

__all__ = ["Gamma"]


def clamp_tiny(value):
    """`value` with entries below the smallest normal float32 raised to it, the gradient
    passing unchanged (as PyTorch's in-place clamp of the detached sample)."""
    return value + (value.detach().clamp(min=tiny()) - value.detach())


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^c x^(c-1) e^(-rate x) / Gamma(c) on x > 0."""

    arg_constraints: ClassVar[dict] = {"concentration": constraints.positive,
                                       "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate,
                                                      names=("concentration", "rate"))
        super().__init__(tuple(self.concentration.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Gamma, batch_shape, _instance)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return clamp_tiny(value)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return c.xlogy(self.rate) + (c - 1).xlogy(value) - self.rate * value - c.lgamma()

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.concentration.igamma(self.rate * value)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()
