"""Convolution and pooling of volumes, x [n, c, d, h, w] (or [c, d, h, w]), with PyTorch's
names, arguments and errors: conv3d, conv_transpose3d, max_pool3d, avg_pool3d,
adaptive_avg_pool3d and adaptive_max_pool3d.

Each runs the 2-d op (pyrt/spatial.py, on the parallel C kernels) once, on a batch of depth
slices, so the work is the 2-d kernels' and the gradients are theirs through autograd:

    conv3d      The output slice od reads input slices od * stride_d + i * dilation_d of
                the depth-padded input, one per depth tap i. Those kd slices of every
                output slice are stacked along the channels, [n * od, kd * c, h, w] (within
                each group of channels, so groups carry over), and the filters likewise
                become [k, kd * c / groups, kh, kw]: one conv2d gives every output slice.
    conv_transpose3d  The adjoint: one conv_transpose2d of every input slice with the kd
                taps' filters side by side, each tap's result then added into the output
                slice it reaches.
    max_pool3d  A window is the kd depth taps' (h, w) windows, so its maximum is the largest
                of the kd 2-d maxima: one max_pool2d over the kd slices of every output slice,
                then the maximum over the taps (the depth padding holds -inf).
    avg_pool3d  Likewise with sums: the window's count (or divisor_override) is the product
                of one count per axis, so the mean is the sum over the taps of the 2-d means
                (the padding's zeros add nothing) times the 2-d count over the 3-d divisor.
    adaptive    The bins are products of one bin per axis too: each output slice's bin of
                input slices is reduced over depth (mean or maximum), then pooled to the output
                size in 2-d.

The convolutions' slices are gathered into place by one parallel copy of (h, w) planes
(pyrt_copy_blocks), a kd-fold copy of the input (less with a depth stride), the same as
unfolding the depth axis; its adjoint adds them back, also as one copy where every slice
has one source.
"""

import numbers

import numpy as np

from pyrt.adaptive_pool import adaptive_avg_pool2d, adaptive_max_pool2d
from pyrt.conv_transpose import conv_transpose2d
from pyrt.functional import _make, _tensor, _xp
from pyrt.ops.layout import copy_blocks
from pyrt.shapes import stack
from pyrt.spatial import _check_tensors, avg_pool2d, conv2d, max_pool2d, pad

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices",
           "triple"]


def triple(value, name, minimum, op="conv3d"):
    """An int, or a sequence of one or three ints, each at least `minimum`, as a 3-tuple (as
    PyTorch's 3-d ops and layers take them)."""
    values = [value] if isinstance(value, numbers.Integral) else value
    if isinstance(values, (tuple, list)) and len(values) == 1:
        values = list(values) * 3
    if not isinstance(values, (tuple, list)) or len(values) != 3:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of 3 "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={value!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
            raise ValueError(f"{op}: {name} must be integers >= {minimum}, got {value!r}")
    return tuple(int(v) for v in values)


def _volumes(x, op, message):
    """x as [n, c, d, h, w], and whether it had a batch dim; RuntimeError `message` (with
    {shape} the input's size) unless it is 4-D or 5-D."""
    _check_tensors(op, input=x)
    if x.ndim not in (4, 5):
        raise RuntimeError(message.format(shape=list(x.shape)))
    if x.ndim == 4:
        return x.reshape(1, *x.shape), False
    return x, True


def _unbatch(y, batched):
    return y if batched else y.reshape(*y.shape[1:])


def _depth_slices(x, taps, stride, dilation, out):
    """The taps' depth slices of x [n, c, D, h, w] for `out` output slices, stacked:
    [taps, n, c, out, h, w], slice i holding x[:, :, o * stride + i * dilation]."""
    span = (out - 1) * stride + 1
    return stack([x[:, :, i * dilation:i * dilation + span:stride] for i in range(taps)], 0)


def _pad_depth(x, before, after, value):
    """x [n, c, D, h, w] with `before` and `after` slices of `value` around its depth."""
    if before == 0 and after == 0:
        return x
    return pad(x, (0, 0, 0, 0, before, after), value=value)


# ---- convolution -------------------------------------------------------------------------------


