"""max_unpool1d/2d, lp_pool1d/2d, the *_with_indices max pools (pyrt/unpool.py) and their
layers (pyrt/nn/unpool.py).

Without PyTorch: NumPy references written as direct loops (unpooling writes each value at its
index; the lp norm of each window per PyTorch's definition), the round trip unpool(pool(x))
putting every maximum back in its place, finite differences of the reference for the lp_pool
gradients, and the errors. With PyTorch: outputs, indices and the gradients of sum(y * g) for
a random g over many shapes and settings (hypothesis), at 1 and 2 threads; reprs and the
exception types of the same bad calls."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.adaptive_pool import adaptive_max_pool1d, adaptive_max_pool2d
from pyrt.nn.unpool import LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d
from pyrt.spatial import max_pool2d
from pyrt.spatial_more import max_pool1d
from pyrt.unpool import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    lp_pool1d,
    lp_pool2d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_unpool1d,
    max_unpool2d,
)

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

THREADS = [1, 2]
F32 = np.float32
SETTINGS = settings(max_examples=40, deadline=None)
INF = math.inf

# NumPy warns of the 0 ** negative and negative ** fraction that lp_pool's zero windows and NaN
# roots compute on purpose (PyTorch computes them too, silently)
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in power:RuntimeWarning")


def rng(seed):
    return np.random.default_rng(seed)


def normal(r, shape):
    return r.standard_normal(shape).astype(F32)


def assert_close(got, want, rtol=1e-5, atol=1e-5):
    """Values within rtol, or atol times the largest |want| (at least 1); NaN where want has
    NaN."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    scale = max(float(np.nanmax(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, equal_nan=True)


def gradient(fn, x, g, *args):
    """(fn(x, *args) as an array, the gradient of sum(fn(x) * g) with respect to x)."""
    t = pyrt.tensor(x, requires_grad=True)
    y = fn(t, *args)
    (y * pyrt.tensor(g)).sum().backward()
    return y.detach().numpy(), t.grad.numpy()


def torch_gradient(fn, x, g, *args):
    t = torch.tensor(x, requires_grad=True)
    y = fn(t, *args)
    (y * torch.tensor(g)).sum().backward()
    return y.detach().numpy(), t.grad.numpy()


# ---- NumPy references -------------------------------------------------------------------------


def unpool_reference(x, idx, size):
    """A zero [*lead, *size] array with each x[plane, j] at flat position idx[plane, j] of its
    plane, one element at a time."""
    lead = x.shape[:x.ndim - len(size)]
    planes = math.prod(lead)
    out = np.zeros((planes, math.prod(size)), np.float64)
    m = math.prod(x.shape[len(lead):])
    values, where = x.reshape(planes, m), idx.reshape(planes, m)
    for plane in range(planes):
        for j in range(values.shape[1]):
            out[plane, where[plane, j]] = values[plane, j]
    return out.reshape(*lead, *size)


def unpool_grad_reference(g, idx, dims):
    """The gradient of unpooling's input (the last `dims` dims spatial): g read at each
    input's position."""
    planes = math.prod(idx.shape[:idx.ndim - dims])
    g2 = g.reshape(planes, math.prod(g.shape[idx.ndim - dims:]))
    where = idx.reshape(planes, math.prod(idx.shape[idx.ndim - dims:]))
    out = np.empty(where.shape, np.float64)
    for plane in range(planes):
        for j in range(where.shape[1]):
            out[plane, j] = g2[plane, where[plane, j]]
    return out.reshape(idx.shape)


def by_plane(a, dims=2):
    """a [..., *spatial] as [planes, elements of a plane] (an empty batch included)."""
    return a.reshape(math.prod(a.shape[:-dims]), math.prod(a.shape[-dims:]))


def window_count(n, k, s, ceil_mode):
    """Windows of k, s apart, over n positions without padding, as PyTorch counts them."""
    count = -(-(n - k) // s) + 1 if ceil_mode else (n - k) // s + 1
    if ceil_mode and (count - 1) * s >= n:
        count -= 1
    return count


def windows(x, kernel, stride, ceil_mode):
    """Yield (i, j, window) over x [..., h, w]; a ceil_mode window past the end is cut off."""
    (kh, kw), (sh, sw) = kernel, stride
    h, w = x.shape[-2:]
    for i in range(window_count(h, kh, sh, ceil_mode)):
        for j in range(window_count(w, kw, sw, ceil_mode)):
            yield i, j, x[..., i * sh:i * sh + kh, j * sw:j * sw + kw]


def lp_pool_reference(x, p, kernel, stride, ceil_mode):
    """PyTorch's lp_pool2d in float64: (the mean of x ** p over the window's elements, times
    kh * kw) ** (1 / p); p = inf and -inf: the largest and the smallest |x| of the window."""
    x = np.asarray(x, np.float64)
    h, w = x.shape[-2:]
    shape = (window_count(h, kernel[0], stride[0], ceil_mode),
             window_count(w, kernel[1], stride[1], ceil_mode))
    out = np.empty(x.shape[:-2] + shape)
    with np.errstate(invalid="ignore"):
        for i, j, win in windows(x, kernel, stride, ceil_mode):
            if p == INF:
                out[..., i, j] = np.abs(win).max(axis=(-2, -1))
            elif p == -INF:
                out[..., i, j] = np.abs(win).min(axis=(-2, -1))
            else:
                mean = (win ** p).mean(axis=(-2, -1))
                out[..., i, j] = (mean * kernel[0] * kernel[1]) ** (1.0 / p)
    return out


def lp_pool1d_reference(x, p, kernel, stride, ceil_mode):
    return lp_pool_reference(x[..., None, :], p, (1, kernel), (1, stride), ceil_mode)[..., 0, :]


def max_pool_reference(x, kernel, stride, padding):
    """The window maxima of x [..., h, w], padded with -inf."""
    ph, pw = padding
    padded = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(ph, ph), (pw, pw)],
                    constant_values=-np.inf)
    h, w = padded.shape[-2:]
    out = np.empty(x.shape[:-2] + (window_count(h, kernel[0], stride[0], False),
                                   window_count(w, kernel[1], stride[1], False)), x.dtype)
    for i, j, win in windows(padded, kernel, stride, False):
        out[..., i, j] = win.max(axis=(-2, -1))
    return out


