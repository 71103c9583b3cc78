"""Writing elements at indexed places, as PyTorch's scatter family: scatter (a tensor or a
value, optionally reduced by "add" or "multiply"), scatter_add and scatter_reduce ("sum",
"prod", "mean", "amax", "amin", with or without the input's own values), and the index_*
ops (index_add, index_copy, index_fill, index_put); with take and take_along_dim, which read
at indexed places. The results are new tensors (the Tensor methods ending in _ write them
back in place); each gradient goes back through the same places.

A scatter along `dim` sends element c of src (c a position in index's shape) to the place
of the input that is c with its `dim` coordinate replaced by index[c]. Those places are
computed once as offsets into the flattened input, so that every reduction is one unbuffered
ufunc.at over them (repeated places accumulate) and every gradient one gather from them.
"""

import math
import numbers

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _unbroadcast, _xp, dim_index
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import _input_array, broadcast_shape, checked_flag
from pyrt.selection import scalar_as
from pyrt.shapes import expand, gather

__all__ = ["index_add", "index_copy", "index_fill", "index_put", "scatter", "scatter_add",
           "scatter_reduce", "take", "take_along_dim"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_DTYPE_NAMES = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
                np.dtype(np.int64): "Long", np.dtype(np.int32): "Int",
                np.dtype(np.bool_): "Bool"}


def _name(dtype):
    return _DTYPE_NAMES.get(dtype, str(dtype))


def _index_array(index, name, dtypes, error=RuntimeError):
    """The array of `index`, a tensor of one of `dtypes` (PyTorch's error type otherwise)."""
    if not isinstance(index, _tensor()):
        raise TypeError(f"{name}(): argument 'index' must be a Tensor, got "
                        f"{type(index).__name__}")
    if index._data.dtype not in dtypes:
        wanted = "int32/int64" if len(dtypes) > 1 else "int64"
        raise error(f"{name}(): Expected dtype {wanted} for index, but got "
                    f"{_name(index._data.dtype)}")
    return index._data


def _in_range(places, size, at, name, error=RuntimeError, negative=False):
    """`places` (an integer array) checked against a dim of `size`: in [0, size), or with
    `negative` in [-size, size) and wrapped into [0, size)."""
    if places.size:
        low, high = int(places.min()), int(places.max())
        if low < (-size if negative else 0) or high >= size:
            raise error(f"{name}index {low if low < (-size if negative else 0) else high} is "
                        f"out of bounds for dimension {at} with size {size}")
    return places % size if negative and size else places


def _scatter_places(name, xd, dim, idx, src_shape):
    """(the offsets into flattened x of the places index sends src's elements to, the
    slices of src those elements are): index checked as PyTorch checks it.
    A 0-d tensor counts as one element in one dim, as in gather."""
    rank = max(xd.ndim, 1)
    at = dim_index(dim, xd.ndim)
    shape = xd.shape or (1,)
    places = idx.reshape(idx.shape or (1,))
    src_shape = tuple(src_shape) or (1,)
    if places.size and (places.ndim != rank or len(src_shape) != rank):
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    if places.size and any(places.shape[d] > src_shape[d] or
                           (d != at and places.shape[d] > shape[d]) for d in range(rank)):
        raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                           f"{list(xd.shape)} apart from dimension {at} and to be no larger "
                           f"size than src {list(src_shape)}")
    xp = _xp(xd)
    places = _in_range(places.astype(I64), shape[at], at, "")
    # offset = sum over dims of coordinate * stride, index's value as the coordinate at `at`
    offsets = xp.zeros(places.shape, I64)
    for d in range(places.ndim):
        stride = math.prod(shape[d + 1:])
        coordinate = places if d == at else xp.arange(places.shape[d]).reshape(
            (1,) * d + (-1,) + (1,) * (places.ndim - d - 1))
        offsets = offsets + coordinate * stride
    covered = tuple(slice(0, n) for n in places.shape)
    return offsets.reshape(-1), covered


