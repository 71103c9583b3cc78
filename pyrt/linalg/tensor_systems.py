"""Inverses and linear systems of tensors seen as linear maps, as torch.linalg.tensorinv and
tensorsolve: the dims are flattened into one square matrix, which inv or solve handle (with
their gradients and errors), and the result takes the tensor shape back."""

import math

import numpy as np

from pyrt import functional as F
from pyrt.linalg._common import tensor_array
from pyrt.linalg.solvers import inv, solve

__all__ = ["tensorinv", "tensorsolve"]


def _requirement(front, back, what):
    if front != back:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[{what}:]) "
                           f"== prod(self.shape[:{what}]), but got {back} != {front}")


def tensorinv(A, ind=2):
    """The tensor inverse of A over its first `ind` dims: with A of shape S1 + S2
    (len(S1) = ind) taken as a prod(S1) x prod(S2) matrix, which must be square, its inverse
    reshaped to S2 + S1, so that tensordot(tensorinv(A), A, ind) is the identity of S2."""
    a = tensor_array(A, "linalg.tensorinv")
    if isinstance(ind, bool) or not isinstance(ind, (int, np.integer)) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = a.shape[:ind], a.shape[ind:]
    _requirement(math.prod(front), math.prod(back), "ind")
    inverse = inv(F.reshape(A, (math.prod(front), math.prod(back))))
    return F.reshape(inverse, tuple(back) + tuple(front))


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B: the dims `dims` of A moved to its end, A of
    shape S1 + S (len(S1) = B.ndim) taken as an n x n matrix, n = prod(S) = prod(B.shape);
    X has shape S."""
    a = tensor_array(A, "linalg.tensorsolve")
    b = tensor_array(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [dims] if isinstance(dims, (int, np.integer)) else list(dims)
        rest = [d for d in range(a.ndim) if d not in {d % a.ndim for d in dims}]
        A = A.permute(*rest, *(d % a.ndim for d in dims))
        a = A._data
    back = a.shape[b.ndim:]
    n = math.prod(back)
    _requirement(math.prod(b.shape), n, "other.ndim")
    if math.prod(a.shape) != n * n:
        raise RuntimeError(f"linalg.tensorsolve: A of shape {list(a.shape)} is not a square "
                           f"matrix of size {n} x {n} over B's dims and the others")
    x = solve(F.reshape(A, (n, n)), F.reshape(B, (-1,)))
    return F.reshape(x, tuple(back))
