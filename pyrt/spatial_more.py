"""More ops over the spatial dims, with PyTorch's names, arguments and errors: conv1d and the
1-d pools, pixel_shuffle and pixel_unshuffle, and unfold and fold (im2col and col2im).

conv1d, max_pool1d and avg_pool1d treat an [n, c, length] input as images one row tall,
[n, c, 1, length], and run the 2-d ops (pyrt/spatial.py) on the parallel C kernels, their
gradients included. pixel_shuffle and pixel_unshuffle are a reshape, a permutation and a
reshape, differentiable as such. unfold gathers each sliding block of the zero-padded input
into a column and fold adds the columns back into place; each is the other's gradient, and
both work one kernel tap at a time on strided slices, so they run on NumPy or CuPy arrays
alike.
"""

import numbers
import operator

from pyrt.functional import _make, _xp
from pyrt.ops.conv import _pair
from pyrt.spatial import _check_tensors, avg_pool2d, conv2d, max_pool2d

__all__ = ["avg_pool1d", "conv1d", "fold", "max_pool1d", "pixel_shuffle", "pixel_unshuffle",
           "unfold"]


def single(value, name, minimum):
    """An int, or a sequence of one int, at least `minimum`, as an int (PyTorch's 1-d ops and
    layers take either)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{name} must be an int or a tuple of one int, got {value!r}")
        value = value[0]
    return _pair(value, name, minimum)[0]


def _check_rows(x, message):
    """RuntimeError `message` unless x is [n, c, length] or [c, length]."""
    if x.ndim not in (2, 3):
        raise RuntimeError(message)


def _rows(x):
    """x [n, c, length] (or [c, length]) as images one row tall [n, c, 1, length], and whether
    it had a batch dim."""
    if x.ndim == 2:
        return x.reshape(1, x.shape[0], 1, x.shape[1]), False
    return x.reshape(x.shape[0], x.shape[1], 1, x.shape[2]), True


def _unrow(y, batched):
    """A result [n, k, 1, out] of _rows' input as [n, k, out] (or [k, out])."""
    return y.reshape(*y.shape[int(not batched):2], y.shape[3])


# ---- convolution and pooling of sequences ------------------------------------------------------


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of input [n, c, length] (or [c, length]) with weight [k, c / groups,
    kernel_size], plus bias [k]; `padding` is an int, "valid" or "same"."""
    _check_tensors("conv1d", input=input, weight=weight, bias=bias)
    _check_rows(input, f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
                       f"input of size: {list(input.shape)}")
    if weight.ndim != 3:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {list(weight.shape)}, but got "
                           f"{input.ndim}-dimensional input of size {list(input.shape)} instead")
    if not isinstance(padding, str):
        padding = (0, single(padding, "padding", 0))
    x, batched = _rows(input)
    w = weight.reshape(weight.shape[0], weight.shape[1], 1, weight.shape[2])
    y = conv2d(x, w, bias, (1, single(stride, "stride", 1)), padding,
               (1, single(dilation, "dilation", 1)), groups)
    return _unrow(y, batched)


def _pool_window(kernel_size, stride, padding):
    """The 2-d pool's (kernel, stride, padding) of a 1-d pool's, one row tall."""
    kernel = single(kernel_size, "kernel_size", 1)
    stride = kernel if stride is None or stride == [] else single(stride, "stride", 1)
    pad = single(padding, "padding", 0)
    return (1, kernel), (1, stride), (0, pad)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each window of input [n, c, length] (or [c, length]), its taps
    `dilation` apart; with return_indices also the index of each maximum along the length."""
    _check_tensors("max_pool1d", input=input)
    _check_rows(input, f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                       f"batch size for input, but got:{list(input.shape)}")
    x, batched = _rows(input)
    kernel, stride, pad = _pool_window(kernel_size, stride, padding)
    dilation = single(dilation, "dilation", 1)
    if pad[1] > kernel[1] // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but "
                           f"got padding={pad[1]} and kernel_size={kernel[1]}")
    out = max_pool2d(x, kernel, stride, pad, (1, dilation), ceil_mode, return_indices)
    if return_indices:
        return _unrow(out[0], batched), _unrow(out[1], batched)
    return _unrow(out, batched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """The mean of each window of input [n, c, length] (or [c, length]), the padding counted
    as zeros in it unless count_include_pad is False."""
    _check_tensors("avg_pool1d", input=input)
    _check_rows(input, f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                       f"for argument #1 'self' (while checking arguments for avg_pool1d)")
    x, batched = _rows(input)
    kernel, stride, pad = _pool_window(kernel_size, stride, padding)
    return _unrow(avg_pool2d(x, kernel, stride, pad, ceil_mode, count_include_pad), batched)


# ---- pixel shuffling ---------------------------------------------------------------------------


def _factor(value, op, name):
    """A positive int factor of pixel_shuffle or pixel_unshuffle, or PyTorch's errors."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not "
                        f"{type(value).__name__}")
    if value <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {value}")
    return operator.index(value)


def _check_3d(input, op):
    _check_tensors(op, input=input)
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")


def pixel_shuffle(input, upscale_factor):
    """[*, c * r * r, h, w] -> [*, c, h * r, w * r], r = upscale_factor: channel
    c * r * r + i * r + j becomes pixel (i, j) of each r x r block of channel c."""
    _check_3d(input, "pixel_shuffle")
    r = _factor(upscale_factor, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    # [*, c, i, j, h, w] -> [*, c, h, i, w, j]
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """[*, c, h * r, w * r] -> [*, c * r * r, h, w], r = downscale_factor: pixel_shuffle
    undone."""
    _check_3d(input, "pixel_unshuffle")
    r = _factor(downscale_factor, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    for what, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    # [*, c, h, i, w, j] -> [*, c, i, j, h, w]
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


# ---- unfold and fold -----------------------------------------------------------------------------


def _blocks(size, kernel_size, dilation, padding, stride):
    """The checked (kernel, dilation, padding, stride) pairs and the number of sliding blocks
    (oh, ow) over an image of `size` (h, w)."""
    window = (_pair(kernel_size, "kernel_size", 1), _pair(dilation, "dilation", 1),
              _pair(padding, "padding", 0), _pair(stride, "stride", 1))
    blocks = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                   for n, k, d, p, s in zip(size, *window))
    return window, blocks


def _taps(kernel, dilation, stride, blocks):
    """For each tap (i, j) of the kernel, the strided slices of the padded image it reads in
    every block."""
    (kh, kw), (dh, dw), (sh, sw), (oh, ow) = kernel, dilation, stride, blocks
    for i in range(kh):
        for j in range(kw):
            yield i, j, (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                         slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


def _im2col(x, window, blocks):
    """x [n, c, h, w] -> [n, c * kh * kw, oh * ow]: each block's zero-padded pixels."""
    kernel, dilation, (ph, pw), stride = window
    xp = _xp(x)
    n, c = x.shape[:2]
    padded = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    cols = xp.empty((n, c, *kernel, *blocks), x.dtype)
    for i, j, (rows, columns) in _taps(kernel, dilation, stride, blocks):
        cols[:, :, i, j] = padded[:, :, rows, columns]
    return cols.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])


