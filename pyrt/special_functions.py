"""Special functions, pointwise, with their gradients beside them: the gamma family (lgamma,
digamma, polygamma, mvlgamma), the error-function family (erfinv, erfcx, ndtr, ndtri,
log_ndtr), modified Bessel functions (i0, i0e, i1, i1e), entr, the incomplete gamma functions
(igamma, igammac), the Hurwitz zeta function and xlog1py; and, without a gradient as in
PyTorch, the Airy function Ai, the Bessel functions J0, J1, Y0, Y1, the modified Bessel
functions I0, I1, K0, K1 (and K0, K1 scaled by exp(x)) and the spherical Bessel function j0.

The values are scipy.special's (cupyx.scipy.special's for CuPy arrays; where it lacks a
function, scipy's on a copy in host memory), imported on first use, computed in float64 and
rounded to float32. Integer and bool inputs give float32, as PyTorch's floating-point
functions promote them."""

import numbers

import numpy as np

from pyrt.binary_pointwise import _operands
from pyrt.functional import _contiguous, _make, _tensor, _unbroadcast, _xp
from pyrt.ops._checks import F32
from pyrt.pointwise import _binary_setup, _input_array

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr", "erfcx",
    "erfinv", "i0", "i0e", "i1", "i1e", "igamma", "igammac", "lgamma", "log_ndtr",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "mvlgamma", "ndtr", "ndtri", "polygamma", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "spherical_bessel_j0", "xlog1py", "zeta",
]

F64 = np.dtype(np.float64)
_SQRT_PI = np.sqrt(np.pi)
_SQRT_2PI = np.sqrt(2 * np.pi)


def special(name, *args):
    """scipy.special's function `name` of `args` (arrays of one device, and numbers), on
    that device: cupyx.scipy.special's for CuPy arrays, or scipy's on host copies where CuPy
    has no such function."""
    arrays = [a for a in args if not isinstance(a, numbers.Number)]
    xp = _xp(arrays[0]) if arrays else np
    if xp is np:
        import scipy.special

        return getattr(scipy.special, name)(*args)
    import cupyx.scipy.special

    if hasattr(cupyx.scipy.special, name):  # (its kernels take arrays only)
        return getattr(cupyx.scipy.special, name)(*[xp.asarray(a) for a in args])
    import scipy.special

    host = [a if isinstance(a, numbers.Number) else a.get() for a in args]
    return xp.asarray(getattr(scipy.special, name)(*host))


def not_implemented(what):
    """A derivative that PyTorch does not define: calling it raises PyTorch's error."""
    def derivative(*args):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")

    return derivative


def _float64(xd):
    # integers and bools as PyTorch promotes them (to float32), then widened for the work
    return xd.astype(F32, copy=False).astype(F64)


def unary(name, x, value, derivative=None):
    """y = value(xp, v) with v the float64 values of tensor x, rounded to float32; its
    gradient g * derivative(xp, v, y) (y in float64). No derivative: the result does not
    require grad, as PyTorch's functions without a derivative formula give."""
    xd = _input_array(x, name)
    xp = _xp(xd)
    v = _float64(xd)
    with np.errstate(all="ignore"):  # inf and nan at poles and outside domains, silently
        y = xp.asarray(value(xp, v), dtype=F64)
        out = _contiguous(y.astype(F32))  # overflowing to +-inf
    if derivative is None:
        return _tensor()(out)

    def backward(g):
        with np.errstate(all="ignore"):
            return (xp.asarray(g * derivative(xp, v, y), dtype=F32),)

    return _make(out, (x,), backward)


def binary(name, a, b, value, derivatives=None, numbers_allowed=False, integers_allowed=True):
    """out = value(xp, a, b) over the float64 values of a and b, broadcast, rounded to
    float32; derivatives: a pair of functions (xp, a, b, y, g) -> gradient, each called only
    for an operand that requires grad (not_implemented(...) where PyTorch has none). Without
    derivatives the result does not require grad."""
    if not any(isinstance(x, _tensor()) for x in (a, b)):
        raise TypeError(f"{name}(): expected a Tensor as 'input' or 'other', got "
                        f"{type(a).__name__} and {type(b).__name__}")
    a, b = _operands(name, a, b, numbers_allowed, integers_allowed)
    xp, ad, bd = _binary_setup(name, a, b, F32)
    a64, b64 = xp.asarray(ad, dtype=F64), xp.asarray(bd, dtype=F64)
    with np.errstate(all="ignore"):
        y = xp.asarray(value(xp, a64, b64), dtype=F64)
        shape = np.broadcast_shapes(np.shape(ad), np.shape(bd))
        out = _contiguous(xp.broadcast_to(y, shape).astype(F32))
    if derivatives is None:
        return _tensor()(out)
    parents = tuple(x for x in (a, b) if isinstance(x, _tensor()))

    def backward(g):
        grads = []
        for x, derivative in zip((a, b), derivatives):
            if not isinstance(x, _tensor()):
                continue
            if not x._requires_grad:
                grads.append(None)
                continue
            with np.errstate(all="ignore"):
                d = xp.broadcast_to(derivative(xp, a64, b64, y, g), shape)
            grads.append(_unbroadcast(_contiguous(d.astype(F32)), x.shape))
        return tuple(grads)

    return _make(out, parents, backward)


