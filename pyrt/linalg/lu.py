"""LU factorizations with partial pivoting, as torch.linalg's: lu_factor and lu_factor_ex
(LAPACK getrf's packed form: L below the diagonal, U on and above it, and row swaps), lu
(the matrices P, L, U with A = P L U), lu_solve, and the unpacking of the packed form.
Factorizations run on float64 copies on the host (SciPy's LAPACK, one matrix at a time)
and round their results to the input's dtype once. Gradients are PyTorch's
(linalg_lu_backward), for square, wide and tall matrices. Pivots are int64 tensors: pyrt
has no int32 dtype."""

from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp
from pyrt.linalg._common import (
    device_of,
    host,
    lapack,
    matrices,
    mT,
    narrow,
    raise_info,
    tensor_array,
    triangular_solve,
    type_name,
    unbroadcast,
    wide,
)
from pyrt.linalg.decompositions import results

__all__ = ["lu", "lu_factor", "lu_factor_ex", "lu_solve"]

# what they return, as torch.return_types
lu_factor_result = namedtuple("lu_factor", ("LU", "pivots"))
lu_factor_ex_result = namedtuple("lu_factor_ex", ("LU", "pivots", "info"))
lu_result = namedtuple("lu", ("P", "L", "U"))


# ---- the packed form -------------------------------------------------------------------------


def getrf(a64):
    """(LU, pivots, info) of LAPACK getrf for each float64 matrix of `a64`, as NumPy arrays:
    LU packs the unit lower triangular L below its diagonal and U on and above it; row i
    was swapped with row pivots[i] (1-based) in turn; info is the 1-based index of the first
    zero on U's diagonal, 0 if none."""
    a = host(a64)
    m, n = a.shape[-2:]
    flat = a.reshape((-1, m, n))
    lu = flat.copy()
    pivots = np.tile(np.arange(1, min(m, n) + 1, dtype=np.int64), (len(flat), 1))
    info = np.zeros(len(flat), np.int64)
    if flat.size:
        routine = lapack("getrf", flat)
        for i, matrix in enumerate(flat):
            lu[i], piv, info[i] = routine(matrix)
            pivots[i] = piv + 1  # SciPy's are 0-based
    batch = a.shape[:-2]
    return lu.reshape(a.shape), pivots.reshape(batch + (-1,)), info.reshape(batch)


def permutation(pivots, m):
    """perm, for pivots of shape [*, k]: (P^T A)[i] = A[perm[i]], the row swaps
    i <-> pivots[i] - 1 applied in order to the rows 0..m-1."""
    pivots = host(pivots)
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape(-1, k).astype(np.int64) - 1
    if flat.size and (flat.min() < 0 or flat.max() >= m):
        raise RuntimeError(f"lu_unpack: pivots must be between 1 and {m}, the number of rows "
                           f"of LU")
    perm = np.tile(np.arange(m), (len(flat), 1))
    rows = np.arange(len(flat))
    for i in range(k):
        j = flat[:, i]
        perm[rows, i], perm[rows, j] = perm[rows, j], perm[rows, i]
    return perm.reshape(batch + (m,))


def permutation_matrices(perm, dtype):
    """The matrices P with P^T A = A[perm]: P[perm[i], i] = 1."""
    return mT(np.eye(perm.shape[-1], dtype=dtype)[perm])


def split(lu):
    """(L, U) of packed LU factors, m x n: L m x k with a unit diagonal, U k x n
    (k = min(m, n))."""
    xp = _xp(lu)
    m, n = lu.shape[-2:]
    k = min(m, n)
    return (xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype),
            xp.triu(lu[..., :k, :]))


def rows_of(x, perm):
    """x[..., perm[i], :] for each i: the rows of the matrices x in the order perm (batch
    dims broadcast)."""
    xp = _xp(x)
    perm = device_of(x, perm)
    batch = np.broadcast_shapes(x.shape[:-2], perm.shape[:-1])
    index = xp.broadcast_to(perm[..., :, None], batch + perm.shape[-1:] + x.shape[-1:])
    return xp.take_along_axis(xp.broadcast_to(x, batch + x.shape[-2:]), index, axis=-2)


