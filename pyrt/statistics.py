"""Statistics of samples with PyTorch's names: cov and corrcoef (differentiable, written with
autograd's ops), and the histograms histogram and histogramdd (counts, not differentiable).

cov treats each row of a 2-D input as a variable and each column as an observation, weighted
by the product of the frequency weights and the observation weights:
    avg = sum_j w_j x_ij / sum_j w_j,   cov = (x - avg) diag(w) (x - avg)^T / norm
with norm = sum w - correction (sum w a / sum w with observation weights a), as numpy.cov.
A histogram's bins are closed on the left and open on the right, but for the last, which
includes its right edge; values outside the edges (and nan) are not counted. Equal-width bins
span the range asked for or the data's minimum to maximum (widened by 0.5 either way when
those are equal).
"""

import numbers
import warnings
from collections import namedtuple

import numpy as np

from pyrt.functional import _integer, _tensor, _xp

__all__ = ["corrcoef", "cov", "histogram", "histogramdd"]

# what histogram and histogramdd return, as torch.return_types.histogram and histogramdd
histogram_result = namedtuple("histogram", ("hist", "bin_edges"))
histogramdd_result = namedtuple("histogramdd", ("hist", "bin_edges"))


def _weights(weights, name, observations, integral):
    """A 1-D weights tensor checked as torch.cov checks it: its dtype kind, its length and
    its sign."""
    if weights is None:
        return None
    if not isinstance(weights, _tensor()):
        raise TypeError(f"cov(): argument '{name}' must be a Tensor, got "
                        f"{type(weights).__name__}")
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.ndim} dimensions")
    kind = weights._data.dtype.kind
    if integral and kind not in "iu":
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} "
                           f"with {weights.dtype} dtype")
    if not integral and kind != "f":
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got "
                           f"{name} with {weights.dtype} dtype")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != "
                           f"{observations}")
    if weights.numel() and bool((weights._data < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return weights.reshape(-1).detach().to(np.float32)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (a 1-D input is one variable),
    observations in its columns, weighted by the integer frequencies `fweights` and the
    observation weights `aweights`, normalised by sum of weights - correction (Bessel's
    correction by default); 0-d for one variable (torch.cov)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"cov(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if not _integer(correction):
        raise TypeError(f"cov(): argument 'correction' must be int, not "
                        f"{type(correction).__name__}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    x = x if x.dtype == np.float32 else x.to(np.float32)
    observations = x.shape[1]
    fw = _weights(fweights, "fweights", observations, True)
    aw = _weights(aweights, "aweights", observations, False)
    w = fw if aw is None else aw if fw is None else fw * aw
    if w is None:
        w_sum = float(observations)
        norm = w_sum - correction
    else:
        w_sum = float(w._data.sum(dtype=np.float64))
        norm = w_sum - (correction if aw is None or correction == 0 else
                        correction * float((w._data.astype(np.float64) * aw._data).sum())
                        / w_sum)
    if norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):  # no weight or no degrees of freedom
        avg = (x if w is None else x * w).sum(1, keepdim=True) / w_sum
        centred = x - avg
        weighted = centred if w is None else centred * w
        out = weighted.matmul(centred.t()) / norm
    return out.squeeze()


def corrcoef(input):
    """The correlation coefficients of the variables in input's rows: cov(input) divided by
    the standard deviations of both variables, clipped to [-1, 1] (torch.corrcoef)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    out = c / std.unsqueeze(1) / std.unsqueeze(0)
    return out.clamp(-1, 1)


def _check_samples(input, name):
    if not isinstance(input, _tensor()):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype}: histograms '
                                  f"take float32 samples")


def _edges(points, bins, range, name, xp):
    """The bin edges (float32 arrays) of each of the D columns of `points`."""
    dims = points.shape[1]
    if isinstance(bins, (tuple, list)):
        if len(bins) != dims:
            raise RuntimeError(f"{name}: The size of bins must be equal to the innermost "
                               f"dimension of the input.")
        bins = list(bins)
    else:
        bins = [bins] * dims
    if range is not None:
        range = list(range)
        if len(range) != 2 * dims:
            raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range "
                               f"should have {2 * dims} elements, but got {len(range)}")
    edges = []
    for k, b in enumerate(bins):
        if isinstance(b, _tensor()):
            if range is not None:
                raise TypeError(f"{name}(): range is not taken with bins given as edges")
            if b.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one "
                                   f"dimension, but got {b.ndim} dimensions in the bins "
                                   f"tensor for dimension {k}")
            if b.numel() == 0:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 "
                                   f"element, but got 0 elements in the bins tensor for "
                                   f"dimension {k}")
            if b._data.dtype != np.float32:
                raise RuntimeError(f"{name}: input tensor and bins tensors should have the "
                                   f"same dtype, but got input float32 and bins {b.dtype}")
            edges.append(xp.asarray(b._data))
            continue
        if not _integer(b):
            raise TypeError(f"{name}(): argument 'bins' must be an int or a Tensor of bin "
                            f"edges, got {type(b).__name__}")
        if b <= 0:
            raise RuntimeError(f"torch.{name}(): bins must be > 0, but got {b} for dimension "
                               f"{k}")
        column = points[:, k]
        if range is not None:
            lo, hi = range[2 * k], range[2 * k + 1]
            for value in (lo, hi):
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise TypeError(f"{name}(): range must hold numbers, got "
                                    f"{type(value).__name__}")
            lo, hi = float(lo), float(hi)
        elif column.size:
            lo, hi = float(column.min()), float(column.max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension {k}")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{lo:g}, {hi:g}] "
                               f"is not finite")
        if lo == hi:
            if column.size == 0 and range is None:
                lo, hi = 0.0, 1.0
            else:
                lo, hi = lo - 0.5, hi + 0.5
        from pyrt.tensor import linspace

        edges.append(xp.asarray(linspace(lo, hi, int(b) + 1)._data))
    return edges


def _counts(points, edges, weight, density, xp):
    """The D-dimensional histogram of the rows of `points` in the bins that `edges` bound."""
    n = points.shape[0]
    inside = xp.ones(n, bool)
    flat = xp.zeros(n, np.int64)
    for k, e in enumerate(edges):
        column = points[:, k]
        bins = max(e.shape[0] - 1, 0)
        # the last bin holds its right edge too; nan and values outside fall out
        place = xp.searchsorted(e, column, side="right") - 1
        place = xp.where(column == e[-1], bins - 1, place)
        inside &= (column >= e[0]) & (column <= e[-1]) & (place >= 0) & (place < bins)
        flat = flat * bins + xp.clip(place, 0, max(bins - 1, 0))
    shape = tuple(max(e.shape[0] - 1, 0) for e in edges)
    w = xp.ones(n, np.float64) if weight is None else weight.astype(np.float64)
    total = int(np.prod(shape))
    hist = xp.bincount(flat[inside], weights=w[inside], minlength=total)[:total]
    hist = hist.reshape(shape)
    if density:
        volume = xp.ones(shape, np.float64)
        for k, e in enumerate(edges):
            width = xp.diff(e.astype(np.float64)).reshape((-1,) + (1,) * (len(edges) - k - 1))
            volume = volume * width
        with np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / hist.sum() / volume
    return xp.ascontiguousarray(hist.astype(np.float32))


def _weight_array(weight, expected, input_shape, xp):
    if weight is None:
        return None
    if not isinstance(weight, _tensor()):
        raise TypeError(f"histogram(): argument 'weight' must be a Tensor, got "
                        f"{type(weight).__name__}")
    if tuple(weight.shape) != tuple(expected):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                           f"the same shape as the input tensor excluding its innermost "
                           f"dimension, but got input with shape {list(input_shape)} and "
                           f"weight with shape {list(weight.shape)}")
    return xp.asarray(weight._data).reshape(-1)


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """The histogram of input's values: `bins` equal-width bins over `range` (the data's
    minimum to maximum by default), or the bins that a 1-D tensor of increasing edges
    bounds; each value counted once or with its `weight`; with `density`, normalised to
    integrate to 1. Returns (hist, bin_edges), float32 (torch.histogram)."""
    _check_samples(input, "histogram")
    xp = _xp(input._data)
    points = input._data.reshape(-1, 1)
    w = _weight_array(weight, input.shape, (*input.shape, 1), xp)
    edges = _edges(points, [bins], range, "histogram", xp)
    hist = _counts(points, edges, w, bool(density), xp)
    return histogram_result(_tensor()(hist), _tensor()(xp.ascontiguousarray(edges[0])))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of the points in input's rows (its last dim of size D
    holds their coordinates): `bins` one int or tensor of edges for all D dims, or a list of
    one per dim; `range` the D (min, max) pairs flattened. Returns (hist, bin_edges), hist
    of D dims and bin_edges a tuple of D tensors (torch.histogramdd)."""
    _check_samples(input, "histogramdd")
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    xp = _xp(input._data)
    points = input._data.reshape(-1, input.shape[-1])
    w = _weight_array(weight, input.shape[:-1], input.shape, xp)
    edges = _edges(points, bins, range, "histogramdd", xp)
    hist = _counts(points, edges, w, bool(density), xp)
    return histogramdd_result(_tensor()(hist), tuple(_tensor()(xp.ascontiguousarray(e))
                                                     for e in edges))
