"""What the in-place Tensor methods need beyond Tensor._write_result: comparisons and
logical ops written into self's own dtype (1 and 0, with a zero gradient, as PyTorch records
eq_), fill_diagonal, and the in-place shape changes (t_, transpose_, squeeze_, unsqueeze_).

A shape change in place gives self a new shape: outside a graph self's array becomes a view
of the one it had (tensors sharing that memory still share it, as with PyTorch's strides); in
a graph self takes the out-of-place op's result and history, as _write_result records an op.
"""

import numbers

import numpy as np

from pyrt.functional import _make, _tensor, _xp
from pyrt.ops._checks import F32

__all__ = ["as_number_in_place", "fill_diagonal", "reshaped_in_place"]


def _zero_gradient(result, parents):
    """`result` (a comparison's bool tensor) as a tensor of parents[0]'s dtype whose
    gradient to every parent is 0."""
    values = result._data.astype(parents[0]._data.dtype)

    def backward(g):
        return tuple(_xp(g).zeros(p._data.shape, F32) if p._requires_grad else None
                     for p in parents)

    return _make(values, parents, backward, reads=False)


def as_number_in_place(self, name, *args):
    """self.name(*args) (a comparison or logical op) written into self as 1 and 0 of self's
    dtype; in a graph its gradient is 0, as PyTorch's."""
    operands = tuple(a for a in args if isinstance(a, _tensor()))
    return self._write_result(
        lambda old: _zero_gradient(getattr(old, name)(*args), (old,) + operands), *operands)


def fill_diagonal(input, fill_value, wrap=False):
    """input with its main diagonal (elements [i, i, ..., i]) set to fill_value, as
    torch.Tensor.fill_diagonal_; every dim of a tensor of more than 2 must have one length.
    With wrap, a 2-D matrix taller than wide has its diagonal restart N+1 rows down (every
    (N+1)-th element of the flattened matrix, N its width). The gradient is g off the
    diagonal, 0 on it."""
    xd = input._data
    if not isinstance(fill_value, numbers.Number):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' must be Number, not "
                        f"{type(fill_value).__name__}")
    if isinstance(fill_value, complex):
        raise TypeError("fill_diagonal_(): pyrt has no complex dtype")
    if not isinstance(wrap, (bool, np.bool_)):
        raise TypeError(f"fill_diagonal_(): argument 'wrap' must be bool, not "
                        f"{type(wrap).__name__}")
    if xd.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if xd.ndim > 2 and len(set(xd.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    xp = _xp(xd)
    width = xd.shape[1]
    if wrap and xd.ndim == 2:
        places = xp.arange(0, xd.size, width + 1)
    else:
        # element [i, ..., i] of a C-ordered array sits i times the sum of the strides in
        step = sum(int(np.prod(xd.shape[d + 1:])) for d in range(xd.ndim))
        places = xp.arange(min(xd.shape)) * step
    out = xd.copy().reshape(-1)
    out[places] = xp.asarray(fill_value).astype(xd.dtype)  # (cast as PyTorch casts a Scalar)

    def backward(g):
        dx = g.copy().reshape(-1)
        dx[places] = 0
        return (dx.reshape(xd.shape),)

    return _make(out.reshape(xd.shape), (input,), backward, reads=False)


def reshaped_in_place(self, compute, view=None):
    """self given the shape of compute(self) (an out-of-place shape op): in a graph its
    result and history (refused where _in_graph refuses), else view(self's array), by
    default self's array reshaped, which shares self's memory."""
    if self._in_graph():
        old = _tensor().__new__(_tensor())
        old._data = self._data
        old._grad = None
        old._take_history(self)
        result = compute(old)
        self._data = result._data
        self._take_history(result)
        return self
    shape = compute(self).shape  # (the argument checks and errors are the out-of-place op's)
    self._data = self._data.reshape(shape) if view is None else view(self._data)
    return self

