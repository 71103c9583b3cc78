"""Statistics of order, as PyTorch's: kthvalue, mode, nanmedian, quantile and nanquantile
(five interpolations), and aminmax. Each finds where its values lie in the input and
gathers them there (pyrt.shapes.gather), so that the gradient goes back to those elements;
quantile interpolates between two gathered neighbours with ordinary arithmetic, whose
gradients do the rest."""

import numbers
from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp, dim_index
from pyrt.functional import reshape as _reshape
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, checked_flag
from pyrt.reductions import amax, amin, median
from pyrt.selection import where
from pyrt.shapes import gather, permute, sort, squeeze

__all__ = ["aminmax", "kthvalue", "mode", "nanmedian", "nanquantile", "quantile"]

kthvalue_result = namedtuple("kthvalue", ("values", "indices"))
mode_result = namedtuple("mode", ("values", "indices"))
nanmedian_result = namedtuple("nanmedian", ("values", "indices"))
aminmax_result = namedtuple("aminmax", ("min", "max"))
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _picked(x, at, index, keepdim, result):
    """(values, indices) of a selection along dim `at`: `index` (an array with x's dims,
    1 along `at`) gathered, keepdim or that dim squeezed away."""
    indices = _tensor()(_contiguous(index.astype(I64)))
    values = gather(x, at, indices)
    if not keepdim and x.ndim:
        values, indices = squeeze(values, at), squeeze(indices, at)
    elif not x.ndim:
        values, indices = _reshape(values, ()), _reshape(indices, ())
    return result(values, indices)


def _line(x, name, dim, keepdim):
    """(x's array with a 0-d one as one element in one dim, dim counted from 0, keepdim)."""
    xd = _input_array(x, name)
    keepdim = checked_flag(keepdim, name, "keepdim")
    at = dim_index(dim, xd.ndim)
    line = xd.reshape(xd.shape or (1,))
    if line.shape[at] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {at} to have non-zero size.")
    return line, at, keepdim


def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along dim (k from 1), as
    torch.kthvalue; NaN counts as the largest value. The gradient goes to that element."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"kthvalue(): argument 'k' must be an int, got {type(k).__name__}")
    line, at, keepdim = _line(x, "kthvalue", dim, keepdim)
    if not 1 <= k <= line.shape[at]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {at}")
    order = _xp(line).argsort(line, axis=at, kind="stable")  # NaNs last
    index = order[(slice(None),) * at + (slice(k - 1, k),)]
    return _picked(x, at, index, keepdim, kthvalue_result)


def mode(x, dim=-1, keepdim=False):
    """(values, indices) of the most frequent value along dim, the smallest of those tied,
    and the last place it occurs, as PyTorch's CPU mode (each NaN counts once). The gradient
    goes to that element."""
    line, at, keepdim = _line(x, "mode", dim, keepdim)
    xp = _xp(line)
    v = xp.moveaxis(line, at, -1)
    order = xp.argsort(v, axis=-1, kind="stable")
    ordered = xp.take_along_axis(v, order, axis=-1)
    n = v.shape[-1]
    # runs of equal values in sorted order: each run's length, read at its last element
    starts = xp.ones(v.shape, bool)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    steps = xp.arange(n)
    run_start = xp.maximum.accumulate(xp.where(starts, steps, 0), axis=-1)
    length = steps - run_start + 1
    ends = xp.ones(v.shape, bool)
    ends[..., :-1] = starts[..., 1:]
    # the first longest run (the smallest value); the stable order puts its last
    # occurrence at the run's end
    best = xp.argmax(xp.where(ends, length, 0), axis=-1)[..., None]
    index = xp.moveaxis(xp.take_along_axis(order, best, axis=-1), -1, at)
    return _picked(x, at, index, keepdim, mode_result)


