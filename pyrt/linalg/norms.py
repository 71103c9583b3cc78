"""Vector and matrix norms and condition numbers, as torch.linalg's: vector_norm, matrix_norm,
norm (which picks one of the two from its arguments) and cond. They are built from
differentiable ops (abs, sums, amax and amin, svdvals, inv), which carry their gradients."""

import numbers
from collections.abc import Sequence

import numpy as np

from pyrt import functional as F
from pyrt.autograd import no_grad
from pyrt.functional import _tensor, _xp, dim_index
from pyrt.linalg._common import floating, matrices, narrow, tensor_array, wide
from pyrt.linalg.decompositions import svdvals
from pyrt.linalg.solvers import inverse_ex, inverse_tensor
from pyrt.reductions import amax, amin
from pyrt.reductions import norm as _vector_norm

__all__ = ["cond", "matrix_norm", "norm", "vector_norm"]

_MATRIX_ORDERS = ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def vector_norm(x, ord=2, dim=None, keepdim=False):
    """The vector ord-norm of x over `dim` (all elements if None; an int or a sequence of
    ints): (sum |x|^ord)^(1/ord); inf is max |x|, -inf min |x|, 0 the count of nonzero
    elements. Gradients as PyTorch's (pyrt.reductions.norm)."""
    xd = tensor_array(x, "linalg.vector_norm", "x")
    if isinstance(ord, (str, bool, np.bool_)) or not isinstance(ord, numbers.Real):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    floating(xd, "linalg.vector_norm")
    return _vector_norm(x, float(ord), dim, keepdim)


def _matrix_order(ord, name):
    if isinstance(ord, str) and ord in ("fro", "nuc"):
        return ord
    if (not isinstance(ord, (str, bool, np.bool_)) and isinstance(ord, numbers.Real)
            and float(ord) in _MATRIX_ORDERS):
        return float(ord)
    raise RuntimeError(f"{name}: Order {ord} not supported.")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):
    """The matrix norm of the matrices spanned by the two dims `dim`: "fro" sqrt(sum a^2),
    "nuc" the sum of the singular values, 2 / -2 the largest / smallest singular value,
    1 / -1 the largest / smallest column sum of |a|, inf / -inf the largest / smallest row
    sum of |a|."""
    a = matrices(A, "linalg.matrix_norm")
    ord = _matrix_order(ord, "linalg.matrix_norm")
    if (not isinstance(dim, Sequence) or len(dim) != 2
            or not all(isinstance(d, (int, np.integer)) for d in dim)):
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    rows, cols = (dim_index(d, a.ndim) for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    if ord == "fro":
        return vector_norm(A, 2, (rows, cols), keepdim)
    m = A.movedim((rows, cols), (-2, -1))
    if ord == "nuc":
        out = svdvals(m).sum(-1)
    elif abs(ord) == 2:
        out = (amax if ord > 0 else amin)(svdvals(m), -1)
    else:  # 1: the column sums, along the rows; inf: the row sums, along the columns
        sums = m.abs().sum(-2 if abs(ord) == 1 else -1)
        out = (amax if ord > 0 else amin)(sums, -1)
    if keepdim:
        out = F.reshape(out, tuple(1 if i in (rows, cols) else n for i, n in enumerate(a.shape)))
    return out


def norm(A, ord=None, dim=None, keepdim=False):
    """torch.linalg.norm: a vector norm over one dim (an int or a 1-sequence), a matrix norm
    over two; without dim, the vector 2-norm of all elements if ord is None, else the norm
    `ord` of a 1-D (vector) or 2-D (matrix) input."""
    a = tensor_array(A, "linalg.norm", "input")
    if dim is not None:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim)
    if a.ndim == 1:
        return vector_norm(A, ord, None, keepdim)
    if a.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D "
                       f"or 2D. Got {a.ndim}D.")


def cond(A, p=None):
    """The condition number in the matrix norm p: for p None or 2 (-2), the largest singular
    value over the smallest (smallest over largest), for any matrices; for the other orders,
    norm(A) norm(A^-1) of square ones, inf for singular ones (with no gradient then)."""
    matrices(A, "linalg.cond")
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = svdvals(A)
        big, small = amax(s, -1), amin(s, -1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return small / big if p == -2 else big / small
    p = _matrix_order(p, "linalg.cond")
    a = matrices(A, "linalg.cond", square=True)
    inverse, info = inverse_ex(wide(a))
    xp = _xp(a)
    if bool(xp.any(info != 0)):
        with no_grad():
            inverse = _tensor()(narrow(xp.where((info != 0)[..., None, None], 0.0, inverse),
                                       a.dtype))
            value = (matrix_norm(A, p) * matrix_norm(inverse, p))._data
        return _tensor()(narrow(xp.where(info != 0, np.inf, value), a.dtype))
    return matrix_norm(A, p) * matrix_norm(inverse_tensor(A, a, inverse), p)
