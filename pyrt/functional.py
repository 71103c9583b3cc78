"""Differentiable ops on Tensors, each with its gradient right beside it.

Every op computes its result with the array ops of the tensor's backend (``pyrt.ops`` on the
CPU) and, when a gradient is needed, returns a tensor that carries a closure mapping the
gradient of the result to the gradients of the inputs (``None`` for inputs that need none).
PyTorch's names, argument orders and shapes throughout.
"""

import builtins
import numbers
import operator

import numpy as np

from pyrt import ops
from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import _NEVER, _writes
from pyrt.autograd import _state as _grad_mode
from pyrt.ops._checks import F32, I64, as_f32
from pyrt.ops.elementwise import bias_act_raw, bias_grad_raw, unary_backward_raw, unary_raw
from pyrt.ops.layout import swap_last_axes
from pyrt.ops.linalg import matmul_ptr, matmul_raw
from pyrt.ops.softmax import (
    bce_with_logits_raw,
    check_targets,
)

__all__ = [
    "abs",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "add",
    "affine_grid",
    "alpha_dropout",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "celu",
    "celu_",
    "channel_shuffle",
    "clamp",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cos",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "ctc_loss",
    "cumsum",
    "div",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "embedding_bag",
    "exp",
    "expm1",
    "feature_alpha_dropout",
    "floor",
    "floor_divide",
    "fold",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "grid_sample",
    "group_norm",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "hinge_embedding_loss",
    "huber_loss",
    "index_rows",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "linear_cross_entropy",
    "local_response_norm",
    "log",
    "log1p",
    "log_softmax",
    "logsigmoid",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "margin_ranking_loss",
    "masked_fill",
    "matmul",
    "max",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "maximum",
    "mean",
    "minimum",
    "mish",
    "mse_loss",
    "mul",
    "multi_head_attention_forward",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "native_channel_shuffle",
    "neg",
    "nll_loss",
    "norm",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "pow",
    "prelu",
    "prod",
    "relu",
    "relu6",
    "relu_",
    "remainder",
    "reshape",
    "rms_norm",
    "round",
    "rpow",
    "rrelu",
    "rrelu_",
    "scaled_dot_product_attention",
    "selu",
    "selu_",
    "sgn",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "sqrt",
    "sub",
    "sum",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
    "transpose",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "unfold",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    "where",
]


_Tensor = None  # pyrt.tensor.Tensor, imported on first use (pyrt.tensor imports this module)
_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_ndarray = np.ndarray


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


def _make(data, parents, backward, reads=True):
    """The result tensor; it records `backward` only if some input requires grad. `reads`:
    whether backward reads the inputs' values (False for sums, reshapes, indexing: only
    shapes), so that writing them in place before backward is an error (autograd._Writes)."""
    out = (_Tensor or _tensor())(data)
    if _grad_mode.enabled:
        for p in parents:
            if p._requires_grad:
                out._requires_grad = True
                out._parents = parents
                out._backward = backward
                out._epoch = _writes.count if reads else _NEVER
                for q in parents:  # read by a recorded op: no in-place op may rebase them
                    q._used = True
                break
    return out


def _xp(a):
    """The array module of `a`: CuPy for an array on the GPU, else NumPy."""
    if isinstance(a, np.ndarray) or not type(a).__module__.startswith("cupy"):
        return np
    import cupy

    return cupy


def _as_tensor(x, keep_bool=True):
    """Numbers and arrays in arithmetic become constant float32 tensors; bools stay bool
    unless keep_bool is False (the float32 kernels refuse them, so that the op promotes them
    as PyTorch does: subtraction refuses them)."""
    Tensor = _tensor()
    if isinstance(x, Tensor):
        return x
    array = np.asarray(x)
    if array.dtype.kind not in "fiub":
        raise TypeError(f"operands must be Tensors, real numbers or arrays of them, got "
                        f"{type(x).__name__}")
    if keep_bool and array.dtype.kind == "b":
        return Tensor(array)
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
    return _contiguous(out.reshape(shape))


def _contiguous(a):
    """`a` as a C-contiguous array (itself if it is one), 0-d kept 0-d, which
    ascontiguousarray would make 1-d."""
    return _xp(a).asarray(a, order="C")


def dim_index(dim, rank):
    """`dim` in range(rank), negative counting from the end (a 0-d tensor has dims -1 and 0),
    or PyTorch's IndexError."""
    if isinstance(dim, bool) or not hasattr(dim, "__index__"):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    dim = operator.index(dim)
    span = rank or 1
    if not -span <= dim < span:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-span}, "
                         f"{span - 1}], but got {dim})")
    return dim % span


def reduction_axes(dim, rank, empty_means_all=False):
    """A reduction's `dim` (an int or a sequence of them), checked as PyTorch checks it and
    counted from 0; None for a 0-d tensor, whose one dim is all of it, and (with
    `empty_means_all`, as torch.sum and torch.mean read it) for an empty sequence."""
    if isinstance(dim, (tuple, list)):
        if not dim and empty_means_all:
            return None
        axes = tuple(dim_index(d, rank) for d in dim)
        for i, a in enumerate(axes):
            if a in axes[:i]:
                raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    else:
        axes = dim_index(dim, rank)
    return axes if rank else None


