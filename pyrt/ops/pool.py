"""Max and average pooling of NCHW float32 batches and their gradients (PyTorch's names).

``kernel_size``, ``stride`` and ``padding`` are an int or a pair ``(h, w)``; ``stride``
defaults to ``kernel_size``, and ``padding`` may be at most half the kernel size, as in
PyTorch. Max pooling pads with -inf, takes a ``dilation`` (the spacing of the window's taps,
an int or a pair) and can return the flat ``h * w`` index of each maximum within its plane
(``return_indices=True``; -1 for a window whose taps all fall in the padding, which a dilation
allows), which its backward pass takes; average pooling
pads with zeros that count in the divisor unless ``count_include_pad=False``. With
``ceil_mode=True`` the output size is rounded up, as in PyTorch: a last window may hang past
the padded input (what hangs past counts in no divisor). The kernels (csrc/kernels/pool2d.c)
run in parallel over the n*c planes.
"""

import operator

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import (
    I64,
    as_f32,
    as_i64,
    check_rc,
    check_shape,
    fptr,
    iptr,
    out_f32,
)
from pyrt.ops._memory import empty
from pyrt.ops.conv import (
    _CACHE,
    MAX_SIZE,
    _cache_key,
    _check_4d,
    _geometry,
    _pair,
    _remember,
)

__all__ = ["avg_pool2d", "avg_pool2d_backward", "max_pool2d", "max_pool2d_backward"]


def _pool_geometry(x_shape, kernel_size, stride, padding, ceil_mode=False,
                   count_include_pad=True, dilation=1, relu=False):
    """pyrt_conv_shape, oh, ow for pooling an [n, c, h, w] input (shapes from the cache of
    pyrt.ops.conv, under a key of their own)."""
    ceil_mode, exclude_pad = _flag(ceil_mode, "ceil_mode"), not _flag(count_include_pad,
                                                                       "count_include_pad")
    relu = _flag(relu, "relu")
    key = _cache_key("pool", x_shape, kernel_size, stride, padding, int(ceil_mode),
                     int(exclude_pad), dilation, int(relu))
    hit = _CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    kernel = _pair(kernel_size, "kernel_size", 1)
    steps = kernel if stride is None else _pair(stride, "stride", 1)
    pad = _pair(padding, "padding", 0)
    if len(x_shape) == 4 and 0 in x_shape[2:]:
        # every window would hold padding only, which has no maximum (PyTorch refuses too)
        raise ValueError(f"x must have a height and width of at least 1 to be pooled, got "
                         f"shape {tuple(x_shape)}")
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2:
        raise ValueError(f"padding should be at most half of kernel_size, got padding {pad} "
                         f"for kernel_size {kernel}")
    shape, oh, ow = _geometry(x_shape, kernel, steps, pad, "kernel_size",
                              dilation=_pair(dilation, "dilation", 1))
    shape.ceil_mode, shape.exclude_pad, shape.relu = int(ceil_mode), int(exclude_pad), int(relu)
    if ceil_mode:  # the output sizes rounded up, by the kernels' own rule
        check_rc(lib.pyrt_conv_shape_init(shape), "pooling")
        oh, ow = shape.oh, shape.ow
    return _remember(key, (shape, oh, ow))


def _flag(value, name):
    if not isinstance(value, (bool, int)) or value not in (0, 1):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def _input_shape(input_shape):
    try:
        if isinstance(input_shape, (str, bytes)):
            raise TypeError
        shape = tuple(operator.index(d) for d in input_shape)
    except TypeError:
        raise TypeError(f"input_shape must be a sequence of 4 ints, got {input_shape!r}") from None
    if len(shape) != 4 or not all(0 <= d <= MAX_SIZE for d in shape):
        raise ValueError(f"input_shape must be 4 ints [n, c, h, w] in [0, {MAX_SIZE}], "
                         f"got {shape}")
    return shape


