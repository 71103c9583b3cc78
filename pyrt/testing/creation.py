"""torch.testing.make_tensor for pyrt's dtypes: random tensors with torch's value ranges,
for tests."""

import collections.abc
import math
import warnings

import numpy as np

__all__ = ["make_tensor"]


def _kind(dtype):
    """'bool', 'int' or 'float' for the dtypes pyrt makes tensors of; None for others."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return None
    if dtype == np.bool_:
        return "bool"
    if dtype == np.int64:
        return "int"
    if dtype == np.float32:
        return "float"
    return None


def _is_dtype(dtype):
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _low_high(low, high, dtype, kind, lowest_inclusive, highest_exclusive, default_low,
              default_high):
    """torch's checks of `low` and `high`, defaults filled in and clamped to what `dtype`
    holds; integer bounds rounded up, as randint's [low, high) takes them."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and kind == "float":
        warnings.warn("Passing `low==high` to `pyrt.testing.make_tensor` for floating types "
                      "is deprecated. Use `pyrt.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest_inclusive}, "
                         f"{highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if kind != "float":
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False):
    """A tensor of `shape` (ints, or one sequence) filled with random values of `dtype` on
    `device`, drawn as torch draws them: float32 uniform in [low, high), default [-9, 9);
    int64 uniform in [low, high), default [-9, 10); bool False or True. `noncontiguous`
    gives a view of every other element of a wider tensor; `exclude_zero` replaces zeros by
    1 (integers, bools) or the smallest normal float32. Seeded by pyrt.manual_seed."""
    import pyrt

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    kind = _kind(dtype)
    if kind is None:
        name = np.dtype(dtype) if _is_dtype(dtype) else dtype
        raise TypeError(f"The requested dtype '{name}' is not supported by "
                        f"pyrt.testing.make_tensor(), which makes float32, int64 and bool "
                        f"tensors.")
    dtype = np.dtype(dtype)
    if requires_grad and kind != "float":
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if kind == "bool":
        low, high = _low_high(low, high, dtype, kind, 0, 2, 0, 2)
        result = pyrt.randint(low, high, shape, device=device, dtype=dtype)
    elif kind == "int":
        info = np.iinfo(np.int64)
        low, high = _low_high(low, high, dtype, kind, int(info.min), int(info.max), -9, 10)
        result = pyrt.randint(low, high, shape, device=device, dtype=dtype)
    else:
        info = np.finfo(np.float32)
        low, high = _low_high(low, high, dtype, kind, float(info.min), float(info.max), -9, 9)
        result = pyrt.empty(shape, device=device, dtype=dtype)
        if high - low >= float(info.max):  # the width would overflow: draw half, double it
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    if noncontiguous:
        result = result[..., 1::2]
    if exclude_zero:
        result[result == 0] = 1 if kind != "float" else float(np.finfo(np.float32).tiny)
    if kind == "float":
        result.requires_grad = requires_grad
    return result
