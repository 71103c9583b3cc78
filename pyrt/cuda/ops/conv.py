"""conv2d and pooling on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/conv.py and pyrt/ops/pool.py (whose geometry checks they share).

conv2d is im2col + one strided-batched GEMM (kernels/conv.cu explains the layout); its
backward pass reuses the same column layout: the weight gradient is a batched GEMM summed
over the batch, the bias gradient the plane-sum kernel, the input gradient a GEMM followed
by the gather-form col2im.
"""

import cupy

from pyrt.cuda._module import BLOCK, grid_for, kernel
from pyrt.cuda.ops._checks import F32, I64, as_f32, as_i64, out_f32
from pyrt.cuda.ops.elementwise import bias_grad_planes, bias_planes_
from pyrt.ops.conv import _check_4d, _geometry, _pair
from pyrt.ops.pool import _input_shape, _pool_geometry

__all__ = ["avg_pool2d", "avg_pool2d_backward", "conv2d", "conv2d_backward", "max_pool2d",
           "max_pool2d_backward"]


def _dims(shape):
    """The launch arguments of a pyrt_conv_shape: n, c, h, w, kh, kw, strides, pads, oh, ow."""
    return (shape.n, shape.c, shape.h, shape.w, shape.kh, shape.kw, shape.stride_h,
            shape.stride_w, shape.pad_h, shape.pad_w, shape.oh, shape.ow)


def _conv_args(x, weight, stride, padding):
    x = as_f32(x, "x")
    weight = as_f32(weight, "weight")
    _check_4d(x, "x", "[n, c, h, w]")
    _check_4d(weight, "weight", "[out_channels, in_channels, kh, kw]")
    if weight.shape[1] != x.shape[1]:
        raise ValueError(
            f"weight has {weight.shape[1]} input channels (shape {weight.shape}) but x has "
            f"{x.shape[1]} (shape {x.shape})")
    shape, oh, ow = _geometry(x.shape, weight.shape[2:], _pair(stride, "stride", 1),
                              _pair(padding, "padding", 0), "weight's kernel",
                              k=weight.shape[0])
    return x, weight, shape, oh, ow


def _im2col(x, shape):
    """cols [n, c * kh * kw, oh * ow] of x."""
    rows = shape.c * shape.kh * shape.kw
    cols = cupy.empty((shape.n, rows, shape.oh * shape.ow), F32)
    kernel("conv", "pyrt_im2col")(grid_for(cols.size), (BLOCK,), (x, cols) + _dims(shape))
    return cols


def conv2d(x, weight, bias=None, *, stride=1, padding=0, out=None):
    """Cross-correlation of x [n, c, h, w] with weight [k, c, kh, kw], plus bias [k]: the
    [n, k, oh, ow] result of torch.nn.functional.conv2d."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding)
    n, k = x.shape[0], weight.shape[0]
    if bias is not None:
        bias = as_f32(bias, "bias")
        if bias.shape != (k,):
            raise ValueError(f"bias must have shape ({k},), got {bias.shape}")
    res = out_f32(out, (n, k, oh, ow))
    if out is not None:
        for arr, name in ((x, "x"), (weight, "weight"), (bias, "bias")):
            if arr is not None and cupy.may_share_memory(res, arr):
                raise ValueError(f"out overlaps {name}")
    if res.size == 0:
        return res
    cols = _im2col(x, shape)
    # weight [k, rows] @ cols [n, rows, oh*ow] -> [n, k, oh*ow]: NCHW without a transpose
    cupy.matmul(weight.reshape(k, -1), cols, out=res.reshape(n, k, oh * ow))
    if bias is not None:
        bias_planes_(res, bias)
    return res


def conv2d_backward(x, weight, grad_output, *, stride=1, padding=0, needs_input_grad=True,
                    needs_weight_grad=True, needs_bias_grad=True):
    """Gradients of conv2d with respect to x, weight and bias, given grad_output
    [n, k, oh, ow]: (grad_input, grad_weight, grad_bias), each None unless requested."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding)
    grad_output = as_f32(grad_output, "grad_output")
    n, k = x.shape[0], weight.shape[0]
    if grad_output.shape != (n, k, oh, ow):
        raise ValueError(f"grad_output must have shape {(n, k, oh, ow)}, "
                         f"got {grad_output.shape}")
    g = grad_output.reshape(n, k, oh * ow)
    w2 = weight.reshape(k, -1)
    gx = gw = gb = None
    if needs_weight_grad:
        # dW = sum over images of g[i] @ cols[i]^T
        cols = _im2col(x, shape)
        gw = cupy.matmul(g, cols.transpose(0, 2, 1)).sum(axis=0).reshape(weight.shape)
    if needs_bias_grad:
        gb = bias_grad_planes(grad_output)
    if needs_input_grad:
        dcols = cupy.matmul(w2.T, g)  # [n, rows, oh*ow]
        gx = cupy.empty(x.shape, F32)
        kernel("conv", "pyrt_col2im")(grid_for(gx.size), (BLOCK,), (dcols, gx) + _dims(shape))
    return gx, gw, gb


