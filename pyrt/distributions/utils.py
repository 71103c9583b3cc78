"""Helpers shared by the distributions: turning parameters into broadcast float32 tensors,
drawing standard noise from pyrt's generator, summing the rightmost dims, and the
probabilities/logits conversions the discrete families use."""

import numbers

import numpy as np

from pyrt.functional import _tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits", "sum_rightmost"]

F32 = np.float32


def as_float_tensor(value, name):
    """`value` (a Tensor or a real number) as a float32 tensor: integer and bool tensors are
    converted, as are numbers; anything else is a TypeError naming the argument."""
    Tensor = _tensor()
    if isinstance(value, Tensor):
        if value._data.dtype == np.float32:
            return value
        if value._data.dtype.kind in "biu":
            return value.float()
        raise TypeError(f"{name} must be a float32 tensor (pyrt has no {value.dtype} dtype)")
    if isinstance(value, numbers.Real):
        return Tensor(np.asarray(value, F32))
    raise TypeError(f"{name} must be a Tensor or a real number, got {type(value).__name__}")


def broadcast_all(*values, names=None):
    """The values (tensors or numbers) as float32 tensors broadcast to one shape, on the device
    of the first tensor among them; numbers become constants. `names` (the parameters' names)
    go into the errors."""
    from pyrt.tensor import _move

    Tensor = _tensor()
    if not values:
        return ()
    names = names or [f"broadcast_all(): argument {i}" for i in range(len(values))]
    tensors = [as_float_tensor(v, name) for v, name in zip(values, names)]
    devices = [v.device for v in values if isinstance(v, Tensor)]
    device = devices[0] if devices else "cpu"
    tensors = [t if isinstance(v, Tensor) else Tensor(_move(t._data, device))
               for t, v in zip(tensors, values)]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in zip(names, tensors))
        raise ValueError(f"shapes cannot be broadcast together: {shapes}") from None
    return tuple(t if t.shape == shape else t.expand(*shape) for t in tensors)


def _device_of(like):
    return like.device if like is not None else "cpu"


def standard_normal(shape, like=None):
    """A float32 constant tensor of N(0, 1) draws of `shape` from pyrt's generator, on the
    device of tensor `like`."""
    from pyrt.tensor import _move, generator

    data = generator().standard_normal(tuple(shape), dtype=F32)
    return _tensor()(_move(data, _device_of(like)))


def standard_draws(kind, shape, like=None):
    """A float32 constant tensor of `shape` of draws from pyrt's generator by numpy Generator
    method `kind` ("standard_exponential", "standard_cauchy", ...), on like's device."""
    from pyrt.tensor import _move, generator

    data = np.asarray(getattr(generator(), kind)(tuple(shape)), F32)
    return _tensor()(_move(data, _device_of(like)))


def standard_uniform(shape, like=None, low=0.0):
    """A float32 constant tensor of draws uniform on [low, 1) of `shape`; with low = tiny
    (the smallest normal float32) the draws may be passed to log and never give -inf."""
    from pyrt.tensor import _move, generator

    data = generator().random(tuple(shape), dtype=F32)
    if low:
        data = np.maximum(data, F32(low))
    return _tensor()(_move(data, _device_of(like)))


def erf(x):
    """x.erf(), also for a 0-dim x (taken as a 1-element vector: Tensor.erf of a 0-dim CPU
    tensor fails)."""
    if x.dim() == 0:
        return x.reshape(1).erf().reshape(())
    return x.erf()


def sum_rightmost(value, dim):
    """`value` summed over its `dim` rightmost dims (dim = 0: value itself)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def eps(value=None):
    """float32's machine epsilon."""
    return float(np.finfo(F32).eps)


def tiny():
    """The smallest positive normal float32."""
    return float(np.finfo(F32).tiny)


def clamp_probs(probs):
    """probs clamped into [eps, 1 - eps], so that their logs and log1p(-probs) are finite."""
    e = eps()
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for binary (Bernoulli) logits, else a softmax over
    the last dim (categorical logits)."""
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (clamped away from 0 and 1): log(p) - log1p(-p) for binary
    probabilities, else log(p)."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


class lazy_property:
    """A property computed on first access and then stored on the instance: how a distribution
    holds an argument derived from the one it was given (scale_tril from covariance_matrix, or
    logits from probs)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        from pyrt.autograd import enable_grad

        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value
