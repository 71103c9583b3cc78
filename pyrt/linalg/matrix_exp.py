"""The matrix exponential, as torch.linalg.matrix_exp: exp(A) = sum_k A^k / k!, by SciPy's
scaling and squaring with Pade approximants on float64 copies, with its gradient."""

import numpy as np

from pyrt.functional import _make, _xp
from pyrt.linalg._common import device_of, host, matrices, mT, narrow, wide

__all__ = ["matrix_exp"]


def _expm(a64):
    """exp of each float64 square matrix of `a64` (on the host), back on a64's device."""
    from scipy.linalg import expm

    a = host(a64)
    return device_of(a64, expm(a) if a.size else np.zeros(a.shape))


def matrix_exp(A):
    """exp(A) of square matrices. The gradient is the adjoint of the Frechet derivative,
    read off one exponential of a block matrix (Najfeld and Havel 1995):
    exp([[A^T, G], [0, A^T]]) = [[exp(A^T), dA], [0, exp(A^T)]]."""
    a = matrices(A, "linalg.matrix_exp", square=True)
    xp = _xp(a)
    a64 = wide(a)
    n = a.shape[-1]

    def backward(g):
        at = mT(a64)
        g = xp.broadcast_to(wide(g), at.shape)
        block = xp.concatenate((xp.concatenate((at, g), axis=-1),
                                xp.concatenate((xp.zeros(at.shape), at), axis=-1)), axis=-2)
        return (narrow(_expm(block)[..., :n, n:], a.dtype),)

    return _make(narrow(_expm(a64), a.dtype), (A,), backward)