# ---- arithmetic ------------------------------------------------------------------------------


def _scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


# Each op runs the float32 kernels first, unchanged; their dtype check (a TypeError) sends
# an int64 or bool operand to _promoted, so the float32 path pays nothing for promotion.


def add(a, b):
    try:
        if _scalar(b):
            return _make(ops.add(a._data, b), (a,), lambda g: (g,), reads=False)
        if _scalar(a):
            return add(b, a)
        ta, tb = _as_tensor(a), _as_tensor(b)
        out = ops.add(ta._data, tb._data)
    except TypeError as error:  # given the operands as the caller passed them
        return _promoted("add", a, b, error)
    a, b = ta, tb
    sa, sb = a.shape, b.shape
    return _make(out, (a, b), lambda g: (
        _unbroadcast(g, sa) if a._requires_grad else None,
        _unbroadcast(g, sb) if b._requires_grad else None), reads=False)


def sub(a, b):
    try:
        if _scalar(b):
            return _make(ops.sub(a._data, b), (a,), lambda g: (g,), reads=False)
        if _scalar(a):
            return _make(ops.sub(a, b._data), (b,), lambda g: (ops.neg(g),), reads=False)
        ta, tb = _as_tensor(a), _as_tensor(b)
        out = ops.sub(ta._data, tb._data)
    except TypeError as error:  # given the operands as the caller passed them
        return _promoted("sub", a, b, error)
    a, b = ta, tb
    sa, sb = a.shape, b.shape
    return _make(out, (a, b), lambda g: (
        _unbroadcast(g, sa) if a._requires_grad else None,
        _unbroadcast(ops.neg(g), sb) if b._requires_grad else None), reads=False)


def mul(a, b):
    try:
        if _scalar(b):
            return _make(ops.mul(a._data, b), (a,), lambda g: (ops.mul(g, b),), reads=False)
        if _scalar(a):
            return mul(b, a)
        ta, tb = _as_tensor(a), _as_tensor(b)
        out = ops.mul(ta._data, tb._data)
    except TypeError as error:  # given the operands as the caller passed them
        return _promoted("mul", a, b, error)
    a, b = ta, tb
    return _make(out, (a, b), lambda g: (
        _unbroadcast(ops.mul(g, b._data), a.shape) if a._requires_grad else None,
        _unbroadcast(ops.mul(g, a._data), b.shape) if b._requires_grad else None))


def div(a, b):
    try:
        if _scalar(b):
            try:
                inv = 1.0 / b
            except ZeroDivisionError:  # x / 0 is +-inf or nan, as IEEE division gives
                return _make(ops.div(a._data, b), (a,), lambda g: (ops.div(g, b),), reads=False)
            return mul(a, inv)
        if _scalar(a):
            b_ = b
            out = ops.div(a, b_._data)
            # d(a/b)/db = -a/b^2 = -out/b
            return _make(out, (b_,), lambda g: (ops.neg(ops.div(ops.mul(g, out), b_._data)),))
        ta, tb = _as_tensor(a), _as_tensor(b)
        out = ops.div(ta._data, tb._data)
    except TypeError as error:  # given the operands as the caller passed them
        return _promoted("div", a, b, error)
    a, b = ta, tb
    return _make(out, (a, b), lambda g: (
        _unbroadcast(ops.div(g, b._data), a.shape) if a._requires_grad else None,
        _unbroadcast(ops.neg(ops.div(ops.mul(g, out), b._data)), b.shape)
        if b._requires_grad else None))


def neg(x):
    try:
        return _make(ops.neg(x._data), (x,), lambda g: (ops.neg(g),), reads=False)
    except TypeError:
        kind = _kind(x)
        if kind == "i":
            return _tensor()(-x._data)
        if kind == "b":
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.") from None
        raise


# ---- type promotion: int64 and bool operands, as PyTorch promotes them ------------------------

_KINDS = {"b": "b", "i": "i", "u": "i", "f": "f"}
_UFUNCS = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide"}


def _kind(x):
    """The category of operand `x` in type promotion: "b" (bool), "i" (integer), "f"
    (floating point), or None for what arithmetic does not take."""
    if isinstance(x, bool):
        return "b"
    if isinstance(x, numbers.Integral):
        return "i"
    if isinstance(x, numbers.Real):
        return "f"
    dtype = getattr(x, "dtype", None)  # a Tensor, an array or a NumPy scalar
    if dtype is None:
        try:
            dtype = np.asarray(x).dtype  # a list of numbers
        except (TypeError, ValueError):
            return None
    return _KINDS.get(np.dtype(dtype).kind)


def _describe(x):
    return f"a tensor of dtype {x.dtype}" if isinstance(x, _tensor()) else type(x).__name__


