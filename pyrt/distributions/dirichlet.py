"""The Dirichlet distribution over the probability simplex, with reparameterized samples
(gamma_sampling.sample_dirichlet)."""

from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.gamma_sampling import sample_dirichlet
from pyrt.distributions.utils import as_float_tensor

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): density prod_i x_i^(c_i - 1) / B(c) on the simplex, for
    concentration c > 0 of at least one dim, the last one the event's."""

    arg_constraints: ClassVar[dict] = {
        "concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        concentration = as_float_tensor(concentration, "concentration")
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return sample_dirichlet(self.concentration.expand(*shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ((c - 1).xlogy(value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        """(c - 1) / sum(c - 1) clamped at 0; where every c < 1, the vertex of the first
        category (as PyTorch)."""
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, keepdim=True)
        vertex = pyrt.nn.functional.one_hot(
            pyrt.zeros(tuple(mode.shape[:-1]), device=mode.device).long(),
            mode.shape[-1]).float()
        mask = (self.concentration < 1).all(-1, keepdim=True)
        return pyrt.where(mask, vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        con0 = c.sum(-1, keepdim=True)
        return c * (con0 - c) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
