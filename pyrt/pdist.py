"""torch.nn.functional.pdist: the p-norm distance between every two rows of a matrix x
[N, M], condensed into a vector of N (N - 1) / 2 distances, the pairs (i, j) with i < j in
row-major order: (0, 1), (0, 2), ..., (0, N - 1), (1, 2), ...

The differences x[i] - x[j] of all pairs are formed at once ([pairs, M], kept for the
backward pass: about N^2 M / 2 floats) and reduced along M: p = 0 counts the nonzero
differences, p = inf takes the largest |difference|, other p give (sum |d|^p)^(1/p).

The gradient of each pair's distance with respect to its difference is PyTorch's
(_pdist_backward), written beside the forward pass: 0 where the distance is 0 (and, for
p < 1, where a difference is 0); for p = inf the full gradient to every coordinate that
reaches the maximum. It flows to row i with a plus sign and to row j with a minus sign.
"""

import numbers

import numpy as np

from pyrt.functional import _make, _tensor, _xp

__all__ = ["pdist"]


def _pairs(xp, n):
    """The row indices (i, j) of the pairs i < j, in row-major order."""
    i, j = np.triu_indices(n, 1)
    return xp.asarray(i), xp.asarray(j)


def _distances(d, a, p):
    """The p-norm of each row of the differences d ([pairs, M]; a = |d|)."""
    if p == 0:
        return (d != 0).sum(axis=1, dtype=d.dtype)
    if p == 1:
        return a.sum(axis=1, dtype=d.dtype)
    if p == 2:
        return _xp(d).sqrt((d * d).sum(axis=1, dtype=d.dtype))
    if p == np.inf:
        return a.max(axis=1)
    return (a ** p).sum(axis=1, dtype=d.dtype) ** (1 / p)


def _distance_grad(d, a, dist, g, p):
    """The gradient of the distances (g, [pairs]) with respect to the differences d."""
    xp = _xp(d)
    dist, g = dist[:, None], g[:, None]
    if p == 0:
        return xp.zeros_like(d)
    if p == 1:
        return xp.sign(d) * g
    if p == np.inf:
        return xp.sign(d) * (a == dist) * g
    vanishes = dist == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 2:
            grad = g * d / dist
        elif p < 2:
            grad = xp.sign(d) * a ** (p - 1) * g / dist ** (p - 1)
            if p < 1:  # |d|^(p - 1) is infinite at d = 0
                vanishes = vanishes | (d == 0)
        else:
            grad = d * a ** (p - 2) * g / dist ** (p - 1)
    return xp.where(vanishes, d.dtype.type(0), grad)


def pdist(input, p=2):
    """The distances between the rows of input [N, M]: [N (N - 1) / 2] (see the module's
    doc); p >= 0, inf included."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"pdist(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"pdist(): argument 'p' (position 2) must be float, not "
                        f"{type(p).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    p = float(p)
    if not p >= 0:  # (nan too)
        raise RuntimeError("pdist only supports non-negative p values")
    xp = _xp(x)
    n, m = x.shape
    i, j = _pairs(xp, n)
    d = x[i] - x[j]
    a = xp.abs(d)
    if m == 0 or len(i) == 0:
        dist = xp.zeros(len(i), x.dtype)
    else:
        with np.errstate(over="ignore"):
            dist = _distances(d, a, p)

    def backward(g):
        grad_d = _distance_grad(d, a, dist, g, p).astype(x.dtype, copy=False)
        grad = xp.zeros(x.shape, x.dtype)
        xp.add.at(grad, i, grad_d)
        xp.add.at(grad, j, -grad_d)
        return (grad,)

    return _make(xp.ascontiguousarray(dist), (input,), backward)
