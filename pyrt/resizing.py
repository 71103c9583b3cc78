"""Tensor.resize_ and resize_as_, and the strided factories (empty_strided,
new_empty_strided), over pyrt's C-contiguous data.

resize_ keeps the elements in C order: as many of the old ones as fit come first, and new
places hold uninitialised values, as in torch. A tensor that requires grad cannot be resized
(torch's rule, under no_grad too). empty_strided checks its strides as torch does and returns
C-contiguous data: the values of an empty tensor are unspecified, so only ``stride()`` tells
the two apart.
"""

import numbers

import numpy as np

__all__ = ["check_strides", "resize_"]


def resize_(self, size):
    """self with shape `size`, in place (a new array when the element count changes)."""
    from pyrt.functional import _xp
    from pyrt.tensor import _shape

    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape(size)
    xp = _xp(self._data)
    count = int(np.prod(shape, dtype=np.int64))
    if count == self._data.size:
        self._data = xp.ascontiguousarray(self._data).reshape(shape)
        return self
    flat = xp.empty(count, self._data.dtype)
    kept = min(count, self._data.size)
    flat[:kept] = self._data.reshape(-1)[:kept]
    self._data = flat.reshape(shape)
    return self


def check_strides(size, stride, name):
    """`size` and `stride` of empty_strided: sequences of ints of one length, strides
    non-negative; the shape, as a tuple."""
    from pyrt.tensor import _shape

    for value, arg in ((size, "size"), (stride, "stride")):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{name}(): argument '{arg}' must be a tuple of ints, got "
                            f"{type(value).__name__}")
    shape = _shape((size,))
    if len(stride) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides "
                           f"for {len(shape)} dims")
    for s in stride:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{name}(): argument 'stride' must be a tuple of ints, got an "
                            f"element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"{name}(): strides must be non-negative, got {tuple(stride)}")
    return shape
