"""Pointwise functions of two operands, broadcast together, each with its gradient beside it:
atan2, hypot, logaddexp, logaddexp2, xlogy and copysign (float32 results, integer and bool
tensors promoted as PyTorch promotes them), heaviside (input's dtype, no derivative, as in
PyTorch); and signbit and nan_to_num of one tensor."""

import numbers

import numpy as np

from pyrt.functional import _contiguous, _float32, _make, _tensor, _unbroadcast, _xp
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _binary_setup, _input_array
from pyrt.selection import scalar_as

__all__ = ["arctan2", "atan2", "copysign", "heaviside", "hypot", "logaddexp", "logaddexp2",
           "nan_to_num", "signbit", "xlogy"]


def _operands(name, a, b, numbers_allowed, integers_allowed=True):
    """a and b of a float32 function `name` as float32 tensors or numbers: integer and bool
    tensors converted (refused where PyTorch has no integer kernel: both integers and not
    `integers_allowed`), numbers only where `numbers_allowed`, as PyTorch's signature says."""
    Tensor = _tensor()
    for x, arg in ((a, "input"), (b, "other")):
        if isinstance(x, Tensor):
            continue
        if not (numbers_allowed and isinstance(x, numbers.Real)):
            kind = "Tensor or Number" if numbers_allowed else "Tensor"
            raise TypeError(f"{name}(): argument '{arg}' must be {kind}, not "
                            f"{type(x).__name__}")
    if not integers_allowed and all(isinstance(x, Tensor) and x._data.dtype.kind in "biu"
                                    for x in (a, b)):
        raise NotImplementedError(f'"{name}" is not implemented for {a._data.dtype} tensors: '
                                  f'it takes floating point')
    return _float32(a, name, "input"), _float32(b, name, "other")


def _binary(name, a, b, forward, derivatives, numbers_allowed=False, integers_allowed=True):
    """out = forward(xp, a, b) in float32, broadcast; the gradients (da, db) =
    derivatives(xp, a, b, out, g), each summed back to its tensor's shape."""
    a, b = _operands(name, a, b, numbers_allowed, integers_allowed)
    xp, ad, bd = _binary_setup(name, a, b, F32)
    with np.errstate(all="ignore"):  # inf and nan where IEEE arithmetic gives them
        out = _contiguous(xp.asarray(forward(xp, ad, bd), dtype=F32))
    parents = tuple(x for x in (a, b) if isinstance(x, _tensor()))

    def backward(g):
        with np.errstate(all="ignore"):
            grads = derivatives(xp, ad, bd, out, g)
        return tuple(
            _unbroadcast(_contiguous(xp.asarray(xp.broadcast_to(d, out.shape), dtype=F32)),
                         x.shape) if x._requires_grad else None
            for x, d in zip((a, b), grads) if isinstance(x, _tensor()))

    return _make(out, parents, backward)


def atan2(input, other):
    """The angle of the point (other, input), in (-pi, pi]; gradients g * other / r^2 and
    -g * input / r^2, r^2 = input^2 + other^2."""
    return _binary("atan2", input, other, lambda xp, a, b: xp.arctan2(a, b),
                   lambda xp, a, b, y, g: (g * b / (a * a + b * b), -g * a / (a * a + b * b)))


arctan2 = atan2


def hypot(input, other):
    """sqrt(input^2 + other^2) without overflow; gradients g * input / out, g * other /
    out. Floating point only, as in PyTorch."""
    return _binary("hypot", input, other, lambda xp, a, b: xp.hypot(a, b),
                   lambda xp, a, b, y, g: (g * a / y, g * b / y), integers_allowed=False)


def pow_tensor(input, exponent):
    """input ** exponent elementwise for a tensor exponent, the two broadcast together, as
    torch.pow: int64 when both are integers (negative powers refused, as PyTorch refuses
    them), float32 otherwise. Gradients, as PyTorch's: g * exponent * input ** (exponent - 1)
    (0 where exponent is 0) and g * out * log(input) (0 where input is 0 and exponent >= 0,
    where the formula gives 0 * -inf)."""
    Tensor = _tensor()
    if (isinstance(input, Tensor) and isinstance(exponent, Tensor)
            and input._data.dtype.kind in "iu" and exponent._data.dtype.kind in "biu"):
        xp, ad, bd = _binary_setup("pow", input, exponent, I64)
        if bd.size and bool((bd < 0).any()):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return _make(_contiguous(xp.power(ad, bd)), (input, exponent), None)

    def derivatives(xp, a, b, y, g):
        da = xp.where(b == 0, F32.type(0), g * (b * a ** (b - 1)))
        db = xp.where((a == 0) & (b >= 0), F32.type(0), g * (y * xp.log(a)))
        return da, db

    return _binary("pow", input, exponent, lambda xp, a, b: xp.power(a, b), derivatives,
                   numbers_allowed=True)


