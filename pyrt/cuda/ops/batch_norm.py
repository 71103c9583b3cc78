"""Batch normalisation on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/batch_norm.py, whose per-channel arithmetic it shares. The statistics and the gradient
sums are CuPy reductions in double over the batch and the planes; the rest is elementwise."""

import cupy
import numpy as np

from pyrt.cuda.ops._checks import as_f32, in_place, out_f32
from pyrt.ops._checks import check_shape
from pyrt.ops.batch_norm import (check_input, coefficients, forward_args,
                                 input_grad_coefficients, running_statistics, update_running)

__all__ = ["batch_norm", "batch_norm_backward"]


def _vector(v, name, c):
    return None if v is None else check_shape(as_f32(v, name), name, (c,))


def _per_channel(v):
    """A [c] vector broadcast over [n, c, m]."""
    return v[None, :, None]


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *,
               training=False, momentum=0.1, eps=1e-5):
    """``(y, mean, invstd)``, as pyrt.ops.batch_norm."""
    (x, (n, c, m), training, momentum, eps, weight, bias, running_mean,
     running_var) = forward_args(x, running_mean, running_var, weight, bias, training, momentum,
                                 eps, as_f32, in_place)
    y = out_f32(None, x.shape)
    x3 = x.reshape(n, c, m)
    if training:
        mean64 = x3.mean(axis=(0, 2), dtype=np.float64)
        centred = x3 - _per_channel(mean64.astype(np.float32))
        var = cupy.mean(centred * centred, axis=(0, 2), dtype=np.float64).astype(np.float32)
        mean = mean64.astype(np.float32)
        update_running(running_mean, running_var, mean, var, n * m, momentum)
    else:
        mean, var = running_statistics(running_mean, running_var)
    invstd, scale, shift = coefficients(mean, var, weight, bias, eps, xp=cupy)
    y3 = y.reshape(n, c, m)
    cupy.subtract(x3, _per_channel(mean), out=y3)
    y3 *= _per_channel(scale)
    y3 += _per_channel(shift)
    return y, mean, invstd


def batch_norm_backward(grad_output, x, weight, mean, invstd, *, training=True,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias), as pyrt.ops.batch_norm_backward."""
    x = as_f32(x, "x")
    n, c, m = check_input(x.shape)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", x.shape)
    mean = check_shape(as_f32(mean, "mean"), "mean", (c,))
    invstd = check_shape(as_f32(invstd, "invstd"), "invstd", (c,))
    weight = _vector(weight, "weight", c)
    x3, dy3 = x.reshape(n, c, m), grad_output.reshape(n, c, m)
    centred = x3 - _per_channel(mean)
    sums = cupy.stack([dy3.sum(axis=(0, 2), dtype=np.float64),
                       (dy3 * centred).sum(axis=(0, 2), dtype=np.float64)], axis=1)
    dw = (sums[:, 1] * invstd).astype(np.float32) if needs_weight_grad else None
    db = sums[:, 0].astype(np.float32) if needs_bias_grad else None
    dx = None
    if needs_input_grad:
        a, b, k = input_grad_coefficients(weight, invstd, sums, n * m, training)
        dx3 = dy3 * _per_channel(a) + centred * _per_channel(b) + _per_channel(k)
        dx = dx3.reshape(x.shape)
    return dx, dw, db