def _checked_src(src, xd, name):
    if not isinstance(src, _tensor()):
        raise TypeError(f"{name}(): argument 'src' must be a Tensor, got {type(src).__name__}")
    if src._data.dtype != xd.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if _xp(src._data) is not _xp(xd):
        raise RuntimeError(f"{name}(): expected src on the device of input")
    return src._data


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """input with src's elements (or `value` everywhere) written at the places index names
    along dim, as torch.scatter (src may be a number, taken as value). With reduce "add" or
    "multiply", combined with what is there instead (PyTorch's deprecated form, which has
    no derivative). Where index repeats a place, which element lands there is unspecified,
    as in PyTorch. Gradients: g where input was not overwritten; g at its places to src."""
    xd = _input_array(input, "scatter")
    if isinstance(src, numbers.Number):
        src, value = None, src
    if (src is None) == (value is None):
        raise TypeError("scatter(): give one of src (a Tensor) and value (a number)")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    idx = _index_array(index, "scatter", (I64, np.dtype(np.int32)))
    xp = _xp(xd)
    if value is not None:
        fill = scalar_as(value, xd.dtype, "scatter(): value")
        sd, parents = None, (input,)
        offsets, _ = _scatter_places("scatter", xd, dim, idx, idx.shape)
        values = xp.full(offsets.shape, fill, xd.dtype)
    else:
        sd, parents = _checked_src(src, xd, "scatter"), (input, src)
        offsets, covered = _scatter_places("scatter", xd, dim, idx, sd.shape)
        values = sd.reshape(sd.shape or (1,))[covered].reshape(-1)
    if reduce is not None:
        out, _ = _reduced(xd, offsets, values, "sum" if reduce == "add" else "prod", True)
        return _make(out, parents, _no_derivative, reads=False)
    out = xd.copy().reshape(-1)
    out[offsets] = values
    hit = _hit(xp, offsets, xd.size)

    def backward(g):
        flat = g.reshape(-1)
        dx = xp.where(hit, F32.type(0), flat).reshape(xd.shape)
        if sd is None:
            return (dx,)
        return (dx if input._requires_grad else None,
                _placed(xp, flat[offsets], sd.shape, covered) if src._requires_grad else None)

    return _make(out.reshape(xd.shape), parents, backward, reads=False)


def _no_derivative(g):
    raise RuntimeError("derivative for scatter with a reduce argument is not implemented (as "
                       "in PyTorch): use scatter_reduce")


def _hit(xp, offsets, size):
    """A flat bool mask of the places `offsets` name."""
    hit = xp.zeros(size, bool)
    hit[offsets] = True
    return hit


def _placed(xp, values, shape, covered):
    """A float32 array of `shape` (src's) holding `values` in its part `covered`, 0 beyond."""
    out = xp.zeros(shape or (1,), F32)
    out[covered] = values.reshape(out[covered].shape)
    return out.reshape(shape)


