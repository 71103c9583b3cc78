"""Trigonometric and hyperbolic functions and their inverses, sinc, and the conversions
between degrees and radians, each with its gradient beside it (pyrt.pointwise's _floating:
integers and bools give float32, as PyTorch's floating-point functions promote them). The
arc* names are PyTorch's aliases of the a* ones."""

import math

import numpy as np

from pyrt.pointwise import _floating

__all__ = ["acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh",
           "asin", "asinh", "atan", "atanh", "cosh", "deg2rad", "rad2deg", "sinc", "sinh"]


def atan(x):
    """arctan(x); d/dx = 1 / (1 + x^2)."""
    return _floating(x, "atan", lambda xp, v: xp.arctan(v), lambda xp, v, y: 1 / (1 + v * v))


def asin(x):
    """arcsin(x), nan outside [-1, 1]; d/dx = 1 / sqrt(1 - x^2)."""
    return _floating(x, "asin", lambda xp, v: xp.arcsin(v),
                     lambda xp, v, y: 1 / xp.sqrt(1 - v * v))


def acos(x):
    """arccos(x), nan outside [-1, 1]; d/dx = -1 / sqrt(1 - x^2)."""
    return _floating(x, "acos", lambda xp, v: xp.arccos(v),
                     lambda xp, v, y: -1 / xp.sqrt(1 - v * v))


def sinh(x):
    return _floating(x, "sinh", lambda xp, v: xp.sinh(v), lambda xp, v, y: xp.cosh(v))


def cosh(x):
    return _floating(x, "cosh", lambda xp, v: xp.cosh(v), lambda xp, v, y: xp.sinh(v))


def asinh(x):
    """arsinh(x); d/dx = 1 / sqrt(x^2 + 1)."""
    return _floating(x, "asinh", lambda xp, v: xp.arcsinh(v),
                     lambda xp, v, y: 1 / xp.sqrt(v * v + 1))


def acosh(x):
    """arcosh(x), nan below 1; d/dx = 1 / sqrt((x - 1)(x + 1)), as PyTorch factors it (no
    cancellation in x^2 - 1 near 1)."""
    return _floating(x, "acosh", lambda xp, v: xp.arccosh(v),
                     lambda xp, v, y: 1 / xp.sqrt((v - 1) * (v + 1)))


def atanh(x):
    """artanh(x), +-inf at +-1, nan beyond; d/dx = 1 / (1 - x^2)."""
    return _floating(x, "atanh", lambda xp, v: xp.arctanh(v), lambda xp, v, y: 1 / (1 - v * v))


arctan, arcsin, arccos = atan, asin, acos
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def _sinc_values(xp, v):
    # sin(pi x) / (pi x) in float64 (pi x rounded once), 1 at 0
    w = math.pi * v.astype(np.float64)
    return xp.where(w == 0, 1.0, xp.sin(w) / xp.where(w == 0, 1.0, w))


def _sinc_slope(xp, v, y):
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, 0 at 0 (sinc is even there)
    wide = v.astype(np.float64)
    w = math.pi * wide
    safe = xp.where(wide == 0, 1.0, wide)
    return xp.where(wide == 0, 0.0, (xp.cos(w) - _sinc_values(xp, v)) / safe)


def sinc(x):
    """The normalized sinc, sin(pi x) / (pi x), 1 at x = 0, as torch.sinc."""
    return _floating(x, "sinc", _sinc_values, _sinc_slope)


_RADIANS_PER_DEGREE = math.pi / 180


def deg2rad(x):
    """x degrees in radians: x * pi / 180; gradient g * pi / 180."""
    return _floating(x, "deg2rad", lambda xp, v: v * v.dtype.type(_RADIANS_PER_DEGREE),
                     lambda xp, v, y: np.float32(_RADIANS_PER_DEGREE), reads=False)


def rad2deg(x):
    """x radians in degrees: x * 180 / pi; gradient g * 180 / pi."""
    return _floating(x, "rad2deg", lambda xp, v: v * v.dtype.type(1 / _RADIANS_PER_DEGREE),
                     lambda xp, v, y: np.float32(1 / _RADIANS_PER_DEGREE), reads=False)
