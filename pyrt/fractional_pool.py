"""Fractional max pooling (Graham, "Fractional Max-Pooling", 2014) with torch.nn.functional's
names, arguments and errors: fractional_max_pool2d/3d and their _with_indices forms.

A fractional pool shrinks each spatial dim from `in` to a chosen `out` (any size, not only
in / stride) with windows of a fixed `kernel` size whose starts advance by steps of 1 or 2
in a pseudo-random pattern. Every (n, c) plane draws one number u in [0, 1) per spatial dim
(`_random_samples`, [N, C, dims]) and, as PyTorch computes it in float32 arithmetic,

    alpha = (in - kernel) / (out - 1)
    start[i] = int((i + u) * alpha) - int(u * alpha)      for i < out - 1
    start[out - 1] = in - kernel

so the windows span the input from its first to its last element. Each output element is
the maximum of its window (the first maximum in row-major order; a NaN wins over any number,
the last NaN over earlier ones) and its index is that element's flat position in its plane,
as max_pool's are, ready for max_unpool. The gradient of the input is the output gradient
added at those positions. Both passes are array gathers and a bincount, so they run on NumPy
or CuPy arrays alike.
"""

import math
import numbers

import numpy as np

from pyrt.functional import _make, _tensor, _xp

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _sizes(value, dims, name, op):
    """An int or a sequence of one or `dims` ints (at least 0) as a `dims`-tuple."""
    values = [value] if isinstance(value, numbers.Integral) else value
    if isinstance(values, (tuple, list)) and len(values) == 1:
        values = list(values) * dims
    if not isinstance(values, (tuple, list)) or len(values) != dims:
        raise RuntimeError(f"{op}: {name} must either be a single Int or tuple of "
                           f"{'Ints' if dims == 2 else 'three Ints'}")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{op}: {name} must hold ints, got {value!r}")
        if v < 0:
            raise RuntimeError(f"{op}: {name} must be non-negative, got {value!r}")
    return tuple(int(v) for v in values)


def _ratios(value, dims, op):
    """An output_ratio: a number or a sequence of one or `dims` numbers, each in (0, 1)."""
    values = [value] if isinstance(value, numbers.Real) else value
    if isinstance(values, (tuple, list)) and len(values) == 1:
        values = list(values) * dims
    if not isinstance(values, (tuple, list)) or len(values) != dims:
        raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of "
                         f"Ints.")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{op}: output_ratio must hold numbers, got {value!r}")
        if not 0 < v < 1:
            raise ValueError(f"output_ratio must be between 0 and 1 (got {value!r})")
    return tuple(float(v) for v in values)


def _starts(samples, size, out, kernel):
    """The window starts [N, C, out] of one spatial dim, from the samples [N, C] (float32)
    exactly as PyTorch's CPU kernel computes them."""
    xp = _xp(samples)
    starts = xp.empty(samples.shape + (out,), np.int64)
    if out > 1:
        alpha = np.float32(size - kernel) / np.float32(out - 1)
        steps = xp.arange(out - 1, dtype=np.float32)
        scaled = ((steps + samples[..., None]) * alpha).astype(np.int32)
        starts[..., :-1] = scaled - (samples * alpha).astype(np.int32)[..., None]
    if out > 0:
        starts[..., -1] = size - kernel
    return starts


