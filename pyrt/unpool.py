"""Max unpooling and power-average pooling, with torch.nn.functional's names, arguments and
errors: max_unpool1d/2d, lp_pool1d/2d, and the max pools that always return their indices
(max_pool1d_with_indices and its kin).

max_unpool is max pooling's partial inverse. Max pooling keeps each window's maximum and,
with return_indices, the flat position of that maximum within its (n, c) plane; unpooling
writes each value back at its position in a zero plane of the output size, so every maximum
returns to where it was and every other element becomes 0. The output size defaults to
(in - 1) * stride + kernel_size - 2 * padding per spatial dim, the size a pool of these
settings maps back onto the input's; where the pooled input had rows or columns the windows
never reached, pass its size as output_size. The values go to one flat array of all planes
at once, each index offset by the start of its plane; a position named twice (overlapping
windows sharing a maximum) keeps one of its values. The gradient of an input element is the
output gradient at the position it was written to: a gather through the same flat offsets.
Both passes are array indexing, so they run on NumPy or CuPy arrays alike.

lp_pool is the p-norm of each window, (sum of x ** p) ** (1 / p). As PyTorch does, it is
composed from differentiable ops, so autograd derives its gradient: the window mean of
x ** p from avg_pool, times the window size, to the power 1 / p. p = inf and -inf are the
maximum and the minimum of |x| over the window (max pooling). Odd or fractional p of
negative inputs give negative sums, whose root is NaN, as in PyTorch.
"""

import math
import numbers

from pyrt.adaptive_pool import adaptive_max_pool1d, adaptive_max_pool2d
from pyrt.functional import I64, _make, _tensor, _xp, mul, neg, pow, relu, sign
from pyrt.functional import abs as abs_
from pyrt.ops.conv import _pair
from pyrt.shapes import squeeze, unsqueeze
from pyrt.spatial import avg_pool2d, max_pool2d
from pyrt.spatial_more import avg_pool1d, max_pool1d, single
from pyrt.volumes import avg_pool3d, max_pool3d, triple

__all__ = ["adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _check_tensor(value, name, argument, position):
    if not isinstance(value, _tensor()):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, "
                        f"not {type(value).__name__}")


# ---- max unpooling --------------------------------------------------------------------------


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of input [n, c, l] (or [c, l]) written to positions `indices` (along the
    output's length, as max_pool1d returns them) of a zero output [n, c, out_l]. out_l is
    (l - 1) * stride + kernel_size - 2 * padding unless output_size gives it: as [out_l], or
    as the full [n, c, out_l]."""
    kernel = (single(kernel_size, "kernel_size", 1),)
    stride = kernel if stride is None else (single(stride, "stride", 1),)
    pad = (single(padding, "padding", 0),)
    return _max_unpool(input, indices, kernel, stride, pad, output_size, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of input [n, c, h, w] (or [c, h, w]) written to positions `indices` (flat within
    each out_h * out_w plane, as max_pool2d returns them) of a zero output
    [n, c, out_h, out_w]. Each output size is (in - 1) * stride + kernel_size - 2 * padding
    unless output_size gives them: as [out_h, out_w], or as the full [n, c, out_h, out_w]."""
    kernel = _pair(kernel_size, "kernel_size", 1)
    stride = kernel if stride is None else _pair(stride, "stride", 1)
    pad = _pair(padding, "padding", 0)
    return _max_unpool(input, indices, kernel, stride, pad, output_size, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Values of input [n, c, d, h, w] (or [c, d, h, w]) written to positions `indices` (flat
    within each volume, as max_pool3d returns them) of a zero output [n, c, out_d, out_h,
    out_w]; sizes as max_unpool2d's, one more of them."""
    kernel = triple(kernel_size, "kernel_size", 1, "max_unpool3d")
    stride = kernel if stride is None else triple(stride, "stride", 1, "max_unpool3d")
    pad = triple(padding, "padding", 0, "max_unpool3d")
    return _max_unpool(input, indices, kernel, stride, pad, output_size, "max_unpool3d")


def _max_unpool(input, indices, kernel, stride, pad, output_size, name):
    """max_unpool over the last len(kernel) dims of `input`, the others batch and channel."""
    _check_tensor(input, name, "input", 1)
    _check_tensor(indices, name, "indices", 2)
    k = len(kernel)
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"Input to {name} should be a {k + 1}d or {k + 2}d Tensor, but got "
                           f"a tensor with {input.ndim} dimensions.")
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype}')
    if indices._data.dtype != I64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{indices.dtype}")
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {list(input.shape)} with dimension {dim} "
                               f"being empty.")
    size = _unpool_size(input.shape[-k:], kernel, stride, pad, output_size, name)
    return _scatter_planes(input, indices._data, size)


