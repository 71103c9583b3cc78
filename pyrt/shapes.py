"""Ops that rearrange elements without arithmetic: permute and transpose of any two dims,
squeeze and unsqueeze, cat and stack, expand and repeat, split and chunk, gather, sort and
topk, with PyTorch's names, arguments and errors.

Each backward rearranges the gradient the inverse way: permute by the inverse permutation,
cat and stack by cutting the gradient into the inputs' pieces, expand and repeat by summing
the copies, split by placing each piece back, gather, sort and topk by adding each element's
gradient at the place it was taken from. Results are contiguous arrays (copies where the
rearrangement needs one), as every other op's are, so that the kernels take them as they
are.
"""

from collections import namedtuple

import numpy as np

from pyrt.functional import _contiguous, _integer, _make, _unbroadcast, _xp, dim_index
from pyrt.functional import reshape as _reshape
from pyrt.ops.layout import swap_last_axes
from pyrt.pointwise import checked_flag

__all__ = ["cat", "chunk", "dim_index", "expand", "flip", "gather", "index_select", "permute",
           "repeat", "sort", "split", "squeeze", "stack", "topk", "transpose", "unsqueeze"]

# what sort and topk return, as torch.return_types.sort and topk
sort_result = namedtuple("sort", ("values", "indices"))
topk_result = namedtuple("topk", ("values", "indices"))
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)


def permute(x, dims):
    """x with its dims in the order `dims` (a permutation of range(x.ndim))."""
    dims = tuple(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(): number of dims don't match in permute: input has "
                           f"{x.ndim} dims but {len(dims)} were given")
    order = tuple(dim_index(d, x.ndim) for d in dims)
    if len(set(order)) != len(order):
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {dims}")
    n = len(order)
    if n >= 2 and order[-2:] == (n - 1, n - 2) and order[:-2] == tuple(range(n - 2)):
        # the last two dims swapped (transpose(-2, -1), .mT): a matrix transpose, batched
        return _make(swap_last_axes(x._data), (x,), lambda g: (swap_last_axes(g),), reads=False)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    out = _contiguous(x._data.transpose(order))
    return _make(out, (x,), lambda g: (_contiguous(g.transpose(inverse)),), reads=False)


def transpose(x, dim0, dim1):
    """x with dims dim0 and dim1 swapped."""
    order = list(range(x.ndim))
    a, b = dim_index(dim0, x.ndim), dim_index(dim1, x.ndim)
    if x.ndim == 0:
        return permute(x, ())
    order[a], order[b] = order[b], order[a]
    return permute(x, order)


def unsqueeze(x, dim):
    """x with a dim of size 1 inserted at `dim` (in range(-x.ndim - 1, x.ndim + 1))."""
    at = dim_index(dim, x.ndim + 1)
    return _reshape(x, x.shape[:at] + (1,) + x.shape[at:])


def squeeze(x, dim=None):
    """x without its dims of size 1 (all of them, or `dim` only, if it has size 1)."""
    if dim is None:
        shape = tuple(n for n in x.shape if n != 1)
    else:
        at = dim_index(dim, x.ndim)
        shape = x.shape if x.ndim == 0 or x.shape[at] != 1 else x.shape[:at] + x.shape[at + 1:]
    return _reshape(x, shape)


def _same_kind(tensors, name):
    """The tensors of cat/stack as a tuple, checked: at least one, one dtype, one device."""
    from pyrt.tensor import Tensor

    if isinstance(tensors, Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{name}() expects a sequence of Tensors, got {type(tensors).__name__}")
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError(f"{name}() expects a non-empty sequence of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}() expects a sequence of Tensors, but element {i} is "
                            f"{type(t).__name__}")
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"{name}() expects tensors of one dtype, got {tensors[0].dtype} "
                            f"and {t.dtype} (element {i})")
        if t.device != tensors[0].device:
            raise RuntimeError(f"{name}() expects tensors on one device, got "
                               f"{tensors[0].device} and {t.device} (element {i})")
    return tensors


