"""Batch normalisation of float32 arrays ``x [n, c, *spatial]`` channel by channel, and its
gradients (PyTorch's batch_norm).

Each channel's values (its plane in every image) are centred and scaled by a mean and a
variance, then by ``weight`` and ``bias`` (per channel; None for 1 and 0):

    y = (x - mean) / sqrt(var + eps) * weight + bias

In training the mean and the biased variance are the batch's own, and ``running_mean`` and
``running_var`` (when given) move towards them in place: ``running = (1 - momentum) *
running + momentum * batch``, with the unbiased variance, as PyTorch's. Otherwise the
running statistics are used. The statistics and the parameter gradients are sums in double over
fixed leaves (csrc/kernels/batch_norm.c): bitwise the same at any thread count. The
per-channel arithmetic (c values) is NumPy's, in double.
"""

import numbers

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import as_f32, check_rc, check_shape, fptr, in_place, out_f32

__all__ = ["batch_norm", "batch_norm_backward"]


def check_input(x_shape):
    """(n, c, m) of an input of `x_shape`: m values per plane (1 for [n, c])."""
    if len(x_shape) < 2:
        raise ValueError(f"batch_norm: x must have at least 2 dimensions [n, c, ...], got "
                         f"shape {tuple(x_shape)}")
    return x_shape[0], x_shape[1], int(np.prod(x_shape[2:], dtype=np.int64))


def check_number(value, name, non_negative=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if non_negative and not value >= 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return float(value)


def check_training(training, n, m, x_shape):
    if not isinstance(training, (bool, np.bool_)):
        raise TypeError(f"training must be a bool, got {training!r}")
    if training and n * m <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(x_shape)}")
    return bool(training)


def _vector(v, name, c, asarray):
    return None if v is None else check_shape(asarray(v, name), name, (c,))


def forward_args(x, running_mean, running_var, weight, bias, training, momentum, eps,
                 as_f32=as_f32, in_place=in_place):
    """batch_norm's arguments checked with a backend's array checks: (x, (n, c, m), training,
    momentum, eps, weight, bias, running_mean, running_var)."""
    x = as_f32(x, "x")
    n, c, m = check_input(x.shape)
    training = check_training(training, n, m, x.shape)
    momentum = check_number(momentum, "momentum")
    eps = check_number(eps, "eps", non_negative=True)
    weight, bias = _vector(weight, "weight", c, as_f32), _vector(bias, "bias", c, as_f32)
    if running_mean is not None:
        running_mean = in_place(running_mean, "running_mean", (c,))
    if running_var is not None:
        running_var = in_place(running_var, "running_var", (c,))
    return x, (n, c, m), training, momentum, eps, weight, bias, running_mean, running_var


def running_statistics(running_mean, running_var):
    """(mean, var) of evaluation: a copy of the running mean (the caller keeps it for the
    backward pass, and a later step moves the running one) and the running variance."""
    if running_mean is None or running_var is None:
        raise ValueError("batch_norm: running_mean and running_var are needed when not "
                         "training")
    return running_mean.copy(), running_var


def coefficients(mean, var, weight, bias, eps, xp=np):
    """(invstd, scale, shift) in float32 from the per-channel statistics and parameters."""
    invstd = 1.0 / xp.sqrt(var.astype(np.float64) + eps)
    scale = invstd if weight is None else invstd * weight
    shift = xp.zeros_like(invstd) if bias is None else bias.astype(np.float64)
    return tuple(a.astype(np.float32) for a in (invstd, scale, shift))


def update_running(running_mean, running_var, mean, var, count, momentum):
    """The running statistics moved towards the batch's, in place (var: the biased variance of
    `count` values; the running variance follows the unbiased one)."""
    if running_mean is not None:
        running_mean[...] = ((1.0 - momentum) * running_mean.astype(np.float64)
                             + momentum * mean.astype(np.float64))
    if running_var is not None:
        unbiased = var.astype(np.float64) * (count / (count - 1))
        running_var[...] = (1.0 - momentum) * running_var.astype(np.float64) + momentum * unbiased


def input_grad_coefficients(weight, invstd, sums, count, training):
    """(a, b, k) of dx = dy * a + (x - mean) * b + k, from the gradient sums [c, 2] (sum dy,
    sum dy * (x - mean)) and the number of values per channel."""
    inv = invstd.astype(np.float64)
    a = inv if weight is None else inv * weight
    if not training:  # fixed statistics: the output is affine in x
        zero = a * 0.0
        return a.astype(np.float32), zero.astype(np.float32), zero.astype(np.float32)
    b = -a * inv * inv * sums[:, 1] / count
    k = -a * sums[:, 0] / count
    return tuple(v.astype(np.float32) for v in (a, b, k))


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *,
               training=False, momentum=0.1, eps=1e-5):
    """``(y, mean, invstd)``: the normalised x and the statistics it used (per channel, the
    mean and 1 / sqrt(var + eps)), which batch_norm_backward takes. Without training,
    running_mean and running_var are required."""
    (x, (n, c, m), training, momentum, eps, weight, bias, running_mean,
     running_var) = forward_args(x, running_mean, running_var, weight, bias, training, momentum,
                                 eps)
    y = out_f32(None, x.shape)
    if training:
        mean, var = np.empty(c, np.float32), np.empty(c, np.float32)
        if c:
            check_rc(lib.pyrt_batch_norm_stats(n, c, m, fptr(x), fptr(mean), fptr(var)),
                     "batch_norm")
        update_running(running_mean, running_var, mean, var, n * m, momentum)
    else:
        mean, var = running_statistics(running_mean, running_var)
    invstd, scale, shift = coefficients(mean, var, weight, bias, eps)
    check_rc(lib.pyrt_batch_norm_forward(n, c, m, fptr(x), fptr(mean), fptr(scale),
                                         fptr(shift), fptr(y)), "batch_norm")
    return y, mean, invstd


def batch_norm_backward(grad_output, x, weight, mean, invstd, *, training=True,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias) of batch_norm, each None unless requested, from
    the statistics batch_norm returned; `training`: whether they were the batch's own (then
    they depend on x, and so does the input gradient through them)."""
    x = as_f32(x, "x")
    n, c, m = check_input(x.shape)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", x.shape)
    mean = check_shape(as_f32(mean, "mean"), "mean", (c,))
    invstd = check_shape(as_f32(invstd, "invstd"), "invstd", (c,))
    weight = _vector(weight, "weight", c, as_f32)
    sums = np.empty((c, 2), np.float64)
    check_rc(lib.pyrt_batch_norm_grad_sums(n, c, m, fptr(x), fptr(grad_output), fptr(mean),
                                           ffi.from_buffer("double[]", sums)), "batch_norm")
    dw = (sums[:, 1] * invstd).astype(np.float32) if needs_weight_grad else None
    db = sums[:, 0].astype(np.float32) if needs_bias_grad else None
    dx = None
    if needs_input_grad:
        a, b, k = input_grad_coefficients(weight, invstd, sums, n * m, training)
        dx = out_f32(None, x.shape)
        check_rc(lib.pyrt_batch_norm_input_grad(n, c, m, fptr(x), fptr(grad_output),
                                                fptr(mean), fptr(a), fptr(b), fptr(k),
                                                fptr(dx)), "batch_norm_backward")
    return dx, dw, db
