"""unique_consecutive: the runs of equal elements (or equal slices along a dim) of a tensor,
each kept once, with the run each element belongs to (inverse) and the runs' lengths
(counts), as torch.unique_consecutive. A run starts wherever an element differs from the
one before it, so the runs are the cumulative count of starts; nan differs from itself."""

from pyrt.functional import _tensor, _xp, dim_index

__all__ = ["unique_consecutive"]


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """input's elements (flattened) or, with `dim`, its slices along dim, with each run of
    equal consecutive ones kept once; with return_inverse also the index of the run of each
    element (input's shape, or the length of dim), with return_counts also the runs'
    lengths."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"unique_consecutive(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    x = input._data
    xp = _xp(x)
    if dim is None:
        rows = x.reshape(-1)
        n = rows.shape[0]
        changed = rows[1:] != rows[:-1]
    else:
        d = dim_index(dim, x.ndim)
        if x.ndim == 0:
            rows, n = x.reshape(1, 1), 1
        else:
            rows = xp.moveaxis(x, d, 0).reshape(x.shape[d], -1)
            n = rows.shape[0]
        changed = (rows[1:] != rows[:-1]).any(axis=1)
    starts = xp.concatenate([xp.ones(min(n, 1), bool), changed])
    first = xp.nonzero(starts)[0]
    if dim is None or x.ndim == 0:
        values = rows[first]
    else:
        values = xp.take(x, first, axis=d)
    results = [_tensor()(xp.ascontiguousarray(values))]
    if return_inverse:
        inverse = xp.cumsum(starts) - 1
        results.append(_tensor()(xp.ascontiguousarray(
            inverse.reshape(x.shape) if dim is None else inverse).astype("int64")))
    if return_counts:
        bounds = xp.concatenate([first, xp.asarray([n])])
        results.append(_tensor()(xp.ascontiguousarray(xp.diff(bounds)).astype("int64")))
    return results[0] if len(results) == 1 else tuple(results)
