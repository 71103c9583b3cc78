"""The out-of-place writes into a view of a tensor, as PyTorch's *_scatter ops: input with
the elements of one of its views (a diagonal, one index along a dim, a strided slice)
replaced by src, whose shape is that view's.

Each is one rule: the view's places are found by taking the same view of the array of flat
positions 0 .. numel - 1, after which the write is out.flat[places] = src. The gradient goes
back the same way: src's is the incoming gradient at those places, input's the incoming one
with them zeroed.
"""

import numbers

import numpy as np

from pyrt.functional import _integer, _make, _tensor, _xp, dim_index
from pyrt.windows import _diagonal_index

__all__ = ["diagonal_scatter", "select_scatter", "slice_scatter"]


def _scatter_into(name, input, src, view):
    """input with view(positions) replaced by src; view maps an array of input's shape to
    the positions of the view (an array of its shape)."""
    Tensor = _tensor()
    for value, arg in ((input, "input"), (src, "src")):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                            f"{type(value).__name__}")
    x, s = input._data, src._data
    xp = _xp(x)
    if _xp(s) is not xp:
        raise RuntimeError(f"{name}(): expected input and src on the same device, got "
                           f"{input.device} and {src.device}")
    places = view(np.arange(x.size, dtype=np.int64).reshape(x.shape))
    if places.shape != s.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(s.shape)}, slice size = {list(places.shape)}")
    places = xp.asarray(places.reshape(-1))
    out = x.copy().reshape(-1)
    out[places] = s.reshape(-1)  # converted to input's dtype, as torch copies

    def backward(g):
        flat = g.reshape(-1)
        kept = flat.copy()
        kept[places] = 0
        return kept.reshape(x.shape), xp.ascontiguousarray(flat[places].reshape(s.shape))

    return _make(out.reshape(x.shape), (input, src), backward, reads=False)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its diagonal `offset` in dims dim1 and dim2 (input.diagonal(offset, dim1,
    dim2)) replaced by src."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"diagonal_scatter(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if not _integer(offset):
        raise TypeError(f"diagonal_scatter(): argument 'offset' must be an int, got "
                        f"{type(offset).__name__}")
    d1, d2 = dim_index(dim1, input.ndim), dim_index(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")

    def view(positions):
        moved = np.moveaxis(positions, (d1, d2), (-2, -1))
        rows, cols = _diagonal_index(moved.shape[-2], moved.shape[-1], int(offset))
        return moved[..., rows, cols]

    return _scatter_into("diagonal_scatter", input, src, view)


def select_scatter(input, src, dim, index):
    """input with the slice at `index` along `dim` (input.select(dim, index)) replaced by
    src, whose shape is input's without dim."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"select_scatter(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = dim_index(dim, input.ndim)
    if not _integer(index):
        raise TypeError(f"select_scatter(): argument 'index' must be an int, got "
                        f"{type(index).__name__}")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {d}")
    return _scatter_into("select_scatter", input, src,
                         lambda positions: np.take(positions, int(index) % size, axis=d))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with its slice start:end:step along `dim` replaced by src (start and end
    clamped into the dim, as a slice reads them; step positive)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"slice_scatter(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    d = dim_index(dim, input.ndim)
    for value, arg in ((start, "start"), (end, "end"), (step, "step")):
        if value is not None and not (isinstance(value, numbers.Integral)
                                      and not isinstance(value, bool)):
            raise TypeError(f"slice_scatter(): argument '{arg}' must be an int or None, got "
                            f"{type(value).__name__}")
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    cut = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into("slice_scatter", input, src, lambda positions: positions[cut])