def result_dtype(op, a, b):
    """The dtype of ``a op b`` (op "add", "sub", "mul" or "div") as PyTorch promotes, over
    pyrt's dtypes: float32 if either operand is floating point or op is true division, else
    int64 if either is an integer, else bool. An operand of another kind is a TypeError."""
    kinds = []
    for x, name in ((a, "input"), (b, "other")):
        kind = _kind(x)
        if kind is None:
            raise TypeError(f"{op}(): {name} must be a Tensor, a real number or an array of "
                            f"them, got {_describe(x)}") from None
        kinds.append(kind)
    if op == "sub" and "b" in kinds:
        if kinds == ["b", "b"]:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator "
                               "instead.") from None
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.") from None
    if "f" in kinds or op == "div":
        return F32
    if "i" in kinds:
        return I64
    return np.dtype(np.bool_)


def _float32(x, op, name):
    """Operand `x` of a float32 result: an integer or bool tensor as a float32 copy (a
    constant, as such tensors never require grad), bools as float32; numbers and arrays of
    them as they are (the float32 ops convert them)."""
    Tensor = _tensor()
    if not isinstance(x, Tensor):
        return np.asarray(x, np.float32) if _kind(x) == "b" else x
    if x._data.dtype is F32:
        return x
    if x._data.dtype.kind == "f":
        raise TypeError(f"{op}(): {name} is {_describe(x)}, and pyrt's arithmetic computes "
                        f"in float32: convert it with .float()") from None
    return Tensor(x._data.astype(np.float32))


def _promoted(op, a, b, error):
    """``a op b`` where the float32 kernels refused an operand (`error`): int64 and bool
    tensors promote as in PyTorch. A float32 result goes through the float32 op, with
    gradients for its float32 operands; an int64 or bool result is computed by NumPy (or
    CuPy) outside autograd. `error` is raised again when no operand needed promoting."""
    dtype = result_dtype(op, a, b)
    if dtype is F32:
        fa, fb = _float32(a, op, "input"), _float32(b, op, "other")
        if fa is a and fb is b:
            raise error
        return _ARITHMETIC[op](fa, fb)
    Tensor = _tensor()
    ad, bd = (x._data if isinstance(x, Tensor) else x for x in (a, b))
    xp = _xp(ad if isinstance(a, Tensor) else bd)
    return Tensor(xp.asarray(getattr(xp, _UFUNCS[op])(ad, bd, dtype=dtype)))


_ARITHMETIC = {"add": add, "sub": sub, "mul": mul, "div": div}


# ---- unary functions: y = f(x), dx = g * f'(x) from x or y ------------------------------------


def _unary(code, x, saved_input=False):
    """y = f(x) by the kernel `code`; the gradient comes from y, or from x with
    saved_input."""
    try:
        xd = x._data
    except AttributeError:
        xd = None
    if not _plain(xd):
        if not isinstance(x, _Tensor or _tensor()):
            raise TypeError(f"{_UNARY_NAMES[code]}: input must be a Tensor, got "
                            f"{type(x).__name__}")
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


def relu(x, inplace=False):
    if inplace:
        return _inplace(x, lambda t: _unary(lib.PYRT_RELU, t))
    return _unary(lib.PYRT_RELU, x)


def relu_(input):
    """relu in place (Tensor.relu_): recorded in a graph as PyTorch records it, refused on a
    tensor that a recorded op has already read."""
    if not isinstance(input, _Tensor or _tensor()):
        raise TypeError(f"input must be a Tensor, got {type(input).__name__}")
    return input.relu_()


def _inplace(input, compute):
    """An op called with inplace=True: compute(input), its out-of-place form, written into
    input as PyTorch writes it: into input's array where autograd records nothing of input,
    recorded as an in-place op where it does (Tensor._rebase; a leaf that requires grad is
    refused, as in PyTorch). Where a recorded op has already read input, pyrt cannot rewrite
    its history (Tensor._in_graph): the result is then a new tensor and input keeps its
    values; the layers that follow read the returned tensor."""
    if not isinstance(input, _Tensor or _tensor()):
        raise TypeError(f"input must be a Tensor, got {type(input).__name__}")
    if (_grad_mode.enabled and input._requires_grad and input._backward is not None
            and getattr(input, "_used", False)):
        return compute(input)
    return input._write_result(compute)


# ---- elementwise functions without a kernel of their own (NumPy or CuPy) ---------------------


def _real_number(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def _integers(array):
    """Whether `array` holds integers (int64 labels and counts; not bools)."""
    return array.dtype.kind in "iu"


def _integer(value):
    """Whether `value` is an integer number (not a bool, not a float with no fraction)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def abs(x):
    xd = x._data
    xp = _xp(xd)
    # the gradient is sign(x): 0 at 0 and at nan, as PyTorch's
    return _make(xp.abs(xd), (x,), lambda g: (g * sign_of(xp, xd),))


def clamp(x, min=None, max=None):
    """x limited to [min, max] (either may be None, a number, or a tensor that broadcasts with
    x); the gradient passes where min <= x <= max."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    if isinstance(min, (_Tensor or _tensor(), np.ndarray)) or isinstance(
            max, (_Tensor or _tensor(), np.ndarray)):
        return _clamp_by_tensors(x, min, max)
    lo = None if min is None else _real_number(min, "min")
    hi = None if max is None else _real_number(max, "max")
    xd = x._data
    xp = _xp(xd)
    if _integers(xd) and all(b is None or _integer(b) for b in (min, max)):
        # integers between integer bounds stay int64, as in PyTorch (no gradient to record);
        # the bounds as ints: as floats they would lose what lies past 2**24
        return _make(xp.clip(xd, min, max).astype(I64, copy=False), (x,), None)
    y = xp.clip(xd, lo, hi).astype(np.float32, copy=False)

    def backward(g):
        inside = xp.ones(xd.shape, bool)
        if lo is not None:
            inside &= xd >= lo
        if hi is not None:
            inside &= xd <= hi
        return (g * inside,)

    return _make(y, (x,), backward)


