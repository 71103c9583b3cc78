"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric positive-definite
matrix A, or of the generalized problem A x = lambda B x, batched over leading dims.

torch iterates LOBPCG; pyrt solves the problem densely with its differentiable eigh (after
reducing a generalized problem with B's Cholesky factor L to L^-1 A L^-T), which for the
sizes torch's own check admits (at least 3 k rows) gives the converged answer at once, with
eigh's gradients. The iteration's arguments (X, iK, niter, tol, method, tracker and the
ortho_* dicts) are checked as torch checks them and otherwise change nothing.
"""

import numbers

from pyrt import linalg

__all__ = ["lobpcg"]


def _tensor_argument(value, name):
    from pyrt.tensor import Tensor

    if value is not None and not isinstance(value, Tensor):
        raise TypeError(f"lobpcg(): argument '{name}' must be a Tensor, not "
                        f"{type(value).__name__}")
    return value


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """(E, X): the k eigenvalues [..., k] of A (of the pencil A, B with B), largest first
    (smallest first with largest=False), and their eigenvectors [..., m, k] as columns
    (B-orthonormal with B)."""
    del iK, niter, tol, tracker, ortho_iparams, ortho_fparams, ortho_bparams
    A = _tensor_argument(A, "A")
    if A is None:
        raise TypeError("lobpcg(): argument 'A' must be a Tensor, not NoneType")
    B, X = _tensor_argument(B, "B"), _tensor_argument(X, "X")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"lobpcg(): A must be a square matrix or a batch of them, got shape "
                         f"{list(A.shape)}")
    if B is not None and B.shape != A.shape:
        raise ValueError(f"A and B must have the same shapes, got {list(A.shape)} and "
                         f"{list(B.shape)}")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg(): method must be 'basic' or 'ortho', got {method!r}")
    for value, name in ((k, "k"), (n, "n")):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"lobpcg(): {name} must be a positive int, got {value!r}")
    if k is None:
        k = 1 if X is None else X.shape[-1]
    if n is None:
        n = k if X is None else X.shape[-1]
    m = A.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows "
                         f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                         f"(={n})")
    if B is None:
        values, vectors = linalg.eigh(A)
    else:  # L^-1 A L^-T y = lambda y, x = L^-T y
        L = linalg.cholesky(B)
        left = linalg.solve_triangular(L, A, upper=False)
        reduced = linalg.solve_triangular(L, left.mT, upper=False)
        values, ys = linalg.eigh(reduced)
        vectors = linalg.solve_triangular(L.mT, ys, upper=True)
    from pyrt.tensor import arange

    # eigh's order is ascending: the last k reversed are the largest
    chosen = arange(m - 1, m - 1 - k, -1) if largest is None or largest else arange(k)
    return values.index_select(-1, chosen), vectors.index_select(-1, chosen)
