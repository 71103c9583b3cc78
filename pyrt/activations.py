"""Activation functions on Tensors with PyTorch's names, arguments and gradients: leaky_relu,
elu, selu, celu, gelu, silu, mish, softplus, logsigmoid, hardtanh, relu6, hardsigmoid,
hardswish, prelu, rrelu, threshold, softsign, tanhshrink, softshrink, hardshrink, glu and
softmin (relu, sigmoid and tanh have C kernels of their own, in pyrt.functional).

Each op computes y = f(x) element by element with the array ops of the input's backend (NumPy,
or CuPy for a tensor on the GPU) and gives backward the local derivative f'(x), which it
multiplies the incoming gradient by. Input and result are float32. Where f has no derivative
(at the kinks of the piecewise linear ones) the gradient is the one PyTorch picks, and NaN
passes the way PyTorch's tests let it pass. Functions with exponential tails are computed in
forms that neither overflow nor cancel: log(1 + exp(z)) as max(z, 0) + log1p(exp(-|z|)),
exp(x) - 1 as expm1 of min(x, 0).

GELU needs the normal distribution's CDF, Phi(x) = erfc(-x / sqrt(2)) / 2, and NumPy has no
error function. ``_erfc`` evaluates one from the scaled complementary error function
erfcx(z) = exp(z^2) erfc(z), which for z >= 0 falls smoothly from 1 to 0 like 1 / (z sqrt(pi)):
a Chebyshev series in t = (z - 3) / (z + 3) fits it closely with 17 terms. The terms are
fitted when this module is imported, by interpolating the C library's erfc (math.erfc) at 17
points; the series agrees with math.erfc to about 1e-12 relative, far below float32's
resolution (tests/test_nn_more.py checks it). The same array ops run on CuPy arrays.
"""

import math
import numbers
import warnings

import numpy as np

from pyrt import ops
from pyrt.functional import (
    _inplace,
    _make,
    _real_number,
    _tensor,
    _xp,
    dim_index,
    neg,
    softmax,
)
from pyrt.ops._checks import F32

__all__ = ["celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid",
           "hardswish", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "logsigmoid",
           "mish", "prelu", "relu6", "rrelu", "rrelu_", "selu", "selu_", "silu", "softmin",
           "softplus", "softshrink", "softsign", "tanhshrink", "threshold", "threshold_"]

GELU_APPROXIMATIONS = ("none", "tanh")


def _float32(a, xp):
    """`a` as a C-contiguous float32 array (NumPy arithmetic on a 0-d array gives a scalar)."""
    return xp.asarray(a, dtype=F32, order="C")


def _float_input(op, input):
    """(array, array module) of `input`, a float32 Tensor; the array C-contiguous, so that the
    arrays computed from it are too."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    x = input._data
    if x.dtype != F32:
        raise TypeError(f"{op}: input must be a float32 tensor, got {x.dtype}")
    xp = _xp(x)
    return _float32(x, xp), xp


def inplace_flag(inplace):
    """A layer's inplace argument as a bool (a bool or 0/1, as PyTorch's layers take it)."""
    if not isinstance(inplace, (bool, np.bool_, numbers.Integral)):
        raise TypeError(f"inplace must be a bool, got {type(inplace).__name__}")
    return bool(inplace)


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
    if inplace:
        return _inplace(input, lambda t: leaky_relu(t, negative_slope))
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
    if inplace:
        return _inplace(input, lambda t: hardtanh(t, min_val, max_val))
    x, xp = _float_input("hardtanh", input)
    # (written as PyTorch's test, so that a NaN passes its gradient as there)
    return _elementwise(xp.clip(x, lo, hi), input, lambda: ~((x <= lo) | (x >= hi)))


# ---- smooth --------------------------------------------------------------------------------


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (exp(x) - 1); the gradient is 1, else alpha exp(x) (alpha at
    0)."""
    a = np.float32(_real_number(alpha, "elu: alpha"))
    if inplace:
        return _inplace(input, lambda t: elu(t, alpha))
    x, xp = _float_input("elu", input)
    positive = x > 0
    negative_part = xp.minimum(x, 0)  # exp of the positive elements would overflow, unused
    return _elementwise(xp.where(positive, x, a * xp.expm1(negative_part)), input,
                        lambda: xp.where(positive, np.float32(1), a * xp.exp(negative_part)))


