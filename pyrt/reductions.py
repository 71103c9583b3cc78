"""Reductions and scans beyond the kernels' sum, mean and max, computed with array
operations (NumPy's or CuPy's) with their gradients: cumsum, cumprod, prod, norm, logsumexp,
amax, amin, nansum and median. ``pyrt.functional`` exports them beside its other ops."""

import builtins
import numbers
from collections import namedtuple

import numpy as np

from pyrt.functional import (
    _contiguous,
    _make,
    _reduced_shape,
    _tensor,
    _xp,
    dim_index,
    reduction_axes,
)
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, checked_flag

__all__ = ["amax", "amin", "count_nonzero", "cumprod", "cumsum", "logsumexp", "median",
           "nanmean", "nansum", "norm", "prod", "std_mean", "var_mean"]

# what median(dim) returns, as torch.return_types.median
median_result = namedtuple("median", ("values", "indices"))


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


# ---- cumprod, logsumexp, amax and amin, nansum, median ---------------------------------------


def cumprod(x, dim):
    """The running products along `dim`; int64 for integer and bool tensors, as in PyTorch.
    Element k feeds the products k, k+1, ...: its gradient is sum over i >= k of g_i times
    the product of x_j for j <= i, j != k. Before the first zero of a line that is the running
    sum from the far end of g * out, divided by x_k; at the first zero z it is out[z-1] times
    the running-from-the-end sum of g_i * prod(x_j, z < j <= i); past it, 0 (every product
    there holds x_z). So zeros get their exact gradient, with no division by them."""
    xd = _input_array(x, "cumprod")
    at = dim_index(dim, xd.ndim)
    xp = _xp(xd)
    line = xd.reshape(xd.shape or (1,))
    if xd.dtype.kind in "biu":
        return _make(xp.cumprod(line, axis=at, dtype=I64).reshape(xd.shape), (x,), None)
    out = xp.cumprod(line, axis=at).reshape(xd.shape)

    def backward(g):
        v = xp.moveaxis(line, at, -1)
        y = xp.moveaxis(out.reshape(line.shape), at, -1)
        gv = xp.moveaxis(g.reshape(line.shape), at, -1)
        n = v.shape[-1]
        zero = v == 0
        # z: the first zero of each line (n where there is none)
        z = xp.where(zero.any(axis=-1), xp.argmax(zero, axis=-1), n)[..., None]
        k = xp.arange(n)
        from_end = xp.flip(xp.cumsum(xp.flip(gv * y, -1), axis=-1), -1)
        before = k < z
        dx = xp.where(before, from_end / xp.where(before, v, 1), 0)
        if bool(zero.any()):
            after = xp.cumprod(xp.where(k > z, v, 1), axis=-1)  # prod(x_j, z < j <= i)
            tail = xp.where(k >= z, gv * after, 0).sum(axis=-1, keepdims=True)
            head = xp.where(k < z, v, 1).prod(axis=-1, keepdims=True)  # out[z - 1]
            dx = xp.where(k == z, head * tail, dx)
        dx = xp.moveaxis(dx.astype(F32, copy=False), -1, at)
        return (_contiguous(dx.reshape(xd.shape)),)

    return _make(_contiguous(out), (x,), backward)


