"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019):
density C(p) p^x (1 - p)^(1 - x), the normalizer C(p) making the Bernoulli likelihood a proper
density. Near p = 1/2 the closed forms divide 0 by 0, so inside `lims` the normalizer, mean
and variance are Taylor expansions about 1/2 (as PyTorch's)."""

import math
from typing import ClassVar

import pyrt
from pyrt.distributions import constraints
from pyrt.distributions.bernoulli import binary_log_prob
from pyrt.distributions.distribution import _all_true
from pyrt.distributions.exp_family import ExponentialFamily
from pyrt.distributions.probs_or_logits import ProbsOrLogits
from pyrt.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    standard_uniform,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)): exactly one of
    probs (clamped into [eps, 1 - eps]) or logits; `lims` bounds the region about 1/2 where
    Taylor expansions replace the closed forms."""

    arg_constraints: ClassVar[dict] = {"probs": constraints.unit_interval,
                                       "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        if probs is not None:
            # checked before the clamp, which would make any value pass
            if validate_args is not None and \
                    not _all_true(self.arg_constraints["probs"].check(param)):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(param)
        self._lims = lims
        super().__init__(tuple(param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(ContinuousBernoulli, batch_shape, _instance, shared=("_lims",))

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """probs, moved to lims[0] inside the unstable region (whose values are then unused)."""
        return pyrt.where(self._outside_unstable_region(), self.probs,
                          self.probs * 0 + self._lims[0])

    def _cont_bern_log_norm(self):
        """log C(p) = log |log(1 - p) - log p| - log |1 - 2p|."""
        cut_probs = self._cut_probs()
        below = cut_probs <= 0.5
        below_half = pyrt.where(below, cut_probs, cut_probs * 0)
        above_half = pyrt.where(cut_probs >= 0.5, cut_probs, cut_probs * 0 + 1)
        log_norm = ((-cut_probs).log1p() - cut_probs.log()).abs().log() - pyrt.where(
            below, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return pyrt.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = (cut_probs / (2.0 * cut_probs - 1.0)
               + 1.0 / ((-cut_probs).log1p() - cut_probs.log()))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return pyrt.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2)
                     + 1.0 / ((-cut_probs).log1p() - cut_probs.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return pyrt.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def probs(self):
        """sigmoid(logits), clamped into [eps, 1 - eps]."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def rsample(self, sample_shape=()):
        """icdf of uniform draws."""
        shape = self._extended_shape(sample_shape)
        return self.icdf(standard_uniform(shape, self._param))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value, names=("logits", "value"))
        return binary_log_prob(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((cut_probs.log() * value).exp() * ((1.0 - cut_probs).log() * (1.0 - value)).exp()
                + cut_probs - 1.0) / (2.0 * cut_probs - 1.0)
        unbounded_cdfs = pyrt.where(self._outside_unstable_region(), cdfs, value)
        return pyrt.where(value <= 0.0, value * 0,
                          pyrt.where(value >= 1.0, value * 0 + 1, unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        inverted = (((-cut_probs + value * (2.0 * cut_probs - 1.0)).log1p()
                     - (-cut_probs).log1p()) / (cut_probs.log() - (-cut_probs).log1p()))
        return pyrt.where(self._outside_unstable_region(), inverted, value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizer as a function of the natural parameter (the logit)."""
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = pyrt.where(out_unst_reg, x, x * 0 + (self._lims[0] - 0.5))
        log_norm = cut_nat_params.expm1().abs().log() - cut_nat_params.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return pyrt.where(out_unst_reg, log_norm, taylor)
