"""Logical ops and closeness, as PyTorch's: logical_and, logical_or, logical_xor and
logical_not read any dtype as true where nonzero (NaN included) and give bool tensors;
isclose compares elementwise within tolerances. None has a gradient."""

import numbers

import numpy as np

from pyrt.functional import _tensor, _xp
from pyrt.pointwise import _input_array, broadcast_shape, checked_flag

__all__ = ["isclose", "logical_and", "logical_not", "logical_or", "logical_xor"]


def _pair(name, input, other):
    """The arrays of a binary op's two tensors, on one device and of shapes that broadcast."""
    a = _input_array(input, name)
    if not isinstance(other, _tensor()):
        raise TypeError(f"{name}(): argument 'other' must be a Tensor, got "
                        f"{type(other).__name__}")
    b = other._data
    if _xp(a) is not _xp(b):
        raise RuntimeError(f"{name}(): expected both tensors on the same device, got "
                           f"{input.device} and {other.device}")
    broadcast_shape(a.shape, b.shape)
    return _xp(a), a, b


def _logical(name, input, other):
    xp, a, b = _pair(name, input, other)
    return (_tensor())(xp.asarray(getattr(xp, name)(a, b)))


def logical_and(input, other):
    return _logical("logical_and", input, other)


def logical_or(input, other):
    return _logical("logical_or", input, other)


def logical_xor(input, other):
    return _logical("logical_xor", input, other)


def logical_not(input):
    a = _input_array(input, "logical_not")
    return (_tensor())(_xp(a).logical_not(a))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where |input - other| <= atol + rtol * |other| (infinities equal to themselves, NaN
    equal to NaN only with equal_nan): a bool tensor of the broadcast shape. The two tensors
    must have one dtype, as PyTorch requires."""
    xp, a, b = _pair("isclose", input, other)
    if a.dtype != b.dtype:
        raise RuntimeError(f"isclose(): {a.dtype} did not match {b.dtype}")
    for value, arg in ((rtol, "rtol"), (atol, "atol")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"isclose(): argument '{arg}' must be a float, got "
                            f"{type(value).__name__}")
        if not value >= 0:  # (nan included)
            raise RuntimeError(f"{arg} must be greater than or equal to zero, but got {value}")
    equal_nan = checked_flag(equal_nan, "isclose", "equal_nan")
    if a.dtype.kind in "biu":  # bools by equality; integers in float64, exact below 2**53
        if a.dtype.kind == "b":
            return (_tensor())(xp.asarray(a == b))
        a, b = a.astype(np.float64), b.astype(np.float64)
    return (_tensor())(xp.asarray(xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))
