"""The Distribution base class: batch and event shapes, argument and sample validation, and
the methods every family provides (sample, rsample, log_prob, cdf, icdf, entropy, mean, ...).

A family subclasses Distribution, declares `arg_constraints` (parameter name -> Constraint)
and `support`, calls ``super().__init__(batch_shape, event_shape, validate_args)`` once its
parameters are set (which checks them against arg_constraints), implements `expand` with
`_expanded` (or, for state that is not batched parameters, `_get_checked_instance`), and
builds log_prob and friends from pyrt's differentiable ops so that gradients reach the
parameters. `rsample` draws standard noise (utils.standard_normal,
utils.standard_uniform) and transforms it with differentiable ops; `sample` is rsample under
no_grad unless the family overrides it.
"""

import warnings

import numpy as np

from pyrt.distributions import constraints
from pyrt.distributions.utils import lazy_property
from pyrt.functional import _tensor

__all__ = ["Distribution"]


def _shape(shape, name):
    """`shape` (a tuple, list or int) as a tuple of non-negative ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of ints, got {type(shape).__name__}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{name} must have non-negative sizes, got {shape}")
    return shape


def _all_true(valid):
    return bool(valid.all().item()) if valid.numel() else True


class Distribution:
    """The abstract base class for probability distributions, batched over `batch_shape`,
    each over events of `event_shape`; `validate_args` (default: on, as with Python's assert)
    checks the parameters and every value scored."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turns argument validation on or off for distributions made from now on."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args(): expected a bool, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _shape(batch_shape, "batch_shape")
        self._event_shape = _shape(event_shape, "event_shape")
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # (cannot be checked)
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # (not computed yet: derived from a checked argument)
                value = getattr(self, param)
                if not _all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same family with its parameters expanded (as by
        Tensor.expand, sharing their memory) to `batch_shape`; arguments are not checked
        again."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """A dict from argument names to the Constraint each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint the values of the distribution lie in."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation: the square root of the variance."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample of shape sample_shape + batch_shape + event_shape; no gradient."""
        from pyrt.autograd import no_grad

        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterized sample of shape sample_shape + batch_shape + event_shape: a
        differentiable function of the parameters."""
        raise NotImplementedError

    def log_prob(self, value):
        """The log of the density (or mass) at `value`."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at `value`."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """All values of a discrete distribution along dim 0."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, of shape batch_shape."""
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy), of shape batch_shape."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        """sample_shape + batch_shape + event_shape."""
        return _shape(sample_shape, "sample_shape") + self._batch_shape + self._event_shape

    def _validate_sample(self, value):
        """Checks that `value` is a tensor whose rightmost dims match event_shape, that
        broadcasts with batch_shape + event_shape and lies in the support."""
        if not isinstance(value, _tensor()):
            raise ValueError("The value argument to log_prob must be a Tensor")  # noqa: TRY004
        shape = tuple(value.shape)
        event_dim_start = len(shape) - len(self._event_shape)
        if shape[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {shape} vs "
                             f"{self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not _all_true(support.check(value)):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{shape}) to be within the support ({support!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        """The blank instance `expand` fills in: `_instance`, or a new one of self's class
        (a subclass with its own __init__ must define its own expand)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, cls, batch_shape, _instance=None, shared=(), inner=()):
        """`expand` for a family `cls` whose state is its tensor parameters (the keys of
        cls.arg_constraints that self holds), the distributions it is built on (the
        attributes named in `inner`) and the attributes named in `shared`. Each parameter and
        inner distribution, of self's batch shape followed by trailing dims of its own, is
        expanded to the new batch shape followed by the same trailing dims; the shared
        attributes are copied as they are, and validation stays as self's."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = tuple(batch_shape)
        batch_dims = len(self._batch_shape)
        for name in shared:
            setattr(new, name, getattr(self, name))
        for name in cls.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                setattr(new, name, value.expand(*batch_shape, *value.shape[batch_dims:]))
        for name in inner:
            dist = getattr(self, name)
            setattr(new, name, dist.expand(batch_shape + dist.batch_shape[batch_dims:]))
        super(cls, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self):
        def show(t):
            if t.numel() == 1 and t.dim() == 0:
                return repr(t.item())
            return str(tuple(t.shape)) if t.numel() != 1 else str(t)

        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {show(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"
