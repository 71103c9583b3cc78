"""Dropout for self-normalising networks (torch.nn.functional.alpha_dropout and
feature_alpha_dropout): while training, each element (or each (sample, channel) slice, for the
feature variant) is dropped with probability p, and the result keeps the mean and variance of
an input of zero mean and unit variance, as SELU's outputs have, where plain dropout would
change them.

A dropped unit is set to SELU's negative saturation alpha' = -lambda * alpha
= -1.7580993408473766 instead of 0, then every unit goes through the affine map a * x + b
that restores the moments: a = ((1 - p) (1 + p alpha'^2))^(-1/2) and b = -a alpha' p. As
PyTorch computes it, in float32 with `keep` the 0/1 mask:

    out = x * (keep * a) + ((keep - 1) * (a * alpha) + a * alpha * p),   alpha = -alpha'

so a kept unit becomes a x + a alpha p and a dropped one a alpha (p - 1). The gradient is
keep * a. The mask comes from pyrt's seeded generator, as dropout's (``_dropout_mask``).
"""

import math

import numpy as np

from pyrt.functional import F32, _dropout_mask, _inplace, _make, _not_a_tensor, _tensor, _xp
from pyrt.functional import dropout_probability as _dropout_probability

__all__ = ["alpha_dropout", "feature_alpha_dropout"]

ALPHA = 1.7580993408473766  # -alpha': SELU's scale times its alpha


def _alpha_dropout(input, p, training, inplace, feature):
    """alpha_dropout (feature False) or feature_alpha_dropout (True)."""
    name = "feature_alpha_dropout" if feature else "alpha_dropout"
    _dropout_probability(p)
    if inplace:
        return _inplace(input, lambda t: _alpha_dropout(t, p, training, False, feature))
    if not isinstance(input, _tensor()):
        raise _not_a_tensor(input)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:  # every unit dropped: PyTorch's input * 0 (nan stays nan, the gradient is 0)
        return input * 0
    x = input._data
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if x.dtype != F32:
        raise TypeError(f"{name}: input must be a float32 tensor, got {x.dtype}")
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if feature else x.shape
    keep = (_dropout_mask(input, shape, p) != 0).astype(F32)
    a = 1 / math.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    scale = keep * F32.type(a)
    shift = (keep - 1) * F32.type(ALPHA * a) + F32.type(ALPHA * a * p)
    xp = _xp(x)
    out = xp.add(xp.multiply(x, scale, dtype=np.float32), shift, dtype=np.float32)
    return _make(out, (input,), lambda g: (xp.multiply(g, scale, dtype=np.float32),),
                 reads=False)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Each element dropped with probability p while training, the mean and variance kept
    (see the module's doc); `input` itself when not training or p == 0. training is False by
    default, as in PyTorch."""
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Whole channels of input [N, C, *] dropped with probability p while training, each
    dropped channel set to alpha' throughout before the affine map (see the module's
    doc)."""
    return _alpha_dropout(input, p, training, inplace, feature=True)
