"""Writing a source tensor's values at chosen places of the input, as PyTorch's
masked_scatter, put and index_reduce. The results are new tensors (the Tensor methods ending
in _ write them back in place); each gradient goes back through the same places.

masked_scatter fills the places where a mask holds with source's first elements in
row-major order; put writes (or, with accumulate, adds) source's elements at positions of the
flattened input; index_reduce combines slices of source into the input's slices along a dim
that an index vector names, which is scatter_reduce with that vector spread over source's
shape, so the two share their reductions and gradients.
"""

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _unbroadcast, _xp, dim_index, reshape
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, checked_flag
from pyrt.scatter import _flat_places, _index_vector, _name, _scatter_reduce, _source

__all__ = ["index_reduce", "masked_scatter", "put"]

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _same_dtype_source(source, xd, name):
    if not isinstance(source, _tensor()):
        raise TypeError(f"{name}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source._data.dtype != xd.dtype:
        raise RuntimeError(f"{name}: expected self and source to have same dtypes but got "
                           f"{_name(xd.dtype)} and {_name(source._data.dtype)}")
    if _xp(source._data) is not _xp(xd):
        raise RuntimeError(f"{name}(): expected source on the device of input")
    return source._data


def masked_scatter(input, mask, source):
    """input with the places where `mask` (a bool tensor broadcasting with input) holds
    filled by source's first elements, in row-major order; the result has the broadcast
    shape. Gradients: g where the mask does not hold to input (summed back to its shape), g
    at the places it does to source's first elements, 0 to the rest of source."""
    xd = _input_array(input, "masked_scatter")
    if not isinstance(mask, _tensor()):
        raise TypeError(f"masked_scatter(): argument 'mask' must be Tensor, not "
                        f"{type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_name(mask._data.dtype)}")
    sd = _same_dtype_source(source, xd, "masked_scatter")
    xp = _xp(xd)
    try:
        shape = np.broadcast_shapes(xd.shape, mask._data.shape)
    except ValueError:
        raise RuntimeError(f"masked_scatter(): mask of shape {list(mask._data.shape)} does not "
                           f"broadcast with input of shape {list(xd.shape)}") from None
    places = xp.broadcast_to(mask._data, shape).copy()  # (a later write to mask moves nothing)
    count = int(places.sum())
    if count > sd.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = xp.broadcast_to(xd, shape).copy()
    out[places] = sd.reshape(-1)[:count]

    def backward(g):
        dx = ds = None
        if input._requires_grad:
            dx = _unbroadcast(xp.where(places, F32.type(0), g), xd.shape)
        if source._requires_grad:
            ds = xp.zeros(sd.size, F32)
            ds[:count] = g[places]
            ds = ds.reshape(sd.shape)
        return dx, ds

    return _make(_contiguous(out), (input, source), backward, reads=False)


def put(input, index, source, accumulate=False):
    """input with its flattened elements at `index` (an int64 tensor, negative positions
    counting from the end) set to source's elements (added, repeated positions adding up,
    with accumulate); source has as many elements as index. Gradients: g outside those
    positions (everywhere with accumulate) to input, g at them to source."""
    xd = _input_array(input, "put")
    accumulate = checked_flag(accumulate, "put", "accumulate")
    if not isinstance(index, _tensor()):
        raise TypeError(f"put(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype != I64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_name(index._data.dtype)}")
    if not isinstance(source, _tensor()):
        raise TypeError(f"put(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    sd = source._data
    if sd.dtype != xd.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_name(xd.dtype)} and source.dtype = "
                           f"{_name(sd.dtype)}")
    idx = index._data
    if sd.size != idx.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {sd.size}, index.numel() = "
                         f"{idx.size}")
    xp = _xp(xd)
    places = _flat_places(idx.reshape(-1), xd.size)
    out = xd.copy().reshape(-1)
    values = sd.reshape(-1)
    if accumulate:
        xp.add.at(out, places, values)
    else:
        out[places] = values

    def backward(g):
        flat = g.reshape(-1)
        dx = ds = None
        if input._requires_grad:
            dx = g
            if not accumulate:
                dx = flat.copy()
                dx[places] = 0
                dx = dx.reshape(xd.shape)
        if source._requires_grad:
            ds = _contiguous(flat[places].reshape(sd.shape))
        return dx, ds

    return _make(out.reshape(xd.shape), (input, source), backward, reads=False)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with the slices of `source` along `dim` combined into input's slices at
    index[i] by `reduce` ("prod", "mean", "amax", "amin"), with input's own values unless
    include_self is False; index an int64 (or int32) vector of source.size(dim) positions,
    source of input's shape but along dim. Gradients as scatter_reduce's: for amax and amin
    shared evenly among the values equal to the result, for prod the product of the others,
    for mean g divided by the count at each place."""
    xd = _input_array(input, "index_reduce")
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    idx = _index_vector(index, "index_reduce_", (I64, np.dtype(np.int32)), RuntimeError)
    at = dim_index(dim, max(xd.ndim, 1))
    sd = _source("index_reduce_", xd, at, idx, source)
    size = (xd.shape or (1,))[at]
    if idx.size and (int(idx.min()) < -size or int(idx.max()) >= size):
        raise IndexError("index out of range in self")
    xp = _xp(xd)
    # index[i] for every element of source's slice i: the index tensor of scatter_reduce
    spread = xp.broadcast_to((idx % size if size else idx).reshape(
        (1,) * at + (-1,) + (1,) * (sd.ndim - at - 1)), sd.shape)
    src = source if source._data.shape == sd.shape else reshape(source, sd.shape)
    return _scatter_reduce("index_reduce", input, at, _tensor()(_contiguous(spread)), src,
                           reduce, include_self)