def finite_difference(f, x, g, eps=1e-6):
    """The gradient of sum(f(x) * g) by central differences, in float64."""
    x = np.array(x, np.float64)
    out = np.empty_like(x)
    for at in np.ndindex(x.shape):
        saved = x[at]
        x[at] = saved + eps
        up = np.sum(f(x) * g)
        x[at] = saved - eps
        down = np.sum(f(x) * g)
        x[at] = saved
        out[at] = (up - down) / (2 * eps)
    return out


# ---- max_unpool against the references ----------------------------------------------------------


@st.composite
def pool_settings(draw, dims):
    """(input shape, kernel, stride, padding) of a max pool that fits its input."""
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    spatial = tuple(draw(st.integers(max(1, k - 2 * p), 8)) for k, p in zip(kernel, padding))
    lead = draw(st.sampled_from([(2, 3), (1, 2), (0, 2), (3,)]))
    return lead + spatial, kernel, stride, padding


def unique_indices(r, shape, plane):
    """int64 indices of `shape` [..., m], each plane's m distinct in range(plane)."""
    lead, m = shape[:-1], shape[-1]
    rows = [r.choice(plane, size=m, replace=False) for _ in range(math.prod(lead))]
    return np.array(rows, np.int64).reshape(shape)


@SETTINGS
@given(setting=pool_settings(2), grow=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       seed=st.integers(0, 2**16), n_threads=st.sampled_from(THREADS))
def test_max_unpool2d_matches_reference(setting, grow, seed, n_threads):
    shape, kernel, stride, padding = setting
    r = rng(seed)
    default = [(n - 1) * s + k - 2 * p for n, k, s, p in zip(shape[-2:], kernel, stride, padding)]
    size = tuple(d + min(e, s - 1) for d, e, s in zip(default, grow, stride))
    assume(shape[-2] * shape[-1] <= size[0] * size[1])
    x = normal(r, shape)
    idx = unique_indices(r, (*shape[:-2], shape[-2] * shape[-1]), size[0] * size[1])
    idx = idx.reshape(shape)
    out_shape = (*shape[:-2], *size)
    g = normal(r, out_shape)
    output_size = None if size == tuple(default) else size
    with pyrt.num_threads(n_threads):
        y, dx = gradient(max_unpool2d, x, g, pyrt.tensor(idx), kernel, stride, padding,
                         output_size)
    np.testing.assert_array_equal(y, unpool_reference(x, idx, size))
    np.testing.assert_array_equal(dx, unpool_grad_reference(g, idx, 2))


@SETTINGS
@given(setting=pool_settings(1), grow=st.integers(0, 2), seed=st.integers(0, 2**16),
       full=st.booleans())
def test_max_unpool1d_matches_reference(setting, grow, seed, full):
    shape, (k,), (s,), (p,) = setting
    r = rng(seed)
    size = (shape[-1] - 1) * s + k - 2 * p + min(grow, s - 1)
    assume(shape[-1] <= size)
    x = normal(r, shape)
    idx = unique_indices(r, shape, size)
    g = normal(r, (*shape[:-1], size))
    output_size = (*shape[:-1], size) if full else [size]
    if full and len(shape) == 2:  # unbatched: only [size] or [n, c, size] are taken
        output_size = (1, *output_size)
    y, dx = gradient(max_unpool1d, x, g, pyrt.tensor(idx), k, s, p, output_size)
    np.testing.assert_array_equal(y, unpool_reference(x, idx, (size,)))
    np.testing.assert_array_equal(dx, unpool_grad_reference(g, idx, 1))


def test_empty_output_size_gives_an_empty_output_and_zero_gradient():
    # length 1 padded by 1 on each side, windows of 2: one maximum, at index 0 of the input,
    # and a default output length of (1 - 1) * 2 + 2 - 2 = 0
    x = np.array([[[0.5]]], F32)
    y, idx = max_pool1d_with_indices(pyrt.tensor(x), 2, 2, 1)
    np.testing.assert_array_equal(idx.numpy(), [[[0]]])
    u, du = gradient(max_unpool1d, y.numpy(), np.zeros((1, 1, 0), F32), idx, 2, 2, 1)
    assert u.shape == (1, 1, 0)
    np.testing.assert_array_equal(du, [[[0.0]]])


