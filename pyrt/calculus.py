"""Calculus on sampled values, with PyTorch's names and gradients: the trapezoidal rule
(trapezoid and its alias trapz, cumulative_trapezoid) and finite-difference derivatives
(gradient).

All are written with differentiable ops (narrow, arithmetic, sum, cumsum, cat), so autograd
carries their gradients; integer samples are integrated as float32. gradient uses the
second-order accurate central differences of numpy.gradient inside, for evenly or unevenly
spaced samples, and first- or second-order one-sided differences at the two ends.
"""

import numbers

import numpy as np

from pyrt.functional import _tensor, dim_index

__all__ = ["cumulative_trapezoid", "gradient", "trapezoid", "trapz"]


def _samples(y, name):
    if not isinstance(y, _tensor()):
        raise TypeError(f"{name}(): argument 'y' must be a Tensor, got {type(y).__name__}")
    return y if y.dtype == np.float32 else y.to(np.float32)


def _sample_dim(y, dim):
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return dim_index(dim, y.ndim)


def _along(values, d, ndim):
    """1-D `values` shaped to broadcast along dim d of a tensor of `ndim` dims."""
    return values.reshape((values.shape[0],) + (1,) * (ndim - 1 - d))


def _areas(name, y, x, dx, dim):
    """The trapezoids' areas (y[i] + y[i+1]) / 2 * (x[i+1] - x[i]) along dim d of y: the
    float32 samples, the areas (None when there are fewer than two samples) and d."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}() takes either the sample points x or the spacing dx, not "
                        f"both")
    y = _samples(y, name)
    d = _sample_dim(y, dim)
    n = y.shape[d]
    if x is not None:
        if not isinstance(x, _tensor()):
            raise TypeError(f"{name}(): argument 'x' must be a Tensor, got "
                            f"{type(x).__name__}")
        x = x if x.dtype == np.float32 else x.to(np.float32)
        if x.ndim == 1:
            if x.shape[0] != n:
                raise RuntimeError(f"{name}: There must be one `x` value for each sample "
                                   f"point")
            x = _along(x, d, y.ndim)
            xd = d - y.ndim + x.ndim
        else:
            xd = _sample_dim(x, dim)
            if x.shape[xd] != n:
                raise RuntimeError(f"{name}: There must be one `x` value for each sample "
                                   f"point")
    elif dx is None:
        dx = 1
    elif isinstance(dx, bool) or not isinstance(dx, numbers.Real):
        raise TypeError(f"{name}(): argument 'dx' must be a number, got {type(dx).__name__}")
    if n < 2:
        return y, None, d
    sums = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    if x is None:
        return y, sums * (float(dx) / 2), d
    widths = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
    return y, sums * widths / 2, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of the samples `y` along `dim` by the trapezoidal rule: at the sample
    points `x` (1-D along dim, or broadcasting with y), or evenly spaced by `dx` (1 by
    default). Zero where there are fewer than two samples (torch.trapezoid)."""
    y, areas, d = _areas("trapezoid", y, x, dx, dim)
    if areas is None:
        shape = y.shape[:d] + y.shape[d + 1:]
        return y.new_zeros(shape) if y.shape[d] == 0 else (y.narrow(d, 0, 1) * 0).sum(d)
    return areas.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integrals of the samples `y` along `dim` by the trapezoidal rule (one
    fewer than the samples along dim), spaced as in trapezoid (torch.cumulative_trapezoid)."""
    y, areas, d = _areas("cumulative_trapezoid", y, x, dx, dim)
    if areas is None:
        return y.narrow(d, 0, 0)
    return areas.cumsum(d)


def _checked_dims(input, dim):
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if not isinstance(dim, (tuple, list)) else list(dim)
    dims = [dim_index(k, input.ndim) for k in dims]
    for k in dims:
        if dims.count(k) > 1:
            raise RuntimeError(f"dim {k} appears multiple times in the list of dims")
    return dims


def _coordinates(input, spacing, dims, dim_given):
    """For each dim in `dims`, the distances between consecutive samples, float64 arrays."""
    if isinstance(spacing, _tensor()):
        raise TypeError("gradient(): argument 'spacing' must be a number, or a tuple or list "
                        "of numbers or of 1-D Tensors, not a Tensor")
    if isinstance(spacing, (tuple, list)):
        if len(spacing) != len(dims):
            what = (f"'dim' = {len(dims)} dims" if dim_given else
                    f"'self.dim() = {input.ndim}', since dim argument was not given")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to {what}, but got a list of "
                               f"length {len(spacing)}")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    steps = []
    for value, d in zip(spacings, dims):
        n = input.shape[d]
        if isinstance(value, _tensor()):
            if value.ndim != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have "
                                   f"one dimension, but got an element with {value.ndim} "
                                   f"dimensions!")
            if value.shape[0] != n:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and of length {n} along dim {d}, got "
                                   f"{value.shape[0]}")
            coords = np.asarray(value.detach().cpu().numpy(), np.float64)
            steps.append(np.diff(coords))
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            steps.append(np.full(max(n - 1, 0), float(value)))
        else:
            raise TypeError(f"gradient(): argument 'spacing' must hold numbers or 1-D "
                            f"Tensors, got {type(value).__name__}")
    return steps


def _derivative(f, d, h, edge_order):
    """The derivative of the float32 samples f along dim d, h the distances between them."""
    n = f.shape[d]

    def terms(starts, coefficients):
        # sum_k coefficients[k] * f[starts[k] : starts[k] + len], along dim d
        length = coefficients[0].shape[0]
        out = None
        for start, c in zip(starts, coefficients):
            term = f.narrow(d, start, length) * f.new_tensor(
                _along(c.astype(np.float32), d, f.ndim))
            out = term if out is None else out + term
        return out

    with np.errstate(divide="ignore", invalid="ignore"):  # zero spacing gives inf/nan
        h1, h2 = h[:-1], h[1:]
        inner = terms((0, 1, 2), (-h2 / (h1 * (h1 + h2)), (h2 - h1) / (h1 * h2),
                                  h1 / (h2 * (h1 + h2))))
        if edge_order == 1:
            first = terms((0, 1), (-1 / h[:1], 1 / h[:1]))
            last = terms((n - 2, n - 1), (-1 / h[-1:], 1 / h[-1:]))
        else:
            a, b = h[:1], h[1:2]
            first = terms((0, 1, 2), (-(2 * a + b) / (a * (a + b)), (a + b) / (a * b),
                                      -a / (b * (a + b))))
            a, b = h[-2:-1], h[-1:]
            last = terms((n - 3, n - 2, n - 1), (b / (a * (a + b)), -(a + b) / (a * b),
                                                 (2 * b + a) / (b * (a + b))))
    from pyrt.shapes import cat

    return cat([first, inner, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivatives of the samples `input` along each of `dim` (all dims by default) by
    finite differences, as torch.gradient: a tuple of tensors of input's shape. `spacing` is
    the distance between samples (a number for every dim, or one per dim), or a list of 1-D
    tensors, each the coordinates of the samples along its dim. Central differences
    inside; at the ends one-sided ones of order `edge_order` (1 or 2)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"gradient(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _checked_dims(input, dim)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if spacing is None:
        spacing = 1
    steps = _coordinates(input, spacing, dims, dim is not None)
    f = input if input.dtype == np.float32 else input.to(np.float32)
    return tuple(_derivative(f, d, h, edge_order) for d, h in zip(dims, steps))