# ---- pooling -------------------------------------------------------------------------------

def _pool_dims(shape):
    """pyrt_conv_shape as the pool kernels take it: planes (n * c) first, then h, w, ..."""
    return (shape.n * shape.c,) + _dims(shape)[2:]


def _pool_input(x):
    x = as_f32(x, "x")
    _check_4d(x, "x", "[n, c, h, w]")
    return x


def _grad_output(grad_output, expected):
    grad_output = as_f32(grad_output, "grad_output")
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")
    return grad_output


def max_pool2d(x, kernel_size, stride=None, padding=0, *, return_indices=False):
    """Maximum over each window of x [n, c, h, w]; with return_indices, also the int64 flat
    index (within the h*w plane) of each maximum, for max_pool2d_backward."""
    x = _pool_input(x)
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = cupy.empty((*x.shape[:2], oh, ow), F32)
    idx = cupy.empty(y.shape, I64) if return_indices else y
    kernel("pool", "pyrt_max_pool_forward")(
        grid_for(y.size), (BLOCK,), (x, y, idx) + _pool_dims(shape) + (int(return_indices),))
    return (y, idx) if return_indices else y


def max_pool2d_backward(grad_output, indices, input_shape, kernel_size, stride=None,
                        padding=0):
    """Gradient of max_pool2d: each grad_output entry goes to the input pixel its index
    names (gathered per input pixel). Returns an array of input_shape."""
    input_shape = _input_shape(input_shape)
    shape, oh, ow = _pool_geometry(input_shape, kernel_size, stride, padding)
    expected = (*input_shape[:2], oh, ow)
    grad_output = _grad_output(grad_output, expected)
    indices = as_i64(indices, "indices")
    if indices.shape != expected:
        raise ValueError(f"indices must have shape {expected}, got {indices.shape}")
    dx = cupy.empty(input_shape, F32)
    kernel("pool", "pyrt_max_pool_backward")(
        grid_for(dx.size), (BLOCK,), (grad_output, indices, dx) + _pool_dims(shape))
    return dx


def avg_pool2d(x, kernel_size, stride=None, padding=0):
    """Mean over each window of x [n, c, h, w], padding counted as zeros."""
    x = _pool_input(x)
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding)
    y = cupy.empty((*x.shape[:2], oh, ow), F32)
    kernel("pool", "pyrt_avg_pool_forward")(grid_for(y.size), (BLOCK,),
                                            (x, y) + _pool_dims(shape))
    return y


def avg_pool2d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0):
    """Gradient of avg_pool2d with respect to its input, an array of input_shape."""
    input_shape = _input_shape(input_shape)
    shape, oh, ow = _pool_geometry(input_shape, kernel_size, stride, padding)
    grad_output = _grad_output(grad_output, (*input_shape[:2], oh, ow))
    dx = cupy.empty(input_shape, F32)
    kernel("pool", "pyrt_avg_pool_backward")(grid_for(dx.size), (BLOCK,),
                                             (grad_output, dx) + _pool_dims(shape))
    return dx
