"""The Bernoulli distribution over {0, 1}, parameterized by probs or logits."""

from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.probs_or_logits import ProbsOrLogits
from pyrt.distributions.utils import broadcast_all

__all__ = ["Bernoulli"]


def softplus(x):
    """log(1 + exp(x)), without overflow."""
    return pyrt.nn.functional.softplus(x)


def binary_log_prob(logits, value):
    """value log(p) + (1 - value) log(1 - p) for p = sigmoid(logits): the negated binary
    cross entropy with logits."""
    return value * logits - softplus(logits)


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """Bernoulli(probs=None, logits=None): 1 with probability probs (or sigmoid(logits)), else
    0; exactly one of the two is given."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.unit_interval,
                                       "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        """1 where probs > 1/2, 0 where below, NaN at 1/2."""
        mode = (self.probs >= 0.5).float()
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return pyrt.bernoulli(self.probs.detach().expand(*shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value, names=("logits", "value"))
        return binary_log_prob(logits, value)

    def entropy(self):
        return -binary_log_prob(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = pyrt.arange(2, device=self._param.device).float()
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values

    @property
    def _natural_params(self):
        return (self.probs.logit(),)

    def _log_normalizer(self, x):
        return x.exp().log1p()
