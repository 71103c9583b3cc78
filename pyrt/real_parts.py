"""torch's complex-number functions on pyrt's real tensors, and nonzero_static:
``angle`` (0 where x >= 0, pi where x < 0, NaN kept; a float result, zero gradient as in
torch), ``conj_physical`` / ``conj_physical_`` (the tensor itself: a real number is its own
conjugate), ``nonzero_static`` (nonzero's indices in a result of fixed size)."""

import numbers

import numpy as np

from pyrt.functional import _make, _xp

__all__ = ["angle", "conj_physical", "conj_physical_", "nonzero_static"]


def _input(input, name):
    from pyrt.tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input


def angle(input):
    """The argument of each element as a complex number: pi for negatives, 0 otherwise, NaN
    for NaN; integers and bools give float32. The gradient is zero (torch's for real input)."""
    x = _input(input, "angle")._data
    xp = _xp(x)
    work = x if x.dtype.kind == "f" else x.astype(np.float32)
    out = xp.where(work < 0, work.dtype.type(np.pi), work.dtype.type(0))
    out = xp.where(xp.isnan(work), work, out)
    return _make(out, (input,), lambda g: (xp.zeros_like(g),), reads=False)


def conj_physical(input):
    """The conjugate of a real tensor: the tensor itself, as torch returns it."""
    return _input(input, "conj_physical")


def conj_physical_(input):
    """In place: nothing to change for a real tensor; returns it."""
    return _input(input, "conj_physical_")


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero's (n, ndim) int64 indices cut or padded to `size` rows, the padding rows all
    `fill_value`: a result whose shape does not depend on the values."""
    from pyrt.tensor import Tensor

    x = _input(input, "nonzero_static")._data
    if isinstance(size, bool) or not isinstance(size, numbers.Integral):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                        f"{type(size).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Integral):
        raise TypeError(f"nonzero_static(): argument 'fill_value' must be int, not "
                        f"{type(fill_value).__name__}")
    xp = _xp(x)
    found = xp.argwhere(x).astype(np.int64) if x.ndim else xp.zeros((int(x != 0), 0), np.int64)
    out = xp.full((size, x.ndim), fill_value, np.int64)
    n = min(size, found.shape[0])
    out[:n] = found[:n]
    return Tensor(out)
