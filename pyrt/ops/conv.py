"""2-D convolution of NCHW float32 batches and its gradients (PyTorch's conv2d).

``x`` is ``[n, c, h, w]``, ``weight`` is ``[k, c / groups, kh, kw]``, the result
``[n, k, oh, ow]`` with ``oh = (h + 2 * padding_h - dilation_h * (kh - 1) - 1) // stride_h + 1``
(and likewise ``ow``). ``stride``, ``padding`` and ``dilation`` (the spacing of the kernel's
taps) are an int or a pair ``(h, w)``; with ``groups`` > 1 the input channels and the filters
split into that many groups, each group's filters seeing only its own channels (``groups ==
c``: a depthwise convolution). The kernels (csrc/kernels/conv2d.c) compute stride-1 layers
with few input channels directly and the others as im2col + GEMM, in parallel over the batch;
the weight and bias gradients sum the batch in a fixed order, so they are bitwise identical at
any thread count.
"""

import operator

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import as_f32, check_rc, check_shape, fptr, out_f32
from pyrt.ops._memory import empty

__all__ = ["conv2d", "conv2d_backward"]


# the kernels index with 64-bit integers but take each size, stride and padding below 2**31
# (pyrt_conv_shape_init), which keeps every product of them within an int64
MAX_SIZE = 2**31 - 1


