"""Matrix factorizations with their gradients: cholesky, qr, eigh and eigvalsh, svd and
svdvals. Each factors a float64 copy of its input (NumPy's or CuPy's LAPACK-style routines)
and rounds the factors to the input's dtype. A factorization with several results gives each
its own backward: the gradient is linear in the results' gradients, so the shares that reach
the input sum to the whole."""

from collections import namedtuple

import numpy as np

from pyrt.functional import _make, _tensor, _xp
from pyrt.linalg._common import (
    LinAlgError,
    finite,
    indefinite_minors,
    matrices,
    mT,
    narrow,
    raise_info,
    sym_lower,
    type_name,
    wide,
)

__all__ = ["cholesky", "eig", "eigh", "eigvals", "eigvalsh", "qr", "svd", "svdvals"]

# what the factorizations return, as torch.return_types
eigh_result = namedtuple("eigh", ("eigenvalues", "eigenvectors"))
qr_result = namedtuple("qr", ("Q", "R"))
svd_result = namedtuple("svd", ("U", "S", "Vh"))


def diag_embed(d):
    """Diagonal matrices with the vectors of d's last dim on their diagonals."""
    xp = _xp(d)
    n = d.shape[-1]
    out = xp.zeros(d.shape + (n,), d.dtype)
    i = xp.arange(n)
    out[..., i, i] = d
    return out


def _off_diagonal(e):
    """`e` with ones on its diagonals: the denominators of the off-diagonal terms."""
    xp = _xp(e)
    return xp.where(xp.eye(e.shape[-1], dtype=bool), 1.0, e)


def results(arrays, A, backward):
    """Tensors of `arrays`, the results of one factorization of tensor A. backward(grads)
    maps their gradients (a tuple, None for the results no gradient reached) to A's."""
    n = len(arrays)

    def share(i):
        return lambda g: (backward(tuple(g if j == i else None for j in range(n))),)

    return tuple(_make(array, (A,), share(i)) for i, array in enumerate(arrays))


# ---- Cholesky --------------------------------------------------------------------------------


def cholesky_lower(s, name):
    """The lower Cholesky factors of the symmetric float64 matrices `s`, or PyTorch's
    LinAlgError naming the first leading minor that is not positive-definite."""
    xp = _xp(s)
    try:
        low = xp.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        low = None
    if low is None or not finite(low):
        raise_info(indefinite_minors(s), name, lambda k: (
            f"The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {k} is not positive-definite)."))
        if low is None:
            raise LinAlgError(f"{name}: The factorization could not be completed because the "
                              f"input is not positive-definite.")
    return low


def cholesky(A, *, upper=False):
    """L, lower triangular with a positive diagonal, such that A = L L^T, for symmetric
    positive-definite A (only its lower triangle is read); with upper=True, U = L^T from A's
    upper triangle. The gradient is PyTorch's (Murray 2016): with Phi(X) the lower triangle
    of X with its diagonal halved, dA = L^-T Phi(L^T dL) L^-1, symmetrized."""
    a = matrices(A, "linalg.cholesky", square=True)
    xp = _xp(a)
    # the upper triangle of A is the lower one of A^T
    low = cholesky_lower(sym_lower(wide(mT(a) if upper else a)), "linalg.cholesky")

    def backward(grads):
        gl = wide(mT(grads[0]) if upper else grads[0])
        phi = xp.tril(mT(low) @ gl)
        phi = 0.5 * (phi + mT(xp.tril(phi, -1)))  # halved diagonal, mirrored: symmetric
        inverse = xp.linalg.inv(low)
        return narrow(mT(inverse) @ phi @ inverse, a.dtype)

    return results((narrow(mT(low) if upper else low, a.dtype),), A, backward)[0]


# ---- QR --------------------------------------------------------------------------------------


def _qr_tall_backward(q, r, gq, gr):
    """The gradient of A = Q R, Q m x n orthonormal and R n x n (m >= n): with
    M = R dR^T - dQ^T Q and copyltu(M) the symmetric matrix of M's lower triangle,
    dA = (dQ + Q copyltu(M)) R^-T (Walter and Lehmann 2018; Liao et al. 2019)."""
    xp = _xp(q)
    m = r @ mT(gr) - mT(gq) @ q
    sym = xp.tril(m) + mT(xp.tril(m, -1))
    return mT(xp.linalg.solve(r, mT(gq + q @ sym)))  # B R^-T = (R^-1 B^T)^T


