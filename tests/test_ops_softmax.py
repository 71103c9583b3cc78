"""softmax, log_softmax, cross_entropy and binary_cross_entropy_with_logits against float64
NumPy references (and PyTorch where installed), gradients against finite differences, at
several thread counts; the losses bitwise identical across thread counts."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.softmax import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    log_softmax,
    softmax,
)

THREADS = [1, 2, 4]
DIMS = [0, 1, 2, 3, 7, 8, 9, 16, 17, 33, 100, 1031]


def rng(seed=0):
    return np.random.default_rng(seed)


def random_logits(shape, seed=0, scale=3.0):
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


F32_EPS = float(np.finfo(np.float32).eps)


def distance_to_max(x, axis):
    """|x - max(x)| along axis: float32 rounds x - max at this scale, an error every float32
    softmax has, which the bounds below allow for."""
    x = x.astype(np.float64)
    if not x.size:
        return x
    d = np.abs(x - np.max(x, axis=axis, keepdims=True))
    return np.where(np.isfinite(d), d, 0.0)  # -inf entries: checked for exact 0 / -inf


def assert_softmax_close(p, x, axis=-1):
    ref = ref_softmax(x, axis)
    bound = ref * F32_EPS * (8 + distance_to_max(x, axis)) + 1e-37
    assert p.shape == ref.shape
    assert np.all(np.abs(p - ref) <= bound), np.max(np.abs(p - ref) / bound)


def assert_log_softmax_close(lp, x, axis=-1):
    ref = ref_log_softmax(x, axis)
    bound = F32_EPS * (4 + 2 * np.abs(ref) + 2 * distance_to_max(x, axis))
    assert lp.shape == ref.shape
    with np.errstate(invalid="ignore"):  # -inf - -inf where both are -inf
        err = np.abs(lp - ref)
    assert np.all((err <= bound) | (lp == ref)), np.max(err / bound)


# ---- float64 references ------------------------------------------------------------------


def ref_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True) if x.size else 0.0
    with np.errstate(divide="ignore"):  # log(0) of an empty row
        return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def ref_softmax(x, axis=-1):
    return np.exp(ref_log_softmax(x, axis))


def ref_cross_entropy(z, labels):
    z = z.astype(np.float64)
    return -np.mean(ref_log_softmax(z)[np.arange(len(labels)), labels])


def ref_cross_entropy_grad(z, labels):
    p = ref_softmax(z)
    p[np.arange(len(labels)), labels] -= 1.0
    return p / len(labels)


def ref_bce(z, t):
    z, t = z.astype(np.float64), t.astype(np.float64)
    return np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))))


def ref_bce_grad(z, t):
    z, t = z.astype(np.float64), t.astype(np.float64)
    e = np.exp(-np.abs(z))
    return (np.where(z < 0, e, 1.0) / (1.0 + e) - t) / z.size


def numeric_grad(f, z, h=1e-6):
    """Central differences of the float64 function f at z."""
    z = z.astype(np.float64)
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        zp, zm = z.copy(), z.copy()
        zp[i] += h
        zm[i] -= h
        g[i] = (f(zp) - f(zm)) / (2 * h)
    return g


# ---- softmax and log_softmax ---------------------------------------------------------


@st.composite
def shape_and_axis(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(ndim))
    assume(math.prod(shape) <= 200_000)
    return shape, draw(st.integers(-ndim, ndim - 1))


@settings(max_examples=80, deadline=None)
@given(sa=shape_and_axis(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16),
       scale=st.sampled_from([0.1, 3.0, 50.0]))
def test_softmax_and_log_softmax_match_float64(sa, threads, seed, scale):
    shape, axis = sa
    x = random_logits(shape, seed, scale)
    x_before = x.copy()
    with pyrt.num_threads(threads):
        p = softmax(x, axis=axis)
        lp = log_softmax(x, axis=axis)
    np.testing.assert_array_equal(x, x_before)
    assert p.shape == x.shape and p.dtype == np.float32 and p.flags.c_contiguous
    assert lp.shape == x.shape and lp.dtype == np.float32
    assert_softmax_close(p, x, axis)
    assert_log_softmax_close(lp, x, axis)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_axes_of_a_3d_array(axis, threads):
    x = random_logits((5, 6, 7), seed=axis + 10)
    with pyrt.num_threads(threads):
        assert_softmax_close(softmax(x, axis), x, axis)
        assert_log_softmax_close(log_softmax(x, axis), x, axis)


def test_softmax_rows_sum_to_one_and_large_rows():
    x = random_logits((3, 100_003), seed=1)
    p = softmax(x)
    np.testing.assert_allclose(p.astype(np.float64).sum(axis=1), 1.0, rtol=1e-5)
    assert_softmax_close(p, x)


def test_large_logits_stay_finite():
    x = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4 + 2.0, -1e4, -1e4]], np.float32)
    p, lp = softmax(x), log_softmax(x)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(lp))
    assert_softmax_close(p, x)
    assert_log_softmax_close(lp, x)


def test_minus_infinity_is_masked_out():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf]], np.float32)
    p, lp = softmax(x), log_softmax(x)
    assert_softmax_close(p, x)
    assert p[0, 1] == 0 and p[1, 1] == 1 and lp[1, 1] == 0
    assert lp[0, 1] == -np.inf
    assert np.all(np.isnan(softmax(np.array([np.nan, 1.0], np.float32))))


@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_out_in_place_and_checks(fn):
    x = random_logits((9, 13), seed=2)
    expected = fn(x)
    out = np.empty_like(x)
    assert fn(x, out=out) is out
    np.testing.assert_array_equal(out, expected)
    y = x.copy()
    assert fn(y, out=y) is y
    np.testing.assert_array_equal(y, expected)
    z = x.copy()
    assert fn(z, axis=0, out=z) is z
    np.testing.assert_array_equal(z, fn(x, axis=0))
    with pytest.raises(ValueError, match="out has shape"):
        fn(x, out=np.empty((13, 9), np.float32))
    with pytest.raises(TypeError, match="out must have dtype float32"):
        fn(x, out=np.empty_like(x, dtype=np.float64))
    flat = x.ravel().copy()
    with pytest.raises(ValueError, match="out partially overlaps x"):
        fn(flat[1:], out=flat[:-1])
    with pytest.raises(TypeError, match="x must have dtype float32"):
        fn(x.astype(np.float16))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        fn(x, axis=2)


def test_empty_zero_dim_and_non_contiguous():
    assert softmax(np.empty((0, 5), np.float32)).shape == (0, 5)
    assert log_softmax(np.empty((4, 0), np.float32)).shape == (4, 0)
    assert softmax(np.array(3.0, np.float32)) == 1.0
    assert log_softmax(np.array(3.0, np.float32)) == 0.0
    x = random_logits((20, 30), seed=3)
    assert_softmax_close(softmax(x.T), x.T)
    assert_log_softmax_close(log_softmax(x[:, ::2], axis=0), x[:, ::2], 0)


def test_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    x = random_logits((4, 5, 37), seed=4, scale=10.0)
    for axis in (-1, 0, 1):
        t = torch.from_numpy(x)
        np.testing.assert_allclose(softmax(x, axis), torch.softmax(t, axis).numpy(),
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(log_softmax(x, axis), torch.log_softmax(t, axis).numpy(),
                                   rtol=1e-5, atol=1e-5)


# ---- cross-entropy -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([1, 2, 3, 7, 64, 129, 1000]), c=st.sampled_from([1, 2, 3, 10, 33,
       1000]), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16),
       scale=st.sampled_from([0.1, 3.0, 30.0]))
def test_cross_entropy_matches_float64(n, c, threads, seed, scale):
    assume(n * c <= 200_000)
    z = random_logits((n, c), seed, scale)
    labels = rng(seed).integers(0, c, size=n)
    with pyrt.num_threads(threads):
        loss, grad = cross_entropy(z, labels, return_grad=True)
        loss_only = cross_entropy(z, labels)
    assert loss.shape == () and loss.dtype == np.float32
    assert grad.shape == (n, c) and grad.dtype == np.float32
    assert loss_only.tobytes() == loss.tobytes()
    ref = ref_cross_entropy(z, labels)
    assert abs(float(loss) - ref) <= 2e-6 * (abs(ref) + scale)
    np.testing.assert_allclose(grad, ref_cross_entropy_grad(z, labels), rtol=1e-5,
                               atol=4 * F32_EPS / n)


def test_cross_entropy_grad_matches_finite_differences():
    z = random_logits((5, 7), seed=5)
    labels = np.array([0, 6, 3, 3, 1])
    _, grad = cross_entropy(z, labels, return_grad=True)
    num = numeric_grad(lambda w: ref_cross_entropy(w, labels), z)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7)


def test_cross_entropy_large_logits():
    z = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4], [-1e4, -1e4, -1e4]], np.float32)
    labels = np.array([1, 2, 0])
    loss, grad = cross_entropy(z, labels, return_grad=True)
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(loss, ref_cross_entropy(z, labels), rtol=1e-6)
    np.testing.assert_allclose(grad, ref_cross_entropy_grad(z, labels), atol=1e-7)


def test_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    z = random_logits((50, 11), seed=6, scale=5.0)
    labels = rng(6).integers(0, 11, size=50)
    loss, grad = cross_entropy(z, labels, return_grad=True)
    t = torch.from_numpy(z.copy()).requires_grad_(True)
    tl = torch.nn.functional.cross_entropy(t, torch.from_numpy(labels))
    tl.backward()
    np.testing.assert_allclose(loss, tl.item(), rtol=1e-6)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("bad", [-1, 10, 2**40])
def test_cross_entropy_label_out_of_range(bad):
    z = random_logits((4, 10))
    labels = np.array([1, 2, bad, 3])
    with pytest.raises(ValueError, match=r"labels must be in \[0, 10\), got"):
        cross_entropy(z, labels, return_grad=True)
    # the kernel writes nothing, the loss and the gradient included
    loss = np.full((), 7.0, np.float32)
    grad = np.full((4, 10), 7.0, np.float32)
    rc = lib.pyrt_cross_entropy(ffi.from_buffer("float[]", z), ffi.from_buffer("int64_t[]", labels),
                                ffi.from_buffer("float[]", loss), ffi.from_buffer("float[]", grad),
                                4, 10)
    assert rc == lib.PYRT_EINVAL
    assert loss == 7.0 and np.all(grad == 7.0)


def test_cross_entropy_argument_errors():
    z = random_logits((4, 3))
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        cross_entropy(z, np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="labels must have shape"):
        cross_entropy(z, np.zeros((4, 1), np.int64))
    with pytest.raises(TypeError, match="labels must have an integer dtype"):
        cross_entropy(z, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="logits must be 2-D"):
        cross_entropy(z.ravel(), np.zeros(12, np.int64))
    with pytest.raises(TypeError, match="logits must have dtype float32"):
        cross_entropy(z.astype(np.float64), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match=r"labels must be in \[0, 0\)"):
        cross_entropy(np.empty((2, 0), np.float32), np.zeros(2, np.int64))


def test_cross_entropy_small_integer_labels_and_empty_batch():
    z = random_logits((6, 4), seed=7)
    labels = np.array([0, 1, 2, 3, 2, 1], np.uint8)
    assert cross_entropy(z, labels) == cross_entropy(z, labels.astype(np.int64))
    assert np.isnan(cross_entropy(np.empty((0, 4), np.float32), np.empty(0, np.int32)))


# ---- binary cross-entropy with logits -------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from([(1,), (7,), (8,), (9,), (64, 3), (3, 5, 7), (100_003,)]),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16),
       scale=st.sampled_from([0.1, 3.0, 40.0]))
def test_bce_matches_float64(shape, threads, seed, scale):
    z = random_logits(shape, seed, scale)
    t = rng(seed + 1).random(shape).astype(np.float32)
    with pyrt.num_threads(threads):
        loss, grad = binary_cross_entropy_with_logits(z, t, return_grad=True)
        loss_only = binary_cross_entropy_with_logits(z, t)
    assert loss.shape == () and grad.shape == shape and grad.dtype == np.float32
    assert loss_only.tobytes() == loss.tobytes()
    ref = ref_bce(z, t)
    assert abs(float(loss) - ref) <= 2e-6 * abs(ref) + 1e-9
    n = z.size
    # sigmoid(z) - t cancels: the error is a few eps of max(sigmoid(z), t), over n
    np.testing.assert_allclose(grad, ref_bce_grad(z, t), rtol=2e-6, atol=4 * F32_EPS / n)


def test_bce_small_losses_keep_relative_accuracy():
    """log1p(exp(-|z|)) for large |z| agreeing with the label: tiny, but not rounded to 0."""
    z = np.array([20.0, -25.0, 30.0, 17.5], np.float32)
    t = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
    loss = binary_cross_entropy_with_logits(z, t)
    ref = ref_bce(z, t)
    assert ref > 0 and abs(float(loss) - ref) <= 1e-5 * ref


def test_bce_grad_matches_finite_differences():
    z = random_logits((3, 4), seed=8)
    t = rng(8).random((3, 4)).astype(np.float32)
    _, grad = binary_cross_entropy_with_logits(z, t, return_grad=True)
    num = numeric_grad(lambda w: ref_bce(w, t), z)
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def test_bce_large_logits():
    z = np.array([1e4, -1e4, 1e4, -1e4, 0.0], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.0, 0.5], np.float32)
    loss, grad = binary_cross_entropy_with_logits(z, t, return_grad=True)
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(loss, ref_bce(z, t), rtol=1e-6)
    np.testing.assert_allclose(grad, ref_bce_grad(z, t), atol=1e-8)


@pytest.mark.parametrize("n", [1, 11])  # the portable tail, and a vector of 8 before it
def test_bce_infinite_logits(n):
    # z = +inf: z - z t would be inf - inf; the loss is inf for t < 1, as PyTorch gives. The
    # gradient (sigmoid(z) - t) / n stays finite.
    for z, t, want in [(np.inf, 0.0, np.inf), (np.inf, 0.5, np.inf), (-np.inf, 1.0, np.inf)]:
        zs, ts = np.full(n, z, np.float32), np.full(n, t, np.float32)
        loss, grad = binary_cross_entropy_with_logits(zs, ts, return_grad=True)
        assert loss == want
        np.testing.assert_allclose(grad, ((z > 0) - t) / n, rtol=1e-6)


def test_bce_matches_torch():
    torch = pytest.importorskip("torch")
    z = random_logits((40, 3), seed=9, scale=4.0)
    t = rng(9).random((40, 3)).astype(np.float32)
    loss, grad = binary_cross_entropy_with_logits(z, t, return_grad=True)
    tz = torch.from_numpy(z.copy()).requires_grad_(True)
    tl = torch.nn.functional.binary_cross_entropy_with_logits(tz, torch.from_numpy(t))
    tl.backward()
    np.testing.assert_allclose(loss, tl.item(), rtol=1e-6)
    np.testing.assert_allclose(grad, tz.grad.numpy(), rtol=1e-5, atol=1e-9)


def test_bce_argument_errors_and_empty():
    z = random_logits((4, 3))
    with pytest.raises(ValueError, match="targets must have the shape of logits"):
        binary_cross_entropy_with_logits(z, np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="targets must have dtype float32"):
        binary_cross_entropy_with_logits(z, np.zeros((4, 3), np.float64))
    with pytest.raises(TypeError, match="logits must be a float32"):
        binary_cross_entropy_with_logits([1.0], np.zeros(1, np.float32))
    assert np.isnan(binary_cross_entropy_with_logits(np.empty(0, np.float32),
                                                     np.empty(0, np.float32)))


# ---- determinism ---------------------------------------------------------------------


def test_losses_bitwise_identical_across_thread_counts():
    z = random_logits((20_000, 10), seed=10)  # many leaves of rows
    labels = rng(10).integers(0, 10, size=20_000)
    zb = random_logits(300_007, seed=11)
    tb = rng(11).random(300_007).astype(np.float32)
    x = random_logits((4000, 37), seed=12)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            loss, grad = cross_entropy(z, labels, return_grad=True)
            bloss, bgrad = binary_cross_entropy_with_logits(zb, tb, return_grad=True)
            results.append((loss.tobytes(), grad.tobytes(), bloss.tobytes(), bgrad.tobytes(),
                            softmax(x).tobytes(), log_softmax(x).tobytes()))
    assert all(r == results[0] for r in results)


def test_a_uint64_label_too_large_for_int64_is_named_as_given():
    logits = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match=f"labels holds {2**64 - 1}, too large for int64"):
        cross_entropy(logits, np.array([0, 2**64 - 1], np.uint64))
    np.testing.assert_allclose(cross_entropy(logits, np.array([0, 3], np.uint64)),
                               cross_entropy(logits, np.array([0, 3])))