def _col2im(cols, size, window, blocks):
    """cols [n, c * kh * kw, oh * ow] -> [n, c, h, w]: each column added back to the pixels it
    came from (im2col's adjoint), the padding dropped."""
    kernel, dilation, (ph, pw), stride = window
    xp = _xp(cols)
    n = cols.shape[0]
    c = cols.shape[1] // (kernel[0] * kernel[1])
    cols = cols.reshape(n, c, *kernel, *blocks)
    padded = xp.zeros((n, c, size[0] + 2 * ph, size[1] + 2 * pw), cols.dtype)
    for i, j, (rows, columns) in _taps(kernel, dilation, stride, blocks):
        padded[:, :, rows, columns] += cols[:, :, i, j]
    return xp.ascontiguousarray(padded[:, :, ph:ph + size[0], pw:pw + size[1]])


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of input [n, c, h, w] (or [c, h, w]) as columns: [n, c * kh * kw,
    blocks], channel-major, then the kernel's rows and columns."""
    _check_tensors("unfold", input=input)
    if input.ndim not in (3, 4) or 0 in input.shape[1:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and non-zero dimensions for input, but got: {list(input.shape)}")
    x = input if input.ndim == 4 else input.reshape(1, *input.shape)
    size = x.shape[2:]
    window, blocks = _blocks(size, kernel_size, dilation, padding, stride)
    if min(blocks) < 1:
        kernel, dil, pad, _ = window
        raise RuntimeError(f"Given input with spatial size {tuple(size)}, kernel_size={kernel}, "
                           f"dilation={dil}, padding={pad}, calculated shape of the array of "
                           f"sliding blocks as {tuple(max(b, 0) for b in blocks)}, but its "
                           f"components must be at least one.")
    y = _make(_im2col(x._data, window, blocks), (x,),
              lambda g: (_col2im(g, size, window, blocks),), reads=False)
    return y if input.ndim == 4 else y.reshape(y.shape[1:])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns [n, c * kh * kw, blocks] (or [c * kh * kw, blocks]) summed into an image
    [n, c, *output_size]: each sliding block's values added to its pixels (unfold's
    adjoint)."""
    _check_tensors("fold", input=input)
    if input.ndim not in (2, 3) or 0 in input.shape[1:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    x = input if input.ndim == 3 else input.reshape(1, *input.shape)
    size = _pair(output_size, "output_size", 1)
    window, blocks = _blocks(size, kernel_size, dilation, padding, stride)
    kernel, dil, pad, step = window
    if x.shape[1] % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}.")
    if min(blocks) < 1 or x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dil}, "
                           f"padding={pad}, stride={step}, expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    y = _make(_col2im(x._data, size, window, blocks), (x,),
              lambda g: (_im2col(g, window, blocks),), reads=False)
    return y if input.ndim == 3 else y.reshape(y.shape[1:])