def test_duplicate_indices_keep_one_value_and_each_input_reads_its_gradient():
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], F32)
    idx = np.array([[[[5, 5], [0, 15]]]], np.int64)
    g = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)
    y, dx = gradient(max_unpool2d, x, g, pyrt.tensor(idx), 2)
    assert y.reshape(-1)[5] in (1.0, 2.0)
    assert y.reshape(-1)[0] == 3.0 and y.reshape(-1)[15] == 4.0
    assert np.count_nonzero(y) == 3
    np.testing.assert_array_equal(dx, [[[[5.0, 5.0], [0.0, 15.0]]]])


@SETTINGS
@given(setting=pool_settings(2), ceil_mode=st.booleans(), full=st.booleans(),
       seed=st.integers(0, 2**16), n_threads=st.sampled_from(THREADS))
def test_round_trip_puts_each_maximum_back(setting, ceil_mode, full, seed, n_threads):
    shape, kernel, stride, padding = setting
    x = normal(rng(seed), shape)
    with pyrt.num_threads(n_threads):
        y, idx = max_pool2d_with_indices(pyrt.tensor(x), kernel, stride, padding,
                                         ceil_mode=ceil_mode)
        oh, ow = y.shape[-2:]
        default = [(o - 1) * s + k - 2 * p for o, k, s, p in zip((oh, ow), kernel, stride,
                                                                 padding)]
        assume(all(d - s < n < d + s for d, s, n in zip(default, stride, shape[-2:])))
        u = max_unpool2d(y, idx, kernel, stride, padding,
                         output_size=x.shape if full and len(shape) == 4 else x.shape[-2:])
    y, idx, u = y.numpy(), idx.numpy(), u.numpy()
    if not ceil_mode:
        np.testing.assert_array_equal(y, max_pool_reference(x, kernel, stride, padding))
    flat_x, flat_u, where = by_plane(x), by_plane(u), by_plane(idx)
    np.testing.assert_array_equal(np.take_along_axis(flat_x, where, 1), by_plane(y))
    kept = np.zeros(flat_x.shape, bool)
    np.put_along_axis(kept, where, True, 1)
    np.testing.assert_array_equal(flat_u, np.where(kept, flat_x, 0.0))


@pytest.mark.parametrize("n_threads", THREADS)
def test_round_trip_1d_and_unbatched(n_threads):
    r = rng(7)
    x1 = normal(r, (2, 3, 9))
    x2 = normal(r, (3, 7, 6))
    with pyrt.num_threads(n_threads):
        y, idx = max_pool1d_with_indices(pyrt.tensor(x1), 3, 2, 1)
        u1 = max_unpool1d(y, idx, 3, 2, 1, output_size=[9]).numpy()
        y, idx = max_pool2d_with_indices(pyrt.tensor(x2), 2)
        u2 = max_unpool2d(y, idx, 2, output_size=(7, 6)).numpy()
    for x, u in ((x1, u1), (x2, u2)):
        kept = u != 0
        np.testing.assert_array_equal(u[kept], x[kept])
        assert kept.any()
    # every 2 x 2 window of x2 (rows 0-5) has its maximum back, and nothing else
    assert np.count_nonzero(u2) == 3 * 3 * 3
    windows_max = x2[:, :6].reshape(3, 3, 2, 3, 2).max(axis=(2, 4))
    np.testing.assert_array_equal(np.sort(u2[u2 != 0]), np.sort(windows_max.reshape(-1)))


def test_unbatched_equals_a_batch_of_one():
    r = rng(3)
    x = normal(r, (3, 4, 5))
    y, idx = max_pool2d_with_indices(pyrt.tensor(x[None]), 2, 1)
    batched = max_unpool2d(y, idx, 2, 1).numpy()
    alone = max_unpool2d(y.reshape(y.shape[1:]), idx.reshape(idx.shape[1:]), 2, 1).numpy()
    np.testing.assert_array_equal(alone, batched[0])
    y1, i1 = max_pool1d_with_indices(pyrt.tensor(x[0]), 2)
    y3, i3 = max_pool1d_with_indices(pyrt.tensor(x[None, 0]), 2)
    np.testing.assert_array_equal(max_unpool1d(y1, i1, 2).numpy(),
                                  max_unpool1d(y3, i3, 2).numpy()[0])


# ---- lp_pool against the references -------------------------------------------------------------

NORMS = [1, 2, 3, 1.5, 2.5, INF, -INF]


def lp_input(r, shape, p):
    """Inputs of both signs where p is an even or unit power; positive ones where a negative
    window sum would make the root NaN and its sign hang on rounding."""
    x = normal(r, shape)
    return x if p in (1, 2, INF, -INF) else np.abs(x) + F32(0.1)


@st.composite
def lp_settings(draw, dims):
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    spatial = tuple(draw(st.integers(k, 8)) for k in kernel)
    lead = draw(st.sampled_from([(2, 3), (1, 1), (0, 2), (3,)]))
    return lead + spatial, kernel, draw(st.sampled_from([None, stride]))