def _clamp_by_tensors(x, min, max):
    """clamp with tensor bounds: min(max(x, min), max), so that max wins where min > max, as in
    PyTorch; its gradients are PyTorch's too: x's where min <= x <= max, min's where x < min
    (and min < max), max's where x > max (or max < min), each summed over what was broadcast."""
    bounds = []
    for b, name in ((min, "min"), (max, "max")):
        if b is not None and not isinstance(b, _Tensor or _tensor()):
            b = _as_tensor(b, keep_bool=False) if isinstance(b, np.ndarray) else _as_tensor(
                _real_number(b, name))
        if b is not None and b._data.dtype != np.float32:
            b = _as_tensor(b._data.astype(np.float32))
        bounds.append(b)
    lo, hi = bounds
    xd = as_f32(x._data, "input") if isinstance(x._data, np.ndarray) else x._data
    xp = _xp(xd)
    ld = None if lo is None else lo._data
    hd = None if hi is None else hi._data
    try:
        y = xd if ld is None else xp.maximum(xd, ld)
        y = y if hd is None else xp.minimum(y, hd)
    except ValueError:
        raise ValueError(f"clamp: the bounds' shapes {None if ld is None else ld.shape} and "
                         f"{None if hd is None else hd.shape} do not broadcast with the input's "
                         f"{xd.shape}") from None
    y = xp.ascontiguousarray(y, dtype=np.float32)

    def backward(g):
        inside = xp.ones(y.shape, bool)
        if ld is not None:
            inside = inside & (xd >= ld)
        if hd is not None:
            inside = inside & (xd <= hd)
        grads = [_unbroadcast(g * inside, xd.shape) if x._requires_grad else None]
        if lo is not None:
            below = xd < ld
            if hd is not None:
                below = below & (ld < hd)
            grads.append(_unbroadcast(g * below, ld.shape) if lo._requires_grad else None)
        if hi is not None:
            above = xd > hd
            if ld is not None:
                above = above | (hd < ld)
            grads.append(_unbroadcast(g * above, hd.shape) if hi._requires_grad else None)
        return tuple(None if t is None else t.astype(np.float32, copy=False) for t in grads)

    parents = (x,) + tuple(b for b in bounds if b is not None)
    return _make(y, parents, backward)


def pow(x, exponent):
    """x ** exponent for a real exponent; the gradient is exponent * x ** (exponent - 1) (0
    for exponent 0). A tensor exponent: pyrt.binary_pointwise.pow_tensor."""
    if isinstance(exponent, _tensor()):
        from pyrt.binary_pointwise import pow_tensor  # (it builds on this module)

        return pow_tensor(x, exponent)
    e = _real_number(exponent, "exponent")
    if e == 2.0:
        return mul(x, x)
    xd = x._data
    xp = _xp(xd)
    if _integers(xd) and _integer(exponent):
        # an integer power of integers is an int64, exact, as in PyTorch; float32 would lose
        # what lies past 2**24
        if exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return _make(xp.power(xd.astype(I64, copy=False), int(exponent)), (x,), None)
    y = (xd ** np.float32(e)).astype(np.float32, copy=False)
    if e == 0.0:
        return _make(y, (x,), lambda g: (xp.zeros(xd.shape, np.float32),))
    return _make(y, (x,), lambda g: (g * (np.float32(e) * xd ** np.float32(e - 1.0)),))


# ---- linear algebra --------------------------------------------------------------------------


