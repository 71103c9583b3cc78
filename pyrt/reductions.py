"""Reductions and scans beyond the kernels' sum, mean and max, computed with array
operations (NumPy's or CuPy's) with their gradients: cumsum, prod and norm.
``pyrt.functional`` exports them beside its other ops."""

import builtins
import numbers

import numpy as np

from pyrt.functional import _contiguous, _make, _reduced_shape, _xp, dim_index, reduction_axes
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, checked_flag

__all__ = ["cumsum", "norm", "prod"]


def cumsum(x, dim):
    """The running sums along `dim`; int64 for integer and bool tensors, as in PyTorch. Floats
    are summed in float64, as PyTorch's CPU kernel accumulates them, and rounded once. Element
    i feeds the sums i, i+1, ...: its gradient is the running sum of g from the other end."""
    xd = _input_array(x, "cumsum")
    at = dim_index(dim, xd.ndim)
    xp = _xp(xd)
    line = xd.reshape(xd.shape or (1,))  # a 0-d tensor is one line of one element
    if xd.dtype.kind in "biu":
        return _make(xp.cumsum(line, axis=at, dtype=I64).reshape(xd.shape), (x,), None)
    out = xp.cumsum(line, axis=at, dtype=np.float64).astype(xd.dtype).reshape(xd.shape)

    def backward(g):
        g = g.reshape(line.shape)
        back = xp.flip(xp.cumsum(xp.flip(g, at), axis=at, dtype=np.float64), at)
        return (_contiguous(back.astype(F32).reshape(xd.shape)),)

    return _make(out, (x,), backward, reads=False)


def _others_product(v):
    """For each element along v's last axis, the product of the other elements there: the
    running product before it times the running product after it. No division, so that a
    zero among them gives the right value (and two zeros give 0 everywhere)."""
    xp = _xp(v)
    before = xp.ones(v.shape, v.dtype)
    after = xp.ones(v.shape, v.dtype)
    if v.shape[-1] > 1:
        before[..., 1:] = xp.cumprod(v[..., :-1], axis=-1)
        after[..., :-1] = xp.flip(xp.cumprod(xp.flip(v[..., 1:], -1), axis=-1), -1)
    return before * after


def prod(x, dim=None, keepdim=False):
    """The product of all elements, or along `dim` (one dim); int64 for integer and bool
    tensors, as in PyTorch. The gradient of each element is g times the product of the other
    elements it was multiplied with, correct where the input holds zeros."""
    xd = _input_array(x, "prod")
    keepdim = checked_flag(keepdim, "prod", "keepdim")
    axis = None if dim is None else dim_index(dim, xd.ndim)
    if xd.ndim == 0:  # its one dim (-1 or 0) is all of it
        axis = None
    xp = _xp(xd)
    if xd.dtype.kind in "biu":
        return _make(xp.asarray(xp.prod(xd, axis=axis, keepdims=keepdim, dtype=I64)), (x,),
                     None)
    out = xp.asarray(xp.prod(xd, axis=axis, keepdims=keepdim), dtype=xd.dtype)

    def backward(g):
        if axis is None:  # the whole tensor as one line
            others = _others_product(xd.reshape(1, -1))
            return (_contiguous((others * g.reshape(1, 1)).reshape(xd.shape)),)
        kept = g.reshape(_reduced_shape(xd.shape, axis, keepdims=True))
        others = xp.moveaxis(_others_product(xp.moveaxis(xd, axis, -1)), -1, axis)
        return (_contiguous(others * kept),)

    return _make(out, (x,), backward)


def _norm_order(p):
    """The p of norm as a float: a number, inf, -inf, or "fro" (or None), which is 2."""
    if p is None or (isinstance(p, str) and p == "fro"):
        return 2.0
    if isinstance(p, (str, bool, np.bool_)) or not isinstance(p, numbers.Real):
        raise TypeError(f"norm(): p must be a real number, inf, -inf or 'fro', got {p!r:.40}")
    p = float(p)
    if np.isnan(p):
        raise ValueError("norm(): p must not be nan")
    return p


def norm(x, p="fro", dim=None, keepdim=False):
    """The vector p-norm of x over `dim` (all elements if None; an int or a sequence of
    ints), as torch.norm: (sum |x|^p)^(1/p); p = inf is max |x|, -inf min |x|, 0 the count of
    nonzero elements; "fro" is p = 2. The gradients are PyTorch's (norm_backward), 0 where the
    norm is 0 for p >= 1, shared among the ties for p = +-inf."""
    xd = _input_array(x, "norm")
    p = _norm_order(p)
    keepdim = checked_flag(keepdim, "norm", "keepdim")
    if xd.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point tensor as input. "
                           f"Got {xd.dtype}")
    axis = None if dim is None else reduction_axes(dim, xd.ndim, empty_means_all=True)
    xp = _xp(xd)
    a = xp.abs(xd)
    with np.errstate(all="ignore"):
        if p in (np.inf, -np.inf):
            axes = range(xd.ndim) if axis is None else np.atleast_1d(axis)
            if xd.ndim and builtins.any(xd.shape[i] == 0 for i in axes):
                raise RuntimeError(f"norm(): the {p} norm of no elements is undefined (max and "
                                   f"min have no identity): dim {dim} is empty")
            out = (a.max if p > 0 else a.min)(axis=axis, keepdims=keepdim)
        elif p == 0:
            out = (xd != 0).sum(axis=axis, keepdims=keepdim, dtype=xd.dtype)
        elif p == 1:
            out = a.sum(axis=axis, keepdims=keepdim, dtype=xd.dtype)
        elif p == 2:
            out = xp.sqrt((xd * xd).sum(axis=axis, keepdims=keepdim, dtype=xd.dtype))
        else:
            out = (a ** p).sum(axis=axis, keepdims=keepdim, dtype=xd.dtype) ** (1 / p)
    out = xp.asarray(out, dtype=xd.dtype)

    def backward(g):
        kept = _reduced_shape(xd.shape, axis, keepdims=True)
        n, g = out.reshape(kept), g.reshape(kept)
        zero = F32.type(0)
        with np.errstate(all="ignore"):
            if p == 0:
                grad = xp.zeros(xd.shape, F32)
            elif p == 1:
                grad = xp.sign(xd) * g
            elif p == 2:
                grad = xd * xp.where(n == 0, zero, g / n)
            elif p in (np.inf, -np.inf):  # shared among the elements that reach the norm
                ties = (a == n) | xp.isnan(a)
                grad = xp.sign(xd) * ties * (g / ties.sum(axis=axis, keepdims=True, dtype=F32))
            elif p < 1:
                grad = xp.sign(xd) * xp.where(xd == 0, zero, a ** (p - 1)) * g * n ** (1 - p)
            elif p < 2:
                grad = xp.sign(xd) * a ** (p - 1) * xp.where(n == 0, zero, g / n ** (p - 1))
            else:
                grad = xd * a ** (p - 2) * xp.where(n == 0, zero, g / n ** (p - 1))
        return (_contiguous(grad.astype(F32, copy=False)),)

    return _make(out, (x,), backward)
