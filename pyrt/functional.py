"""Differentiable ops on Tensors, each with its gradient right beside it.

Every op computes its result with the array ops of the tensor's backend (``pyrt.ops`` on the
CPU) and, when a gradient is needed, returns a tensor that carries a closure mapping the
gradient of the result to the gradients of the inputs (``None`` for inputs that need none).
PyTorch's names, argument orders and shapes throughout.
"""

import builtins
import numbers

import numpy as np

from pyrt import ops
from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import _state as _grad_mode
from pyrt.autograd import is_grad_enabled
from pyrt.ops._checks import F32, I64, as_f32
from pyrt.ops.elementwise import bias_act_raw, bias_grad_raw, unary_backward_raw, unary_raw
from pyrt.ops.linalg import matmul_ptr, matmul_raw
from pyrt.ops.softmax import bce_with_logits_raw, cross_entropy_raw

__all__ = [
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
    "abs", "clamp", "pow", "matmul", "linear", "sum", "mean", "max", "reshape", "transpose", "index_rows",
    "softmax", "log_softmax", "cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
    "conv2d", "max_pool2d", "avg_pool2d",
]


_Tensor = None  # pyrt.tensor.Tensor, imported on first use (pyrt.tensor imports this module)
_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer


def _tensor():
    global _Tensor
    if _Tensor is None:
        from pyrt.tensor import Tensor

        _Tensor = Tensor
    return _Tensor


def _plain(a):
    """Whether `a` is a C-contiguous float32 ndarray, which the unchecked kernel entry
    points (the ``*_raw`` functions of pyrt.ops) take as it is. Arrays made by ops always
    are; a tensor built by hand around another array goes through the checked wrappers."""
    return type(a) is np.ndarray and a.dtype is F32 and a.flags.c_contiguous


def _make(data, parents, backward):
    """The result tensor; it records `backward` only if some input requires grad."""
    out = (_Tensor or _tensor())(data)
    if _grad_mode.enabled:
        for p in parents:
            if p.requires_grad:
                out.requires_grad = True
                out._parents = parents
                out._backward = backward
                break
    return out


def _xp(a):
    """The array module of `a`: CuPy for an array on the GPU, else NumPy."""
    if isinstance(a, np.ndarray) or not type(a).__module__.startswith("cupy"):
        return np
    import cupy

    return cupy


def _as_tensor(x, like):
    """Numbers and arrays in arithmetic become constant tensors."""
    Tensor = _tensor()
    if isinstance(x, Tensor):
        return x
    array = np.asarray(x)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"operands must be Tensors, real numbers or arrays of them, got "
                        f"{type(x).__name__}")
    return Tensor(array.astype(np.float32, copy=False))


def _unbroadcast(g, shape):
    """Sum a gradient of a broadcast result back to an operand's `shape`."""
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and g.shape[i + extra] != 1)
    if len(axes) == 1 and axes[0] == 0 and g.ndim == 2:
        out = ops.bias_grad(g)  # a bias row: the column sum kernel
    else:
        out = g.sum(axis=axes, dtype=np.float32) if axes else g
    return _xp(out).ascontiguousarray(out.reshape(shape), dtype=np.float32)


# ---- arithmetic ------------------------------------------------------------------------------


def _scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def add(a, b):
    if _scalar(b):
        return _make(ops.add(a.data, b), (a,), lambda g: (g,))
    if _scalar(a):
        return add(b, a)
    a, b = _as_tensor(a, b), _as_tensor(b, a)
    out = ops.add(a.data, b.data)
    sa, sb = a.shape, b.shape
    return _make(out, (a, b), lambda g: (
        _unbroadcast(g, sa) if a.requires_grad else None,
        _unbroadcast(g, sb) if b.requires_grad else None))


def sub(a, b):
    if _scalar(b):
        return _make(ops.sub(a.data, b), (a,), lambda g: (g,))
    if _scalar(a):
        return _make(ops.sub(a, b.data), (b,), lambda g: (ops.neg(g),))
    a, b = _as_tensor(a, b), _as_tensor(b, a)
    out = ops.sub(a.data, b.data)
    sa, sb = a.shape, b.shape
    return _make(out, (a, b), lambda g: (
        _unbroadcast(g, sa) if a.requires_grad else None,
        _unbroadcast(ops.neg(g), sb) if b.requires_grad else None))