@SETTINGS
@given(setting=lp_settings(2), p=st.sampled_from(NORMS), ceil_mode=st.booleans(),
       seed=st.integers(0, 2**16), n_threads=st.sampled_from(THREADS))
def test_lp_pool2d_matches_reference(setting, p, ceil_mode, seed, n_threads):
    shape, kernel, stride = setting
    x = lp_input(rng(seed), shape, p)
    with pyrt.num_threads(n_threads):
        y = lp_pool2d(pyrt.tensor(x), p, kernel, stride, ceil_mode).numpy()
    want = lp_pool_reference(x, p, kernel, kernel if stride is None else stride, ceil_mode)
    assert_close(y, want)


@SETTINGS
@given(setting=lp_settings(1), p=st.sampled_from(NORMS), ceil_mode=st.booleans(),
       seed=st.integers(0, 2**16))
def test_lp_pool1d_matches_reference(setting, p, ceil_mode, seed):
    shape, (k,), stride = setting
    x = lp_input(rng(seed), shape, p)
    y = lp_pool1d(pyrt.tensor(x), p, k, stride and stride[0], ceil_mode).numpy()
    assert_close(y, lp_pool1d_reference(x, p, k, stride[0] if stride else k, ceil_mode))


@pytest.mark.parametrize("p", [1, 2, 3, 1.5, 2.5])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_lp_pool_gradients_match_finite_differences(p, ceil_mode):
    r = rng(11)
    x = (r.random((1, 2, 5, 5)) + 0.5).astype(F32)  # away from the kinks at 0
    kernel, stride = (3, 2), (2, 2)
    y = lp_pool2d(pyrt.tensor(x), p, kernel, stride, ceil_mode)
    g = normal(r, y.shape)
    _, dx = gradient(lp_pool2d, x, g, p, kernel, stride, ceil_mode)
    want = finite_difference(lambda a: lp_pool_reference(a, p, kernel, stride, ceil_mode), x, g)
    assert_close(dx, want, rtol=1e-4, atol=1e-4)
    x1 = x[0]
    y1 = lp_pool1d(pyrt.tensor(x1), p, 3, 2, ceil_mode)
    g1 = normal(r, y1.shape)
    _, dx1 = gradient(lp_pool1d, x1, g1, p, 3, 2, ceil_mode)
    want1 = finite_difference(lambda a: lp_pool1d_reference(a, p, 3, 2, ceil_mode), x1, g1)
    assert_close(dx1, want1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("p", [1, 2, 3, 1.5])
def test_lp_pool_window_of_zeros_passes_no_gradient(p):
    x = np.zeros((1, 1, 4, 4), F32)
    x[0, 0, 0, 0] = 1.0  # the first 2 x 2 window has a nonzero sum, the other three do not
    y, dx = gradient(lp_pool2d, x, np.ones((1, 1, 2, 2), F32), p, 2)
    np.testing.assert_array_equal(y, [[[[1.0, 0.0], [0.0, 0.0]]]])
    want = np.zeros_like(x)
    if p == 1:  # the window's sum: each of its elements has gradient 1
        want[0, 0, :2, :2] = 1.0
    else:  # d(sum x ** p) ** (1 / p) / dx_i = (x_i / norm) ** (p - 1): 1 and 0 here
        want[0, 0, 0, 0] = 1.0
    assert_close(dx, want)


def test_lp_pool_inf_is_the_max_of_abs_and_routes_its_gradient():
    x = np.array([[[1.0, -3.0, 2.0, 0.5]]], F32)
    y, dx = gradient(lp_pool1d, x, np.array([[[1.0, 10.0]]], F32), INF, 2)
    np.testing.assert_array_equal(y, [[[3.0, 2.0]]])
    np.testing.assert_array_equal(dx, [[[0.0, -1.0, 10.0, 0.0]]])
    y, dx = gradient(lp_pool1d, x, np.array([[[1.0, 10.0]]], F32), -INF, 2)
    np.testing.assert_array_equal(y, [[[1.0, 0.5]]])
    np.testing.assert_array_equal(dx, [[[1.0, 0.0, 0.0, 10.0]]])


def test_lp_pool_unbatched_equals_a_batch_of_one():
    x = lp_input(rng(5), (3, 6, 5), 2)
    for p in (2, 1.5, INF):
        xs = np.abs(x)
        np.testing.assert_array_equal(lp_pool2d(pyrt.tensor(xs), p, 2, 1).numpy(),
                                      lp_pool2d(pyrt.tensor(xs[None]), p, 2, 1).numpy()[0])
        np.testing.assert_array_equal(lp_pool1d(pyrt.tensor(xs[0]), p, 3).numpy(),
                                      lp_pool1d(pyrt.tensor(xs[None, 0]), p, 3).numpy()[0])


def test_lp_pool_negative_sum_with_odd_power_is_nan():
    x = np.array([[[-1.0, -2.0, 1.0, 1.0]]], F32)
    y = lp_pool1d(pyrt.tensor(x), 3, 2).numpy()
    assert np.isnan(y[0, 0, 0])
    assert_close(y[0, 0, 1], 2.0 ** (1 / 3))
    np.testing.assert_array_equal(lp_pool1d(pyrt.tensor(x), 1, 2).numpy(), [[[-3.0, 2.0]]])


# ---- the *_with_indices wrappers ----------------------------------------------------------------


def test_with_indices_wrappers_return_what_return_indices_does():
    r = rng(9)
    x = pyrt.tensor(normal(r, (2, 3, 7, 6)))
    x1 = pyrt.tensor(normal(r, (2, 3, 10)))
    pairs = [
        (max_pool2d_with_indices(x, 3, 2, 1, ceil_mode=True),
         max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)),
        (max_pool1d_with_indices(x1, 3, 2, 1, 2),
         max_pool1d(x1, 3, 2, 1, 2, return_indices=True)),
        (adaptive_max_pool2d_with_indices(x, (3, 4)), adaptive_max_pool2d(x, (3, 4), True)),
        (adaptive_max_pool1d_with_indices(x1, 4), adaptive_max_pool1d(x1, 4, True)),
        (max_pool2d_with_indices(x, 2, return_indices=False), max_pool2d(x, 2, None, 0, 1,
                                                                       False, True)),
        (adaptive_max_pool2d_with_indices(x, 3, return_indices=False),
         adaptive_max_pool2d(x, 3, True)),
    ]
    for got, want in pairs:
        assert isinstance(got, tuple) and len(got) == 2
        np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        assert got[1].numpy().dtype == np.int64


