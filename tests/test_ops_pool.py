"""max_pool2d (dilated too) and avg_pool2d and their gradients against NumPy references and
PyTorch (values, indices, NaN and tie rules), over many shapes and thread counts, with argument
errors."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.pool import (
    _pool_geometry,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool2d,
    max_pool2d_backward,
)

THREADS = [1, 2, 4]


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


# ---- references ---------------------------------------------------------------------------


def windows(shape, kernel, stride, padding, dilation=1):
    """For every output pixel, the flat indices (within the h*w plane) of the input pixels
    its window's taps cover, in row-major order; padding is left out."""
    _, _, h, w = shape
    stride = kernel if stride is None else stride
    (kh, kw), (sh, sw), (ph, pw) = pair(kernel), pair(stride), pair(padding)
    dh, dw = pair(dilation)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = {}
    for oy in range(oh):
        for ox in range(ow):
            rows = [oy * sh - ph + i * dh for i in range(kh)]
            cols = [ox * sw - pw + j * dw for j in range(kw)]
            out[oy, ox] = [iy * w + ix for iy in rows if 0 <= iy < h
                           for ix in cols if 0 <= ix < w]
    return oh, ow, out


def ref_max_pool(x, kernel, stride, padding, dilation=1):
    """Values and indices by PyTorch's rule: the first maximum wins, a NaN beats everything
    (the last NaN of the window); padding is -inf and never wins."""
    n, c = x.shape[:2]
    oh, ow, win = windows(x.shape, kernel, stride, padding, dilation)
    y = np.empty((n, c, oh, ow), np.float32)
    ind = np.empty((n, c, oh, ow), np.int64)
    planes = x.reshape(n, c, -1)
    for (oy, ox), idx in win.items():
        for a in range(n):
            for b in range(c):
                best, at = -np.inf, idx[0] if idx else -1  # -1: no pixel under the taps
                for i in idx:
                    v = planes[a, b, i]
                    if v > best or np.isnan(v):
                        best, at = v, i
                y[a, b, oy, ox], ind[a, b, oy, ox] = best, at
    return y, ind


def ref_avg_pool(x, kernel, stride, padding):
    (kh, kw) = pair(kernel)
    n, c = x.shape[:2]
    oh, ow, win = windows(x.shape, kernel, stride, padding)
    planes = x.reshape(n, c, -1).astype(np.float64)
    y = np.empty((n, c, oh, ow))
    for (oy, ox), idx in win.items():
        y[:, :, oy, ox] = planes[:, :, idx].sum(axis=2) / (kh * kw)
    return y


def ref_avg_backward(dy, shape, kernel, stride, padding):
    (kh, kw) = pair(kernel)
    n, c, h, w = shape
    _, _, win = windows(shape, kernel, stride, padding)
    dx = np.zeros((n, c, h * w))
    for (oy, ox), idx in win.items():
        for i in idx:
            dx[:, :, i] += dy[:, :, oy, ox].astype(np.float64) / (kh * kw)
    return dx.reshape(shape)


def ref_max_backward(dy, ind, shape):
    n, c, h, w = shape
    dx = np.zeros((n * c, h * w))
    for p, (g, i) in enumerate(zip(dy.reshape(n * c, -1), ind.reshape(n * c, -1))):
        np.add.at(dx[p], i[i >= 0], g[i >= 0].astype(np.float64))
    return dx.reshape(shape)


# ---- hypothesis over shapes ---------------------------------------------------------------