# ---- gradients -------------------------------------------------------------------------------


def _times_inverse_ut(x, up):
    """X U^-T, U upper triangular."""
    return mT(triangular_solve(up, mT(x), lower=False))


def _inverse_lt_times(low, x):
    """L^-T X, L unit lower triangular."""
    return triangular_solve(mT(low), x, lower=False, unit=True)


def lu_backward(p, low, up, gl, gu):
    """PyTorch's gradient of A = P L U (L m x k, U k x n), either gradient None if none:
    for square A, dA = P L^-T (tril_-1(L^T dL) + triu(dU U^T)) U^-T; for wide and tall A the
    square part takes this form and the rest of U (wide) or of L (tall) passes its
    gradient through the one triangular solve it sits behind."""
    xp = _xp(low)
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    if gl is None:
        gl = xp.zeros(low.shape)
    if gu is None:
        gu = xp.zeros(up.shape)
    if m == n:
        inner = xp.tril(mT(low) @ gl, -1) + xp.triu(gu @ mT(up))
        ga = _inverse_lt_times(low, _times_inverse_ut(inner, up))
    elif m < n:  # U = [U1 | U2], U1 square: A = P L [U1 | U2]
        inner = _times_inverse_ut(xp.tril(mT(low) @ gl - xp.triu(gu) @ mT(up), -1),
                                  up[..., :k])
        inner = xp.concatenate((inner + xp.triu(gu[..., :k]), gu[..., k:]), axis=-1)
        ga = _inverse_lt_times(low, inner)
    else:  # L = [L1; L2], L1 square: A = P [L1; L2] U
        inner = triangular_solve(mT(low[..., :k, :]),
                                 xp.triu(gu @ mT(up) - mT(low) @ xp.tril(gl, -1)),
                                 lower=False, unit=True)
        inner = xp.concatenate((inner + xp.tril(gl[..., :k, :], -1), gl[..., k:, :]), axis=-2)
        ga = _times_inverse_ut(inner, up)
    return p @ ga


# ---- factorizations --------------------------------------------------------------------------


def _factored(A, name, pivot):
    """(a, lu64, pivots, info) of the LU factorization of tensor A for function `name`."""
    a = tensor_array(A, name)
    if a.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(a.shape)} instead")
    if a.dtype.kind != "f":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{type_name(a.dtype)}'")
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented")
    lu64, pivots, info = getrf(wide(a))
    return a, device_of(a, lu64), pivots, info


def _packed_tensor(A, a, lu64, pivots):
    """The tensor of packed LU factors: the gradient splits into L's (below the diagonal)
    and U's (on and above it)."""
    xp = _xp(a)
    low, up = split(lu64)
    k = min(a.shape[-2:])
    p = device_of(a, permutation_matrices(permutation(pivots, a.shape[-2]), np.float64))

    def backward(g):
        g = wide(g)
        return (narrow(lu_backward(p, low, up, xp.tril(g[..., :, :k], -1),
                                   xp.triu(g[..., :k, :])), a.dtype),)

    return _make(narrow(lu64, a.dtype), (A,), backward)


def _int_tensor(like, array):
    return _tensor()(_contiguous(device_of(like, np.asarray(array, dtype=np.int64))))


def _zero_pivot(k):
    return (f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. "
            f"If you still want to perform the factorization, consider calling "
            f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info): LAPACK getrf's packed LU factorization with partial pivoting of
    each matrix (any m x n), its row swaps (1-based) and info, the 1-based index of the first
    zero on U's diagonal (0 if none: an exactly singular matrix still factors).
    check_errors raises for a nonzero info; pivot=False (LU without pivoting) is not
    implemented, as on PyTorch's CPU."""
    a, lu64, pivots, info = _factored(A, "torch.linalg.lu_factor_ex", pivot)
    if check_errors:
        raise_info(info, "torch.linalg.lu_factor_ex", _zero_pivot)
    return lu_factor_ex_result(_packed_tensor(A, a, lu64, pivots), _int_tensor(a, pivots),
                               _int_tensor(a, info))