def _tap_range(i, taps, out, depth):
    """For depth tap i of (kd, stride, pad, dilation) `taps`: the output slices [o0, o1) whose
    tap i reads an input slice (not the padding), and the first input slice they read."""
    _, stride, pad, dilation = taps
    offset = i * dilation - pad  # output slice o reads input slice o * stride + offset
    o0 = -(offset // stride) if offset < 0 else 0  # ceil(-offset / stride)
    o1 = min(out, (depth - 1 - offset) // stride + 1) if depth - 1 - offset >= 0 else 0
    return o0, max(o0, o1), o0 * stride + offset


def _gather_taps(data, taps, out, groups):
    """data [n, c, D, h, w] -> [n, out, groups, kd, c / groups, h, w]: for output slice o and
    depth tap i, input slice o * stride + i * dilation - pad (zeros where that is padding).
    One strided copy per tap."""
    kd, stride = taps[0], taps[1]
    n, c, depth, h, w = data.shape
    cg = c // groups
    shape = (n, out, groups, kd, cg, h, w)
    if type(data) is np.ndarray and data.dtype == np.float32 and data.flags.c_contiguous:
        # one parallel copy of h x w planes: plane (n, o, g, i, c) of cols is input slice
        # o * stride + i * dilation - pad of channel g * cg + c, or zeros in the padding
        _, _, pad, dilation = taps
        ni, o, g, i, ci = np.ix_(*(np.arange(s, dtype=np.int64) for s in shape[:5]))
        d = o * stride + i * dilation - pad
        at = ((ni * c + g * cg + ci) * depth + d) * (h * w)
        at = np.where((d >= 0) & (d < depth), at, -1)
        return copy_blocks(data, at.reshape(-1), h * w, shape)
    cols = _xp(data).empty(shape, dtype=data.dtype)
    for i in range(kd):
        o0, o1, first = _tap_range(i, taps, out, depth)
        cols[:, :o0, :, i] = 0
        cols[:, o1:, :, i] = 0
        if o1 > o0:
            read = data[:, :, first:first + (o1 - o0 - 1) * stride + 1:stride]
            cols[:, o0:o1, :, i] = read.reshape(n, groups, cg, o1 - o0, h, w).transpose(
                0, 3, 1, 2, 4, 5)
    return cols


def _scatter_taps(cols, taps, out, shape):
    """The adjoint of _gather_taps: cols [n, out, groups, kd, c / groups, h, w] added into the
    input slices they were read from, [n, c, D, h, w] of `shape` (taps that meet one slice add
    up there; what the padding held is dropped). One strided addition per tap."""
    kd, stride = taps[0], taps[1]
    n, c, depth, h, w = shape
    source = _single_sources(taps, out, depth)
    if (source is not None and type(cols) is np.ndarray and cols.dtype == np.float32
            and cols.flags.c_contiguous):
        # each slice is reached by one tap of one column slice at most (a transposed
        # convolution whose stride spans its taps): no sums, one parallel copy of planes,
        # plane (n, c, d) of the result plane (n, o, g, i, c mod cg) of cols, or zeros
        groups, cg = cols.shape[2], cols.shape[4]
        o, i = source
        ni, ci = np.ix_(np.arange(n, dtype=np.int64), np.arange(c, dtype=np.int64))
        at = ((((ni[:, :, None] * out + o) * groups + ci[:, :, None] // cg) * kd + i) * cg
              + ci[:, :, None] % cg) * (h * w)
        at = np.where(o >= 0, at, -1)
        return copy_blocks(cols, at.reshape(-1), h * w, shape)
    data = _xp(cols).zeros(shape, dtype=cols.dtype)
    for i in range(kd):
        o0, o1, first = _tap_range(i, taps, out, depth)
        if o1 > o0:
            part = cols[:, o0:o1, :, i].transpose(0, 2, 3, 1, 4, 5)
            data[:, :, first:first + (o1 - o0 - 1) * stride + 1:stride] += part.reshape(
                n, c, o1 - o0, h, w)
    return data


def _single_sources(taps, out, depth):
    """(o, i): for each slice d < depth, the column slice o and tap i that read it (o * stride
    + i * dilation - pad = d), -1 for none, as arrays; or None if some slice is read by more
    than one."""
    kd, stride, pad, dilation = taps
    o = np.full(depth, -1, np.int64)
    i = np.full(depth, -1, np.int64)
    for tap in range(kd):
        for col in range(out):
            d = col * stride + tap * dilation - pad
            if 0 <= d < depth:
                if o[d] >= 0:
                    return None
                o[d], i[d] = col, tap
    return o, i


def _depth_columns(x, taps, out, groups):
    """The input slices each output slice's depth taps read, side by side within each group
    of channels: x [n, c, D, h, w] -> [n * out, groups * kd * c / groups, h, w], zeros where
    a tap reads the depth padding (_gather_taps; its gradient _scatter_taps)."""
    n, c, _, h, w = x.shape
    cols = _gather_taps(x._data, taps, out, groups)

    def backward(g):
        return (_scatter_taps(g.reshape(cols.shape), taps, out, x.shape),)

    return _make(cols.reshape(n * out, c * taps[0], h, w), (x,), backward, reads=False)


def _depth_fold(y, taps, shape, groups):
    """The transposed convolution's depth: y [n * D, groups * kd * k / groups, h, w], the 2-d
    results of every input slice and depth tap, added into the output slices they reach,
    [n, k, depth, h, w] of `shape` (_scatter_taps with the roles of input and output swapped:
    input slice i, tap t reaches output slice i * stride + t * dilation - pad; its gradient
    _gather_taps)."""
    n, k, _, h, w = shape
    slices = y.shape[0] // n
    cols_shape = (n, slices, groups, taps[0], k // groups, h, w)
    out = _scatter_taps(y._data.reshape(cols_shape), taps, slices, shape)

    def backward(g):
        return (_gather_taps(g, taps, slices, groups).reshape(y.shape),)

    return _make(out, (y,), backward, reads=False)


def _conv_inputs(op, input, weight, bias, groups, weight_layout):
    """input as [n, c, d, h, w] and whether it had a batch dim, after PyTorch's checks of a
    3-d convolution's tensors and groups."""
    x, batched = _volumes(input, op, "Expected 4D (unbatched) or 5D (batched) input to " + op
                          + ", but got input of size: {shape}")
    _check_tensors(op, input=input, weight=weight, bias=bias)
    if weight.ndim != 5:
        raise RuntimeError(f"{op}: expected a 5-D weight {weight_layout}, got size "
                           f"{list(weight.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups!r}")
    return x, batched


def _same_padding(kernel, stride, dilation):
    """(before, after) per axis for padding="same" (the extra one after, as PyTorch)."""
    if any(s != 1 for s in stride):
        raise ValueError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return [(t // 2, t - t // 2) for t in totals]


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of input [n, c, d, h, w] (or [c, d, h, w]) with weight [k, c / groups,
    kd, kh, kw], plus bias [k]; `padding` is an int, a triple, "valid" or "same"."""
    x, batched = _conv_inputs("conv3d", input, weight, bias, groups,
                              "[out_channels, in_channels / groups, kd, kh, kw]")
    k, cg, kd, kh, kw = weight.shape
    n, c = x.shape[:2]
    if cg * groups != c:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(input.shape)} to have {cg * groups} channels, "
                           f"but got {c} channels instead")
    if k % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    stride = triple(stride, "stride", 1)
    dilation = triple(dilation, "dilation", 1)
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise RuntimeError(f"Invalid padding string: {padding!r}")
        sides = ([(0, 0)] * 3 if padding == "valid"
                 else _same_padding((kd, kh, kw), stride, dilation))
        if any(a != b for a, b in sides):  # "same" with an even extent: the extra one after
            (d0, d1), (h0, h1), (w0, w1) = sides
            x = pad(x, (w0, w1, h0, h1, d0, d1))
            sides = [(0, 0)] * 3
        padding = tuple(a for a, _ in sides)
    else:
        padding = triple(padding, "padding", 0)
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = stride, padding, dilation
    depth = x.shape[2]
    extents = [d * (s - 1) + 1 for s, d in zip((kd, kh, kw), dilation)]
    padded = [depth + 2 * pd, x.shape[3] + 2 * ph, x.shape[4] + 2 * pw]
    if any(e > p for e, p in zip(extents, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, extents))}). Kernel size can't be greater "
                           f"than actual input size")
    out_d = (padded[0] - extents[0]) // sd + 1
    columns = _depth_columns(x, (kd, sd, pd, dd), out_d, groups)
    filters = weight.permute(0, 2, 1, 3, 4).reshape(k, kd * cg, kh, kw)
    y = conv2d(columns, filters, bias, (sh, sw), (ph, pw), (dh, dw), groups)
    y = y.reshape(n, out_d, k, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    return _unbatch(y, batched)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed convolution of input [n, in_channels, d, h, w] (or [in_channels, d, h,
    w]) with weight [in_channels, out_channels / groups, kd, kh, kw], plus bias
    [out_channels]: conv3d's gradient with respect to its input. One conv_transpose2d over
    every input slice, its filters those of the kd depth taps side by side, then each tap's
    result added into the output slice it reaches (_depth_fold)."""
    x, batched = _conv_inputs("conv_transpose3d", input, weight, bias, groups,
                              "[in_channels, out_channels / groups, kd, kh, kw]")
    c_in, kg, kd, kh, kw = weight.shape
    n, c, depth = x.shape[:3]
    if c != c_in:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {c_in} channels, but got {c} "
                           f"channels instead")
    if c_in % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    stride = triple(stride, "stride", 1, "conv_transpose3d")
    padding = triple(padding, "padding", 0, "conv_transpose3d")
    output_padding = triple(output_padding, "output_padding", 0, "conv_transpose3d")
    dilation = triple(dilation, "dilation", 1, "conv_transpose3d")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                           f"but got output_padding={output_padding}, stride={stride} and "
                           f"dilation={dilation}")
    sizes = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
        x.shape[2:], stride, padding, dilation, (kd, kh, kw), output_padding)]
    if min(sizes) < 1:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))})"
                           f". Calculated output size per channel: "
                           f"({' x '.join(map(str, sizes))}). Output size is too small")
    # every input slice through the kd taps' filters at once: [n * D, c, h, w] ->
    # [n * D, groups * kd * k / groups, oh, ow], each group's filters in tap order
    slices = x.permute(0, 2, 1, 3, 4).reshape(n * depth, c, x.shape[3], x.shape[4])
    filters = weight.reshape(groups, c_in // groups, kg, kd, kh, kw).permute(0, 1, 3, 2, 4, 5)
    filters = filters.reshape(c_in, kd * kg, kh, kw)
    y = conv_transpose2d(slices, filters, None, stride[1:], padding[1:], output_padding[1:],
                         groups, dilation[1:])
    taps = (kd, stride[0], padding[0], dilation[0])
    out = _depth_fold(y, taps, (n, kg * groups, sizes[0], sizes[1], sizes[2]), groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return _unbatch(out, batched)


# ---- pooling -----------------------------------------------------------------------------------


def _out_size(size, extent, stride, pad, ceil_mode):
    """Windows along an axis, PyTorch's rule (csrc/kernels/conv2d.c out_size)."""
    span = size + 2 * pad - extent
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_window(op, kernel_size, stride, padding, dilation):
    kernel = triple(kernel_size, "kernel_size", 1, op)
    stride = kernel if stride is None or stride == [] else triple(stride, "stride", 1, op)
    padding = triple(padding, "padding", 0, op)
    dilation = triple(dilation, "dilation", 1, op)
    for k, p, d in zip(kernel, padding, dilation):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def _pool_depth(x, op, kernel, stride, padding, dilation, ceil_mode, value):
    """The depth slices of every window: (stacked [kd, n, c, od, h, w] as [kd * n, c * od, h,
    w], od); the depth padded with `value`, as far as the last window reaches."""
    depth = x.shape[2]
    extent = dilation[0] * (kernel[0] - 1) + 1
    out_d = _out_size(depth, extent, stride[0], padding[0], ceil_mode)
    if out_d < 1 or any(s < 1 for s in x.shape[2:]):
        raise RuntimeError(f"{op}: the input of size {list(x.shape)} is too small for the "
                           f"window (kernel_size={kernel}, padding={padding}, "
                           f"dilation={dilation})")
    reach = (out_d - 1) * stride[0] + extent  # the padded slices the windows read
    x = _pad_depth(x, padding[0], max(reach - depth - padding[0], 0), value)
    slices = _depth_slices(x, kernel[0], stride[0], dilation[0], out_d)
    kd, n, c, _, h, w = slices.shape
    return slices.reshape(kd * n, c * out_d, h, w), out_d


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each window of input [n, c, d, h, w] (or [c, d, h, w]), its taps
    `dilation` apart; with return_indices also the flat index of each maximum within its
    d * h * w volume (the first in (d, h, w) order among equal maxima), as PyTorch's."""
    x, batched = _volumes(input, "max_pool3d",
                          "non-empty 4D or 5D (batch mode) tensor expected for input, but got "
                          "{shape}")
    kernel, stride, padding, dilation = _pool_window("max_pool3d", kernel_size, stride, padding,
                                                     dilation)
    n, c, _, height, width = x.shape
    columns, out_d = _pool_depth(x, "max_pool3d", kernel, stride, padding, dilation, ceil_mode,
                                 float("-inf"))
    pooled = max_pool2d(columns, kernel[1:], stride[1:], padding[1:], dilation[1:], ceil_mode,
                        return_indices)
    plane = pooled[0] if return_indices else pooled
    shape = (kernel[0], n, c, out_d, plane.shape[2], plane.shape[3])
    best = plane.reshape(*shape).max(dim=0)
    y = _unbatch(best[0], batched)
    if not return_indices:
        return y
    # the tap that won, then its depth and the 2-d index of its maximum in the h * w plane
    tap = np.asarray(best[1].numpy())
    flat = np.asarray(pooled[1].numpy()).reshape(shape)
    within = np.take_along_axis(flat, tap[None], 0)[0]
    slice_of = (np.arange(out_d) * stride[0] - padding[0]).reshape(1, 1, out_d, 1, 1)
    index = (slice_of + tap * dilation[0]) * (height * width) + within
    indices = _tensor()(index.astype(np.int64))
    return y, _unbatch(indices, batched)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """max_pool3d's (maxima, indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _counts(size, out, kernel, stride, pad, include_pad):
    """For each window along an axis, how many of its positions count in a mean: those inside
    the padded input (include_pad) or the input itself."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return (end - start).astype(np.float64)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each window of input [n, c, d, h, w] (or [c, d, h, w]): its sum over the
    positions inside the padded input (or, without count_include_pad, inside the input), or
    over divisor_override when given."""
    x, batched = _volumes(input, "avg_pool3d",
                          "non-empty 4D or 5D (batch mode) tensor expected for input, but got "
                          "{shape}")
    if divisor_override is not None:
        if (isinstance(divisor_override, bool)
                or not isinstance(divisor_override, numbers.Integral)):
            raise TypeError(f"avg_pool3d: divisor_override must be an int or None, got "
                            f"{divisor_override!r}")
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, _ = _pool_window("avg_pool3d", kernel_size, stride, padding, 1)
    n, c, depth, height, width = x.shape
    if depth < kernel[0] or height < kernel[1] or width < kernel[2]:  # (padding aside)
        raise RuntimeError(f"input image (T: {depth} H: {height} W: {width}) smaller than "
                           f"kernel size (kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    columns, out_d = _pool_depth(x, "avg_pool3d", kernel, stride, padding, (1, 1, 1), ceil_mode,
                                 0.0)
    means = avg_pool2d(columns, kernel[1:], stride[1:], padding[1:], ceil_mode,
                       count_include_pad)
    oh, ow = means.shape[2], means.shape[3]
    total = means.reshape(kernel[0], n, c, out_d, oh, ow).sum(0)
    # a window's count is the product of its axes' counts: the 2-d means' count cancels
    counts = [_counts(size, out, k, s, p, count_include_pad)
              for size, out, k, s, p in zip((depth, height, width), (out_d, oh, ow), kernel,
                                            stride, padding)]
    if divisor_override is None:
        scale = 1.0 / counts[0][:, None, None] * np.ones((1, oh, ow))
    else:
        plane = counts[1][:, None] * counts[2][None, :]
        scale = np.ones((out_d, 1, 1)) * plane[None] / float(divisor_override)
    y = total * _tensor()(scale.astype(np.float32)).to(total.device)
    return _unbatch(y, batched)


# ---- adaptive pooling --------------------------------------------------------------------------


def _output_triple(output_size, shape, op):
    """output_size (an int, or three ints or Nones, None keeping the input's size) as ints."""
    sizes = [output_size] * 3 if isinstance(output_size, numbers.Integral) else output_size
    if not isinstance(sizes, (tuple, list)) or len(sizes) != 3:
        raise RuntimeError(f"{op}: output_size must be 3")
    out = []
    for s, size in zip(sizes, shape):
        if s is None:
            s = size
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise RuntimeError(f"{op}: elements of output_size must be non-negative ints or "
                               f"None, got {output_size!r}")
        out.append(int(s))
    return out


def _adaptive(input, output_size, op, reduce_depth, pool2d):
    x, batched = _volumes(input, op, op + "(): Expected 4D or 5D tensor, but got {shape}")
    n, c, depth, height, width = x.shape
    out_d, oh, ow = _output_triple(output_size, (depth, height, width), op)
    if min(depth, height, width) < 1:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)}")
    if out_d < 1:
        raise RuntimeError(f"{op}: output_size must be positive, got {output_size!r}")
    # bin od of the depth: slices [floor(od D / out), ceil((od + 1) D / out))
    bins = [(od * depth // out_d, -(-(od + 1) * depth // out_d)) for od in range(out_d)]
    reduced = stack([reduce_depth(x[:, :, a:b]) for a, b in bins], 2)
    y = pool2d(reduced.reshape(n, c * out_d, height, width), (oh, ow))
    return y, bins, batched


def adaptive_avg_pool3d(input, output_size):
    """The mean over each of output_size bins of input [n, c, d, h, w] (or [c, d, h, w]):
    output_size is an int or a triple whose Nones keep that dim's size."""
    y, _, batched = _adaptive(input, output_size, "adaptive_avg_pool3d",
                              lambda s: s.mean(2), adaptive_avg_pool2d)
    n, c = (input.shape[0], input.shape[1]) if batched else (1, input.shape[0])
    y = y.reshape(n, c, -1, y.shape[2], y.shape[3])
    return _unbatch(y, batched)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over each of output_size bins of input [n, c, d, h, w] (or [c, d, h, w]);
    with return_indices also the flat index of each maximum within its d * h * w volume."""
    pooled, bins, batched = _adaptive(
        input, output_size, "adaptive_max_pool3d", lambda s: s.amax(2),
        lambda a, size: adaptive_max_pool2d(a, size, return_indices=return_indices))
    y = pooled[0] if return_indices else pooled
    x = input if batched else input.reshape(1, *input.shape)
    n, c, depth, height, width = x.shape
    y = y.reshape(n, c, len(bins), y.shape[2], y.shape[3])
    if not return_indices:
        return _unbatch(y, batched)
    # the 2-d index of each maximum in its plane, then the first slice of its bin holding it
    within = np.asarray(pooled[1].numpy()).reshape(y.shape)
    data = np.asarray(x.detach().numpy()).reshape(n, c, depth, height * width)
    index = np.empty(y.shape, np.int64)
    for od, (a, b) in enumerate(bins):
        column = np.take_along_axis(data[:, :, a:b], within[:, :, od].reshape(n, c, 1, -1), 3)
        top = np.asarray(y[:, :, od].detach().numpy()).reshape(n, c, 1, -1)
        first = np.argmax(column == top, axis=2)
        index[:, :, od] = ((a + first) * height * width).reshape(within[:, :, od].shape) \
            + within[:, :, od]
    return _unbatch(y, batched), _unbatch(_tensor()(index), batched)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool3d's (maxima, indices)."""
    return adaptive_max_pool3d(input, output_size, True)
