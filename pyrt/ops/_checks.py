"""Argument checking shared by the CPU and CUDA ops: clear errors, copies only where needed.

Conventions every op follows, on either backend:
- inputs are float32 arrays of the backend's type (TypeError otherwise, naming the argument
  and the dtype); a non-contiguous input is copied to a contiguous one, a contiguous one is
  used as it is;
- ``out=`` must be a float32, C-contiguous array of exactly the result's shape (TypeError for
  the dtype, ValueError for shape or layout); it is returned;
- an array updated in place (a parameter, an optimizer's state) is never copied, since a copy
  would lose the update: a wrong shape or layout is a ValueError;
- ``out`` may be the same array as an input only where the op says so; a partial overlap is a
  ValueError, since the result would depend on the order of the writes;
- C return codes become exceptions (``check_rc``).

``array_checks`` writes these checks once for any array module; this file binds them to NumPy,
pyrt/cuda/ops/_checks.py to CuPy.
"""

import operator
from typing import Callable, NamedTuple

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._memory import empty

F32 = np.dtype(np.float32)
I64 = np.dtype(np.int64)


class ArrayChecks(NamedTuple):
    """The checks of one backend (see array_checks)."""

    as_f32: Callable
    as_i64: Callable
    check_f32: Callable
    out_f32: Callable
    in_place: Callable
    param_grad: Callable
    check_out: Callable
    check_disjoint: Callable


def array_checks(xp, other_type, address, can_be_read_only, empty=None):
    """The checks of the arrays of module `xp` (numpy or cupy). What differs between the
    backends is passed in:

    - ``other_type(x, name, what)`` is called when ``type(x)`` is not exactly ``xp.ndarray``:
      it returns if the backend takes `x` all the same (a NumPy subclass), else it raises the
      error naming `name`, `what` being the array expected ("a float32", "an integer");
    - ``address(a)``: the address of a's first byte, to tell an input that is exactly `out`'s
      buffer from one that overlaps it in part;
    - `can_be_read_only`: whether arrays carry a writeable flag (NumPy's do; CuPy's are always
      writable);
    - ``empty(shape, dtype)`` makes result arrays (default: ``xp.empty``).

    The checks close over these, so an exact, contiguous float32 array passes at the cost of
    checks written for one backend alone.
    """
    array_type = xp.ndarray
    empty = xp.empty if empty is None else empty
    asarray, ascontiguousarray = xp.asarray, xp.ascontiguousarray
    may_share_memory = xp.may_share_memory

    def as_f32(x, name):
        """`x` as a C-contiguous float32 array, or an error naming `name`."""
        if type(x) is not array_type:
            other_type(x, name, "a float32")
            x = asarray(x)
        if x.dtype is not F32 and x.dtype != F32:
            raise TypeError(f"{name} must have dtype float32, got {x.dtype}")
        if not x.flags.c_contiguous:
            x = ascontiguousarray(x)
        return x

    def as_i64(x, name):
        """`x` as a C-contiguous int64 array (any integer array is converted)."""
        if type(x) is not array_type:
            other_type(x, name, "an integer")
        if x.dtype.kind not in "iu":
            raise TypeError(f"{name} must have an integer dtype, got {x.dtype}")
        if x.dtype.kind == "u" and x.dtype.itemsize == 8 and x.size:
            largest = int(x.max())
            if largest > np.iinfo(I64).max:  # it would wrap around to a negative int64
                raise ValueError(f"{name} holds {largest}, too large for int64")
        if x.dtype != I64 or not x.flags.c_contiguous:
            x = ascontiguousarray(x, dtype=I64)
        return x

    def check_f32(x, name):
        """`x` itself if it is a float32 array of any layout, else an error naming `name`."""
        if type(x) is not array_type:
            other_type(x, name, "a float32")
        if x.dtype != F32:
            raise TypeError(f"{name} must have dtype float32, got {x.dtype}")
        return x

    def out_f32(out, shape, name="out", disjoint=()):
        """A float32 result array of `shape`: `out` checked, or a new one. `disjoint` lists
        inputs ((array or None, name) pairs) that `out` may not overlap at all
        (check_disjoint), for kernels that read an input element for several outputs."""
        if out is None:
            return empty(shape, F32)
        check_f32(out, name)
        if out.shape != tuple(shape):
            raise ValueError(f"{name} has shape {out.shape}, expected {tuple(shape)}")
        if not out.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous")
        if can_be_read_only and not out.flags.writeable:
            raise ValueError(f"{name} is read-only")
        check_disjoint(out, *disjoint)
        return out

    def in_place(x, name, shape=None):
        """`x` as it is, or an error: an array updated in place cannot be copied. `shape` is
        the parameter's, when `x` is a state array that must match it."""
        check_f32(x, name)
        if shape is not None and x.shape != shape:
            raise ValueError(f"{name} has shape {x.shape}, expected the shape of param {shape}")
        if not x.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous: it is updated in place")
        if can_be_read_only and not x.flags.writeable:
            raise ValueError(f"{name} is read-only: it is updated in place")
        return x

    def param_grad(grad, shape):
        """The gradient of a parameter of `shape`, as a C-contiguous float32 array."""
        grad = as_f32(grad, "grad")
        if grad.shape != shape:
            raise ValueError(f"grad has shape {grad.shape}, expected the shape of param {shape}")
        return grad

    def check_out(res, *inputs):
        """A given `out` may be an input, or share exactly its memory: element-for-element
        kernels read each element before writing it. Any other overlap (out = a with b a row
        of a, say) is a ValueError. `inputs` are (array or None, name) pairs."""
        for arr, name in inputs:
            if arr is None or arr is res or not may_share_memory(res, arr):
                continue
            if (address(arr), arr.nbytes) != (address(res), res.nbytes):
                raise ValueError(f"out partially overlaps {name}")

    def check_disjoint(res, *inputs):
        """ValueError if `out` shares any memory with an input ((array or None, name) pairs):
        for kernels that read an input element for several outputs."""
        for arr, name in inputs:
            if arr is not None and may_share_memory(res, arr):
                raise ValueError(f"out overlaps {name}")

    return ArrayChecks(as_f32, as_i64, check_f32, out_f32, in_place, param_grad, check_out,
                       check_disjoint)


