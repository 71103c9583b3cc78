"""More of PyTorch's ways to make a tensor: scalar_tensor (a 0-d tensor of a number), asarray
(an object as a tensor, sharing its memory where it can), range (torch's deprecated range, end
included) and logspace (powers of `base` at evenly spaced exponents)."""

import math
import numbers
import warnings

import numpy as np

from pyrt.functional import _tensor

__all__ = ["asarray", "logspace", "range", "scalar_tensor"]

_HELD = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))


def _held_dtype(dtype, name):
    """`dtype` as one a pyrt tensor holds (float32, int64, bool), else a TypeError."""
    from pyrt.tensor import _checked_dtype

    dtype = _checked_dtype(dtype)
    if dtype not in _HELD:
        raise TypeError(f"{name}(): pyrt tensors hold float32, int64 or bool, not {dtype}")
    return dtype


def _made(array, device, requires_grad):
    from pyrt.tensor import _check_can_require_grad, _check_device, _move

    if requires_grad:
        _check_can_require_grad(array.dtype)
    return _tensor()(_move(array, _check_device(device)), requires_grad)


def scalar_tensor(s, *, dtype=None, device="cpu", requires_grad=False):
    """A 0-d tensor holding the number `s`, float32 unless `dtype` says otherwise."""
    if isinstance(s, np.generic):
        s = s.item()
    if not isinstance(s, numbers.Real):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    dtype = np.dtype(np.float32) if dtype is None else _held_dtype(dtype, "scalar_tensor")
    from pyrt.selection import scalar_as

    value = scalar_as(s, dtype, "scalar_tensor(): s")
    return _made(np.full((), value, dtype), device, requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """`obj` (a Tensor, a NumPy array, a number or a nested sequence) as a tensor, as
    torch.asarray: a Tensor or a NumPy array whose dtype and device need no conversion is
    shared, not copied, unless copy=True; copy=False where a copy is needed is a ValueError.
    requires_grad=None keeps a Tensor's own flag (and its graph), else False."""
    from pyrt.tensor import Tensor, _check_device, _move

    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"asarray(): argument 'copy' must be a bool or None, got "
                        f"{type(copy).__name__}")
    if dtype is not None:
        dtype = _held_dtype(dtype, "asarray")
    if isinstance(obj, Tensor):
        target = obj.device if device is None else _check_device(device)
        same = (dtype is None or dtype == obj.dtype) and target == obj.device
        if not same and copy is False:
            raise ValueError(f"can't alias tensor of dtype {obj.dtype} on {obj.device} into "
                             f"dtype {dtype or obj.dtype} on {target}.")
        source = obj if requires_grad is None else obj.detach()
        out = source
        if copy or not same:
            out = source.to(target, dtype) if dtype is not None else source.to(target)
            if out._data is source._data:  # nothing converted: copy it
                out = out.clone()
        if requires_grad:
            out.requires_grad_()
        return out
    if isinstance(obj, np.ndarray) and obj.dtype in _HELD and (dtype is None
                                                               or dtype == obj.dtype):
        array = obj.copy() if copy else obj
    else:
        if copy is False:
            raise ValueError(f"can't alias {type(obj).__name__} of dtype "
                             f"{getattr(obj, 'dtype', 'of Python numbers')} into a tensor "
                             f"without a copy.")
        from pyrt.tensor import _as_array

        array = np.array(_as_array(obj, dtype))  # a copy; floats become float32
        if array.dtype not in _HELD:
            raise TypeError(f"asarray(): pyrt tensors hold float32, int64 or bool, not "
                            f"{array.dtype}")
    if array.dtype != (dtype or array.dtype):
        array = array.astype(dtype)
    return _made(_move(array, "cpu"), "cpu" if device is None else device,
                 bool(requires_grad))


def _number(value, name, function):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{function}(): argument '{name}' must be a number, got "
                        f"{type(value).__name__}")
    return value


def range(start=0, end=None, step=1, *, dtype=None, device="cpu", requires_grad=False):
    """start, start + step, ... up to and including end: floor((end - start) / step) + 1
    numbers, float32 unless `dtype` says otherwise (torch.range, deprecated as there: use
    arange, which leaves end out)."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    start, end, step = (_number(v, n, "range") for v, n in ((start, "start"), (end, "end"),
                                                          (step, "step")))
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dtype = np.dtype(np.float32) if dtype is None else _held_dtype(dtype, "range")
    if dtype.kind == "b":
        raise NotImplementedError('"range" not implemented for bool')
    count = math.floor((end - start) / step) + 1
    # start + i * step in float64, then converted, as torch computes in a wider type
    values = start + np.arange(count, dtype=np.float64) * step
    return _made(values.astype(dtype), device, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device="cpu", requires_grad=False):
    """`steps` numbers base ** e for e evenly spaced from start to end (both included), as
    torch.logspace; float32 unless `dtype` says otherwise."""
    from pyrt.tensor import linspace

    base = _number(base, "base", "logspace")
    dtype = np.dtype(np.float32) if dtype is None else _held_dtype(dtype, "logspace")
    if dtype.kind == "b":
        raise NotImplementedError('"logspace" not implemented for bool')
    exponents = linspace(start, end, steps, dtype=np.float32 if dtype.kind == "f" else dtype)
    with np.errstate(over="ignore"):  # beyond float32's range is inf, as in torch
        values = np.power(np.float64(base), exponents._data.astype(np.float64))
    if dtype.kind != "f":  # toward zero into integers
        values = np.trunc(values)
    return _made(values.astype(dtype), device, requires_grad)