def cat(tensors, dim=0):
    """The tensors joined along `dim`; their other dims must agree."""
    tensors = _same_kind(tensors, "cat")
    first = tensors[0]
    if first.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    at = dim_index(dim, first.ndim)
    for i, t in enumerate(tensors):
        if t.ndim != first.ndim or any(a != b for j, (a, b) in enumerate(zip(t.shape,
                                                                              first.shape))
                                       if j != at):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {at}. "
                               f"Expected {first.shape} but got {t.shape} for tensor number "
                               f"{i} in the list.")
    xp = _xp(first._data)
    out = xp.concatenate([t._data for t in tensors], axis=at)
    bounds, edge = [], 0
    for t in tensors[:-1]:
        edge += t.shape[at]
        bounds.append(edge)

    def backward(g):
        return tuple(xp.ascontiguousarray(piece) for piece in xp.split(g, bounds, axis=at))

    return _make(out, tensors, backward, reads=False)


def stack(tensors, dim=0):
    """The tensors, all of one shape, joined along a new dim at `dim`."""
    tensors = _same_kind(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shape} "
                               f"at entry 0 and {t.shape} at entry {i}")
    at = dim_index(dim, len(shape) + 1)
    xp = _xp(tensors[0]._data)
    out = xp.stack([t._data for t in tensors], axis=at)

    def backward(g):
        return tuple(_contiguous(xp.take(g, i, axis=at)) for i in range(len(tensors)))

    return _make(out, tensors, backward, reads=False)


# ---- expand and repeat: copies of x, their gradients summed ----------------------------------


def _sizes(sizes, name):
    """The sizes of expand or repeat as a tuple of ints (given as ints, or as one tuple or
    list of them), or a TypeError."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    for n in sizes:
        if not _integer(n):
            raise TypeError(f"{name}(): sizes must be ints, got {n!r:.40} of type "
                            f"{type(n).__name__}")
    return tuple(int(n) for n in sizes)


def expand(x, sizes):
    """x broadcast to `sizes`, as torch's expand: new dims at the front, dims of size 1
    stretched, -1 keeping a dim's size. A copy (torch gives a view), as every op's result is;
    the gradient sums over the copies."""
    sizes = _sizes(sizes, "expand")
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({x.ndim})")
    lead = len(sizes) - x.ndim
    shape = []
    for i, n in enumerate(sizes):
        have = x.shape[i - lead] if i >= lead else None
        if n == -1 and have is not None:
            n = have
        elif n < 0:
            place = "a leading, non-existing dimension" if have is None else "dimension"
            raise RuntimeError(f"expand(): the expanded size {n} isn't allowed in {place} {i}: "
                               f"sizes must be non-negative, or -1 to keep a dim's size")
        elif have is not None and have != 1 and n != have:
            raise RuntimeError(f"The expanded size of the tensor ({n}) must match the existing "
                               f"size ({have}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x.shape)}")
        shape.append(n)
    xp = _xp(x._data)
    out = xp.array(xp.broadcast_to(x._data, tuple(shape)), order="C")
    in_shape = x.shape
    return _make(out, (x,), lambda g: (_unbroadcast(g, in_shape),), reads=False)


def repeat(x, sizes):
    """x tiled sizes[i] times along each dim i, as torch's repeat (NumPy's tile); sizes
    beyond x's dims add leading dims. The gradient sums the copies."""
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat(): sizes must be non-negative, got {list(sizes)}")
    base = (1,) * (len(sizes) - x.ndim) + x.shape
    xp = _xp(x._data)
    out = _contiguous(xp.tile(x._data.reshape(base), sizes))
    in_shape = x.shape

    def backward(g):
        # copy r of element j along a dim of n elements sits at r * n + j: split each dim
        # into (copies, elements) and sum over the copies
        pairs = tuple(v for pair in zip(sizes, base) for v in pair)
        copies = tuple(range(0, len(pairs), 2))
        return (_contiguous(g.reshape(pairs).sum(axis=copies, dtype=_F32).reshape(in_shape)),)

    return _make(out, (x,), backward, reads=False)


# ---- split and chunk: pieces along a dim -----------------------------------------------------


def _piece(x, at, start, stop):
    """x[start:stop] along dim `at`; its gradient goes back to those places."""
    index = (slice(None),) * at + (slice(start, stop),)
    xp = _xp(x._data)
    shape = x.shape

    def backward(g):
        dx = xp.zeros(shape, _F32)
        dx[index] = g
        return (dx,)

    return _make(_contiguous(x._data[index]), (x,), backward, reads=False)


