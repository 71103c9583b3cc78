"""torch's ``native_*`` functions: the kernels behind layer_norm, batch_norm, group_norm,
dropout, norm and channel_shuffle, returning what their backward saves beside the output
(mean and reciprocal standard deviation, the dropout mask), and constant_pad_nd.

Each output is the ordinary op's (same values and gradient); the saved statistics are
computed beside it. As in torch, layer_norm's and batch_norm's statistics carry no gradient
while group_norm's do."""

import numbers

import numpy as np

from pyrt.functional import _xp

__all__ = ["constant_pad_nd", "native_batch_norm", "native_channel_shuffle",
           "native_dropout", "native_group_norm", "native_layer_norm", "native_norm"]


def _input(input, name):
    from pyrt.tensor import Tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input


def _rstd(var, eps):
    return 1 / (var + var.dtype.type(eps)) ** 0.5


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm(input, ...), mean, rstd): the statistics over the trailing
    `normalized_shape` dims, kept as size-1 dims (no gradient)."""
    from pyrt.layer_norm import layer_norm
    from pyrt.tensor import Tensor

    _input(input, "native_layer_norm")
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    k = len(normalized_shape)
    x = input._data
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axes, keepdims=True)
    return out, Tensor(mean), Tensor(_rstd(var, eps))


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """(batch_norm(...), save_mean, save_invstd): while training, the batch's per-channel mean
    and 1 / sqrt(biased var + eps) (running statistics updated as batch_norm does); otherwise
    two empty tensors, as torch's CPU kernel returns."""
    from pyrt.normalization import batch_norm
    from pyrt.tensor import Tensor

    _input(input, "native_batch_norm")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("native_batch_norm(): running_mean and running_var must be given "
                           "when not training")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    x = input._data
    xp = _xp(x)
    if not training:
        return out, Tensor(xp.empty((0,), x.dtype)), Tensor(xp.empty((0,), x.dtype))
    axes = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(axes)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    var = ((x - mean.reshape(shape)) ** 2).mean(axes)
    return out, Tensor(mean), Tensor(_rstd(var, eps))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm(input, group, ...), mean, rstd), the statistics of each sample's groups of
    shape (N, group), differentiable as torch's."""
    from pyrt.group_norm import group_norm

    _input(input, "native_group_norm")
    if input.numel() != N * C * HxW or input.shape[:2] != (N, C):
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements in shape "
                           f"({N}, {C}, ...), got shape {tuple(input.shape)}")
    out = group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, correction=0) + eps).rsqrt()
    return out, mean, rstd


def native_dropout(input, p, train):
    """(dropout(input, p), keep mask of bools). With train False: a copy and a mask of all
    True; None counts as training, as in torch."""
    from pyrt import functional as F
    from pyrt.tensor import Tensor

    _input(input, "native_dropout")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    x = input._data
    xp = _xp(x)
    if train is False:
        return input.clone(), Tensor(xp.ones(x.shape, np.bool_))
    mask = F._dropout_mask(input, x.shape, p)
    out = F._make(x * mask, (input,), lambda g: (g * mask,), reads=False)
    return out, Tensor(mask != 0)


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """input.norm(p, dim, keepdim): the p-norm over `dim` (all elements if None)."""
    _input(input, "native_norm")
    if dtype is not None and np.dtype(dtype) != input.dtype:
        input = input.to(dtype)
    return input.norm(p, dim, keepdim)


def native_channel_shuffle(input, groups):
    """channel_shuffle(input, groups)."""
    from pyrt.channel_ops import channel_shuffle

    return channel_shuffle(_input(input, "native_channel_shuffle"), groups)


def constant_pad_nd(input, pad, value=0):
    """input padded with `value` by `pad` (before, after pairs from the last dim back),
    negative amounts cropping, as nn.functional.pad's constant mode."""
    from pyrt.spatial import pad as pad_

    _input(input, "constant_pad_nd")
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return pad_(input, list(pad), "constant", value)