def _float_input(x, name):
    """x's array as floating point: integers and bools as float32, as PyTorch promotes them
    in functions whose values are not integers."""
    xd = _input_array(x, name)
    return xd if xd.dtype.kind == "f" else xd.astype(F32)


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over `dim` (an int or a sequence), computed stably: m + log(sum(exp(x -
    m))) with m the largest element (0 where that is infinite, so that all -inf gives -inf and
    an inf gives inf). The gradient is g * exp(x - out), the softmax of the reduced slices."""
    xd = _float_input(x, "logsumexp")
    keepdim = checked_flag(keepdim, "logsumexp", "keepdim")
    axis = reduction_axes(dim, xd.ndim, empty_means_all=True)
    xp = _xp(xd)
    with np.errstate(all="ignore"):
        if xd.size:
            m = xp.max(xd, axis=axis, keepdims=True)
            m = xp.where(xp.isfinite(m), m, xd.dtype.type(0))
        else:
            m = xp.zeros(_reduced_shape(xd.shape, axis, keepdims=True), xd.dtype)
        kept = xp.log(xp.exp(xd - m).sum(axis=axis, keepdims=True, dtype=xd.dtype)) + m
    out = _contiguous(kept.reshape(_reduced_shape(xd.shape, axis, keepdim)))

    def backward(g):
        kept_g = g.reshape(kept.shape)
        with np.errstate(all="ignore"):
            return (_contiguous((kept_g * xp.exp(xd - kept)).astype(F32, copy=False)),)

    return _make(out, (x,), backward)


def _extreme(x, name, dim, keepdim):
    """amax or amin (`name`) over `dim` (an int or a sequence; () for all dims), keeping the
    dtype. The gradient is shared evenly among the elements equal to the result, as
    PyTorch shares it: g / count where x equals the result (NaN everywhere in a slice whose
    result is NaN, which equals nothing, as PyTorch gives it)."""
    xd = _input_array(x, name)
    keepdim = checked_flag(keepdim, name, "keepdim")
    axis = reduction_axes(dim, xd.ndim, empty_means_all=True)
    if xd.size == 0:
        axes = range(xd.ndim) if axis is None else np.atleast_1d(axis)
        empty = [a for a in axes if xd.shape[a] == 0]
        if empty or axis is None:
            raise IndexError(f"{name}(): Expected reduction dim {empty[0] if empty else 0} to "
                             f"have non-zero size.")
    xp = _xp(xd)
    reduce = xp.max if name == "amax" else xp.min
    out = xp.asarray(reduce(xd, axis=axis, keepdims=keepdim))
    if xd.dtype.kind in "biu":
        return _make(out, (x,), None)

    def backward(g):
        kept = _reduced_shape(xd.shape, axis, keepdims=True)
        ties = xd == out.reshape(kept)
        with np.errstate(all="ignore"):
            share = g.reshape(kept) / ties.sum(axis=axis, keepdims=True, dtype=F32)
            return (_contiguous((share * ties).astype(F32, copy=False)),)

    return _make(_contiguous(out), (x,), backward)


def amax(x, dim=(), keepdim=False):
    return _extreme(x, "amax", dim, keepdim)


def amin(x, dim=(), keepdim=False):
    return _extreme(x, "amin", dim, keepdim)


def nansum(x, dim=None, keepdim=False):
    """The sum with NaNs taken as 0; int64 for integers and bools. The gradient is g where x
    is not NaN, 0 where it is."""
    xd = _input_array(x, "nansum")
    keepdim = checked_flag(keepdim, "nansum", "keepdim")
    axis = None if dim is None else reduction_axes(dim, xd.ndim, empty_means_all=True)
    xp = _xp(xd)
    if xd.dtype.kind in "biu":
        return _make(xp.asarray(xp.sum(xd, axis=axis, keepdims=keepdim, dtype=I64)), (x,), None)
    nan = xp.isnan(xd)
    out = xp.asarray(xp.where(nan, 0, xd).sum(axis=axis, keepdims=keepdim, dtype=xd.dtype))

    def backward(g):
        kept = g.reshape(_reduced_shape(xd.shape, axis, keepdims=True))
        return (_contiguous(xp.where(nan, F32.type(0), kept).astype(F32, copy=False)),)

    return _make(_contiguous(out), (x,), backward, reads=False)


def median(x, dim=None, keepdim=False):
    """The lower median: of n values sorted, the one at (n - 1) // 2; NaN if any is NaN (as
    PyTorch's median; an empty tensor's is NaN too). Without `dim`, the value, its gradient
    shared evenly among the elements equal to it; with `dim`, (values, indices) along it, as
    torch.median, the gradient going to the element at the index (the first NaN of a slice
    holding one)."""
    xd = _input_array(x, "median")
    keepdim = checked_flag(keepdim, "median", "keepdim")
    xp = _xp(xd)
    exact = xd.dtype.kind in "biu"
    if dim is None:
        flat = xd.reshape(-1)
        if flat.size == 0:
            if exact:
                raise IndexError("median(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            return _make(xp.full((), np.nan, xd.dtype), (x,), lambda g: (xp.zeros(xd.shape, F32),))
        nan = xp.isnan(flat) if not exact else None
        if nan is not None and bool(nan.any()):
            value = xp.asarray(flat[int(xp.argmax(nan))])
        else:
            value = xp.asarray(xp.sort(flat)[(flat.size - 1) // 2])
        if exact:
            return _make(value, (x,), None)

        def backward(g):
            ties = (xd == value) | (xp.isnan(xd) & xp.isnan(value))
            return (_contiguous(ties * (g / ties.sum(dtype=F32))).astype(F32, copy=False),)

        return _make(_contiguous(value), (x,), backward)
    at = dim_index(dim, xd.ndim)
    line = xd.reshape(xd.shape or (1,))
    n = line.shape[at]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {at} to have non-zero size.")
    order = xp.argsort(line, axis=at, kind="stable")  # NaNs sort last
    middle = (n - 1) // 2
    index = order[(slice(None),) * at + (slice(middle, middle + 1),)]
    if not exact:
        nan = xp.isnan(line)
        first_nan = xp.argmax(nan, axis=at, keepdims=True)
        index = xp.where(nan.any(axis=at, keepdims=True), first_nan, index)
    shape = _reduced_shape(xd.shape, at, keepdim) if xd.ndim else ()
    values = xp.take_along_axis(line, index, axis=at)
    indices = (_tensor())(_contiguous(index.astype(I64).reshape(shape)))
    if exact:
        return median_result(_make(_contiguous(values.reshape(shape)), (x,), None), indices)

    def backward(g):
        dx = xp.zeros(line.shape, F32)
        xp.put_along_axis(dx, index, g.reshape(index.shape), axis=at)
        return (dx.reshape(xd.shape),)

    return median_result(_make(_contiguous(values.reshape(shape)), (x,), backward, reads=False),
                         indices)


# ---- count_nonzero, nanmean, var_mean and std_mean -------------------------------------------


def count_nonzero(x, dim=None):
    """How many elements are nonzero (NaN counts), over all dims or `dim` (an int or a
    sequence): int64, no gradient."""
    xd = _input_array(x, "count_nonzero")
    axis = None if dim is None else reduction_axes(dim, xd.ndim, empty_means_all=True)
    xp = _xp(xd)
    return (_tensor())(xp.asarray(xp.count_nonzero(xd, axis=axis), dtype=I64))


def nanmean(x, dim=None, keepdim=False):
    """The mean of the elements that are not NaN (NaN where there are none), as
    torch.nanmean: nansum over their count, with nansum's gradient divided by the count."""
    xd = _input_array(x, "nanmean")
    if xd.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {xd.dtype}")
    keepdim = checked_flag(keepdim, "nanmean", "keepdim")
    axis = None if dim is None else reduction_axes(dim, xd.ndim, empty_means_all=True)
    xp = _xp(xd)
    count = (~xp.isnan(xd)).sum(axis=axis, keepdims=keepdim, dtype=xd.dtype)
    return nansum(x, dim, keepdim) / (_tensor())(xp.asarray(count))


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, with Tensor.var's arguments, as torch.var_mean."""
    _input_array(x, "var_mean")
    return x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, with Tensor.std's arguments, as torch.std_mean."""
    _input_array(x, "std_mean")
    return x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim)
