"""conv2d and its gradients against a float64 NumPy reference and PyTorch, over many shapes and
thread counts (both the direct kernels and im2col + GEMM), checked by finite differences, with
bitwise-deterministic weight and bias gradients and clear argument errors."""

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


def ref_windows(x, kernel, stride, padding):
    """[n, c, oh, ow, kh, kw] view of the zero-padded input under every output pixel."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, pair(stride), pair(padding)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    return win[:, :, ::sh, ::sw]


def ref_conv(x, w, b, stride, padding):
    win = ref_windows(x, w.shape[2:], stride, padding)
    y = np.einsum("nchwij,kcij->nkhw", win, w.astype(np.float64))
    return y if b is None else y + b.astype(np.float64)[None, :, None, None]


def ref_grads(x, w, dy, stride, padding):
    """(dx, dw, db) in float64: the transpose of ref_conv."""
    (kh, kw), (sh, sw), (ph, pw) = w.shape[2:], pair(stride), pair(padding)
    n, c, h, wd = x.shape
    oh, ow = dy.shape[2:]
    dy64, w64 = dy.astype(np.float64), w.astype(np.float64)
    dxp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] += np.einsum(
                "nkhw,kc->nchw", dy64, w64[:, :, i, j])
    dx = dxp[:, :, ph:ph + h, pw:pw + wd]
    dw = np.einsum("nchwij,nkhw->kcij", ref_windows(x, (kh, kw), stride, padding), dy64)
    return dx, dw, dy64.sum(axis=(0, 2, 3))


def assert_close(got, ref, terms):
    """float32 result against a float64 reference of sums of `terms` products of O(1)."""
    assert got.dtype == np.float32 and got.shape == ref.shape
    tol = 1e-5 * np.sqrt(terms + 1) * (1 + np.abs(ref).max(initial=0))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=tol)


# ---- hypothesis over shapes ---------------------------------------------------------------


@st.composite
def conv_cases(draw):
    n, c, k = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    assume(h + 2 * padding[0] >= kh and w + 2 * padding[1] >= kw)
    return (n, c, h, w), (k, c, kh, kw), stride, padding


@settings(max_examples=200, deadline=None)
@given(case=conv_cases(), threads=st.sampled_from(THREADS), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_conv2d_matches_reference(case, threads, bias, seed):
    xs, ws, stride, padding = case
    x, w = random(xs, seed), random(ws, seed + 1)
    b = random(ws[:1], seed + 2) if bias else None
    with pyrt.num_threads(threads):
        y = conv2d(x, w, b, stride=stride, padding=padding)
    assert_close(y, ref_conv(x, w, b, stride, padding), terms=np.prod(ws[1:]))


@settings(max_examples=200, deadline=None)
@given(case=conv_cases(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_conv2d_backward_matches_reference(case, threads, seed):
    xs, ws, stride, padding = case
    x, w = random(xs, seed), random(ws, seed + 1)
    dy = random(ref_conv(x, w, None, stride, padding).shape, seed + 2)
    with pyrt.num_threads(threads):
        dx, dw, db = conv2d_backward(x, w, dy, stride=stride, padding=padding)
    rdx, rdw, rdb = ref_grads(x, w, dy, stride, padding)
    assert_close(dx, rdx, terms=ws[0] * ws[2] * ws[3])
    assert_close(dw, rdw, terms=dy.size // ws[0])
    assert_close(db, rdb, terms=dy.size // ws[0])


# Shapes that reach every path: the small CNN's layers, stride-1 layers beyond the direct
# kernels' tap limit (im2col + GEMM at stride 1), few filters over many channels (GEMM for one
# direction only), images cut into bands (a large single image), non-square everything.
PATH_CASES = [
    ((4, 1, 28, 28), (8, 1, 3, 3), 1, 1),
    ((3, 8, 14, 14), (16, 8, 3, 3), 1, 1),
    ((2, 70, 6, 7), (5, 70, 3, 3), 1, 1),
    ((2, 3, 9, 9), (40, 3, 3, 3), 1, 1),
    ((2, 40, 9, 9), (3, 40, 3, 3), 1, 0),
    ((1, 16, 40, 200), (4, 16, 3, 3), 1, 1),
    ((1, 2, 90, 70), (3, 2, 5, 3), 1, (2, 1)),
    ((3, 5, 13, 11), (7, 5, 4, 2), (2, 3), (1, 0)),
    ((2, 4, 8, 8), (6, 4, 1, 1), 1, 2),
    ((2, 3, 1, 1), (2, 3, 3, 3), 1, 1),
]


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


@pytest.mark.parametrize("xs,ws,stride,padding", PATH_CASES[:5] + PATH_CASES[7:])
def test_matches_torch_autograd(xs, ws, stride, padding):
    torch = pytest.importorskip("torch")
    x, w, b = random(xs, 5), random(ws, 6), random(ws[:1], 7)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.conv2d(xt, wt, bt, stride=stride, padding=padding)
    dy = random(tuple(yt.shape), 8)
    yt.backward(torch.from_numpy(dy))
    y = conv2d(x, w, b, stride=stride, padding=padding)
    dx, dw, db = conv2d_backward(x, w, dy, stride=stride, padding=padding)
    for got, want in [(y, yt), (dx, xt.grad), (dw, wt.grad), (db, bt.grad)]:
        want = want.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * (1 + np.abs(want).max()))


# ---- finite differences -------------------------------------------------------------------


@pytest.mark.parametrize("xs,ws,stride,padding", [
    ((2, 2, 5, 4), (3, 2, 3, 2), 1, 1),
    ((1, 3, 6, 5), (2, 3, 2, 3), 2, (0, 1)),
    ((2, 1, 4, 4), (2, 1, 3, 3), 1, 2),
])
def test_gradients_match_finite_differences(xs, ws, stride, padding):
    """The loss sum(conv2d(x, w, b) * g), accumulated in float64, is linear in each of x, w
    and b, so a central difference is exact up to the float32 rounding of the outputs."""
    x, w, b = random(xs, 9), random(ws, 10), random(ws[:1], 11)
    g = random(conv2d(x, w, b, stride=stride, padding=padding).shape, 12).astype(np.float64)

    def loss(x_, w_, b_):
        return float((conv2d(x_, w_, b_, stride=stride, padding=padding) * g).sum())

    args = [x, w, b]
    grads = conv2d_backward(x, w, g.astype(np.float32), stride=stride, padding=padding)
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


@pytest.mark.parametrize("xs,ws,stride,padding", [
    ((64, 1, 28, 28), (8, 1, 3, 3), 1, 1),
    ((64, 8, 14, 14), (16, 8, 3, 3), 1, 1),
    ((9, 70, 6, 7), (5, 70, 3, 3), 1, 1),
    ((7, 5, 13, 11), (7, 5, 4, 2), (2, 3), (1, 0)),
    ((1, 16, 40, 200), (4, 16, 3, 3), 1, 1),
])
def test_results_bitwise_identical_across_threads(xs, ws, stride, padding):
    x, w, b = random(xs, 13), random(ws, 14), random(ws[:1], 15)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            y = conv2d(x, w, b, stride=stride, padding=padding)
            dy = random(y.shape, 16)
            results.append((y, *conv2d_backward(x, w, dy, stride=stride, padding=padding)))
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