def qr(A, mode="reduced"):
    """The QR factorization A = Q R by Householder reflections: Q with orthonormal columns, R
    upper triangular. mode "reduced": Q m x k, R k x n (k = min(m, n)); "complete": Q m x m,
    R m x n; "r": R only (Q an empty tensor). Gradients for "reduced", and for "complete"
    where m <= n; for m < n, A = Q [U | V] splits into a square factorization X = Q U, whose
    Q takes the gradient of Y = Q V as well, and Y itself."""
    a = matrices(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    xp = _xp(a)
    a64 = wide(a)
    m, n = a.shape[-2:]
    if mode == "r":
        def refused(g):
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")

        r = narrow(xp.linalg.qr(a64, mode="r"), a.dtype)
        return qr_result(_tensor()(xp.zeros((0,), a.dtype)), _make(r, (A,), refused))
    q, r = xp.linalg.qr(a64, mode=mode)

    def backward(grads):
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        gq, gr = (xp.zeros(t.shape) if g is None else wide(g) for g, t in zip(grads, (q, r)))
        if m >= n:
            return narrow(_qr_tall_backward(q, r, gq, gr), a.dtype)
        gv = gr[..., m:]
        gx = _qr_tall_backward(q, r[..., :m], gq + a64[..., m:] @ mT(gv), gr[..., :m])
        return narrow(xp.concatenate((gx, q @ gv), axis=-1), a.dtype)

    return qr_result(*results((narrow(q, a.dtype), narrow(r, a.dtype)), A, backward))


# ---- symmetric eigendecomposition ------------------------------------------------------------


def _symmetric(A, name, UPLO):
    a = matrices(A, name, square=True, integers=True)
    if a.dtype.kind != "f":
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for "
                                  f"'{type_name(a.dtype)}'")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return a


def eigh(A, UPLO="L"):
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric A, of
    its lower (UPLO="L") or upper ("U") triangle. The gradient, for distinct eigenvalues:
    dA = V (diag(dw) + skew(V^T dV) / E) V^T with E_ij = w_j - w_i and skew(X) = (X - X^T)/2
    (eigenvectors are unique up to sign, so a loss must not depend on theirs)."""
    a = _symmetric(A, "linalg.eigh", UPLO)
    xp = _xp(a)
    w, v = xp.linalg.eigh(wide(a), UPLO=UPLO)

    def backward(grads):
        gw, gv = grads
        inner = xp.zeros(v.shape)
        if gv is not None:
            vgv = mT(v) @ wide(gv)
            inner = 0.5 * (vgv - mT(vgv)) / _off_diagonal(w[..., None, :] - w[..., :, None])
        if gw is not None:
            inner = inner + diag_embed(wide(gw))
        return narrow(v @ inner @ mT(v), a.dtype)

    return eigh_result(*results((narrow(w, a.dtype), narrow(v, a.dtype)), A, backward))


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of symmetric A, of its lower (UPLO="L") or upper ("U")
    triangle; the gradient is V diag(dw) V^T, V the eigenvectors."""
    a = _symmetric(A, "linalg.eigh", UPLO)
    xp = _xp(a)
    a64 = wide(a)

    def backward(g):
        v = xp.linalg.eigh(a64, UPLO=UPLO)[1]
        return (narrow((v * wide(g)[..., None, :]) @ mT(v), a.dtype),)

    return _make(narrow(xp.linalg.eigvalsh(a64, UPLO=UPLO), a.dtype), (A,), backward)


# ---- singular value decomposition ------------------------------------------------------------


