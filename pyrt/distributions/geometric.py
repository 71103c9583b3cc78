"""The geometric distribution: the number of failures before the first success."""

from typing import ClassVar

import numpy as np

from pyrt.distributions import constraints
from pyrt.distributions.bernoulli import binary_log_prob
from pyrt.distributions.distribution import Distribution, _all_true
from pyrt.distributions.host_draws import constant, host, uniform
from pyrt.distributions.probs_or_logits import ProbsOrLogits
from pyrt.distributions.utils import broadcast_all, tiny

__all__ = ["Geometric"]


class Geometric(ProbsOrLogits, Distribution):
    """Geometric(probs=None, logits=None): P(k) = (1 - p)^k p for k = 0, 1, 2, ..., with
    success probability p = probs (0 < p <= 1) or sigmoid(logits)."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.unit_interval,
                                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(tuple(param.shape), validate_args=validate_args)
        if self._validate_args and probs is not None and not _all_true(self.probs > 0):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                             f"positive but found invalid values:\n{self.probs}")

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return self.probs * 0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        """floor(log(u) / log(1 - p)) for u uniform on [tiny, 1)."""
        shape = self._extended_shape(sample_shape)
        u = np.maximum(uniform(shape), tiny())
        with np.errstate(divide="ignore"):
            value = np.floor(np.log(u) / np.log1p(-host(self.probs.detach())))
        return constant(value, self.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs, names=("value", "probs"))
        # 0 log(0) = 0 where probs is 1 and value 0
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return -binary_log_prob(self.logits, self.probs) / self.probs