def mul(a, b):
    if _scalar(b):
        return _make(ops.mul(a.data, b), (a,), lambda g: (ops.mul(g, b),))
    if _scalar(a):
        return mul(b, a)
    a, b = _as_tensor(a, b), _as_tensor(b, a)
    out = ops.mul(a.data, b.data)
    return _make(out, (a, b), lambda g: (
        _unbroadcast(ops.mul(g, b.data), a.shape) if a.requires_grad else None,
        _unbroadcast(ops.mul(g, a.data), b.shape) if b.requires_grad else None))


def div(a, b):
    if _scalar(b):
        try:
            inv = 1.0 / b
        except ZeroDivisionError:  # x / 0 is +-inf or nan, as IEEE division gives
            return _make(ops.div(a.data, b), (a,), lambda g: (ops.div(g, b),))
        return mul(a, inv)
    if _scalar(a):
        b_ = b
        out = ops.div(a, b_.data)
        # d(a/b)/db = -a/b^2 = -out/b
        return _make(out, (b_,), lambda g: (ops.neg(ops.div(ops.mul(g, out), b_.data)),))
    a, b = _as_tensor(a, b), _as_tensor(b, a)
    out = ops.div(a.data, b.data)
    return _make(out, (a, b), lambda g: (
        _unbroadcast(ops.div(g, b.data), a.shape) if a.requires_grad else None,
        _unbroadcast(ops.neg(ops.div(ops.mul(g, out), b.data)), b.shape)
        if b.requires_grad else None))


def neg(x):
    return _make(ops.neg(x.data), (x,), lambda g: (ops.neg(g),))


# ---- unary functions: y = f(x), dx = g * f'(x) from x or y ------------------------------------


def _unary(code, x, saved_input=False):
    """y = f(x) by the kernel `code`; the gradient comes from y, or from x with
    saved_input."""
    xd = x.data
    if not _plain(xd):
        if not isinstance(xd, np.ndarray):  # on the device: the routed ops by name
            name = _UNARY_NAMES[code]
            y = getattr(ops, name)(xd)
            saved = xd if saved_input else y
            backward_op = getattr(ops, name + "_backward")
            return _make(y, (x,), lambda g: (backward_op(g, saved),))
        xd = as_f32(xd, "x")
    y = unary_raw(code, xd)
    saved = xd if saved_input else y
    return _make(y, (x,), lambda g: (unary_backward_raw(code, g, saved),))


_UNARY_NAMES = {lib.PYRT_EXP: "exp", lib.PYRT_LOG: "log", lib.PYRT_SQRT: "sqrt",
                 lib.PYRT_TANH: "tanh", lib.PYRT_SIGMOID: "sigmoid", lib.PYRT_RELU: "relu"}


def exp(x):
    return _unary(lib.PYRT_EXP, x)


def log(x):
    return _unary(lib.PYRT_LOG, x, saved_input=True)


def sqrt(x):
    return _unary(lib.PYRT_SQRT, x)


def tanh(x):
    return _unary(lib.PYRT_TANH, x)


def sigmoid(x):
    return _unary(lib.PYRT_SIGMOID, x)


def relu(x):
    return _unary(lib.PYRT_RELU, x)


# ---- elementwise functions without a kernel of their own (NumPy or CuPy) ---------------------