def silu(input, inplace=False):
    """x sigmoid(x) (also called swish); the gradient is s (1 + x (1 - s)), s = sigmoid(x)."""
    if inplace:
        return _inplace(input, lambda t: silu(t))
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


# ---- piecewise linear: clamps and shrinks ----------------------------------------------------


def relu6(input, inplace=False):
    """min(max(x, 0), 6): hardtanh between 0 and 6, with its gradient (0 at both bounds)."""
    if inplace:
        return _inplace(input, lambda t: relu6(t))
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input, inplace=False):
    """min(max(x + 3, 0), 6) / 6, a piecewise linear sigmoid; the gradient is 1/6 strictly
    between -3 and 3 and 0 elsewhere (and at nan), as in PyTorch."""
    if inplace:
        return _inplace(input, lambda t: hardsigmoid(t))
    x, xp = _float_input("hardsigmoid", input)
    y = xp.minimum(xp.maximum(x + np.float32(3), np.float32(0)), np.float32(6)) / np.float32(6)
    return _elementwise(y, input, lambda: ((x > -3) & (x < 3)) * np.float32(1 / 6))


def hardswish(input, inplace=False):
    """x hardsigmoid(x): 0 below -3, x (x + 3) / 6 between -3 and 3, x above 3. The
    gradient is 0 up to -3, x / 3 + 1/2 strictly between -3 and 3 and 1 from 3 on (and at
    nan), PyTorch's branches."""
    if inplace:
        return _inplace(input, lambda t: hardswish(t))
    x, xp = _float_input("hardswish", input)
    gate = xp.minimum(xp.maximum(x + np.float32(3), np.float32(0)), np.float32(6))
    with np.errstate(**_IEEE):
        y = x * gate / np.float32(6)
    return _elementwise(y, input, lambda: xp.where(
        x <= -3, np.float32(0), xp.where(x < 3, x / np.float32(3) + np.float32(0.5),
                                         np.float32(1))))


def threshold(input, threshold, value, inplace=False):
    """`value` where x <= threshold, else x (nan stays nan); the gradient passes where
    x > threshold."""
    th = np.float32(_real_number(threshold, "threshold: threshold"))
    v = np.float32(_real_number(value, "threshold: value"))
    if inplace:
        return _inplace(input, lambda t: _threshold(t, th, v))
    return _threshold(input, th, v)


def _threshold(input, th, v):
    x, xp = _float_input("threshold", input)
    below = x <= th
    return _elementwise(xp.where(below, v, x), input, lambda: ~below)


def _inside(x, lambd):
    """Where x lies in [-lambd, lambd] (not at nan): where the shrinks are flat."""
    return (x >= -lambd) & (x <= lambd)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between (nan stays nan); the gradient
    is 1 outside [-lambd, lambd]. lambd must be >= 0."""
    lam = _real_number(lambd, "softshrink: lambd")
    if not lam >= 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype Float, "
                           f"but found {lam:g}")
    x, xp = _float_input("softshrink", input)
    lam = np.float32(lam)
    y = xp.where(x > lam, x - lam, xp.where(x < -lam, x + lam, x * np.float32(0)))
    return _elementwise(y, input, lambda: ~_inside(x, lam))


def hardshrink(input, lambd=0.5):
    """x outside [-lambd, lambd], 0 inside (nan stays nan); the gradient is 1 outside."""
    lam = np.float32(_real_number(lambd, "hardshrink: lambd"))
    x, xp = _float_input("hardshrink", input)
    inside = _inside(x, lam)
    return _elementwise(xp.where(inside, np.float32(0), x), input, lambda: ~inside)


# ---- smooth: more of the ELU family, sign-like and sigmoid-like ------------------------------

# SELU's constants (Klambauer et al. 2017), which keep activations of mean 0 and variance 1
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _elu_family(op, input, alpha, scale, input_scale):
    """scale x where x > 0, else scale alpha (exp(input_scale x) - 1), PyTorch's general ELU.
    The exponential of min(x, 0) only: the positive elements would overflow and are unused.
    The gradient, written as PyTorch's test (so that nan passes the positive branch), is
    scale alpha input_scale exp(input_scale x) where x <= 0, else scale."""
    x, xp = _float_input(op, input)
    a, s, k = np.float32(alpha), np.float32(scale), np.float32(input_scale)
    negative = x <= 0
    with np.errstate(**_IEEE):
        z = xp.minimum(x, np.float32(0)) * k
        y = xp.where(negative, s * a * xp.expm1(z), s * x)
    return _elementwise(y, input, lambda: xp.where(negative, s * a * k * xp.exp(z), s))


def selu(input, inplace=False):
    """scale (x where x > 0, else alpha (exp(x) - 1)), with SELU's fixed alpha and scale."""
    if inplace:
        return _inplace(input, lambda t: selu(t))
    return _elu_family("selu", input, SELU_ALPHA, SELU_SCALE, 1.0)


