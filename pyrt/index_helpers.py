"""Index arithmetic with PyTorch's names: the coordinates of a triangle of a matrix
(tril_indices, triu_indices), flat indices turned into coordinates (unravel_index), and the
r-element combinations of a vector's elements (combinations).

The triangles list their (row, column) pairs row by row, as torch does; unravel_index divides
by the sizes from the last dim backward, each coordinate the remainder (so an index beyond the
shape wraps around, as in torch); combinations gathers the input at the index tuples that
itertools lists, in the same order, so its gradient adds back at those places.
"""

import itertools
import numbers

import numpy as np

from pyrt.functional import _integer, _tensor, _xp

__all__ = ["combinations", "tril_indices", "triu_indices", "unravel_index"]


def _triangle(name, row, col, offset, dtype, device, lower):
    from pyrt.tensor import _check_device, _checked_dtype, _move

    for value, arg in ((row, "row"), (col, "col"), (offset, "offset")):
        if not _integer(value):
            raise TypeError(f"{name}(): argument '{arg}' must be an int, got "
                            f"{type(value).__name__}")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = np.dtype(np.int64) if dtype is None else _checked_dtype(dtype)
    if dtype.kind != "i":
        raise NotImplementedError(f'"{name}" not implemented for {dtype}: the indices are '
                                  f"int64")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(int(row), int(offset),
                                                                    int(col))
    out = np.stack([rows, cols]).astype(dtype).reshape(2, -1)
    return _tensor()(_move(out, _check_device(device)))


def tril_indices(row, col, offset=0, *, dtype=None, device="cpu"):
    """The coordinates of the lower triangle of a row x col matrix (the elements on and below
    diagonal `offset`) as a 2 x N int64 tensor, rows first then columns, row by row."""
    return _triangle("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row, col, offset=0, *, dtype=None, device="cpu"):
    """The coordinates of the upper triangle of a row x col matrix (the elements on and above
    diagonal `offset`) as a 2 x N int64 tensor, rows first then columns, row by row."""
    return _triangle("triu_indices", row, col, offset, dtype, device, False)


def unravel_index(indices, shape):
    """The coordinates in a tensor of `shape` of the flat (row-major) `indices`: a tuple of
    int64 tensors of indices' shape, one per dim of `shape` (torch.unravel_index)."""
    if not isinstance(indices, _tensor()):
        raise TypeError(f"unravel_index(): argument 'indices' must be a Tensor, got "
                        f"{type(indices).__name__}")
    if indices._data.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"pyrt.{indices._data.dtype}")
    if _integer(shape):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(_integer(n) for n in shape):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {shape!r}")
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    x = indices._data
    xp = _xp(x)
    coords = []
    rest = x.astype(np.int64)
    for size in reversed(shape):  # the last dim varies fastest
        coords.append(rest % size if size else xp.zeros_like(rest))
        rest = rest // size if size else rest
    return tuple(_tensor()(xp.ascontiguousarray(c)) for c in reversed(coords))


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of the elements of 1-D `input` (with repeats when
    `with_replacement`), one per row of the result, in itertools' order: shape (count, r),
    or an empty 1-D tensor for r = 0 (torch.combinations)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"combinations(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if not isinstance(r, numbers.Integral) or isinstance(r, bool):
        raise TypeError(f"combinations(): argument 'r' must be an int, got "
                        f"{type(r).__name__}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.shape[0]), int(r)))
    index = np.asarray(rows, np.int64).reshape(len(rows), int(r))
    flat = _tensor()(_xp(input._data).asarray(index.reshape(-1)))
    return input.index_select(0, flat).reshape(len(rows), int(r))