def logaddexp(input, other):
    """log(exp(input) + exp(other)), computed stably; gradients g / (1 + exp(other - input))
    and g / (1 + exp(input - other)), as PyTorch writes them."""
    return _binary("logaddexp", input, other, lambda xp, a, b: xp.logaddexp(a, b),
                   lambda xp, a, b, y, g: (g / (1 + xp.exp(b - a)), g / (1 + xp.exp(a - b))),
                   integers_allowed=False)


def logaddexp2(input, other):
    """log2(2^input + 2^other), computed stably; gradients g / (1 + 2^(other - input)) and
    g / (1 + 2^(input - other))."""
    return _binary("logaddexp2", input, other, lambda xp, a, b: xp.logaddexp2(a, b),
                   lambda xp, a, b, y, g: (g / (1 + xp.exp2(b - a)), g / (1 + xp.exp2(a - b))),
                   integers_allowed=False)


def _xlogy_values(xp, x, y):
    # x * log(y), 0 where x is 0 unless y is nan
    return xp.where((x == 0) & ~xp.isnan(y), F32.type(0), x * xp.log(y))


def _xlogy_derivatives(xp, x, y, out, g):
    # as PyTorch: xlogy(g, y), 0 where x == 0 and y <= 0 (where log(y) is not finite); g x / y
    dx = xp.where((x == 0) & (y <= 0), F32.type(0), _xlogy_values(xp, g, y))
    return dx, g * x / y


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is nan), as torch.xlogy; either
    may be a number."""
    return _binary("xlogy", input, other, _xlogy_values, _xlogy_derivatives,
                   numbers_allowed=True)


def _copysign_derivatives(xp, a, b, out, g):
    # out / input is +-1, the flip of the sign: 0 where input is 0, as PyTorch makes it; other
    # gets no gradient (the sign is flat almost everywhere)
    ratio = xp.where(a == 0, F32.type(0), out / xp.where(a == 0, F32.type(1), a))
    return g * ratio, xp.zeros((), F32)


def copysign(input, other):
    """|input| with the sign (bit) of other, as torch.copysign; other may be a number."""
    return _binary("copysign", input, other, lambda xp, a, b: xp.copysign(a, b),
                   _copysign_derivatives, numbers_allowed=True)


def _heaviside_backward(g):
    raise RuntimeError("the derivative for 'heaviside' is not implemented (as in PyTorch): it "
                       "is 0 wherever it exists; use a detached result as a constant")


def heaviside(input, values):
    """The step function: 0 where input < 0, values where input == 0, 1 where input > 0 (and
    0 at nan), broadcast together; input and values of one dtype, which the result keeps."""
    Tensor = _tensor()
    xd = _input_array(input, "heaviside")
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values._data.dtype != xd.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    xp, ad, vd = _binary_setup("heaviside", input, values, xd.dtype)
    out = _contiguous(xp.asarray(xp.where(ad == 0, vd, ad > 0), dtype=xd.dtype))
    return _make(out, (input, values), _heaviside_backward, reads=False)


def signbit(input):
    """Where the sign bit is set (negative numbers, -0.0, nan with its sign bit): bool."""
    xd = _input_array(input, "signbit")
    xp = _xp(xd)
    if xd.dtype.kind == "f":
        return _tensor()(xp.asarray(xp.signbit(xd)))
    return _tensor()(xp.asarray(xd < 0))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """input with nan replaced by `nan`, inf by `posinf` and -inf by `neginf` (by default
    the dtype's largest and lowest finite values), as torch.nan_to_num. Integers and bools
    are returned as copies. The gradient passes where input is finite, 0 elsewhere."""
    xd = _input_array(input, "nan_to_num")
    for value, arg in ((nan, "nan"), (posinf, "posinf"), (neginf, "neginf")):
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, numbers.Real)):
            raise TypeError(f"nan_to_num(): argument '{arg}' must be a float or None, got "
                            f"{type(value).__name__}")
    xp = _xp(xd)
    if xd.dtype.kind != "f":
        return _make(xd.copy(), (input,), None)
    info = np.finfo(xd.dtype)
    # each replacement converted to the dtype: a float32 bound past its range is refused
    fills = [scalar_as(default if value is None else value, xd.dtype, f"nan_to_num(): {arg}")
             for value, default, arg in ((nan, 0.0, "nan"), (posinf, info.max, "posinf"),
                                         (neginf, info.min, "neginf"))]
    out = xp.where(xp.isnan(xd), fills[0],
                   xp.where(xd == np.inf, fills[1], xp.where(xd == -np.inf, fills[2], xd)))
    finite = xp.isfinite(xd)
    return _make(_contiguous(xp.asarray(out, dtype=xd.dtype)), (input,),
                 lambda g: (xp.where(finite, g, F32.type(0)),), reads=False)
