"""The binomial distribution: the number of successes in total_count Bernoulli trials."""

from typing import ClassVar

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.host_draws import draw, host
from pyrt.distributions.probs_or_logits import ProbsOrLogits

__all__ = ["Binomial"]


def _homogeneous_count(total_count, what):
    """total_count's single value as an int (NotImplementedError where it varies)."""
    count = int(total_count.max().item())
    if total_count.min().item() != count:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return count


class Binomial(ProbsOrLogits, Distribution):
    """Binomial(total_count=1, probs=None, logits=None): the count of successes in
    total_count independent trials each succeeding with probability probs (or
    sigmoid(logits)); exactly one of probs and logits is given."""

    arg_constraints: ClassVar[dict] = {"total_count": constraints.nonnegative_integer,
                                       "probs": constraints.unit_interval,
                                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits, total_count=total_count)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        counts = np.asarray(np.rint(host(self.total_count.detach())), np.int64)
        return draw("binomial", shape, counts, self.probs.detach(), like=self._param)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = (n + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (n - value + 1).lgamma()
        # k log(p) + (n - k) log(1 - p) = k logit - n log(1 + e^logit), the softplus written
        # as max(logit, 0) + log1p(e^-|logit|) so that it never overflows (max written so
        # that its gradient at 0 is 1/2, as PyTorch's)
        logits = self.logits
        positive_part = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize_term = (n * positive_part
                          + n * (-self.logits.abs()).exp().log1p() - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        """By summing -p log p over the support (total_count must be the same everywhere)."""
        _homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        count = _homogeneous_count(self.total_count, "enumerate_support")
        values = pyrt.arange(1 + count, device=self._param.device).float()
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values