def split(x, split_size_or_sections, dim=0):
    """x cut along `dim` into pieces of split_size_or_sections elements (the last one shorter
    when they do not divide the size), or of the sizes in a list of them, which must add up
    to the size, as torch.split: a tuple of tensors."""
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    at = dim_index(dim, x.ndim)
    n = x.shape[at]
    size = split_size_or_sections
    if isinstance(size, (tuple, list)):
        sizes = _sizes((size,), "split")
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={list(sizes)}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {at}), but got "
                               f"split_sizes={list(sizes)}")
    elif _integer(size):
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={size}")
        if size == 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        count = max(-(-n // size), 1) if size else 1  # one piece at least, empty or not
        sizes = [min(size, n - i * size) for i in range(count)]
    else:
        raise TypeError(f"split(): split_size_or_sections must be an int or a list of ints, "
                        f"got {type(size).__name__}")
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_piece(x, at, start, start + s))
        start += s
    return tuple(pieces)


def chunk(x, chunks, dim=0):
    """x cut along `dim` into `chunks` pieces of ceil(size / chunks) elements, as torch.chunk:
    fewer pieces when the elements run out first; `chunks` empty pieces of an empty dim."""
    if not _integer(chunks):
        raise TypeError(f"chunk(): chunks must be an int, got {type(chunks).__name__}")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = x.shape[dim_index(dim, x.ndim)]
    if n == 0:
        return split(x, [0] * chunks, dim)
    return split(x, -(-n // chunks), dim)


# ---- gather, sort and topk: elements taken by index ------------------------------------------


def _taken(x, line, order, at):
    """The elements of `line` (x's array, at least 1-D) at indices `order` along dim `at`,
    and the backward that adds each element's gradient at the place it was taken from."""
    xp = _xp(line)
    shape = x.shape

    def backward(g):
        dx = xp.zeros(line.shape, _F32)
        xp.put_along_axis(dx, order, g.reshape(order.shape), axis=at)
        return (dx.reshape(shape),)

    return xp.take_along_axis(line, order, axis=at), backward


def gather(x, dim, index):
    """out[i][j] = x[index[i][j]][j] for dim 0, x[i][index[i][j]] for dim 1, and so on, as
    torch.gather: index is an int64 (or int32) tensor with x's number of dims, no larger than
    x along the other dims; the result has its shape. The gradient adds each element of g at
    the place its value came from (indices may repeat)."""
    from pyrt.tensor import Tensor

    if not isinstance(index, Tensor):
        raise TypeError(f"gather(): argument 'index' must be a Tensor, got "
                        f"{type(index).__name__}")
    xd, idx = x._data, index._data
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"gather(): Expected dtype int32/int64 for index, got {idx.dtype}")
    xp = _xp(xd)
    if _xp(idx) is not xp:
        raise RuntimeError(f"gather(): expected index on the device of input, {x.device}, got "
                           f"{index.device}")
    rank = max(xd.ndim, 1)  # a 0-d tensor counts as one element in one dim
    if max(idx.ndim, 1) != rank:
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    at = dim_index(dim, xd.ndim)
    line, places = xd.reshape(xd.shape or (1,)), idx.reshape(idx.shape or (1,))
    for d in range(rank):
        if d != at and places.shape[d] > line.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(idx.shape)} to be no larger than self {list(xd.shape)} "
                               f"apart from dimension {at}")
    if places.size:
        low, high = int(places.min()), int(places.max())
        if low < 0 or high >= line.shape[at]:
            raise RuntimeError(f"index {low if low < 0 else high} is out of bounds for "
                               f"dimension {at} with size {line.shape[at]}")
    # the part of x the index covers: take_along_axis needs their other dims equal
    part = line[tuple(slice(None) if d == at else slice(0, n)
                      for d, n in enumerate(places.shape))]
    places = places.astype(_I64)  # a copy: a later write to index must not move the gradient
    out = xp.take_along_axis(part, places, axis=at).reshape(idx.shape)

    def backward(g):
        dx = xp.zeros(line.shape, _F32)
        where = [xp.arange(n).reshape((1,) * d + (n,) + (1,) * (rank - d - 1))
                 for d, n in enumerate(places.shape)]
        where[at] = places
        xp.add.at(dx, tuple(where), g.reshape(places.shape))
        return (dx.reshape(xd.shape),)

    return _make(_contiguous(out), (x,), backward, reads=False)


def _sort_order(line, at, descending):
    """The indices that sort `line` along `at`, stably (equal elements keep their order),
    NaN counting as the largest value, as PyTorch sorts."""
    xp = _xp(line)
    if not descending:
        return xp.argsort(line, axis=at, kind="stable")
    # descending and still stable: sort the reversed line, reverse that, count from the end
    reversed_order = xp.argsort(xp.flip(line, at), axis=at, kind="stable")
    return (line.shape[at] - 1) - xp.flip(reversed_order, at)


