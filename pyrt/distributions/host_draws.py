"""Draws that numpy's Generator makes directly (Bernoulli, binomial, Poisson, multinomial and
categorical counts): the parameters go to the host as float64, pyrt's generator draws, and
the result comes back as a constant tensor on the parameters' device."""

import numpy as np

from pyrt.functional import _tensor

__all__ = ["constant", "draw", "host", "uniform"]


def host(tensor):
    """`tensor`'s values as a float64 NumPy array."""
    from pyrt.tensor import _move

    return np.asarray(_move(tensor._data, "cpu"), np.float64)


def draw(method, shape, *params, like, dtype=np.float32):
    """generator().method(*params) with every parameter (a tensor, or a NumPy array) broadcast
    to `shape`, as a tensor of `dtype` on like's device."""
    from pyrt.tensor import _move, generator

    args = [np.broadcast_to(p if isinstance(p, np.ndarray) else host(p), tuple(shape))
            for p in params]
    data = np.ascontiguousarray(getattr(generator(), method)(*args), dtype)
    return _tensor()(_move(data, like.device))


def uniform(shape):
    """Uniform [0, 1) float64 draws of `shape` (a NumPy array, for the host-side samplers)."""
    from pyrt.tensor import generator

    return generator().random(tuple(shape))


def constant(array, like, dtype=np.float32):
    """`array` as a constant tensor of `dtype` on like's device."""
    from pyrt.tensor import _move

    return _tensor()(_move(np.ascontiguousarray(array, dtype), like.device))
