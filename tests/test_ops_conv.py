"""conv2d and its gradients against a float64 NumPy reference and PyTorch, over many shapes,
dilations, groups and thread counts (both the direct kernels and im2col + GEMM), checked by
finite differences, with bitwise-deterministic weight and bias gradients and clear argument
errors."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.ops.conv import conv2d, conv2d_backward

THREADS = [1, 2, 4]


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


# ---- float64 reference --------------------------------------------------------------------


def ref_windows(x, kernel, stride, padding, dilation=1):
    """[n, c, oh, ow, kh, kw] view of the zero-padded input under every output pixel's taps."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, pair(stride), pair(padding), pair(dilation)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    span = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    win = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]


def ref_conv(x, w, b, stride, padding, dilation=1, groups=1):
    win = ref_windows(x, w.shape[2:], stride, padding, dilation)
    n, c, oh, ow, kh, kw = win.shape
    # group g's filters see channels [g * c/groups, (g + 1) * c/groups)
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)
    wg = w.astype(np.float64).reshape(groups, w.shape[0] // groups, *w.shape[1:])
    y = np.einsum("ngchwij,gkcij->ngkhw", win, wg).reshape(n, -1, oh, ow)
    return y if b is None else y + b.astype(np.float64)[None, :, None, None]


def ref_grads(x, w, dy, stride, padding, dilation=1, groups=1):
    """(dx, dw, db) in float64: the transpose of ref_conv."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw_) = (w.shape[2:], pair(stride), pair(padding),
                                               pair(dilation))
    n, c, h, wd = x.shape
    k, cg = w.shape[:2]
    oh, ow = dy.shape[2:]
    dy64 = dy.astype(np.float64).reshape(n, groups, k // groups, oh, ow)
    w64 = w.astype(np.float64).reshape(groups, k // groups, cg, kh, kw)
    dxp = np.zeros((n, groups, cg, h + 2 * ph, wd + 2 * pw))
    for i in range(kh):
        for j in range(kw):
            r, q = i * dh, j * dw_
            dxp[..., r:r + sh * (oh - 1) + 1:sh, q:q + sw * (ow - 1) + 1:sw] += np.einsum(
                "ngkhw,gkc->ngchw", dy64, w64[..., i, j])
    dx = dxp.reshape(n, c, h + 2 * ph, wd + 2 * pw)[:, :, ph:ph + h, pw:pw + wd]
    win = ref_windows(x, (kh, kw), stride, padding, dilation)
    win = win.reshape(n, groups, cg, *win.shape[2:])
    dw = np.einsum("ngchwij,ngkhw->gkcij", win, dy64).reshape(w.shape)
    return dx, dw, dy64.sum(axis=(0, 3, 4)).reshape(k)


def assert_close(got, ref, terms):
    """float32 result against a float64 reference of sums of `terms` products of O(1)."""
    assert got.dtype == np.float32 and got.shape == ref.shape
    tol = 1e-5 * np.sqrt(terms + 1) * (1 + np.abs(ref).max(initial=0))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=tol)


# ---- hypothesis over shapes ---------------------------------------------------------------


@st.composite
def conv_cases(draw):
    """Shapes, strides and paddings; a third of the cases with a dilation, a third with
    groups (channels and filters drawn per group)."""
    groups = draw(st.sampled_from([1, 1, 1, 1, 2, 3]))
    n, c, k = (draw(st.integers(1, 4)), groups * draw(st.integers(1, 4)),
               groups * draw(st.integers(1, 4)))
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    dilation = draw(st.sampled_from([(1, 1), (1, 1), (2, 2), (1, 3), (3, 2)]))
    assume(h + 2 * padding[0] >= dilation[0] * (kh - 1) + 1
           and w + 2 * padding[1] >= dilation[1] * (kw - 1) + 1)
    return (n, c, h, w), (k, c // groups, kh, kw), stride, padding, dilation, groups


def options(stride, padding, dilation, groups):
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


@settings(max_examples=300, deadline=None)
@given(case=conv_cases(), threads=st.sampled_from(THREADS), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_conv2d_matches_reference(case, threads, bias, seed):
    xs, ws, *opts = case
    x, w = random(xs, seed), random(ws, seed + 1)
    b = random(ws[:1], seed + 2) if bias else None
    with pyrt.num_threads(threads):
        y = conv2d(x, w, b, **options(*opts))
    assert_close(y, ref_conv(x, w, b, *opts), terms=np.prod(ws[1:]))


@settings(max_examples=300, deadline=None)
@given(case=conv_cases(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_conv2d_backward_matches_reference(case, threads, seed):
    xs, ws, *opts = case
    x, w = random(xs, seed), random(ws, seed + 1)
    dy = random(ref_conv(x, w, None, *opts).shape, seed + 2)
    with pyrt.num_threads(threads):
        dx, dw, db = conv2d_backward(x, w, dy, **options(*opts))
    rdx, rdw, rdb = ref_grads(x, w, dy, *opts)
    assert_close(dx, rdx, terms=ws[0] * ws[2] * ws[3])
    assert_close(dw, rdw, terms=dy.size // ws[0])
    assert_close(db, rdb, terms=dy.size // ws[0])


# Shapes that reach every path: the small CNN's layers, stride-1 layers beyond the direct
# kernels' tap limits (im2col + GEMM at stride 1: for the weight gradient past 576 taps, for
# all three past 4608), few filters over many channels (GEMM for one direction only), images
# cut into bands (a large single image), non-square everything. The GEMM path's weight
# gradient multiplies segments of about 256 pixels: several small images gathered into one
# (7 images of 100 pixels: blocks of 5, segments of 2, 2, 1 and 2), or an image of 400 pixels
# cut in two, or fewer pixels where the taps are many (1152).
PATH_CASES = [
    ((7, 80, 10, 10), (16, 80, 3, 3), 1, 1),
    ((2, 80, 20, 20), (8, 80, 3, 3), 1, 1),
    ((3, 128, 5, 9), (20, 128, 3, 3), 1, 1),
    ((3, 12, 21, 17), (10, 12, 3, 3), 2, 1),
    ((4, 1, 28, 28), (8, 1, 3, 3), 1, 1),
    ((3, 8, 14, 14), (16, 8, 3, 3), 1, 1),
    ((2, 70, 6, 7), (5, 70, 3, 3), 1, 1),
    ((2, 80, 6, 7), (16, 80, 3, 3), 1, 1),
    ((1, 520, 3, 4), (72, 520, 3, 3), 1, 1),
    ((2, 3, 9, 9), (40, 3, 3, 3), 1, 1),
    ((2, 40, 9, 9), (3, 40, 3, 3), 1, 0),
    ((1, 16, 40, 200), (4, 16, 3, 3), 1, 1),
    ((1, 2, 90, 70), (3, 2, 5, 3), 1, (2, 1)),
    ((3, 5, 13, 11), (7, 5, 4, 2), (2, 3), (1, 0)),
    ((2, 4, 8, 8), (6, 4, 1, 1), 1, 2),
    ((2, 3, 1, 1), (2, 3, 3, 3), 1, 1),
]

# Dilated and grouped convolutions, through the direct kernels (stride 1) and im2col + GEMM:
# (x, weight, stride, padding, dilation, groups), depthwise and its channel multiplier
# included, and a dilated image cut into bands.
SPREAD_CASES = [
    ((2, 3, 15, 13), (5, 3, 3, 3), 1, 2, 2, 1),
    ((2, 4, 16, 11), (6, 4, 3, 2), (2, 1), (1, 0), (3, 2), 1),
    ((3, 6, 10, 9), (4, 3, 3, 3), 1, 1, 1, 2),
    ((2, 8, 12, 12), (8, 1, 3, 3), 1, 1, 1, 8),
    ((2, 4, 11, 9), (8, 1, 5, 3), 2, 2, (2, 1), 4),
    ((1, 32, 14, 14), (32, 1, 3, 3), 1, 1, 1, 32),
    ((1, 4, 60, 50), (8, 4, 3, 3), 1, 2, 2, 1),
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", SPREAD_CASES)
@pytest.mark.parametrize("threads", THREADS)
def test_dilation_and_groups_match_reference(xs, ws, stride, padding, dilation, groups,
                                             threads):
    x, w, b = random(xs, 41), random(ws, 42), random(ws[:1], 43)
    opts = (stride, padding, dilation, groups)
    with pyrt.num_threads(threads):
        y = conv2d(x, w, b, **options(*opts))
        dy = random(y.shape, 44)
        dx, dw, db = conv2d_backward(x, w, dy, **options(*opts))
    assert_close(y, ref_conv(x, w, b, *opts), terms=np.prod(ws[1:]))
    rdx, rdw, rdb = ref_grads(x, w, dy, *opts)
    assert_close(dx, rdx, terms=ws[0] * ws[2] * ws[3])
    assert_close(dw, rdw, terms=dy.size // ws[0])
    assert_close(db, rdb, terms=dy.size // ws[0])


@pytest.mark.parametrize("xs,ws,stride,padding", PATH_CASES)
@pytest.mark.parametrize("threads", THREADS)
def test_paths_match_reference(xs, ws, stride, padding, threads):
    x, w, b = random(xs, 1), random(ws, 2), random(ws[:1], 3)
    with pyrt.num_threads(threads):
        y = conv2d(x, w, b, stride=stride, padding=padding)
        dy = random(y.shape, 4)
        dx, dw, db = conv2d_backward(x, w, dy, stride=stride, padding=padding)
    assert_close(y, ref_conv(x, w, b, stride, padding), terms=np.prod(ws[1:]))
    rdx, rdw, rdb = ref_grads(x, w, dy, stride, padding)
    assert_close(dx, rdx, terms=ws[0] * ws[2] * ws[3])
    assert_close(dw, rdw, terms=dy.size // ws[0])
    assert_close(db, rdb, terms=dy.size // ws[0])


# ---- PyTorch ------------------------------------------------------------------------------


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups",
                         [case + (1, 1) for case in PATH_CASES[:7] + PATH_CASES[9:]]
                         + SPREAD_CASES)
def test_matches_torch_autograd(xs, ws, stride, padding, dilation, groups):
    torch = pytest.importorskip("torch")
    x, w, b = random(xs, 5), random(ws, 6), random(ws[:1], 7)
    opts = options(stride, padding, dilation, groups)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.conv2d(xt, wt, bt, **opts)
    dy = random(tuple(yt.shape), 8)
    yt.backward(torch.from_numpy(dy))
    y = conv2d(x, w, b, **opts)
    dx, dw, db = conv2d_backward(x, w, dy, **opts)
    for got, want in [(y, yt), (dx, xt.grad), (dw, wt.grad), (db, bt.grad)]:
        want = want.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * (1 + np.abs(want).max()))


# ---- finite differences -------------------------------------------------------------------


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", [
    ((2, 2, 5, 4), (3, 2, 3, 2), 1, 1, 1, 1),
    ((1, 3, 6, 5), (2, 3, 2, 3), 2, (0, 1), 1, 1),
    ((2, 1, 4, 4), (2, 1, 3, 3), 1, 2, 1, 1),
    ((1, 2, 7, 6), (2, 2, 2, 2), 1, 1, (2, 3), 1),
    ((2, 4, 5, 5), (6, 2, 3, 3), 1, 1, 1, 2),
])
def test_gradients_match_finite_differences(xs, ws, stride, padding, dilation, groups):
    """The loss sum(conv2d(x, w, b) * g), accumulated in float64, is linear in each of x, w
    and b, so a central difference is exact up to the float32 rounding of the outputs."""
    x, w, b = random(xs, 9), random(ws, 10), random(ws[:1], 11)
    opts = options(stride, padding, dilation, groups)
    g = random(conv2d(x, w, b, **opts).shape, 12).astype(np.float64)

    def loss(x_, w_, b_):
        return float((conv2d(x_, w_, b_, **opts) * g).sum())

    args = [x, w, b]
    grads = conv2d_backward(x, w, g.astype(np.float32), **opts)
    eps = 0.5
    for pos, grad in enumerate(grads):
        for idx in np.ndindex(args[pos].shape):
            hi, lo = list(args), list(args)
            hi[pos], lo[pos] = args[pos].copy(), args[pos].copy()
            hi[pos][idx] += eps
            lo[pos][idx] -= eps
            numeric = (loss(*hi) - loss(*lo)) / (2 * eps)
            assert abs(numeric - grad[idx]) <= 1e-4 * (1 + abs(numeric)), (pos, idx)


# ---- determinism --------------------------------------------------------------------------


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", [
    ((64, 1, 28, 28), (8, 1, 3, 3), 1, 1, 1, 1),
    ((64, 8, 14, 14), (16, 8, 3, 3), 1, 1, 1, 1),
    ((9, 70, 6, 7), (5, 70, 3, 3), 1, 1, 1, 1),
    ((9, 80, 6, 7), (16, 80, 3, 3), 1, 1, 1, 1),
    ((7, 80, 10, 10), (16, 80, 3, 3), 1, 1, 1, 1),
    ((7, 5, 13, 11), (7, 5, 4, 2), (2, 3), (1, 0), 1, 1),
    ((1, 16, 40, 200), (4, 16, 3, 3), 1, 1, 1, 1),
    ((33, 8, 14, 14), (16, 2, 3, 3), 1, 2, 2, 4),
])
def test_results_bitwise_identical_across_threads(xs, ws, stride, padding, dilation, groups):
    x, w, b = random(xs, 13), random(ws, 14), random(ws[:1], 15)
    opts = options(stride, padding, dilation, groups)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            y = conv2d(x, w, b, **opts)
            dy = random(y.shape, 16)
            results.append((y, *conv2d_backward(x, w, dy, **opts)))
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            assert np.array_equal(a, b_)


def test_concurrent_callers_get_the_same_results():
    from concurrent.futures import ThreadPoolExecutor

    x, w = random((16, 8, 14, 14), 37), random((16, 8, 3, 3), 38)
    dy = random((16, 16, 14, 14), 39)
    ref = (conv2d(x, w, padding=1), *conv2d_backward(x, w, dy, padding=1))

    def run(_):
        out = (conv2d(x, w, padding=1), *conv2d_backward(x, w, dy, padding=1))
        return all(np.array_equal(a, b) for a, b in zip(out, ref))

    with pyrt.num_threads(2), ThreadPoolExecutor(4) as pool:
        assert all(pool.map(run, range(16)))


# ---- API: options, layouts, edge sizes, errors --------------------------------------------


def test_out_and_noncontiguous_inputs():
    x, w, b = random((2, 3, 8, 9), 17), random((4, 3, 3, 3), 18), random((4,), 19)
    ref = conv2d(x, w, b, padding=1)
    out = np.full(ref.shape, np.nan, np.float32)
    assert conv2d(x, w, b, padding=1, out=out) is out
    assert np.array_equal(out, ref)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not xt.flags.c_contiguous
    assert np.array_equal(conv2d(xt, w, b, padding=1), ref)


def test_stride_and_padding_pairs():
    x, w = random((1, 2, 9, 11), 20), random((3, 2, 3, 2), 21)
    y = conv2d(x, w, stride=(2, 1), padding=[1, 0])
    assert_close(y, ref_conv(x, w, None, (2, 1), (1, 0)), terms=12)


def test_requested_gradients_only():
    x, w = random((2, 2, 5, 5), 22), random((3, 2, 3, 3), 23)
    dy = random((2, 3, 3, 3), 24)
    full = conv2d_backward(x, w, dy)
    assert conv2d_backward(x, w, dy, needs_input_grad=False, needs_bias_grad=False)[::2] == (
        None, None)
    dx, dw, db = conv2d_backward(x, w, dy, needs_weight_grad=False)
    assert dw is None and np.array_equal(dx, full[0]) and np.array_equal(db, full[2])
    _, dw, db = conv2d_backward(x, w, dy, needs_input_grad=False, needs_bias_grad=False)
    assert db is None and np.array_equal(dw, full[1])
    assert conv2d_backward(x, w, dy, needs_input_grad=False, needs_weight_grad=False,
                           needs_bias_grad=False) == (None, None, None)


def test_empty_batch():
    x, w, b = np.zeros((0, 2, 5, 5), np.float32), random((3, 2, 3, 3), 25), random((3,), 26)
    assert conv2d(x, w, b).shape == (0, 3, 3, 3)
    dx, dw, db = conv2d_backward(x, w, np.zeros((0, 3, 3, 3), np.float32))
    assert dx.shape == x.shape and not dw.any() and not db.any()


def test_errors_name_the_argument():
    x, w = random((1, 2, 5, 5), 27), random((3, 2, 3, 3), 28)
    with pytest.raises(TypeError, match="x"):
        conv2d(x.astype(np.float64), w)
    with pytest.raises(TypeError, match="weight"):
        conv2d(x, [[1.0]])
    with pytest.raises(ValueError, match="x must be 4-D"):
        conv2d(x[0], w)
    with pytest.raises(ValueError, match="weight must be 4-D"):
        conv2d(x, w[0])
    with pytest.raises(ValueError, match="input channels"):
        conv2d(x, random((3, 4, 3, 3), 29))
    with pytest.raises(ValueError, match="weight's kernel 7x3 is larger"):
        conv2d(x, random((3, 2, 7, 3), 30))
    with pytest.raises(ValueError, match="stride"):
        conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match="stride"):
        conv2d(x, w, stride=(1, 2, 3))
    with pytest.raises(TypeError, match="stride"):
        conv2d(x, w, stride=1.5)
    with pytest.raises(ValueError, match="padding"):
        conv2d(x, w, padding=-1)
    with pytest.raises(ValueError, match=r"bias must have shape \(3,\), got \(2,\)"):
        conv2d(x, w, random((2,), 31))
    with pytest.raises(ValueError, match="out"):
        conv2d(x, w, out=np.empty((1, 3, 4, 3), np.float32))
    with pytest.raises(TypeError, match="out"):
        conv2d(x, w, out=np.empty((1, 3, 3, 3), np.float64))
    with pytest.raises(ValueError, match=r"grad_output must have shape \(1, 3, 3, 3\), got "
                                         r"\(1, 3, 4, 4\)"):
        conv2d_backward(x, w, random((1, 3, 4, 4), 32))


def test_dilation_and_groups_errors_name_the_argument():
    x, w = random((1, 4, 6, 6), 45), random((6, 2, 3, 3), 46)
    with pytest.raises(ValueError, match="dilation must be positive"):
        conv2d(x, w, groups=2, dilation=0)
    with pytest.raises(TypeError, match="dilation"):
        conv2d(x, w, groups=2, dilation=1.5)
    with pytest.raises(ValueError, match=r"spread by dilation \(4, 4\) to 9x9,? is larger than "
                                         r"the padded input 6x6"):
        conv2d(x, w, groups=2, dilation=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        conv2d(x, w, groups=0)
    with pytest.raises(TypeError, match="groups must be a positive integer"):
        conv2d(x, w, groups=True)
    with pytest.raises(ValueError, match=r"Given groups=4, expected weight to be divisible by 4"):
        conv2d(x, w, groups=4)
    with pytest.raises(ValueError, match=r"Given groups=3, weight of size \[6, 2, 3, 3\], "
                                         r"expected input\[1, 4, 6, 6\] to have 6 channels"):
        conv2d(x, w, groups=3)
    with pytest.raises(ValueError, match=r"expected input\[1, 4, 6, 6\] to have 2 channels"):
        conv2d_backward(x, w, random((1, 6, 4, 4), 47))


def test_out_may_not_overlap_an_input():
    x = random((1, 2, 6, 6), 33)
    w = random((2, 2, 1, 1), 34)
    with pytest.raises(ValueError, match="out overlaps x"):
        conv2d(x, w, out=x)


def test_no_input_or_output_channels():
    rng = np.random.default_rng(35)
    b = np.arange(3, dtype=np.float32)
    for stride in (1, 2):  # the direct kernels and im2col + GEMM
        x, w = np.zeros((2, 0, 5, 5), np.float32), np.zeros((3, 0, 3, 3), np.float32)
        y = conv2d(x, w, b, stride=stride, padding=1)
        assert np.array_equal(y, np.broadcast_to(b[None, :, None, None], y.shape))
        dy = rng.standard_normal(y.shape).astype(np.float32)
        dx, dw, db = conv2d_backward(x, w, dy, stride=stride, padding=1)
        assert dx.shape == x.shape and dw.shape == w.shape
        np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)
    x, w = random((2, 3, 5, 5), 36), np.zeros((0, 3, 3, 3), np.float32)
    assert conv2d(x, w, padding=1).shape == (2, 0, 5, 5)
    dx, dw, db = conv2d_backward(x, w, np.zeros((2, 0, 5, 5), np.float32), padding=1)
    assert not dx.any() and dw.shape == w.shape and db.shape == (0,)