def _numpy_subclass(x, name, what):
    """A subclass of numpy.ndarray is taken (as_f32 views it as a plain ndarray) when its
    buffer is all its values (numpy.memmap, say); a masked array is not: its mask would be
    lost."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} must be {what} numpy.ndarray, got a masked array (its mask "
                        "would be ignored): pass x.filled(value) or x.compressed()")
    if not isinstance(x, np.ndarray):
        # an array's .data is a memoryview: the array was likely meant, or a tensor
        hint = (": was a numpy.ndarray passed where a pyrt.Tensor was expected?"
                if type(x) is memoryview else "")
        if type(x).__module__.partition(".")[0] == "cupy":
            # the CUDA ops take over pyrt.ops' names once the backend is loaded, and see
            # device arrays among the first two positional arguments
            hint = (": pyrt.ops runs CuPy arrays once the CUDA backend is loaded (moving a "
                    "tensor to 'cuda' or pyrt.cuda.require() loads it), passed as the first "
                    "two positional arguments, with every array on the device")
        raise TypeError(f"{name} must be {what} numpy.ndarray, got {type(x).__name__}{hint}")


def _numpy_address(a):
    return a.__array_interface__["data"][0]


(as_f32, as_i64, check_f32, out_f32, in_place, param_grad, check_out,
 check_disjoint) = array_checks(np, _numpy_subclass, _numpy_address, can_be_read_only=True,
                                  empty=empty)


def check_shape(x, name, expected):
    """`x` if its shape is `expected`, else a ValueError naming `name`."""
    if x.shape != expected:
        raise ValueError(f"{name} must have shape {expected}, got {x.shape}")
    return x


_FLOATS, _INT64S = ffi.typeof("float[]"), ffi.typeof("int64_t[]")  # (parsed once)


def fptr(a):
    """A float * to a contiguous float32 array's data."""
    return ffi.from_buffer(_FLOATS, a)


def iptr(a):
    return ffi.from_buffer(_INT64S, a)


def axis_index(axis, ndim, name="axis", expected="an integer or None"):
    """Normalise `axis` (negative counts from the end) or raise a clear error; `expected`
    says what the caller takes, for the TypeError."""
    try:
        if isinstance(axis, bool):  # an int to Python, but never meant as an axis (NumPy agrees)
            raise TypeError
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be {expected}, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of range for an array of {ndim} dimensions")
    return axis % ndim


_RC_ERRORS = {
    lib.PYRT_EINVAL: ValueError,
    lib.PYRT_ENOMEM: MemoryError,
    lib.PYRT_EOVERLAP: ValueError,
}


def check_rc(rc, what):
    if rc != 0:
        raise _RC_ERRORS.get(rc, RuntimeError)(f"{what} failed (error {rc})")