def backward_geometry(input_shape, kernel_size, stride, padding, ceil_mode=False,
                      count_include_pad=True, dilation=1):
    """(input_shape checked, pyrt_conv_shape, the shape grad_output must have) for the
    backward pass of a pooling, here and in the CUDA ops."""
    input_shape = _input_shape(input_shape)
    shape, oh, ow = _pool_geometry(input_shape, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad, dilation)
    return input_shape, shape, (*input_shape[:2], oh, ow)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, *, ceil_mode=False,
               return_indices=False, relu=False, out=None):
    """Maximum over each kernel_size window of x [n, c, h, w] (its taps `dilation` apart);
    with return_indices, also the int64 flat index (within the h*w plane) of each maximum, for
    max_pool2d_backward. With relu, relu(max_pool2d(x)) in one pass: the ReLU of each maximum,
    and -1 as the index of a window whose maximum is 0 or less, to which max_pool2d_backward
    then passes no gradient, as ReLU's backward would. `out` (the maxima) must not overlap x."""
    x = as_f32(x, "x")
    _check_4d(x.shape, "x", "[n, c, h, w]")
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding, ceil_mode,
                                   dilation=dilation, relu=relu)
    n, c = x.shape[:2]
    y = out_f32(out, (n, c, oh, ow), disjoint=((x, "x"),))
    indices = empty((n, c, oh, ow), I64) if return_indices else None
    rc = lib.pyrt_max_pool2d_forward(shape, fptr(x), fptr(y),
                                     iptr(indices) if return_indices else ffi.NULL)
    check_rc(rc, "max_pool2d")
    return (y, indices) if return_indices else y


def max_pool2d_backward(grad_output, indices, input_shape, kernel_size, stride=None,
                        padding=0, dilation=1, *, ceil_mode=False, out=None):
    """Gradient of max_pool2d with respect to its input: each grad_output entry goes to the
    input pixel its index names. Returns an array of input_shape (`out`, which must not
    overlap grad_output or indices, when given)."""
    input_shape, shape, expected = backward_geometry(input_shape, kernel_size, stride, padding,
                                                     ceil_mode, dilation=dilation)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", expected)
    indices = check_shape(as_i64(indices, "indices"), "indices", expected)
    dx = out_f32(out, input_shape,
                 disjoint=((grad_output, "grad_output"), (indices, "indices")))
    rc = lib.pyrt_max_pool2d_backward(shape, fptr(grad_output), iptr(indices), fptr(dx))
    if rc == lib.PYRT_EINVAL:  # the shapes are checked: an index is not in its plane
        h, w = input_shape[2:]
        raise ValueError(f"indices must be flat indices within each {h}x{w} input plane, "
                         f"from 0 to {h * w - 1} (or -1 for a window of padding alone), as "
                         "max_pool2d returns them")
    check_rc(rc, "max_pool2d_backward")
    return dx


def avg_pool2d(x, kernel_size, stride=None, padding=0, *, ceil_mode=False,
               count_include_pad=True, out=None):
    """Mean over each kernel_size window of x [n, c, h, w], padding counted as zeros (or left
    out of the divisor with count_include_pad=False). `out` must not overlap x."""
    x = as_f32(x, "x")
    _check_4d(x.shape, "x", "[n, c, h, w]")
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad)
    y = out_f32(out, (*x.shape[:2], oh, ow), disjoint=((x, "x"),))
    rc = lib.pyrt_avg_pool2d_forward(shape, fptr(x), fptr(y))
    check_rc(rc, "avg_pool2d")
    return y


def avg_pool2d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0, *,
                        ceil_mode=False, count_include_pad=True, out=None):
    """Gradient of avg_pool2d with respect to its input, an array of input_shape (`out`, which
    must not overlap grad_output, when given)."""
    input_shape, shape, expected = backward_geometry(input_shape, kernel_size, stride, padding,
                                                     ceil_mode, count_include_pad)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", expected)
    dx = out_f32(out, input_shape, disjoint=((grad_output, "grad_output"),))
    rc = lib.pyrt_avg_pool2d_backward(shape, fptr(grad_output), fptr(dx))
    check_rc(rc, "avg_pool2d_backward")
    return dx
