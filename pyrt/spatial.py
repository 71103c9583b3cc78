"""Ops over the spatial dims of NCHW tensors: convolution, max and average pooling, and padding
(``pad``), with PyTorch's names, arguments and errors, each with its gradient beside it.

conv2d takes PyTorch's string paddings: "valid" is no padding, "same" pads so that the output
has the input's size (stride 1 only), dilation * (kh - 1) rows in all, half on each side and
the odd one at the bottom (columns likewise, the odd one at the right). The kernels pad
symmetrically, so an odd total pads the input by one row or column first.

pad pads (or, constant mode with negative amounts, crops) the last dims: ``pad`` is
(left, right) for the last dim, then (top, bottom) for the one before, and so on. Modes:
"constant" (``value``), "reflect" (mirrored about the edge, the edge not repeated),
"replicate" (the edge repeated) and "circular" (wrapped around). The non-constant modes read
each output position from one input position along each padded dim (an index map), so the
gradient adds each output's gradient back to the position it came from.
"""

import numbers
import operator

import numpy as np

from pyrt import ops
from pyrt.autograd import is_grad_enabled
from pyrt.functional import _make, _tensor, _xp
from pyrt.ops.conv import _pair

__all__ = ["avg_pool2d", "conv2d", "max_pool2d", "pad"]

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _check_tensors(op, **tensors):
    """TypeError unless each of `tensors` (None for an absent bias) is a Tensor. The first is
    named "input", as in PyTorch's functions and pyrt's layers."""
    Tensor = _tensor()
    for name, t in tensors.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")


# ---- convolution ----------------------------------------------------------------------------


def same_padding(kernel_size, dilation):
    """((top, left), (bottom, right)): the padding of PyTorch's padding="same" for a kernel of
    `kernel_size` (kh, kw) and `dilation` (dh, dw), the odd row and column at the end."""
    totals = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
    before = tuple(t // 2 for t in totals)
    return before, tuple(t - b for t, b in zip(totals, before))


def conv_padding(padding, kernel_size, stride, dilation):
    """(symmetric padding, extra (bottom, right) padding) of conv2d's `padding`: an int or a
    pair, padded evenly, or "valid" or "same"."""
    if not isinstance(padding, str):
        return padding, (0, 0)
    if padding == "valid":
        return 0, (0, 0)
    if padding != "same":
        raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                         "{'valid', 'same'}")
    if _pair(stride, "stride", 1) != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions")
    before, after = same_padding(kernel_size, _pair(dilation, "dilation", 1))
    return before, tuple(a - b for a, b in zip(after, before))


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of x [n, c, h, w] with weight [k, c / groups, kh, kw] (plus bias
    [k]); with groups > 1 the channels are split into that many groups, each convolved with
    its own k / groups filters (groups == c: a depthwise convolution). `dilation` spaces the
    kernel's taps; `padding` is an int, a pair, "valid" or "same"."""
    _check_tensors("conv2d", input=x, weight=weight, bias=bias)
    if isinstance(padding, str):
        wd = weight._data
        kernel = wd.shape[2:] if wd.ndim == 4 else (1, 1)  # (the op names a bad weight)
        padding, (bottom, right) = conv_padding(padding, kernel, stride, dilation)
        if bottom or right:
            x = pad(x, (0, right, 0, bottom))
    options = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    b = None if bias is None else bias._data
    backward_op = ops.conv2d_backward
    if weight._requires_grad and is_grad_enabled() and _xp(weight._data) is not np:
        # on the GPU the forward's column matrix of x serves the weight gradient too (the
        # CUDA op refuses x and weight on different devices, as ops.conv2d would)
        from pyrt.cuda.ops import conv as cuda_conv

        y, columns = cuda_conv.conv2d_keeping_columns(x._data, weight._data, b, **options)
        backward_op = cuda_conv.conv2d_backward
        if columns is not None:
            options["columns"] = columns
    else:
        y = ops.conv2d(x._data, weight._data, b, **options)

    def backward(g):
        dx, dw, db = backward_op(
            x._data, weight._data, g, needs_input_grad=x._requires_grad,
            needs_weight_grad=weight._requires_grad,
            needs_bias_grad=bias is not None and bias._requires_grad, **options)
        return (dx, dw) if bias is None else (dx, dw, db)

    parents = (x, weight) if bias is None else (x, weight, bias)
    return _make(y, parents, backward)


