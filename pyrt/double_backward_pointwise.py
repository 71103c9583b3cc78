"""Differentiable backward formulas of pointwise ops: the smooth activations (gelu exact and
tanh, elu, selu, celu, silu, mish, logsigmoid, softsign, tanhshrink), the piecewise linear
ones (hardsigmoid, hardswish, threshold, the shrinks, rrelu), the floating functions sinh,
cosh, atan, asinh, erf, rsqrt and reciprocal, and the selections where, clamp with tensor
bounds, maximum, minimum, masked_fill and dropout. pyrt.double_backward registers them; its
docstring says how formulas are found and what they return.

An activation's closure multiplies g by the slope f'(x) its kernel computed; the formula
keeps that value (the ordinary gradient, bit for bit) and gives it the derivative of f'
written with Tensor ops (double_backward._with_slope_of), so that f'' and what follows are
exact. Masks (which branch, which side won, which elements dropout kept) are constants.
"""

import math

import numpy as np

from pyrt import functional as F
from pyrt.double_backward import _const, _need, _piecewise_linear, _with_slope_of, sum_to

__all__ = ["ACTIVATIONS", "POINTWISE"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TANH_SCALE = math.sqrt(2 / math.pi)
_TANH_CUBIC = 0.044715


def _sloped(slope_of):
    """The activation's gradient factor: the kernel's slope, differentiable as slope_of(x)."""
    def formula(g, x, y, env):
        return F.mul(g, _with_slope_of(env["slope"](), slope_of(x, env["slope"])))
    return formula


def _cells(slope):
    from pyrt.double_backward import closure_vars

    return closure_vars(slope)


def _gelu_slope(x, slope):
    """Phi(x) + x phi(x) (exact), or the tanh form's derivative, by the closure's variables."""
    cells = _cells(slope)
    if "th" in cells:  # approximate="tanh"
        inner = F.mul(F.add(x, F.mul(F.mul(F.mul(x, x), x), _TANH_CUBIC)), _TANH_SCALE)
        th = F.tanh(inner)
        d_inner = F.mul(F.add(F.mul(F.mul(x, x), 3 * _TANH_CUBIC), 1.0), _TANH_SCALE)
        return F.add(F.mul(F.add(th, 1.0), 0.5),
                     F.mul(F.mul(F.mul(x, F.sub(1.0, F.mul(th, th))), d_inner), 0.5))
    from pyrt.pointwise import erf

    cdf = F.mul(F.add(erf(F.mul(x, _SQRT_HALF)), 1.0), 0.5)
    pdf = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), _INV_SQRT_2PI)
    return F.add(cdf, F.mul(x, pdf))


def _silu_slope(x, slope):
    s = F.sigmoid(x)
    return F.mul(s, F.add(F.mul(x, F.sub(1.0, s)), 1.0))


def _negative_branch(x, negative, a, k, s):
    """s a k exp(k x) where `negative` (a mask), else s: x is zeroed elsewhere first, so that
    exp of the unused positive elements cannot overflow."""
    mask = _const(negative)
    curve = F.mul(F.exp(F.mul(F.mul(x, mask), float(k))), float(s * a * k))
    return F.add(F.mul(curve, mask), F.mul(F.sub(1.0, mask), float(s)))


def _elu_slope(x, slope):
    cells = _cells(slope)
    return _negative_branch(x, ~cells["positive"], cells["a"], 1.0, 1.0)


def _elu_family_slope(x, slope):
    cells = _cells(slope)
    return _negative_branch(x, cells["negative"], cells["a"], cells["k"], cells["s"])


def _mish_slope(x, slope):
    from pyrt.activations import softplus

    t = F.tanh(softplus(x))
    return F.add(t, F.mul(F.mul(x, F.sigmoid(x)), F.sub(1.0, F.mul(t, t))))


def _hardswish_slope(x, slope):
    xd = _cells(slope)["x"]
    middle = _const((xd > -3) & (xd < 3))
    return F.add(F.mul(F.add(F.div(x, 3.0), 0.5), middle), _const(xd >= 3))


