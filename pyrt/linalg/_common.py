"""Shared pieces of pyrt.linalg: argument checks with PyTorch's messages, float64 working
copies, transposes and broadcasting of batched matrices, and the scans that name the pivot
where a singular or indefinite matrix fails, as LAPACK's `info` does."""

import numpy as np

from pyrt.functional import _contiguous, _tensor, _xp
from pyrt.products import _DTYPE_NAMES


class LinAlgError(RuntimeError):
    """A matrix an operation cannot handle (singular, not positive-definite), as
    torch.linalg.LinAlgError: a RuntimeError."""


def type_name(dtype):
    """PyTorch's name of a dtype in messages (Float, Long, Bool)."""
    return _DTYPE_NAMES.get(np.dtype(dtype), str(dtype))


def tensor_array(x, name, arg="A"):
    """The array of tensor `x`, argument `arg` of function `name`."""
    if not isinstance(x, _tensor()):
        raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got {type(x).__name__}")
    return x._data


def floating(a, name):
    """RuntimeError unless `a` holds floating-point numbers."""
    if a.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{type_name(a.dtype)}")


def matrices(x, name, square=False, arg="A", integers=False):
    """The array of `x`, a batch of matrices (at least 2 dims) of floating-point numbers (any
    real dtype if `integers`), square ones if `square`, with PyTorch's errors."""
    a = tensor_array(x, name, arg)
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not integers or a.dtype.kind == "b":
        floating(a, name)
    return a


def wide(a):
    """`a` in float64: LAPACK's float32 routines lose half the digits of an ill-conditioned
    matrix, so every factorization works on a float64 copy and rounds its results once."""
    return a.astype(np.float64, copy=False)


def narrow(a, dtype):
    """A float64 working result as a contiguous array of the input's dtype."""
    return _contiguous(a.astype(dtype, copy=False))


def mT(a):
    """The transposes of a batch of matrices."""
    return a.swapaxes(-1, -2)


def sym_lower(a):
    """The symmetric matrices whose lower triangles are those of `a` (LAPACK reads only one
    triangle of a symmetric input: the other may hold anything)."""
    xp = _xp(a)
    low = xp.tril(a)
    return low + mT(xp.tril(a, -1))


def unbroadcast(g, shape):
    """Sum a gradient of a broadcast result back to an operand's `shape`."""
    if g.shape == tuple(shape):
        return g
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and g.shape[i + extra] != 1)
    return g.sum(axis=axes).reshape(shape)


def host(a):
    """`a` as a NumPy array (a copy from the GPU for CuPy's)."""
    return a if isinstance(a, np.ndarray) else a.get()


def zero_pivots(a):
    """For each square matrix of `a` (float64, any batch shape): LAPACK getrf's `info`, the
    1-based index of the first pivot of its LU factorization with partial pivoting that is
    exactly zero, or 0 where there is none. Gaussian elimination, one column at a time over
    the whole batch: swap the largest remaining entry of the column up, then eliminate below
    it (a zero pivot column is zero below too, so it eliminates nothing)."""
    a = host(a)
    n = a.shape[-1]
    lu = a.reshape(-1, n, n).copy()
    rows = np.arange(lu.shape[0])
    info = np.zeros(lu.shape[0], np.int64)
    for k in range(n):
        p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
        lu[rows, k], lu[rows, p] = lu[rows, p], lu[rows, k].copy()
        pivot = lu[:, k, k]
        info[(info == 0) & (pivot == 0)] = k + 1
        factors = lu[:, k + 1:, k] / np.where(pivot == 0, 1.0, pivot)[:, None]
        lu[:, k + 1:, k + 1:] -= factors[:, :, None] * lu[:, k, None, k + 1:]
    return info.reshape(a.shape[:-2])


def indefinite_minors(a):
    """For each symmetric matrix of `a` (float64, any batch shape): LAPACK potrf's `info`, the
    order of the first leading minor that is not positive-definite, or 0. The Cholesky
    recurrence column by column: the k-th pivot a_kk - sum_j<k l_kj^2 must be positive."""
    batch, n = a.shape[:-2], a.shape[-1]
    a = host(a).reshape(-1, n, n)
    low = np.zeros_like(a)
    info = np.zeros(a.shape[0], np.int64)
    for k in range(n):
        pivot = a[:, k, k] - np.einsum("bj,bj->b", low[:, k, :k], low[:, k, :k])
        bad = ~(pivot > 0)  # NaN fails too
        info[(info == 0) & bad] = k + 1
        low[:, k, k] = np.sqrt(np.where(bad, 1.0, pivot))
        low[:, k + 1:, k] = (a[:, k + 1:, k] - np.einsum("bij,bj->bi", low[:, k + 1:, :k],
                                                         low[:, k, :k])) / low[:, k, k, None]
    return info.reshape(batch)


def raise_info(info, name, message):
    """LinAlgError for the first matrix whose `info` is not 0, `message(info)` saying what
    failed; prefixed with its index in the batch for a batch, as PyTorch's."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        where = f"(Batch element {bad[0]}): " if np.ndim(info) else ""
        raise LinAlgError(f"{name}: {where}{message(int(flat[bad[0]]))}")


def finite(out):
    """Whether a factorization's results are all finite. NumPy raises on a singular or
    indefinite matrix; CuPy returns NaNs and infinities instead, caught here."""
    xp = _xp(out)
    return xp is np or bool(xp.isfinite(out).all())


def lapack(name, a):
    """SciPy's LAPACK routine `name` (getrf, potrf, sytrf, ...) for float64 arrays; SciPy is
    imported here, at the first call, so that importing pyrt does not import it."""
    from scipy.linalg import get_lapack_funcs

    return get_lapack_funcs((name,), (a,))[0]


def device_of(like, array):
    """`array` (a NumPy array computed on the host) on the device of array `like`."""
    return array if isinstance(like, np.ndarray) else _xp(like).asarray(array)


def triangular_solve(t, b, lower, unit=False):
    """X with T X = B for the triangular float64 matrices T (only the triangle `lower` or
    upper is read; its diagonal taken as ones if `unit`), batch dims broadcast. A zero on
    T's diagonal gives infinities and NaNs, as LAPACK's trtrs without its check: SciPy
    refuses such a T, so substitution row by row solves it then."""
    from scipy.linalg import solve_triangular

    xp = _xp(t)
    t, b = host(t), host(b)
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = np.broadcast_to(t, batch + t.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    try:
        if t.size == 0 or b.size == 0:
            x = np.zeros(b.shape)
        else:
            x = solve_triangular(t, b, lower=lower, unit_diagonal=unit, check_finite=False)
    except np.linalg.LinAlgError:
        n = t.shape[-1]
        x = np.zeros(b.shape)
        order = range(n) if lower else range(n - 1, -1, -1)
        with np.errstate(divide="ignore", invalid="ignore"):
            for i in order:
                rest = slice(0, i) if lower else slice(i + 1, n)
                row = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, rest],
                                               x[..., rest, :])
                x[..., i, :] = row if unit else row / t[..., i, i, None]
    return x if xp is np else xp.asarray(x)
