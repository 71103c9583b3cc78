"""Relaxed (concrete, Gumbel-softmax) Bernoulli distributions: a continuous, reparameterized
stand-in for Bernoulli draws whose sharpness is set by a temperature (Maddison et al., 2017;
Jang et al., 2017). LogitRelaxedBernoulli lives on the logits; RelaxedBernoulli is its
sigmoid, on (0, 1)."""

from typing import ClassVar

from pyrt.distributions import constraints
from pyrt.distributions.distribution import Distribution
from pyrt.distributions.probs_or_logits import ProbsOrLogits, RelaxedParams
from pyrt.distributions.transformed_distribution import TransformedDistribution
from pyrt.distributions.transforms import SigmoidTransform
from pyrt.distributions.utils import (
    as_float_tensor,
    broadcast_all,
    clamp_probs,
    standard_uniform,
)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(ProbsOrLogits, Distribution):
    """LogitRelaxedBernoulli(temperature, probs=None, logits=None): the logit of a relaxed
    Bernoulli draw, (logit(u) + logits) / temperature for u uniform on (0, 1)."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.unit_interval,
                                       "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = as_float_tensor(temperature, "temperature")
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(LogitRelaxedBernoulli, batch_shape, _instance,
                              shared=("temperature",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(*shape))
        uniforms = clamp_probs(standard_uniform(shape, self._param))
        return (uniforms.log() - (-uniforms).log1p() + probs.log()
                - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value, names=("logits", "value"))
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(RelaxedParams, TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): sigmoid of a
    LogitRelaxedBernoulli draw, on (0, 1); it tends to Bernoulli(probs) as temperature -> 0."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.unit_interval,
                                       "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)
