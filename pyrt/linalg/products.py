"""Products and views of batched matrices and vectors: matmul (broadcasting its batch dims, as
torch.matmul), multi_dot, cross, vecdot, diagonal and the Vandermonde matrices of powers,
each with its gradient."""

import numpy as np

from pyrt import functional as F
from pyrt.functional import _contiguous, _make, _xp, dim_index
from pyrt.linalg._common import tensor_array, type_name, unbroadcast
from pyrt.matmul import matmul

__all__ = ["cross", "diagonal", "matmul", "multi_dot", "vander", "vecdot"]


def _chain_order(dims):
    """The cheapest parenthesization of a chain of matrices, matrix i being dims[i] by
    dims[i + 1]: the classic dynamic program over sub-chains, cost[i][j] the fewest scalar
    multiplications that compute the product of matrices i..j. split[i][j] is where that
    product divides."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def multi_dot(tensors):
    """The product of a chain of matrices in its cheapest order, as torch.linalg.multi_dot:
    the first may be a 1-D row vector and the last a 1-D column vector (their dims dropped
    from the result); the others are 2-D."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    arrays = [tensor_array(t, "multi_dot", "tensors") for t in tensors]
    for i, a in enumerate(arrays):
        if i in (0, n - 1) and a.ndim not in (1, 2):
            which = "first" if i == 0 else "last"
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                               f"{a.ndim}D")
        if 0 < i < n - 1 and a.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {a.ndim}D")
    mats = [F.reshape(tensors[0], (1, -1)) if arrays[0].ndim == 1 else tensors[0],
            *tensors[1:-1],
            F.reshape(tensors[-1], (-1, 1)) if arrays[-1].ndim == 1 else tensors[-1]]
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(arrays[i].shape)} and {list(arrays[i + 1].shape)} "
                               f"cannot be multiplied")
    split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    out = product(0, n - 1)
    shape = out.shape[:1] * (arrays[0].ndim == 2) + out.shape[1:] * (arrays[-1].ndim == 2)
    return F.reshape(out, shape) if shape != out.shape else out


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along `dim` (broadcasting the others), as
    torch.linalg.cross. For out = cross(x, y) and a loss gradient g: dx = cross(y, g) and
    dy = cross(g, x)."""
    a, b = tensor_array(input, "linalg.cross", "input"), tensor_array(other, "linalg.cross",
                                                                      "other")
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    at = dim_index(dim, a.ndim)
    if a.shape[at] != 3 or b.shape[at] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[at]} and {b.shape[at]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.cross: expected both inputs to have the same dtype, got "
                           f"{type_name(a.dtype)} and {type_name(b.dtype)}")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError(f"linalg.cross: the shapes {list(a.shape)} and {list(b.shape)} "
                           f"do not broadcast") from None
    xp = _xp(a)
    out = _contiguous(xp.cross(a, b, axis=at))
    if a.dtype.kind != "f":
        return _make(out, (input, other), None)
    return _make(out, (input, other), lambda g: (
        _contiguous(unbroadcast(xp.cross(b, g, axis=at), a.shape))
        if input._requires_grad else None,
        _contiguous(unbroadcast(xp.cross(g, a, axis=at), b.shape))
        if other._requires_grad else None))


def vecdot(x, y, *, dim=-1):
    """The dot products of the vectors along `dim` (the other dims broadcast): sum(x * y,
    dim), as torch.linalg.vecdot for real tensors, gradients through the product and sum."""
    tensor_array(x, "linalg.vecdot", "x")
    tensor_array(y, "linalg.vecdot", "y")
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The `offset`-th diagonals of the matrices spanned by dims dim1 and dim2, as the last
    dim of the result (torch.linalg.diagonal); the gradient puts them back into zeros."""
    a = tensor_array(A, "linalg.diagonal")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"linalg.diagonal(): argument 'offset' must be int, got "
                        f"{type(offset).__name__}")
    d1, d2 = dim_index(dim1, a.ndim), dim_index(dim2, a.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    xp = _xp(a)
    out = _contiguous(xp.diagonal(a, int(offset), d1, d2))

    def backward(g):
        grad = xp.zeros(a.shape, a.dtype)
        view = xp.moveaxis(grad, (d1, d2), (-2, -1))  # a view: writes land in grad
        i = xp.arange(g.shape[-1])
        view[..., i + max(-offset, 0), i + max(offset, 0)] = g
        return (grad,)

    return _make(out, (A,), backward, reads=False)


def vander(x, *, N=None):
    """The Vandermonde matrices of the vectors along x's last dim, as torch.linalg.vander:
    out[..., i, j] = x[..., i] ** j for j < N (N defaults to x's length), x's dtype (int64
    powers are exact). The gradient is sum_j j x^(j-1) g_j, the earlier powers times j."""
    a = tensor_array(x, "linalg.vander", "x")
    if a.dtype.kind == "b":
        raise RuntimeError("linalg.vander supports floating point, complex, and integer "
                           "tensors, but got Bool")
    if a.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least 1 dimension, got a 0-d tensor")
    if N is None:
        N = a.shape[-1]
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)):
        raise TypeError(f"linalg.vander(): argument 'N' must be int, not {type(N).__name__}")
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    xp = _xp(a)
    # the powers by repeated products: x^j = x^(j-1) x, exact for integers
    powers = xp.empty(a.shape + (int(N),), a.dtype)
    powers[..., 0] = 1
    for j in range(1, int(N)):
        powers[..., j] = powers[..., j - 1] * a
    if a.dtype.kind != "f":
        return _make(powers, (x,), None)
    factors = xp.arange(1, int(N), dtype=a.dtype)
    return _make(powers, (x,), lambda g: (
        _contiguous((g[..., 1:] * factors * powers[..., :-1]).sum(axis=-1)),))
