"""ExponentialFamily: distributions whose density is
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)), with natural parameters theta, log
normalizer F and carrier measure k. A family declares _natural_params, _log_normalizer and
_mean_carrier_measure; the KL divergence between two members is then the Bregman divergence
of F, and the entropy follows from F and its gradient."""

from pyrt.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A Distribution in an exponential family (see the module docstring)."""

    @property
    def _natural_params(self):
        """The natural parameters theta, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(theta), from the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(X)]."""
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[k(X)], with grad F found by autograd (the
        result carries no gradient: families override it with a closed form that does)."""
        from pyrt.autograd import enable_grad, grad

        with enable_grad():
            params = [p.detach().requires_grad_(True) for p in self._natural_params]
            lg_normal = self._log_normalizer(*params)
            gradients = grad(lg_normal.sum(), params)
        result = lg_normal.detach() - self._mean_carrier_measure
        for np_, g in zip(params, gradients):
            result = result - (np_.detach() * g).reshape(
                tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
