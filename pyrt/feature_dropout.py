"""Dropout of whole channels (torch.nn.functional.dropout1d, dropout2d, dropout3d): while
training, each (sample, channel) slice of the input is zeroed with probability p and the
others scaled by 1 / (1 - p), one draw per slice from pyrt's seeded generator, so that
neighbouring activations of a feature map, strongly correlated, are dropped together. The
gradient goes through the same mask.
"""

import warnings

import numpy as np

from pyrt.functional import (
    F32,
    _dropout_mask,
    _inplace,
    _make,
    _not_a_tensor,
    _tensor,
    _xp,
    dropout_probability,
)
from pyrt.shapes import squeeze, unsqueeze

__all__ = ["dropout1d", "dropout2d", "dropout3d", "feature_dropout"]


def feature_dropout(input, p=0.5, training=True, inplace=False):
    """The channels of input [N, C, *] dropped: what dropout1d, dropout2d and dropout3d
    run."""
    dropout_probability(p)
    if inplace:
        return _inplace(input, lambda t: feature_dropout(t, p, training))
    if not isinstance(input, _tensor()):
        raise _not_a_tensor(input)
    x = input._data
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0:
        return input
    if x.dtype != F32:
        raise TypeError(f"dropout: input must be a float32 tensor, got {x.dtype}")
    mask = _dropout_mask(input, x.shape[:2] + (1,) * (x.ndim - 2), p)
    xp = _xp(x)
    return _make(xp.multiply(x, mask, dtype=np.float32), (input,),
                 lambda g: (xp.multiply(g, mask, dtype=np.float32),), reads=False)


def _unbatched(fn, input, p, training, inplace):
    """fn on input with a batch dim of 1 put in front, and taken out again."""
    if inplace:
        return _inplace(input, lambda t: _unbatched(fn, t, p, training, False))
    return squeeze(fn(unsqueeze(input, 0), p, training, False), 0)


def _rank(input):
    if not isinstance(input, _tensor()):
        raise _not_a_tensor(input)
    return input.ndim


def _deprecated_rank(name, rank, spatial):
    """PyTorch's warning for a rank its dropout{spatial}d takes but will refuse."""
    warnings.warn(f"{name}: Received a {rank}-D input to {name}, which is deprecated and will "
                  "result in an error in a future release. To retain the behavior and silence "
                  f"this warning, please use dropout instead. Note that {name} exists to "
                  f"provide channel-wise dropout on inputs with {spatial} spatial dimensions, a "
                  "channel dimension, and an optional batch dimension (i.e. "
                  f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channels of [N, C, L] (or unbatched [C, L]) dropped."""
    dropout_probability(p)
    rank = _rank(input)
    if rank not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {rank}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if rank == 2:
        return _unbatched(feature_dropout, input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channels of [N, C, H, W] dropped. As PyTorch does for now, a 3-D input is taken as
    [N, C, L] (with a warning), and other ranks as [N, C, *] (with another)."""
    dropout_probability(p)
    rank = _rank(input)
    if rank not in (3, 4):
        _deprecated_rank("dropout2d", rank, 2)
    if rank == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channels of [N, C, D, H, W] (or unbatched [C, D, H, W]) dropped; other ranks are taken
    as unbatched, with PyTorch's warning."""
    dropout_probability(p)
    rank = _rank(input)
    if rank not in (4, 5):
        _deprecated_rank("dropout3d", rank, 3)
    if rank != 5:
        return _unbatched(feature_dropout, input, p, training, inplace)
    return feature_dropout(input, p, training, inplace)
