"""Elementwise ops on float32 CuPy arrays, with the names, arguments and checks of
pyrt/ops/elementwise.py. Arithmetic with broadcasting is CuPy's own ufuncs; the unary ops,
their gradients, bias + activation and the bias gradient are pyrt's kernels
(kernels/elementwise.cu, kernels/bias_grad.cu)."""

import functools

import cupy
import numpy as np

from pyrt.cuda._module import BLOCK, OP, grid_for, kernel
from pyrt.cuda.ops._checks import as_f32, check_out, mixed_devices, out_f32
from pyrt.ops._checks import F32
from pyrt.ops.elementwise import (
    SCALARS,
    activation,
    broadcast_shape,
    check_addcmul,
    check_bias,
    check_saved,
)

__all__ = [
    "add", "addcmul", "bias_act", "bias_grad", "bias_grad_planes", "div", "exp",
    "exp_backward", "log", "log_backward", "mul", "neg", "relu", "relu_backward", "sigmoid",
    "sigmoid_backward", "sqrt", "sqrt_backward", "sub", "tanh", "tanh_backward",
]


# ---- binary ops ------------------------------------------------------------------------------

def _binary(ufunc, a, b, out, what):
    for x, name in ((a, "a"), (b, "b")):
        if isinstance(x, np.ndarray):
            raise mixed_devices(name)
        if not isinstance(x, (cupy.ndarray,) + SCALARS) or isinstance(x, (bool, np.bool_)):
            raise TypeError(f"{name} must be a float32 cupy.ndarray or a real number, "
                            f"got {type(x).__name__}")
    arrays = [(x, n) for x, n in ((a, "a"), (b, "b")) if isinstance(x, cupy.ndarray)]
    if not arrays:
        raise TypeError(f"{what}: at least one of a and b must be a float32 cupy.ndarray")
    for x, name in arrays:
        if x.dtype != F32:
            raise TypeError(f"{name} must have dtype float32, got {x.dtype}")
    # a scalar is rounded to float32, as the CPU kernels do
    a = a if isinstance(a, cupy.ndarray) else np.float32(a)
    b = b if isinstance(b, cupy.ndarray) else np.float32(b)
    res = out_f32(out, broadcast_shape(np.shape(a), np.shape(b), what))
    if out is not None:
        check_out(res, *arrays)
    return ufunc(a, b, out=res)


def add(a, b, *, out=None):
    return _binary(cupy.add, a, b, out, "add")


def sub(a, b, *, out=None):
    return _binary(cupy.subtract, a, b, out, "sub")


def mul(a, b, *, out=None):
    return _binary(cupy.multiply, a, b, out, "mul")


def div(a, b, *, out=None):
    return _binary(cupy.true_divide, a, b, out, "div")


# ---- unary ops and their gradients ------------------------------------------------------------

def unary_raw(op, x):
    """The unary op `op` (a name of _module.OP) of a C-contiguous float32 x, unchecked."""
    res = cupy.empty(x.shape, F32)
    kernel("elementwise", "pyrt_unary")(grid_for(x.size), (BLOCK,), (OP[op], x, res, x.size))
    return res


def _unary(op, x, out):
    x = as_f32(x, "x")
    if out is None:
        return unary_raw(op, x)
    res = out_f32(out, x.shape)
    check_out(res, (x, "x"))
    kernel("elementwise", "pyrt_unary")(grid_for(x.size), (BLOCK,), (OP[op], x, res, x.size))
    return res


def neg(x, *, out=None):
    return _unary("neg", x, out)


def exp(x, *, out=None):
    return _unary("exp", x, out)


def log(x, *, out=None):
    return _unary("log", x, out)


def sqrt(x, *, out=None):
    return _unary("sqrt", x, out)


def tanh(x, *, out=None):
    return _unary("tanh", x, out)


def sigmoid(x, *, out=None):
    return _unary("sigmoid", x, out)


def relu(x, *, out=None):
    return _unary("relu", x, out)


