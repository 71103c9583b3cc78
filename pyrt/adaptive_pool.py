"""Adaptive average and max pooling of [n, c, h, w] or [c, h, w] tensors: the caller names
the output size and the windows follow from it, as torch.nn.functional's
adaptive_avg_pool2d and adaptive_max_pool2d.

Output row i of oh pools the input rows floor(i * h / oh) up to ceil((i + 1) * h / oh)
(columns likewise), so the bins cover the input, differ in size by at most one, and overlap
where oh does not divide h. Where both divide, every bin is a kernel_size = stride window
and the pooling is plain avg_pool2d or max_pool2d, on the parallel C kernels (global average
pooling, an output of 1, is the common case). Otherwise array operations do it, on either
backend:

- average pooling is linear and separable: out = A_h @ x @ A_w^T, where row i of A_h holds
  1 / (bin size) over bin i; two matrix products (pyrt's GEMM on the CPU), and the gradient
  is A_h^T @ g @ A_w;
- max pooling gathers each bin into a padded window (a short bin repeats its last position,
  which cannot change its maximum nor move its first one) and takes the first maximum, as
  PyTorch does (a NaN wins, the last NaN of a bin); the gradient adds each output's gradient
  to the input position of its maximum (bins may share one).
"""

import numbers

import numpy as np

from pyrt import ops
from pyrt.functional import _make, _tensor, _xp
from pyrt.ops._checks import F32, I64
from pyrt.shapes import squeeze, unsqueeze
from pyrt.spatial import avg_pool2d, max_pool2d

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d"]


def output_size_pair(output_size, name):
    """`output_size` of function `name` as a pair (oh, ow), None where a dim keeps the input's
    size: an int, or a sequence of two ints or Nones, checked as PyTorch checks it."""
    if isinstance(output_size, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'output_size' must be tuple of ints, not bool")
    if isinstance(output_size, numbers.Integral):
        pair = (output_size, output_size)
    else:
        try:
            pair = tuple(output_size)
        except TypeError:
            raise TypeError(f"{name}(): argument 'output_size' must be an int or a tuple of "
                            f"two ints or Nones, got {type(output_size).__name__}") from None
    for size in pair:
        if size is not None and (isinstance(size, (bool, np.bool_))
                                 or not isinstance(size, numbers.Integral)):
            raise TypeError(f"{name}(): argument 'output_size' must be tuple of ints, but "
                            f"found element of type {type(size).__name__}")
    if len(pair) != 2:
        raise RuntimeError(f"{name}: output_size must be 2, got {output_size!r}")
    if any(size is not None and size < 0 for size in pair):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {output_size!r}")
    return tuple(None if size is None else int(size) for size in pair)


def _checked_input(x, name, channels_nonempty):
    """The [h, w] plane size of input `x` ([n, c, h, w] or [c, h, w]), or PyTorch's errors:
    h and w must not be empty, nor (with `channels_nonempty`, as max pooling checks) any dim
    after the first."""
    if not isinstance(x, _tensor()):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got {type(x).__name__}")
    shape = x.shape
    if len(shape) not in (3, 4):
        raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got {list(shape)}")
    for dim in range(1 if channels_nonempty else len(shape) - 2, len(shape)):
        if shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(shape)} with dimension "
                               f"{dim} being empty")
    return shape[-2:]


def _bins(size, out):
    """(start, stop) arrays of the `out` bins over `size` positions."""
    i = np.arange(out)
    return (i * size) // out, -(-(i + 1) * size // out)


def _evenly_divided(h, w, oh, ow):
    return oh > 0 and ow > 0 and h % oh == 0 and w % ow == 0


def _as_batch(x):
    """x as [n, c, h, w] (a 3-d input as a batch of one), and the shape to give the result."""
    if x.ndim == 4:
        return x, None
    return x.reshape(1, *x.shape), x.shape[0]


def _from_batch(y, channels):
    return y if channels is None else y.reshape(channels, *y.shape[2:])


# ---- average pooling ------------------------------------------------------------------------


