"""The categorical distribution over {0, ..., K - 1}, parameterized by probs or logits over
the last dim."""

from typing import ClassVar

import numpy as np

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.host_draws import constant, host, uniform
from pyrt.distributions.probs_or_logits import ProbsOrLogits

__all__ = ["Categorical"]


class Categorical(ProbsOrLogits, Distribution):
    """Categorical(probs=None, logits=None): category i with probability probs[..., i]
    (normalized to sum to 1) or softmax(logits)[..., i]; exactly one of the two is given, at
    least one-dimensional, the last dim indexing the categories."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.simplex,
                                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        if param.dim() < 1:
            name = "probs" if probs is not None else "logits"
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = self._param = param / param.sum(-1, keepdim=True)
        else:
            # normalized: log probabilities
            self.logits = self._param = param - param.logsumexp(dim=-1, keepdim=True)
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Categorical, batch_shape, _instance, shared=("_num_events",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return pyrt.full(self._extended_shape(), float("nan"), device=self._param.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return pyrt.full(self._extended_shape(), float("nan"), device=self._param.device)

    def sample(self, sample_shape=()):
        """int64 category indices, by inverting the cumulative probabilities at uniform
        draws."""
        shape = self._extended_shape(sample_shape)
        cdf = np.cumsum(host(self.probs.detach()), -1)
        cdf = cdf / cdf[..., -1:]
        u = uniform(shape)
        # the index of the first category whose cumulative probability exceeds u
        index = (u[..., None] >= np.broadcast_to(cdf, shape + (self._num_events,))).sum(-1)
        index = np.minimum(index, self._num_events - 1)
        return constant(index, self._param, np.int64)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = pyrt.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(np.float32).min)
        logits = self.logits.clamp(min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        values = pyrt.arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values
