"""conv2d and pooling on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/conv.py and pyrt/ops/pool.py (whose geometry checks they share).

conv2d is im2col + one strided-batched GEMM (kernels/conv.cu explains the layout); its
backward pass reuses the same column layout: the weight gradient is a batched GEMM summed
over the batch, the bias gradient the plane-sum kernel, the input gradient a GEMM followed
by the gather-form col2im. With groups, the rows of the columns and the filters split into
groups, and each GEMM is batched over the groups too (group g's filters times its rows). The
GEMMs are cuBLAS's, or pyrt's own kernel while a CUDA graph is being captured
(pyrt/cuda/ops/gemm.py). Autograd's conv2d keeps a small column matrix from the forward pass
for the weight gradient (conv2d_keeping_columns) rather than making it again.
"""

import cupy

from pyrt.cuda._module import BLOCK, grid_for, kernel
from pyrt.cuda.ops._checks import as_f32, as_i64, out_f32
from pyrt.cuda.ops.elementwise import bias_grad_planes, bias_grad_raw, bias_planes_
from pyrt.cuda.ops.gemm import matmul
from pyrt.ops._checks import F32, I64, check_shape
from pyrt.ops.conv import _check_4d, conv_geometry
from pyrt.ops.pool import _pool_geometry, backward_geometry

__all__ = ["avg_pool2d", "avg_pool2d_backward", "conv2d", "conv2d_backward",
           "conv2d_keeping_columns", "max_pool2d", "max_pool2d_backward"]


def _dims(shape):
    """The launch arguments of a pyrt_conv_shape: n, c, h, w, kh, kw, strides, pads, oh, ow,
    dilations."""
    return (shape.n, shape.c, shape.h, shape.w, shape.kh, shape.kw, shape.stride_h,
            shape.stride_w, shape.pad_h, shape.pad_w, shape.oh, shape.ow,
            shape.dilation_h, shape.dilation_w)


def _conv_args(x, weight, stride, padding, dilation, groups):
    x = as_f32(x, "x")
    weight = as_f32(weight, "weight")
    return (x, weight, *conv_geometry(x.shape, weight.shape, stride, padding, dilation, groups))


def _im2col(x, shape):
    """cols [n, c * kh * kw, oh * ow] of x."""
    rows = shape.c * shape.kh * shape.kw
    cols = cupy.empty((shape.n, rows, shape.oh * shape.ow), F32)
    kernel("conv", "pyrt_im2col")(grid_for(cols.size), (BLOCK,), (x, cols) + _dims(shape))
    return cols