def celu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha (exp(x / alpha) - 1): elu made continuously differentiable
    for every alpha; alpha must not be 0."""
    a = _real_number(alpha, "celu: alpha")
    if a == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return _inplace(input, lambda t: celu(t, alpha))
    return _elu_family("celu", input, a, 1.0, 1 / a)


def _softplus0(x, xp):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)), which neither overflows for large x
    nor loses the tail for very negative x."""
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def mish(input, inplace=False):
    """x tanh(softplus(x)); the gradient is t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)).
    Computed in float64 and rounded, so that the negative tail, x exp(x) in effect, keeps its
    relative accuracy."""
    if inplace:
        return _inplace(input, lambda t: mish(t))
    x32, xp = _float_input("mish", input)
    x = x32.astype(np.float64)
    with np.errstate(**_IEEE):
        t = xp.tanh(_softplus0(x, xp))
        y = x * t
    return _elementwise(y, input, lambda: t + x * (1 / (1 + xp.exp(-x))) * (1 - t * t))


def logsigmoid(input):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable in both tails (x itself far
    below 0, -exp(-x) far above); the gradient is sigmoid(-x)."""
    x, xp = _float_input("logsigmoid", input)
    y = xp.minimum(x, np.float32(0)) - xp.log1p(xp.exp(-xp.abs(x)))
    return _elementwise(y, input, lambda: ops.sigmoid(_float32(-x, xp)))


def softsign(input):
    """x / (1 + |x|); the gradient is 1 / (1 + |x|)^2."""
    x, xp = _float_input("softsign", input)
    d = 1 + xp.abs(x)
    with np.errstate(**_IEEE):
        y = x / d
    return _elementwise(y, input, lambda: 1 / (d * d))


def tanhshrink(input):
    """x - tanh(x); the gradient is tanh(x)^2. Computed in float64 and rounded: near 0 the
    difference, about x^3 / 3, would otherwise lose its digits to cancellation."""
    x32, xp = _float_input("tanhshrink", input)
    x = x32.astype(np.float64)
    t = xp.tanh(x)
    with np.errstate(**_IEEE):
        y = x - t
    return _elementwise(y, input, lambda: t * t)


# ---- with a learned or a random slope ------------------------------------------------------


def prelu(input, weight):
    """x where x > 0, else a x, the slope a learned: `weight` holds one slope for all elements
    or one per channel (dim 1; a 1-D input is one channel). The input's gradient is 1, else
    a (a at 0); the slopes' gradient sums x g over the elements where x <= 0, per channel."""
    x, xp = _float_input("prelu", input)
    if not isinstance(weight, _tensor()):
        raise TypeError(f"prelu: weight must be a Tensor, got {type(weight).__name__}")
    w = weight._data
    if w.dtype != F32:
        raise TypeError(f"prelu: weight must be a float32 tensor, got {w.dtype}")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {w.ndim}")
    if _xp(w) is not xp:
        raise RuntimeError(f"prelu: weight must be on the input's device, got {weight.device}")
    if w.size == 1:
        slope, summed = w.reshape(()), None  # one slope: its gradient sums every element
    else:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = x.shape[1] if x.ndim > 1 else 1
        if channels != w.size:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {w.size} and channel size = {channels}.")
        slope = w.reshape((1, channels) + (1,) * (x.ndim - 2))
        summed = (0,) + tuple(range(2, x.ndim))  # every dim but the channels'
    positive = x > 0
    with np.errstate(**_IEEE):
        y = _float32(xp.where(positive, x, slope * x), xp)

    def backward(g):
        with np.errstate(**_IEEE):
            d_input = d_weight = None
            if input._requires_grad:
                d_input = _float32(g * xp.where(positive, np.float32(1), slope), xp)
            if weight._requires_grad:
                d_weight = _float32(
                    (g * xp.where(positive, np.float32(0), x)).sum(axis=summed, dtype=F32)
                    .reshape(w.shape), xp)
        return d_input, d_weight

    return _make(y, (input, weight), backward)