def scatter_add(input, dim, index, src):
    """input with src's elements added at the places index names along dim (repeated places
    add up): scatter_reduce with "sum"."""
    return _scatter_reduce("scatter_add", input, dim, index, src, "sum", True)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's elements reduced into the places index names along dim, as
    torch.scatter_reduce: "sum", "prod", "mean" (floor division for integers), "amax" or
    "amin", with input's own value among them if include_self (else the places written
    start from src's alone). Places index does not name keep input's value."""
    return _scatter_reduce("scatter_reduce", input, dim, index, src, reduce, include_self)


def _scatter_reduce(name, input, dim, index, src, reduce, include_self):
    xd = _input_array(input, name)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    include_self = checked_flag(include_self, name, "include_self")
    idx = _index_array(index, name, (I64, np.dtype(np.int32)))
    sd = _checked_src(src, xd, name)
    offsets, covered = _scatter_places(name, xd, dim, idx, sd.shape)
    values = sd.reshape(sd.shape or (1,))[covered].reshape(-1)
    out, counts = _reduced(xd, offsets, values, reduce, include_self)
    xp = _xp(xd)

    def backward(g):
        dx, dv = _reduce_gradients(xp, xd, out, offsets, values, counts, g, reduce,
                                   include_self)
        return (dx.reshape(xd.shape) if input._requires_grad else None,
                _placed(xp, dv, sd.shape, covered) if src._requires_grad else None)

    return _make(out, (input, src), backward)


def _reduced(xd, offsets, values, reduce, include_self):
    """(the result of reducing `values` into flattened xd at `offsets`, the count of
    elements reduced at each place, self included where it takes part)."""
    xp = _xp(xd)
    out = xd.copy().reshape(-1)
    hit = _hit(xp, offsets, xd.size)
    if not include_self:  # the places written start from the reduction's identity
        out[hit] = _identity(reduce, xd.dtype)
    if reduce in ("sum", "mean"):
        xp.add.at(out, offsets, values)
    else:
        ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
        ufunc.at(out, offsets, values)
    counts = xp.bincount(offsets, minlength=xd.size) + (1 if include_self else 0)
    if reduce == "mean":
        divisor = xp.where(hit, counts, 1).astype(xd.dtype)
        out = out // divisor if xd.dtype.kind in "biu" else out / divisor
    return _contiguous(out.astype(xd.dtype, copy=False).reshape(xd.shape)), counts


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind != "b" else None
    if info is None:
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _reduce_gradients(xp, xd, out, offsets, values, counts, g, reduce, include_self):
    """(flat gradient of input, gradient of each reduced element of src) of scatter_reduce,
    as PyTorch's: `mine` marks the places where input's own value took part."""
    flat, x, y = g.reshape(-1), xd.reshape(-1), out.reshape(-1)
    zero = F32.type(0)
    mine = xp.ones(x.shape, bool) if include_self else ~_hit(xp, offsets, x.size)
    if reduce == "sum":
        return xp.where(mine, flat, zero), flat[offsets]
    if reduce == "mean":
        share = flat / xp.maximum(counts, 1).astype(F32)
        dx = xp.where(mine, xp.where(counts > 0, share, flat), zero)
        return dx, share[offsets]
    if reduce in ("amax", "amin"):
        # shared evenly among the elements equal to the result at their place
        own = mine & (x == y)
        theirs = values == y[offsets]
        ties = own + xp.bincount(offsets, weights=theirs, minlength=x.size)
        share = flat / ties.astype(F32)
        return xp.where(own, share, zero), xp.where(theirs, share[offsets], zero)
    # prod: each element's gradient is g times the product of the others at its place, from
    # the product of the nonzero ones and the count of zeros (no division by a zero)
    zeros = (mine & (x == 0)) + xp.bincount(offsets, weights=values == 0, minlength=x.size)
    nonzero = xp.where(mine & (x != 0), x, 1).astype(np.float64)
    xp.multiply.at(nonzero, offsets, xp.where(values == 0, 1, values))

    def others(v, at):
        alone = xp.where(v == 0, nonzero[at], 0)  # the one zero: the product of the rest
        plain = nonzero[at] / xp.where(v == 0, 1, v)
        return flat[at] * xp.where(zeros[at] == 0, plain, xp.where(zeros[at] == 1, alone, 0))

    every = xp.arange(x.size)
    return (xp.where(mine, others(x, every), zero).astype(F32),
            others(values, offsets).astype(F32))


# ---- index_add, index_copy, index_fill, index_put --------------------------------------------


def _index_vector(index, name, dtypes, error):
    idx = _index_array(index, name, dtypes, error)
    if idx.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {idx.ndim} "
                         f"with type: {_name(idx.dtype)} and size: {list(idx.shape)}")
    return idx.reshape(-1).astype(I64)


def _source(name, xd, at, idx, source):
    """The array of `source`, of input's dtype and of input's shape but for `len(idx)` at
    dim `at`."""
    if not isinstance(source, _tensor()):
        raise TypeError(f"{name}(): argument 'source' must be a Tensor, got "
                        f"{type(source).__name__}")
    sd = source._data
    if sd.dtype != xd.dtype:
        raise RuntimeError(f"{name}(): self ({_name(xd.dtype)}) and source ({_name(sd.dtype)}) "
                           f"must have the same scalar type")
    line = (xd.shape or (1,))
    src_line = sd.shape or (1,)
    if len(src_line) != len(line) or any(m != n for d, (m, n) in
                                         enumerate(zip(line, src_line)) if d != at):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(xd.shape)} "
                           f"source.shape = {list(sd.shape)}")
    if src_line[at] != idx.size:
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({src_line[at]}), for dim: {at}")
    return sd.reshape(src_line)


def index_add(input, dim, index, source, *, alpha=1):
    """input with alpha * source[..., i, ...] added to input[..., index[i], ...] along dim
    (repeated positions add up); gradients g and alpha * g at the positions."""
    xd = _input_array(input, "index_add")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Number):
        raise TypeError(f"index_add(): argument 'alpha' must be a number, got "
                        f"{type(alpha).__name__}")
    if xd.dtype.kind != "f" and not isinstance(alpha, numbers.Integral):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    at = dim_index(dim, xd.ndim)
    idx = _index_vector(index, "index_add_", (I64, np.dtype(np.int32)), RuntimeError)
    sd = _source("index_add_", xd, at, idx, source)
    line = xd.reshape(xd.shape or (1,))
    idx = _in_range(idx, line.shape[at], at, "")
    xp = _xp(xd)
    scale = scalar_as(alpha, xd.dtype, "index_add(): alpha")
    out = line.copy()
    xp.add.at(xp.moveaxis(out, at, 0), idx, xp.moveaxis(sd * scale, at, 0))

    def backward(g):
        taken = xp.take(g.reshape(line.shape), idx, axis=at) * F32.type(alpha)
        return (g if input._requires_grad else None,
                taken.reshape(source.shape) if source._requires_grad else None)

    return _make(out.reshape(xd.shape), (input, source), backward, reads=False)


def _positions_mask(xp, line, at, idx):
    """A bool array of line's shape, True in the slices along `at` that idx names."""
    hit = xp.zeros(line.shape[at], bool)
    hit[idx] = True
    return hit.reshape((1,) * at + (-1,) + (1,) * (line.ndim - at - 1))