def matmul(a, b):
    """2-D matrix product; dA = g @ B^T, dB = A^T @ g (transposes folded into the GEMM)."""
    a, b = _as_tensor(a), _as_tensor(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul expects 2-D tensors, got shapes {a.shape} and {b.shape}")
    ad, bd = a._data, b._data
    if _plain(ad) and _plain(bd) and ad.shape[1] == bd.shape[0]:
        out = matmul_raw(ad, bd, False, False)
        return _make(out, (a, b), lambda g: (
            matmul_raw(g, bd, False, True) if a._requires_grad else None,
            matmul_raw(ad, g, True, False) if b._requires_grad else None))
    out = ops.matmul(ad, bd)  # other layouts, without a copy; a clear error for bad shapes
    return _make(out, (a, b), lambda g: (
        ops.matmul(g, bd, trans_b=True) if a._requires_grad else None,
        ops.matmul(ad, g, trans_a=True) if b._requires_grad else None))


# the activations linear fuses into its bias pass: act name -> kernel code (gradient from y)
_ACT_CODES = {None: lib.PYRT_IDENTITY, "relu": lib.PYRT_RELU, "sigmoid": lib.PYRT_SIGMOID,
              "tanh": lib.PYRT_TANH}


def linear(x, weight, bias=None, act=None):
    """``act(x @ weight.T + bias)`` with x [N, in] (or [*, in]: the leading dims are one batch
    dim, as in PyTorch), weight [out, in], bias [out]: one GEMM and one fused pass for bias
    and activation. act is None, "relu", "sigmoid" or "tanh"."""
    xd, wd = x._data, weight._data
    if xd.ndim != 2:
        if not isinstance(x, _Tensor or _tensor()):
            raise _not_a_tensor(x)
        if xd.ndim == 0:
            raise ValueError("linear: input must have at least 1 dimension [*, in_features], "
                             "got a 0-d tensor")
        if wd.ndim != 2 or xd.shape[-1] != wd.shape[-1]:
            raise ValueError(f"linear: input of shape {x.shape} does not match weight of shape "
                             f"{weight.shape} (expected [out, {x.shape[-1]}])")
        y = linear(reshape(x, (-1, xd.shape[-1])), weight, bias, act)
        return reshape(y, x.shape[:-1] + (wd.shape[0],))
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
        bd = None if bias is None else bias._data
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
            matmul_ptr(False, False, m, k, n, pg, n or 1, pw, ld) if x._requires_grad
            else None,
            # dweight = gp^T @ x: [n, m] @ [m, k]
            matmul_ptr(True, False, n, k, m, pg, n or 1, px, ld) if weight._requires_grad
            else None,
            bias_grad_raw(gp) if bias is not None and bias._requires_grad else None,
        )

    parents = (x, weight) if bias is None else (x, weight, bias)
    return _make(y, parents, backward)


def _linear_checked(x, weight, bias, act):
    """linear through the checked ops (routed to the GPU for CuPy arrays): one GEMM, one
    fused bias + activation pass, and in backward one bias-gradient pass."""
    for t, name in ((x, "input"), (weight, "weight")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"linear: {name} must be a Tensor, got {type(t).__name__}")
    bd = None if bias is None else bias._data
    y = ops.matmul(x._data, weight._data, trans_b=True)
    if bias is not None or act is not None:
        ops.bias_act(y, bd, act, out=y)
    act_backward = None if act is None else getattr(ops, act + "_backward")

    def backward(g):
        gp = g if act_backward is None else act_backward(g, y)
        return (
            ops.matmul(gp, weight._data) if x._requires_grad else None,
            ops.matmul(gp, x._data, trans_a=True) if weight._requires_grad else None,
            ops.bias_grad(gp) if bias is not None and bias._requires_grad else None,
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
    """Broadcast the gradient of a reduction back over the reduced axes, into an array of its
    own (where only axes of size 1 were reduced, the broadcast is a read-only view of g)."""
    kept = _reduced_shape(shape, axis, keepdims=True)
    xp = _xp(g)
    return xp.array(xp.broadcast_to(g.reshape(kept), shape), order="C")


def sum(x, axis=None, keepdims=False):
    if axis is not None:
        axis = reduction_axes(axis, x._data.ndim, empty_means_all=True)
    out = ops.sum(x._data, axis, keepdims=keepdims)
    shape = x.shape
    return _make(out, (x,), lambda g: (_expand_grad(g, shape, axis),), reads=False)


def mean(x, axis=None, keepdims=False):
    if axis is not None:
        axis = reduction_axes(axis, x._data.ndim, empty_means_all=True)
    out = ops.mean(x._data, axis, keepdims=keepdims)
    shape = x.shape
    count = x._data.size // builtins.max(out.size, 1) if x._data.size else 1
    return _make(out, (x,), lambda g: (ops.mul(_expand_grad(g, shape, axis), 1.0 / count),),
                 reads=False)


def max(x, axis=None, keepdims=False):
    if axis is not None:
        axis = reduction_axes(axis, x._data.ndim)
    out = ops.max(x._data, axis, keepdims=keepdims)

    def backward(g):
        xp = _xp(g)
        if axis is None:
            # the whole tensor's maximum: the gradient is shared evenly among the elements
            # equal to it (NaN ones, when it is NaN), as PyTorch shares it
            xd = x._data
            ties = (xd == out) | (xp.isnan(xd) & xp.isnan(out))
            share = g / ties.sum(dtype=np.float32)  # stays on the device: no host read
            return (xp.where(ties, share, np.float32(0)).astype(np.float32, copy=False),)
        if isinstance(axis, tuple):
            # over several dims (a sequence of dims): shared evenly among the ties of each
            # slice, as torch.amax shares it (argmax takes one axis only)
            kept = _reduced_shape(x.shape, axis, keepdims=True)
            xd, m = x._data, out.reshape(kept)
            ties = (xd == m) | (xp.isnan(xd) & xp.isnan(m))
            share = g.reshape(kept) / ties.sum(axis=axis, keepdims=True, dtype=np.float32)
            return (xp.where(ties, share, np.float32(0)).astype(np.float32, copy=False),)
        # along a dim, to the first maximum of each slice, as argmax picks it (as PyTorch)
        idx = ops.argmax(x._data, axis, keepdims=True)
        dx = xp.zeros(x.shape, np.float32)
        xp.put_along_axis(dx, idx, g.reshape(idx.shape), axis=axis)
        return (dx,)

    return _make(out, (x,), backward)


# ---- shape -----------------------------------------------------------------------------------


def reshape(x, shape):
    """x with shape `shape` (one size may be -1: the one that fits)."""
    if builtins.min(shape, default=0) < 0:
        _check_sizes(shape)
    try:
        out = x._data.reshape(shape)
    except ValueError:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size "
                           f"{x._data.size}") from None
    if not out.flags.c_contiguous:
        out = _xp(out).ascontiguousarray(out)
    in_shape = x.shape
    return _make(out, (x,), lambda g: (g.reshape(in_shape),), reads=False)