def unary_backward_raw(op, grad, saved, out=None):
    """The gradient of the unary op `op` from C-contiguous float32 arrays of one shape."""
    res = cupy.empty(grad.shape, F32) if out is None else out
    kernel("elementwise", "pyrt_unary_backward")(
        grid_for(grad.size), (BLOCK,), (OP[op], grad, saved, res, grad.size))
    return res


def _backward(op, grad, saved, saved_name, out, what):
    grad = as_f32(grad, "grad")
    saved = as_f32(saved, saved_name)
    check_saved(grad, saved, saved_name, what)
    res = out_f32(out, grad.shape)
    if out is not None:
        check_out(res, (grad, "grad"), (saved, saved_name))
    return unary_backward_raw(op, grad, saved, res)


def relu_backward(grad, x, *, out=None):
    return _backward("relu", grad, x, "x", out, "relu_backward")


def sigmoid_backward(grad, y, *, out=None):
    return _backward("sigmoid", grad, y, "y", out, "sigmoid_backward")


def tanh_backward(grad, y, *, out=None):
    return _backward("tanh", grad, y, "y", out, "tanh_backward")


def exp_backward(grad, y, *, out=None):
    return _backward("exp", grad, y, "y", out, "exp_backward")


def log_backward(grad, x, *, out=None):
    return _backward("log", grad, x, "x", out, "log_backward")


def sqrt_backward(grad, y, *, out=None):
    return _backward("sqrt", grad, y, "y", out, "sqrt_backward")


# ---- bias + activation, bias gradient, addcmul ------------------------------------------------

