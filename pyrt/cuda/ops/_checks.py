"""Argument checking of the CUDA ops: the CPU ops' conventions (pyrt/ops/_checks.py) on CuPy
arrays. A NumPy array where a CuPy array is expected is a RuntimeError naming both devices,
as PyTorch reports mixed devices; a wrong dtype is a TypeError, a wrong shape or layout of
``out`` a ValueError."""

import cupy
import numpy as np

from pyrt.cuda import DEVICE

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


def mixed_devices(name):
    return RuntimeError(f"Expected all arrays to be on the same device, but found at least two "
                        f"devices, {DEVICE} and cpu! ({name} is on the cpu)")


def _device_array(x, name, what):
    if type(x) is not cupy.ndarray:
        if isinstance(x, (np.ndarray, cupy.ndarray)):
            raise mixed_devices(name) if isinstance(x, np.ndarray) else TypeError(
                f"{name} must be a cupy.ndarray, got {type(x).__name__}")
        raise TypeError(f"{name} must be {what} cupy.ndarray, got {type(x).__name__}")
    return x


def as_f32(x, name):
    """`x` as a C-contiguous float32 CuPy array, or an error naming `name`."""
    x = _device_array(x, name, "a float32")
    if x.dtype != F32:
        raise TypeError(f"{name} must have dtype float32, got {x.dtype}")
    if not x.flags.c_contiguous:
        x = cupy.ascontiguousarray(x)
    return x


def as_i64(x, name):
    """`x` as a C-contiguous int64 CuPy array (any integer array is converted)."""
    x = _device_array(x, name, "an integer")
    if x.dtype.kind not in "iu":
        raise TypeError(f"{name} must have an integer dtype, got {x.dtype}")
    if x.dtype != I64 or not x.flags.c_contiguous:
        x = cupy.ascontiguousarray(x, dtype=I64)
    return x


def out_f32(out, shape, name="out"):
    """A float32 result array of `shape` on the device: `out` checked, or a new one."""
    if out is None:
        return cupy.empty(shape, F32)
    _device_array(out, name, "a float32")
    if out.dtype != F32:
        raise TypeError(f"{name} must have dtype float32, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} has shape {out.shape}, expected {tuple(shape)}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return out


def check_out(res, *inputs):
    """`out` may be an input or share exactly its memory (the kernels work element for
    element); a partial overlap is a ValueError."""
    for arr, name in inputs:
        if arr is res or arr is None or not cupy.may_share_memory(res, arr):
            continue
        if (arr.data.ptr, arr.nbytes) != (res.data.ptr, res.nbytes):
            raise ValueError(f"out partially overlaps {name}")
