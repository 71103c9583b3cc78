"""Relaxed (concrete, Gumbel-softmax) categorical distributions: a continuous,
reparameterized stand-in for one-hot categorical draws, softmax((logits + Gumbel noise) /
temperature). ExpRelaxedCategorical gives the log of such a draw; RelaxedOneHotCategorical
the draw itself, on the simplex."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.categorical import Categorical
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.probs_or_logits import CategoricalParams, RelaxedParams
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import ExpTransform
from pyrt.distributions.utils import as_float_tensor, clamp_probs, standard_uniform

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(CategoricalParams, Distribution):
    """ExpRelaxedCategorical(temperature, probs=None, logits=None): the log of a
    RelaxedOneHotCategorical draw, a vector over the K categories (the event shape)."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.simplex,
                                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.independent(constraints.real, 1)
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=False)
        self.temperature = as_float_tensor(temperature, "temperature")
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(ExpRelaxedCategorical, batch_shape, _instance,
                              shared=("temperature",), inner=("_categorical",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(standard_uniform(shape, self.logits))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        """log Gamma(K) + (K - 1) log(temperature) + sum_i (score_i - logsumexp(score)) for
        score = logits - temperature value."""
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        log_scale = (self.temperature * 0 + float(k)).lgamma() + self.temperature.log() * (k - 1)
        score = self.logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(RelaxedParams, TransformedDistribution):
    """RelaxedOneHotCategorical(temperature, probs=None, logits=None): exp of an
    ExpRelaxedCategorical draw, on the simplex; it tends to OneHotCategorical(probs) as
    temperature -> 0."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.simplex,
                                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)