RRELU_LOWER = 1 / 8
RRELU_UPPER = 1 / 3


def rrelu(input, lower=RRELU_LOWER, upper=RRELU_UPPER, training=False, inplace=False):
    """Randomized leaky relu: while training, x where x > 0, else a x with a slope a drawn
    uniformly from [lower, upper] for each element, from pyrt's seeded generator
    (pyrt.manual_seed), the gradient going through the same slopes; otherwise leaky_relu with
    the mean slope (lower + upper) / 2."""
    lo = _real_number(lower, "rrelu: lower")
    hi = _real_number(upper, "rrelu: upper")
    if lo > hi:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if inplace:
        return _inplace(input, lambda t: rrelu(t, lower, upper, training))
    if not training:
        return leaky_relu(input, (lo + hi) / 2)
    x, xp = _float_input("rrelu", input)
    from pyrt.tensor import _move, generator

    # a draw for every element, so that the stream does not depend on the input's signs
    draw = generator().random(x.shape, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)
    if xp is not np:
        draw = _move(draw, input.device)
    # PyTorch draws for x <= 0: nan keeps slope 1
    slope = xp.where(x <= 0, draw, np.float32(1))
    with np.errstate(**_IEEE):
        y = x * slope
    return _elementwise(y, input, lambda: slope)


# ---- along a dim ---------------------------------------------------------------------------


def glu(input, dim=-1):
    """The gated linear unit: input split in halves a, b along `dim` (of even size), then
    a sigmoid(b). The gradient is g sigmoid(b) for a and g a s (1 - s) for b, s = sigmoid(b)."""
    x, xp = _float_input("glu", input)
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim_index(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{x.shape[d]}")
    a, b = (_float32(half, xp) for half in xp.split(x, 2, axis=d))
    s = ops.sigmoid(b)
    with np.errstate(**_IEEE):
        y = a * s

    def backward(g):
        with np.errstate(**_IEEE):
            gs = g * s
            return (_float32(xp.concatenate([gs, gs * a * (1 - s)], axis=d), xp),)

    return _make(_float32(y, xp), (input,), backward)


def implicit_softmax_dim(op, ndim, stacklevel):
    """The dim of softmax-like ops called without one: PyTorch's legacy choice (0 for 0-, 1-
    and 3-D input, else 1), with its deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`: weights that favour the smallest elements. dim=None picks
    PyTorch's legacy dim, with its warning; dtype may only be None or float32."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"softmin: input must be a Tensor, got {type(input).__name__}")
    if dtype is not None and np.dtype(dtype) != F32:
        raise TypeError(f"softmin: pyrt computes softmin in float32, got dtype={dtype}")
    if dim is None:
        dim = implicit_softmax_dim("softmin", input.ndim, _stacklevel)
    return softmax(neg(input), dim)


# ---- the in-place forms, elu_ and the like: as Tensor.relu_ (recorded in a graph) ------------


def _write(input, compute):
    """compute(input) written into input (Tensor._write_result: recorded in a graph)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"input must be a Tensor, got {type(input).__name__}")
    return input._write_result(compute)


def elu_(input, alpha=1.0):
    return _write(input, lambda t: elu(t, alpha))


def leaky_relu_(input, negative_slope=0.01):
    return _write(input, lambda t: leaky_relu(t, negative_slope))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _write(input, lambda t: hardtanh(t, min_val, max_val))


def selu_(input):
    return _write(input, lambda t: selu(t))


def celu_(input, alpha=1.0):
    return _write(input, lambda t: celu(t, alpha))


def rrelu_(input, lower=RRELU_LOWER, upper=RRELU_UPPER, training=False):
    return _write(input, lambda t: rrelu(t, lower, upper, training))


def threshold_(input, threshold, value):
    th = np.float32(_real_number(threshold, "threshold: threshold"))
    v = np.float32(_real_number(value, "threshold: value"))
    return _write(input, lambda t: _threshold(t, th, v))