def _pair(value, name, minimum):
    """An int or a pair of ints, each in [minimum, MAX_SIZE], as a tuple (a, b)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
        a, b = value
    else:
        a = b = value
    try:
        if isinstance(a, bool) or isinstance(b, bool):
            raise TypeError
        a, b = operator.index(a), operator.index(b)
    except TypeError:
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}") from None
    if a < minimum or b < minimum:
        what = "positive" if minimum == 1 else f"at least {minimum}"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if a > MAX_SIZE or b > MAX_SIZE:
        raise ValueError(f"{name} must be at most {MAX_SIZE}, got {value!r}")
    return a, b


def _check_4d(shape, name, layout):
    if len(shape) != 4:
        raise ValueError(f"{name} must be 4-D {layout}, got shape {shape}")


def _check_sizes(shape, name):
    if max(shape) > MAX_SIZE:  # only a zero-size array can be this long
        raise ValueError(f"{name} has shape {shape}: each size must be at most {MAX_SIZE}")


def _geometry(x_shape, window, stride, padding, window_name, k=0, dilation=(1, 1), groups=1):
    """The pyrt_conv_shape of a window sliding over an [n, c, h, w] input, with the output
    height and width. ValueError naming `window_name` if the window does not fit."""
    _check_sizes(x_shape, "x")
    n, c, h, w = x_shape
    kh, kw = window
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    if kh < 1 or kw < 1:
        raise ValueError(f"{window_name} must be at least 1x1, got {kh}x{kw}")
    # the input rows and columns from a window's first tap to its last
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if h + 2 * ph < eh or w + 2 * pw < ew:
        spread = "" if (dh, dw) == (1, 1) else f", spread by dilation ({dh}, {dw}) to {eh}x{ew},"
        raise ValueError(
            f"{window_name} {kh}x{kw}{spread} is larger than the padded input "
            f"{h + 2 * ph}x{w + 2 * pw} (input {h}x{w}, padding ({ph}, {pw}))"
        )
    oh = (h + 2 * ph - eh) // sh + 1
    ow = (w + 2 * pw - ew) // sw + 1
    shape = ffi.new("pyrt_conv_shape *",
                    [n, c, h, w, k, kh, kw, sh, sw, ph, pw, oh, ow, 0, 0, dh, dw, groups])
    return shape, oh, ow


# Checked geometries of recent calls, under their arguments: a training loop repeats the same
# few shapes, and checking and building one costs more than the rest of a small call. Only
# plain ints, pairs of them (as layers keep their settings) and None key it, since a bool or a
# float would compare equal to an int. The C
# kernels only read the structs, so threads may share them.
_CACHE = {}
_CACHE_SIZE = 256


def _cache_key(*args):
    """The cache key for these arguments (two shapes, then ints, pairs of ints and None), or
    None for an uncacheable one."""
    for v in args[2:]:
        if v is not None and type(v) is not int and not (
                type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int):
            return None
    return args


def _remember(key, value):
    if key is not None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = value
    return value


def check_groups(groups):
    """`groups` if it is a positive int (a bool is not), else TypeError/ValueError."""
    try:
        if isinstance(groups, bool):
            raise TypeError
        groups = operator.index(groups)
    except TypeError:
        raise TypeError(f"groups must be a positive integer, got {groups!r}") from None
    if not 1 <= groups <= MAX_SIZE:
        raise ValueError(f"groups must be a positive integer of at most {MAX_SIZE}, got "
                         f"{groups!r}")
    return groups


def conv_geometry(x_shape, weight_shape, stride, padding, dilation=1, groups=1):
    """The checked pyrt_conv_shape, oh, ow of a convolution (the CUDA ops' too), from the
    cache when these arguments were seen."""
    key = _cache_key(x_shape, weight_shape, stride, padding, dilation, groups)
    hit = _CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    _check_4d(x_shape, "x", "[n, c, h, w]")
    _check_4d(weight_shape, "weight", "[out_channels, in_channels / groups, kh, kw]")
    _check_sizes(weight_shape, "weight")
    groups = check_groups(groups)
    if weight_shape[0] % groups:
        raise ValueError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                         f"at dimension 0, but got weight of size {list(weight_shape)} instead")
    if weight_shape[1] * groups != x_shape[1]:
        per_group = " per group" if groups > 1 else ""
        raise ValueError(
            f"Given groups={groups}, weight of size {list(weight_shape)}, expected "
            f"input{list(x_shape)} to have {weight_shape[1] * groups} channels, but got "
            f"{x_shape[1]} channels instead (weight has {weight_shape[1]} input "
            f"channels{per_group})")
    geometry = _geometry(x_shape, weight_shape[2:], _pair(stride, "stride", 1),
                         _pair(padding, "padding", 0), "weight's kernel", k=weight_shape[0],
                         dilation=_pair(dilation, "dilation", 1), groups=groups)
    return _remember(key, geometry)


def _conv_args(x, weight, stride, padding, dilation, groups):
    """Checked x, weight and geometry shared by the forward and backward passes."""
    x = as_f32(x, "x")
    weight = as_f32(weight, "weight")
    return (x, weight, *conv_geometry(x.shape, weight.shape, stride, padding, dilation, groups))


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1, out=None):
    """Cross-correlation of x [n, c, h, w] with weight [k, c / groups, kh, kw], plus bias [k]:
    the [n, k, oh, ow] result of torch.nn.functional.conv2d. `out` must not overlap x,
    weight or bias."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding, dilation, groups)
    k = weight.shape[0]
    if bias is not None:
        bias = check_shape(as_f32(bias, "bias"), "bias", (k,))
    # every input element is read for several outputs: no overlap at all is safe
    res = out_f32(out, (x.shape[0], k, oh, ow),
                  disjoint=((x, "x"), (weight, "weight"), (bias, "bias")))
    rc = lib.pyrt_conv2d_forward(shape, fptr(x), fptr(weight),
                                 ffi.NULL if bias is None else fptr(bias), fptr(res))
    check_rc(rc, "conv2d")
    return res


def conv2d_backward(x, weight, grad_output, *, stride=1, padding=0, dilation=1, groups=1,
                    needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True):
    """Gradients of conv2d with respect to x, weight and bias, given grad_output
    [n, k, oh, ow]: (grad_input, grad_weight, grad_bias), each None unless requested.
    grad_weight and grad_bias sum over the batch in a fixed order."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding, dilation, groups)
    n, k = x.shape[0], weight.shape[0]
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", (n, k, oh, ow))
    gx = empty(x.shape) if needs_input_grad else None
    gw = empty(weight.shape) if needs_weight_grad else None
    gb = empty((k,)) if needs_bias_grad else None
    if gx is None and gw is None and gb is None:
        return None, None, None
    rc = lib.pyrt_conv2d_backward(
        shape, fptr(x), fptr(weight), fptr(grad_output),
        ffi.NULL if gx is None else fptr(gx),
        ffi.NULL if gw is None else fptr(gw),
        ffi.NULL if gb is None else fptr(gb),
    )
    check_rc(rc, "conv2d_backward")
    return gx, gw, gb
