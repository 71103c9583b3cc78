"""Pointwise functions computed with array operations (NumPy's on the CPU, CuPy's on the
GPU), each with its gradient beside it: log1p, expm1, sin, cos, tan, erf, square, rsqrt,
reciprocal, log2, log10 and exp2; round, floor, ceil, trunc, frac and sign; a number raised
to a tensor's power; floor division, remainder, fmod and the bitwise ops, typed and checked
as PyTorch does; maximum and minimum; lerp and addcmul. ``pyrt.functional`` exports them
beside its other ops."""

import builtins
import math
import numbers

import numpy as np

from pyrt.functional import (
    _contiguous,
    _describe,
    _float32,
    _kind,
    _make,
    _tensor,
    _unbroadcast,
    _xp,
    result_dtype,
)
from pyrt.ops._checks import F32, I64

__all__ = [
    "addcmul",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_shape",
    "ceil",
    "cos",
    "divide_rounded",
    "erf",
    "exp2",
    "expm1",
    "floor",
    "floor_divide",
    "fmod",
    "frac",
    "lerp",
    "log1p",
    "log2",
    "log10",
    "maximum",
    "minimum",
    "reciprocal",
    "remainder",
    "round",
    "rpow",
    "rsqrt",
    "sgn",
    "sign",
    "sin",
    "square",
    "tan",
    "trunc",
]


def _input_array(x, name):
    """The array of tensor `x`, the input of function `name` (a TypeError for anything
    else)."""
    if not isinstance(x, _tensor()):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(x).__name__}")
    return x._data


def checked_flag(value, name, argument):
    """`value` of the bool argument `argument` of function `name` as a bool: PyTorch refuses
    anything else there (so that keepdim="no" or descending=0 cannot read as a choice)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument '{argument}' must be a bool, got "
                        f"{type(value).__name__}")
    return bool(value)


def _floating(x, name, forward, derivative, reads=True):
    """y = forward(xp, x) elementwise, its gradient g * derivative(xp, x, y). Integer and bool
    inputs give float32, as PyTorch's floating-point functions promote them (they never
    require grad); a floating-point input keeps its dtype. `reads`: whether derivative reads
    x (not only y)."""
    xd = _input_array(x, name)
    if xd.dtype.kind != "f":
        xd = xd.astype(F32)
    xp = _xp(xd)
    with np.errstate(all="ignore"):  # inf and nan where IEEE arithmetic gives them, silently
        y = xp.asarray(forward(xp, xd), dtype=xd.dtype)

    def backward(g):
        with np.errstate(all="ignore"):
            return (xp.asarray(g * derivative(xp, xd, y), dtype=F32),)

    return _make(y, (x,), backward, reads=reads)


def log1p(x):
    """log(1 + x), accurate where x is small; d/dx = 1 / (1 + x)."""
    return _floating(x, "log1p", lambda xp, v: xp.log1p(v), lambda xp, v, y: 1 / (v + 1))


def expm1(x):
    """exp(x) - 1, accurate where x is small; d/dx = exp(x) = y + 1."""
    return _floating(x, "expm1", lambda xp, v: xp.expm1(v), lambda xp, v, y: y + 1,
                     reads=False)


def sin(x):
    return _floating(x, "sin", lambda xp, v: xp.sin(v), lambda xp, v, y: xp.cos(v))


def cos(x):
    return _floating(x, "cos", lambda xp, v: xp.cos(v), lambda xp, v, y: -xp.sin(v))


def tan(x):
    """tan(x); d/dx = 1 + tan(x)^2."""
    return _floating(x, "tan", lambda xp, v: xp.tan(v), lambda xp, v, y: 1 + y * y,
                     reads=False)


_TWO_OVER_ROOT_PI = 2 / math.sqrt(math.pi)
_erf_host = np.frompyfunc(math.erf, 1, 1)


def _erf_array(xp, v):
    """erf of each element of `v`: CuPy's special function on the GPU; on the CPU (NumPy has
    none) the C library's erf, element by element, in double and rounded once."""
    if xp is not np:
        from cupyx.scipy.special import erf as erf_device

        return erf_device(v)
    # (frompyfunc gives a Python float for a 0-d array)
    return np.asarray(_erf_host(v.astype(np.float64)), dtype=np.float64)


