"""torch.special for pyrt's real (float32) tensors: ``pyrt.special.gammaln(x)``,
``pyrt.special.i1e(x)``, ``pyrt.special.zeta(x, q)``, ... The special functions themselves
are pyrt.special_functions' and pyrt.orthogonal_polynomials'; the names torch.special shares
with the rest of torch (erf, expm1, logit, softmax, xlogy, ...) are pyrt's existing ops.

Differences from torch.special: there is no float64, so ``softmax`` and ``log_softmax`` take
``dtype`` None or pyrt.float32 only, and every result is float32."""

import numbers

import numpy as np

from pyrt.binary_pointwise import xlogy
from pyrt.functional import sigmoid as _sigmoid
from pyrt.orthogonal_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from pyrt.special_functions import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    entr,
    erfcx,
    erfinv,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    polygamma,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)
from pyrt.special_functions import igamma as gammainc
from pyrt.special_functions import igammac as gammaincc
from pyrt.special_functions import lgamma as gammaln
from pyrt.special_functions import mvlgamma as multigammaln
from pyrt.tensor import Tensor

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

psi = digamma


def _tensor_input(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input


def erf(input):
    """The error function: ``input.erf()``."""
    return _tensor_input(input, "erf").erf()


def erfc(input):
    """1 - erf(input): ``input.erfc()``."""
    return _tensor_input(input, "erfc").erfc()


def exp2(input):
    """2 ** input: ``input.exp2()``."""
    return _tensor_input(input, "exp2").exp2()


def expm1(input):
    """exp(input) - 1, accurate near 0: ``input.expm1()``."""
    return _tensor_input(input, "expm1").expm1()


def log1p(input):
    """log(1 + input), accurate near 0: ``input.log1p()``."""
    return _tensor_input(input, "log1p").log1p()


def expit(input):
    """The logistic sigmoid 1 / (1 + exp(-input)) (integers and bools as float32)."""
    input = _tensor_input(input, "expit")
    return _sigmoid(input if input._data.dtype.kind == "f" else input.float())


def logit(input, eps=None):
    """log(p / (1 - p)), p = input clamped to [eps, 1 - eps] where eps is given."""
    return _tensor_input(input, "logit").logit(eps)


def round(input, *, decimals=0):
    """input rounded half to even, to `decimals` decimal places: ``input.round(decimals)``."""
    return _tensor_input(input, "round").round(decimals)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0: ``input.sinc()``."""
    return _tensor_input(input, "sinc").sinc()


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably: ``input.logsumexp(dim, keepdim)``."""
    return _tensor_input(input, "logsumexp").logsumexp(dim, keepdim)


def _as_dtype(input, dtype, name):
    """input converted to `dtype` (None: as it is), which pyrt allows to be float32 only."""
    if dtype is None:
        return input
    if isinstance(dtype, np.dtype) and dtype == np.float32:
        return input.float()
    raise TypeError(f"{name}(): dtype must be None or pyrt.float32 (pyrt has no float64 or "
                    f"half dtype), got {dtype!r}")


def softmax(input, dim, *, dtype=None):
    """exp(input) normalized to sum to 1 along `dim`; `dtype` (float32): convert first."""
    input = _tensor_input(input, "softmax")
    return _as_dtype(input, dtype, "softmax").softmax(_dim(dim, "softmax"))


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input, dim)), computed stably; `dtype` as softmax's."""
    input = _tensor_input(input, "log_softmax")
    return _as_dtype(input, dtype, "log_softmax").log_softmax(_dim(dim, "log_softmax"))


def _dim(dim, name):
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return int(dim)
