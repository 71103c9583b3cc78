"""sum, mean, max and argmax against NumPy (float64 references for sums) at several thread
counts; bitwise determinism across thread counts; NaN, empty and argument-checking rules."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyrt
from pyrt.ops.reduction import argmax, max, mean, sum

THREADS = [1, 2, 4]
# Sizes of interest to the kernels: one element, odd tails, a lane group (32), a block
# (1024), a leaf (32768) and several leaves, a column block (256).
DIMS = [0, 1, 2, 3, 5, 8, 17, 31, 33, 64, 257, 1031]
F32_EPS = float(np.finfo(np.float32).eps)


def rng(seed=0):
    return np.random.default_rng(seed)


def random_array(shape, seed=0):
    return rng(seed).standard_normal(shape).astype(np.float32)


def assert_sum_close(got, x, axis, scale=1.0):
    """|got - exact| within a bound from the sum of |x|: the kernels add at most 16 numbers
    in float before moving to double, so 16 eps of the absolute sum is a safe bound."""
    x64 = x.astype(np.float64)
    ref = x64.sum(axis=axis) * scale
    bound = 16 * F32_EPS * np.abs(x64).sum(axis=axis) * scale + F32_EPS * np.abs(ref) + 1e-30
    assert got.shape == np.shape(ref)
    assert got.dtype == np.float32
    assert np.all(np.abs(got.astype(np.float64) - ref) <= bound)


@st.composite
def shapes_and_axis(draw, max_size=300_000):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(ndim))
    assume(math.prod(shape) <= max_size)
    axis = draw(st.none() | st.integers(-ndim, ndim - 1)) if ndim else None
    return shape, axis


# ---- values against references ----------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(sa=shapes_and_axis(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_sum_mean_match_float64(sa, threads, seed):
    shape, axis = sa
    x = random_array(shape, seed)
    with pyrt.num_threads(threads):
        s = sum(x, axis=axis)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = mean(x, axis=axis)
            ref_m = x.astype(np.float64).mean(axis=axis)
    assert_sum_close(s, x, axis)
    count = x.size if axis is None else x.shape[axis]
    if count:
        assert_sum_close(m, x, axis, scale=1.0 / count)
    else:
        assert np.all(np.isnan(m)) and m.shape == np.shape(ref_m)


@settings(max_examples=80, deadline=None)
@given(sa=shapes_and_axis(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_max_argmax_match_numpy(sa, threads, seed):
    shape, axis = sa
    # few distinct values, so that ties are common and "first index" matters
    x = rng(seed).integers(-4, 5, size=shape).astype(np.float32)
    length = x.size if axis is None else x.shape[axis]
    with pyrt.num_threads(threads):
        if length == 0:
            with pytest.raises(ValueError):
                max(x, axis=axis)
            with pytest.raises(ValueError):
                argmax(x, axis=axis)
            return
        got_max, got_arg = max(x, axis=axis), argmax(x, axis=axis)
    assert got_max.dtype == np.float32 and got_arg.dtype == np.int64
    np.testing.assert_array_equal(got_max, x.max(axis=axis))
    np.testing.assert_array_equal(got_arg, x.argmax(axis=axis))
    assert got_arg.shape == np.shape(x.argmax(axis=axis))


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=40),
                 elements=st.floats(width=32)),
    threads=st.sampled_from(THREADS),
    data=st.data(),
)
def test_max_argmax_special_values_match_numpy(x, threads, data):
    """NaN, infinities and signed zeros anywhere: max propagates NaN, argmax finds the first
    NaN, exactly as NumPy does."""
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    length = x.size if axis is None else x.shape[axis]
    assume(length > 0)
    with pyrt.num_threads(threads):
        np.testing.assert_array_equal(max(x, axis=axis), x.max(axis=axis))
        np.testing.assert_array_equal(argmax(x, axis=axis), x.argmax(axis=axis))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("axis", [None, -1, 0, 1, 2])
@pytest.mark.parametrize("shape", [(3, 5, 7), (4, 300, 33), (2, 3, 40001), (40001, 2, 3)])
def test_3d_axes(shape, axis, threads):
    x = random_array(shape, seed=shape[-1])
    with pyrt.num_threads(threads):
        assert_sum_close(sum(x, axis=axis), x, axis)
        assert_sum_close(mean(x, axis=axis), x, axis, 1.0 / (x.size if axis is None
                                                              else x.shape[axis]))
        np.testing.assert_array_equal(max(x, axis=axis), x.max(axis=axis))
        np.testing.assert_array_equal(argmax(x, axis=axis), x.argmax(axis=axis))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", [1, 31, 32, 33, 1023, 1025, 32767, 32768, 32769, 1_000_003])
def test_full_reduction_sizes(n, threads):
    """Around the lane, block and leaf sizes, and many leaves merged up the tree."""
    x = random_array(n, seed=n) + np.float32(0.25)
    with pyrt.num_threads(threads):
        s = sum(x)
        assert s.shape == () and s.dtype == np.float32
        assert_sum_close(s, x, None)
        assert max(x) == x.max()
        assert argmax(x) == x.argmax()


def test_sum_is_accurate_for_a_long_array():
    """Partial sums move to double every few additions: summing 2^24 + 3 ones (where a plain
    float accumulator sticks at 2^24) is exact, and a mean of 0.1s is within an ulp."""
    ones = np.ones(2**24 + 3, np.float32)
    assert sum(ones) == 2**24 + 3
    tenths = np.full(3_000_001, 0.1, np.float32)
    assert abs(float(mean(tenths)) - float(np.float32(0.1))) <= F32_EPS * 0.1


@pytest.mark.parametrize("threads", THREADS)
def test_argmax_first_of_ties_across_leaves(threads):
    x = np.zeros(200_000, np.float32)
    x[[70_000, 100_000, 150_000]] = 3.0  # in different leaves
    with pyrt.num_threads(threads):
        assert argmax(x) == 70_000
        x[120_000] = np.nan
        x[190_000] = np.nan
        assert argmax(x) == 120_000
        assert np.isnan(max(x))


@pytest.mark.parametrize("threads", THREADS)
def test_nan_in_columns_and_rows(threads):
    x = random_array((6, 700, 5))
    x[2, 400, 3] = np.nan
    x[2, 500, 3] = np.nan
    x[4, 10, 1] = np.nan
    with pyrt.num_threads(threads):
        for axis in (0, 1, 2, None):
            np.testing.assert_array_equal(max(x, axis=axis), x.max(axis=axis))
            np.testing.assert_array_equal(argmax(x, axis=axis), x.argmax(axis=axis))
            np.testing.assert_array_equal(np.isnan(sum(x, axis=axis)),
                                          np.isnan(x.sum(axis=axis)))


def test_infinities():
    x = np.array([1.0, np.inf, -np.inf, 2.0], np.float32)
    assert np.isnan(sum(x))
    assert max(x) == np.inf and argmax(x) == 1
    neg = np.full(100, -np.inf, np.float32)
    assert max(neg) == -np.inf and argmax(neg) == 0
    assert sum(neg) == -np.inf


# ---- determinism ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, axis",
    [
        ((3_000_017,), None),  # many leaves of one full reduction
        ((3, 700_001), 1),  # long rows: each row a tree of leaves, rows in parallel
        ((20_000, 37), 1),  # short rows
        ((20_000, 300), 0),  # column blocks
        ((50, 400, 9), 1),  # outer x column tasks
    ],
)
def test_bitwise_identical_across_thread_counts(shape, axis):
    x = random_array(shape, seed=7) * np.float32(100) + np.float32(3)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            results.append((sum(x, axis=axis).tobytes(), mean(x, axis=axis).tobytes()))
    assert all(r == results[0] for r in results)


def test_axis_sum_equals_full_sum_of_each_row():
    """A row of a last-axis reduction is reduced exactly as a full reduction of that row."""
    x = random_array((4, 100_003), seed=3)
    rows = sum(x, axis=1)
    for i in range(4):
        assert rows[i].tobytes() == sum(x[i]).tobytes()


# ---- shapes, keepdims, axes, out ---------------------------------------------------------


@pytest.mark.parametrize("fn", [sum, mean, max])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2), (2, 0), ()])
def test_keepdims_and_axis_tuples(fn, axis):
    x = random_array((3, 4, 5), seed=1)
    ref = getattr(np, fn.__name__)(x.astype(np.float64), axis=axis, keepdims=True)
    got = fn(x, axis=axis, keepdims=True)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    got = fn(x, axis=axis)
    ref = getattr(np, fn.__name__)(x.astype(np.float64), axis=axis)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_argmax_keepdims_and_flat_index():
    x = random_array((3, 4, 5), seed=2)
    assert argmax(x, keepdims=True).shape == (1, 1, 1)
    assert argmax(x) == x.argmax()
    np.testing.assert_array_equal(argmax(x, axis=1, keepdims=True),
                                  x.argmax(axis=1, keepdims=True))


def test_out_is_filled_and_returned():
    x = random_array((6, 7), seed=4)
    out = np.empty(7, np.float32)
    assert sum(x, axis=0, out=out) is out
    assert_sum_close(out, x, 0)
    out0 = np.empty((), np.float32)
    assert mean(x, out=out0) is out0
    assert max(x, axis=1, out=np.empty(6, np.float32)).shape == (6,)
    keep = np.empty((6, 1), np.float32)
    assert max(x, axis=1, keepdims=True, out=keep) is keep


def test_zero_dim_and_empty_inputs():
    x = np.array(2.5, np.float32)
    assert sum(x) == 2.5 and mean(x) == 2.5 and max(x) == 2.5 and argmax(x) == 0
    e = np.empty((0, 3), np.float32)
    assert sum(e) == 0
    np.testing.assert_array_equal(sum(e, axis=0), np.zeros(3, np.float32))
    assert sum(e, axis=1).shape == (0,)
    assert max(e, axis=1).shape == (0,) and argmax(e, axis=1).shape == (0,)
    with pytest.warns(RuntimeWarning):
        assert np.isnan(mean(e))
    with pytest.raises(ValueError, match="zero-size"):
        max(e)
    with pytest.raises(ValueError, match="zero-size"):
        max(e, axis=0)
    with pytest.raises(ValueError, match="argmax of an empty"):
        argmax(e, axis=0)
    with pytest.raises(ValueError, match="argmax of an empty"):
        argmax(e)


def test_non_contiguous_input_is_copied():
    x = random_array((40, 30), seed=5)
    t = x.T
    assert_sum_close(sum(t, axis=1), t, 1)
    np.testing.assert_array_equal(max(x[:, ::3], axis=0), x[:, ::3].max(axis=0))
    np.testing.assert_array_equal(argmax(t, axis=0), t.argmax(axis=0))


def test_argument_errors():
    x = random_array((3, 4))
    with pytest.raises(TypeError, match="x must have dtype float32"):
        sum(x.astype(np.float64))
    with pytest.raises(TypeError, match="x must be a float32"):
        max([1.0, 2.0])
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        sum(x, axis=2)
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        argmax(x, axis=-3)
    with pytest.raises(TypeError, match="axis must be an integer"):
        mean(x, axis=1.0)
    with pytest.raises(TypeError, match="axis must be an integer"):
        argmax(x, axis=(0, 1))
    with pytest.raises(ValueError, match="more than once"):
        sum(x, axis=(1, -1))
    with pytest.raises(ValueError, match="out has shape"):
        sum(x, axis=0, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match="out must have dtype float32"):
        max(x, axis=0, out=np.empty(4, np.float64))
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        sum(x, axis=1, out=np.empty((3, 2), np.float32)[:, 0])
