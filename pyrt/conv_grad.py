"""The gradients of a convolution with respect to its input and to its weight, as
torch.nn.grad's conv1d_input/conv1d_weight, conv2d_*, conv3d_* (pyrt.nn.grad holds them).

For y = conv(x, w) with `stride`, `padding`, `dilation` and `groups`, given dL/dy:

- dL/dx is the transposed convolution of dL/dy with w. The transposed convolution maps an
  output of size O back to (O - 1) * stride - 2 * padding + dilation * (K - 1) + 1 elements;
  the input may have had up to stride - 1 more (the rows the last window never reached), which
  is the output_padding the requested `input_size` asks for.
- dL/dw[o, i, k] = sum over n, t of dL/dy[n, o, t] * x_padded[n, i, t * stride + k * dilation]:
  a convolution of x, with the batch taken as its channels and the input channels as its
  batch, by dL/dy as the kernel, where stride and dilation swap roles. Each group's channels
  form their own group of that convolution; its result is cut to the kernel size K (the
  input's last elements reach no output when the windows do not tile it exactly).

Both are compositions of pyrt's differentiable convolutions, so their own gradients follow.
"""

import numbers

from pyrt.conv_transpose import conv_transpose1d, conv_transpose2d
from pyrt.functional import _tensor, reshape
from pyrt.spatial import conv2d
from pyrt.spatial_more import conv1d
from pyrt.volumes import conv3d, conv_transpose3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]

_CONV = {1: conv1d, 2: conv2d, 3: conv3d}
_TRANSPOSED = {1: conv_transpose1d, 2: conv_transpose2d, 3: conv_transpose3d}


def _tuple(value, dims, name, minimum):
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims
    if len(values) == 1:
        values *= dims
    if len(values) != dims or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                  or v < minimum for v in values):
        raise ValueError(f"{name} must be an int or {dims} ints, each at least {minimum}, got "
                         f"{value!r}")
    return tuple(int(v) for v in values)


def _size(size, dims, name):
    size = tuple(size)
    if len(size) != dims + 2 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                                    or v < 0 for v in size):
        raise ValueError(f"{name} must be the {dims + 2} sizes [N, C, *spatial], got {size!r}")
    return size


def _check(dims, op, **tensors):
    for name, value in tensors.items():
        if not isinstance(value, _tensor()):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")
        if value.ndim != dims + 2:
            raise RuntimeError(f"{op}(): expected a {dims + 2}-d {name}, got shape "
                               f"{tuple(value.shape)}")


def _input_grad(dims, input_size, weight, grad_output, stride, padding, dilation, groups):
    op = f"conv{dims}d_input"
    _check(dims, op, weight=weight, grad_output=grad_output)
    input_size = _size(input_size, dims, "input_size")
    stride = _tuple(stride, dims, "stride", 1)
    padding = _tuple(padding, dims, "padding", 0)
    dilation = _tuple(dilation, dims, "dilation", 1)
    extra = []
    for d in range(dims):
        reached = ((grad_output.shape[2 + d] - 1) * stride[d] - 2 * padding[d]
                   + dilation[d] * (weight.shape[2 + d] - 1) + 1)
        extra.append(input_size[2 + d] - reached)
        if not 0 <= extra[-1] < max(stride[d], dilation[d]):
            raise RuntimeError(f"{op}(): input_size {list(input_size)} does not match a "
                               f"grad_output of shape {list(grad_output.shape)} for this "
                               f"convolution")
    return _TRANSPOSED[dims](grad_output, weight, None, stride, padding, tuple(extra), groups,
                             dilation)


def _weight_grad(dims, input, weight_size, grad_output, stride, padding, dilation, groups):
    op = f"conv{dims}d_weight"
    _check(dims, op, input=input, grad_output=grad_output)
    weight_size = _size(weight_size, dims, "weight_size")
    stride = _tuple(stride, dims, "stride", 1)
    padding = _tuple(padding, dims, "padding", 0)
    dilation = _tuple(dilation, dims, "dilation", 1)
    n, c_in = input.shape[:2]
    c_out = grad_output.shape[1]
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1 \
            or c_in % groups or c_out % groups or weight_size[:2] != (c_out, c_in // groups) \
            or grad_output.shape[0] != n:
        raise RuntimeError(f"{op}(): input {list(input.shape)}, weight_size "
                           f"{list(weight_size)}, grad_output {list(grad_output.shape)} and "
                           f"groups={groups} do not describe one convolution")
    spatial_in, spatial_out = input.shape[2:], grad_output.shape[2:]
    # x as [C_in / groups, groups * N, *]: each group's batch becomes that group's channels
    x = reshape(input, (n, groups, c_in // groups) + spatial_in)
    x = reshape(x.permute((2, 1, 0) + tuple(range(3, dims + 3))),
                (c_in // groups, groups * n) + spatial_in)
    # dL/dy as the kernel [C_out, N, *]
    g = reshape(grad_output, (n, c_out) + spatial_out)
    g = g.permute((1, 0) + tuple(range(2, dims + 2)))
    full = _CONV[dims](x, g, None, dilation, padding, stride, groups)  # [C_in/g, C_out, *]
    full = full.permute((1, 0) + tuple(range(2, dims + 2)))
    cut = tuple(slice(0, k) for k in weight_size[2:])
    return full[(slice(None), slice(None)) + cut].contiguous()


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dx [input_size] of conv1d(x, weight) given grad_output = dL/dy."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dw [weight_size] of conv1d(input, w) given grad_output = dL/dy."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dx [input_size] of conv2d(x, weight) given grad_output = dL/dy."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dw [weight_size] of conv2d(input, w) given grad_output = dL/dy."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dx [input_size] of conv3d(x, weight) given grad_output = dL/dy."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """dL/dw [weight_size] of conv3d(input, w) given grad_output = dL/dy."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
