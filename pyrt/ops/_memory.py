"""The result arrays of the CPU ops.

An array of fewer than PYRT_BUFFER_MIN_BYTES comes from NumPy. A larger one lies in a block of
pyrt's buffer cache (csrc/runtime/buffers.c), which keeps a freed block for the next array of
its size class rather than giving its pages back to the system: a training step allocates the
same large arrays every step, and from malloc each of them would cost a page fault per 4 KiB
page, every step. Such an array is an ordinary NumPy array whose base is a cffi buffer; when
the last array viewing the block goes away, the block goes back to the cache.
"""

import math
import sys

import numpy as np

from pyrt._pyrt_cffi import ffi, lib

__all__ = ["empty", "empty_cache", "in_and_result", "result_like"]

_F32 = np.dtype(np.float32)
_MIN_BYTES = lib.PYRT_BUFFER_MIN_BYTES
_MAX_BYTES = sys.maxsize
_prod = math.prod
_np_empty = np.empty
_frombuffer = np.frombuffer
_ndarray = np.ndarray
_alloc, _free = lib.pyrt_buffer_alloc, lib.pyrt_buffer_free
_gc, _buffer, _NULL = ffi.gc, ffi.buffer, ffi.NULL
_from_buffer, _FLOATS = ffi.from_buffer, ffi.typeof("float[]")


def empty(shape, dtype=_F32):
    """An uninitialised C-contiguous array of `shape` (a sequence of ints) and `dtype` (a NumPy
    dtype object)."""
    nbytes = _prod(shape) * dtype.itemsize
    if nbytes < _MIN_BYTES:
        return _np_empty(shape, dtype)
    if nbytes > _MAX_BYTES:
        raise ValueError(f"an array of shape {tuple(shape)} is too big: {nbytes} bytes, "
                         f"more than the {_MAX_BYTES} an array can describe")
    ptr = _alloc(nbytes)
    if ptr == _NULL:
        raise MemoryError(f"cannot allocate {nbytes} bytes for an array of shape {shape}")
    # the buffer keeps the pointer alive, and the array the buffer; the last of them to go
    # passes the block to pyrt_buffer_free
    return _frombuffer(_buffer(_gc(ptr, _free), nbytes), dtype).reshape(shape)


def result_like(out, x):
    """The result array of an op's common call on an array like `x` (the fast paths of
    pyrt.ops): a new array of x's shape, or `out` if it is a float32 ndarray of that shape.
    ValueError otherwise, which sends the call to its op's general path."""
    if out is None:
        return _np_empty(x.shape, _F32) if x.nbytes < _MIN_BYTES else empty(x.shape, _F32)
    if type(out) is _ndarray and out.dtype is _F32 and out.shape == x.shape:
        return out
    raise ValueError


def in_and_result(x, out):
    """(x's pointer, the result array, its pointer) for an op's common call on `x`, a
    float32 ndarray: see result_like. ValueError when x is not C-contiguous or the result not
    a writable C-contiguous array, as from_buffer checks."""
    px = _from_buffer(_FLOATS, x)
    res = result_like(out, x)
    return px, res, _from_buffer(_FLOATS, res, True)


def empty_cache():
    """Give the memory of the buffer cache's unused blocks back to the system; returns how
    many bytes that was. Arrays still in use keep theirs."""
    return lib.pyrt_buffer_trim()
