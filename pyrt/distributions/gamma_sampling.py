"""Reparameterized draws from the standard gamma and the Dirichlet distributions.

A gamma draw x ~ Gamma(alpha, 1) has no differentiable transform from fixed noise, so the
gradient comes from implicit reparameterization (as PyTorch's): holding u = F(x; alpha) fixed
(F the gamma CDF, the regularized incomplete gamma function P(alpha, x)) gives

    dx/dalpha = -(dF/dalpha) / (dF/dx),   dF/dx = x^(alpha-1) e^(-x) / Gamma(alpha).

scipy has no dF/dalpha, so it is a central difference in float64 with a step relative to
alpha. To keep it accurate in both tails the difference is taken of log P where P < 1/2 and
of log Q = log(1 - P) elsewhere (scipy computes either to full relative precision even when
tiny): dF/dalpha = P d(log P)/dalpha = -Q d(log Q)/dalpha, and the ratio to the density is
formed in logs, so nothing underflows before it divides.

A Dirichlet draw is a vector of gamma draws divided by their sum; its gradient is PyTorch's:
each x_i, a Beta(alpha_i, total - alpha_i) draw, gets dx_i/dalpha_i by the same implicit rule
on the beta CDF (scipy's betainc, differenced in alpha with beta held fixed); with
c_i = (dx_i/dalpha_i) / (1 - x_i) the gradient of a loss L for alpha_i is
c_i (dL/dx_i - sum_j x_j dL/dx_j), the other components moving with x_i through the sum.
"""

import numpy as np

from pyrt.functional import _make

__all__ = ["sample_dirichlet", "standard_gamma"]

F32 = np.float32
_TINY = float(np.finfo(F32).tiny)
_REL_STEP = 1e-5  # the difference step in alpha, relative to alpha


def _host(array):
    from pyrt.tensor import _move

    return np.asarray(_move(array, "cpu"), np.float64)


def _on(array, like):
    from pyrt.tensor import _move

    return _move(np.ascontiguousarray(array, F32), like.device)


def _implicit_grad(cdf, sf, log_pdf, x, alpha):
    """-(dF/dalpha) / pdf at x, for F = cdf(alpha, x) with survival function sf(alpha, x),
    all in float64 (see the module docstring)."""
    h = _REL_STEP * alpha
    lower = cdf(alpha, x) < 0.5
    tail = np.where(lower, 1.0, -1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(lower, cdf(alpha + h, x), sf(alpha + h, x))
        lo = np.where(lower, cdf(alpha - h, x), sf(alpha - h, x))
        mid = np.where(lower, cdf(alpha, x), sf(alpha, x))
        dlog = (np.log(hi) - np.log(lo)) / (2 * h)
        # dF/dalpha = tail * mid * dlog; the result is -(dF/dalpha) / pdf
        grad = -tail * np.sign(dlog) * np.exp(np.log(mid) + np.log(np.abs(dlog)) - log_pdf)
    return np.where(np.isfinite(grad), grad, 0.0)


def standard_gamma_grad(x, alpha):
    """dx/dalpha for standard gamma draws x (float64 arrays; see the module docstring)."""
    from scipy import special  # (imported on first use: `import pyrt` stays without SciPy)

    log_pdf = (alpha - 1) * np.log(x) - x - special.gammaln(alpha)
    return _implicit_grad(special.gammainc, special.gammaincc, log_pdf, x, alpha)


def beta_grad(x, alpha, beta):
    """dx/dalpha for Beta(alpha, beta) draws x with beta held fixed (float64 arrays)."""
    from scipy import special  # (imported on first use)

    def cdf(a, v):
        return special.betainc(a, beta, v)

    def sf(a, v):
        return special.betainc(beta, a, 1 - v)

    log_pdf = ((alpha - 1) * np.log(x) + (beta - 1) * np.log1p(-x)
               - special.betaln(alpha, beta))
    return _implicit_grad(cdf, sf, log_pdf, x, alpha)


def standard_gamma(concentration):
    """One draw from Gamma(concentration, 1) per element of `concentration` (expanded to the
    sample's shape) by pyrt's generator, clamped below at the smallest normal float32 as
    PyTorch's; differentiable in concentration by implicit reparameterization."""
    from pyrt.tensor import generator

    alpha = _host(concentration._data)
    x = np.maximum(generator().standard_gamma(alpha), _TINY).astype(F32)

    def backward(g):
        grad = standard_gamma_grad(x.astype(np.float64), alpha)
        return (_on(_host(g) * grad, concentration),)

    return _make(_on(x, concentration), (concentration,), backward)


def sample_dirichlet(concentration):
    """One draw from Dirichlet(concentration) per vector along the last dim of
    `concentration` (expanded to the sample's shape) by pyrt's generator, with PyTorch's
    gradient."""
    from pyrt.tensor import generator

    alpha = _host(concentration._data)
    gammas = np.maximum(generator().standard_gamma(alpha), _TINY)
    x = gammas / gammas.sum(-1, keepdims=True)
    x = np.maximum(x, _TINY).astype(F32)

    def backward(g):
        x64 = x.astype(np.float64)
        total = alpha.sum(-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = beta_grad(x64, alpha, total - alpha) / (1 - x64)
        grad = np.where(np.isfinite(grad), grad, 0.0)
        g = _host(g)
        return (_on(grad * (g - (x64 * g).sum(-1, keepdims=True)), concentration),)

    return _make(_on(x, concentration), (concentration,), backward)
