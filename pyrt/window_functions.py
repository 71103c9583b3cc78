"""The window functions of signal processing, as PyTorch makes them: hann_window,
hamming_window, blackman_window, bartlett_window and kaiser_window.

Each is a function w(n) of the sample n = 0 .. N - 1 with N = window_length, symmetric about
the middle. A periodic window (the default, as torch's, for use with an FFT) is the symmetric
window of N + 1 samples without its last one. The values are computed in float64 and returned
in the dtype asked for (float32 by default), on the device asked for.
"""

import numbers

import numpy as np

from pyrt.functional import _integer, _tensor

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "kaiser_window"]


def _window(name, window_length, periodic, values, dtype, device, requires_grad):
    """The window of `window_length` samples: values(n, M) computes the symmetric window of
    M samples at the float64 samples n (M >= 2)."""
    from pyrt.tensor import _check_can_require_grad, _check_device, _checked_dtype, _move

    if not _integer(window_length):
        raise TypeError(f"{name}(): argument 'window_length' must be an int, got "
                        f"{type(window_length).__name__}")
    if not isinstance(periodic, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'periodic' must be a bool, got "
                        f"{type(periodic).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dtype = np.dtype(np.float32) if dtype is None else _checked_dtype(dtype)
    if dtype != np.float32:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype} (pyrt's "
                           f"floating point dtype is float32)")
    n = int(window_length)
    if n <= 1:
        out = np.ones(n, np.float64)
    else:
        m = n + 1 if periodic else n
        out = values(np.arange(n, dtype=np.float64), m)
    if requires_grad:
        _check_can_require_grad(dtype)
    return _tensor()(_move(out.astype(dtype), _check_device(device)), requires_grad)


def _cosine_sum(coefficients):
    """The window sum_k (-1)^k a_k cos(2 pi k n / (M - 1)) of the coefficients a_k."""
    def values(n, m):
        phase = 2 * np.pi * n / (m - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return values


def hann_window(window_length, periodic=True, *, dtype=None, device="cpu",
                requires_grad=False):
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (M - 1))."""
    return _window("hann_window", window_length, periodic, _cosine_sum((0.5, 0.5)), dtype,
                   device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   device="cpu", requires_grad=False):
    """The generalised Hamming window: alpha - beta cos(2 pi n / (M - 1))."""
    for value, name in ((alpha, "alpha"), (beta, "beta")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"hamming_window(): argument '{name}' must be a float, got "
                            f"{type(value).__name__}")
    return _window("hamming_window", window_length, periodic,
                   _cosine_sum((float(alpha), float(beta))), dtype, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, device="cpu",
                    requires_grad=False):
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    return _window("blackman_window", window_length, periodic,
                   _cosine_sum((0.42, 0.5, 0.08)), dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, device="cpu",
                    requires_grad=False):
    """The Bartlett (triangular) window: 1 - |2n / (M - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic,
                   lambda n, m: 1 - np.abs(2 * n / (m - 1) - 1), dtype, device,
                   requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device="cpu",
                  requires_grad=False):
    """The Kaiser window: I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta), I0 the modified
    Bessel function of the first kind of order 0."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise TypeError(f"kaiser_window(): argument 'beta' must be a float, got "
                        f"{type(beta).__name__}")
    beta = float(beta)

    def values(n, m):
        ratio = 2 * n / (m - 1) - 1
        return np.i0(beta * np.sqrt(np.clip(1 - ratio * ratio, 0, None))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, values, dtype, device,
                   requires_grad)