def erf(x):
    """The error function; d/dx = 2 / sqrt(pi) * exp(-x^2)."""
    return _floating(x, "erf", _erf_array,
                     lambda xp, v, y: _TWO_OVER_ROOT_PI * xp.exp(-v * v))


def rsqrt(x):
    """1 / sqrt(x) (inf at 0, nan below); d/dx = -y^3 / 2."""
    return _floating(x, "rsqrt", lambda xp, v: 1 / xp.sqrt(v), lambda xp, v, y: -0.5 * y ** 3,
                     reads=False)


def reciprocal(x):
    """1 / x; d/dx = -y^2."""
    return _floating(x, "reciprocal", lambda xp, v: 1 / v, lambda xp, v, y: -(y * y),
                     reads=False)


def log2(x):
    return _floating(x, "log2", lambda xp, v: xp.log2(v),
                     lambda xp, v, y: 1 / (v * math.log(2)))


def log10(x):
    return _floating(x, "log10", lambda xp, v: xp.log10(v),
                     lambda xp, v, y: 1 / (v * math.log(10)))


def exp2(x):
    """2 ** x; d/dx = y * log(2)."""
    return _floating(x, "exp2", lambda xp, v: xp.exp2(v), lambda xp, v, y: y * math.log(2),
                     reads=False)


def square(x):
    """x * x: integers and bools give int64, as PyTorch squares them (no gradient there);
    floats through the product, with its gradient 2x."""
    xd = _input_array(x, "square")
    if xd.dtype.kind in "biu":
        wide = xd.astype(I64)
        return _make(wide * wide, (x,), None)
    return x * x


def _rounding(x, name, forward):
    """A rounding function of a floating-point tensor, same dtype out, with PyTorch's zero
    gradient (the steps are flat almost everywhere). Integers are whole already: a copy.
    Bools are refused, as PyTorch refuses them."""
    xd = _input_array(x, name)
    if xd.dtype.kind == "b":
        raise NotImplementedError(f'"{name}" is not implemented for bool tensors')
    if xd.dtype.kind in "iu":
        return _make(xd.copy(), (x,), None)
    xp = _xp(xd)
    with np.errstate(all="ignore"):
        y = xp.asarray(forward(xp, xd), dtype=xd.dtype)
    return _make(y, (x,), lambda g: (xp.zeros(g.shape, F32),), reads=False)


def round(x, decimals=0):
    """x rounded to `decimals` decimal places (left of the point if negative), halves to
    even, as PyTorch rounds; zero gradient."""
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"round(): decimals must be an int, got {type(decimals).__name__}")
    if decimals == 0:
        return _rounding(x, "round", lambda xp, v: xp.rint(v))
    if _input_array(x, "round").dtype.kind != "f":
        raise NotImplementedError(f'"round" with decimals is not implemented for '
                                  f'{x.dtype} tensors')
    # as PyTorch: scaled by a power of ten in the tensor's dtype, rounded, scaled back
    with np.errstate(over="ignore"):
        scale = x._data.dtype.type(np.float64(10.0) ** builtins.abs(int(decimals)))
    if decimals > 0:
        return _rounding(x, "round", lambda xp, v: xp.rint(v * scale) / scale)
    return _rounding(x, "round", lambda xp, v: xp.rint(v / scale) * scale)


def floor(x):
    return _rounding(x, "floor", lambda xp, v: xp.floor(v))


def ceil(x):
    return _rounding(x, "ceil", lambda xp, v: xp.ceil(v))


def trunc(x):
    """x rounded toward zero; zero gradient."""
    return _rounding(x, "trunc", lambda xp, v: xp.trunc(v))