def test_adaptive_indices_point_at_the_maxima():
    r = rng(13)
    x = normal(r, (2, 3, 7, 5))
    y, idx = adaptive_max_pool2d_with_indices(pyrt.tensor(x), (3, 2))
    np.testing.assert_array_equal(np.take_along_axis(by_plane(x), by_plane(idx.numpy()), 1),
                                  by_plane(y.numpy()))
    y, idx = adaptive_max_pool2d_with_indices(pyrt.tensor(x), (7, 5))  # every bin one pixel
    np.testing.assert_array_equal(max_unpool2d(y, idx, 1).numpy(), x)


def test_with_indices_gradients_reach_the_maxima():
    x = np.array([[[[1.0, 5.0], [2.0, 3.0]]]], F32)
    t = pyrt.tensor(x, requires_grad=True)
    y, _ = max_pool2d_with_indices(t, 2)
    y.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[[[0.0, 1.0], [0.0, 0.0]]]])


# ---- against PyTorch ----------------------------------------------------------------------------


@needs_torch
@SETTINGS
@given(setting=pool_settings(2), ceil_mode=st.booleans(), seed=st.integers(0, 2**16),
       n_threads=st.sampled_from(THREADS))
def test_pool_and_unpool_match_torch(setting, ceil_mode, seed, n_threads):
    shape, kernel, stride, padding = setting
    r = rng(seed)
    x = normal(r, shape)
    with pyrt.num_threads(n_threads):
        y, idx = max_pool2d_with_indices(pyrt.tensor(x), kernel, stride, padding,
                                         ceil_mode=ceil_mode)
    yt, it = TF.max_pool2d_with_indices(torch.tensor(x), kernel, stride, padding,
                                        ceil_mode=ceil_mode)
    np.testing.assert_array_equal(y.numpy(), yt.numpy())
    np.testing.assert_array_equal(idx.numpy(), it.numpy())
    oh, ow = yt.shape[-2:]
    default = [(o - 1) * s + k - 2 * p for o, k, s, p in zip((oh, ow), kernel, stride, padding)]
    size = [max(d, n) for d, n in zip(default, shape[-2:])]
    assume(all(d - s < n < d + s for d, s, n in zip(default, stride, size)))
    g = normal(r, (*shape[:-2], *size))
    with pyrt.num_threads(n_threads):
        u, du = gradient(max_unpool2d, y.numpy(), g, idx, kernel, stride, padding, size)
    ut, dut = torch_gradient(TF.max_unpool2d, y.numpy(), g, it, kernel, stride, padding, size)
    np.testing.assert_array_equal(u, ut)
    np.testing.assert_array_equal(du, dut)


@needs_torch
@SETTINGS
@given(setting=pool_settings(1), seed=st.integers(0, 2**16))
def test_pool1d_and_unpool1d_match_torch(setting, seed):
    shape, kernel, stride, padding = setting
    r = rng(seed)
    x = normal(r, shape)
    y, idx = max_pool1d_with_indices(pyrt.tensor(x), kernel, stride, padding)
    yt, it = TF.max_pool1d_with_indices(torch.tensor(x), kernel, stride, padding)
    np.testing.assert_array_equal(idx.numpy(), it.numpy())
    # the input's length where the default is shorter (a maximum may lie past the default)
    default = (yt.shape[-1] - 1) * stride[0] + kernel[0] - 2 * padding[0]
    size = [max(default, shape[-1])]
    assume(size[0] < default + stride[0])
    ut = TF.max_unpool1d(yt, it, kernel, stride, padding, size)
    g = normal(r, ut.shape)
    u, du = gradient(max_unpool1d, y.numpy(), g, idx, kernel, stride, padding, size)
    np.testing.assert_array_equal(u, ut.numpy())
    if u.size:  # (torch's backward fails on an empty output; pyrt's gives zeros)
        _, dut = torch_gradient(TF.max_unpool1d, yt.numpy(), g, it, kernel, stride, padding,
                                size)
        np.testing.assert_array_equal(du, dut)