def index_copy(input, dim, index, source):
    """input with input[..., index[i], ...] = source[..., i, ...] along dim (which of
    repeated positions wins is unspecified, as in PyTorch); gradients g outside the
    positions and g at them to source."""
    xd = _input_array(input, "index_copy")
    at = dim_index(dim, xd.ndim)
    idx = _index_vector(index, "index_copy_", (I64,), RuntimeError)
    sd = _source("index_copy_", xd, at, idx, source)
    line = xd.reshape(xd.shape or (1,))
    idx = _in_range(idx, line.shape[at], at, "index_copy_(): ", IndexError)
    xp = _xp(xd)
    out = line.copy()
    xp.moveaxis(out, at, 0)[idx] = xp.moveaxis(sd, at, 0)
    hit = _positions_mask(xp, line, at, idx)

    def backward(g):
        g = g.reshape(line.shape)
        return (xp.where(hit, F32.type(0), g).reshape(xd.shape) if input._requires_grad
                else None,
                xp.take(g, idx, axis=at).reshape(source.shape) if source._requires_grad
                else None)

    return _make(out.reshape(xd.shape), (input, source), backward, reads=False)


def index_fill(input, dim, index, value):
    """input with `value` (a number or a 0-d tensor) in the slices along dim that index
    names (negative positions count from the end); gradients g outside them and their sum to
    a value tensor."""
    xd = _input_array(input, "index_fill")
    at = dim_index(dim, xd.ndim)
    idx = _index_vector(index, "index_fill_", (I64,), IndexError)
    line = xd.reshape(xd.shape or (1,))
    idx = _in_range(idx, line.shape[at], at, "", IndexError, negative=True)
    parents = (input,)
    if isinstance(value, _tensor()):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        parents = (input, value)
        fill = scalar_as(value._data.item(), xd.dtype, "index_fill(): value")
    else:
        fill = scalar_as(value, xd.dtype, "index_fill(): value")
    xp = _xp(xd)
    hit = xp.broadcast_to(_positions_mask(xp, line, at, idx), line.shape)
    out = _contiguous(xp.where(hit, fill, line).astype(xd.dtype, copy=False))

    def backward(g):
        g = g.reshape(line.shape)
        dx = xp.where(hit, F32.type(0), g).reshape(xd.shape) if input._requires_grad else None
        if len(parents) == 1:
            return (dx,)
        return dx, xp.asarray(xp.where(hit, g, F32.type(0)).sum(dtype=F32))

    return _make(out.reshape(xd.shape), parents, backward, reads=False)