def _pool(input, kernel_size, output_size, output_ratio, samples, dims):
    """Output and int64 indices of a `dims`-d fractional max pool (see the module's doc)."""
    op = f"fractional_max_pool{dims}d"
    Tensor = _tensor()
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    if input.dtype != np.float32:
        raise TypeError(f"{op}(): expected a float32 input, got {input.dtype} (pyrt has no "
                        f"float64 or half dtype)")
    kernel = _sizes(kernel_size, dims, "kernel_size", op)
    spatial = input.shape[-dims:]
    if output_size is None:
        ratio = _ratios(output_ratio, dims, op)
        out = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        out = _sizes(output_size, dims, "output_size", op)
    batched = input.ndim == dims + 2
    for d in range(1 if batched else 0, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {d} "
                               f"being empty.")
    # PyTorch's 3d check is one stricter than the 2d one (a window may not end on the last
    # element) and looks at the width before the height
    for d in (0, 1) if dims == 2 else (0, 2, 1):
        if out[d] + kernel[d] - (1 if dims == 2 else 0) > spatial[d]:
            raise RuntimeError(f"{op}{'' if dims == 2 else '_out'}(): pool {_AXES[dims][d]} "
                               f"{kernel[d]} too large relative to input {_AXES[dims][d]} "
                               f"{spatial[d]}")
    n = input.shape[0] if batched else 1
    c = input.shape[-dims - 1]
    xd = input._data
    xp = _xp(xd)
    if samples is None:
        from pyrt.tensor import _generator

        u = xp.asarray(_generator.random((n, c, dims), dtype=np.float32))
    else:
        if not isinstance(samples, Tensor):
            raise TypeError(f"{op}(): argument '_random_samples' must be Tensor, not "
                            f"{type(samples).__name__}")
        if samples.dtype != input.dtype:
            raise RuntimeError("Expect _random_samples to have the same dtype as input")
        if samples.ndim != 3:
            raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got "
                               f"{samples.ndim}")
        if samples.shape[0] < n:
            raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
        if samples.shape[1] != c:
            raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
        if samples.shape[2] != dims:
            raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got "
                               f"{samples.shape[2]}.")
        u = xp.asarray(samples._data[:n])
        if bool(xp.any((u < 0) | (u >= 1) | xp.isnan(u))):
            raise ValueError(f"{op}(): _random_samples must lie in [0, 1)")
    # PyTorch's samples name the dims from the last one up: (w, h) in 2d, (t, h, w) in 3d
    order = (1, 0) if dims == 2 else (0, 1, 2)
    x = xd.reshape((n, c, math.prod(spatial)))
    # flat in-plane positions: of each window's first element [N, C, *out], and of its
    # elements relative to that one [*kernel]
    base = xp.zeros((n, c) + out, np.int64)
    offsets = xp.zeros(kernel, np.int64)
    stride = 1
    for d in reversed(range(dims)):
        starts = _starts(u[..., order[d]], spatial[d], out[d], kernel[d])  # [N, C, out_d]
        base = base + starts.reshape((n, c) + tuple(o if e == d else 1
                                                    for e, o in enumerate(out))) * stride
        offsets = offsets + xp.arange(kernel[d]).reshape(tuple(k if e == d else 1 for e, k
                                                               in enumerate(kernel))) * stride
        stride *= spatial[d]
    count = math.prod(out)
    window = math.prod(kernel)
    base = base.reshape((n, c, count))
    if count == 0 or n == 0 or window == 0:
        # an empty window: -inf at its first position, as PyTorch's loop leaves it
        values = xp.full((n, c, count), -np.inf, np.float32)
        where = base
    else:
        flat = base[..., None] + offsets.reshape(-1)  # [N, C, count, window]
        vals = xp.take_along_axis(x, flat.reshape((n, c, count * window)), axis=2)
        vals = vals.reshape((n, c, count, window))
        pick = xp.argmax(vals, axis=-1)
        nan = xp.isnan(vals)
        if bool(nan.any()):
            last_nan = window - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            pick = xp.where(nan.any(axis=-1), last_nan, pick)
        values = xp.take_along_axis(vals, pick[..., None], axis=-1)[..., 0]
        where = xp.take_along_axis(flat, pick[..., None], axis=-1)[..., 0]
    shape = ((n,) if batched else ()) + (c,) + out
    values = xp.ascontiguousarray(values.reshape(shape))
    where = xp.ascontiguousarray(where.reshape(shape))
    plane = math.prod(spatial)

    def backward(g):
        if window == 0:  # empty windows read no input
            return (xp.zeros(input.shape, np.float32),)
        # each output gradient goes back to the element its maximum came from
        offsets = xp.arange(n * c, dtype=np.int64).reshape((n, c, 1)) * plane
        index = (where.reshape((n, c, count)) + offsets).ravel()
        summed = xp.bincount(index, weights=g.ravel().astype(np.float64),
                             minlength=n * c * plane)
        return (summed.astype(np.float32).reshape(input.shape),)

    return _make(values, (input,), backward, reads=False), Tensor(where)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """(output, indices) of a 2d fractional max pool of input [N, C, H, W] or [C, H, W]:
    windows `kernel_size` wide, output [.., oH, oW] of `output_size` or of
    int(H * ratio), int(W * ratio) for `output_ratio`; `_random_samples` [N, C, 2] in [0, 1)
    fix the window starts (drawn from pyrt's generator when None). Indices are flat positions
    within each H * W plane."""
    return _pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """The 2d fractional max pool of fractional_max_pool2d_with_indices; with return_indices,
    the pair (output, indices)."""
    out, indices = _pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, indices) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """(output, indices) of a 3d fractional max pool of input [N, C, T, H, W] or [C, T, H, W];
    as fractional_max_pool2d_with_indices with three sizes and `_random_samples` [N, C, 3]."""
    return _pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """The 3d fractional max pool of fractional_max_pool3d_with_indices; with return_indices,
    the pair (output, indices)."""
    out, indices = _pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, indices) if return_indices else out
