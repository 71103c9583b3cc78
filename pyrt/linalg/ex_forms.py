"""The `_ex` forms of torch.linalg's Cholesky factorization and linear solver: cholesky_ex
and solve_ex return LAPACK's `info` per matrix (0 where the matrix is fine) beside their
result instead of raising, unless check_errors. info is an int64 tensor: pyrt has no int32
dtype."""

from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp
from pyrt.linalg._common import (
    LinAlgError,
    device_of,
    host,
    lapack,
    matrices,
    mT,
    narrow,
    raise_info,
    tensor_array,
    wide,
    zero_pivots,
)
from pyrt.linalg.decompositions import cholesky
from pyrt.linalg.solvers import solve

__all__ = ["cholesky_ex", "solve_ex"]

cholesky_ex_result = namedtuple("cholesky_ex", ("L", "info"))
solve_ex_result = namedtuple("solve_ex", ("result", "info"))


def _info_tensor(like, info):
    return _tensor()(_contiguous(device_of(like, np.asarray(info, dtype=np.int64))))


def potrf(a64):
    """(factors, info) of LAPACK potrf for the lower triangles of the float64 matrices
    `a64`: the lower Cholesky factors and 0, or, where the leading minor of order k is not
    positive-definite, info k and the partial factorization LAPACK leaves (the columns
    before k factored, the failed pivot at [k-1, k-1], the rest A's)."""
    a = host(a64)
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    low = np.zeros_like(flat)
    info = np.zeros(len(flat), np.int64)
    if flat.size:
        routine = lapack("potrf", flat)
        for i, matrix in enumerate(flat):
            low[i], info[i] = routine(matrix, lower=1, clean=1)
    return low.reshape(a.shape), info.reshape(a.shape[:-2])


def _not_positive_definite(k):
    return (f"The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {k} is not positive-definite).")


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): linalg.cholesky's factor (with its gradient) and info 0 for each symmetric
    positive-definite matrix; for any other, info is the order of its first leading minor
    that is not positive-definite, and L LAPACK's partial factorization (with no gradient).
    check_errors raises for a nonzero info."""
    a = matrices(A, "linalg.cholesky", square=True)
    low, info = potrf(wide(mT(a) if upper else a))
    if check_errors:
        raise_info(info, "linalg.cholesky_ex", _not_positive_definite)
    if not info.any():
        return cholesky_ex_result(cholesky(A, upper=upper), _info_tensor(a, info))
    factors = narrow(device_of(a, mT(low) if upper else low), a.dtype)
    return cholesky_ex_result(_tensor()(factors), _info_tensor(a, info))


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info): linalg.solve's solution (with its gradients) and info, per matrix of
    A, the 1-based index of the first exactly zero pivot of its LU factorization (0 if
    none); the solutions of singular systems are NaN. check_errors raises for a singular A."""
    a = matrices(A, "linalg.solve", square=True)
    tensor_array(B, "linalg.solve", "B")
    try:
        return solve_ex_result(solve(A, B, left=left),
                               _info_tensor(a, np.zeros(a.shape[:-2], np.int64)))
    except LinAlgError:
        info = zero_pivots(wide(a))
    message = "The solver failed because the input matrix is singular."
    if check_errors or not info.any():  # LAPACK and the pivot scan round differently
        raise_info(info, "torch.linalg.solve_ex", lambda k: message)
        raise LinAlgError(f"torch.linalg.solve_ex: {message}")
    xp = _xp(a)
    bad = device_of(a, info != 0)[..., None, None]
    # the singular matrices replaced by identities, their solutions then by NaN
    safe = _make(xp.where(bad, xp.eye(a.shape[-1], dtype=a.dtype), a), (A,),
                 lambda g: (xp.where(bad, 0, g).astype(a.dtype),), reads=False)
    x = solve(safe, B, left=left)
    b = B._data
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    nan = xp.where(bad, np.nan, 0.0).astype(a.dtype)
    return solve_ex_result(x + _tensor()(nan[..., 0] if vector else nan), _info_tensor(a, info))
