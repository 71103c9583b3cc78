"""Ops that rearrange elements without arithmetic: permute and transpose of any two dims,
squeeze and unsqueeze, cat and stack, with PyTorch's names, arguments and errors.

Each backward rearranges the gradient the inverse way: permute by the inverse permutation,
cat and stack by cutting the gradient into the inputs' pieces. Results are contiguous arrays
(copies where the rearrangement needs one), as every other op's are, so that the kernels take
them as they are.
"""

from pyrt.functional import _contiguous, _make, _xp, dim_index
from pyrt.functional import reshape as _reshape

__all__ = ["cat", "dim_index", "permute", "squeeze", "stack", "transpose", "unsqueeze"]


def permute(x, dims):
    """x with its dims in the order `dims` (a permutation of range(x.ndim))."""
    dims = tuple(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(): number of dims don't match in permute: input has "
                           f"{x.ndim} dims but {len(dims)} were given")
    order = tuple(dim_index(d, x.ndim) for d in dims)
    if len(set(order)) != len(order):
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {dims}")
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    out = _contiguous(x.data.transpose(order))
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
    xp = _xp(first.data)
    out = xp.concatenate([t.data for t in tensors], axis=at)
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
    xp = _xp(tensors[0].data)
    out = xp.stack([t.data for t in tensors], axis=at)

    def backward(g):
        return tuple(_contiguous(xp.take(g, i, axis=at)) for i in range(len(tensors)))

    return _make(out, tensors, backward, reads=False)