@needs_torch
@SETTINGS
@given(setting=lp_settings(2), p=st.sampled_from(NORMS), ceil_mode=st.booleans(),
       seed=st.integers(0, 2**16), n_threads=st.sampled_from(THREADS))
def test_lp_pool2d_matches_torch(setting, p, ceil_mode, seed, n_threads):
    shape, kernel, stride = setting
    r = rng(seed)
    x = lp_input(r, shape, p)
    y = TF.lp_pool2d(torch.tensor(x), p, kernel, stride, ceil_mode)
    g = normal(r, y.shape)
    with pyrt.num_threads(n_threads):
        got = gradient(lp_pool2d, x, g, p, kernel, stride, ceil_mode)
    want = torch_gradient(TF.lp_pool2d, x, g, p, kernel, stride, ceil_mode)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


@needs_torch
@SETTINGS
@given(setting=lp_settings(1), p=st.sampled_from(NORMS), ceil_mode=st.booleans(),
       seed=st.integers(0, 2**16), n_threads=st.sampled_from(THREADS))
def test_lp_pool1d_matches_torch(setting, p, ceil_mode, seed, n_threads):
    shape, (k,), stride = setting
    stride = stride and stride[0]
    r = rng(seed)
    x = lp_input(r, shape, p)
    g = normal(r, TF.lp_pool1d(torch.tensor(x), p, k, stride, ceil_mode).shape)
    with pyrt.num_threads(n_threads):
        got = gradient(lp_pool1d, x, g, p, k, stride, ceil_mode)
    want = torch_gradient(TF.lp_pool1d, x, g, p, k, stride, ceil_mode)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


@needs_torch
@pytest.mark.parametrize("p", [1, 3])
def test_lp_pool_mixed_signs_match_torch(p):
    """Odd powers of inputs of both signs: negative window sums, NaN roots and gradients."""
    r = rng(17)
    x = normal(r, (2, 3, 6, 6))
    g = normal(r, (2, 3, 3, 3))
    got = gradient(lp_pool2d, x, g, p, 2)
    want = torch_gradient(TF.lp_pool2d, x, g, p, 2)
    assert np.isnan(want[0]).any() == (p == 3)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


@needs_torch
def test_adaptive_with_indices_match_torch():
    r = rng(19)
    x = normal(r, (2, 3, 7, 5))
    for ours, theirs, size, data in (
            (adaptive_max_pool2d_with_indices, TF.adaptive_max_pool2d_with_indices, (3, 2), x),
            (adaptive_max_pool1d_with_indices, TF.adaptive_max_pool1d_with_indices, 3, x[0])):
        y, idx = ours(pyrt.tensor(data), size)
        yt, it = theirs(torch.tensor(data), size)
        np.testing.assert_array_equal(y.numpy(), yt.numpy())
        np.testing.assert_array_equal(idx.numpy(), it.numpy())


@needs_torch
def test_unbatched_match_torch():
    r = rng(23)
    x = normal(r, (3, 6, 5))
    y, idx = max_pool2d_with_indices(pyrt.tensor(x), 2, 1)
    yt, it = TF.max_pool2d_with_indices(torch.tensor(x), 2, 1)
    np.testing.assert_array_equal(idx.numpy(), it.numpy())
    g = normal(r, (3, 6, 5))
    got = gradient(max_unpool2d, y.numpy(), g, idx, 2, 1, 0, (3, 3, 6, 5))
    want = torch_gradient(TF.max_unpool2d, yt.numpy(), g, it, 2, 1, 0, (3, 3, 6, 5))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    g = normal(r, (3, 3, 2))
    assert_close(gradient(lp_pool2d, x, g, 2, (2, 3), 2, True)[1],
                 torch_gradient(TF.lp_pool2d, x, g, 2, (2, 3), 2, True)[1])


# ---- the layers ---------------------------------------------------------------------------------


def test_layers_run_their_functions():
    r = rng(29)
    x = pyrt.tensor(normal(r, (2, 3, 7, 6)))
    y, idx = max_pool2d_with_indices(x, 3, 2, 1)
    np.testing.assert_array_equal(MaxUnpool2d(3, 2, 1)(y, idx, (7, 6)).numpy(),
                                  max_unpool2d(y, idx, 3, 2, 1, (7, 6)).numpy())
    x1 = pyrt.tensor(normal(r, (2, 3, 9)))
    y1, idx1 = max_pool1d_with_indices(x1, 2)
    np.testing.assert_array_equal(MaxUnpool1d(2)(y1, idx1, output_size=[2, 3, 9]).numpy(),
                                  max_unpool1d(y1, idx1, 2, output_size=[9]).numpy())
    xa = pyrt.tensor(np.abs(x.numpy()))
    np.testing.assert_array_equal(LPPool2d(1.5, (3, 2), 2, True)(xa).numpy(),
                                  lp_pool2d(xa, 1.5, (3, 2), 2, True).numpy())
    np.testing.assert_array_equal(LPPool1d(2, 3)(x1).numpy(), lp_pool1d(x1, 2.0, 3).numpy())


