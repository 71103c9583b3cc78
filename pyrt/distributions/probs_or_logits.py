"""The parameter handling shared by the families given exactly one of `probs` and `logits`
(Bernoulli, Binomial, Geometric, Categorical, ...): the one given is stored, the other is
computed from it on first use; and the views that families built on a Categorical or on a
relaxed base distribution give of their inner distribution's parameters."""

from pyrt.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["CategoricalParams", "ProbsOrLogits", "RelaxedParams"]


class ProbsOrLogits:
    """Mixin for a Distribution given exactly one of probs and logits. Binary families (the
    default) link the two by sigmoid and logit; categorical ones (`_binary = False`) by a
    softmax and a log over the last dim. `_param` is the one held (after expand, logits where
    both are); both are in arg_constraints, so that `_expanded` expands whichever is held."""

    _binary = True

    def _set_probs_or_logits(self, probs, logits, **others):
        """Checks that exactly one of probs and logits is given and stores it as a float32
        tensor, broadcast with the parameters `others` (name=value, such as total_count, each
        stored too); returns it, also stored as `_param`."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        names = (*others, name)
        tensors = broadcast_all(*others.values(), value, names=names)
        for n, t in zip(names, tensors):
            setattr(self, n, t)
        self._param = tensors[-1]
        return self._param

    def _expanded(self, cls, batch_shape, _instance=None, shared=()):
        new = super()._expanded(cls, batch_shape, _instance, shared)
        new._param = new.__dict__["logits" if "logits" in new.__dict__ else "probs"]
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return tuple(self._param.shape)


class CategoricalParams:
    """Mixin for a family built on a Categorical `self._categorical`: its probs, logits and
    parameter shape are the categorical's."""

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class RelaxedParams:
    """Mixin for a TransformedDistribution of a relaxed family (LogitRelaxedBernoulli,
    ExpRelaxedCategorical): its temperature, probs and logits are its base distribution's."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
