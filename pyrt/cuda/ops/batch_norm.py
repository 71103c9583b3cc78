"""Batch normalisation on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/batch_norm.py and the formulas of csrc/kernels/batch_norm.c: the statistics and the
gradient sums are CuPy reductions in double over the batch and the planes, the per-channel
arithmetic is in double, the rest elementwise."""

import cupy
import numpy as np

from pyrt.cuda.ops._checks import as_f32, in_place, out_f32
from pyrt.ops.batch_norm import backward_args, forward_args

__all__ = ["batch_norm", "batch_norm_backward"]

F64 = np.float64


def _per_channel(v):
    """A [c] vector broadcast over [n, c, m]."""
    return v[None, :, None]


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *,
               training=False, momentum=0.1, eps=1e-5):
    """``(y, mean, invstd)``, as pyrt.ops.batch_norm."""
    (x, (n, c, m), training, momentum, eps, weight, bias, running_mean,
     running_var) = forward_args(x, running_mean, running_var, weight, bias, training, momentum,
                                 eps, as_f32, in_place)
    x3 = x.reshape(n, c, m)
    if training:
        mean = x3.mean(axis=(0, 2), dtype=F64)
        centred = x3 - _per_channel(mean.astype(np.float32))
        # the squares about the float32 mean, less the square of its rounding
        shift = mean - mean.astype(np.float32)
        var = cupy.mean(centred * centred, axis=(0, 2), dtype=F64) - shift * shift
        count = n * m
        if running_mean is not None:
            running_mean[...] = (1 - momentum) * running_mean.astype(F64) + momentum * mean
        if running_var is not None:
            running_var[...] = ((1 - momentum) * running_var.astype(F64)
                                + momentum * var * count / (count - 1))
    else:
        mean, var = running_mean.astype(F64), running_var.astype(F64)
    invstd = 1.0 / cupy.sqrt(var + eps)
    scale = invstd if weight is None else invstd * weight
    mean32, invstd32 = mean.astype(np.float32), invstd.astype(np.float32)
    y = out_f32(None, x.shape)
    y3 = y.reshape(n, c, m)
    cupy.subtract(x3, _per_channel(mean32), out=y3)
    y3 *= _per_channel(scale.astype(np.float32))
    if bias is not None:
        y3 += _per_channel(bias)
    return y, mean32, invstd32


def batch_norm_backward(grad_output, x, weight, mean, invstd, *, training=True,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias), as pyrt.ops.batch_norm_backward."""
    grad_output, x, (n, c, m), weight, mean, invstd = backward_args(grad_output, x, weight,
                                                                    mean, invstd, as_f32)
    x3, dy3 = x.reshape(n, c, m), grad_output.reshape(n, c, m)
    centred = x3 - _per_channel(mean)
    sdy = dy3.sum(axis=(0, 2), dtype=F64)
    sdyx = (dy3 * centred).sum(axis=(0, 2), dtype=F64)
    inv = invstd.astype(F64)
    dw = (sdyx * inv).astype(np.float32) if needs_weight_grad else None
    db = sdy.astype(np.float32) if needs_bias_grad else None
    dx = None
    if needs_input_grad:
        # dx = dy * a + (x - mean) * b + k, b and k from the batch's own statistics
        a = inv if weight is None else inv * weight
        dx3 = dy3 * _per_channel(a.astype(np.float32))
        if training:
            count = n * m
            b, k = -a * inv * inv * sdyx / count, -a * sdy / count
            dx3 += centred * _per_channel(b.astype(np.float32)) + _per_channel(k.astype(np.float32))
        dx = dx3.reshape(x.shape)
    return dx, dw, db