def nanmedian(x, dim=None, keepdim=False):
    """The lower median of the elements that are not NaN (NaN if all are), as
    torch.nanmedian: of all elements, its gradient shared evenly among the elements equal to
    it; with dim, (values, indices) along it, the gradient going to the element picked."""
    xd = _input_array(x, "nanmedian")
    xp = _xp(xd)
    if dim is None:
        flat = xd.reshape(-1)
        if xd.dtype.kind != "f":  # no NaNs to leave out
            return median(x)
        valid = flat[~xp.isnan(flat)]
        value = xp.asarray(xp.sort(valid)[(valid.size - 1) // 2] if valid.size else np.nan,
                           dtype=xd.dtype)

        def backward(g):
            ties = (xd == value) | (xp.isnan(xd) & xp.isnan(value))
            return (_contiguous(ties * (g / ties.sum(dtype=F32))).astype(F32, copy=False),)

        return _make(value, (x,), backward)
    line, at, keepdim = _line(x, "nanmedian", dim, keepdim)
    order = xp.argsort(line, axis=at, kind="stable")  # NaNs last
    valid = line.shape[at] - (xp.isnan(line).sum(axis=at, keepdims=True)
                              if xd.dtype.kind == "f" else 0)
    middle = xp.maximum((valid - 1) // 2, 0) * xp.ones(order.shape[:at] + (1,) +
                                                       order.shape[at + 1:], I64)
    index = xp.take_along_axis(order, middle.astype(I64), axis=at)
    return _picked(x, at, index, keepdim, nanmedian_result)


def aminmax(x, *, dim=None, keepdim=False):
    """(min, max) over all elements or along dim, as torch.aminmax, each with amin's and
    amax's gradient (shared among ties)."""
    xd = _input_array(x, "aminmax")
    if xd.size == 0 and (dim is None or xd.shape[dim_index(dim, xd.ndim)] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    axes = () if dim is None else dim_index(dim, xd.ndim)
    return aminmax_result(amin(x, axes, keepdim), amax(x, axes, keepdim))


def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a number or a 1-D tensor in [0, 1]) of all elements or along
    dim, as torch.quantile: the sorted values at rank q * (n - 1), interpolated between the
    neighbours by `interpolation`; NaN where a slice holds a NaN. A tensor q adds a first
    dim of its length."""
    return _quantile("quantile", x, q, dim, keepdim, interpolation, skip_nan=False)


def nanquantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile of the elements that are not NaN (NaN where a slice holds nothing else)."""
    return _quantile("nanquantile", x, q, dim, keepdim, interpolation, skip_nan=True)


def _quantile(name, x, q, dim, keepdim, interpolation, skip_nan):
    xd = _input_array(x, name)
    keepdim = checked_flag(keepdim, name, "keepdim")
    if xd.dtype.kind != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if xd.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    xp = _xp(xd)
    scalar_q = not isinstance(q, _tensor())
    if scalar_q:
        if isinstance(q, bool) or not isinstance(q, numbers.Real):
            raise TypeError(f"{name}(): argument 'q' must be a float or a Tensor, got "
                            f"{type(q).__name__}")
        qs = xp.asarray([q], dtype=xd.dtype)
    else:
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q._data.dtype != xd.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qs = q._data.reshape(-1)
    if qs.size and not bool(((qs >= 0) & (qs <= 1)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    # the slices to take quantiles of, along the last dim
    if dim is None:
        at = None
        lines = _reshape(x, (-1,))
    else:
        at = dim_index(dim, xd.ndim)
        lines = _reshape(x, (1,)) if xd.ndim == 0 else x
        order = [d for d in range(lines.ndim) if d != at] + [at]
        lines = permute(lines, order)
    ordered = sort(lines, -1).values  # NaNs last
    od = ordered._data
    n = od.shape[-1]
    nan = xp.isnan(od)
    count = (n - nan.sum(axis=-1, keepdims=True)) if skip_nan else xp.full(
        od.shape[:-1] + (1,), n)
    # the rank of each quantile in each slice, in the input's dtype as PyTorch computes it
    last = xp.maximum(count - 1, 0).astype(xd.dtype)
    ranks = qs * last  # (..., number of q)
    if interpolation == "nearest":
        ranks = xp.rint(ranks)
    below = xp.floor(ranks).astype(I64)
    above = xp.ceil(ranks).astype(I64)
    lo = gather(ordered, -1, _tensor()(_contiguous(below)))
    hi = gather(ordered, -1, _tensor()(_contiguous(above)))
    if interpolation in ("lower", "nearest"):
        out = lo
    elif interpolation == "higher":
        out = hi
    else:
        weight = xp.full(ranks.shape, 0.5, xd.dtype) if interpolation == "midpoint" else \
            (ranks - below).astype(xd.dtype)
        out = lo.lerp(hi, _tensor()(_contiguous(weight)))
    undefined = (count == 0) if skip_nan else nan.any(axis=-1, keepdims=True)
    if bool(undefined.any()):
        out = where(_tensor()(xp.broadcast_to(undefined, out.shape).copy()),
                    xd.dtype.type(np.nan), out)
    # the q dim first, then the reduced shape
    out = permute(out, (out.ndim - 1,) + tuple(range(out.ndim - 1)))
    if keepdim:
        kept = [1] * xd.ndim if at is None else list(xd.shape)
        if at is not None and xd.ndim:
            kept[at] = 1
        out = _reshape(out, (out.shape[0],) + tuple(kept))
    return _reshape(out, out.shape[1:]) if scalar_q else out