def frac(x):
    """x - trunc(x), the fraction with x's sign; gradient g. Floating point only, as in
    PyTorch."""
    xd = _input_array(x, "frac")
    if xd.dtype.kind != "f":
        raise NotImplementedError(f'"frac" is not implemented for {xd.dtype} tensors')
    return _floating(x, "frac", lambda xp, v: v - xp.trunc(v), lambda xp, v, y: 1,
                     reads=False)


def sign_of(xp, v):
    """-1, 0 or 1 by the sign of each element of array `v`, in its dtype: 0 for zeros of
    either sign and for nan, as PyTorch's sign (NumPy's gives nan there)."""
    return (v > 0).astype(v.dtype) - (v < 0).astype(v.dtype)


def sign(x):
    """-1, 0 or 1 by the sign of each element, 0 for nan, in the tensor's dtype (bools stay
    bools: their own sign); zero gradient, as PyTorch's."""
    xd = _input_array(x, "sign")
    if xd.dtype.kind == "b":
        return _make(xd.copy(), (x,), None)
    xp = _xp(xd)
    return _make(sign_of(xp, xd), (x,), lambda g: (xp.zeros(g.shape, F32),), reads=False)


sgn = sign  # the same for real tensors, as in PyTorch


def rpow(base, exponent):
    """base ** exponent for a real number `base` and a tensor `exponent` (number ** tensor):
    int64 for an integer or bool base with integer or bool exponents, as in PyTorch (negative
    exponents give 1 / base ** -x rounded toward zero), else float32. The gradient is
    g * base ** x * log(base); for base 0 PyTorch takes it as 0 where x >= 0 (where the
    formula gives 0 * -inf), and so does pyrt."""
    if isinstance(base, np.generic):
        base = base.item()
    if not isinstance(base, numbers.Real):
        raise TypeError(f"pow(): base must be a real number, got {type(base).__name__}")
    ed = _input_array(exponent, "pow")
    xp = _xp(ed)
    if ed.dtype.kind in "biu" and isinstance(base, numbers.Integral):
        ed = ed.astype(I64, copy=False)
        b = np.int64(base)
        if base in (1, -1):  # 1 / b**-x = b**-x: the sign by the parity of x
            return _make(xp.asarray(xp.power(b, xp.abs(ed))), (exponent,), None)
        # as PyTorch: where x < 0, 1 / b**-x rounded toward zero, 0 (for base 0 too)
        negative = ed < 0
        out = xp.where(negative, 0, xp.power(b, xp.where(negative, 0, ed)))
        return _make(xp.asarray(out, dtype=I64), (exponent,), None)
    if ed.dtype.kind != "f":
        ed = ed.astype(F32)
    with np.errstate(all="ignore"):
        b = ed.dtype.type(base)
        y = xp.asarray(xp.power(b, ed), dtype=ed.dtype)
        log_base = np.log(b)  # nan for a negative base, as PyTorch's gradient is there

    def backward(g):
        with np.errstate(all="ignore"):
            if base == 0:
                return (g * xp.where(ed >= 0, F32.type(0), y * log_base),)
            return (g * (y * log_base),)

    return _make(y, (exponent,), backward, reads=base == 0)


# ---- floor division, remainder and bitwise ops, as PyTorch types and checks them -------------


def broadcast_shape(a, b):
    """The shape that shapes `a` and `b` broadcast to, or PyTorch's RuntimeError naming the
    dim where they do not."""
    rank = builtins.max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    for i, (m, n) in enumerate(zip(a, b)):
        if m != n and m != 1 and n != 1:
            raise RuntimeError(f"The size of tensor a ({m}) must match the size of tensor b "
                               f"({n}) at non-singleton dimension {i}")
    return tuple(n if m == 1 else m for m, n in zip(a, b))


def _operand(x, dtype):
    """Operand `x` of an op computed in `dtype`: a tensor's array, a number or an array of
    numbers, converted to `dtype`."""
    if isinstance(x, _tensor()):
        return x._data.astype(dtype, copy=False)
    if isinstance(x, numbers.Number):
        return dtype.type(x)
    return np.asarray(x, dtype)


