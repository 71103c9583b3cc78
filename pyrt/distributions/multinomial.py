"""The multinomial distribution: the counts of each of K categories in total_count
independent categorical draws."""

from typing import ClassVar

import numpy as np

from pyrt.distributions import constraints
from pyrt.distributions.binomial import Binomial
from pyrt.distributions.categorical import Categorical
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.host_draws import constant, host
from pyrt.distributions.probs_or_logits import CategoricalParams
from pyrt.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(CategoricalParams, Distribution):
    """Multinomial(total_count=1, probs=None, logits=None): count vectors over the last dim
    of probs (normalized) or logits, summing to total_count (a single int). log_prob also
    scores vectors of any total, as PyTorch's."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.simplex,
                                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, (int, np.integer)) or isinstance(total_count, bool):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=False)
        self._binomial = Binomial(total_count=self.total_count, probs=self.probs,
                                  validate_args=False)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # (the binomial marginals are batched over the categories too: event_shape trails)
        return self._expanded(Multinomial, batch_shape, _instance, shared=("total_count",),
                              inner=("_categorical", "_binomial"))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        from pyrt.tensor import generator

        shape = self._extended_shape(sample_shape)
        probs = np.broadcast_to(host(self.probs.detach()), shape)
        probs = probs / probs.sum(-1, keepdims=True)
        counts = generator().multinomial(self.total_count, probs)
        return constant(counts, self._param)

    def entropy(self):
        """n H(categorical) - log n! + sum_i E[log x_i!], the last by summing over each
        count's binomial marginal."""
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - float(np.log(np.arange(1, n + 1)).sum())
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return term1 + (binomial_probs * weights).sum(0).sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value, names=("logits", "value"))
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        # 0 * -inf counts as 0 (a category of probability 0 never drawn)
        logits = logits.masked_fill((value == 0) & (logits == -float("inf")), 0)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
