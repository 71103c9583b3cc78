"""Activation functions on Tensors with PyTorch's names, arguments and gradients: leaky_relu,
elu, gelu, silu, softplus and hardtanh (relu, sigmoid and tanh have C kernels of their own, in
pyrt.functional).

Each op computes y = f(x) element by element with the array ops of the input's backend (NumPy,
or CuPy for a tensor on the GPU) and gives backward the local derivative f'(x), which it
multiplies the incoming gradient by. Input and result are float32. Where f has no derivative
(leaky_relu and elu at 0, hardtanh at its bounds) the gradient is the one PyTorch picks.

GELU needs the normal distribution's CDF, Phi(x) = erfc(-x / sqrt(2)) / 2, and NumPy has no
error function. ``_erfc`` evaluates one from the scaled complementary error function
erfcx(z) = exp(z^2) erfc(z), which for z >= 0 falls smoothly from 1 to 0 like 1 / (z sqrt(pi)):
a Chebyshev series in t = (z - 3) / (z + 3) fits it closely with 17 terms. The terms are
fitted when this module is imported, by interpolating the C library's erfc (math.erfc) at 17
points; the series agrees with math.erfc to about 1e-12 relative, far below float32's
resolution (tests/test_nn_more.py checks it). The same array ops run on CuPy arrays.
"""

import math

import numpy as np

from pyrt import ops
from pyrt.functional import _make, _real_number, _tensor, _xp
from pyrt.ops._checks import F32

__all__ = ["elu", "gelu", "hardtanh", "leaky_relu", "silu", "softplus"]

GELU_APPROXIMATIONS = ("none", "tanh")


def _float32(a, xp):
    """`a` as a C-contiguous float32 array (NumPy arithmetic on a 0-d array gives a scalar)."""
    return xp.asarray(a, dtype=F32, order="C")


def _float_input(op, input):
    """(array, array module) of `input`, a float32 Tensor; the array C-contiguous, so that the
    arrays computed from it are too."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    x = input.data
    if x.dtype != F32:
        raise TypeError(f"{op}: input must be a float32 tensor, got {x.dtype}")
    xp = _xp(x)
    return _float32(x, xp), xp


def refuse_inplace(op, inplace):
    """pyrt's ops write their results to new tensors: inplace=True is refused, as dropout
    refuses it."""
    if inplace:
        raise ValueError(f"{op}(inplace=True) is not supported: pyrt writes the result to a new "
                         "tensor")


# inf * 0 and inf - inf at infinite inputs give nan, as in PyTorch, without NumPy's warnings
_IEEE = {"invalid": "ignore", "over": "ignore"}


def _elementwise(y, input, slope):
    """The tensor of y = f(input); its backward multiplies the gradient by ``slope()``,
    f'(input) at each element (a function: computed only if backward runs)."""
    xp = _xp(y)

    def backward(g):
        with np.errstate(**_IEEE):
            return (_float32(g * slope(), xp),)

    return _make(_float32(y, xp), (input,), backward)


# ---- piecewise linear ------------------------------------------------------------------------


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x; the gradient at 0 is negative_slope."""
    slope = np.float32(_real_number(negative_slope, "leaky_relu: negative_slope"))
    refuse_inplace("leaky_relu", inplace)
    x, xp = _float_input("leaky_relu", input)
    positive = x > 0
    return _elementwise(xp.where(positive, x, x * slope), input,
                        lambda: xp.where(positive, np.float32(1), slope))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]; the gradient passes strictly between the bounds (0 at
    them, as in PyTorch)."""
    lo = np.float32(_real_number(min_val, "hardtanh: min_val"))
    hi = np.float32(_real_number(max_val, "hardtanh: max_val"))
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    refuse_inplace("hardtanh", inplace)
    x, xp = _float_input("hardtanh", input)
    # (written as PyTorch's test, so that a NaN passes its gradient as there)
    return _elementwise(xp.clip(x, lo, hi), input, lambda: ~((x <= lo) | (x >= hi)))


