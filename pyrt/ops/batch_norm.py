"""Batch normalisation of float32 arrays ``x [n, c, *spatial]`` channel by channel, and its
gradients (PyTorch's batch_norm).

Each channel's values (its plane in every image) are centred and scaled by a mean and a
variance, then by ``weight`` and ``bias`` (per channel; None for 1 and 0):

    y = (x - mean) / sqrt(var + eps) * weight + bias

In training the mean and the biased variance are the batch's own, and ``running_mean`` and
``running_var`` (when given) move towards them in place: ``running = (1 - momentum) *
running + momentum * batch``, with the unbiased variance, as PyTorch's. Otherwise the
running statistics are used. One C call each way (csrc/kernels/batch_norm.c): the statistics
and the parameter gradients are sums in double over fixed leaves, bitwise the same at any
thread count.
"""

import math
import numbers

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import as_f32, check_rc, check_shape, fptr, in_place
from pyrt.ops._memory import empty

__all__ = ["batch_norm", "batch_norm_backward"]

_NULL = ffi.NULL


def check_input(x_shape):
    """(n, c, m) of an input of `x_shape`: m values per plane (1 for [n, c])."""
    if len(x_shape) < 2:
        raise ValueError(f"batch_norm: x must have at least 2 dimensions [n, c, ...], got "
                         f"shape {tuple(x_shape)}")
    # (math.prod: a tenth of a microsecond, where np.prod took several)
    return x_shape[0], x_shape[1], math.prod(x_shape[2:])


def check_number(value, name, non_negative=False):
    if type(value) is float and (not non_negative or value >= 0):  # the common case, at once
        return value
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


def channel_vector(v, name, c, as_f32=as_f32):
    """`v` as a [c] float32 array, or None for None."""
    return None if v is None else check_shape(as_f32(v, name), name, (c,))


def forward_args(x, running_mean, running_var, weight, bias, training, momentum, eps,
                 as_f32=as_f32, in_place=in_place):
    """batch_norm's arguments checked with a backend's array checks: (x, (n, c, m), training,
    momentum, eps, weight, bias, running_mean, running_var)."""
    x = as_f32(x, "x")
    n, c, m = check_input(x.shape)
    training = check_training(training, n, m, x.shape)
    momentum = check_number(momentum, "momentum")
    eps = check_number(eps, "eps", non_negative=True)
    weight = channel_vector(weight, "weight", c, as_f32)
    bias = channel_vector(bias, "bias", c, as_f32)
    if running_mean is not None:
        running_mean = in_place(running_mean, "running_mean", (c,))
    if running_var is not None:
        running_var = in_place(running_var, "running_var", (c,))
    if not training and (running_mean is None or running_var is None):
        raise ValueError("batch_norm: running_mean and running_var are needed when not "
                         "training")
    return x, (n, c, m), training, momentum, eps, weight, bias, running_mean, running_var


def backward_args(grad_output, x, weight, mean, invstd, as_f32=as_f32):
    """batch_norm_backward's arguments checked: (grad_output, x, (n, c, m), weight, mean,
    invstd)."""
    x = as_f32(x, "x")
    n, c, m = check_input(x.shape)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", x.shape)
    mean = check_shape(as_f32(mean, "mean"), "mean", (c,))
    invstd = check_shape(as_f32(invstd, "invstd"), "invstd", (c,))
    return grad_output, x, (n, c, m), channel_vector(weight, "weight", c, as_f32), mean, invstd


def _ptr(a):
    return _NULL if a is None else fptr(a)


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, *,
               training=False, momentum=0.1, eps=1e-5):
    """``(y, mean, invstd)``: the normalised x and the statistics it used (per channel, the
    mean and 1 / sqrt(var + eps)), which batch_norm_backward takes. Without training,
    running_mean and running_var are required."""
    (x, (n, c, m), training, momentum, eps, weight, bias, running_mean,
     running_var) = forward_args(x, running_mean, running_var, weight, bias, training, momentum,
                                 eps)
    y, mean, invstd = empty(x.shape), np.empty(c, np.float32), np.empty(c, np.float32)
    check_rc(lib.pyrt_batch_norm_forward(n, c, m, fptr(x), _ptr(weight), _ptr(bias),
                                         _ptr(running_mean), _ptr(running_var), training,
                                         momentum, eps, fptr(y), fptr(mean), fptr(invstd)),
             "batch_norm")
    return y, mean, invstd


def batch_norm_backward(grad_output, x, weight, mean, invstd, *, training=True,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias) of batch_norm, each None unless requested, from
    the statistics batch_norm returned; `training`: whether they were the batch's own (then
    they depend on x, and so does the input gradient through them)."""
    grad_output, x, (n, c, m), weight, mean, invstd = backward_args(grad_output, x, weight,
                                                                    mean, invstd)
    dx = empty(x.shape) if needs_input_grad else None
    dw = np.empty(c, np.float32) if needs_weight_grad else None
    db = np.empty(c, np.float32) if needs_bias_grad else None
    check_rc(lib.pyrt_batch_norm_backward(n, c, m, fptr(x), fptr(grad_output), _ptr(weight),
                                          fptr(mean), fptr(invstd), bool(training), _ptr(dx),
                                          _ptr(dw), _ptr(db)), "batch_norm_backward")
    return dx, dw, db
