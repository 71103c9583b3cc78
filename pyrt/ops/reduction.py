"""Reductions of float32 arrays: sum, mean, max and argmax, with NumPy's names and results.

Every reduction sees its input as ``[outer, len, inner]`` around the reduced axes and runs one
C kernel (csrc/kernels/reduce.c) over it. The summation order is fixed by the shape alone, so
results are bitwise identical at any thread count. A full reduction returns a 0-d array.
``axis`` may be None (all axes), an integer (negative counts from the end) or, for sum, mean
and max, a tuple of integers: each run of adjacent axes is reduced in one kernel call, runs
from the last to the first.
"""

import math
import warnings

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import (
    F32,
    I64,
    as_f32,
    axis_index,
    check_out,
    check_rc,
    fptr,
    iptr,
    out_f32,
)
from pyrt.ops._memory import empty

__all__ = ["argmax", "max", "mean", "sum"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_ndarray, _np_empty = np.ndarray, np.empty

_EMPTY_MAX = "zero-size array to reduction operation maximum which has no identity"
_EMPTY_ARGMAX = "attempt to get argmax of an empty sequence"


def _axes(axis, ndim):
    """The reduced axes as a sorted tuple, from None, an integer or a tuple of integers."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        axes = sorted(axis_index(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"axis {axis} names an axis more than once")
        return tuple(axes)
    return (axis_index(axis, ndim),)


def _zero_d_axis(axis, ndim):
    """Called when axis_index refused the integer `axis`: returns if `x` is 0-d and axis is
    0 or -1, which NumPy takes as the array's one element, else raises that error again."""
    if ndim or axis not in (0, -1):
        raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimensions")


def _runs(axes):
    """Runs of adjacent axes as (first, stop) pairs, e.g. (0, 1, 3) -> [(0, 2), (3, 4)]."""
    runs = []
    for a in axes:
        if runs and runs[-1][1] == a:
            runs[-1] = (runs[-1][0], a + 1)
        else:
            runs.append((a, a + 1))
    return runs


def _result_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _out(out, shape, x):
    """The result array: `out` checked (it may not overlap `x` in part), or a new one."""
    res = out_f32(out, shape)
    if out is not None:
        check_out(res, (x, "x"))
    return res


def _reduce(kernel, what, x, axis, keepdims, out, empty_error=None):
    """Run `kernel` over the axes of `axis`; returns (result, number of elements reduced)."""
    if axis is None and out is None and type(x) is _ndarray and x.dtype is F32:
        # the commonest call, a float32 ndarray into a new 0-d array, checked in few steps
        # (from_buffer refuses an array that is not C-contiguous: the general path copies it)
        try:
            px = _from_buffer(_FLOATS, x)
        except ValueError:
            pass
        else:
            n = x.size
            if n == 0 and empty_error:
                raise ValueError(empty_error)
            res = _np_empty((1,) * x.ndim if keepdims else (), F32)
            rc = kernel(px, _from_buffer(_FLOATS, res), 1, n, 1)
            if rc:
                check_rc(rc, what)
            return res, n
    x = as_f32(x, "x")
    shape = x.shape
    if axis is None:
        # the common cases first, kept short: everything, or one axis
        n = x.size
        if n == 0 and empty_error:
            raise ValueError(empty_error)
        res = _out(out, (1,) * x.ndim if keepdims else (), x)
        check_rc(kernel(fptr(x), fptr(res), 1, n, 1), what)
        return res, n
    if not isinstance(axis, tuple):
        try:
            a = axis_index(axis, x.ndim)
        except ValueError:
            _zero_d_axis(axis, x.ndim)
            return _reduce(kernel, what, x, None, keepdims, out, empty_error)
        n = shape[a]
        if n == 0 and empty_error:
            raise ValueError(empty_error)
        res = _out(out, shape[:a] + ((1,) if keepdims else ()) + shape[a + 1:], x)
        rc = kernel(fptr(x), fptr(res), math.prod(shape[:a]), n, math.prod(shape[a + 1:]))
        check_rc(rc, what)
        return res, n
    axes = _axes(axis, x.ndim)
    res = _out(out, _result_shape(shape, axes, keepdims), x)
    runs = _runs(axes)
    if not runs:
        np.copyto(res, x.reshape(res.shape))
        return res, 1
    count = 1
    cur, dims = x, list(shape)
    for i in range(len(runs) - 1, -1, -1):
        first, stop = runs[i]
        length = math.prod(dims[first:stop])
        if length == 0 and empty_error:
            raise ValueError(empty_error)
        count *= length
        rest = dims[:first] + dims[stop:]
        dst = res if i == 0 else empty(rest)
        rc = kernel(fptr(cur), fptr(dst), math.prod(dims[:first]), length,
                    math.prod(dims[stop:]))
        check_rc(rc, what)
        cur, dims = dst, rest
    return res, count


def sum(x, axis=None, *, keepdims=False, out=None):
    """Sum of the elements of float32 `x` over `axis`; a 0-d array when axis is None."""
    return _reduce(lib.pyrt_sum, "sum", x, axis, keepdims, out)[0]


def mean(x, axis=None, *, keepdims=False, out=None):
    """Mean over `axis`: the sum divided by the number of elements reduced, in double and
    rounded once (NaN, with NumPy's RuntimeWarning, when that number is 0)."""
    res, n = _reduce(lib.pyrt_sum, "mean", x, axis, keepdims, out)
    if n == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        res.fill(np.nan)
    elif n != 1:
        if res.ndim == 0:
            res[()] = float(res) / n
        else:
            np.divide(res, n, out=res, dtype=np.float64)
    return res


def max(x, axis=None, *, keepdims=False, out=None):
    """Largest element over `axis`; NaN if any element reduced is NaN (NumPy's rule).
    ValueError if a reduced axis has length 0."""
    return _reduce(lib.pyrt_max, "max", x, axis, keepdims, out, _EMPTY_MAX)[0]


def argmax(x, axis=None, *, keepdims=False):
    """Index of the first maximum along `axis` as int64 (the first NaN, if there is one);
    with axis None, the index into the flattened array, as a 0-d array.
    ValueError if the axis has length 0."""
    x = as_f32(x, "x")
    shape = x.shape
    if axis is None:
        outer, length, inner = 1, x.size, 1
        res_shape = (1,) * x.ndim if keepdims else ()
    else:
        try:
            a = axis_index(axis, x.ndim)
        except ValueError:
            _zero_d_axis(axis, x.ndim)
            return argmax(x, None, keepdims=keepdims)
        outer, length, inner = math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:])
        res_shape = _result_shape(shape, (a,), keepdims)
    if length == 0:
        raise ValueError(_EMPTY_ARGMAX)
    res = empty(res_shape, I64)
    check_rc(lib.pyrt_argmax(fptr(x), iptr(res), outer, length, inner), "argmax")
    return res