def _check_sizes(shape):
    """PyTorch's errors for negative sizes in a shape: only one may be inferred (-1)."""
    for i, n in enumerate(shape):
        if n < -1:
            raise RuntimeError(f"invalid shape dimension {n} at index {i} of shape "
                               f"{list(shape)}")
    if list(shape).count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")


def transpose(x):
    """The transpose of a 2-D tensor (a contiguous copy)."""
    if x.ndim != 2:
        raise ValueError(f"transpose expects a 2-D tensor, got shape {x.shape}")
    return _make(swap_last_axes(x._data), (x,), lambda g: (swap_last_axes(g),), reads=False)


def index_rows(x, index):
    """``x[index]`` with NumPy's indexing: ints, slices, masks and integer arrays. As in
    PyTorch, basic indexing (ints and slices) gives a view of x, strided or not, so that
    ``x[:, 1][0] = 5`` writes x; the ops copy a strided array where they need a contiguous
    one. The index arrays are copied for the backward pass, which a later write to them
    must not change."""
    xp = _xp(x._data)
    out = x._data[index]
    if not isinstance(out, xp.ndarray):  # one element of a 1-D x: a 0-d array
        out = xp.asarray(out, dtype=x._data.dtype)
    if x._requires_grad:
        if isinstance(index, xp.ndarray):
            index = index.copy()
        elif type(index) is tuple:
            index = tuple(i.copy() if isinstance(i, xp.ndarray) else i for i in index)

    def backward(g):
        dx = xp.zeros(x.shape, np.float32)
        xp.add.at(dx, index, g)
        return (dx,)

    return _make(out, (x,), backward, reads=False)


# ---- dropout ---------------------------------------------------------------------------------


def dropout_probability(p):
    """`p` if it is a probability, else PyTorch's ValueError (F.dropout's and nn.Dropout's)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
    return p


def dropout(input, p=0.5, training=True, inplace=False):
    """While training, each element zeroed with probability p and the others scaled by
    1 / (1 - p), the mask drawn from pyrt's seeded generator (pyrt.manual_seed), so that a
    run repeats at any thread count; otherwise `input` itself. The gradient goes through the
    same mask."""
    dropout_probability(p)
    if inplace:
        return _inplace(input, lambda t: dropout(t, p, training))
    Tensor = _Tensor or _tensor()
    if not isinstance(input, Tensor):
        raise _not_a_tensor(input)
    if not training or p == 0:
        return input
    x = input._data
    if x.dtype != F32:
        raise TypeError(f"dropout: input must be a float32 tensor, got {x.dtype}")
    mask = _dropout_mask(input, x.shape, p)
    return _make(ops.mul(x, mask), (input,), lambda g: (ops.mul(g, mask),), reads=False)


def _dropout_mask(input, shape, p):
    """PyTorch's mask of `shape` on input's device: 1 / (1 - p) rounded to float32, kept where
    a uniform draw of pyrt's seeded generator is >= p (0 everywhere for p = 1)."""
    from pyrt.tensor import _move, generator

    keep = generator().random(shape, dtype=np.float32) >= p
    scale = np.float32(1) / np.float32(1 - p) if p < 1 else np.float32(0)
    mask = keep.astype(F32) * scale
    return mask if isinstance(input._data, np.ndarray) else _move(mask, input.device)


# ---- softmax and losses ----------------------------------------------------------------------


def _softmax_input(x, dtype, name):
    """x converted to softmax's `dtype` argument (None: as it is; only float32 exists)."""
    if dtype is None:
        return x
    from pyrt.special import _as_dtype
    return _as_dtype(x, dtype, name)


def softmax(x, dim=-1, _stacklevel=3, dtype=None):
    x = _softmax_input(x, dtype, "softmax")
    dim = dim_index(dim, x._data.ndim)
    y = ops.softmax(x._data, dim)

    def backward(g):
        gy = g * y
        return (gy - y * gy.sum(axis=dim, keepdims=True, dtype=np.float32),)

    return _make(y, (x,), backward)


def log_softmax(x, dim=-1, _stacklevel=3, dtype=None):
    x = _softmax_input(x, dtype, "log_softmax")
    dim = dim_index(dim, x._data.ndim)
    y = ops.log_softmax(x._data, dim)

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
    """The error for a loss whose input is not a Tensor."""
    return TypeError(f"input must be a Tensor, got {type(input).__name__}")


