"""torch.segment_reduce: data cut along `axis` into consecutive segments of given lengths (or
between given offsets), each reduced to one value by sum, mean, max, min or prod.

An empty segment gives `initial` when given, else the reduction's identity: 0 for sum, 1 for
prod, -inf for max, +inf for min and NaN for mean. `initial`, when given, also enters every
non-empty segment's reduction (mean divides by the segment's length alone), as in torch.
Gradients: sum passes g to each element, mean g / length, max and min split g evenly among
the elements equal to the result, prod g times the product of the other elements (and
`initial`), so zeros are handled exactly."""

import numbers

import numpy as np

from pyrt.functional import _make, _xp

__all__ = ["segment_reduce"]

_EMPTY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf, "mean": np.nan}


def _offsets(data, lengths, offsets, axis, unsafe):
    """The segment bounds as an int64 array of shape data.shape[:axis] + (segments + 1,)."""
    from pyrt.tensor import Tensor

    given, name = (offsets, "offsets") if offsets is not None else (lengths, "lengths")
    if given is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not isinstance(given, Tensor):
        raise TypeError(f"segment_reduce(): argument '{name}' must be a Tensor, got "
                        f"{type(given).__name__}")
    array = given._data
    if not isinstance(array, np.ndarray):
        array = array.get()
    if array.dtype.kind not in "iu":
        raise NotImplementedError(f"segment_reduce(): '{name}' must hold integers, got "
                                  f"{given.dtype}")
    if array.ndim > data.ndim:
        raise RuntimeError(f"segment_reduce(): {name} has {array.ndim} dims, more than "
                           f"data's {data.ndim}")
    if array.ndim - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{name} but got {axis}.")
    if array.shape[:-1] != data.shape[:axis]:
        raise RuntimeError(f"segment_reduce(): {name} of shape {tuple(array.shape)} does not "
                           f"match data's leading dims {tuple(data.shape[:axis])}")
    array = array.astype(np.int64)
    if offsets is None:
        if (array < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if not unsafe and (array.sum(-1) != data.shape[axis]).any():
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
        zero = np.zeros(array.shape[:-1] + (1,), np.int64)
        return np.concatenate([zero, np.cumsum(array, -1)], -1)
    if array.shape[-1] < 1 or (np.diff(array, axis=-1) < 0).any() or (array < 0).any() \
            or (array > data.shape[axis]).any():
        raise RuntimeError(f"segment_reduce(): offsets must be non-decreasing and lie in "
                           f"[0, {data.shape[axis]}]")
    return array


def _reduce(part, reduce, initial, xp):
    """One segment (reduced along dim 0; non-empty) with `initial` folded in."""
    if reduce in ("sum", "mean"):
        out = part.sum(0)
    elif reduce == "prod":
        out = part.prod(0)
    elif reduce == "max":
        out = part.max(0)
    else:
        out = part.min(0)
    if initial is not None:
        init = part.dtype.type(initial)
        out = {"sum": out + init, "mean": out + init, "prod": out * init,
               "max": xp.maximum(out, init),
               "min": xp.minimum(out, init)}[reduce]
    if reduce == "mean":
        out = out / part.dtype.type(part.shape[0])
    return out


def _grad_part(part, out, g, reduce, initial, xp):
    """The gradient of one non-empty segment `part` (along dim 0) given its result `out` and
    that result's gradient `g`."""
    n = part.shape[0]
    if reduce == "sum":
        return xp.broadcast_to(g, part.shape)
    if reduce == "mean":
        return xp.broadcast_to(g / part.dtype.type(n), part.shape)
    if reduce in ("max", "min"):
        hit = part == out
        count = hit.sum(0)
        return xp.where(hit, g / xp.maximum(count, 1).astype(part.dtype), 0).astype(part.dtype)
    # prod: the product of the others, from exclusive prefix and suffix products
    ones = xp.ones((1,) + part.shape[1:], part.dtype)
    before = xp.concatenate([ones, xp.cumprod(part, 0)[:-1]], 0)
    after = xp.concatenate([xp.cumprod(part[::-1], 0)[:-1][::-1], ones], 0)
    others = before * after
    if initial is not None:
        others = others * part.dtype.type(initial)
    return g * others


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduce each segment of `data` along `axis` (see the module's doc); the result has
    data's shape with dim `axis` replaced by the number of segments."""
    from pyrt import shapes
    from pyrt.tensor import Tensor

    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): argument 'data' must be a Tensor, got "
                        f"{type(data).__name__}")
    if reduce not in _EMPTY:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if initial is not None and (isinstance(initial, bool)
                                or not isinstance(initial, numbers.Real)):
        raise TypeError(f"segment_reduce(): argument 'initial' must be a number, got "
                        f"{type(initial).__name__}")
    x = data._data
    xp = _xp(x)
    axis = shapes.dim_index(axis, x.ndim)
    bounds = _offsets(data, lengths, offsets, axis, unsafe)
    lead = x.shape[:axis]
    segments = bounds.shape[-1] - 1
    out = xp.empty(lead + (segments,) + x.shape[axis + 1:], x.dtype)
    empty = x.dtype.type(_EMPTY[reduce] if initial is None else initial)
    for i in np.ndindex(*lead):
        for s in range(segments):
            start, end = bounds[i + (s,)], bounds[i + (s + 1,)]
            part = x[i + (slice(start, end),)]
            out[i + (s,)] = _reduce(part, reduce, initial, xp) if end > start else empty

    def backward(g):
        grad = xp.zeros_like(x)
        for i in np.ndindex(*lead):
            for s in range(segments):
                start, end = bounds[i + (s,)], bounds[i + (s + 1,)]
                if end > start:
                    part = x[i + (slice(start, end),)]
                    grad[i + (slice(start, end),)] = _grad_part(
                        part, out[i + (s,)], g[i + (s,)], reduce, initial, xp)
        return (grad,)

    return _make(out, (data,), backward)
