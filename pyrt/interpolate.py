"""Resizing of [n, c, *spatial] tensors (torch.nn.functional.interpolate), with its gradient.

Every mode resizes each spatial dim on its own (separably). Along a dim of `size` positions
resized to `out`:

- "nearest" reads position floor(i * scale), "nearest-exact" floor((i + 0.5) * scale)
  (both clamped to the last position), scale = 1 / scale_factor when a scale factor is given,
  else size / out, computed in float32 as PyTorch's CPU kernels do;
- "linear" (3-d input), "bilinear" (4-d) and "trilinear" (5-d) mix the two positions around
  src = i * (size - 1) / (out - 1) with align_corners, else (i + 0.5) * scale - 0.5 (clamped
  at 0), weighted by the distances;
- "area" averages the adaptive pooling bins (pyrt.adaptive_pool's).

Each dim's resizing is a matrix A [out, size]: y = A @ x along that dim, and the gradient
A^T @ g, each one GEMM (pyrt.ops.matmul, on NumPy or CuPy arrays). The nearest modes gather
instead of multiplying in the forward pass, an exact copy.
"""

import math
import numbers

import numpy as np

from pyrt.adaptive_pool import _along_last, _averaging_matrix
from pyrt.functional import _make, _xp
from pyrt.ops._checks import F32
from pyrt.spatial import _check_tensors

__all__ = ["interpolate"]

_LINEAR = {3: "linear", 4: "bilinear", 5: "trilinear"}  # the interpolating mode of each ndim
_LINEAR_NDIM = {mode: ndim for ndim, mode in _LINEAR.items()}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact"


def _output_sizes(input, size, scale_factor, recompute_scale_factor):
    """(output sizes, scale factors or Nones for the kernels) of the spatial dims, checked as
    PyTorch checks them."""
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and output "
                    f"size of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    f"format and output size in (o1, o2, ...,oK) format.")
            sizes = list(size)
        else:
            sizes = [size] * dim
        for s in sizes:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in sizes]}")
        return [int(s) for s in sizes], [None] * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(input.shape[2:])} and "
                f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                f"d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
        factors = [float(f) for f in scale_factor]
    else:
        factors = [float(scale_factor)] * dim
    sizes = [math.floor(n * f) for n, f in zip(input.shape[2:], factors)]
    return sizes, [None] * dim if recompute_scale_factor else factors


def _scale(size, out, factor):
    """PyTorch's float32 ratio of input to output positions: 1 / factor, or size / out."""
    if factor is not None and factor > 0:
        return np.float32(1.0 / factor)
    return np.float32(size) / np.float32(out)


def _nearest_index(size, out, factor, exact):
    """The input position each of `out` positions reads."""
    i = np.arange(out)
    if out == size:
        return i
    if not exact and out == 2 * size:
        return i >> 1
    scale = _scale(size, out, factor)
    if exact:
        src = np.floor(((i + 0.5) * np.float64(scale)).astype(F32))
    else:
        src = np.floor(i.astype(F32) * scale)
    return np.minimum(src.astype(np.int64), size - 1)


def _one_hot(index, size):
    m = np.zeros((len(index), size), F32)
    m[np.arange(len(index)), index] = 1
    return m


def _linear_matrix(size, out, factor, align_corners):
    """[out, size]: row i mixes the two positions around its source coordinate."""
    i = np.arange(out, dtype=F32)
    if align_corners:
        scale = np.float32(size - 1) / np.float32(out - 1) if out > 1 else np.float32(0)
        src = scale * i
    else:
        scale = _scale(size, out, factor)
        src = np.maximum(scale * (i + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    lam = np.clip(src - i0.astype(F32), 0, 1).astype(F32)
    i1 = np.where(i0 < size - 1, i0 + 1, i0)
    m = np.zeros((out, size), F32)
    rows = np.arange(out)
    np.add.at(m, (rows, i0), np.float32(1) - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def _along(a, axis, m, transpose):
    """m @ a along `axis` (m^T @ a with `transpose`)."""
    xp = _xp(a)
    moved = xp.moveaxis(a, axis, -1)
    out = m.shape[1] if transpose else m.shape[0]
    if moved.size == 0 or out == 0:
        res = xp.zeros(moved.shape[:-1] + (out,), F32)
    else:
        res = _along_last(moved, m, transpose)
    return xp.ascontiguousarray(xp.moveaxis(res, -1, axis))


def _check_mode(input, mode, align_corners):
    """PyTorch's errors for a mode that does not fit the input, or is unknown."""
    ndim = input.ndim
    if mode in _LINEAR_NDIM and ndim in _LINEAR and _LINEAR[ndim] != mode:
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs "
                                  f"{_LINEAR_NDIM[mode]}D input")
    if ndim not in _LINEAR or mode not in ("nearest", "nearest-exact", "area", _LINEAR[ndim]):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{ndim}D) for the modes: {_MODES} (got {mode})")
    if align_corners is not None and not isinstance(align_corners, bool):
        raise TypeError(f"align_corners must be a bool or None, got {align_corners!r}")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """input [n, c, *spatial] (1 to 3 spatial dims) resized to `size` or by `scale_factor`
    (an int or float, or one per spatial dim); see the module's doc for the modes."""
    _check_tensors("interpolate", input=input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if input.ndim < 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.ndim}D) for the modes: {_MODES} (got {mode})")
    sizes, factors = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not implemented")
    _check_mode(input, mode, align_corners)
    spatial = input.shape[2:]
    if min(spatial) <= 0 or min(sizes) <= 0:
        names = "DHW"[3 - len(spatial):]
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ("
            f"{', '.join(f'{d}: {n}' for d, n in zip(names, spatial))}) output ("
            f"{', '.join(f'{d}: {n}' for d, n in zip(names, sizes))})")
    xp = _xp(input._data)
    # (axis, matrix [out, size], index of the nearest modes) of each resized dim
    plans = []
    for axis, (n, out, factor) in enumerate(zip(spatial, sizes, factors), 2):
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_index(n, out, factor, mode == "nearest-exact")
            if out != n:
                plans.append((axis, xp.asarray(_one_hot(index, n)), xp.asarray(index)))
        elif mode == "area":
            m = _averaging_matrix(xp, n, out)
            if m is not None:
                plans.append((axis, m, None))
        elif out != n or factor not in (None, 1.0):
            plans.append((axis, xp.asarray(_linear_matrix(n, out, factor, align_corners)),
                          None))
    y = input._data
    for axis, m, index in plans:
        y = xp.take(y, index, axis=axis) if index is not None else _along(y, axis, m, False)
    if not plans:
        y = y.copy()

    def backward(g):
        for axis, m, _ in reversed(plans):
            g = _along(g, axis, m, True)
        return (g,)

    return _make(xp.ascontiguousarray(y), (input,), backward, reads=False)