_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if not (isinstance(reduction, str) and reduction in _REDUCTIONS):
        raise ValueError(f"{reduction!r} is not a valid value for reduction: expected 'mean', "
                         "'sum' or 'none'")


def _backend_checks(z):
    """(as_f32, as_i64) of the backend that holds array `z`: they convert an argument or name
    it in the error."""
    if isinstance(z, np.ndarray):
        from pyrt.ops._checks import as_f32, as_i64
    else:
        from pyrt.cuda.ops._checks import as_f32, as_i64
    return as_f32, as_i64


def _summed(mean, inputs, n):
    """A loss with reduction='sum': its 'mean' times the n elements averaged, with the
    gradient scaled to match; for none (where the mean is nan) 0, with zero gradients for
    `inputs`, the tensors the loss was computed from."""
    if n == 0:
        zeros = _xp(inputs[0]._data).zeros
        return _make(zeros((), F32), inputs,
                     lambda g: tuple(zeros(t._data.shape, F32) for t in inputs), reads=False)
    return mul(mean, float(n))


def binary_cross_entropy_with_logits(input, target, weight=None, *, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy of sigmoid(input), logits, against target, of the same shape: its
    mean (reduction="mean"), its sum ("sum") or the loss of each element ("none"). For the
    mean the fused kernel gives the logits' gradient, (sigmoid(z) - t) / n; a target that
    requires grad gets d/dt = -z / n. `weight` (of each element) and `pos_weight` (of the
    positive term, along the last dim), both broadcast, take the composed path below."""
    if weight is not None or pos_weight is not None:
        return _weighted_bce_with_logits(input, target, weight, pos_weight, reduction)
    Tensor = _Tensor or _tensor()
    logits = input
    if not isinstance(target, Tensor):
        target = _as_tensor(target, keep_bool=False)
    if reduction != "mean":
        _check_reduction(reduction)
        if not isinstance(logits, Tensor):
            raise _not_a_tensor(logits)
        if reduction == "sum":
            return _summed(binary_cross_entropy_with_logits(logits, target), (logits, target),
                           logits._data.size)
        return _bce_elements(logits, target)
    t = target._data
    z = logits._data
    try:
        need = logits._requires_grad and _grad_mode.enabled
    except AttributeError:
        raise _not_a_tensor(logits) from None
    if (type(z) is _ndarray and type(t) is _ndarray and z.dtype is F32 and t.dtype is F32
            and z.shape == t.shape and z.flags.c_contiguous and t.flags.c_contiguous):
        out = bce_with_logits_raw(z, t, need)  # (_plain inline: this runs every step)
    else:
        out = ops.binary_cross_entropy_with_logits(z, t, return_grad=need)
    if target._requires_grad:
        loss, grad = out if need else (out, None)
        n = builtins.max(z.size, 1)
        return _make(loss, (logits, target), lambda g: (
            None if grad is None else _scale(grad, g), _scale(ops.mul(z, -1.0 / n), g)))
    if need:
        loss, grad = out
        return _make(loss, (logits,), lambda g: (_scale(grad, g),))
    return _make(out, (logits,), None)


def _weighted_bce_with_logits(logits, target, weight, pos_weight, reduction):
    """The loss of an element, -w [pw t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))], as
    w [(1 - t) z + (1 + (pw - 1) t) softplus(-z)], softplus(-z) = log1p(exp(-|z|)) +
    max(-z, 0) so that no exp overflows; composed of recorded ops, so autograd follows."""
    _check_reduction(reduction)
    Tensor = _Tensor or _tensor()
    if not isinstance(logits, Tensor):
        raise _not_a_tensor(logits)
    if not isinstance(target, Tensor):
        target = _as_tensor(target, keep_bool=False)
    softplus_neg = logits.abs().neg().exp().log1p() + logits.neg().relu()
    log_weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    loss = (1 - target) * logits + log_weight * softplus_neg
    if weight is not None:
        loss = loss * weight
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _bce_elements(logits, target):
    """binary_cross_entropy_with_logits with reduction="none": max(z, 0) - z t +
    log(1 + exp(-|z|)) for each element, stable for large |z|; d/dz = g (sigmoid(z) - t) and
    d/dt = -g z."""
    as_f32, _ = _backend_checks(logits._data)
    z = as_f32(logits._data, "logits")
    t = as_f32(target._data, "targets")
    check_targets(z, t)
    xp = _xp(z)
    # (asarray: a 0-d input gives NumPy scalars otherwise)
    loss = xp.asarray(xp.maximum(z, 0) - z * t + xp.log1p(xp.exp(-xp.abs(z))), dtype=F32)

    def backward(g):
        dz = xp.asarray((ops.sigmoid(z) - t) * g, dtype=F32) if logits._requires_grad else None
        return (dz, xp.asarray(-z * g, dtype=F32)) if target._requires_grad else (dz,)

    return _make(loss, (logits, target) if target._requires_grad else (logits,), backward)


def mse_loss(input, target, *, reduction="mean"):
    """(input - target)^2: its mean over all elements (reduction="mean"), its sum ("sum") or
    each element ("none"). d/dinput = 2 (input - target) / n for the mean, and a target that
    requires grad gets the opposite."""
    if reduction != "mean":
        _check_reduction(reduction)
    Tensor = _Tensor or _tensor()
    if not isinstance(input, Tensor):
        raise _not_a_tensor(input)
    if not isinstance(target, Tensor):
        target = _as_tensor(target, keep_bool=False)
    if input.shape != target.shape:
        raise ValueError(f"mse_loss: input shape {input.shape} and target shape "
                         f"{target.shape} differ")
    for t, name in ((input, "input"), (target, "target")):
        if t._data.dtype != F32:  # (ops.sub would name its own arguments, a and b)
            raise TypeError(f"mse_loss: {name} must be a float32 tensor, got {t._data.dtype}")
    diff = ops.sub(input._data, target._data)
    squares = ops.mul(diff, diff)
    if reduction == "none":
        loss = squares

        def dinput(g):
            return ops.mul(ops.mul(diff, 2.0), g)
    else:
        if reduction == "mean":
            loss, scale = ops.mean(squares), 2.0 / builtins.max(diff.size, 1)
        else:
            loss, scale = ops.sum(squares), 2.0
        if isinstance(diff, np.ndarray) and not target._requires_grad:
            return _make(loss, (input,), lambda g: (ops.mul(diff, scale * float(g)),))

        def dinput(g):
            return _scale(ops.mul(diff, scale), g)
    if target._requires_grad:
        def backward(g):
            d = dinput(g)
            return (d if input._requires_grad else None, ops.neg(d))

        return _make(loss, (input, target), backward)
    return _make(loss, (input,), lambda g: (dinput(g),))


# ---- the ops of their own files, written on the helpers above: convolution, pooling and
# padding (pyrt/spatial.py), batch normalisation (pyrt/normalization.py), layer
# normalisation (pyrt/layer_norm.py), pointwise functions (pyrt/pointwise.py), reductions and
# scans (pyrt/reductions.py), selection (pyrt/selection.py), activations (pyrt/activations.py),
# embedding (pyrt/embedding.py), attention (pyrt/attention.py) and more losses
# (pyrt/loss_functions.py)

from pyrt.activations import (  # noqa: E402
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu6,
    rrelu,
    rrelu_,
    selu,
    selu_,
    silu,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)
from pyrt.adaptive_pool import (  # noqa: E402
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
)
from pyrt.alpha_dropout import alpha_dropout, feature_alpha_dropout  # noqa: E402
from pyrt.attention import (  # noqa: E402
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from pyrt.bilinear import bilinear  # noqa: E402
from pyrt.channel_ops import channel_shuffle, local_response_norm  # noqa: E402
from pyrt.class_losses import cross_entropy, nll_loss  # noqa: E402
from pyrt.conv_tbc import conv_tbc  # noqa: E402
from pyrt.conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: E402
from pyrt.ctc import ctc_loss  # noqa: E402
from pyrt.distance_losses import triplet_margin_with_distance_loss  # noqa: E402
from pyrt.embedding import embedding  # noqa: E402
from pyrt.embedding_bag import embedding_bag  # noqa: E402
from pyrt.feature_dropout import dropout1d, dropout2d, dropout3d  # noqa: E402
from pyrt.fractional_pool import (  # noqa: E402
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from pyrt.grid_sample import affine_grid, grid_sample  # noqa: E402
from pyrt.group_norm import group_norm, instance_norm  # noqa: E402
from pyrt.gumbel import gumbel_softmax  # noqa: E402
from pyrt.interpolate import interpolate  # noqa: E402
from pyrt.layer_norm import layer_norm  # noqa: E402
from pyrt.linear_cross_entropy import linear_cross_entropy  # noqa: E402
from pyrt.loss_functions import (  # noqa: E402
    binary_cross_entropy,
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from pyrt.normalization import batch_norm  # noqa: E402
from pyrt.pdist import pdist  # noqa: E402
from pyrt.pointwise import (  # noqa: E402
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    broadcast_shape,  # noqa: F401 (for pyrt.tensor)
    ceil,
    cos,
    expm1,
    floor,
    floor_divide,
    log1p,
    maximum,
    minimum,
    remainder,
    round,
    rpow,
    sgn,
    sign,
    sign_of,
    sin,
)
from pyrt.reductions import cumsum, norm, prod  # noqa: E402
from pyrt.resampling_aliases import (  # noqa: E402
    native_channel_shuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from pyrt.rms_norm import rms_norm  # noqa: E402
from pyrt.selection import masked_fill, scalar_as, where  # noqa: E402,F401 (scalar_as: pyrt.tensor)
from pyrt.spatial import avg_pool2d, conv2d, max_pool2d, pad  # noqa: E402
from pyrt.spatial_more import (  # noqa: E402
    avg_pool1d,
    conv1d,
    fold,
    max_pool1d,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from pyrt.unpool import (  # noqa: E402
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from pyrt.vector_functions import (  # noqa: E402
    cosine_similarity,
    normalize,
    one_hot,
    pairwise_distance,
)
from pyrt.volumes import (  # noqa: E402
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    conv3d,
    conv_transpose3d,
    max_pool3d,
    max_pool3d_with_indices,
)