def _real_number(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def abs(x):
    xd = x.data
    xp = _xp(xd)
    # the gradient is sign(x): 0 at 0, as PyTorch's
    return _make(xp.abs(xd), (x,), lambda g: (g * xp.sign(xd),))


def clamp(x, min=None, max=None):
    """x limited to [min, max] (either may be None); the gradient passes where
    min <= x <= max."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    lo = None if min is None else _real_number(min, "min")
    hi = None if max is None else _real_number(max, "max")
    xd = x.data
    xp = _xp(xd)
    y = xp.clip(xd, lo, hi).astype(np.float32, copy=False)

    def backward(g):
        inside = xp.ones(xd.shape, bool)
        if lo is not None:
            inside &= xd >= lo
        if hi is not None:
            inside &= xd <= hi
        return (g * inside,)

    return _make(y, (x,), backward)


def pow(x, exponent):
    """x ** exponent for a real exponent; the gradient is exponent * x ** (exponent - 1) (0
    for exponent 0)."""
    e = _real_number(exponent, "exponent")
    if e == 2.0:
        return mul(x, x)
    xd = x.data
    xp = _xp(xd)
    y = (xd ** np.float32(e)).astype(np.float32, copy=False)
    if e == 0.0:
        return _make(y, (x,), lambda g: (xp.zeros(xd.shape, np.float32),))
    return _make(y, (x,), lambda g: (g * (np.float32(e) * xd ** np.float32(e - 1.0)),))


# ---- linear algebra --------------------------------------------------------------------------


def matmul(a, b):
    """2-D matrix product; dA = g @ B^T, dB = A^T @ g (transposes folded into the GEMM)."""
    a, b = _as_tensor(a, b), _as_tensor(b, a)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul expects 2-D tensors, got shapes {a.shape} and {b.shape}")
    ad, bd = a.data, b.data
    if _plain(ad) and _plain(bd) and ad.shape[1] == bd.shape[0]:
        out = matmul_raw(ad, bd, False, False)
        return _make(out, (a, b), lambda g: (
            matmul_raw(g, bd, False, True) if a.requires_grad else None,
            matmul_raw(ad, g, True, False) if b.requires_grad else None))
    out = ops.matmul(ad, bd)  # other layouts, without a copy; a clear error for bad shapes
    return _make(out, (a, b), lambda g: (
        ops.matmul(g, bd, trans_b=True) if a.requires_grad else None,
        ops.matmul(ad, g, trans_a=True) if b.requires_grad else None))


# the activations linear fuses into its bias pass: act name -> kernel code (gradient from y)
_ACT_CODES = {None: lib.PYRT_IDENTITY, "relu": lib.PYRT_RELU, "sigmoid": lib.PYRT_SIGMOID,
              "tanh": lib.PYRT_TANH}


def linear(x, weight, bias=None, act=None):
    """``act(x @ weight.T + bias)`` with x [N, in], weight [out, in], bias [out]: one GEMM and
    one fused pass for bias and activation. act is None, "relu", "sigmoid" or "tanh"."""
    xd, wd = x.data, weight.data
    if xd.ndim != 2:
        raise ValueError(f"linear expects a 2-D input [batch, features], got shape {x.shape}")
    if wd.ndim != 2 or xd.shape[1] != wd.shape[1]:
        raise ValueError(f"linear: input of shape {x.shape} does not match weight of shape "
                         f"{weight.shape} (expected [out, {x.shape[1]}])")
    if not isinstance(xd, np.ndarray) or not isinstance(wd, np.ndarray):
        return _linear_checked(x, weight, bias, act)
    if not _plain(xd):
        xd = as_f32(xd, "input")
    if not _plain(wd):
        wd = as_f32(wd, "weight")
    m, k = xd.shape
    n = wd.shape[0]
    px, pw = _from_buffer(_FLOATS, xd), _from_buffer(_FLOATS, wd)
    ld = k or 1
    y = matmul_ptr(False, True, m, n, k, px, ld, pw, ld)  # x @ weight^T
    if bias is not None or act is not None:
        code = _ACT_CODES.get(act) if isinstance(act, (str, type(None))) else None
        bd = None if bias is None else bias.data
        if code is not None and (bd is None or (_plain(bd) and bd.shape == (n,))):
            bias_act_raw(y, bd, code)
        else:
            ops.bias_act(y, bd, act, out=y)  # checks: a clear error for a bad bias or act
        act_code = None if act is None else code
    else:
        act_code = None

    def backward(g):
        # gradient before the activation
        gp = g if act_code is None else unary_backward_raw(act_code, g, y)
        pg = _from_buffer(_FLOATS, gp)
        return (
            # dx = gp @ weight: [m, n] @ [n, k]
            matmul_ptr(False, False, m, k, n, pg, n or 1, pw, ld) if x.requires_grad
            else None,
            # dweight = gp^T @ x: [n, m] @ [m, k]
            matmul_ptr(True, False, n, k, m, pg, n or 1, px, ld) if weight.requires_grad
            else None,
            bias_grad_raw(gp) if bias is not None and bias.requires_grad else None,
        )

    parents = (x, weight) if bias is None else (x, weight, bias)
    return _make(y, parents, backward)


def _linear_checked(x, weight, bias, act):
    """linear through the checked ops (routed to the GPU for CuPy arrays): one GEMM, one
    fused bias + activation pass, and in backward one bias-gradient pass."""
    for t, name in ((x, "input"), (weight, "weight")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"linear: {name} must be a Tensor, got {type(t).__name__}")
    bd = None if bias is None else bias.data
    y = ops.matmul(x.data, weight.data, trans_b=True)
    if bias is not None or act is not None:
        ops.bias_act(y, bd, act, out=y)
    act_backward = None if act is None else getattr(ops, act + "_backward")

    def backward(g):
        gp = g if act_backward is None else act_backward(g, y)
        return (
            ops.matmul(gp, weight.data) if x.requires_grad else None,
            ops.matmul(gp, x.data, trans_a=True) if weight.requires_grad else None,
            ops.bias_grad(gp) if bias is not None and bias.requires_grad else None,
        )

    parents = (x, weight) if bias is None else (x, weight, bias)
    return _make(y, parents, backward)


# ---- reductions ------------------------------------------------------------------------------


def _reduced_shape(shape, axis, keepdims):
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % len(shape) for a in axes)
    return tuple(1 if i in axes else n for i, n in enumerate(shape) if keepdims or i not in axes)


def _expand_grad(g, shape, axis):
    """Broadcast the gradient of a reduction back over the reduced axes."""
    kept = _reduced_shape(shape, axis, keepdims=True)
    xp = _xp(g)
    return xp.ascontiguousarray(xp.broadcast_to(g.reshape(kept), shape))


def sum(x, axis=None, keepdims=False):
    out = ops.sum(x.data, axis, keepdims=keepdims)
    shape = x.shape
    return _make(out, (x,), lambda g: (_expand_grad(g, shape, axis),))


def mean(x, axis=None, keepdims=False):
    out = ops.mean(x.data, axis, keepdims=keepdims)
    shape = x.shape
    count = x.data.size // builtins.max(out.size, 1) if x.data.size else 1
    return _make(out, (x,), lambda g: (ops.mul(_expand_grad(g, shape, axis), 1.0 / count),))


def max(x, axis=None, keepdims=False):
    out = ops.max(x.data, axis, keepdims=keepdims)

    def backward(g):
        # the gradient goes to the first maximum of each slice, as argmax picks it
        xp = _xp(g)
        if axis is None:
            dx = xp.zeros(x.data.size, np.float32)
            dx[ops.argmax(x.data).reshape(1)] = g.reshape(1)  # no int(): no device read
            return (dx.reshape(x.shape),)
        idx = ops.argmax(x.data, axis, keepdims=True)
        dx = xp.zeros(x.shape, np.float32)
        xp.put_along_axis(dx, idx, g.reshape(idx.shape), axis=axis)
        return (dx,)

    return _make(out, (x,), backward)


# ---- shape -----------------------------------------------------------------------------------


def reshape(x, shape):
    out = x.data.reshape(shape)
    if not out.flags.c_contiguous:
        out = _xp(out).ascontiguousarray(out)
    in_shape = x.shape
    return _make(out, (x,), lambda g: (g.reshape(in_shape),))


def transpose(x):
    """The transpose of a 2-D tensor (a contiguous copy)."""
    if x.ndim != 2:
        raise ValueError(f"transpose expects a 2-D tensor, got shape {x.shape}")
    xp = _xp(x.data)
    return _make(xp.ascontiguousarray(x.data.T), (x,), lambda g: (xp.ascontiguousarray(g.T),))


def index_rows(x, index):
    """``x[index]`` for an int, a slice or an integer array along the first axis."""
    xp = _xp(x.data)
    out = x.data[index]
    if isinstance(out, xp.ndarray) and not out.flags.c_contiguous:
        out = xp.ascontiguousarray(out)
    out = xp.asarray(out, dtype=x.data.dtype)

    def backward(g):
        dx = xp.zeros(x.shape, np.float32)
        xp.add.at(dx, index, g)
        return (dx,)

    return _make(out, (x,), backward)


# ---- softmax and losses ----------------------------------------------------------------------


def softmax(x, dim=-1):
    y = ops.softmax(x.data, dim)

    def backward(g):
        gy = g * y
        return (gy - y * gy.sum(axis=dim, keepdims=True, dtype=np.float32),)

    return _make(y, (x,), backward)


def log_softmax(x, dim=-1):
    y = ops.log_softmax(x.data, dim)

    def backward(g):
        return (g - _xp(y).exp(y) * g.sum(axis=dim, keepdims=True, dtype=np.float32),)

    return _make(y, (x,), backward)


def _scale(grad, g):
    """Chain a loss gradient with the (scalar) gradient of the loss."""
    if not isinstance(g, np.ndarray):  # on the device: float(g) would wait for it
        from pyrt.cuda.autograd import scale

        return scale(grad, g)
    g = float(g)
    return grad if g == 1.0 else ops.mul(grad, g)


def _not_a_tensor(input):
    """The error for a loss whose input is not a Tensor (a NumPy array has .data too)."""
    return TypeError(f"input must be a Tensor, got {type(input).__name__}")


def cross_entropy(logits, labels):
    """Mean cross-entropy of softmax(logits [N, C]) against integer labels [N], forward and
    gradient in one fused kernel pass."""
    labels = labels.data if isinstance(labels, _Tensor or _tensor()) else np.asarray(labels)
    z = logits.data
    try:
        need = logits.requires_grad and _grad_mode.enabled
    except AttributeError:
        raise _not_a_tensor(logits) from None
    if (_plain(z) and z.ndim == 2 and type(labels) is np.ndarray and labels.dtype is I64
            and labels.flags.c_contiguous and labels.shape == z.shape[:1]):
        out = cross_entropy_raw(z, labels, need)
    else:
        out = ops.cross_entropy(z, labels, return_grad=need)
    if need:
        loss, grad = out
        return _make(loss, (logits,), lambda g: (_scale(grad, g),))
    return _make(out, (logits,), None)


def binary_cross_entropy_with_logits(logits, targets):
    if isinstance(targets, _Tensor or _tensor()):
        targets = targets.data
    else:
        targets = _as_tensor(targets, None).data
    z = logits.data
    try:
        need = logits.requires_grad and _grad_mode.enabled
    except AttributeError:
        raise _not_a_tensor(logits) from None
    if _plain(z) and _plain(targets) and z.shape == targets.shape:
        out = bce_with_logits_raw(z, targets, need)
    else:
        out = ops.binary_cross_entropy_with_logits(z, targets, return_grad=need)
    if need:
        loss, grad = out
        return _make(loss, (logits,), lambda g: (_scale(grad, g),))
    return _make(out, (logits,), None)


def mse_loss(input, target):
    Tensor = _Tensor or _tensor()
    if not isinstance(input, Tensor):
        raise _not_a_tensor(input)
    if isinstance(target, Tensor):
        target = target.data
    else:
        target = _as_tensor(target, None).data
    if input.shape != target.shape:
        raise ValueError(f"mse_loss: input shape {input.shape} and target shape "
                         f"{target.shape} differ")
    diff = ops.sub(input.data, target)
    loss = ops.mean(ops.mul(diff, diff))
    n = builtins.max(diff.size, 1)
    if not isinstance(diff, np.ndarray):
        return _make(loss, (input,), lambda g: (_scale(ops.mul(diff, 2.0 / n), g),))
    return _make(loss, (input,), lambda g: (ops.mul(diff, 2.0 * float(g) / n),))


# ---- convolution and pooling -----------------------------------------------------------------


def conv2d(x, weight, bias=None, stride=1, padding=0):
    y = ops.conv2d(x.data, weight.data, None if bias is None else bias.data, stride=stride,
                   padding=padding)

    def backward(g):
        dx, dw, db = ops.conv2d_backward(
            x.data, weight.data, g, stride=stride, padding=padding,
            needs_input_grad=x.requires_grad, needs_weight_grad=weight.requires_grad,
            needs_bias_grad=bias is not None and bias.requires_grad)
        return (dx, dw) if bias is None else (dx, dw, db)

    parents = (x, weight) if bias is None else (x, weight, bias)
    return _make(y, parents, backward)


def max_pool2d(x, kernel_size, stride=None, padding=0):
    need = x.requires_grad and is_grad_enabled()
    if not need:
        return _make(ops.max_pool2d(x.data, kernel_size, stride, padding), (x,), None)
    y, idx = ops.max_pool2d(x.data, kernel_size, stride, padding, return_indices=True)
    shape = x.shape
    return _make(y, (x,), lambda g: (
        ops.max_pool2d_backward(g, idx, shape, kernel_size, stride, padding),))


def avg_pool2d(x, kernel_size, stride=None, padding=0):
    y = ops.avg_pool2d(x.data, kernel_size, stride, padding)
    shape = x.shape
    return _make(y, (x,), lambda g: (
        ops.avg_pool2d_backward(g, shape, kernel_size, stride, padding),))