# ---- pooling --------------------------------------------------------------------------------


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each window of x [n, c, h, w] (its taps `dilation` apart); with
    return_indices also the flat index of each maximum within its h * w plane, an int64
    tensor, as PyTorch's."""
    return _max_pool2d(x, (kernel_size, stride, padding, dilation), ceil_mode, return_indices)


def max_pool2d_relu(x, kernel_size, stride=None, padding=0, ceil_mode=False):
    """relu(max_pool2d(x)) in one pass over x (a CPU tensor): the ReLU of each window's
    maximum; the backward pass gives a window whose maximum was 0 or less no gradient, as
    ReLU's does, and the rest to their maximum's pixel."""
    return _max_pool2d(x, (kernel_size, stride, padding, 1), ceil_mode, False, relu=True)


def _max_pool2d(x, window, ceil_mode, return_indices, relu=False):
    _check_tensors("max_pool2d", input=x)
    options = {"ceil_mode": ceil_mode, "relu": relu} if relu else {"ceil_mode": ceil_mode}
    need = x._requires_grad and is_grad_enabled()
    if not (need or return_indices):
        return _make(ops.max_pool2d(x._data, *window, **options), (x,), None)
    y, idx = ops.max_pool2d(x._data, *window, return_indices=True, **options)
    shape = x.shape
    out = _make(y, (x,), lambda g: (
        ops.max_pool2d_backward(g, idx, shape, *window, ceil_mode=ceil_mode),))
    if return_indices:
        return out, type(out)(idx.copy())  # a copy: writing the indices cannot move gradients
    return out


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window of x [n, c, h, w], the padding counted as zeros in it unless
    count_include_pad is False."""
    _check_tensors("avg_pool2d", input=x)
    y = ops.avg_pool2d(x._data, kernel_size, stride, padding, ceil_mode=ceil_mode,
                       count_include_pad=count_include_pad)
    shape = x.shape
    return _make(y, (x,), lambda g: (
        ops.avg_pool2d_backward(g, shape, kernel_size, stride, padding, ceil_mode=ceil_mode,
                                count_include_pad=count_include_pad),))


# ---- padding --------------------------------------------------------------------------------


def _pad_amounts(pad, ndim):
    """`pad` as a list of (before, after) for the last len(pad) // 2 dims, first dim first."""
    if isinstance(pad, (str, bytes)) or not hasattr(pad, "__len__"):
        raise TypeError(f"pad must be a sequence of ints, got {pad!r}")
    try:
        amounts = [operator.index(p) for p in pad]
        if any(isinstance(p, bool) for p in pad):
            raise TypeError
    except TypeError:
        raise TypeError(f"pad must be a sequence of ints, got {pad!r}") from None
    if len(amounts) % 2:
        raise ValueError(f"Padding length must be divisible by 2, got {len(amounts)}")
    if len(amounts) // 2 > ndim:
        raise ValueError(f"Padding length too large: {len(amounts)} values pad "
                         f"{len(amounts) // 2} dims of a {ndim}-D input")
    pairs = [(amounts[i], amounts[i + 1]) for i in range(0, len(amounts), 2)]
    return pairs[::-1]


def _source_index(xp, size, before, after, mode):
    """For each position of a padded dim, the input position it reads (reflect, replicate,
    circular)."""
    p = np.arange(-before, size + after)
    if mode == "reflect":
        period = 2 * (size - 1)
        p = np.abs(p) % period if period else np.zeros_like(p)
        p = np.where(p >= size, period - p, p)
    elif mode == "replicate":
        p = np.clip(p, 0, size - 1)
    else:
        p = p % size
    return xp.asarray(p)