@st.composite
def pool_cases(draw, dilated=False):
    """Shapes and windows; with `dilated`, (its cases and) a dilation, (1, 1) a third of the
    time."""
    n, c = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    stride = draw(st.none() | st.tuples(st.integers(1, 3), st.integers(1, 3)))
    padding = (draw(st.integers(0, kernel[0] // 2)), draw(st.integers(0, kernel[1] // 2)))
    dilation = draw(st.sampled_from([(1, 1), (2, 2), (1, 3), (3, 2)])) if dilated else (1, 1)
    assume(h + 2 * padding[0] >= dilation[0] * (kernel[0] - 1) + 1
           and w + 2 * padding[1] >= dilation[1] * (kernel[1] - 1) + 1)
    case = (n, c, h, w), kernel, stride, padding
    return case + (dilation,) if dilated else case


def with_ties_and_nans(x, seed, nans):
    """Round to quarters (so windows hold ties), add -inf and, optionally, NaN."""
    rng = np.random.default_rng(seed)
    x = np.round(x * 2) / 4
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, max(1, flat.size // 20))] = -np.inf
    if nans:
        flat[rng.integers(0, flat.size, max(1, flat.size // 20))] = np.nan
    return x


@settings(max_examples=300, deadline=None)
@given(case=pool_cases(dilated=True), threads=st.sampled_from(THREADS), nans=st.booleans(),
       seed=st.integers(0, 2**16))
def test_max_pool_matches_reference(case, threads, nans, seed):
    shape, kernel, stride, padding, dilation = case
    x = with_ties_and_nans(random(shape, seed), seed, nans)
    with pyrt.num_threads(threads):
        y, ind = max_pool2d(x, kernel, stride, padding, dilation, return_indices=True)
        y_only = max_pool2d(x, kernel, stride, padding, dilation)
        dy = random(y.shape, seed + 1)
        dx = max_pool2d_backward(dy, ind, shape, kernel, stride, padding, dilation)
    ry, rind = ref_max_pool(x, kernel, stride, padding, dilation)
    np.testing.assert_array_equal(y, ry)
    np.testing.assert_array_equal(y_only, ry)
    np.testing.assert_array_equal(ind, rind)
    np.testing.assert_allclose(dx, ref_max_backward(dy, rind, shape), rtol=1e-6, atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(case=pool_cases(dilated=True), threads=st.sampled_from(THREADS), nans=st.booleans(),
       signs=st.sampled_from(["mixed", "negative", "zeros"]), seed=st.integers(0, 2**16))
def test_max_pool_with_relu_is_relu_of_the_maxima_with_no_gradient_where_it_is_zero(
        case, threads, nans, signs, seed):
    shape, kernel, stride, padding, dilation = case
    x = with_ties_and_nans(random(shape, seed), seed, nans)
    if signs == "negative":
        x = -np.abs(x)
    elif signs == "zeros":  # exact zeros, of both signs, beside negatives
        x = np.where(x > 0, np.float32(0.0), x)
        x[..., ::2] = np.copysign(np.float32(0.0), -1 * np.ones_like(x[..., ::2]))
    with pyrt.num_threads(threads):
        y, ind = max_pool2d(x, kernel, stride, padding, dilation, return_indices=True,
                            relu=True)
        y_only = max_pool2d(x, kernel, stride, padding, dilation, relu=True)
        dy = random(y.shape, seed + 1)
        dx = max_pool2d_backward(dy, ind, shape, kernel, stride, padding, dilation)
    ry, rind = ref_max_pool(x, kernel, stride, padding, dilation)
    dead = ry <= 0  # (a NaN maximum is not: ReLU keeps it and passes its gradient)
    ry = np.where(dead, np.float32(0.0), ry)
    rind = np.where(dead, -1, rind)
    np.testing.assert_array_equal(y, ry)
    assert not np.signbit(y[y == 0]).any()  # +0, as ReLU gives
    np.testing.assert_array_equal(y_only, ry)
    np.testing.assert_array_equal(ind, rind)
    np.testing.assert_allclose(dx, ref_max_backward(dy, rind, shape), rtol=1e-6, atol=1e-6)


def test_relu_is_max_pooling_s_alone():
    x = random((1, 2, 4, 4), 0)
    with pytest.raises(TypeError, match="relu must be a bool"):
        max_pool2d(x, 2, relu="yes")
    shape, _, _ = _pool_geometry(x.shape, 2, None, 0, relu=True)
    out = np.empty((1, 2, 2, 2), np.float32)
    ptr = ffi.from_buffer("float[]", x)
    assert lib.pyrt_avg_pool2d_forward(shape, ptr, ffi.from_buffer("float[]", out)) \
        == lib.PYRT_EINVAL


@settings(max_examples=200, deadline=None)
@given(case=pool_cases(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_avg_pool_matches_reference(case, threads, seed):
    shape, kernel, stride, padding = case
    x = random(shape, seed)
    with pyrt.num_threads(threads):
        y = avg_pool2d(x, kernel, stride, padding)
        dy = random(y.shape, seed + 1)
        dx = avg_pool2d_backward(dy, shape, kernel, stride, padding)
    np.testing.assert_allclose(y, ref_avg_pool(x, kernel, stride, padding), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(dx, ref_avg_backward(dy, shape, kernel, stride, padding),
                               rtol=1e-5, atol=1e-6)


# The 2-column vector path of max pooling: rows of at least 8 outputs and of fewer, odd
# widths, row padding, taller windows, and the batch's last plane (no reading past it).
FAST_CASES = [
    ((64, 8, 28, 28), 2, None, 0),
    ((64, 16, 14, 14), 2, None, 0),
    ((2, 3, 13, 37), 2, 2, 0),
    ((2, 3, 9, 5), (3, 2), (2, 2), (1, 0)),
    ((1, 1, 2, 2), 2, 2, 0),
    ((3, 2, 7, 17), (2, 2), (1, 2), 0),
    ((1, 1, 1, 31), (1, 2), (1, 2), 0),
]


@pytest.mark.parametrize("shape,kernel,stride,padding", FAST_CASES)
def test_max_pool_matches_torch(shape, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    x = with_ties_and_nans(random(shape, 3), 4, nans=True)
    xt = torch.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, kernel, stride, padding, return_indices=True)
    dy = random(tuple(yt.shape), 5)
    yt.backward(torch.from_numpy(dy))
    y, ind = max_pool2d(x, kernel, stride, padding, return_indices=True)
    np.testing.assert_array_equal(y, yt.detach().numpy())
    np.testing.assert_array_equal(ind, it.numpy())
    np.testing.assert_allclose(max_pool2d_backward(dy, ind, shape, kernel, stride, padding),
                               xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,kernel,stride,padding", [
    ((4, 3, 28, 28), 2, None, 0),
    ((2, 3, 9, 11), 3, 2, 1),
    ((2, 2, 7, 8), (3, 2), (1, 2), (1, 1)),
])
def test_avg_pool_matches_torch(shape, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    x = random(shape, 6)
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.avg_pool2d(xt, kernel, stride, padding)
    dy = random(tuple(yt.shape), 7)
    yt.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(avg_pool2d(x, kernel, stride, padding), yt.detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(avg_pool2d_backward(dy, shape, kernel, stride, padding),
                               xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@settings(max_examples=150, deadline=None)
@given(case=pool_cases(dilated=True), ceil_mode=st.booleans(), count_include_pad=st.booleans(),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_ceil_mode_and_count_include_pad_match_torch(case, ceil_mode, count_include_pad,
                                                     threads, seed):
    """PyTorch's output sizes with ceil_mode (a last window hanging past the padded input, as
    long as it starts inside the input or its leading padding) and its divisors: the padded
    window within the padded input, or the input pixels alone with count_include_pad=False.
    Max pooling's values, indices and gradient too, through both of its paths, dilated or
    not (average pooling takes no dilation)."""
    torch = pytest.importorskip("torch")
    shape, kernel, stride, padding, dilation = case
    # no window of padding alone (a dilation allows them): torch's max pooling backward aborts
    # the process on the index it gives one (test_a_dilated_window_of_padding_alone has pyrt's)
    assume(all(windows(shape, kernel, stride, padding, dilation)[2].values()))
    x = with_ties_and_nans(random(shape, seed), seed, nans=False)
    xt = torch.tensor(x, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, kernel, stride, padding, dilation,
                                            ceil_mode=ceil_mode, return_indices=True)
    at = torch.nn.functional.avg_pool2d(xt, kernel, stride, padding, ceil_mode=ceil_mode,
                                        count_include_pad=count_include_pad)
    dy, da = random(tuple(yt.shape), seed + 1), random(tuple(at.shape), seed + 2)
    gmax, = torch.autograd.grad(yt, xt, torch.from_numpy(dy))
    gavg, = torch.autograd.grad(at, xt, torch.from_numpy(da))
    with pyrt.num_threads(threads):
        y, ind = max_pool2d(x, kernel, stride, padding, dilation, ceil_mode=ceil_mode,
                            return_indices=True)
        a = avg_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode,
                       count_include_pad=count_include_pad)
        dx = max_pool2d_backward(dy, ind, shape, kernel, stride, padding, dilation,
                                 ceil_mode=ceil_mode)
        dxa = avg_pool2d_backward(da, shape, kernel, stride, padding, ceil_mode=ceil_mode,
                                  count_include_pad=count_include_pad)
    np.testing.assert_array_equal(y, yt.detach().numpy())
    np.testing.assert_array_equal(ind, it.numpy())
    np.testing.assert_allclose(dx, gmax.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(a, at.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dxa, gavg.numpy(), rtol=1e-5, atol=1e-6)


def test_pool_options_are_checked():
    x = random((1, 1, 5, 5), 0)
    for bad in (2, "yes", None):
        with pytest.raises(TypeError, match="ceil_mode must be a bool"):
            max_pool2d(x, 2, ceil_mode=bad)
        with pytest.raises(TypeError, match="count_include_pad must be a bool"):
            avg_pool2d(x, 2, count_include_pad=bad)
    with pytest.raises(ValueError, match="grad_output must have shape"):
        avg_pool2d_backward(random((1, 1, 2, 2), 1), x.shape, 2, ceil_mode=True)


# ---- finite differences -------------------------------------------------------------------


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_gradients_match_finite_differences(pool):
    """sum(pool(x) * g) in float64. Average pooling is linear; for max pooling the inputs are
    spread apart (a permutation of a ramp) so that a small step never changes a winner."""
    shape, kernel, stride, padding = (2, 2, 5, 6), 3, 2, 1
    rng = np.random.default_rng(8)
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float32)).reshape(shape)
    fwd = (lambda a: max_pool2d(a, kernel, stride, padding)) if pool == "max" else (
        lambda a: avg_pool2d(a, kernel, stride, padding))
    g = random(fwd(x).shape, 9)
    if pool == "max":
        _, ind = max_pool2d(x, kernel, stride, padding, return_indices=True)
        dx = max_pool2d_backward(g, ind, shape, kernel, stride, padding)
    else:
        dx = avg_pool2d_backward(g, shape, kernel, stride, padding)
    eps = 0.25
    for idx in np.ndindex(shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        numeric = ((fwd(hi) * g.astype(np.float64)).sum()
                   - (fwd(lo) * g.astype(np.float64)).sum()) / (2 * eps)
        assert abs(numeric - dx[idx]) <= 1e-4 * (1 + abs(numeric)), idx


# ---- determinism and API ------------------------------------------------------------------


def test_results_identical_across_threads():
    x = random((64, 16, 14, 14), 10)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            y, ind = max_pool2d(x, 2, return_indices=True)
            a = avg_pool2d(x, 3, 1, 1)
            dy, da = random(y.shape, 11), random(a.shape, 12)
            results.append((y, ind, a, max_pool2d_backward(dy, ind, x.shape, 2),
                            avg_pool2d_backward(da, x.shape, 3, 1, 1)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_stride_defaults_to_kernel_size():
    x = random((1, 2, 8, 9), 13)
    np.testing.assert_array_equal(max_pool2d(x, (2, 3)), max_pool2d(x, (2, 3), (2, 3)))
    np.testing.assert_array_equal(avg_pool2d(x, 2), avg_pool2d(x, 2, 2))


def test_empty_batch_and_noncontiguous_input():
    assert max_pool2d(np.zeros((0, 3, 4, 4), np.float32), 2).shape == (0, 3, 2, 2)
    x = random((2, 3, 6, 8), 14)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(max_pool2d(xt, 2), max_pool2d(x, 2))
    np.testing.assert_array_equal(avg_pool2d(xt, 2), avg_pool2d(x, 2))


@pytest.mark.parametrize("bad", [-2, 8, 99, -2**63, 2**63 - 1])
@pytest.mark.parametrize("threads", [1, 2])
def test_backward_refuses_indices_outside_the_plane(bad, threads):
    # indices not from max_pool2d would drop gradient (or, followed, write out of bounds)
    dy = np.ones((3, 2, 1, 2), np.float32)
    ind = np.zeros((3, 2, 1, 2), np.int64)
    ind[2, 1, 0, 1] = bad
    with pyrt.num_threads(threads), pytest.raises(ValueError, match="indices must be flat "
                                                  "indices within each 2x4 input plane"):
        max_pool2d_backward(dy, ind, (3, 2, 2, 4), 2)
    ind[2, 1, 0, 1] = 7  # the last pixel of the plane is fine
    assert max_pool2d_backward(dy, ind, (3, 2, 2, 4), 2).sum() == dy.sum()
    ind[2, 1, 0, 1] = -1  # a window of padding alone: its gradient goes nowhere
    assert max_pool2d_backward(dy, ind, (3, 2, 2, 4), 2).sum() == dy.sum() - 1


def test_a_dilated_window_of_padding_alone():
    # kernel 2 dilated by 2 with padding 1 over one row: the window's taps are rows -1 and 1
    x = random((1, 2, 1, 3), 16)
    y, ind = max_pool2d(x, (2, 1), 1, (1, 0), 2, return_indices=True)
    assert y.shape == (1, 2, 1, 3) and np.all(y == -np.inf) and np.all(ind == -1)
    assert not max_pool2d_backward(np.ones_like(y), ind, x.shape, (2, 1), 1, (1, 0), 2).any()


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_out_receives_the_result_and_may_not_overlap_the_input(pool):
    x = random((2, 3, 6, 8), 15)
    forward, backward = ((max_pool2d, max_pool2d_backward) if pool == "max"
                         else (avg_pool2d, avg_pool2d_backward))
    if pool == "max":
        want, ind = forward(x, 2, return_indices=True)
        out = np.full_like(want, np.nan)
        got, got_ind = forward(x, 2, return_indices=True, out=out)
        np.testing.assert_array_equal(got_ind, ind)
        extra = (ind,)
    else:
        want = forward(x, 2)
        out = np.full_like(want, np.nan)
        got = forward(x, 2, out=out)
        extra = ()
    assert got is out
    np.testing.assert_array_equal(out, want)
    dx = backward(want, *extra, x.shape, 2)
    out_dx = np.full_like(dx, np.nan)
    assert backward(want, *extra, x.shape, 2, out=out_dx) is out_dx
    np.testing.assert_array_equal(out_dx, dx)
    with pytest.raises(ValueError, match="out overlaps x"):
        forward(x, 2, out=x.reshape(-1)[:want.size].reshape(want.shape))


def test_errors_name_the_argument():
    x = random((1, 2, 5, 5), 15)
    with pytest.raises(TypeError, match="x"):
        max_pool2d(x.astype(np.float64), 2)
    with pytest.raises(ValueError, match="x must be 4-D"):
        avg_pool2d(x[0], 2)
    with pytest.raises(ValueError, match="kernel_size 7x2 is larger"):
        max_pool2d(x, (7, 2))
    with pytest.raises(ValueError, match="kernel_size"):
        max_pool2d(x, 0)
    with pytest.raises(ValueError, match="stride"):
        avg_pool2d(x, 2, stride=0)
    with pytest.raises(ValueError, match="padding should be at most half"):
        max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="padding"):
        avg_pool2d(x, 3, padding=-1)
    y, ind = max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match=r"grad_output must have shape \(1, 2, 2, 2\), got "
                                         r"\(1, 2, 3, 3\)"):
        max_pool2d_backward(random((1, 2, 3, 3), 16), ind, x.shape, 2)
    with pytest.raises(ValueError, match=r"indices must have shape \(1, 2, 2, 2\), got "
                                         r"\(1, 1, 2, 2\)"):
        max_pool2d_backward(y, ind[:, :1], x.shape, 2)
    with pytest.raises(TypeError, match="indices"):
        max_pool2d_backward(y, ind.astype(np.float32), x.shape, 2)
    with pytest.raises(ValueError, match="input_shape"):
        avg_pool2d_backward(y, (1, 2, 5), 2)
    with pytest.raises(ValueError, match="grad_output"):
        avg_pool2d_backward(random((1, 2, 3, 3), 17), x.shape, 2)


@pytest.mark.parametrize("shape", [(1, 1, 0, 4), (2, 3, 4, 0)])
def test_planes_without_rows_or_columns_are_refused(shape):
    # with padding each window would "fit" yet hold padding only: no maximum, no average
    x = np.zeros(shape, np.float32)
    for pool in (max_pool2d, avg_pool2d):
        with pytest.raises(ValueError, match="x must have a height and width of at least 1"):
            pool(x, 2, stride=(1, 2), padding=1)
    with pytest.raises(ValueError, match="height and width of at least 1"):
        avg_pool2d_backward(np.zeros((1, 1, 1, 3), np.float32), shape, 2, padding=1)
