"""Transposed convolutions (torch.nn.functional.conv_transpose2d and conv_transpose1d) on
pyrt's conv2d kernels, each with its gradient beside it.

A transposed convolution is the input gradient of a convolution. Its weight [in_channels,
out_channels / groups, kh, kw] read as a conv2d weight [k, c / groups, kh, kw] has
k = in_channels and c = out_channels, and y = conv_transpose2d(x, w) is the gradient with
respect to the input (of y's shape) of conv2d(., w), for the output gradient x. So:

- the forward pass is conv2d's backward-data (ops.conv2d_backward asking for the input
  gradient alone, which reads the weight, the output gradient and only the *shape* of the
  convolution's input: an uninitialised array of y's shape stands for it);
- the gradient with respect to x is conv2d itself, of the output gradient g with w;
- the gradient with respect to w is conv2d's weight gradient with the roles swapped: g as
  the convolution's input and x as its output gradient;
- the gradient with respect to the bias sums g over the batch and the image.

All three run on the parallel C kernels (the CUDA ones for CuPy arrays, through pyrt.ops'
routing). The output is (h - 1) * stride - 2 * padding + dilation * (kh - 1) +
output_padding + 1 tall (wide likewise). The convolution of an input that tall has
output_padding // stride more rows than x (output_padding may reach the stride when it is
below the dilation), so x is then extended by that many rows of zeros, which add nothing.
"""

from pyrt import ops
from pyrt.functional import _make, _xp
from pyrt.ops._checks import F32
from pyrt.ops.conv import _pair, check_groups
from pyrt.spatial import _check_tensors
from pyrt.spatial_more import single

__all__ = ["conv_transpose1d", "conv_transpose2d"]


def _geometry(x_shape, w_shape, bias, stride, padding, output_padding, groups, dilation):
    """(output shape, conv2d options, zero rows and columns to add to x) of a transposed
    convolution, or PyTorch's errors."""
    stride, padding = _pair(stride, "stride", 1), _pair(padding, "padding", 0)
    output_padding = _pair(output_padding, "output_padding", 0)
    dilation, groups = _pair(dilation, "dilation", 1), check_groups(groups)
    if len(w_shape) != 4:
        raise RuntimeError(f"conv_transpose2d: weight must be 4-D [in_channels, out_channels / "
                           f"groups, kh, kw], got shape {list(w_shape)}")
    if w_shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w_shape)} instead")
    if x_shape[1] != w_shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w_shape)}, expected "
                           f"input{list(x_shape)} to have {w_shape[0]} channels, but got "
                           f"{x_shape[1]} channels instead")
    out_channels = w_shape[1] * groups
    if bias is not None and bias.shape != (out_channels,):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w_shape)}, expected bias "
                           f"to be 1-dimensional with {out_channels} elements, but got bias of "
                           f"size {list(bias.shape)} instead")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"output padding must be smaller than either stride or dilation, but got "
            f"output_padding_height: {output_padding[0]} output_padding_width: "
            f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
            f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
        x_shape[2:], stride, padding, dilation, w_shape[2:], output_padding))
    if min(size) < 1:
        raise RuntimeError(f"Given input size per channel: ({x_shape[2]} x {x_shape[3]}). "
                           f"Calculated output size per channel: ({size[0]} x {size[1]}). "
                           f"Output size is too small")
    options = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    extra = tuple(op // s for op, s in zip(output_padding, stride))
    return (x_shape[0], out_channels) + size, options, extra


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed convolution of input [n, in_channels, h, w] (or [in_channels, h, w])
    with weight [in_channels, out_channels / groups, kh, kw], plus bias [out_channels]:
    the gradient of conv2d with respect to its input (see the module's doc)."""
    _check_tensors("conv_transpose2d", input=input, weight=weight, bias=bias)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to "
                           f"conv_transpose2d, but got input of size: {list(input.shape)}")
    if input.ndim == 3:
        y = conv_transpose2d(input.reshape(1, *input.shape), weight, bias, stride, padding,
                             output_padding, groups, dilation)
        return y.reshape(y.shape[1:])
    out_shape, options, (eh, ew) = _geometry(input.shape, weight.shape, bias, stride, padding,
                                             output_padding, groups, dilation)
    w = weight._data
    xp = _xp(w)
    x = input._data
    if eh or ew:
        x = xp.pad(x, ((0, 0), (0, 0), (0, eh), (0, ew)))
    # (the convolution's input: only its shape is read when only its gradient is asked)
    shape_only = xp.empty(out_shape, F32)
    y = ops.conv2d_backward(shape_only, w, x, needs_input_grad=True, needs_weight_grad=False,
                            needs_bias_grad=False, **options)[0]
    if bias is not None:
        y += bias._data.reshape(1, -1, 1, 1)
    h, wd = input.shape[2:]

    def backward(g):
        dx = dw = db = None
        if input._requires_grad:
            dx = ops.conv2d(g, w, **options)
            if eh or ew:
                dx = xp.ascontiguousarray(dx[:, :, :h, :wd])
        if weight._requires_grad:
            dw = ops.conv2d_backward(g, w, x, needs_input_grad=False, needs_weight_grad=True,
                                     needs_bias_grad=False, **options)[1]
        if bias is None:
            return dx, dw
        if bias._requires_grad:
            db = g.sum(axis=(0, 2, 3), dtype=F32)
        return dx, dw, db

    parents = (input, weight) if bias is None else (input, weight, bias)
    return _make(y, parents, backward)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """The transposed convolution of input [n, in_channels, length] (or [in_channels,
    length]) with weight [in_channels, out_channels / groups, kernel_size]: conv_transpose2d
    of images one row tall."""
    _check_tensors("conv_transpose1d", input=input, weight=weight, bias=bias)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to "
                           f"conv_transpose1d, but got input of size: {list(input.shape)}")
    if weight.ndim != 3:
        raise RuntimeError(f"conv_transpose1d: weight must be 3-D [in_channels, out_channels / "
                           f"groups, kernel_size], got shape {list(weight.shape)}")
    x = input.reshape(*input.shape[:-1], 1, input.shape[-1])
    w = weight.reshape(*weight.shape[:2], 1, weight.shape[2])
    y = conv_transpose2d(x, w, bias, (1, single(stride, "stride", 1)),
                         (0, single(padding, "padding", 0)),
                         (0, single(output_padding, "output_padding", 0)), groups,
                         (1, single(dilation, "dilation", 1)))
    return y.reshape(*y.shape[:-2], y.shape[-1])
