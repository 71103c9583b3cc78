"""Selecting elements: where (one of two tensors by a condition), masked_fill and
masked_select, with their gradients; nonzero, unique and bincount, which have none.
``pyrt.functional`` exports them beside its other ops."""

import builtins
import numbers

import numpy as np

from pyrt.functional import _contiguous, _describe, _make, _tensor, _unbroadcast, _xp, result_dtype
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, broadcast_shape, checked_flag

__all__ = ["bincount", "masked_fill", "masked_select", "nonzero", "scalar_as", "unique",
           "where"]


def where(condition, input, other):
    """`input` where `condition` (a bool tensor) holds, else `other`, the three broadcast
    together, as torch.where. The result's dtype is promoted as in arithmetic (a number is
    taken as it is there); a float32 result carries gradients to `input` where the condition
    holds and to `other` elsewhere, summed back to their shapes."""
    Tensor = _tensor()
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if getattr(cond, "dtype", None) != np.bool_:
        raise TypeError(f"where(): condition must be a bool tensor, got "
                        f"{_describe(condition)}")
    dtype = result_dtype("where", input, other)
    for x, name in ((input, "input"), (other, "other")):
        if dtype is F32 and isinstance(x, Tensor) and x._data.dtype not in (F32, np.bool_) \
                and x._data.dtype.kind == "f":  # float64 would be rounded to float32 silently
            raise TypeError(f"where(): {name} is {_describe(x)}, and pyrt computes where "
                            f"in float32: convert it with .float()")
    tensors = [x for x in (condition, input, other) if isinstance(x, Tensor)]
    xp = _xp(tensors[0]._data) if tensors else np
    # a number converted as PyTorch converts it: 1e40 cannot become a float32 inf silently
    a, b = (x._data if isinstance(x, Tensor)
            else scalar_as(x, dtype, f"where(): {name}") if isinstance(x, numbers.Number)
            else x
            for x, name in ((input, "input"), (other, "other")))
    try:
        out = xp.asarray(xp.where(cond, a, b)).astype(dtype, copy=False)
    except ValueError as exc:  # shapes that do not broadcast
        raise ValueError(f"where(): {exc}") from None
    if dtype is not F32:
        return Tensor(out)
    out = _contiguous(out)
    sides = [(x, holds) for x, holds in ((input, True), (other, False)) if isinstance(x, Tensor)]
    if cond is getattr(condition, "_data", None) and builtins.any(
            x._requires_grad for x, _ in sides):
        cond = cond.copy()  # a later write to the condition must not move the gradient

    def backward(g):
        zero = xp.zeros((), F32)
        return tuple(
            _unbroadcast(xp.where(cond, g, zero) if holds else xp.where(cond, zero, g), x.shape)
            if x._requires_grad else None
            for x, holds in sides)

    return _make(out, tuple(x for x, _ in sides), backward, reads=False)


