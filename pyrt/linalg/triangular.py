"""Triangular systems, as torch.linalg.solve_triangular: X with T X = B or X T = B for the
upper or lower triangle T of A (its diagonal taken as ones if unitriangular), by forward or
back substitution (SciPy's trtrs) on float64 copies, with the gradients."""

import numpy as np

from pyrt.functional import _make, _xp
from pyrt.linalg._common import (
    matrices,
    mT,
    narrow,
    tensor_array,
    triangular_solve,
    unbroadcast,
    wide,
)

__all__ = ["solve_triangular"]


def triangle(g, upper, unitriangular):
    """The part of g on the triangle a triangular solve reads (its diagonal too unless
    unitriangular)."""
    xp = _xp(g)
    return xp.triu(g, int(unitriangular)) if upper else xp.tril(g, -int(unitriangular))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with T X = B (left) or X T = B (left=False), T the upper (or lower) triangle of
    square A with ones on its diagonal if unitriangular; batch dims broadcast. A zero on T's
    diagonal gives infinities or NaNs, as in PyTorch, not an error. Gradients: for T X = B,
    dB = T^-T dX and dT = -dB X^T on T's triangle; X T = B is T^T X^T = B^T."""
    name = "linalg.solve_triangular"
    a = matrices(A, name, square=True)
    b = tensor_array(B, name, "B")
    if b.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if b.dtype.kind != "f":
        b = b.astype(a.dtype)  # PyTorch promotes integer and bool right-hand sides
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX' if left else 'XA'} = B ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{name}: the batch dims of A {list(a.shape)} and B "
                           f"{list(b.shape)} do not broadcast") from None
    upper, unitriangular = bool(upper), bool(unitriangular)
    a64 = wide(a)
    # the system M X = B_eff: M = T (left) or T^T, whose triangle is the other one
    m = a64 if left else mT(a64)
    m_lower = not upper if left else upper
    x = triangular_solve(m, wide(b if left else mT(b)), m_lower, unitriangular)

    def backward(g):
        gx = wide(g if left else mT(g))
        gb = triangular_solve(mT(m), gx, not m_lower, unitriangular)
        grads = [None, None]
        if A._requires_grad:
            gm = -(gb @ mT(x))
            ga = triangle(unbroadcast(gm if left else mT(gm), a.shape), upper, unitriangular)
            grads[0] = narrow(ga, a.dtype)
        if B._requires_grad:
            gb = unbroadcast(gb if left else mT(gb), b.shape)
            grads[1] = narrow(gb, a.dtype)
        return tuple(grads)

    return _make(narrow(x if left else mT(x), a.dtype), (A, B), backward)