def _order(n, name, argument="n"):
    """The integer argument `argument` of `name` (polygamma's n, mvlgamma's p) as an int."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name}(): argument '{argument}' must be int, not {type(n).__name__}")
    return int(n)


# ---- the gamma family ------------------------------------------------------------------------


def _lgamma_values(xp, v):
    # scipy's gammaln(-inf) is -inf; log|Gamma(x)| there is inf, as PyTorch (and C) give
    return xp.where(v == -np.inf, np.inf, special("gammaln", v))


def lgamma(input):
    """log|Gamma(input)|: inf at 0 and the negative integers; d/dx = digamma(x)."""
    return unary("lgamma", input, _lgamma_values, lambda xp, v, y: special("psi", v))


def digamma(input):
    """The logarithmic derivative of Gamma, Gamma'(x) / Gamma(x): -inf at 0 (inf at -0), nan
    at the negative integers, as PyTorch; d/dx = polygamma(1, x)."""
    return unary("digamma", input, lambda xp, v: special("psi", v),
                 lambda xp, v, y: special("polygamma", 1, v))


def polygamma(n, input):
    """The n-th derivative of digamma (n = 0: digamma itself); d/dx = polygamma(n + 1, x).
    torch.polygamma's argument order: n first."""
    n = _order(n, "polygamma")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(input)
    return unary("polygamma", input, lambda xp, v: special("polygamma", n, v),
                 lambda xp, v, y: special("polygamma", n + 1, v))


def mvlgamma(input, p):
    """The log of the multivariate gamma function of dimension p >= 1:
    p (p - 1) / 4 log(pi) + sum over j < p of lgamma(x - j / 2); d/dx = the sum of
    digamma(x - j / 2). Like PyTorch (and unlike scipy's multigammaln) it does not refuse x
    <= (p - 1) / 2: it gives what the sum gives there (inf at the poles)."""
    p = _order(p, "mvlgamma", "p")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    halves = np.arange(p) / 2  # the sum written out, as scipy refuses the domain PyTorch keeps

    def value(xp, v):
        c = p * (p - 1) / 4 * np.log(np.pi)
        return sum(_lgamma_values(xp, v - h) for h in halves) + c

    def derivative(xp, v, y):
        return sum(special("psi", v - h) for h in halves)

    return unary("mvlgamma", input, value, derivative)


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other) (scipy's gammainc);
    the gradient for other is exp(-other) other^(input - 1) / Gamma(input). PyTorch has no
    derivative for input: backward through it raises NotImplementedError."""
    return binary("igamma", input, other, lambda xp, a, x: special("gammainc", a, x),
                  (not_implemented("igamma: input"), _igamma_other), integers_allowed=False)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P (scipy's
    gammaincc); gradients as igamma's, negated."""
    return binary("igammac", input, other, lambda xp, a, x: special("gammaincc", a, x),
                  (not_implemented("igammac: input"),
                   lambda xp, a, x, y, g: -_igamma_other(xp, a, x, y, g)),
                  integers_allowed=False)


def _igamma_other(xp, a, x, y, g):
    # d/dx P(a, x) = x^(a-1) e^(-x) / Gamma(a), in logs as PyTorch writes it
    return g * xp.exp((a - 1) * xp.log(x) - x - special("gammaln", a))


def zeta(input, other):
    """The Hurwitz zeta function, sum over k >= 0 of (k + other)^-input; either may be a
    number. The gradient for other is -input zeta(input + 1, other); none for input (as
    PyTorch)."""
    return binary("zeta", input, other, lambda xp, s, q: special("zeta", s, q),
                  (not_implemented("zeta"),
                   lambda xp, s, q, y, g: -g * s * special("zeta", s + 1, q)),
                  numbers_allowed=True)


def _xlog1py_input(xp, x, y, out, g):
    # as PyTorch: xlog1py(g, y), 0 where x == 0 and y <= -1 (where log1p(y) is not finite)
    return xp.where((x == 0) & (y <= -1), 0.0, special("xlog1py", g, y))


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is nan); either may be a number.
    Gradients xlog1py(g, other) and g input / (1 + other)."""
    return binary("xlog1py", input, other, lambda xp, x, y: special("xlog1py", x, y),
                  (_xlog1py_input, lambda xp, x, y, out, g: g * x / (1 + y)),
                  numbers_allowed=True)


# ---- the error function family ---------------------------------------------------------------


def erfinv(input):
    """The inverse of erf on (-1, 1): +-inf at +-1, nan beyond; d/dx = sqrt(pi) / 2
    exp(erfinv(x)^2)."""
    return unary("erfinv", input, lambda xp, v: special("erfinv", v),
                 lambda xp, v, y: _SQRT_PI / 2 * xp.exp(y * y))


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x); d/dx = 2 x erfcx(x) -
    2 / sqrt(pi)."""
    return unary("erfcx", input, lambda xp, v: special("erfcx", v),
                 lambda xp, v, y: 2 * v * y - 2 / _SQRT_PI)