ACTIVATIONS = {
    "gelu": _sloped(_gelu_slope),
    "silu": _sloped(_silu_slope),
    "elu": _sloped(_elu_slope),
    "_elu_family": _sloped(_elu_family_slope),  # selu, celu
    "mish": _sloped(_mish_slope),
    "logsigmoid": _sloped(lambda x, slope: F.sigmoid(F.neg(x))),
    "softsign": _sloped(lambda x, slope: F.pow(F.add(F.abs(x), 1.0), -2.0)),
    "tanhshrink": _sloped(lambda x, slope: F.mul(F.tanh(x), F.tanh(x))),
    "hardswish": _sloped(_hardswish_slope),
    "hardsigmoid": _piecewise_linear,
    "_threshold": _piecewise_linear,
    "softshrink": _piecewise_linear,
    "hardshrink": _piecewise_linear,
    "rrelu": _piecewise_linear,
}


def _rsqrt_slope(g, x, y):
    return F.mul(g, F.mul(F.pow(x, -1.5), -0.5))


POINTWISE = {
    "sinh": lambda g, x, y: F.mul(g, _trig("cosh")(x)),
    "cosh": lambda g, x, y: F.mul(g, _trig("sinh")(x)),
    "atan": lambda g, x, y: F.div(g, F.add(F.mul(x, x), 1.0)),
    "asinh": lambda g, x, y: F.mul(g, F.pow(F.add(F.mul(x, x), 1.0), -0.5)),
    "erf": lambda g, x, y: F.mul(g, F.mul(F.exp(F.neg(F.mul(x, x))), 2 / math.sqrt(math.pi))),
    "rsqrt": _rsqrt_slope,
    "reciprocal": lambda g, x, y: F.neg(F.div(g, F.mul(x, x))),
}


def _trig(name):
    from pyrt import trigonometric

    return getattr(trigonometric, name)


# ---- selections: the masks are constants ----------------------------------------------------


def _masked(g, mask, shape):
    return sum_to(F.mul(g, _const(mask)), shape)


def _where(node, g, env):
    cond = env["cond"]
    out = []
    for x, holds in env["sides"]:
        out.append(_masked(g, cond if holds else ~cond, x.shape) if _need(x) else None)
    return tuple(out)


def _clamp_by_tensors(node, g, env):
    """x's gradient where lo <= x <= hi, lo's where x < lo (and lo < hi), hi's where x > hi
    (or hi < lo), as the ordinary backward splits it."""
    xd, ld, hd = env["xd"], env["ld"], env["hd"]
    xp = F._xp(xd)
    x = node._parents[0]
    inside = xp.ones(env["y"].shape, bool)
    if ld is not None:
        inside = inside & (xd >= ld)
    if hd is not None:
        inside = inside & (xd <= hd)
    grads = [_masked(g, inside, x.shape) if _need(x) else None]
    bounds = list(node._parents[1:])
    if ld is not None:
        lo = bounds.pop(0)
        below = (xd < ld) & (ld < hd) if hd is not None else xd < ld
        grads.append(_masked(g, below, lo.shape) if _need(lo) else None)
    if hd is not None:
        hi = bounds.pop(0)
        above = (xd > hd) | (hd < ld) if ld is not None else xd > hd
        grads.append(_masked(g, above, hi.shape) if _need(hi) else None)
    return tuple(grads)


def _extremum(node, g, env):
    """Each side's gradient where it wins, half where the two tie."""
    ad, bd = env["ad"], env["bd"]
    a, b = node._parents
    tie = (ad == bd).astype(np.float32)
    maximum = env["op"] == "maximum"
    a_wins, b_wins = (ad > bd, ad < bd) if maximum else (ad < bd, ad > bd)
    return (_masked(g, a_wins + 0.5 * tie, a.shape) if _need(a) else None,
            _masked(g, b_wins + 0.5 * tie, b.shape) if _need(b) else None)


def _masked_fill(node, g, env):
    m, input = env["m"], env["input"]
    dx = _masked(g, ~m, input.shape) if _need(input) else None
    if len(node._parents) == 1:
        return (dx,)
    return dx, F.sum(F.mul(g, _const(F._xp(m).broadcast_to(m, g.shape))))


def _dropout(node, g, env):
    return (F.mul(g, _const(env["mask"])),)


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt.pointwise import maximum
    from pyrt.selection import masked_fill, where

    x, y = leaf(3, 4), leaf(3, 4)
    positive = F._tensor()(x._data > 0)
    yield where(positive, x, y), _where
    yield F.clamp(x, y, None), _clamp_by_tensors
    yield maximum(x, y), _extremum
    yield masked_fill(x, positive, 0.0), _masked_fill


def found():
    """(function, closure name, formula) of closures found by name (dropout's example would
    draw from pyrt's generator)."""
    return ((F.dropout, "<lambda>", _dropout),)
