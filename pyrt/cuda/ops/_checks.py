"""Argument checking of the CUDA ops: the checks of pyrt/ops/_checks.py bound to CuPy arrays.
A NumPy array where a CuPy array is expected is a RuntimeError naming both devices, as
PyTorch reports mixed devices; a wrong dtype is a TypeError, a wrong shape or layout of
``out`` a ValueError."""

import cupy
import numpy as np

from pyrt.cuda import DEVICE
from pyrt.ops._checks import array_checks


def mixed_devices(name):
    return RuntimeError(f"Expected all arrays to be on the same device, but found at least two "
                        f"devices, {DEVICE} and cpu! ({name} is on the cpu)")


def _not_a_device_array(x, name, what):
    """The error for an `x` whose type is not exactly cupy.ndarray."""
    if isinstance(x, np.ndarray):
        raise mixed_devices(name)
    if isinstance(x, cupy.ndarray):
        raise TypeError(f"{name} must be a cupy.ndarray, got {type(x).__name__}")
    raise TypeError(f"{name} must be {what} cupy.ndarray, got {type(x).__name__}")


def _device_address(a):
    return a.data.ptr


(as_f32, as_i64, check_f32, out_f32, in_place, param_grad, check_out,
 check_disjoint) = array_checks(cupy, _not_a_device_array, _device_address,
                                can_be_read_only=False)