def ndtr(input):
    """The standard normal distribution function; d/dx = exp(-x^2 / 2) / sqrt(2 pi)."""
    return unary("ndtr", input, lambda xp, v: special("ndtr", v),
                 lambda xp, v, y: xp.exp(-v * v / 2) / _SQRT_2PI)


def ndtri(input):
    """The inverse of ndtr on (0, 1), +-inf at 1 and 0; d/dx = sqrt(2 pi) exp(ndtri(x)^2 / 2)."""
    return unary("ndtri", input, lambda xp, v: special("ndtri", v),
                 lambda xp, v, y: _SQRT_2PI * xp.exp(y * y / 2))


def log_ndtr(input):
    """log(ndtr(x)), accurate far into the left tail; d/dx = exp(-x^2 / 2 - log_ndtr(x)) /
    sqrt(2 pi)."""
    return unary("log_ndtr", input, lambda xp, v: special("log_ndtr", v),
                 lambda xp, v, y: xp.exp(-(y + v * v / 2)) / _SQRT_2PI)


def entr(input):
    """The elementwise entropy -x log(x): 0 at 0, -inf below; d/dx = -(1 + log(x)) (inf at 0,
    nan below, as PyTorch's formula gives)."""
    return unary("entr", input, lambda xp, v: special("entr", v),
                 lambda xp, v, y: -(1 + xp.log(v)))


# ---- modified Bessel functions with a gradient -----------------------------------------------


def i0(input):
    """The modified Bessel function of the first kind of order 0; d/dx = i1(x)."""
    return unary("i0", input, lambda xp, v: special("i0", v), lambda xp, v, y: special("i1", v))


def i0e(input):
    """i0(x) exp(-|x|); d/dx = i1e(x) - sgn(x) i0e(x)."""
    return unary("i0e", input, lambda xp, v: special("i0e", v),
                 lambda xp, v, y: special("i1e", v) - xp.sign(v) * y)


def i1(input):
    """The modified Bessel function of the first kind of order 1; d/dx = i0(x) - i1(x) / x
    (1/2 at 0)."""
    return unary("i1", input, lambda xp, v: special("i1", v),
                 lambda xp, v, y: xp.where(v == 0, 0.5, special("i0", v) - y / v))


def i1e(input):
    """i1(x) exp(-|x|); d/dx = i0e(x) - i1e(x) (sgn(x) + 1 / x) (1/2 at 0)."""
    return unary("i1e", input, lambda xp, v: special("i1e", v),
                 lambda xp, v, y: xp.where(v == 0, 0.5,
                                           special("i0e", v) - y * (xp.sign(v) + 1 / v)))


# ---- without a gradient, as in PyTorch --------------------------------------------------------


def _no_gradient(name, scipy_name, what):
    """The function `name`: scipy.special's `scipy_name`, `what` in words."""
    def function(input):
        return unary(name, input, lambda xp, v: special(scipy_name, v))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{what}. No gradient (the result never requires grad), as in PyTorch."
    return function


def airy_ai(input):
    """The Airy function Ai(x). No gradient (the result never requires grad), as in PyTorch."""
    # scipy gives nan far to the right, where Ai (below exp(-1800) past 200) is 0
    return unary("airy_ai", input,
                 lambda xp, v: xp.where(v > 200, 0.0, special("airy", v)[0]))


def spherical_bessel_j0(input):
    """The spherical Bessel function of the first kind of order 0, sin(x) / x. No gradient,
    as in PyTorch."""
    return unary("spherical_bessel_j0", input, lambda xp, v: special("spherical_jn", 0, v))


_FIRST, _SECOND = "Bessel function of the first kind", "Bessel function of the second kind"
bessel_j0 = _no_gradient("bessel_j0", "j0", f"The {_FIRST} of order 0")
bessel_j1 = _no_gradient("bessel_j1", "j1", f"The {_FIRST} of order 1")
bessel_y0 = _no_gradient("bessel_y0", "y0", f"The {_SECOND} of order 0")
bessel_y1 = _no_gradient("bessel_y1", "y1", f"The {_SECOND} of order 1")
modified_bessel_i0 = _no_gradient("modified_bessel_i0", "i0", f"The modified {_FIRST} of order 0")
modified_bessel_i1 = _no_gradient("modified_bessel_i1", "i1", f"The modified {_FIRST} of order 1")
modified_bessel_k0 = _no_gradient("modified_bessel_k0", "k0",
                                  f"The modified {_SECOND} of order 0")
modified_bessel_k1 = _no_gradient("modified_bessel_k1", "k1",
                                  f"The modified {_SECOND} of order 1")
scaled_modified_bessel_k0 = _no_gradient("scaled_modified_bessel_k0", "k0e",
                                         "exp(x) modified_bessel_k0(x)")
scaled_modified_bessel_k1 = _no_gradient("scaled_modified_bessel_k1", "k1e",
                                         "exp(x) modified_bessel_k1(x)")
