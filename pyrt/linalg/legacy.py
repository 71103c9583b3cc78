"""The linear algebra PyTorch keeps at its top level and on Tensor with their older
signatures: det, inverse, slogdet, logdet, pinverse, matrix_power, matrix_exp, cholesky,
cholesky_solve, cholesky_inverse, qr (some), svd (some, compute_uv; V rather than Vh), lu
(pivot, get_infos), lu_solve, lu_unpack, triangular_solve and orgqr. Most are torch.linalg's
functions under other arguments; cholesky_solve and cholesky_inverse, which torch.linalg
lacks, are written out with PyTorch's gradients."""

from collections import namedtuple

import numpy as np

from pyrt.functional import _make, _tensor, _xp
from pyrt.linalg import decompositions, solvers
from pyrt.linalg._common import (
    device_of,
    matrices,
    mT,
    narrow,
    tensor_array,
    type_name,
    unbroadcast,
    wide,
)
from pyrt.linalg._common import (
    triangular_solve as solve_triangles,
)
from pyrt.linalg.decompositions import results
from pyrt.linalg.householder import householder_product
from pyrt.linalg.lu import lu_factor_ex, permutation, permutation_matrices, split
from pyrt.linalg.lu import lu_solve as _lu_solve
from pyrt.linalg.matrix_exp import matrix_exp
from pyrt.linalg.triangular import solve_triangular

__all__ = ["cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "lu",
           "lu_solve", "lu_unpack", "matrix_exp", "matrix_power", "orgqr", "pinverse", "qr",
           "slogdet", "svd", "triangular_solve"]

# what they return, as torch.return_types
svd_result = namedtuple("svd", ("U", "S", "V"))
lu_unpack_result = namedtuple("lu_unpack", ("P", "L", "U"))
triangular_solve_result = namedtuple("triangular_solve", ("solution", "cloned_coefficient"))

det = solvers.det
inverse = solvers.inv
slogdet = solvers.slogdet
matrix_power = solvers.matrix_power
orgqr = householder_product


def logdet(input):
    """log det(A) of square matrices: NaN where the determinant is negative, -inf where it
    is zero; the gradient is A^-T (slogdet's)."""
    sign, logabsdet = solvers.slogdet(input)
    xp = _xp(sign._data)
    return logabsdet + _tensor()(xp.where(sign._data < 0, np.nan, 0.0).astype(sign.dtype))


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse with the singular values below rcond times the largest taken as
    zero: linalg.pinv(input, rtol=rcond)."""
    return solvers.pinv(input, rtol=rcond)


def cholesky(input, upper=False):
    """linalg.cholesky(input, upper=upper)."""
    return decompositions.cholesky(input, upper=upper)


def qr(input, some=True):
    """linalg.qr, reduced if some, else complete."""
    return decompositions.qr(input, "reduced" if some else "complete")


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T: linalg.svd's with V = Vh^T, reduced if some.
    Without compute_uv, S alone is computed and U and V are zero matrices, m x m and
    n x n, as PyTorch's."""
    a = matrices(input, "linalg.svd")
    if not compute_uv:
        xp = _xp(a)
        m, n = a.shape[-2:]
        batch = a.shape[:-2]
        Tensor = _tensor()
        return svd_result(Tensor(xp.zeros(batch + (m, m), a.dtype)),
                          decompositions.svdvals(input),
                          Tensor(xp.zeros(batch + (n, n), a.dtype)))
    u, s, vh = decompositions.svd(input, full_matrices=not some)
    return svd_result(u, s, vh.mT)


# ---- Cholesky factors ------------------------------------------------------------------------


def _lower_factor(f, upper):
    """The lower factor L of A = L L^T from L (the lower triangle of f) or from U (the upper
    one) with A = U^T U."""
    xp = _xp(f)
    return mT(xp.triu(f)) if upper else xp.tril(f)


def cholesky_solve(input, input2, upper=False):
    """X with A X = B for B = input and A = L L^T (or U^T U if upper) from its Cholesky
    factor input2, by two triangular solves; batch dims broadcast. PyTorch's gradients:
    dB = A^-1 dX and, with C = dB X^T + X dB^T, dL = -C L (dU = -U C)."""
    b = tensor_array(input, "cholesky_solve", "input")
    f = tensor_array(input2, "cholesky_solve", "input2")
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions "
                           f"instead")
    if f.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {f.ndim} dimensions "
                           f"instead")
    if f.shape[-1] != f.shape[-2] or b.shape[-2] != f.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{f.shape[-2]} by {f.shape[-1]} but each b matrix is {b.shape[-2]} "
                           f"by {b.shape[-1]}")
    if b.dtype != f.dtype or f.dtype.kind != "f":
        raise RuntimeError(f"cholesky_solve: expected b and A of one floating dtype, got "
                           f"{type_name(b.dtype)} and {type_name(f.dtype)}")
    try:
        np.broadcast_shapes(b.shape[:-2], f.shape[:-2])
    except ValueError:
        raise RuntimeError(f"cholesky_solve: the batch dims of b {list(b.shape)} and A "
                           f"{list(f.shape)} do not broadcast") from None
    f64 = wide(f)
    low = _lower_factor(f64, upper)

    def solved(rhs):
        return solve_triangles(mT(low), solve_triangles(low, rhs, lower=True), lower=False)

    x = solved(wide(b))

    def backward(g):
        gb = solved(wide(g))
        grads = [None, None]
        if input._requires_grad:
            grads[0] = narrow(unbroadcast(gb, b.shape), b.dtype)
        if input2._requires_grad:
            common = gb @ mT(x)
            common = common + mT(common)
            gf = -(f64 @ common) if upper else -(common @ f64)
            grads[1] = narrow(unbroadcast(gf, f.shape), f.dtype)
        return tuple(grads)

    return _make(narrow(x, b.dtype), (input, input2), backward)