def lu_factor(A, *, pivot=True):
    """(LU, pivots) of lu_factor_ex, or PyTorch's error for a matrix with a zero on U's
    diagonal (which lu_solve would divide by)."""
    a, lu64, pivots, info = _factored(A, "torch.lu_factor", pivot)
    raise_info(info, "torch.linalg.lu_factor", _zero_pivot)
    return lu_factor_result(_packed_tensor(A, a, lu64, pivots), _int_tensor(a, pivots))


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U: P a permutation matrix (A's dtype, no gradient), L m x k
    unit lower triangular, U k x n upper triangular (k = min(m, n))."""
    a, lu64, pivots, _ = _factored(A, "linalg.lu", pivot)
    low, up = split(lu64)
    p = device_of(a, permutation_matrices(permutation(pivots, a.shape[-2]), np.float64))

    def backward(grads):
        gl, gu = (None if g is None else wide(g) for g in grads)
        return narrow(lu_backward(p, low, up, gl, gu), a.dtype)

    return lu_result(_tensor()(narrow(p, a.dtype)),
                     *results((narrow(low, a.dtype), narrow(up, a.dtype)), A, backward))


# ---- solving with the factors ----------------------------------------------------------------


def _pivot_array(pivots, lu_shape, name):
    piv = tensor_array(pivots, name, "pivots")
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: pivots should be a Tensor of integers (int64), got "
                           f"{type_name(piv.dtype)}")
    if piv.shape[-1:] != lu_shape[-1:]:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the "
                           f"dimension of the matrix")
    if piv.shape != lu_shape[:-1]:
        raise RuntimeError(f"{name}: Expected LU.shape[:-1] and pivots.shape to be the same, "
                           f"but got pivots with shape {list(piv.shape)} instead")
    return piv


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (left) or X A = B (left=False), A^T in place of A if adjoint, from the
    packed LU factors of square A = P L U and its pivots (lu_factor's); batch dims
    broadcast. A X = B is U^-1 L^-1 P^T B: a row permutation and two triangular solves; the
    others transpose it. Gradients: for M X = B (M = A or A^T), dB = M^-T dX and
    dM = -dB X^T; then dL = tril_-1(P^T dA U^T), dU = triu(L^T P^T dA)."""
    name = "linalg.lu_solve"
    lu = matrices(LU, "torch.linalg.lu_solve", square=True)
    b = tensor_array(B, name, "B")
    if b.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if b.dtype != lu.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {type_name(lu.dtype)} and B of type {type_name(b.dtype)} "
                           f"instead")
    n = lu.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    perm = permutation(_pivot_array(pivots, lu.shape, name), n)
    xp = _xp(lu)
    lu64 = wide(lu)
    low, up = split(lu64)
    # the system M X = B_eff with M = A or A^T: X A = B is A^T X^T = B^T
    transposed = adjoint if left else not adjoint
    b_eff = wide(b if left else mT(b))

    def solve_with(rhs, transpose):
        """X with A X = rhs, or A^T X = rhs if transpose (A^T = U^T L^T P^T)."""
        if not transpose:
            y = triangular_solve(low, rows_of(rhs, perm), lower=True, unit=True)
            return triangular_solve(up, y, lower=False)
        z = triangular_solve(mT(low), triangular_solve(mT(up), rhs, lower=True),
                             lower=False, unit=True)
        return rows_of(z, np.argsort(perm, axis=-1))  # P z

    x = solve_with(b_eff, transposed)

    def backward(g):
        gx = wide(g if left else mT(g))
        gb = solve_with(gx, not transposed)
        gm = -(gb @ mT(x))
        ga = mT(gm) if transposed else gm
        grads = [None, None]
        if LU._requires_grad:
            pga = rows_of(ga, perm)  # P^T dA
            glu = xp.tril(pga @ mT(up), -1) + xp.triu(mT(low) @ pga)
            grads[0] = narrow(unbroadcast(glu, lu.shape), lu.dtype)
        if B._requires_grad:
            gb = unbroadcast(gb, b_eff.shape)
            grads[1] = narrow(gb if left else mT(gb), lu.dtype)
        return tuple(grads)

    return _make(narrow(x if left else mT(x), lu.dtype), (LU, B), backward)