REPRS = [
    (lambda: MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
    (lambda: MaxUnpool1d(3, 2, 1), "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))"),
    (lambda: MaxUnpool2d(2), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"),
    (lambda: MaxUnpool2d((2, 3), 1, (1, 0)),
     "MaxUnpool2d(kernel_size=(2, 3), stride=(1, 1), padding=(1, 0))"),
    (lambda: LPPool2d(2, 3), "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (lambda: LPPool1d(1.5, 3, 2, True),
     "LPPool1d(norm_type=1.5, kernel_size=3, stride=2, ceil_mode=True)"),
]


@pytest.mark.parametrize("make, text", REPRS)
def test_layer_reprs(make, text):
    assert repr(make()) == text


@needs_torch
@pytest.mark.parametrize("make, text", REPRS)
def test_layer_reprs_match_torch(make, text):
    assert repr(eval(text, {"inf": INF}, vars(torch.nn))) == text


# ---- errors -------------------------------------------------------------------------------------


def _pooled():
    x = normal(rng(31), (2, 3, 4, 4))
    y, idx = max_pool2d_with_indices(pyrt.tensor(x), 2)
    yt, it = TF.max_pool2d_with_indices(torch.tensor(x), 2) if torch else (None, None)
    x1 = normal(rng(37), (2, 3, 8))
    y1, idx1 = max_pool1d_with_indices(pyrt.tensor(x1), 2)
    y1t, i1t = TF.max_pool1d_with_indices(torch.tensor(x1), 2) if torch else (None, None)
    return {"pyrt": (y, idx, y1, idx1, x, pyrt.tensor), "torch": (yt, it, y1t, i1t, x,
                                                                  torch and torch.tensor)}


# (call on (y, idx, y1, idx1, x, tensor) and the functions' module, exception, message): the
# same calls are made on torch, which must raise the same type
ERRORS = [
    ("unpool output_size of 3", lambda a, F: F.max_unpool2d(a[0], a[1], 2, output_size=[3, 4, 4]),
     ValueError, "2 or 4 elements"),
    ("unpool output_size too large", lambda a, F: F.max_unpool2d(a[0], a[1], 2,
                                                                 output_size=[6, 6]),
     ValueError, "dim 0 must be between 2 and 6"),
    ("unpool output_size too small", lambda a, F: F.max_unpool2d(a[0], a[1], 2,
                                                                 output_size=[4, 2]),
     ValueError, "dim 1 must be between 2 and 6"),
    ("unpool output_size int", lambda a, F: F.max_unpool2d(a[0], a[1], 2, output_size=4),
     TypeError, "output_size"),
    ("unpool output_size float", lambda a, F: F.max_unpool2d(a[0], a[1], 2,
                                                             output_size=[4.0, 4]),
     TypeError, "output_size"),
    ("unpool negative size", lambda a, F: F.max_unpool2d(a[0], a[1], 2, 2, 3),
     ValueError, "non-negative"),
    ("unpool indices shape", lambda a, F: F.max_unpool2d(a[0], a[1][:, :, :1], 2),
     RuntimeError, "shape of indices"),
    ("unpool indices int32", lambda a, F: F.max_unpool2d(a[0], a[1].int(), 2),
     RuntimeError, "int64"),
    ("unpool indices float", lambda a, F: F.max_unpool2d(a[0], a[1].float(), 2),
     RuntimeError, "int64"),
    ("unpool index too large", lambda a, F: F.max_unpool2d(a[0], a[1] + 100, 2),
     RuntimeError, "invalid max index: 1"),
    ("unpool index negative", lambda a, F: F.max_unpool2d(a[0], a[1] - 100, 2),
     RuntimeError, "invalid max index: -"),
    ("unpool 2-d input", lambda a, F: F.max_unpool2d(a[0][0, 0], a[1][0, 0], 2),
     RuntimeError, "3d or 4d"),
    ("unpool 5-d input", lambda a, F: F.max_unpool2d(a[0].reshape(1, 2, 3, 2, 2),
                                                     a[1].reshape(1, 2, 3, 2, 2), 2),
     RuntimeError, "3d or 4d"),
    ("unpool integer input", lambda a, F: F.max_unpool2d(a[1], a[1], 2),
     NotImplementedError, "not implemented"),
    ("unpool empty channels", lambda a, F: F.max_unpool2d(a[0][:, :0], a[1][:, :0], 2),
     RuntimeError, "dimension 1 being empty"),
    ("unpool unbatched output_size of 3", lambda a, F: F.max_unpool2d(
        a[0][0], a[1][0], 2, output_size=(3, 4, 4)), ValueError, "2 or 4 elements"),
    ("unpool indices not a tensor", lambda a, F: F.max_unpool2d(a[0], a[1].numpy(), 2),
     TypeError, "indices"),
    ("unpool1d output_size of 2", lambda a, F: F.max_unpool1d(a[2], a[3], 2, output_size=[3, 9]),
     ValueError, "1 or 3 elements"),
    ("unpool1d index too large", lambda a, F: F.max_unpool1d(a[2], a[3] + 8, 2),
     RuntimeError, "invalid max index"),
    ("unpool1d indices shape", lambda a, F: F.max_unpool1d(a[2], a[3][:, :, :2], 2),
     RuntimeError, "shape of indices"),
    ("unpool1d 1-d input", lambda a, F: F.max_unpool1d(a[2][0, 0], a[3][0, 0], 2),
     RuntimeError, "dimensions"),
    ("lp_pool2d 5-d input", lambda a, F: F.lp_pool2d(a[5](a[4]).reshape(1, 2, 3, 4, 4), 2, 2),
     RuntimeError, "3D or 4D"),
    ("lp_pool2d kernel too large", lambda a, F: F.lp_pool2d(a[5](a[4]), 2, 5),
     RuntimeError, "Output size is too small"),
    ("lp_pool1d kernel too large", lambda a, F: F.lp_pool1d(a[5](a[4][0]), 2, 5),
     RuntimeError, "Output size is too small"),
    ("lp_pool norm_type str", lambda a, F: F.lp_pool2d(a[5](a[4]), "2", 2),
     TypeError, "norm_type"),
    ("lp_pool norm_type 0", lambda a, F: F.lp_pool2d(a[5](a[4]), 0, 2),
     ZeroDivisionError, "norm_type"),
    ("lp_pool1d 1-d input", lambda a, F: F.lp_pool1d(a[5](a[4][0, 0, 0]), 2, 2),
     RuntimeError, "2D or 3D"),
    ("lp_pool1d 4-d input", lambda a, F: F.lp_pool1d(a[5](a[4]), 2, 2),
     RuntimeError, "2D or 3D"),
    ("max_pool2d_with_indices 5-d", lambda a, F: F.max_pool2d_with_indices(
        a[5](a[4]).reshape(1, 2, 3, 4, 4), 2), RuntimeError, "3D or 4D"),
]


# pyrt's own checks of the window settings (ValueError or TypeError naming the setting, as its
# other pools raise), made by the functions and, at construction, by the layers
SETTING_ERRORS = [
    (lambda y, i: max_unpool2d(y, i, 0), ValueError, "kernel_size"),
    (lambda y, i: max_unpool2d(y, i, 2, (2, 0)), ValueError, "stride"),
    (lambda y, i: max_unpool2d(y, i, 2, 2, -1), ValueError, "padding"),
    (lambda y, i: max_unpool2d(y, i, 2.0), TypeError, "kernel_size"),
    (lambda y, i: max_unpool1d(y[0], i[0], (2, 2)), ValueError, "kernel_size"),
    (lambda y, i: max_unpool2d(y.numpy(), i, 2), TypeError, "input"),
    (lambda y, i: lp_pool2d(y, 2, (2, 0)), ValueError, "kernel_size"),
    (lambda y, i: lp_pool2d(y, 2, 1, 0), ValueError, "stride"),
    (lambda y, i: lp_pool1d(y[0], 2, 1, 0), ValueError, "stride"),
    (lambda y, i: lp_pool2d(y, True, 1), TypeError, "norm_type"),
    (lambda y, i: lp_pool2d(y.numpy(), 2, 1), TypeError, "input"),
    (lambda y, i: MaxUnpool2d(0), ValueError, "kernel_size"),
    (lambda y, i: MaxUnpool1d(2, 0), ValueError, "stride"),
    (lambda y, i: MaxUnpool2d(2, 2, -1), ValueError, "padding"),
    (lambda y, i: LPPool2d("2", 2), TypeError, "norm_type"),
    (lambda y, i: LPPool1d(0, 2), ZeroDivisionError, "norm_type"),
    (lambda y, i: LPPool2d(2, 0), ValueError, "kernel_size"),
    (lambda y, i: LPPool1d(2, 2, 0), ValueError, "stride"),
    (lambda y, i: LPPool2d(2, 2, ceil_mode=1), TypeError, "ceil_mode"),
]


@pytest.mark.parametrize("call, error, match", SETTING_ERRORS)
def test_setting_errors(call, error, match):
    y, idx = _pooled()["pyrt"][:2]
    with pytest.raises(error, match=match):
        call(y, idx)


class _Ours:
    """pyrt's functions under torch.nn.functional's names, for the ERRORS table."""
    max_unpool1d = staticmethod(max_unpool1d)
    max_unpool2d = staticmethod(max_unpool2d)
    lp_pool1d = staticmethod(lp_pool1d)
    lp_pool2d = staticmethod(lp_pool2d)
    max_pool2d_with_indices = staticmethod(max_pool2d_with_indices)


@pytest.mark.parametrize("what, call, error, match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(what, call, error, match):
    with pytest.raises(error, match=match):
        call(_pooled()["pyrt"], _Ours)


@needs_torch
@pytest.mark.parametrize("what, call, error, match", ERRORS, ids=[e[0] for e in ERRORS])
def test_torch_raises_the_same_types(what, call, error, match):
    with pytest.raises(error):
        call(_pooled()["torch"], TF)