def sort(x, dim=-1, descending=False):
    """(values, indices): x sorted along `dim`, and where each value came from, as torch.sort
    (stable). The gradient goes back to the places the values came from."""
    from pyrt.tensor import Tensor

    at = dim_index(dim, x.ndim)
    line = x._data.reshape(x.shape or (1,))
    order = _sort_order(line, at, checked_flag(descending, "sort", "descending"))
    values, backward = _taken(x, line, order, at)
    return sort_result(_make(_contiguous(values.reshape(x.shape)), (x,), backward, reads=False),
                       Tensor(order.reshape(x.shape).astype(_I64)))


def topk(x, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest elements along `dim` (the k smallest if not
    `largest`), as torch.topk; always in sorted order, which sorted=False leaves free to
    choose. The gradient goes back to the places the values came from."""
    from pyrt.tensor import Tensor

    if not _integer(k):
        raise TypeError(f"topk(): k must be an int, got {type(k).__name__}")
    largest = checked_flag(largest, "topk", "largest")
    checked_flag(sorted, "topk", "sorted")
    if x.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes")
    at = dim_index(dim, x.ndim)
    line = x._data.reshape(x.shape or (1,))
    n = line.shape[at]
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range: k is {k}, but dim {at} has {n} "
                           f"elements")
    if x.ndim == 0:  # the element itself, for k 0 or 1, as PyTorch gives it
        k = 1
    order = _sort_order(line, at, largest)[(slice(None),) * at + (slice(0, k),)]
    order = _contiguous(order)
    values, backward = _taken(x, line, order, at)
    shape = order.shape if x.ndim else ()
    return topk_result(_make(_contiguous(values.reshape(shape)), (x,), backward, reads=False),
                       Tensor(order.reshape(shape).astype(_I64)))


# ---- flip and index_select -------------------------------------------------------------------


def flip(x, dims):
    """x reversed along each of `dims` (ints, or one tuple or list of them), as torch.flip; the
    gradient is g flipped back the same way."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    axes = tuple(dim_index(d, x.ndim) for d in dims)
    for i, a in enumerate(axes):
        if a in axes[:i]:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    if x.ndim == 0:  # the one dim of a 0-d tensor holds one element: nothing moves
        axes = ()
    xp = _xp(x._data)

    def flipped(a):
        return xp.flip(a, axis=axes).copy(order="C") if axes else a.copy()

    return _make(flipped(x._data), (x,), lambda g: (flipped(g),), reads=False)


def index_select(x, dim, index):
    """The slices of x along `dim` at the positions in `index` (a 1-D or 0-d int64 or int32
    tensor; a 0-d one selects one slice and keeps the dim), as torch.index_select. The
    gradient adds each slice's gradient back at its position (positions may repeat)."""
    from pyrt.tensor import Tensor

    if not isinstance(index, Tensor):
        raise TypeError(f"index_select(): argument 'index' must be a Tensor, got "
                        f"{type(index).__name__}")
    idx = index._data
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"index_select(): Expected dtype int32/int64 for index, got "
                           f"{idx.dtype}")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    xp = _xp(x._data)
    if _xp(idx) is not xp:
        raise RuntimeError(f"index_select(): expected index on the device of input, "
                           f"{x.device}, got {index.device}")
    at = dim_index(dim, x.ndim)
    line = x._data.reshape(x.shape or (1,))
    n = line.shape[at]
    # a copy: a later write to index must not move the gradient
    places = idx.reshape(-1).astype(_I64)
    if places.size:
        low, high = int(places.min()), int(places.max())
        if low < 0 or high >= n:
            raise RuntimeError(f"index_select(): index {low if low < 0 else high} is out of "
                               f"range for dimension {at} with size {n}")
    out = xp.take(line, places, axis=at)
    shape = out.shape if x.ndim else ()

    def backward(g):
        dx = xp.zeros(line.shape, _F32)
        # along `at` first, so that add.at adds whole slices at the positions
        xp.add.at(xp.moveaxis(dx, at, 0), places, xp.moveaxis(g.reshape(out.shape), at, 0))
        return (dx.reshape(x.shape),)

    return _make(_contiguous(out.reshape(shape)), (x,), backward, reads=False)