def cholesky_inverse(input, upper=False):
    """A^-1 for A = L L^T (or U^T U if upper) from its Cholesky factor: L^-T L^-1, L^-1
    by a triangular solve. PyTorch's gradient: with R = A^-1, dL = -R (G + G^T) R L
    (dU = -U R (G + G^T) R)."""
    f = matrices(input, "cholesky_inverse", square=True)
    xp = _xp(f)
    f64 = wide(f)
    low = _lower_factor(f64, upper)
    low_inverse = solve_triangles(low, xp.broadcast_to(xp.eye(f.shape[-1]), f.shape),
                                    lower=True)
    r = mT(low_inverse) @ low_inverse

    def backward(g):
        g = wide(g)
        common = r @ (g + mT(g)) @ r
        return (narrow(-(f64 @ common) if upper else -(common @ f64), f.dtype),)

    return _make(narrow(r, f.dtype), (input,), backward)


# ---- LU --------------------------------------------------------------------------------------


def lu(A, pivot=True, get_infos=False):
    """(LU, pivots), with infos too if get_infos: linalg.lu_factor_ex's, which never raises
    for a singular matrix."""
    packed, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (packed, pivots, info) if get_infos else (packed, pivots)


def lu_solve(b, LU_data, LU_pivots):
    """linalg.lu_solve(LU_data, LU_pivots, b): X with A X = b."""
    return _lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from lu_factor's packed factors (m x n) and pivots: P m x m,
    L m x k unit lower triangular, U k x n upper triangular (k = min(m, n)); without
    unpack_data L and U are empty, without unpack_pivots P. L and U take their gradients
    back to LU_data's lower and upper parts."""
    name = "torch.lu_unpack"
    packed = tensor_array(LU_data, name, "LU_data")
    piv = tensor_array(LU_pivots, name, "LU_pivots")
    if packed.ndim < 2:
        raise RuntimeError(f"{name}: LU_data must have at least 2 dimensions, got "
                           f"{packed.ndim}")
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: LU_pivots is expected to be a tensor of integers "
                           f"(int64), got {type_name(piv.dtype)}")
    m, n = packed.shape[-2:]
    k = min(m, n)
    if piv.shape != packed.shape[:-2] + (k,):
        raise RuntimeError(f"{name}: LU_pivots of shape {list(piv.shape)} does not match "
                           f"LU_data of shape {list(packed.shape)}: expected "
                           f"{list(packed.shape[:-2] + (k,))}")
    xp = _xp(packed)
    Tensor = _tensor()
    empty = xp.zeros((0,), packed.dtype)
    p = Tensor(empty)
    if unpack_pivots:
        perm = permutation(piv, m)
        p = Tensor(narrow(device_of(packed, permutation_matrices(
            perm, np.float64)), packed.dtype))
    if not unpack_data:
        return lu_unpack_result(p, Tensor(empty), Tensor(empty))
    low, up = split(packed)

    def backward(grads):
        gl, gu = grads
        grad = xp.zeros(packed.shape, packed.dtype)
        if gl is not None:
            grad[..., :, :k] += xp.tril(gl, -1)
        if gu is not None:
            grad[..., :k, :] += xp.triu(gu)
        return grad

    return lu_unpack_result(p, *results((narrow(low, packed.dtype), narrow(up, packed.dtype)),
                                        LU_data, backward))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient): X with T X = b, T^T X = b if transpose, T the upper
    (or lower) triangle of A, and a copy of A; linalg.solve_triangular's values and
    gradients."""
    name = "torch.triangular_solve"
    bd = tensor_array(b, name, "b")
    a = tensor_array(A, name, "A")
    for arg, array in (("b", bd), ("A", a)):
        if array.ndim < 2:
            raise RuntimeError(f"{name}: Expected {arg} to have at least 2 dimensions, but it "
                               f"has {array.ndim} dimensions instead")
    if a.shape[-1] != a.shape[-2] or bd.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{a.shape[-2]} by {a.shape[-1]} but each b matrix is "
                           f"{bd.shape[-2]} by {bd.shape[-1]}")
    coefficient = A.mT if transpose else A
    x = solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                         unitriangular=unitriangular)
    return triangular_solve_result(x, A.clone())

