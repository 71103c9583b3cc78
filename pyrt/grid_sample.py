"""Sampling images at arbitrary points, as spatial transformer networks do, with PyTorch's
names, arguments and gradients: affine_grid (the points of an affine map) and grid_sample
(the image read at those points), for images [N, C, H, W] and grids [N, H_out, W_out, 2].

A grid holds (x, y) pairs in [-1, 1], -1 the left (top) edge and 1 the right (bottom) one:
with align_corners, the centres of the corner pixels; without, the outer edges of the corner
pixels. A point becomes the pixel coordinate
    x = (g + 1) / 2 * (W - 1)          (align_corners)
    x = ((g + 1) * W - 1) / 2          (otherwise)
and the padding mode decides what lies outside the image: zeros (taps outside read 0),
border (the coordinate clipped to [0, W - 1]) or reflection (the coordinate reflected at the
edges, then clipped).

bilinear reads the four pixels around (x, y), weighted by the distances: with x0 = floor(x),
wx = x - x0 and likewise for y, out = sum over the corners of (1 - wx or wx)(1 - wy or wy)
times the pixel. Its gradient for the image adds each output's gradient into the four pixels
with the same weights (np.bincount over flat pixel indices, the same on CuPy); for the grid,
d out / dx = (1 - wy)(v01 - v00) + wy (v11 - v10) summed over the channels against the
output's gradient, times dx/dg (the scale above, and the padding's: 0 where clipped, -1 where
reflected an odd number of times). nearest reads the pixel at the rounded coordinate (half
to even, as PyTorch's nearbyint); its grid gradient is 0.
"""

import numpy as np

from pyrt.functional import _make, _tensor, _xp
from pyrt.matmul import matmul
from pyrt.ops._checks import F32
from pyrt.pointwise import checked_flag

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest")
_PADDINGS = ("zeros", "border", "reflection")


def _base_grid(h, w, align_corners):
    """[H * W, 3] rows (x, y, 1) of the output points in [-1, 1], row-major over (h, w)."""
    def axis(n):
        if align_corners:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    ys, xs = np.meshgrid(axis(h), axis(w), indexing="ij")
    return np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)], 1).astype(F32)


def affine_grid(theta, size, align_corners=False):
    """The sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for an output of
    `size` [N, C, H, W]: each output point's (x, y, 1) times theta^T; differentiable in
    theta."""
    Tensor = _tensor()
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' must be a Tensor, got "
                        f"{type(theta).__name__}")
    size = tuple(size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D sizes, for 2D affine "
                                  f"transformations; got size {list(size)}")
    if theta._data.dtype != F32:
        raise TypeError(f"affine_grid(): theta must be a float32 tensor, got {theta.dtype}")
    n, _, h, w = size
    if theta.shape != (n, 2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"affine_grid(): size must be positive, got {list(size)}")
    align_corners = checked_flag(align_corners, "affine_grid", "align_corners")
    xp = _xp(theta._data)
    base = Tensor(xp.asarray(_base_grid(h, w, align_corners)))
    grid = matmul(base, theta.transpose(1, 2))  # [N, H * W, 2]
    return grid.reshape(n, h, w, 2)


def _unnormalize(g, size, align_corners):
    """Pixel coordinates of grid values g along an axis of `size` pixels, and dx/dg."""
    if align_corners:
        return (g + 1) / 2 * (size - 1), (size - 1) / 2
    return ((g + 1) * size - 1) / 2, size / 2


def _reflect(x, low2, high2, xp):
    """x reflected into [low2 / 2, high2 / 2] (PyTorch's reflect_coordinates), and the sign of
    d(result)/dx."""
    if low2 == high2:
        return xp.zeros_like(x), xp.zeros_like(x)
    low, span = low2 / 2, (high2 - low2) / 2
    d = x - low
    sign = xp.where(d < 0, -1.0, 1.0)
    d = xp.abs(d)
    flips = xp.floor(d / span)
    extra = xp.fmod(d, span)
    even = flips % 2 == 0
    return xp.where(even, extra + low, span - extra + low), xp.where(even, sign, -sign)