def _binary_setup(op, a, b, dtype):
    """(xp, a's array, b's array) of ``a op b`` computed in `dtype`, the shapes checked."""
    tensors = [x for x in (a, b) if isinstance(x, _tensor())]
    xp = _xp(tensors[0]._data) if tensors else np
    if builtins.any(_xp(t._data) is not xp for t in tensors):
        raise RuntimeError(f"{op}(): expected both tensors on the same device, got "
                           f"{a.device} and {b.device}")
    ad, bd = _operand(a, dtype), _operand(b, dtype)
    broadcast_shape(np.shape(ad), np.shape(bd))
    return xp, ad, bd


def floor_divide(input, other):
    """input // other: the quotient rounded toward -inf, as Python's // and PyTorch's
    floor_divide (so that a == (a // b) * b + a % b). The dtype promotes as in arithmetic;
    integer division by zero is PyTorch's RuntimeError, float division by zero inf or nan.
    Like PyTorch, no derivative: backward through it is an error."""
    return _division("floor_divide", input, other)


def remainder(input, other):
    """input % other with the sign of other, as Python's % and PyTorch's remainder; dtype and
    errors as floor_divide. The gradient is g for input and -g * (input // other) for
    other."""
    return _division("remainder", input, other)


def fmod(input, other):
    """The remainder of input / other with the sign of input, as C's fmod and PyTorch's:
    input - trunc(input / other) * other. dtype and errors as remainder; the gradient is g for
    input and -g * trunc(input / other) for other."""
    return _division("fmod", input, other)


# the quotient whose multiple of `other` each remainder takes away
_QUOTIENTS = {"remainder": lambda xp, a, b: xp.floor_divide(a, b),
              "fmod": lambda xp, a, b: xp.trunc(a / b)}


