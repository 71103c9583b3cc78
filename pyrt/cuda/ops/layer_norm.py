"""Layer normalisation on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/layer_norm.py and the formulas of csrc/kernels/layer_norm.c: a row's sums are CuPy
reductions in double, the per-row arithmetic is in double, the rest elementwise in float32."""

import cupy
import numpy as np

from pyrt.cuda.ops._checks import as_f32
from pyrt.ops.layer_norm import backward_args, forward_args, normalized_dims

__all__ = ["layer_norm", "layer_norm_backward"]

F32, F64 = np.float32, np.float64


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(y, mean, invstd)``, as pyrt.ops.layer_norm."""
    x, (rows, m), weight, bias, eps = forward_args(x, normalized_shape, weight, bias, eps,
                                                   as_f32)
    if rows * m == 0:  # no rows, or rows of no values (the statistics of nothing: NaN)
        return cupy.empty(x.shape, F32), cupy.full(rows, np.nan, F32), cupy.full(rows, np.nan,
                                                                                 F32)
    x2 = x.reshape(rows, m)
    mean = x2.mean(axis=1, dtype=F64)
    mean32 = mean.astype(F32)
    centred = x2 - mean32[:, None]
    # the squares about the float32 mean, less the square of its rounding
    shift = mean - mean32
    var = cupy.mean(centred * centred, axis=1, dtype=F64) - shift * shift
    var = cupy.where(var < 0, 0.0, var)  # rounding below zero; a NaN stays
    invstd32 = (1.0 / cupy.sqrt(var + eps)).astype(F32)
    y = centred
    y *= invstd32[:, None]
    if weight is not None:
        y *= weight.reshape(m)
    if bias is not None:
        y += bias.reshape(m)
    return y.reshape(x.shape), mean32, invstd32


def layer_norm_backward(grad_output, x, normalized_shape, weight, mean, invstd, *,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias), as pyrt.ops.layer_norm_backward."""
    grad_output, x, (rows, m), weight, mean, invstd = backward_args(
        grad_output, x, normalized_shape, weight, mean, invstd, as_f32)
    dims = normalized_dims(normalized_shape)
    if rows * m == 0:  # sums over no rows are zeros
        return (cupy.empty(x.shape, F32) if needs_input_grad else None,
                cupy.zeros(dims, F32) if needs_weight_grad else None,
                cupy.zeros(dims, F32) if needs_bias_grad else None)
    x2, dy2 = x.reshape(rows, m), grad_output.reshape(rows, m)
    centred = x2 - mean[:, None]
    dw = db = dx = None
    if needs_weight_grad:
        dw = (dy2 * (centred * invstd[:, None])).sum(axis=0, dtype=F64).astype(F32)
        dw = dw.reshape(dims)
    if needs_bias_grad:
        db = dy2.sum(axis=0, dtype=F64).astype(F32).reshape(dims)
    if needs_input_grad:
        # dx = g * a + (x - mean) * b + k per row, g = dy * weight
        g = dy2 if weight is None else dy2 * weight.reshape(m)
        sum_g = g.sum(axis=1, dtype=F64)
        sum_gx = (g * centred).sum(axis=1, dtype=F64)
        inv = invstd.astype(F64)
        b = (-inv * inv * inv * sum_gx / m).astype(F32)
        k = (-inv * sum_g / m).astype(F32)
        dx = g * invstd[:, None]
        dx += centred * b[:, None]
        dx += k[:, None]
        dx = dx.reshape(x.shape)
    return dx, dw, db
