"""Low-rank factorizations and the deprecated norm functions PyTorch keeps at its top level:
svd_lowrank and pca_lowrank (randomized, as torch._lowrank), nuclear_norm, frobenius_norm
and norm_except_dim.

svd_lowrank is Algorithm 5.1 of Halko, Martinsson and Tropp (2009), as PyTorch writes it:
the range of a tall A (a wide one is transposed) is found by multiplying it with a random
n x q Gaussian matrix drawn from pyrt's generator, then refined by `niter` rounds of power
iteration, orthonormalizing with QR after every product; the small matrix B = Q^T A is then
factored exactly. The factors are built from differentiable ops, so gradients flow through
them. The random draws differ from PyTorch's, so results agree with PyTorch's in the
subspaces and reconstructions they give, not in their bits.
"""

import numbers
import warnings

__all__ = ["frobenius_norm", "norm_except_dim", "nuclear_norm", "pca_lowrank", "svd_lowrank"]


def _check_matrices(A, name):
    from pyrt.tensor import Tensor

    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): A must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise ValueError(f"{name}(): A must have at least 2 dimensions (a matrix or a batch "
                         f"of them), got shape {tuple(A.shape)}")
    if not A.is_floating_point():
        raise RuntimeError(f"{name}(): expected a floating point tensor, got {A.dtype}")


def _approximate_basis(A, q, niter, M):
    """An m x q matrix with orthonormal columns whose span approximates A's range."""
    from pyrt.linalg import qr
    from pyrt.tensor import randn

    R = randn(A.shape[-1], q).to(A.device)
    X = A @ R
    if M is not None:
        X = X - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q
        if M is not None:
            X = X - M.mT @ Q
        Q = qr(X).Q
        X = A @ Q
        if M is not None:
            X = X - M @ Q
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    from pyrt.linalg import svd

    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:  # the algorithm wants A tall
        A = A.mT
        if M is not None:
            M = M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A
    if M is not None:
        B = B - Q.mT @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mT
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def _check_count(value, name):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^T: a rank-q approximation of A (minus M, which
    broadcasts to A's shape) for a matrix or a batch of them; U is m x k, S k, V n x k with
    k = min(q, m, n). q should be a little above the rank wanted; niter more rounds of power
    iteration sharpen the subspace. See the module docstring for the algorithm."""
    from pyrt.tensor import Tensor

    _check_matrices(A, "svd_lowrank")
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    _check_count(q, "svd_lowrank(): q")
    _check_count(niter, "svd_lowrank(): niter")
    if q < 0 or niter < 0:
        raise ValueError(f"svd_lowrank(): q(={q}) and niter(={niter}) must be non-negative")
    if M is not None:
        if not isinstance(M, Tensor):
            raise TypeError(f"svd_lowrank(): M must be a Tensor or None, got "
                            f"{type(M).__name__}")
        if M.dtype != A.dtype:
            raise RuntimeError(f"svd_lowrank(): M must have A's dtype {A.dtype}, got "
                               f"{M.dtype}")
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V): the principal components of the rows of A (of each matrix of a batch),
    centred by subtracting each column's mean unless `center` is False: svd_lowrank of the
    centred A with q = min(6, m, n) by default. V's columns are the principal directions,
    S**2 / (m - 1) the variances along them."""
    _check_matrices(A, "pca_lowrank")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    _check_count(q, "pca_lowrank(): q")
    _check_count(niter, "pca_lowrank(): niter")
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of the matrices spanned by `dim` (the last two dims by
    default). Deprecated, as in PyTorch: linalg.matrix_norm(input, "nuc", dim, keepdim)."""
    from pyrt.linalg import matrix_norm

    warnings.warn("nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                  "will be removed in a future PyTorch release. Please use "
                  "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input, dim, keepdim=False):
    """sqrt(sum x^2) over `dim` (an int, or a tuple of at most two; () for all dims).
    Deprecated, as in PyTorch: linalg.vector_norm(input, 2, dim, keepdim)."""
    from pyrt.linalg import vector_norm

    warnings.warn("frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return vector_norm(input, 2, dims if dims else None, keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of v over every dim but `dim`, shaped as v with the other dims of size
    1 (weight normalization's norm); dim=-1 means the norm of all of v, a scalar."""
    from pyrt.functional import dim_index
    from pyrt.linalg import vector_norm

    if not isinstance(pow, numbers.Integral) or isinstance(pow, bool):
        raise TypeError(f"norm_except_dim(): argument 'pow' (position 2) must be int, not "
                        f"{type(pow).__name__}")
    if dim == -1:
        return vector_norm(v, pow)
    keep = dim_index(dim, v.ndim)
    others = tuple(d for d in range(v.ndim) if d != keep)
    if not others:  # a vector: the norm of each element alone
        return v.abs()
    return vector_norm(v, pow, others, keepdim=True)
