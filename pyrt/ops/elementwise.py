"""Elementwise ops on float32 arrays (PyTorch's names): arithmetic with broadcasting, unary
functions and their gradients, fused bias + activation, the bias gradient and addcmul.

The kernels (csrc/kernels/elementwise.c) make one pass over memory and split large arrays
across pyrt's threads; results do not depend on the thread count.

Binary ops take two float32 arrays, or one array and a real scalar on either side (the
scalar is rounded to float32). Broadcasting follows NumPy. These layouts run without a copy:
equal shapes; a scalar or a one-element array; the smaller operand of shape ``x.shape[-1:]``
(a row repeated over all leading axes, leading 1s allowed); the smaller operand of shape
``x.shape[:-1] + (1,)`` (a column repeated along the last axis), with the smaller operand on
either side. Any other broadcastable pair is first expanded into contiguous arrays.

The checks of shapes and values (broadcast_shape, check_saved, activation, check_bias,
check_addcmul) serve the CUDA ops too, on arrays each backend has checked already.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import F32, as_f32, check_out, check_rc, fptr, out_f32
from pyrt.ops._memory import empty, in_and_result, result_like

__all__ = [
    "add", "addcmul", "bias_act", "bias_grad", "div", "exp", "exp_backward", "log",
    "log_backward", "mul", "neg", "relu", "relu_backward", "sigmoid", "sigmoid_backward",
    "sqrt", "sqrt_backward", "sub", "tanh", "tanh_backward",
]

SCALARS = (int, float, np.integer, np.floating)
_NONE, _SCALAR = lib.PYRT_BCAST_NONE, lib.PYRT_BCAST_SCALAR
_ROW, _COL = lib.PYRT_BCAST_ROW, lib.PYRT_BCAST_COL
_EOVERLAP = lib.PYRT_EOVERLAP
_FLOATS, _FLOAT1 = ffi.typeof("float[]"), ffi.typeof("float[1]")
_from_buffer, _new = ffi.from_buffer, ffi.new
_empty = empty
_result_like, _in_and_result = result_like, in_and_result
_ndarray = np.ndarray
_c_binary, _c_unary, _c_unary_backward = lib.pyrt_binary, lib.pyrt_unary, lib.pyrt_unary_backward
_c_bias_act, _c_addcmul, _NULL = lib.pyrt_bias_act, lib.pyrt_addcmul, ffi.NULL


def _failed(rc, what, res, *inputs):
    """The exception for a kernel's error code. The kernels refuse an `out` that partly
    overlaps an input (PYRT_EOVERLAP); check_out then names the input."""
    if rc == _EOVERLAP:
        check_out(res, *inputs)
    check_rc(rc, what)


# ---- binary ops ------------------------------------------------------------------------------


def _bcast_mode(big, small):
    """How an operand of shape `small` lies against one of shape `big` without a copy (a
    PYRT_BCAST_* code: _SCALAR, _ROW or _COL), or None."""
    nd = len(big)
    if len(small) > nd:
        return None
    padded = (1,) * (nd - len(small)) + small
    ones = (1,) * (nd - 1)
    if padded[:-1] == ones:
        if padded[-1] == 1:
            return _SCALAR
        if padded[-1] == big[-1]:
            return _ROW
    if padded[-1] == 1 and padded[:-1] == big[:-1]:
        return _COL
    return None


def _binary(op, a, b, out, what):
    # The common calls first, checked at the cost of a few attribute reads: a float32 ndarray
    # and another of its shape, or a Python float or int; out None or a float32 ndarray of
    # that shape. from_buffer refuses an array that is not C-contiguous (or, for out, not
    # writable) and ffi.new a number too large; any refusal takes the general path below,
    # which copies, converts or names the error.
    if type(a) is _ndarray and a.dtype is F32:
        if type(b) is _ndarray:
            mode = _NONE if b.dtype is F32 and a.shape == b.shape else None
        else:
            mode = _SCALAR if type(b) is float or type(b) is int else None
        if mode is not None:
            try:
                pa = _from_buffer(_FLOATS, a)
                pb = _from_buffer(_FLOATS, b) if mode is _NONE else _new(_FLOAT1, (b,))
                res = _result_like(out, a)
                pres = _from_buffer(_FLOATS, res, True)
            except (ValueError, OverflowError):
                pass
            else:
                rc = _c_binary(op, pa, pb, pres, 1, a.size, mode, 0)
                if rc:
                    _failed(rc, what, res, (a, "a"), (b, "b"))
                return res
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return _binary_arrays(op, as_f32(a, "a"), as_f32(b, "b"), out, what)
    for x, name in ((a, "a"), (b, "b")):
        if not isinstance(x, (np.ndarray,) + SCALARS):
            raise TypeError(f"{name} must be a float32 numpy.ndarray or a real number, "
                            f"got {type(x).__name__}")
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        raise TypeError(f"{what}: at least one of a and b must be a float32 numpy.ndarray")
    # array op scalar, or scalar op array (swap); the scalar is rounded to float32
    if isinstance(a, np.ndarray):
        big, scalar, swap, name = as_f32(a, "a"), b, 0, "a"
    else:
        big, scalar, swap, name = as_f32(b, "b"), a, 1, "b"
    try:
        value = float(scalar)
    except OverflowError:
        raise ValueError(f"{'a' if swap else 'b'} is too large for a float") from None
    res = out_f32(out, big.shape)
    rc = _c_binary(op, _from_buffer(_FLOATS, big), _new(_FLOAT1, (value,)),
                   _from_buffer(_FLOATS, res), 1, big.size, _SCALAR, swap)
    if rc:
        _failed(rc, what, res, (big, name))
    return res


def _binary_arrays(op, a, b, out, what):
    sa, sb = a.shape, b.shape
    big, small, swap = a, b, 0
    if sa == sb:
        mode, shape = _NONE, sa
    else:
        mode, shape = _bcast_mode(sa, sb), sa
        if mode is None:
            mode, shape = _bcast_mode(sb, sa), sb
            if mode is not None:
                big, small, swap = b, a, 1
        if mode is None:
            big, small, mode, shape = _expand(a, b, what)
    res = out_f32(out, shape)
    cols = shape[-1] if shape else 1
    rows = big.size // cols if cols else 0
    rc = _c_binary(op, _from_buffer(_FLOATS, big), _from_buffer(_FLOATS, small),
                   _from_buffer(_FLOATS, res), rows, cols, mode, swap)
    if rc:
        _failed(rc, what, res, (a, "a"), (b, "b"))
    return res


def broadcast_shape(a_shape, b_shape, what):
    """The shape of a op b under NumPy broadcasting, or a ValueError."""
    try:
        return np.broadcast_shapes(a_shape, b_shape)
    except ValueError:
        raise ValueError(f"{what}: operands could not be broadcast together with shapes "
                         f"{a_shape} and {b_shape}") from None


def _expand(a, b, what):
    """General NumPy broadcasting: expand a into the result shape, then b unless it is now a
    row, column or scalar against it."""
    shape = broadcast_shape(a.shape, b.shape, what)
    if a.shape != shape:
        a = np.ascontiguousarray(np.broadcast_to(a, shape))
    mode = _NONE if b.shape == shape else _bcast_mode(shape, b.shape)
    if mode is None:
        b = np.ascontiguousarray(np.broadcast_to(b, shape))
        mode = _NONE
    return a, b, mode, shape


def add(a, b, *, out=None):
    """a + b with broadcasting; a or b may be a real scalar. `out` may be a or b."""
    return _binary(lib.PYRT_ADD, a, b, out, "add")


def sub(a, b, *, out=None):
    """a - b with broadcasting; a or b may be a real scalar. `out` may be a or b."""
    return _binary(lib.PYRT_SUB, a, b, out, "sub")


def mul(a, b, *, out=None):
    """a * b with broadcasting; a or b may be a real scalar. `out` may be a or b."""
    return _binary(lib.PYRT_MUL, a, b, out, "mul")


def div(a, b, *, out=None):
    """a / b (IEEE division: x / 0 is +-inf or nan) with broadcasting; a or b may be a real
    scalar. `out` may be a or b."""
    return _binary(lib.PYRT_DIV, a, b, out, "div")


# ---- unary ops ---------------------------------------------------------------------------

def unary_raw(op, x, what="unary"):
    """The unary op `op` (a PYRT_* code) of x into a new array, without any checks: for
    internal callers holding a C-contiguous float32 array."""
    res = _empty(x.shape, F32)
    rc = _c_unary(op, _from_buffer(_FLOATS, x), _from_buffer(_FLOATS, res), x.size)
    if rc:
        check_rc(rc, what)
    return res


def _unary(op, x, out, what):
    if type(x) is _ndarray and x.dtype is F32:  # the common call, as in _binary
        try:
            px, res, pres = _in_and_result(x, out)
        except ValueError:
            pass
        else:
            rc = _c_unary(op, px, pres, x.size)
            if rc:
                _failed(rc, what, res, (x, "x"))
            return res
    x = as_f32(x, "x")
    if out is None:
        return unary_raw(op, x, what)
    res = out_f32(out, x.shape)
    rc = _c_unary(op, _from_buffer(_FLOATS, x), _from_buffer(_FLOATS, res), x.size)
    if rc:
        _failed(rc, what, res, (x, "x"))
    return res


def neg(x, *, out=None):
    """-x. `out` may be x."""
    return _unary(lib.PYRT_NEG, x, out, "neg")


def exp(x, *, out=None):
    """e**x, within 1 ULP; +inf above 88.72, subnormal below -87.34 and 0 below -103.97.
    `out` may be x."""
    return _unary(lib.PYRT_EXP, x, out, "exp")


def log(x, *, out=None):
    """Natural logarithm, within 1 ULP; log(0) = -inf, log(x < 0) = nan. `out` may be x."""
    return _unary(lib.PYRT_LOG, x, out, "log")


def sqrt(x, *, out=None):
    """Square root (correctly rounded); nan below 0. `out` may be x."""
    return _unary(lib.PYRT_SQRT, x, out, "sqrt")


def tanh(x, *, out=None):
    """Hyperbolic tangent, within 2 ULP; saturates to +-1 without nan. `out` may be x."""
    return _unary(lib.PYRT_TANH, x, out, "tanh")


def sigmoid(x, *, out=None):
    """1 / (1 + exp(-x)), within 3 ULP, computed from exp(-|x|) so that neither tail
    overflows: exactly 0 and 1 far out, subnormal results kept. `out` may be x."""
    return _unary(lib.PYRT_SIGMOID, x, out, "sigmoid")


def relu(x, *, out=None):
    """max(x, 0); nan stays nan, as in NumPy and PyTorch. `out` may be x."""
    return _unary(lib.PYRT_RELU, x, out, "relu")


# ---- gradients of the unary ops ------------------------------------------------------------

def unary_backward_raw(op, grad, saved, what="unary_backward"):
    """The gradient of the unary op `op` into a new array, without any checks: for internal
    callers holding C-contiguous float32 arrays of one shape."""
    res = _empty(grad.shape, F32)
    rc = lib.pyrt_unary_backward(op, _from_buffer(_FLOATS, grad), _from_buffer(_FLOATS, saved),
                                 _from_buffer(_FLOATS, res), grad.size)
    if rc:
        check_rc(rc, what)
    return res


def check_saved(grad, saved, saved_name, what):
    """The array a unary op saved for its gradient must have the shape of grad."""
    if saved.shape != grad.shape:
        raise ValueError(f"{what}: {saved_name} has shape {saved.shape}, expected the shape "
                         f"of grad {grad.shape}")


def _backward(op, grad, saved, saved_name, out, what):
    if (type(grad) is _ndarray and type(saved) is _ndarray and grad.dtype is F32
            and saved.dtype is F32 and grad.shape == saved.shape):  # as in _binary
        try:
            pg, ps = _from_buffer(_FLOATS, grad), _from_buffer(_FLOATS, saved)
            res = _result_like(out, grad)
            pres = _from_buffer(_FLOATS, res, True)
        except ValueError:
            pass
        else:
            rc = _c_unary_backward(op, pg, ps, pres, grad.size)
            if rc:
                _failed(rc, what, res, (grad, "grad"), (saved, saved_name))
            return res
    grad = as_f32(grad, "grad")
    saved = as_f32(saved, saved_name)
    check_saved(grad, saved, saved_name, what)
    if out is None:
        return unary_backward_raw(op, grad, saved, what)
    res = out_f32(out, grad.shape)
    rc = _c_unary_backward(op, _from_buffer(_FLOATS, grad), _from_buffer(_FLOATS, saved),
                           _from_buffer(_FLOATS, res), grad.size)
    if rc:
        _failed(rc, what, res, (grad, "grad"), (saved, saved_name))
    return res


def relu_backward(grad, x, *, out=None):
    """grad where x > 0, else 0 (relu's input x; nan in x passes grad, as in PyTorch).
    `out` may be grad or x."""
    return _backward(lib.PYRT_RELU, grad, x, "x", out, "relu_backward")


def sigmoid_backward(grad, y, *, out=None):
    """grad * (1 - y) * y, from sigmoid's output y. `out` may be grad or y."""
    return _backward(lib.PYRT_SIGMOID, grad, y, "y", out, "sigmoid_backward")


def tanh_backward(grad, y, *, out=None):
    """grad * (1 - y**2), from tanh's output y (1 - y**2 rounded once). `out` may be grad
    or y."""
    return _backward(lib.PYRT_TANH, grad, y, "y", out, "tanh_backward")


def exp_backward(grad, y, *, out=None):
    """grad * y, from exp's output y. `out` may be grad or y."""
    return _backward(lib.PYRT_EXP, grad, y, "y", out, "exp_backward")


def log_backward(grad, x, *, out=None):
    """grad / x, from log's input x. `out` may be grad or x."""
    return _backward(lib.PYRT_LOG, grad, x, "x", out, "log_backward")


def sqrt_backward(grad, y, *, out=None):
    """grad / (2 y), from sqrt's output y. `out` may be grad or y."""
    return _backward(lib.PYRT_SQRT, grad, y, "y", out, "sqrt_backward")


# ---- fused bias + activation, bias gradient, addcmul -------------------------------------

_ACTS = {None: lib.PYRT_IDENTITY, "relu": lib.PYRT_RELU, "sigmoid": lib.PYRT_SIGMOID,
         "tanh": lib.PYRT_TANH}


def bias_act_raw(x, bias, code):
    """act(x + bias) in place in x, without any checks: for internal callers holding a
    C-contiguous float32 x [..., cols] and bias [cols] (or None), `code` from _ACTS."""
    p = _from_buffer(_FLOATS, x)
    if bias is None:
        rc = lib.pyrt_bias_act(p, ffi.NULL, p, 1, x.size, code)
    else:
        cols = x.shape[-1]
        rc = lib.pyrt_bias_act(p, _from_buffer(_FLOATS, bias), p,
                               x.size // cols if cols else 0, cols, code)
    if rc:
        check_rc(rc, "bias_act")
    return x


def bias_grad_raw(grad):
    """The column sums of a C-contiguous float32 grad [..., cols] (ndim >= 1), unchecked."""
    cols = grad.shape[-1]
    res = _empty((cols,), F32)
    rc = lib.pyrt_bias_grad(_from_buffer(_FLOATS, grad), _from_buffer(_FLOATS, res),
                            grad.size // cols if cols else 0, cols)
    if rc:
        check_rc(rc, "bias_grad")
    return res


def activation(act, codes):
    """The backend's code for `act` from `codes` (keyed by None, "relu", "sigmoid", "tanh")."""
    try:
        return codes[act]
    except (KeyError, TypeError):
        raise ValueError(f"act must be None, 'relu', 'sigmoid' or 'tanh', got {act!r}") from None


def check_bias(x, bias):
    """A bias of bias_act must have the shape of x's last axis."""
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension when a bias is given")
    if bias.shape != x.shape[-1:]:
        raise ValueError(f"bias must have shape {x.shape[-1:]} (the last axis of x), got "
                         f"{bias.shape}")


def bias_act(x, bias=None, act=None, *, out=None):
    """act(x + bias) in one pass: x is [..., cols], bias is [cols] or None, act is None,
    "relu", "sigmoid" or "tanh". `out` may be x."""
    code = activation(act, _ACTS)
    # the common call checked as _binary checks its own: float32 ndarrays, a bias of x's last
    # axis; the kernel refuses an out that meets x or bias other than as x itself
    if type(x) is _ndarray and x.dtype is F32 and (
            bias is None or (type(bias) is _ndarray and bias.dtype is F32 and x.ndim
                             and bias.shape == x.shape[-1:])):
        try:
            px, res, pres = _in_and_result(x, out)
            pb = _NULL if bias is None else _from_buffer(_FLOATS, bias)
        except ValueError:
            pass
        else:
            cols = 1 if bias is None else x.shape[-1]
            rows = x.size // cols if cols else 0
            rc = _c_bias_act(px, pb, pres, rows, cols, code)
            if rc:
                _failed(rc, "bias_act", res, (x, "x"), (bias, "bias"))
            return res
    x = as_f32(x, "x")
    res = out_f32(out, x.shape)
    if bias is None:
        if out is not None:
            check_out(res, (x, "x"))
        check_rc(lib.pyrt_bias_act(fptr(x), ffi.NULL, fptr(res), 1, x.size, code), "bias_act")
        return res
    bias = as_f32(bias, "bias")
    check_bias(x, bias)
    if out is not None:
        check_out(res, (x, "x"), (bias, "bias"))
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    check_rc(lib.pyrt_bias_act(fptr(x), fptr(bias), fptr(res), rows, cols, code), "bias_act")
    return res


def bias_grad(grad, *, out=None):
    """The gradient of a bias added along the last axis: grad [..., cols] summed over every
    leading axis into [cols]. The order of the sum depends on the shape alone, so the result
    is bitwise identical at any thread count."""
    grad = as_f32(grad, "grad")
    if grad.ndim == 0:
        raise ValueError("grad must have at least one dimension, got a 0-d array")
    if out is None:
        return bias_grad_raw(grad)
    cols = grad.shape[-1]
    rows = grad.size // cols if cols else 0
    res = out_f32(out, (cols,))
    check_out(res, (grad, "grad"))
    check_rc(lib.pyrt_bias_grad(fptr(grad), fptr(res), rows, cols), "bias_grad")
    return res


def check_addcmul(input, tensor1, tensor2, value):
    """addcmul's tensors must have the shape of input, and value must be a real number."""
    for arr, name in ((tensor1, "tensor1"), (tensor2, "tensor2")):
        if arr.shape != input.shape:
            raise ValueError(f"addcmul: {name} has shape {arr.shape}, expected the shape of "
                             f"input {input.shape}")
    if not isinstance(value, SCALARS):
        raise TypeError(f"value must be a real number, got {type(value).__name__}")


def addcmul(input, tensor1, tensor2, *, value=1.0, out=None):
    """input + value * tensor1 * tensor2 (PyTorch's addcmul), arrays of one shape, in one
    pass; value * tensor1 * tensor2 + input is rounded once (a fused multiply-add) where the
    CPU has FMA. `out` may be any of the inputs."""
    # the common call first, as in _binary: float32 ndarrays of one shape, a float or int
    # value; the kernel refuses an out that partly overlaps an input
    if (type(input) is _ndarray and type(tensor1) is _ndarray and type(tensor2) is _ndarray
            and input.dtype is F32 and tensor1.dtype is F32 and tensor2.dtype is F32
            and input.shape == tensor1.shape == tensor2.shape
            and (type(value) is float or type(value) is int)):
        try:
            pc = _from_buffer(_FLOATS, input)
            pa = _from_buffer(_FLOATS, tensor1)
            pb = _from_buffer(_FLOATS, tensor2)
            res = _result_like(out, input)
            rc = _c_addcmul(pc, pa, pb, value, _from_buffer(_FLOATS, res, True), input.size)
        except (ValueError, OverflowError):
            pass
        else:
            if rc:
                _failed(rc, "addcmul", res, (input, "input"), (tensor1, "tensor1"),
                        (tensor2, "tensor2"))
            return res
    input = as_f32(input, "input")
    tensor1 = as_f32(tensor1, "tensor1")
    tensor2 = as_f32(tensor2, "tensor2")
    check_addcmul(input, tensor1, tensor2, value)
    res = out_f32(out, input.shape)
    if out is not None:
        check_out(res, (input, "input"), (tensor1, "tensor1"), (tensor2, "tensor2"))
    try:
        value = float(value)
    except OverflowError:
        raise ValueError("value is too large for a float") from None
    check_rc(lib.pyrt_addcmul(fptr(input), fptr(tensor1), fptr(tensor2), value, fptr(res),
                              input.size), "addcmul")
    return res