def scalar_as(value, dtype, name):
    """The number `value` (a bool, an int or a float) as a scalar of `dtype`, converted as
    PyTorch converts a fill value: toward zero into integers, nonzero to True. A value outside
    the dtype's range (nan into an integer, 1e40 into float32) is PyTorch's RuntimeError
    rather than a wrapped or infinite number."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number or a bool, got {type(value).__name__}")
    dtype = np.dtype(dtype)
    exact = isinstance(value, numbers.Integral)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not ((exact or np.isfinite(value)) and info.min <= value <= info.max):
            raise RuntimeError(f"{name} {value!r} cannot be converted to {dtype} without "
                               f"overflow")
        return dtype.type(int(value))  # int() rounds toward zero
    if (dtype.kind == "f" and (exact or np.isfinite(value))
            and builtins.abs(value) > float(np.finfo(dtype).max)):
        raise RuntimeError(f"{name} {value!r} cannot be converted to {dtype} without overflow")
    return dtype.type(value)


def masked_fill(input, mask, value):
    """`input` with `value` where `mask` holds, as torch's out-of-place masked_fill: mask is a
    bool tensor that broadcasts with input, the result has their broadcast shape and input's
    dtype, value (a number or a 0-d tensor) converted to it as PyTorch converts it (toward
    zero into integers). The gradient goes to input where the mask does not hold and to a
    value tensor, summed, where it does."""
    Tensor = _tensor()
    xd = _input_array(input, "masked_fill")
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_fill(): argument 'mask' must be a bool Tensor, got "
                        f"{type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._data.dtype}")
    xp = _xp(xd)
    if _xp(mask._data) is not xp:
        raise RuntimeError(f"masked_fill(): expected mask on the device of input, "
                           f"{input.device}, got {mask.device}")
    broadcast_shape(xd.shape, mask.shape)
    parents = (input,)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        if value._requires_grad and xd.dtype == F32:  # (an integer result has no gradient)
            parents = (input, value)
        value = value._data.item()
    fill = scalar_as(value, xd.dtype, "masked_fill(): value").item()
    m = mask._data.copy() if input._requires_grad or len(parents) == 2 else mask._data
    out = _contiguous(xp.where(m, fill, xd).astype(xd.dtype, copy=False))

    def backward(g):
        zero = F32.type(0)
        dx = _unbroadcast(xp.where(m, zero, g), input.shape) if input._requires_grad else None
        if len(parents) == 1:
            return (dx,)
        return dx, xp.asarray(xp.where(m, g, zero).sum(dtype=F32))

    return _make(out, parents, backward, reads=False)


def _bool_mask(mask, xd, name):
    """The array of `mask`, a bool tensor on the device of input's array `xd` whose shape
    broadcasts with it, as PyTorch checks it."""
    if not isinstance(mask, _tensor()):
        raise TypeError(f"{name}(): argument 'mask' must be a bool Tensor, got "
                        f"{type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"{name}: expected BoolTensor for mask, got {mask._data.dtype}")
    if _xp(mask._data) is not _xp(xd):
        raise RuntimeError(f"{name}(): expected mask on the device of input")
    broadcast_shape(xd.shape, mask.shape)
    return mask._data


def masked_select(input, mask):
    """The elements of `input` where `mask` holds, input and mask broadcast together, in
    order, as a 1-D tensor; the gradient goes back to those places (summed over the copies
    a broadcast input made)."""
    xd = _input_array(input, "masked_select")
    m = _bool_mask(mask, xd, "masked_select")
    xp = _xp(xd)
    shape = np.broadcast_shapes(xd.shape, m.shape)
    full_mask = xp.broadcast_to(m, shape).copy()  # a copy: the gradient must not move
    out = _contiguous(xp.broadcast_to(xd, shape)[full_mask])

    def backward(g):
        dx = xp.zeros(shape, F32)
        dx[full_mask] = g
        return (_unbroadcast(dx, xd.shape),)

    return _make(out, (input,), backward, reads=False)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements (NaN is nonzero), in row-major order: an (n, ndim)
    int64 tensor, or with as_tuple a tuple of ndim 1-D tensors, one per dim (a 0-d input
    counts as 1-D there), as torch.nonzero."""
    xd = _input_array(input, "nonzero")
    xp = _xp(xd)
    Tensor = _tensor()
    if as_tuple:
        return tuple(Tensor(i.astype(I64)) for i in xp.nonzero(xd.reshape(xd.shape or (1,))))
    if xd.ndim == 0:
        return Tensor(xp.zeros((int(bool(xd != 0)), 0), I64))
    return Tensor(_contiguous(xp.argwhere(xd).astype(I64)))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements, sorted (as PyTorch's CPU unique returns them whatever `sorted`
    says), NaNs each distinct; with return_inverse, where each element of input went (input's
    shape), with return_counts how often each occurs, in a tuple after the values. No
    gradient, as in PyTorch."""
    xd = _input_array(input, "unique")
    checked_flag(sorted, "unique", "sorted")
    return_inverse = checked_flag(return_inverse, "unique", "return_inverse")
    return_counts = checked_flag(return_counts, "unique", "return_counts")
    if dim is not None:
        raise NotImplementedError("unique(dim=...) is not supported: pyrt's unique takes the "
                                  "distinct elements of the flattened tensor")
    xp = _xp(xd)
    Tensor = _tensor()
    flat = xd.reshape(-1)
    order = xp.argsort(flat, kind="stable")  # NaNs last, each a value of its own
    ordered = flat[order]
    starts = xp.ones(flat.shape, bool)
    if flat.size:
        starts[1:] = ordered[1:] != ordered[:-1]
    values = Tensor(_contiguous(ordered[starts]))
    if not (return_inverse or return_counts):
        return values
    out = [values]
    if return_inverse:
        inverse = xp.empty(flat.shape, I64)
        inverse[order] = xp.cumsum(starts) - 1
        out.append(Tensor(inverse.reshape(xd.shape)))
    if return_counts:
        bounds = xp.concatenate([xp.flatnonzero(starts), xp.asarray([flat.size])])
        out.append(Tensor(_contiguous(xp.diff(bounds).astype(I64))))
    return tuple(out)


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in `input`, a 1-D tensor of non-negative
    integers (at least minlength counts): int64, or with `weights` (a tensor of input's
    shape) the sums of the weights at each value, in the weights' floating-point dtype. No
    gradient, as in PyTorch."""
    xd = _input_array(input, "bincount")
    if xd.dtype.kind == "f":
        raise NotImplementedError(f'"bincount" is not implemented for {xd.dtype} tensors')
    if isinstance(minlength, bool) or not isinstance(minlength, numbers.Integral):
        raise TypeError(f"bincount(): argument 'minlength' must be an int, got "
                        f"{type(minlength).__name__}")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if xd.ndim != 1 or (xd.size and bool((xd < 0).any())):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    xp = _xp(xd)
    Tensor = _tensor()
    if weights is None:
        return Tensor(xp.bincount(xd.astype(I64), minlength=minlength).astype(I64))
    if not isinstance(weights, Tensor):
        raise TypeError(f"bincount(): argument 'weights' must be a Tensor, got "
                        f"{type(weights).__name__}")
    if weights.shape != xd.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = weights._data
    dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    counts = xp.bincount(xd.astype(I64), weights=w.astype(np.float64), minlength=minlength)
    return Tensor(counts.astype(dtype))
