"""The negative binomial distribution: the number of successes before total_count failures,
sampled as a Poisson draw whose rate is a gamma draw."""

from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.gamma import Gamma
from pyrt.distributions.host_draws import draw
from pyrt.distributions.probs_or_logits import ProbsOrLogits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsOrLogits, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): P(k) = C(k + r - 1, k)
    p^k (1 - p)^r for r = total_count > 0 failures and success probability p = probs (or
    sigmoid(logits)); exactly one of probs and logits is given."""

    arg_constraints: ClassVar[dict] = {"total_count": constraints.greater_than_eq(0),
                                       "probs": constraints.half_open_interval(0.0, 1.0),
                                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits, total_count=total_count)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        with pyrt.no_grad():
            # not validated: total_count may be 0
            gamma = Gamma(self.total_count, (-self.logits).exp(), validate_args=False)
            rate = gamma.sample(sample_shape)
            return draw("poisson", tuple(rate.shape), rate, like=rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = pyrt.nn.functional.logsigmoid
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-(self.total_count + value).lgamma() + (1.0 + value).lgamma()
                             + self.total_count.lgamma())
        # total_count = value = 0 has probability 1, though lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
