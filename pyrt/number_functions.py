"""Pointwise functions of numbers as numbers: float_power (a power computed in float64),
ldexp and frexp (scaling by and splitting off powers of two), nextafter (the neighbouring
float32), and gcd and lcm of integers; each with its gradient beside it where PyTorch defines
one."""

from collections import namedtuple

import numpy as np

from pyrt.binary_pointwise import _binary
from pyrt.functional import _contiguous, _make, _tensor, _xp
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _binary_setup, _input_array
from pyrt.special_functions import binary

__all__ = ["float_power", "frexp", "gcd", "lcm", "ldexp", "nextafter"]

# what frexp returns, as torch.return_types.frexp
frexp_result = namedtuple("frexp", ("mantissa", "exponent"))


def _float_power_input(xp, x, e, y, g):
    # g e x^(e - 1), 0 where e == 0 (also at x == 0), as PyTorch's pow
    return xp.where(e == 0, 0.0, g * e * xp.power(x, e - 1))


def _float_power_exponent(xp, x, e, y, g):
    # g x^e log(x), 0 where x == 0 and e >= 0 (the limit), as PyTorch's pow
    return xp.where((x == 0) & (e >= 0), 0.0, g * y * xp.log(x))


def float_power(input, exponent):
    """input ** exponent computed in float64, either may be a number. PyTorch returns float64;
    pyrt has no float64 dtype, so the float64 result is rounded to float32. Gradients as
    pow's: g exponent input^(exponent - 1) and g out log(input)."""
    return binary("float_power", input, exponent, lambda xp, x, e: xp.power(x, e),
                  (_float_power_input, _float_power_exponent), numbers_allowed=True)


def ldexp(input, other):
    """input * 2 ** other, in float32 as PyTorch computes it (other may be floating point, as
    there); gradients g 2^other and g out log(2)."""
    if isinstance(other, _tensor()) and other._data.dtype.kind == "b":
        raise NotImplementedError('"ldexp" is not implemented for bool exponents: pass '
                                  'integers or floating point')
    return _binary("ldexp", input, other, lambda xp, a, b: a * xp.exp2(b),
                   lambda xp, a, b, y, g: (g * xp.exp2(b), g * y * np.float32(np.log(2))))


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent and |mantissa| in [0.5, 1)
    (0, inf and nan keep their value with exponent 0). The exponent is int64: PyTorch's is
    int32, which pyrt does not have. The mantissa's gradient is g / 2 ** exponent; the
    exponent has none."""
    xd = _input_array(input, "frexp")
    if xd.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = _xp(xd)
    mantissa, exponent = xp.frexp(xd)

    def backward(g):
        with np.errstate(all="ignore"):  # inf past 2^127, as PyTorch's float32 gives
            return (g / xp.exp2(exponent.astype(F32)),)

    return frexp_result(_make(_contiguous(mantissa.astype(F32)), (input,), backward,
                              reads=False),
                        _tensor()(_contiguous(exponent.astype(I64))))


def nextafter(input, other):
    """The next float32 after input in the direction of other (other itself where they are
    equal). The gradients are PyTorch's: g for input where input != other (0 where the result
    is other), 0 for other."""
    return _binary("nextafter", input, other, lambda xp, a, b: xp.nextafter(a, b),
                   lambda xp, a, b, y, g: (xp.where(a == b, F32.type(0), g), xp.zeros((), F32)),
                   integers_allowed=False)


def _integers(name, input, other):
    """(xp, input's array, other's array) of the integer function `name` of two int64
    tensors."""
    for x, arg in ((input, "input"), (other, "other")):
        if not isinstance(x, _tensor()):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not "
                            f"{type(x).__name__}")
        if x._data.dtype != I64:
            raise NotImplementedError(f'"{name}" is not implemented for {x._data.dtype} '
                                      f'tensors: it takes int64')
    return _binary_setup(name, input, other, I64)


def gcd(input, other):
    """The greatest common divisor of |input| and |other| (0 where both are 0), int64."""
    xp, a, b = _integers("gcd", input, other)
    return _tensor()(_contiguous(xp.asarray(xp.gcd(a, b), dtype=I64)))


def lcm(input, other):
    """The least common multiple of |input| and |other| (0 where either is 0), int64 (it
    wraps around past 2**63, as PyTorch's)."""
    xp, a, b = _integers("lcm", input, other)
    return _tensor()(_contiguous(xp.asarray(xp.lcm(a, b), dtype=I64)))
