"""Copies that change an array's layout, for the Tensor ops that need a C-contiguous result.

NumPy makes a transpose contiguous element by element in the output's order, a cache line of
the input per float once the matrix outgrows L1 (a 512 x 128 float32 transpose, an LSTM
layer's W_hh^T, took 44 us; 1024 x 256, 500 us); pyrt_transpose (csrc/kernels/transpose.c)
copies in tiles, 8 x 8 floats at a time in registers, in parallel (12 and 128 us on one
thread). Layout changes that move whole rows or planes are lists of block copies,
pyrt_copy_blocks (csrc/kernels/copy_blocks.c), in parallel where NumPy's assignment of a
strided view runs on one thread.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import F32, check_rc
from pyrt.ops._memory import empty

__all__ = ["copy_blocks", "swap_last_axes"]

_from_buffer, _FLOATS, _INT64S = ffi.from_buffer, ffi.typeof("float[]"), ffi.typeof("int64_t[]")
_ndarray = np.ndarray
# Below this many floats the call costs more than NumPy's copy saves.
_KERNEL_MIN = 256


def swap_last_axes(a):
    """a [..., m, n] (ndim >= 2) with its last two axes swapped, as a new C-contiguous array
    [..., n, m]: pyrt_transpose for a C-contiguous float32 NumPy array, else the array
    library's own copy (CuPy arrays, other dtypes, strided views)."""
    if (type(a) is _ndarray and a.dtype == F32 and a.size >= _KERNEL_MIN
            and a.flags.c_contiguous):
        *lead, m, n = a.shape
        out = empty((*lead, n, m), F32)
        rc = lib.pyrt_transpose(_from_buffer(_FLOATS, a), _from_buffer(_FLOATS, out),
                                a.size // (m * n), m, n)
        if rc:
            check_rc(rc, "transpose")
        return out
    if isinstance(a, _ndarray) or not type(a).__module__.startswith("cupy"):
        return np.ascontiguousarray(np.swapaxes(a, -1, -2))
    import cupy

    return cupy.ascontiguousarray(cupy.swapaxes(a, -1, -2))


def copy_blocks(src, src_at, length, shape):
    """A new float32 array of `shape` (count * length floats) whose block b of `length` floats
    is src's (a C-contiguous float32 NumPy array, seen flat) from offset src_at[b], or zeros
    where src_at[b] is negative."""
    src_at = np.ascontiguousarray(src_at, np.int64)
    out = empty(tuple(shape), F32)
    if out.size != src_at.size * length:
        raise ValueError(f"copy_blocks: {src_at.size} blocks of {length} floats do not fill "
                         f"an array of shape {tuple(shape)}")
    rc = lib.pyrt_copy_blocks(_from_buffer(_FLOATS, src), src.size,
                              _from_buffer(_INT64S, src_at), src_at.size, length,
                              _from_buffer(_FLOATS, out))
    if rc == lib.PYRT_EINVAL and src_at.size and int(src_at.max()) > src.size - length:
        raise ValueError(f"copy_blocks: src_at holds {int(src_at.max())}, but a block of "
                         f"{length} floats from there runs past src's {src.size}")
    check_rc(rc, "copy_blocks")
    return out
