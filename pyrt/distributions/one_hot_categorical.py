"""The one-hot categorical distribution: a Categorical draw written as a one-hot vector; and
its straight-through variant, whose rsample passes gradients to the probabilities."""

from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.categorical import Categorical
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.probs_or_logits import CategoricalParams

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(CategoricalParams, Distribution):
    """OneHotCategorical(probs=None, logits=None): one-hot vectors of the K categories of
    Categorical(probs, logits); the event shape is (K,)."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.simplex,
                                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=False)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(OneHotCategorical, batch_shape, _instance, inner=("_categorical",))

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return pyrt.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).float()

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return pyrt.nn.functional.one_hot(indices, self._event_shape[0]).float()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = pyrt.eye(n, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        if expand:
            values = values.expand(n, *self._batch_shape, n)
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the one-hot sample plus (probs - probs.detach()):
    the straight-through estimator (Bengio et al., 2013) of the gradient for probs."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
