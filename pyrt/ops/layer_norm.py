"""Layer normalisation of float32 arrays over their trailing ``normalized_shape`` dimensions,
and its gradients (PyTorch's layer_norm).

The input is seen as ``[rows, m]``, m the product of normalized_shape: each row is centred on
its own mean and scaled by its own inverse standard deviation (the biased variance), then by
``weight`` and ``bias`` (of normalized_shape each; None for 1 and 0):

    y = (x - mean) / sqrt(var + eps) * weight + bias

One C call each way (csrc/kernels/layer_norm.c): a row's statistics are sums in double, and
the parameter gradients sum fixed groups of rows, bitwise the same at any thread count.
The argument checks are shared with the CUDA backend (pyrt/cuda/ops/layer_norm.py) and raise
PyTorch's errors: RuntimeError for a normalized_shape that is not the input's trailing shape
or a weight or bias of another shape, TypeError for arguments of the wrong type.
"""

import math
import numbers
import operator

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import as_f32, check_rc, check_shape, fptr
from pyrt.ops._memory import empty

__all__ = ["layer_norm", "layer_norm_backward"]

_NULL = ffi.NULL


def normalized_dims(normalized_shape):
    """normalized_shape (an int or a sequence of ints) as a tuple of ints, or PyTorch's
    TypeError."""
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape,
                                                                         bool):
        return (int(normalized_shape),)
    if isinstance(normalized_shape, (str, bytes)) or not hasattr(normalized_shape, "__iter__"):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    dims = []
    for pos, d in enumerate(normalized_shape):
        try:
            if isinstance(d, bool):
                raise TypeError
            dims.append(operator.index(d))
        except TypeError:
            raise TypeError(f"layer_norm(): argument 'normalized_shape' must be tuple of ints, "
                            f"but found element of type {type(d).__name__} at pos "
                            f"{pos}") from None
    return tuple(dims)


def check_input(x_shape, normalized_shape):
    """(rows, m) of an input of `x_shape` normalised over the trailing `normalized_shape`
    (a tuple of ints), or PyTorch's RuntimeError."""
    dims = list(normalized_shape)
    if not dims:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if len(dims) > len(x_shape) or tuple(x_shape[len(x_shape) - len(dims):]) != tuple(dims):
        star = ", ".join(["*"] + [str(d) for d in dims])
        raise RuntimeError(f"Given normalized_shape={dims}, expected input with shape "
                           f"[{star}], but got input of size{list(x_shape)}")
    return math.prod(x_shape[:len(x_shape) - len(dims)]), math.prod(dims)


def check_eps(eps):
    if type(eps) is float:  # the common case, at once
        return eps
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"layer_norm(): argument 'eps' must be float, not {type(eps).__name__}")
    return float(eps)


def affine_param(v, name, normalized_shape, as_f32=as_f32):
    """`v` as a float32 array of normalized_shape, or None for None."""
    if v is None:
        return None
    v = as_f32(v, name)
    if v.shape != normalized_shape:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                           f"{name} of shape {list(v.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    return v


def forward_args(x, normalized_shape, weight, bias, eps, as_f32=as_f32):
    """layer_norm's arguments checked with a backend's array checks: (x, (rows, m), weight,
    bias, eps)."""
    x = as_f32(x, "x")
    dims = normalized_dims(normalized_shape)
    rows_m = check_input(x.shape, dims)
    weight = affine_param(weight, "weight", dims, as_f32)
    bias = affine_param(bias, "bias", dims, as_f32)
    return x, rows_m, weight, bias, check_eps(eps)


def backward_args(grad_output, x, normalized_shape, weight, mean, invstd, as_f32=as_f32):
    """layer_norm_backward's arguments checked: (grad_output, x, (rows, m), weight, mean,
    invstd)."""
    x = as_f32(x, "x")
    dims = normalized_dims(normalized_shape)
    rows, m = check_input(x.shape, dims)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", x.shape)
    mean = check_shape(as_f32(mean, "mean"), "mean", (rows,))
    invstd = check_shape(as_f32(invstd, "invstd"), "invstd", (rows,))
    weight = affine_param(weight, "weight", dims, as_f32)
    return grad_output, x, (rows, m), weight, mean, invstd


def _ptr(a):
    return _NULL if a is None else fptr(a)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(y, mean, invstd)``: the normalised x and the statistics it used (per row of the
    leading dimensions, flattened: the mean and 1 / sqrt(var + eps)), which
    layer_norm_backward takes."""
    x, (rows, m), weight, bias, eps = forward_args(x, normalized_shape, weight, bias, eps)
    y, mean, invstd = empty(x.shape), np.empty(rows, np.float32), np.empty(rows, np.float32)
    check_rc(lib.pyrt_layer_norm_forward(rows, m, fptr(x), _ptr(weight), _ptr(bias), eps,
                                         fptr(y), fptr(mean), fptr(invstd)), "layer_norm")
    return y, mean, invstd


def layer_norm_backward(grad_output, x, normalized_shape, weight, mean, invstd, *,
                        needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """(grad_input, grad_weight, grad_bias) of layer_norm, each None unless requested, from
    the statistics layer_norm returned. grad_weight and grad_bias have normalized_shape."""
    grad_output, x, (rows, m), weight, mean, invstd = backward_args(
        grad_output, x, normalized_shape, weight, mean, invstd)
    dims = normalized_dims(normalized_shape)
    dx = empty(x.shape) if needs_input_grad else None
    dw = np.empty(dims, np.float32) if needs_weight_grad else None
    db = np.empty(dims, np.float32) if needs_bias_grad else None
    check_rc(lib.pyrt_layer_norm_backward(rows, m, fptr(x), fptr(grad_output), _ptr(weight),
                                          fptr(mean), fptr(invstd), _ptr(dx), _ptr(dw),
                                          _ptr(db)), "layer_norm_backward")
    return dx, dw, db