def index_put(input, indices, values, accumulate=False):
    """input with input[indices] = values (added, repeated positions adding up, with
    accumulate), as torch.index_put: indices a tuple of integer or bool tensors, one per
    leading dim, values a tensor of input's dtype that broadcasts to what they select.
    Gradients: g outside the positions (everywhere with accumulate), g at them to values,
    summed back to its shape."""
    xd = _input_array(input, "index_put")
    accumulate = checked_flag(accumulate, "index_put", "accumulate")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be a tuple of Tensors, got "
                        f"{type(indices).__name__}")
    if not isinstance(values, _tensor()):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    key = []
    for i in indices:
        if not isinstance(i, _tensor()) or i._data.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        key.append(i._data)
    key = tuple(key)
    vd = values._data
    if vd.dtype != xd.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_name(xd.dtype)} for the destination and {_name(vd.dtype)} for "
                           f"the source.")
    xp = _xp(xd)
    try:
        selected = xd[key].shape
    except IndexError as error:
        raise IndexError(str(error).replace("axis", "dimension")) from None
    try:
        spread = xp.broadcast_to(vd, selected)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vd.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(selected)}") from None
    key = tuple(k.copy() for k in key)  # a later write to an index must not move gradients
    out = xd.copy()
    if accumulate:
        xp.add.at(out, key, spread)
    else:
        out[key] = spread

    def backward(g):
        dx = None
        if input._requires_grad:
            dx = g
            if not accumulate:
                dx = g.copy()
                dx[key] = 0
        dv = _unbroadcast(_contiguous(g[key]), vd.shape) if values._requires_grad else None
        return dx, dv

    return _make(out, (input, values), backward, reads=False)


# ---- take and take_along_dim -----------------------------------------------------------------


def _flat_places(idx, n):
    """Positions `idx` (int64, negative ones counting from the end) in a flattened tensor of n
    elements, made non-negative, in idx's shape; an IndexError names the first out of
    range."""
    if idx.size:
        low, high = int(idx.min()), int(idx.max())
        if low < -n or high >= n:
            raise IndexError(f"out of range: tried to access index {low if low < -n else high} "
                             f"on a tensor of {n} elements.")
    return (idx % n if n else idx).astype(I64)


def take(input, index):
    """The elements of input, flattened, at `index` (an int64 tensor, negative positions
    counting from the end), in index's shape; the gradient adds back at those places."""
    xd = _input_array(input, "take")
    if not isinstance(index, _tensor()):
        raise TypeError(f"take(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype != I64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_name(index._data.dtype)}")
    n = xd.size
    places = _flat_places(index._data, n)
    xp = _xp(xd)
    out = _contiguous(xd.reshape(-1)[places])

    def backward(g):
        dx = xp.zeros(n, F32)
        xp.add.at(dx, places.reshape(-1), g.reshape(-1))
        return (dx.reshape(xd.shape),)

    return _make(out, (input,), backward, reads=False)


def take_along_dim(input, indices, dim=None):
    """The elements of input at `indices` along dim, as torch.take_along_dim: input and
    indices broadcast together but along dim, then gathered; without dim, of both
    flattened. Through expand and gather, with their gradients."""
    xd = _input_array(input, "take_along_dim")
    if not isinstance(indices, _tensor()):
        raise TypeError(f"take_along_dim(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices._data.dtype != I64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_name(indices._data.dtype)}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if xd.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {xd.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    at = dim_index(dim, xd.ndim)
    common = list(broadcast_shape(xd.shape[:at] + (1,) + xd.shape[at + 1:],
                                  indices.shape[:at] + (1,) + indices.shape[at + 1:]))
    if xd.ndim == 0:
        return gather(input, 0, indices)
    x_shape, i_shape = list(common), list(common)
    x_shape[at], i_shape[at] = xd.shape[at], indices.shape[at]
    return gather(expand(input, tuple(x_shape)), at, expand(indices, tuple(i_shape)))