# ---- smooth --------------------------------------------------------------------------------


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (exp(x) - 1); the gradient is 1, else alpha exp(x) (alpha at
    0)."""
    a = np.float32(_real_number(alpha, "elu: alpha"))
    refuse_inplace("elu", inplace)
    x, xp = _float_input("elu", input)
    positive = x > 0
    negative_part = xp.minimum(x, 0)  # exp of the positive elements would overflow, unused
    return _elementwise(xp.where(positive, x, a * xp.expm1(negative_part)), input,
                        lambda: xp.where(positive, np.float32(1), a * xp.exp(negative_part)))


def silu(input, inplace=False):
    """x sigmoid(x) (also called swish); the gradient is s (1 + x (1 - s)), s = sigmoid(x)."""
    refuse_inplace("silu", inplace)
    x, _ = _float_input("silu", input)
    s = ops.sigmoid(x)
    with np.errstate(**_IEEE):
        y = x * s
    return _elementwise(y, input, lambda: s * (1 + x * (1 - s)))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, a smooth relu; where beta x > threshold, x itself, as in
    PyTorch. Computed as (max(z, 0) + log1p(exp(-|z|))) / beta with z = beta x, which never
    overflows. The gradient is sigmoid(beta x), and 1 where the result is x."""
    b = _real_number(beta, "softplus: beta")
    limit = _real_number(threshold, "softplus: threshold")
    if b == 0:
        raise ValueError("softplus: beta must not be 0 (the function would be log(2) / 0)")
    x, xp = _float_input("softplus", input)
    z = _float32(x * np.float32(b), xp)  # (for ops.sigmoid: an array, also when 0-d)
    linear = z > limit
    soft = (xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))) / np.float32(b)
    return _elementwise(xp.where(linear, x, soft), input,
                        lambda: xp.where(linear, np.float32(1), ops.sigmoid(z)))


# ---- GELU ----------------------------------------------------------------------------------

_K = 3.0  # the centre of the map z -> t = (z - _K) / (z + _K)
# past _Z_MAX, erfc(z) < 1e-63: GELU's tail x Phi(x) and its gradient are 0 in float32 there,
# so the series is fitted on [0, _Z_MAX] and erfcx held at its value at _Z_MAX beyond
_Z_MAX = 12.0
_T_MAX = (_Z_MAX - _K) / (_Z_MAX + _K)


def _erfcx_coefficients(terms=17):
    """Chebyshev coefficients of erfcx on [0, _Z_MAX], in the variable
    s = 2 (t + 1) / (_T_MAX + 1) - 1, which runs over [-1, 1] as t runs over [-1, _T_MAX]."""
    def erfcx(s):
        t = (s + 1) * (_T_MAX + 1) / 2 - 1
        return np.array([math.exp(z * z) * math.erfc(z) for z in _K * (1 + t) / (1 - t)])

    return np.polynomial.chebyshev.chebinterpolate(erfcx, terms - 1).tolist()


_ERFCX = _erfcx_coefficients()


def _erfc(z):
    """The complementary error function of a float64 array (NumPy's or CuPy's), to about 1e-12
    relative: exp(-z^2) erfcx(|z|) by Clenshaw's recurrence over the series, and
    erfc(z) = 2 - erfc(-z) for z < 0."""
    xp = _xp(z)
    a = xp.minimum(xp.abs(z), _Z_MAX)  # (NaN stays NaN)
    s = ((a - _K) / (a + _K) + 1) * (2 / (_T_MAX + 1)) - 1
    two_s = 2 * s
    b1 = b2 = 0.0
    for c in _ERFCX[:0:-1]:
        b1, b2 = two_s * b1 - b2 + c, b1
    tail = xp.exp(-z * z) * (s * b1 - b2 + _ERFCX[0])
    return xp.where(z < 0, 2 - tail, tail)


_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TANH_SCALE = math.sqrt(2 / math.pi)
_TANH_CUBIC = 0.044715


def gelu(input, approximate="none"):
    """x Phi(x), Phi the standard normal CDF; the gradient is Phi(x) + x phi(x), phi its
    density. approximate="tanh": PyTorch's 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))),
    with its own gradient. Computed in float64 and rounded to float32, so that the tails keep
    their relative accuracy."""
    if not (isinstance(approximate, str) and approximate in GELU_APPROXIMATIONS):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    x32, xp = _float_input("gelu", input)
    x = x32.astype(np.float64)
    if approximate == "tanh":
        with np.errstate(**_IEEE):
            th = xp.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x * x * x))
            y = 0.5 * x * (1 + th)
        return _elementwise(y, input, lambda: (
            0.5 * (1 + th)
            + 0.5 * x * (1 - th * th) * _TANH_SCALE * (1 + 3 * _TANH_CUBIC * x * x)))
    with np.errstate(**_IEEE):
        cdf = 0.5 * _erfc(-_SQRT_HALF * x)
        y = x * cdf
    return _elementwise(y, input, lambda: cdf + x * _INV_SQRT_2PI * xp.exp(-0.5 * x * x))