def _grouped(weight, groups):
    """weight [k, c/groups, kh, kw] as [groups, k/groups, (c/groups)*kh*kw]."""
    return weight.reshape(groups, weight.shape[0] // groups, -1)


# The largest column matrix conv2d_keeping_columns keeps for the backward pass. An eager step
# is issued from the host, where making the matrix again costs a launch and an allocation
# (tens of microseconds on a GPU host) while a small convolution's kernels take a few on the
# device; a large convolution's matrix would hold its memory until the backward pass (up to
# gigabytes), and making it again costs little beside its products.
KEEP_COLUMNS_BYTES = 32 * 2 ** 20


def _conv2d(x, weight, bias, stride, padding, dilation, groups, out, keep):
    """conv2d's result and, with `keep`, its column matrix (None where it has none)."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding, dilation, groups)
    n, k, g = x.shape[0], weight.shape[0], shape.groups
    if bias is not None:
        bias = check_shape(as_f32(bias, "bias"), "bias", (k,))
    res = out_f32(out, (n, k, oh, ow), disjoint=((x, "x"), (weight, "weight"), (bias, "bias")))
    if res.size == 0:
        return res, None
    cols = _im2col(x, shape)
    # weight [g, k/g, rows/g] @ cols [n, g, rows/g, oh*ow] -> [n, g, k/g, oh*ow], which is
    # [n, k, oh*ow]: NCHW without a transpose
    matmul(_grouped(weight, g), cols.reshape(n, g, -1, oh * ow),
           out=res.reshape(n, g, k // g, oh * ow))
    if bias is not None:
        bias_planes_(res, bias)
    return res, cols if keep else None


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1, out=None):
    """Cross-correlation of x [n, c, h, w] with weight [k, c / groups, kh, kw], plus bias [k]:
    the [n, k, oh, ow] result of torch.nn.functional.conv2d."""
    return _conv2d(x, weight, bias, stride, padding, dilation, groups, out, False)[0]


def conv2d_keeping_columns(x, weight, bias=None, *, stride=1, padding=0, dilation=1,
                           groups=1):
    """conv2d's result and the column matrix [n, c * kh * kw, oh * ow] of x it multiplied,
    for conv2d_backward(columns=...), which then need not make it again; None in its place
    where it is larger than KEEP_COLUMNS_BYTES (or the result is empty)."""
    res, cols = _conv2d(x, weight, bias, stride, padding, dilation, groups, None, True)
    return res, cols if cols is not None and cols.nbytes <= KEEP_COLUMNS_BYTES else None


def conv2d_backward(x, weight, grad_output, *, stride=1, padding=0, dilation=1, groups=1,
                    needs_input_grad=True, needs_weight_grad=True, needs_bias_grad=True,
                    columns=None):
    """Gradients of conv2d with respect to x, weight and bias, given grad_output
    [n, k, oh, ow]: (grad_input, grad_weight, grad_bias), each None unless requested.
    `columns`: x's column matrix as conv2d_keeping_columns returned it, or None to make it
    here."""
    x, weight, shape, oh, ow = _conv_args(x, weight, stride, padding, dilation, groups)
    n, k, groups = x.shape[0], weight.shape[0], shape.groups
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", (n, k, oh, ow))
    g = grad_output.reshape(n, groups, k // groups, oh * ow)
    gx = gw = gb = None
    if needs_weight_grad:
        # dW[group] = sum over images of g[i, group] @ cols[i, group]^T
        if columns is None:
            columns = _im2col(x, shape)
        else:
            columns = check_shape(as_f32(columns, "columns"), "columns",
                                  (n, shape.c * shape.kh * shape.kw, oh * ow))
        cols = columns.reshape(n, groups, -1, oh * ow)
        # (the products of all images, then their sum over the batch by the column-sum
        # kernel: one launch, in a fixed order, into an array of weight's shape)
        per_image = matmul(g, cols.transpose(0, 1, 3, 2))
        gw = bias_grad_raw(per_image.reshape(n, -1), weight.shape)
    if needs_bias_grad:
        gb = bias_grad_planes(grad_output)
    if needs_input_grad:
        # [groups, rows/groups, k/groups] @ [n, groups, k/groups, oh*ow]: [n, rows, oh*ow]
        dcols = matmul(_grouped(weight, groups).transpose(0, 2, 1), g)
        gx = cupy.empty(x.shape, F32)
        kernel("conv", "pyrt_col2im")(grid_for(gx.size), (BLOCK,), (dcols, gx) + _dims(shape))
    return gx, gw, gb


# ---- pooling -------------------------------------------------------------------------------

def _pool_dims(shape):
    """pyrt_conv_shape as the pool kernels take it: planes (n * c) first, then h, w, ... oh,
    ow (the average pooling kernels take no dilation)."""
    return (shape.n * shape.c,) + _dims(shape)[2:-2]


def _dilations(shape):
    return (shape.dilation_h, shape.dilation_w)


def _pool_input(x):
    x = as_f32(x, "x")
    _check_4d(x.shape, "x", "[n, c, h, w]")
    return x


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, *, ceil_mode=False,
               return_indices=False, out=None):
    """Maximum over each window of x [n, c, h, w] (its taps `dilation` apart); with
    return_indices, also the int64 flat index (within the h*w plane) of each maximum, for
    max_pool2d_backward."""
    x = _pool_input(x)
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding, ceil_mode,
                                   dilation=dilation)
    y = out_f32(out, (*x.shape[:2], oh, ow), disjoint=((x, "x"),))
    idx = cupy.empty(y.shape, I64) if return_indices else y
    kernel("pool", "pyrt_max_pool_forward")(
        grid_for(y.size), (BLOCK,),
        (x, y, idx) + _pool_dims(shape) + _dilations(shape) + (int(return_indices),))
    return (y, idx) if return_indices else y


def max_pool2d_backward(grad_output, indices, input_shape, kernel_size, stride=None,
                        padding=0, dilation=1, *, ceil_mode=False, out=None):
    """Gradient of max_pool2d: each grad_output entry goes to the input pixel its index
    names (gathered per input pixel). Returns an array of input_shape."""
    input_shape, shape, expected = backward_geometry(input_shape, kernel_size, stride, padding,
                                                     ceil_mode, dilation=dilation)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", expected)
    indices = check_shape(as_i64(indices, "indices"), "indices", expected)
    dx = out_f32(out, input_shape,
                 disjoint=((grad_output, "grad_output"), (indices, "indices")))
    kernel("pool", "pyrt_max_pool_backward")(
        grid_for(dx.size), (BLOCK,),
        (grad_output, indices, dx) + _pool_dims(shape) + _dilations(shape))
    return dx


def avg_pool2d(x, kernel_size, stride=None, padding=0, *, ceil_mode=False,
               count_include_pad=True, out=None):
    """Mean over each window of x [n, c, h, w], padding counted as zeros (or left out of the
    divisor with count_include_pad=False)."""
    x = _pool_input(x)
    shape, oh, ow = _pool_geometry(x.shape, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad)
    y = out_f32(out, (*x.shape[:2], oh, ow), disjoint=((x, "x"),))
    kernel("pool", "pyrt_avg_pool_forward")(grid_for(y.size), (BLOCK,),
                                            (x, y) + _pool_dims(shape) + (shape.exclude_pad,))
    return y


def avg_pool2d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0, *,
                        ceil_mode=False, count_include_pad=True, out=None):
    """Gradient of avg_pool2d with respect to its input, an array of input_shape."""
    input_shape, shape, expected = backward_geometry(input_shape, kernel_size, stride, padding,
                                                     ceil_mode, count_include_pad)
    grad_output = check_shape(as_f32(grad_output, "grad_output"), "grad_output", expected)
    dx = out_f32(out, input_shape, disjoint=((grad_output, "grad_output"),))
    kernel("pool", "pyrt_avg_pool_backward")(grid_for(dx.size), (BLOCK,),
                                             (grad_output, dx) + _pool_dims(shape)
                                             + (shape.exclude_pad,))
    return dx
