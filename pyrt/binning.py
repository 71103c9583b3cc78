"""Placing values among boundaries, as PyTorch's searchsorted, bucketize and histc: integer
positions and counts, outside autograd (none has a gradient in PyTorch)."""

import numbers

import numpy as np

from pyrt.functional import _contiguous, _tensor, _xp
from pyrt.ops._checks import I64
from pyrt.pointwise import checked_flag

__all__ = ["bucketize", "histc", "searchsorted"]


def _side(name, right, side):
    """"left" or "right" from searchsorted's two ways of saying it, which must agree."""
    right = checked_flag(right, name, "right")
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise RuntimeError(f"{name}(): side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError(f"{name}(): side and right can't be set to opposites, got side of "
                           f"left while right was True")
    return side


def _values(input, name):
    """(the values' array, whether they were one number)."""
    if isinstance(input, _tensor()):
        return input._data, False
    if isinstance(input, numbers.Real):
        return np.asarray(input), True
    raise TypeError(f"{name}(): argument 'input' must be a Tensor or a number, got "
                    f"{type(input).__name__}")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value of input would go in sorted_sequence to keep it sorted: the first
    such place ("left"), or the last (right=True or side="right"), as torch.searchsorted.
    sorted_sequence is 1-D, or has input's leading dims and one row of boundaries for each
    row of values; sorter, if given, the indices that sort it. int64 (int32 with
    out_int32)."""
    if not isinstance(sorted_sequence, _tensor()):
        raise TypeError(f"searchsorted(): argument 'sorted_sequence' must be a Tensor, got "
                        f"{type(sorted_sequence).__name__}")
    side = _side("searchsorted", right, side)
    out_int32 = checked_flag(out_int32, "searchsorted", "out_int32")
    bounds = sorted_sequence._data
    values, scalar = _values(input, "searchsorted")
    xp = _xp(bounds)
    if bounds.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor "
                           "must match, but we got boundaries tensor [] and input value tensor "
                           f"{list(values.shape)}")
    if bounds.ndim > 1 and (scalar or bounds.shape[:-1] != values.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(bounds.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        if not isinstance(sorter, _tensor()) or sorter._data.dtype != I64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype")
        if sorter.shape != bounds.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(bounds.shape)} and "
                               f"sorter tensor {list(sorter.shape)}")
        order = sorter._data
        if order.size and (int(order.min()) < 0 or int(order.max()) >= bounds.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        bounds = xp.take_along_axis(bounds, order, axis=-1)
    if bounds.ndim == 1:
        places = xp.searchsorted(bounds, values, side=side)
    else:  # one search per row of boundaries
        rows = bounds.reshape(-1, bounds.shape[-1])
        wanted = values.reshape(rows.shape[0], -1)
        places = xp.stack([xp.searchsorted(b, v, side=side) for b, v in zip(rows, wanted)])
        places = places.reshape(values.shape)
    dtype = np.int32 if out_int32 else I64
    return _tensor()(_contiguous(xp.asarray(places, dtype=dtype)))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of input among the 1-D sorted `boundaries`, as
    torch.bucketize: searchsorted(boundaries, input, right=right)."""
    if not isinstance(boundaries, _tensor()):
        raise TypeError(f"bucketize(): argument 'boundaries' must be a Tensor, got "
                        f"{type(boundaries).__name__}")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def histc(input, bins=100, min=0, max=0):
    """The counts of input's elements in `bins` equal bins over [min, max] (the elements'
    own range when both are 0; widened by 1 each way when it is one point), as torch.histc:
    elements outside are left out, one at max counts in the last bin. In input's dtype,
    floating point only."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"histc(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    xd = input._data
    if xd.dtype.kind != "f":
        raise NotImplementedError(f'"histc" is not implemented for {xd.dtype} tensors: it '
                                  f'takes floating point')
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral):
        raise TypeError(f"histc(): argument 'bins' must be an int, got {type(bins).__name__}")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    for value, arg in ((min, "min"), (max, "max")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"histc(): argument '{arg}' must be a number, got "
                            f"{type(value).__name__}")
    xp = _xp(xd)
    low, high = float(min), float(max)
    if low == high == 0 and xd.size:
        low, high = float(xd.min()), float(xd.max())
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    if low == high:
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low}, {high}] is not finite")
    flat = xd.reshape(-1).astype(np.float64)
    inside = flat[(flat >= low) & (flat <= high)]  # (NaN is neither)
    # the bin of each element: its offset from low in bin widths, max in the last bin
    place = xp.floor((inside - low) * bins / (high - low)).astype(I64)
    counts = xp.bincount(xp.minimum(place, bins - 1), minlength=bins)
    return _tensor()(_contiguous(counts.astype(xd.dtype)))
