"""Argument checking shared by the CPU ops: clear errors, copies only where needed.

Conventions every op follows:
- inputs are float32 NumPy arrays (TypeError otherwise, naming the argument and the dtype);
  a non-contiguous input is copied to a contiguous one, a contiguous one is used as it is;
- ``out=`` must be a float32, C-contiguous array of exactly the result's shape (TypeError for
  the dtype, ValueError for shape or layout); it is returned;
- ``out`` may be the same array as an input only where the op says so; a partial overlap is a
  ValueError, since the result would depend on the order of the writes;
- C return codes become exceptions (``check_rc``).
"""

import operator

import numpy as np

from pyrt._pyrt_cffi import ffi, lib

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def as_f32(x, name):
    """`x` as a C-contiguous float32 ndarray, or TypeError naming `name`."""
    if type(x) is not np.ndarray:
        if isinstance(x, np.ndarray):
            x = np.asarray(x)
        else:
            raise TypeError(f"{name} must be a float32 numpy.ndarray, got {type(x).__name__}")
    if x.dtype is not F32 and x.dtype != F32:
        raise TypeError(f"{name} must have dtype float32, got {x.dtype}")
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return x


def as_i64(x, name):
    """`x` as a C-contiguous int64 ndarray (any integer array is converted)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be an integer numpy.ndarray, got {type(x).__name__}")
    if x.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {x.dtype}")
    if x.dtype != I64 or not x.flags.c_contiguous:
        x = np.ascontiguousarray(x, dtype=I64)
    return x


def out_f32(out, shape, name="out"):
    """A float32 result array of `shape`: `out` checked, or a new one."""
    if out is None:
        return np.empty(shape, F32)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a float32 numpy.ndarray, got {type(out).__name__}")
    if out.dtype != F32:
        raise TypeError(f"{name} must have dtype float32, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} has shape {out.shape}, expected {tuple(shape)}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return out


def check_no_partial_overlap(out, name, *inputs):
    """ValueError if `out` shares memory with an input without being exactly that array's
    buffer (same start, same size); `allowed` aliasing is the caller's business."""
    o0 = out.__array_interface__["data"][0]
    o1 = o0 + out.nbytes
    for arr, arr_name in inputs:
        a0 = arr.__array_interface__["data"][0]
        a1 = a0 + arr.nbytes
        if a0 < o1 and o0 < a1 and (a0, a1) != (o0, o1):
            raise ValueError(f"{name} partially overlaps {arr_name}")


def fptr(a):
    """A float * to a contiguous float32 array's data."""
    return ffi.from_buffer("float[]", a)


def iptr(a):
    return ffi.from_buffer("int64_t[]", a)


def axis_index(axis, ndim, name="axis"):
    """Normalise `axis` (negative counts from the end) or raise a clear error."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer or None, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of range for an array of {ndim} dimensions")
    return axis % ndim


_RC_ERRORS = {
    lib.PYRT_EINVAL: ValueError,
    lib.PYRT_ENOMEM: MemoryError,
}


def check_rc(rc, what):
    if rc != 0:
        raise _RC_ERRORS.get(rc, RuntimeError)(f"{what} failed (error {rc})")