def adaptive_avg_pool2d(input, output_size):
    """The mean of each of oh x ow bins of `input` ([n, c, h, w] or [c, h, w]); output_size
    an int, or a pair of which None keeps that dim's size."""
    name = "adaptive_avg_pool2d"
    pair = output_size_pair(output_size, name)
    h, w = _checked_input(input, name, channels_nonempty=False)
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be "
                           f"either a floating point or complex dtype. Got: {input.dtype}")
    oh, ow = (h if pair[0] is None else pair[0]), (w if pair[1] is None else pair[1])
    if _evenly_divided(h, w, oh, ow):
        x, channels = _as_batch(input)
        kernel = (h // oh, w // ow)
        return _from_batch(avg_pool2d(x, kernel, kernel), channels)
    xp = _xp(input._data)
    rows, cols = _averaging_matrix(xp, h, oh), _averaging_matrix(xp, w, ow)
    shape = input.shape
    y = _separable(input._data, rows, cols, (*shape[:-2], oh, ow), transpose=False)
    return _make(y, (input,), lambda g: (_separable(g, rows, cols, shape, transpose=True),),
                 reads=False)


def _averaging_matrix(xp, size, out):
    """[out, size]: row i averages bin i (None when the bins are the positions themselves)."""
    if out == size:
        return None
    start, stop = _bins(size, out)
    j = np.arange(size)
    inside = (j >= start[:, None]) & (j < stop[:, None])
    return xp.asarray(inside / (stop - start)[:, None], dtype=F32)


def _separable(a, rows, cols, shape, transpose):
    """rows @ a @ cols^T over a's last two dims (rows^T @ a @ cols with `transpose`), a matrix
    of None standing for the identity; the result has `shape`."""
    xp = _xp(a)
    if 0 in a.shape or 0 in shape:
        return xp.zeros(shape, F32)
    a = _along_last(a, cols, transpose)
    if rows is not None:
        a = xp.ascontiguousarray(xp.swapaxes(a, -1, -2))
        a = xp.swapaxes(_along_last(a, rows, transpose), -1, -2)
    return xp.ascontiguousarray(a).reshape(shape)


def _along_last(a, m, transpose):
    """a @ m^T (a @ m with `transpose`) over a's last dim, as one GEMM."""
    if m is None:
        return a
    out = m.shape[1] if transpose else m.shape[0]
    a2 = _xp(a).ascontiguousarray(a).reshape(-1, a.shape[-1])
    return ops.matmul(a2, m, trans_b=not transpose).reshape(*a.shape[:-1], out)


# ---- max pooling ----------------------------------------------------------------------------


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum of each of oh x ow bins of `input` ([n, c, h, w] or [c, h, w]); with
    return_indices also the flat index of each maximum within its h * w plane, an int64
    tensor, as PyTorch's."""
    name = "adaptive_max_pool2d"
    if not isinstance(return_indices, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'return_indices' must be a bool, got "
                        f"{type(return_indices).__name__}")
    pair = output_size_pair(output_size, name)
    h, w = _checked_input(input, name, channels_nonempty=True)
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype}')
    oh, ow = (h if pair[0] is None else pair[0]), (w if pair[1] is None else pair[1])
    if _evenly_divided(h, w, oh, ow):
        x, channels = _as_batch(input)
        kernel = (h // oh, w // ow)
        out = max_pool2d(x, kernel, kernel, return_indices=bool(return_indices))
        if return_indices:
            return _from_batch(out[0], channels), _from_batch(out[1], channels)
        return _from_batch(out, channels)
    y, idx = _bin_maxima(input._data, h, w, oh, ow)
    shape = input.shape
    out = _make(y, (input,), lambda g: (_scatter_to_maxima(g, idx, shape),), reads=False)
    if return_indices:
        return out, _tensor()(idx.copy())  # a copy: writing the indices cannot move gradients
    return out


def _windows(size, out):
    """[out, k] input positions of each bin, k the longest bin's size; a shorter bin repeats
    its last position."""
    start, stop = _bins(size, out)
    k = int((stop - start).max()) if out else 0
    return np.minimum(start[:, None] + np.arange(k), stop[:, None] - 1)


def _bin_maxima(x, h, w, oh, ow):
    """(maxima, flat indices within the plane) of the bins of x [..., h, w]."""
    xp = _xp(x)
    lead = x.shape[:-2]
    if 0 in x.shape or oh == 0 or ow == 0:
        return xp.zeros((*lead, oh, ow), F32), xp.zeros((*lead, oh, ow), I64)
    rows, cols = xp.asarray(_windows(h, oh)), xp.asarray(_windows(w, ow))
    kh, kw = rows.shape[1], cols.shape[1]
    # [..., oh, kh, ow, kw] -> [..., oh, ow, kh * kw], each bin's window in row-major order
    patches = x[..., rows[:, :, None, None], cols[None, None, :, :]]
    patches = xp.moveaxis(patches, -3, -2).reshape(*lead, oh, ow, kh * kw)
    at = xp.argmax(patches, axis=-1)  # the first maximum (NumPy's and CuPy's: the first NaN)
    nan = xp.isnan(patches)
    if bool(nan.any()):  # PyTorch keeps the last NaN: v > max fails, v != v takes each
        last_nan = kh * kw - 1 - xp.argmax(nan[..., ::-1], axis=-1)
        at = xp.where(nan.any(axis=-1), last_nan, at)
    y = xp.take_along_axis(patches, at[..., None], axis=-1)[..., 0]
    r = rows[xp.arange(oh)[:, None], at // kw]  # [..., oh, ow] rows and columns in the input
    c = cols[xp.arange(ow), at % kw]
    return xp.ascontiguousarray(y), (r * w + c).astype(I64)


def _scatter_to_maxima(g, idx, shape):
    """The gradient of the bin maxima: each g added to the input position of its maximum."""
    xp = _xp(g)
    plane = shape[-2] * shape[-1]
    planes = int(np.prod(shape[:-2]))
    if g.size == 0:
        return xp.zeros(shape, F32)
    flat = (xp.arange(planes, dtype=I64).reshape(*shape[:-2], 1, 1) * plane + idx).ravel()
    summed = xp.bincount(flat, weights=g.ravel(), minlength=planes * plane)
    return summed.astype(F32).reshape(shape)


def _one_d(input, output_size, name):
    """input [n, c, l] or [c, l] with a height of 1 put before l, and output_size as the
    matching (1, size) pair, for the 2-d pools."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"{name})")
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = output_size[0]
    if isinstance(output_size, bool) or not isinstance(output_size, numbers.Integral):
        raise TypeError(f"{name}(): output_size must be an int or a 1-tuple of one, got "
                        f"{output_size!r}")
    return unsqueeze(input, -2), (1, int(output_size))


def adaptive_avg_pool1d(input, output_size):
    """The mean of each of output_size bins of `input` ([n, c, l] or [c, l])."""
    x, size = _one_d(input, output_size, "adaptive_avg_pool1d")
    return squeeze(adaptive_avg_pool2d(x, size), -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum of each of output_size bins of `input` ([n, c, l] or [c, l]); with
    return_indices also the index of each maximum along l, an int64 tensor."""
    x, size = _one_d(input, output_size, "adaptive_max_pool1d")
    out = adaptive_max_pool2d(x, size, return_indices)
    if return_indices:
        return squeeze(out[0], -2), squeeze(out[1], -2)
    return squeeze(out, -2)