def _division(op, a, b):
    dtype = result_dtype(op, a, b)
    if dtype == np.bool_:
        raise NotImplementedError(f'"{op}" is not implemented for bool tensors')
    Tensor = _tensor()
    if dtype is F32:
        a, b = _float32(a, op, "input"), _float32(b, op, "other")
    xp, ad, bd = _binary_setup(op, a, b, dtype)
    if dtype is not F32:
        if bool((bd == 0).any()):
            raise RuntimeError("ZeroDivisionError")
        return Tensor(xp.asarray(getattr(xp, op)(ad, bd), dtype=dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = xp.asarray(getattr(xp, op)(ad, bd), dtype=F32)
    sides = [(x, first) for x, first in ((a, True), (b, False)) if isinstance(x, Tensor)]
    if op == "floor_divide":
        return _make(out, tuple(x for x, _ in sides), _floor_divide_backward, reads=False)

    def backward(g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return tuple(
                None if not x._requires_grad
                else _unbroadcast(g if first else -g * _QUOTIENTS[op](xp, ad, bd), x.shape)
                for x, first in sides)

    return _make(out, tuple(x for x, _ in sides), backward,
                 reads=isinstance(b, Tensor) and b._requires_grad)


def divide_rounded(input, other, rounding_mode):
    """input / other rounded toward zero ("trunc") or down ("floor"), as torch.div with a
    rounding_mode: integers stay int64 (division by zero is PyTorch's RuntimeError), floats
    are float32 with PyTorch's zero gradient (the steps are flat almost everywhere)."""
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found {rounding_mode!r}")
    dtype = result_dtype("floor_divide", input, other)
    if dtype == np.bool_:
        raise NotImplementedError('"div" with a rounding_mode is not implemented for bool '
                                  'tensors')
    Tensor = _tensor()
    if dtype is F32:
        a, b = _float32(input, "div", "input"), _float32(other, "div", "other")
        xp, ad, bd = _binary_setup("div", a, b, F32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = xp.floor_divide(ad, bd) if rounding_mode == "floor" else xp.trunc(ad / bd)
        parents = tuple(t for t in (a, b) if isinstance(t, Tensor))
        return _make(_contiguous(xp.asarray(q, dtype=F32)), parents, lambda g: tuple(
            xp.zeros(t.shape, F32) if t._requires_grad else None for t in parents),
            reads=False)
    xp, ad, bd = _binary_setup("div", input, other, dtype)
    if bool((bd == 0).any()):
        raise RuntimeError("ZeroDivisionError")
    q = xp.floor_divide(ad, bd)
    if rounding_mode == "trunc":  # one up where the exact quotient is negative and inexact
        q = q + ((xp.remainder(ad, bd) != 0) & ((ad < 0) != (bd < 0)))
    return Tensor(_contiguous(xp.asarray(q, dtype=I64)))


def _floor_divide_backward(g):
    raise RuntimeError("derivative for floor_divide is not implemented (as in PyTorch): its "
                       "gradient is 0 wherever it exists; use a detached result as a constant")


def _bitwise(op, a, b):
    """a & b, a | b or a ^ b (op "and", "or", "xor") of bool and integer tensors (and Python
    bools and ints): bool when both are bools, else int64, as in PyTorch, which refuses
    floating point."""
    kinds = []
    for x, name in ((a, "input"), (b, "other")):
        kind = _kind(x)
        if kind is None:
            raise TypeError(f"bitwise_{op}(): {name} must be a Tensor, an int or a bool, got "
                            f"{_describe(x)}")
        kinds.append(kind)
    if "f" in kinds:
        raise NotImplementedError(f'"bitwise_{op}" is not implemented for floating-point '
                                  f'operands: it takes bool and integer tensors')
    dtype = np.dtype(np.bool_) if kinds == ["b", "b"] else I64
    xp, ad, bd = _binary_setup(f"bitwise_{op}", a, b, dtype)
    return (_tensor())(xp.asarray(getattr(xp, "bitwise_" + op)(ad, bd)))


def bitwise_and(input, other):
    return _bitwise("and", input, other)


def bitwise_or(input, other):
    return _bitwise("or", input, other)


def bitwise_xor(input, other):
    return _bitwise("xor", input, other)


def bitwise_not(input):
    """~input: logical not of a bool tensor, the bits flipped of an integer one."""
    xd = _input_array(input, "bitwise_not")
    if xd.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return (_tensor())(_xp(xd).invert(xd))


# ---- maximum and minimum ---------------------------------------------------------------------


def maximum(input, other):
    """The elementwise larger of two tensors, broadcast together, NaN where either is NaN; the
    dtype promotes as in arithmetic. Where they tie, each gets half the gradient, as in
    PyTorch."""
    return _extremum("maximum", input, other)


def minimum(input, other):
    """The elementwise smaller of two tensors: see maximum."""
    return _extremum("minimum", input, other)


def _extremum(op, a, b):
    Tensor = _tensor()
    for x, name in ((a, "input"), (b, "other")):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, got "
                            f"{type(x).__name__}")
    dtype = result_dtype(op, a, b)
    if dtype is F32:
        a, b = _float32(a, op, "input"), _float32(b, op, "other")
    xp, ad, bd = _binary_setup(op, a, b, dtype)
    out = xp.asarray(getattr(xp, op)(ad, bd))
    if dtype is not F32:
        return Tensor(out)

    def backward(g):
        # each side gets g where it wins, g / 2 where they tie, 0 where it loses
        shared = xp.where(ad == bd, g * F32.type(0.5), g)
        a_loses, b_loses = (ad < bd, ad > bd) if op == "maximum" else (ad > bd, ad < bd)
        zero = F32.type(0)
        return (_unbroadcast(xp.where(a_loses, zero, shared), a.shape)
                if a._requires_grad else None,
                _unbroadcast(xp.where(b_loses, zero, shared), b.shape)
                if b._requires_grad else None)

    return _make(out, (a, b), backward)


# ---- lerp and addcmul ------------------------------------------------------------------------


def _floating_operands(name, tensors):
    """The arrays of `tensors` (name, tensor) of a float32 function, checked as PyTorch checks
    them: tensors, of float32, on one device."""
    arrays = []
    for arg, t in tensors:
        if not isinstance(t, _tensor()):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                            f"{type(t).__name__}")
        arrays.append(t._data)
    first = arrays[0]
    for (arg, t), a in zip(tensors, arrays):
        if a.dtype != first.dtype:
            raise RuntimeError(f"{name}(): expected dtype {first.dtype} for '{arg}' but got "
                               f"{a.dtype}")
        if _xp(a) is not _xp(first):
            raise RuntimeError(f"{name}(): expected all tensors on {tensors[0][1].device}, "
                               f"got '{arg}' on {t.device}")
    if first.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" is not implemented for {first.dtype} tensors')
    shape = ()
    for a in arrays:
        shape = broadcast_shape(shape, a.shape)
    return arrays


def lerp(input, end, weight):
    """input + weight * (end - input), as torch.lerp: weight a number or a tensor, all
    broadcast together. Computed as PyTorch computes it, from the nearer end (end -
    (end - input) * (1 - weight) where |weight| >= 1/2), so that weight 1 gives end exactly.
    Gradients: g * (1 - weight) to input, g * weight to end, g * (end - input) to weight."""
    named = [("input", input), ("end", end)]
    if isinstance(weight, _tensor()):
        named.append(("weight", weight))
    elif isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise TypeError(f"lerp(): argument 'weight' must be a number or a Tensor, got "
                        f"{type(weight).__name__}")
    arrays = _floating_operands("lerp", named)
    a, b = arrays[0], arrays[1]
    xp = _xp(a)
    w = arrays[2] if len(arrays) == 3 else a.dtype.type(weight)
    diff = b - a
    out = _contiguous(xp.asarray(xp.where(xp.abs(w) < 0.5, a + w * diff, b - diff * (1 - w)),
                                 dtype=a.dtype))
    parents = tuple(t for _, t in named)

    def backward(g):
        grads = (g * (1 - w), g * w, g * diff)
        return tuple(_unbroadcast(_contiguous(xp.asarray(d, dtype=F32)), t.shape)
                     if t._requires_grad else None
                     for d, t in zip(grads, parents))

    return _make(out, parents, backward)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcast together; gradients g, g * value *
    tensor2 and g * value * tensor1 (summed back to each shape). Integer tensors give int64
    (value then taken toward zero, as PyTorch takes it); float32 with gradients."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"addcmul(): argument 'value' must be a number, got "
                        f"{type(value).__name__}")
    named = (("input", input), ("tensor1", tensor1), ("tensor2", tensor2))
    for arg, t in named:
        if not isinstance(t, _tensor()):
            raise TypeError(f"addcmul(): argument '{arg}' must be a Tensor, got "
                            f"{type(t).__name__}")
    if builtins.all(t._data.dtype.kind in "biu" for _, t in named):
        xp, wide = _xp(input._data), [t._data.astype(I64) for _, t in named]
        shape = broadcast_shape(broadcast_shape(wide[0].shape, wide[1].shape), wide[2].shape)
        out = wide[0] + I64.type(int(value)) * wide[1] * wide[2]
        return (_tensor())(_contiguous(xp.broadcast_to(out, shape)))
    floats = [(arg, _float32(t, "addcmul", arg)) for arg, t in named]
    a, t1, t2 = _floating_operands("addcmul", floats)
    xp = _xp(a)
    v = F32.type(value)
    out = _contiguous(xp.asarray(a + v * (t1 * t2), dtype=F32))
    parents = tuple(t for _, t in floats)

    def backward(g):
        grads = (g, g * v * t2, g * v * t1)
        return tuple(_unbroadcast(_contiguous(xp.asarray(d, dtype=F32)), t.shape)
                     if t._requires_grad else None
                     for d, t in zip(grads, parents))

    return _make(out, parents, backward)
