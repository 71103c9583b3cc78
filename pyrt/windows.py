"""Ops that read a tensor along its diagonals or in windows, or cut it into pieces, with
PyTorch's names, arguments and gradients: diagonal, diag_embed, unfold (sliding windows along a
dim), tensor_split (hsplit, vsplit, dsplit) and split_with_sizes.

diagonal and unfold gather elements at index arrays computed from the shape; their gradients
add the incoming one back at the same places (unfold's windows overlap when step < size, so
the windows' gradients are added one window offset at a time, each offset's positions being
distinct). diag_embed is diagonal's adjoint: the values placed on a diagonal of zeros.
tensor_split cuts at given indices or into n nearly equal pieces (the first ones one longer),
through narrow, whose gradient places each piece back.
"""

import numbers

import numpy as np

from pyrt.functional import _integer, _make, _tensor, _xp, dim_index

__all__ = ["diag_embed", "diagonal", "dsplit", "hsplit", "split_with_sizes", "tensor_split",
           "unfold", "vsplit"]


def _diagonal_index(rows, cols, offset):
    """The (row, column) positions of diagonal `offset` of a rows x cols matrix."""
    start_row, start_col = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_row, cols - start_col), 0)
    return np.arange(n) + start_row, np.arange(n) + start_col


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The elements input[..., i, i + offset] of the matrices in dims dim1 and dim2, those
    dims replaced by one last dim (torch.diagonal; a copy)."""
    x = input._data
    d1, d2 = dim_index(dim1, x.ndim), dim_index(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if not _integer(offset):
        raise TypeError(f"diagonal(): argument 'offset' must be an int, got "
                        f"{type(offset).__name__}")
    xp = _xp(x)
    moved = xp.moveaxis(x, (d1, d2), (-2, -1))
    rows, cols = _diagonal_index(moved.shape[-2], moved.shape[-1], int(offset))
    out = xp.ascontiguousarray(moved[..., rows, cols])

    def backward(g):
        full = xp.zeros(moved.shape, g.dtype)
        full[..., rows, cols] = g
        return (xp.ascontiguousarray(xp.moveaxis(full, (-2, -1), (d1, d2))),)

    return _make(out, (input,), backward, reads=False)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices whose diagonal `offset` (in dims dim1 and dim2 of the result) holds input's
    last dim, zeros elsewhere (torch.diag_embed)."""
    x = input._data
    if not _integer(offset):
        raise TypeError(f"diag_embed(): argument 'offset' must be an int, got "
                        f"{type(offset).__name__}")
    offset = int(offset)
    ndim = x.ndim + 1
    d1, d2 = dim_index(dim1, ndim), dim_index(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    xp = _xp(x)
    n = x.shape[-1] + abs(offset)
    rows, cols = _diagonal_index(n, n, offset)
    moved = xp.zeros(x.shape[:-1] + (n, n), x.dtype)
    moved[..., rows, cols] = x
    out = xp.ascontiguousarray(xp.moveaxis(moved, (-2, -1), (d1, d2)))

    def backward(g):
        back = xp.moveaxis(g, (d1, d2), (-2, -1))
        return (xp.ascontiguousarray(back[..., rows, cols]),)

    return _make(out, (input,), backward, reads=False)


def unfold(input, dimension, size, step):
    """The windows of `size` elements along `dimension`, `step` apart: that dim becomes the
    number of windows, (length - size) // step + 1, and a last dim of `size` holds each
    window (Tensor.unfold; a copy)."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("unfold(): expected a tensor of at least 1 dimension")
    d = dim_index(dimension, x.ndim)
    for value, name in ((size, "size"), (step, "step")):
        if not _integer(value):
            raise TypeError(f"unfold(): argument '{name}' must be an int, got "
                            f"{type(value).__name__}")
    length = x.shape[d]
    if size > length or size < 0:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    xp = _xp(x)
    windows = (length - size) // step + 1
    index = np.arange(windows)[:, None] * step + np.arange(size)[None, :]  # [windows, size]
    taken = xp.take(x, xp.asarray(index), axis=d)  # dim d becomes (windows, size)
    out = xp.ascontiguousarray(xp.moveaxis(taken, d + 1, -1))

    def backward(g):
        g = xp.moveaxis(g, -1, d + 1)  # back to (..., windows, size, ...)
        full = xp.zeros(x.shape, g.dtype)
        lead = (slice(None),) * d
        for k in range(size):  # one window offset at a time: its positions are distinct
            full[lead + (index[:, k],)] += g[lead + (slice(None), k)]
        return (full,)

    return _make(out, (input,), backward, reads=False)


def split_with_sizes(input, split_sizes, dim=0):
    """input cut along `dim` into pieces of the given sizes, which add up to its size."""
    if not isinstance(split_sizes, (list, tuple)):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' must be a list of ints, "
                        f"got {type(split_sizes).__name__}")
    return input.split(list(split_sizes), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """input cut along `dim`: into n pieces of nearly equal sizes (the first size % n ones
    one longer), or at the given indices (a list; pieces may be empty), as torch.tensor_split."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"tensor_split(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    d = dim_index(dim, input.ndim)
    length = input.shape[d]
    if isinstance(indices_or_sections, numbers.Integral) and not isinstance(
            indices_or_sections, bool):
        n = int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        sizes = [length // n + (1 if i < length % n else 0) for i in range(n)]
        bounds = np.cumsum([0, *sizes]).tolist()
    else:
        if isinstance(indices_or_sections, _tensor()):
            indices_or_sections = indices_or_sections.tolist()
        cuts = [min(max(int(i) if i >= 0 else int(i) + length, 0), length)
                for i in indices_or_sections]
        bounds = [0, *cuts, length]
    return tuple(input.narrow(d, lo, max(hi, lo) - lo)
                 for lo, hi in zip(bounds[:-1], bounds[1:]))


def _split_along(name, input, indices_or_sections, dim, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} "
                           f"dimension{'s' if min_dims > 1 else ''}, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(indices_or_sections, numbers.Integral) and (
            input.shape[dim] % indices_or_sections):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 for a 1-d tensor), into equal pieces."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """tensor_split along dim 0 of a tensor of at least 2 dims, into equal pieces."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """tensor_split along dim 2 of a tensor of at least 3 dims, into equal pieces."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)
