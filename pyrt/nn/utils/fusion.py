"""Folding an inference-mode batch norm into the convolution or linear layer before it, as
torch.nn.utils.fusion.

In eval mode a batch norm is the affine map y = (x - mean) * s + beta per channel, with
s = gamma / sqrt(var + eps) from its running statistics. Following a layer with weight W and
bias b, the two together are one layer of weight W * s (each output channel's filter scaled;
for a transposed convolution the output channels are the weight's dim 1) and bias
(b - mean) * s + beta. The fused layer is a copy; the originals are left as they were.
"""

import copy

import numpy as np

from pyrt.functional import _xp
from pyrt.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _arrays(*tensors):
    return [None if t is None else t._data.astype(np.float32, copy=False) for t in tensors]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the convolution that computes conv then batch norm in
    eval mode (see the module's doc); a missing conv bias, bn weight or bn bias counts as 0,
    1 and 0."""
    w, b, mean, var, gamma, beta = _arrays(conv_w, conv_b, bn_rm, bn_rv, bn_w, bn_b)
    xp = _xp(w)
    b = xp.zeros_like(mean) if b is None else b
    gamma = xp.ones_like(mean) if gamma is None else gamma
    beta = xp.zeros_like(mean) if beta is None else beta
    rsqrt = (1 / xp.sqrt(var + np.float32(bn_eps))).astype(np.float32)
    shape = ((1, -1) if transpose else (-1, 1)) + (1,) * (w.ndim - 2)
    fused_w = w * (gamma * rsqrt).reshape(shape)
    fused_b = (b - mean) * rsqrt * gamma + beta
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, True if conv_b is None else conv_b.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear layer that computes linear then batch norm in
    eval mode; a missing linear bias counts as 0."""
    w, b, mean, var, gamma, beta = _arrays(linear_w, linear_b, bn_rm, bn_rv, bn_w, bn_b)
    xp = _xp(w)
    b = xp.zeros_like(mean) if b is None else b
    scale = gamma / xp.sqrt(var + np.float32(bn_eps))
    fused_w = w * scale[:, None]
    fused_b = (b - mean) * scale + beta
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, True if linear_b is None else linear_b.requires_grad))


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` computing conv then `bn`, both in eval mode."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` computing linear then `bn` (over its out_features, or one feature
    for all), both in eval mode."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or "
                             f"bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