def _check_mode_amounts(shape, first, pairs, mode):
    """PyTorch's limits on the amounts of the non-constant modes."""
    for axis, (before, after) in enumerate(pairs, first):
        size = shape[axis]
        if before < 0 or after < 0:
            raise ValueError(f"pad: negative padding ({before}, {after}) of dim {axis} is only "
                             "supported in constant mode")
        if (before or after) and size == 0:
            raise ValueError(f"pad: dim {axis} of the input (shape {tuple(shape)}) is empty, so "
                             f"{mode} padding has nothing to copy")
        if mode == "reflect" and (before >= size or after >= size):
            raise ValueError(f"Argument #4: Padding size should be less than the corresponding "
                             f"input dimension, but got: padding ({before}, {after}) at dimension "
                             f"{axis} of input {tuple(shape)}")
        if mode == "circular" and (before > size or after > size):
            raise ValueError(f"Padding value causes wrapping around more than once: padding "
                             f"({before}, {after}) at dimension {axis} of input {tuple(shape)}")


def pad(input, pad, mode="constant", value=None):
    """`input` padded by `pad` (see the module's doc), as torch.nn.functional.pad."""
    _check_tensors("pad", input=input)
    if mode not in PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(map(repr, PAD_MODES))}, got "
                         f"{mode!r}")
    if value is not None and mode != "constant":
        raise ValueError(f"Padding mode {mode!r} doesn't take in value argument")
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise TypeError(f"pad: value must be a real number, got {value!r}")
    data = input._data
    xp = _xp(data)
    pairs = _pad_amounts(pad, data.ndim)
    first = data.ndim - len(pairs)
    if mode == "constant":
        return _pad_constant(input, xp, first, pairs, 0.0 if value is None else value)
    _check_mode_amounts(data.shape, first, pairs, mode)
    maps = [(axis, _source_index(xp, data.shape[axis], b, a, mode))
            for axis, (b, a) in enumerate(pairs, first) if b or a]
    out = data
    for axis, index in maps:
        out = xp.take(out, index, axis=axis)
    shape = data.shape

    def backward(g):
        # the take of each dim in reverse: every gradient added to the position it came from
        for axis, index in reversed(maps):
            size = shape[axis]
            moved = xp.moveaxis(g, axis, 0)
            acc = xp.zeros((size,) + moved.shape[1:], g.dtype)
            if xp is np:
                np.add.at(acc, index, moved)
            else:
                import cupyx

                cupyx.scatter_add(acc, index, moved)
            g = xp.ascontiguousarray(xp.moveaxis(acc, 0, axis))
        return (g,)

    return _make(xp.ascontiguousarray(out), (input,), backward, reads=False)


def _pad_constant(input, xp, first, pairs, value):
    """Constant padding: negative amounts crop first, then the positive ones pad with value."""
    data = input._data
    crop = [slice(None)] * data.ndim
    widths = [(0, 0)] * data.ndim
    for axis, (before, after) in enumerate(pairs, first):
        size = data.shape[axis]
        start, stop = max(-before, 0), size - max(-after, 0)
        if stop < start:
            raise ValueError(f"pad: padding ({before}, {after}) of dim {axis} leaves it "
                             f"{stop - start} long (input shape {tuple(data.shape)})")
        crop[axis] = slice(start, stop)
        widths[axis] = (max(before, 0), max(after, 0))
    crop = tuple(crop)
    cropped = data[crop]
    out = xp.pad(cropped, widths, mode="constant", constant_values=value).astype(data.dtype,
                                                                                   copy=False)
    inner = tuple(slice(b, b + n) for (b, _), n in zip(widths, cropped.shape))
    shape = data.shape

    def backward(g):
        dx = xp.zeros(shape, g.dtype)
        dx[crop] = g[inner]
        return (dx,)

    return _make(xp.ascontiguousarray(out), (input,), backward, reads=False)