def svd_backward(u, s, vh, gu, gs, gvh):
    """PyTorch's gradient of the reduced SVD A = U diag(S) Vh (U m x k, Vh k x n) for distinct
    nonzero singular values: with skew(X) = X - X^T and E_ij = S_j^2 - S_i^2,
    dA = U [(skew(U^T dU) S + S skew(V^T dV)) / E + diag(dS)] Vh, plus, when m > n, the part
    of dU outside U's span, (I - U U^T) dU S^-1 Vh, or when m < n, the part of dV outside
    V's span, U S^-1 dV^T (I - V Vh)."""
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:
        return (u * gs[..., None, :]) @ vh
    xp = _xp(u)
    inner = xp.zeros(u.shape[:-2] + (s.shape[-1],) * 2)
    if gu is not None:
        ugu = mT(u) @ gu
        inner = (ugu - mT(ugu)) * s[..., None, :]
    if gvh is not None:
        vgv = vh @ mT(gvh)
        inner = inner + s[..., :, None] * (vgv - mT(vgv))
    s2 = s * s
    inner = inner / _off_diagonal(s2[..., None, :] - s2[..., :, None])
    if gs is not None:
        inner = inner + diag_embed(gs)
    if m > n and gu is not None:
        gus = gu / s[..., None, :]
        return (u @ inner + gus - u @ (mT(u) @ gus)) @ vh
    if m < n and gvh is not None:
        gvs = gvh / s[..., :, None]
        return u @ (inner @ vh + gvs - (gvs @ mT(vh)) @ vh)
    return u @ inner @ vh


def _check_driver(driver, xp):
    """`driver` of svd: PyTorch takes one only for CUDA inputs, one of cuSOLVER's routines."""
    if driver is None:
        return
    if xp is np:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    if driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError(f"torch.linalg.svd: driver must be one of 'gesvd', 'gesvdj' or "
                           f"'gesvda', got {driver!r}")


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh, S descending and nonnegative: U m x m and Vh n x n with
    full_matrices, else U m x k and Vh k x n (k = min(m, n)). The gradient is
    svd_backward's, through the first k columns of U and rows of Vh (the others are any
    orthonormal completion; singular vectors are unique up to sign, so a loss must not
    depend on theirs). `driver` picks a cuSOLVER routine in PyTorch, CUDA only; every
    routine computes this factorization, here CuPy's own."""
    a = matrices(A, "linalg.svd")
    xp = _xp(a)
    _check_driver(driver, xp)
    u, s, vh = xp.linalg.svd(wide(a), full_matrices=bool(full_matrices))
    k = s.shape[-1]

    def backward(grads):
        gu, gs, gvh = (None if g is None else wide(g) for g in grads)
        return narrow(svd_backward(u[..., :k], s, vh[..., :k, :],
                                   None if gu is None else gu[..., :k], gs,
                                   None if gvh is None else gvh[..., :k, :]), a.dtype)

    return svd_result(*results(tuple(narrow(t, a.dtype) for t in (u, s, vh)), A, backward))


def svdvals(A, *, driver=None):
    """The singular values of A, descending; the gradient is U diag(dS) Vh."""
    a = matrices(A, "linalg.svd")
    xp = _xp(a)
    _check_driver(driver, xp)
    a64 = wide(a)

    def backward(g):
        u, _, vh = xp.linalg.svd(a64, full_matrices=False)
        return (narrow((u * wide(g)[..., None, :]) @ vh, a.dtype),)

    return _make(narrow(xp.linalg.svd(a64, compute_uv=False), a.dtype), (A,), backward)


# ---- general eigendecomposition --------------------------------------------------------------


def _complex_refused(A, name):
    matrices(A, name, square=True)
    raise TypeError(f"{name}: the eigenvalues and eigenvectors of a real non-symmetric matrix "
                    f"are complex in general, and pyrt has no complex dtype; for a symmetric "
                    f"matrix use linalg.eigh (or linalg.eigvalsh for the eigenvalues alone)")


def eig(A):
    """Refused: torch.linalg.eig returns complex tensors, which pyrt cannot hold (a
    TypeError, after PyTorch's checks of A); eigh handles symmetric matrices."""
    _complex_refused(A, "linalg.eig")


def eigvals(A):
    """Refused as eig: the eigenvalues are complex; eigvalsh handles symmetric matrices."""
    _complex_refused(A, "linalg.eigvals")