_ACTS = {None: "identity", "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}


def bias_act(x, bias=None, act=None, *, out=None):
    """act(x + bias) in one pass over x [..., cols]; bias [cols] or None. `out` may be x."""
    code = OP[activation(act, _ACTS)]
    x = as_f32(x, "x")
    res = out_f32(out, x.shape)
    if bias is not None:
        bias = as_f32(bias, "bias")
        check_bias(x, bias)
    if out is not None:
        check_out(res, (x, "x"), (bias, "bias"))
    cols = x.shape[-1] if x.ndim else 1
    rows = x.size // cols if cols else 0
    kernel("elementwise", "pyrt_bias_act")(
        grid_for(x.size), (BLOCK,),
        (x, x if bias is None else bias, res, rows, cols, int(bias is not None), code))
    return res


def bias_planes_(y, bias):
    """y [n, k, ...] += bias [k] in place (a conv2d bias), one pass."""
    n, k = y.shape[:2]
    inner = y.size // (n * k) if n * k else 0
    kernel("elementwise", "pyrt_bias_planes")(grid_for(y.size), (BLOCK,),
                                              (y, bias, y, n, k, inner))
    return y


# Work buffers of the bias-gradient kernels under (stream, layout, columns, slices): each
# holds the per-slice partial sums and the tickets the kernel resets after use, so one
# allocation serves every later call (and a captured CUDA graph) of that shape. Calls on one
# stream run one after another, so they can share a buffer; calls on two streams may run at
# the same time (an eager step beside a graph replay), and sharing would mix their partial
# sums and tickets, so each stream has its own.
_WORKSPACES = {}


def _workspace(key, partials, tickets):
    key = (cupy.cuda.get_current_stream().ptr, *key)
    ws = _WORKSPACES.get(key)
    if ws is None:
        ws = _WORKSPACES[key] = (cupy.empty(partials, F32), cupy.zeros(tickets, np.uint32))
    return ws


@functools.cache
def _multiprocessors(device_id):
    return cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


def _slices(total, columns_blocks, per_block):
    """Slices of the reduced axis: enough blocks to fill the GPU (4 a multiprocessor), but
    at least `per_block` elements (or float4) a block."""
    sms = _multiprocessors(cupy.cuda.runtime.getDevice())
    want = max(1, (4 * sms) // max(columns_blocks, 1))
    return max(1, min(want, -(-total // per_block)))


# float4 reads a thread makes at least in the vector bias-gradient kernels: one round of
# their pyrt_unroll loads in flight together (kernels/bias_grad.cu)
VECTOR_READS = 4


def _aligned(a):
    """Whether a's data can be read as float4 (16-byte aligned)."""
    return a.data.ptr % 16 == 0


def bias_grad_raw(grad, shape=None):
    """The column sums of a C-contiguous float32 grad [..., cols], unchecked, in a new array
    of `shape` (cols elements; (cols,) by default): an array of its own, not a view, so
    autograd can keep it as a leaf's gradient without a copy."""
    cols = grad.shape[-1]
    rows = grad.size // cols if cols else 0
    res = cupy.empty((cols,) if shape is None else shape, F32)
    if rows == 0 or cols == 0:
        res.fill(0)
        return res
    if cols <= BLOCK and cols % 4 == 0 and _aligned(grad):
        # read as float4, VECTOR_READS of them a thread at least
        slices = _slices(grad.size // 4, 1, BLOCK * VECTOR_READS)
        partial, tickets = _workspace(("rows", cols, slices), slices * cols, 1)
        kernel("bias_grad", "pyrt_bias_grad_rows4")((1, slices), (BLOCK,),
                                                    (grad, res, partial, tickets, rows, cols))
        return res
    groups = 1 if cols <= BLOCK else -(-cols // BLOCK)
    slices = _slices(grad.size if groups == 1 else rows, groups, BLOCK * 4)
    partial, tickets = _workspace(("rows", cols, slices), slices * cols, groups)
    kernel("bias_grad", "pyrt_bias_grad_rows")((groups, slices), (BLOCK,),
                                               (grad, res, partial, tickets, rows, cols))
    return res


def bias_grad_planes(grad):
    """The bias gradient of a conv2d: grad [n, k, oh, ow] summed over n, oh, ow into [k]."""
    n, k = grad.shape[:2]
    inner = grad.size // (n * k) if n * k else 0
    res = cupy.empty((k,), F32)
    if grad.size == 0:
        res.fill(0)
        return res
    if n * inner >= 2 ** 31:  # beyond the kernel's 32-bit indexing
        return grad.sum(axis=(0, 2, 3), dtype=F32)
    if inner % 4 == 0 and _aligned(grad):
        # read as float4, VECTOR_READS of them a thread at least
        slices = _slices(n * inner // 4, k, BLOCK * VECTOR_READS)
        name = "pyrt_bias_grad_planes4"
    else:
        slices = _slices(n * inner, k, BLOCK * 4)
        name = "pyrt_bias_grad_planes"
    partial, tickets = _workspace(("planes", k, slices), slices * k, k)
    kernel("bias_grad", name)((k, slices), (BLOCK,),
                              (grad, res, partial, tickets, n, k, inner))
    return res


def bias_grad(grad, *, out=None):
    """The gradient of a bias added along the last axis: grad [..., cols] summed over every
    leading axis into [cols], read once, in a fixed order."""
    grad = as_f32(grad, "grad")
    if grad.ndim == 0:
        raise ValueError("grad must have at least one dimension, got a 0-d array")
    res = bias_grad_raw(grad)
    if out is None:
        return res
    out = out_f32(out, res.shape)
    check_out(out, (grad, "grad"))
    out[...] = res
    return out


def addcmul(input, tensor1, tensor2, *, value=1.0, out=None):
    """input + value * tensor1 * tensor2, arrays of one shape, in one pass."""
    input = as_f32(input, "input")
    tensor1 = as_f32(tensor1, "tensor1")
    tensor2 = as_f32(tensor2, "tensor2")
    check_addcmul(input, tensor1, tensor2, value)
    res = out_f32(out, input.shape)
    if out is not None:
        check_out(res, (input, "input"), (tensor1, "tensor1"), (tensor2, "tensor2"))
    kernel("elementwise", "pyrt_addcmul")(
        grid_for(input.size), (BLOCK,),
        (input, tensor1, tensor2, np.float32(value), res, input.size))
    return res
