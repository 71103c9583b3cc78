"""as_strided, as_strided_ and as_strided_scatter: views of a tensor's memory with sizes and
strides given in elements, as PyTorch's.

A tensor's storage is the memory of the array at the end of its array's chain of bases (the
array that owns the memory), seen as a flat run of elements; its storage_offset is where
its first element lies in that run. as_strided(x, size, stride, offset) is the view whose
element i lies at offset + sum(i_k * stride_k) of x's storage; offset defaults to x's own.
On the CPU (and with CuPy on the GPU) the view shares the memory, made by the backend's
stride tricks.

Gradients work on storage positions: the gradient of an as_strided view is scatter-added
into a zero storage (so elements read by several overlapping windows receive the sum of
their gradients) and gathered back at the input's own positions; where the input itself
covers a position more than once (an expanded tensor), that position's gradient is shared
equally among its copies, as PyTorch's as_strided_backward does.
"""

import numbers

import numpy as np

from pyrt.functional import _make, _xp

__all__ = ["as_strided", "as_strided_", "as_strided_scatter"]


def _address(array):
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    return int(array.data.ptr)


def _storage(array):
    """(the flat storage of `array`: a 1-D array of its dtype over its owner's memory,
    array's offset in it). An array whose owner is not one dense block (possible only for
    memory NumPy did not allocate) gets a copy of its own as storage."""
    root = array
    while isinstance(getattr(root, "base", None), type(array)):
        root = root.base
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.nbytes % array.itemsize:
        return _xp(array).ascontiguousarray(array).reshape(-1), 0
    flat = root.ravel(order="A")  # a view, in memory order
    if flat.dtype != array.dtype:
        flat = flat.view(array.dtype)
    return flat, (_address(array) - _address(root)) // array.itemsize


def _ints(values, name):
    if isinstance(values, numbers.Integral):
        values = (values,)
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise TypeError(f"as_strided(): argument '{name}' must be tuple of ints, but got "
                        f"{values!r:.60}")
    return tuple(int(v) for v in values)


def _geometry(input, size, stride, storage_offset):
    """(size, stride, offset) checked against input's storage, as PyTorch checks them."""
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    flat, own_offset = _storage(input._data)
    if storage_offset is None:
        offset = own_offset
    elif not isinstance(storage_offset, numbers.Integral) or isinstance(storage_offset, bool):
        raise TypeError(f"as_strided(): argument 'storage_offset' must be int, got "
                        f"{type(storage_offset).__name__}")
    else:
        offset = int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if all(size):
        needed = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if needed > flat.size:
            itemsize = input._data.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, "
                               f"storage offset {offset}, and itemsize {itemsize} requiring a "
                               f"storage size of {needed * itemsize} are out of bounds for "
                               f"storage of size {flat.size * itemsize}")
    return flat, own_offset, size, stride, offset


def _view(flat, size, stride, offset):
    """The view (size, stride, offset) of the 1-D storage `flat`; its chain of bases leads
    back to flat's, so that it has flat's storage in turn."""
    itemsize = flat.itemsize
    strides = tuple(s * itemsize for s in stride)
    if isinstance(flat, np.ndarray):
        return np.ndarray(size, flat.dtype, buffer=flat, offset=offset * itemsize,
                          strides=strides)
    start = flat[offset:] if offset < flat.size else flat[:0]
    return _xp(flat).lib.stride_tricks.as_strided(start, shape=size, strides=strides)


def _positions(xp, size, stride, offset):
    """The storage position of every element of the view (size, stride, offset)."""
    pos = xp.full(size, offset, np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (xp.arange(n, dtype=np.int64) * s).reshape(shape)
    return pos


def _own_positions(array, offset):
    steps = tuple(s // array.itemsize for s in array.strides)
    return _positions(_xp(array), array.shape, steps, offset)


def as_strided(input, size, stride, storage_offset=None):
    """The view of input's storage with `size` and `stride` (in elements) starting at
    `storage_offset` (input's own storage offset by default); differentiable (see the
    module docstring)."""
    flat, own_offset, size, stride, offset = _geometry(input, size, stride, storage_offset)
    out = _view(flat, size, stride, offset)
    in_shape, in_array = input.shape, input._data

    def backward(g):
        xp = _xp(g)
        out_pos = _positions(xp, size, stride, offset).reshape(-1)
        in_pos = _own_positions(in_array, own_offset).reshape(-1)
        # only the stretch of storage that either geometry touches
        both = xp.concatenate((out_pos, in_pos))
        lo = int(both.min()) if both.size else 0
        length = (int(both.max()) - lo + 1) if both.size else 1
        storage = xp.bincount(out_pos - lo, weights=g.reshape(-1).astype(np.float64),
                              minlength=length)
        gathered = storage[in_pos - lo]
        copies = xp.bincount(in_pos - lo, minlength=length)[in_pos - lo]
        if bool((copies > 1).any()):
            gathered = gathered / copies
        return (gathered.astype(g.dtype).reshape(in_shape),)

    return _make(out, (input,), backward, reads=False)


def as_strided_(input, size, stride, storage_offset=None):
    """input made, in place, the as_strided view of its own storage (its history, in a
    graph, that of the view)."""
    from pyrt.inplace_forms import reshaped_in_place

    _, _, size, stride, offset = _geometry(input, size, stride, storage_offset)
    return reshaped_in_place(input, lambda old: as_strided(old, size, stride, offset),
                             lambda array: _view(_storage(array)[0], size, stride, offset))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input (of its whole storage, so that the geometry reaches what it reaches
    in input's) with src written into the as_strided view (size, stride, storage_offset).
    Gradients: src gets the gradient at the view's positions; input the gradient with
    those positions zeroed (where windows overlap, the last write of src wins, as in
    PyTorch)."""
    from pyrt.tensor import Tensor

    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    flat, own_offset, size, stride, offset = _geometry(input, size, stride, storage_offset)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(size)}")
    if src._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected src to have the same dtype as self, got {src.dtype} and "
                           f"{input.dtype}")
    copy = flat.copy()
    steps = tuple(s // input._data.itemsize for s in input._data.strides)
    _view(copy, size, stride, offset)[...] = src._data
    out = _view(copy, input.shape, steps, own_offset)
    in_shape = input.shape

    def backward(g):
        xp = _xp(g)
        g_flat = xp.zeros(copy.shape, g.dtype)
        _view(g_flat, in_shape, steps, own_offset)[...] = g
        g_src = _view(g_flat, size, stride, offset).copy()
        _view(g_flat, size, stride, offset)[...] = 0
        return _view(g_flat, in_shape, steps, own_offset).copy(), g_src

    return _make(out, (input, src), backward, reads=False)