def _source(g, size, padding, align_corners, xp):
    """(pixel coordinates, d coordinate / d g) of grid values g along an axis of `size`."""
    x, scale = _unnormalize(g, size, align_corners)
    slope = xp.full(x.shape, scale)
    if padding == "border":
        inside = (x >= 0) & (x <= size - 1)
        x = xp.clip(x, 0, size - 1)
        slope = slope * inside
    elif padding == "reflection":
        if align_corners:
            x, sign = _reflect(x, 0, 2 * (size - 1), xp)
        else:
            x, sign = _reflect(x, -1, 2 * size - 1, xp)
        inside = (x >= 0) & (x <= size - 1)
        x = xp.clip(x, 0, size - 1)
        slope = slope * sign * inside
    return x, slope


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """input [N, C, H, W] read at the points of grid [N, H_out, W_out, 2] ((x, y) in
    [-1, 1]): [N, C, H_out, W_out]. mode "bilinear" or "nearest"; padding_mode "zeros",
    "border" or "reflection" (see the module docstring). Differentiable in input and, for
    bilinear, in grid."""
    Tensor = _tensor()
    for t, name in ((input, "input"), (grid, "grid")):
        if not isinstance(t, Tensor):
            raise TypeError(f"grid_sample(): argument '{name}' must be a Tensor, got "
                            f"{type(t).__name__}")
        if t._data.dtype != F32:
            raise TypeError(f"grid_sample(): {name} must be a float32 tensor, got {t.dtype}")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(): mode='bicubic' is not supported: use "
                                  "'bilinear' or 'nearest'")
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = checked_flag(align_corners, "grid_sample", "align_corners")
    if input.ndim == 5:
        raise NotImplementedError("grid_sample(): 5-D (volumetric) input is not supported: "
                                  "pass [N, C, H, W] images")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[3] != 2:
        raise RuntimeError(f"grid_sample(): expected a 4D input [N, C, H, W] and a grid "
                           f"[N, H_out, W_out, 2], got input {list(input.shape)} and grid "
                           f"{list(grid.shape)}")
    n, c, h, w = input.shape
    if grid.shape[0] != n:
        raise RuntimeError(f"grid_sample(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with "
                           f"sizes {list(grid.shape)}")
    if h == 0 or w == 0:
        raise RuntimeError(f"grid_sample(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)}")
    x_in, g_in = input._data, grid._data
    xp = _xp(x_in)
    ho, wo = grid.shape[1:3]
    gd = g_in.astype(np.float64)
    px, sx = _source(gd[..., 0], w, padding_mode, align_corners, xp)  # [N, Ho, Wo]
    py, sy = _source(gd[..., 1], h, padding_mode, align_corners, xp)
    image = x_in.reshape(n, c, h * w)

    def e(a):
        """Weights [N, Ho, Wo] as [N, 1, Ho, Wo], to multiply every channel."""
        return a.reshape(n, 1, ho, wo)

    def tap(ix, iy):
        """(pixels [N, C, Ho, Wo] at integer coordinates, 0 outside; flat indices; inside)."""
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        flat = (xp.clip(iy, 0, h - 1) * w + xp.clip(ix, 0, w - 1)).astype(np.int64)
        values = xp.take_along_axis(image, flat.reshape(n, 1, -1), 2)
        values = values.reshape(n, c, ho, wo) * inside.reshape(n, 1, ho, wo)
        return values, flat, inside

    if mode == "nearest":
        ix, iy = xp.rint(px), xp.rint(py)  # half to even, as nearbyint
        values, flat, inside = tap(ix, iy)
        taps = [(flat, inside.astype(np.float64))]
        out = values
    else:
        x0, y0 = xp.floor(px), xp.floor(py)
        wx1, wy1 = px - x0, py - y0
        wx0, wy0 = 1 - wx1, 1 - wy1
        v00, f00, i00 = tap(x0, y0)
        v01, f01, i01 = tap(x0 + 1, y0)
        v10, f10, i10 = tap(x0, y0 + 1)
        v11, f11, i11 = tap(x0 + 1, y0 + 1)
        out = (v00 * e(wx0 * wy0) + v01 * e(wx1 * wy0) + v10 * e(wx0 * wy1)
               + v11 * e(wx1 * wy1))
        taps = [(f00, wx0 * wy0 * i00), (f01, wx1 * wy0 * i01), (f10, wx0 * wy1 * i10),
                (f11, wx1 * wy1 * i11)]
    out = xp.ascontiguousarray(out, dtype=F32)

    def backward(g):
        g = g.astype(np.float64)
        d_input = d_grid = None
        if input._requires_grad:
            # each output's gradient into its taps, by flat index over (n, c, pixel)
            base = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
            total = xp.zeros(n * c * h * w)
            for flat, weight in taps:
                index = (base + flat.reshape(n, 1, -1)).ravel()
                contribution = (g * weight.reshape(n, 1, ho, wo)).reshape(n, c, -1).ravel()
                total += xp.bincount(index, contribution, minlength=n * c * h * w)
            d_input = total.reshape(n, c, h, w).astype(F32)
        if grid._requires_grad:
            if mode == "nearest":
                d_grid = xp.zeros(g_in.shape, F32)
            else:
                dx = (e(wy0) * (v01 - v00) + e(wy1) * (v11 - v10))
                dy = (e(wx0) * (v10 - v00) + e(wx1) * (v11 - v01))
                gx = (g * dx).sum(1) * sx
                gy = (g * dy).sum(1) * sy
                d_grid = xp.stack([gx, gy], -1).astype(F32)
        return d_input, d_grid

    return _make(out, (input, grid), backward)