def _unpool_size(in_size, kernel, stride, pad, output_size, name):
    """The spatial output size: the default (in - 1) * stride + kernel - 2 * pad, or
    output_size (spatial or full), which must lie strictly within one stride of it, as
    PyTorch checks."""
    k = len(kernel)
    default = [(n - 1) * s + kk - 2 * p for n, kk, s, p in zip(in_size, kernel, stride, pad)]
    if output_size is None:
        size = default
    else:
        if isinstance(output_size, (str, bytes)) or not hasattr(output_size, "__len__"):
            raise TypeError(f"{name}(): argument 'output_size' must be a sequence of {k} or "
                            f"{k + 2} ints, got {type(output_size).__name__}")
        size = list(output_size)
        if len(size) == k + 2:
            size = size[2:]
        if len(size) != k:
            raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} "
                             f"elements, but it has a length of '{len(size)}'")
        for n in size:
            if isinstance(n, bool) or not isinstance(n, numbers.Integral):
                raise TypeError(f"{name}(): argument 'output_size' must be a sequence of ints, "
                                f"but found element of type {type(n).__name__}")
        for d in range(k):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < size[d] < high:
                raise ValueError(f'invalid output_size "{size}" (dim {d} must be between {low} '
                                 f'and {high})')
    for d in range(k):
        if size[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={size[d]}")
    return tuple(int(n) for n in size)


def _scatter_planes(input, idx, size):
    """A zero [*lead, *size] output with input's values at the flat positions idx of their
    planes (lead: the dims before the spatial ones); its gradient gathers from them."""
    x = input._data
    xp = _xp(x)
    lead = input.shape[:input.ndim - len(size)]
    plane, planes = math.prod(size), math.prod(lead)
    shape = input.shape
    if plane == 0:  # no position to write to (nor to check an index against), as in PyTorch
        return _make(xp.zeros((*lead, *size), x.dtype), (input,),
                     lambda g: (xp.zeros(shape, x.dtype),), reads=False)
    where = idx.reshape(planes, math.prod(input.shape[len(lead):]))
    bad = (where < 0) | (where >= plane)
    if where.size and bool(bad.any()):
        first = int(where.reshape(-1)[int(xp.argmax(bad.reshape(-1)))])
        raise RuntimeError(f"Found an invalid max index: {first} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    # every plane's positions shifted by the start of that plane: one flat index for all
    flat = (where + xp.arange(planes, dtype=I64)[:, None] * plane).reshape(-1)
    out = xp.zeros(planes * plane, x.dtype)
    out[flat] = x.reshape(-1)
    return _make(out.reshape(*lead, *size), (input,),
                 lambda g: (g.reshape(-1)[flat].reshape(shape),), reads=False)


# ---- power-average pooling --------------------------------------------------------------------


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm (p = norm_type) of each kernel_size window of input [n, c, l] (or [c, l]),
    windows `stride` apart (default kernel_size), no padding."""
    name = "lp_pool1d"
    p = _norm_type(norm_type, name)
    kernel = single(kernel_size, "kernel_size", 1)
    step = kernel if stride is None else single(stride, "stride", 1)
    _check_tensor(input, name, "input", 1)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{name}(): Expected 2D or 3D (batch mode) input, but got a "
                           f"{input.ndim}D tensor of size {list(input.shape)}")
    _check_windows(input.shape[-2:-1] + (1,) + input.shape[-1:], (1, kernel), (1, step),
                   ceil_mode)
    return _lp_norms(input, p, kernel, step, ceil_mode, avg_pool1d, max_pool1d, kernel)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm (p = norm_type) of each kernel_size window of input [n, c, h, w] (or
    [c, h, w]), windows `stride` apart (default kernel_size), no padding."""
    name = "lp_pool2d"
    p = _norm_type(norm_type, name)
    kernel = _pair(kernel_size, "kernel_size", 1)
    step = kernel if stride is None else _pair(stride, "stride", 1)
    _check_tensor(input, name, "input", 1)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(input.shape)}")
    _check_windows(input.shape[-3:], kernel, step, ceil_mode)
    x = input if input.ndim == 4 else unsqueeze(input, 0)
    y = _lp_norms(x, p, kernel, step, ceil_mode, avg_pool2d, max_pool2d, math.prod(kernel))
    return y if input.ndim == 4 else squeeze(y, 0)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm (p = norm_type) of each kernel_size window of input [n, c, d, h, w] (or
    [c, d, h, w]), windows `stride` apart (default kernel_size), no padding."""
    name = "lp_pool3d"
    p = _norm_type(norm_type, name)
    kernel = triple(kernel_size, "kernel_size", 1, name)
    step = kernel if stride is None else triple(stride, "stride", 1, name)
    _check_tensor(input, name, "input", 1)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"non-empty 4D or 5D (batch mode) tensor expected for input, but "
                           f"got {list(input.shape)}")
    _check_windows(input.shape[-4:], kernel, step, ceil_mode)
    return _lp_norms(input, p, kernel, step, ceil_mode, avg_pool3d, max_pool3d,
                     math.prod(kernel))


def _lp_norms(x, p, kernel, step, ceil_mode, avg_pool, max_pool, count):
    """The p-norm of each window of `count` elements: the root of the window mean of x ** p
    times count (avg_pool), or for p = +-inf the extreme |x| (max_pool)."""
    if math.isinf(p):
        return _abs_extreme(max_pool, x, kernel, step, ceil_mode, p)
    return _root_of_sum(avg_pool(pow(x, p), kernel, step, 0, ceil_mode), count, p)


def _norm_type(norm_type, name):
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real):
        raise TypeError(f"{name}(): argument 'norm_type' must be a real number, got "
                        f"{type(norm_type).__name__}")
    if norm_type == 0:
        raise ZeroDivisionError(f"{name}(): norm_type must be nonzero (the root 1 / norm_type), "
                                f"got {norm_type}")
    return float(norm_type)


def _check_windows(size, kernel, stride, ceil_mode):
    """PyTorch's error where no window fits: size is (c, *spatial), and without padding a dim has
    floor((n - k) / s) + 1 windows (ceil with ceil_mode, less one that would start past the
    end)."""
    out = []
    for n, k, s in zip(size[1:], kernel, stride):
        count = -(-(n - k) // s) + 1 if ceil_mode else (n - k) // s + 1
        if ceil_mode and (count - 1) * s >= n:
            count -= 1
        out.append(count)
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, size))}). Calculated output "
                           f"size: ({'x'.join(map(str, (size[0], *out)))}). Output size is too "
                           f"small")


def _root_of_sum(mean, count, p):
    """(window mean of x ** p, times the window's `count` elements) ** (1 / p). The mean
    goes through sign(mean) * relu(|mean|), which equals it, for its gradient, as in
    PyTorch: where a window's sum is 0 the root's gradient is infinite, and relu's, 0 there,
    masks it, so that the window passes no gradient instead of NaN."""
    return pow(mul(mul(sign(mean), relu(abs_(mean))), float(count)), 1.0 / p)


def _abs_extreme(max_pool, x, kernel, stride, ceil_mode, p):
    """The limits p = inf and -inf: the largest, or the smallest, |x| of each window."""
    if p > 0:
        return max_pool(abs_(x), kernel, stride, 0, 1, ceil_mode)
    return neg(max_pool(neg(abs_(x)), kernel, stride, 0, 1, ceil_mode))


# ---- max pooling that returns its indices -----------------------------------------------------


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """(maxima, indices along the length) of max_pool1d over input [n, c, l] (or [c, l]);
    return_indices is there for PyTorch's signature: the indices always come back."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                      return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """(maxima, flat indices within each h * w plane) of max_pool2d over input [n, c, h, w]
    or, as a batch of one, [c, h, w]; return_indices is there for PyTorch's signature."""
    _check_tensor(input, "max_pool2d_with_indices", "input", 1)
    if input.ndim not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    x = input if input.ndim == 4 else unsqueeze(input, 0)
    y, idx = max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices=True)
    if input.ndim == 4:
        return y, idx
    return squeeze(y, 0), squeeze(idx, 0)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """(maxima, indices along the length) of adaptive_max_pool1d; return_indices is there for
    PyTorch's signature."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """(maxima, flat indices within each h * w plane) of adaptive_max_pool2d; return_indices
    is there for PyTorch's signature."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)
