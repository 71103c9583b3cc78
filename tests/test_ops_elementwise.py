"""Elementwise ops against NumPy: binary ops bitwise (one IEEE operation each) over every
broadcast layout, transcendental functions in ULPs of a float64 reference over the whole float
range, gradients against finite differences and PyTorch, the bias gradient bitwise identical
at any thread count; special values, aliasing and argument errors."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.elementwise import (
    add,
    addcmul,
    bias_act,
    bias_grad,
    div,
    exp,
    exp_backward,
    log,
    log_backward,
    mul,
    neg,
    relu,
    relu_backward,
    sigmoid,
    sigmoid_backward,
    sqrt,
    sqrt_backward,
    sub,
    tanh,
    tanh_backward,
)

THREADS = [1, 2, 4]
# One element, odd tails around the 8-float vector, the 256-float row period, the 512-row and
# 256-column blocks of bias_grad, and sizes that span several parallel chunks.
DIMS = [0, 1, 2, 3, 5, 7, 8, 9, 17, 31, 64, 100, 257, 513, 1031]
F32 = np.float32
F32_EPS = float(np.finfo(F32).eps)
BINARY = {"add": (add, np.add), "sub": (sub, np.subtract), "mul": (mul, np.multiply),
          "div": (div, np.divide)}


def random_array(shape, seed=0, specials=False):
    """Standard normal float32; with `specials`, a few zeros, infinities and nans mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(F32)
    if specials and x.size:
        idx = rng.integers(0, x.size, size=max(1, x.size // 50))
        x.reshape(-1)[idx] = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], F32),
                                        size=idx.size)
    return x


def ulp_error(got, ref):
    """|got - ref| in units of the float32 spacing at ref (ref in float64). Infinity counts as
    2**128, the next power of two past the largest float, so an overflow one ULP early or late
    costs about one ULP; nan must meet nan (reported as 0) and nothing else (inf)."""
    with np.errstate(all="ignore"):  # signalling nans in the input, overflow at 2**128
        got = np.asarray(got, np.float64)
        ref = np.asarray(ref, np.float64)
        big = 2.0**128
        g = np.clip(np.where(np.isinf(got), np.sign(got) * big, got), -big, big)
        r = np.clip(ref, -big, big)
        r32 = np.minimum(np.abs(r), float(np.finfo(F32).max)).astype(F32)
        spacing = np.maximum(np.spacing(r32).astype(np.float64), 2.0**-149)
        err = np.abs(g - r) / spacing
    both_nan = np.isnan(got) & np.isnan(ref)
    err = np.where(both_nan, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def sigmoid64(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


# (pyrt function, float64 reference, ULP bound). Measured maxima over every 97th float32 bit
# pattern: exp 1.0, log 0.8, tanh 1.3, sigmoid 2.3; the bounds leave half an ULP of room.
TRANSCENDENTAL = {
    "exp": (exp, np.exp, 1.5),
    "log": (log, np.log, 1.5),
    "tanh": (tanh, np.tanh, 2.0),
    "sigmoid": (sigmoid, sigmoid64, 3.0),
}


# ---- binary ops -------------------------------------------------------------------------


@st.composite
def binary_case(draw, max_size=200_000):
    """A shape and the shape of the other operand in one of the layouts the kernels run
    without a copy, or a general broadcast, or a Python scalar (None)."""
    layout = draw(st.sampled_from(["same", "one", "row", "row1", "col", "general", "scalar"]))
    ndim = draw(st.integers(1 if layout in ("row", "row1", "col", "general") else 0, 3))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(ndim))
    assume(math.prod(shape) <= max_size)
    if layout == "same":
        other = shape
    elif layout == "one":
        other = (1,) * draw(st.integers(0, ndim))
    elif layout == "row":
        other = shape[-1:]
    elif layout == "row1":
        other = (1,) * (ndim - 1) + shape[-1:]
    elif layout == "col":
        other = shape[:-1] + (1,)
    elif layout == "general":
        other = tuple(draw(st.sampled_from([1, d])) for d in shape)
    else:
        other = None
    return shape, other


@settings(max_examples=150, deadline=None)
@given(case=binary_case(), op=st.sampled_from(sorted(BINARY)), small_first=st.booleans(),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16),
       out_kind=st.sampled_from(["new", "given", "big"]))
def test_binary_matches_numpy_bitwise(case, op, small_first, threads, seed, out_kind):
    shape, other = case
    fn, ref_fn = BINARY[op]
    big = random_array(shape, seed, specials=True)
    if other is None:
        small = float(np.random.default_rng(seed).standard_normal())
        small_ref = F32(small)
    else:
        small = small_ref = random_array(other, seed + 1, specials=True)
    a, b = (small, big) if small_first else (big, small)
    a_ref, b_ref = (small_ref, big) if small_first else (big, small_ref)
    with np.errstate(all="ignore"):
        expected = ref_fn(a_ref, b_ref)
    assert expected.dtype == F32
    out = None
    if out_kind == "given":
        out = np.full(expected.shape, 7.0, F32)
    elif out_kind == "big" and big.shape == expected.shape:
        out = big  # in place on the larger operand
    with pyrt.num_threads(threads):
        got = fn(a, b, out=out)
    if out is not None:
        assert got is out
    assert got.shape == expected.shape and got.dtype == F32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape,other", [
    ((1_000_003,), (1_000_003,)),
    ((1_000_003,), ()),
    ((333_334, 3), (3,)),           # narrow rows: b repeated into a longer period
    ((1000, 1001), (1001,)),
    ((142_858, 7), (142_858, 1)),   # narrow columns: one short run per row
    ((1001, 1000), (1001, 1)),
    ((1, 1_000_000), (1, 1)),
])
def test_binary_large(threads, shape, other):
    a = random_array(shape, 1)
    b = random_array(other, 2)
    with pyrt.num_threads(threads):
        for fn, ref_fn in BINARY.values():
            np.testing.assert_array_equal(fn(a, b), ref_fn(a, b))
            np.testing.assert_array_equal(fn(b, a), ref_fn(b, a))


def test_binary_scalars_of_every_kind():
    a = random_array((5, 4))
    for s in [2, 2.5, np.float32(0.1), np.float64(0.1), np.int64(-3), True]:
        np.testing.assert_array_equal(mul(a, s), a * F32(s))
        np.testing.assert_array_equal(div(s, a), F32(s) / a)
    x0 = np.array(3.0, F32)  # a 0-d array is an array, not a scalar
    assert sub(x0, x0).shape == ()
    np.testing.assert_array_equal(sub(x0, a), x0 - a)


def test_binary_out_may_be_either_operand():
    a = random_array((6, 9), 1)
    b = random_array((6, 9), 2)
    expected = a - b
    sub(a, b, out=b)
    np.testing.assert_array_equal(b, expected)
    row = random_array((9,), 3)
    expected = a / row
    assert div(a, row, out=a) is a
    np.testing.assert_array_equal(a, expected)
    # a view of the same memory counts as the same array
    a = random_array((6, 9), 1)
    expected = a + 1.0
    add(a, 1.0, out=a.reshape(6, 9)[:])
    np.testing.assert_array_equal(a, expected)


def test_binary_non_contiguous_inputs_are_copied():
    a = random_array((20, 30), 1)[:, ::2]
    b = random_array((30, 20), 2).T[:, ::2]
    np.testing.assert_array_equal(add(a, b), a + b)
    np.testing.assert_array_equal(mul(a, b[0]), a * b[0])


def test_binary_errors():
    a = random_array((3, 4))
    with pytest.raises(ValueError, match=r"\(3, 4\) and \(3,\)"):
        add(a, np.ones(3, F32))
    with pytest.raises(TypeError, match="b must have dtype float32"):
        add(a, np.ones(4))
    with pytest.raises(TypeError, match="a must be a float32 numpy.ndarray or a real number"):
        add([1.0, 2.0], a)
    with pytest.raises(TypeError, match="at least one"):
        add(1.0, 2.0)
    with pytest.raises(TypeError, match="b must be"):
        add(a, 1j)
    with pytest.raises(ValueError, match="out has shape"):
        add(a, a, out=np.empty((4, 3), F32))
    with pytest.raises(ValueError, match="out has shape"):
        add(a, np.ones(4, F32), out=np.empty(4, F32))
    with pytest.raises(TypeError, match="out must have dtype float32"):
        add(a, a, out=np.empty((3, 4)))
    with pytest.raises(ValueError, match="C-contiguous"):
        add(a, a, out=np.empty((4, 3), F32).T)
    buf = np.zeros(13, F32)
    x = buf[:12].reshape(3, 4)
    with pytest.raises(ValueError, match="partially overlaps"):
        add(x, 1.0, out=buf[1:].reshape(3, 4))
    # in place on a while reading a row (or one element) of a: the order of writes would show
    with pytest.raises(ValueError, match="out partially overlaps b"):
        sub(x, x[0], out=x)
    with pytest.raises(ValueError, match="out partially overlaps a"):
        mul(x[1, :1], x, out=x)
    with pytest.raises(ValueError, match="out partially overlaps bias"):
        bias_act(x, x[2], "relu", out=x)


def test_binary_c_argument_checks():
    x = ffi.new("float[4]")
    assert lib.pyrt_binary(4, x, x, x, 1, 4, 0, 0) == lib.PYRT_EINVAL
    assert lib.pyrt_binary(0, x, x, x, 1, 4, 4, 0) == lib.PYRT_EINVAL
    assert lib.pyrt_binary(0, x, x, x, -1, 4, 0, 0) == lib.PYRT_EINVAL
    assert lib.pyrt_binary(0, ffi.NULL, x, x, 1, 4, 0, 0) == lib.PYRT_EINVAL
    assert lib.pyrt_binary(0, ffi.NULL, ffi.NULL, ffi.NULL, 0, 4, 0, 0) == lib.PYRT_OK
    assert lib.pyrt_unary(8, x, x, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_unary_backward(lib.PYRT_TANH, x, ffi.NULL, x, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_bias_act(x, x, x, 1, 4, lib.PYRT_EXP) == lib.PYRT_EINVAL
    assert lib.pyrt_bias_grad(x, x, 1, -4) == lib.PYRT_EINVAL
    assert lib.pyrt_addcmul(x, x, x, 1.0, x, -1) == lib.PYRT_EINVAL
    # an output one element past an input: every element would be written before it is read
    y = ffi.new("float[5]")
    assert lib.pyrt_addcmul(y, y, y, 1.0, y + 1, 4) == lib.PYRT_EOVERLAP
    assert lib.pyrt_addcmul(y + 1, y + 1, y, 1.0, y + 1, 4) == lib.PYRT_EOVERLAP
    assert lib.pyrt_addcmul(y, y, y, 1.0, y, 4) == lib.PYRT_OK
    assert lib.pyrt_bias_act(y, x, y + 1, 1, 4, lib.PYRT_RELU) == lib.PYRT_EOVERLAP
    assert lib.pyrt_bias_act(y, y + 2, y, 2, 2, lib.PYRT_RELU) == lib.PYRT_EOVERLAP
    assert lib.pyrt_bias_act(y, x, y, 1, 4, lib.PYRT_RELU) == lib.PYRT_OK


# ---- unary ops --------------------------------------------------------------------------


def all_kinds_of_floats(n, seed):
    """Random bit patterns (every sign, exponent, subnormal, inf and nan) and the ranges
    where the functions change behaviour."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(F32)
    ranges = [rng.uniform(-120, 120, n // 4), rng.uniform(-1, 1, n // 4),
              rng.uniform(-1e-3, 1e-3, n // 8), rng.uniform(87, 89, n // 16),
              rng.uniform(-105, -86, n // 16), rng.uniform(0.5, 2, n // 8)]
    return np.concatenate([bits] + [r.astype(F32) for r in ranges])


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
@pytest.mark.parametrize("threads", [1, 4])
def test_transcendental_ulp_over_the_float_range(name, threads):
    fn, ref_fn, bound = TRANSCENDENTAL[name]
    x = all_kinds_of_floats(1 << 18, seed=threads)
    with pyrt.num_threads(threads):
        got = fn(x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    err = ulp_error(got, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, expected {ref[worst]!r}"


def test_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([inf, -inf, nan, 0.0, -0.0, 88.8, -104.0, 1e-45, -1e30, 1e30], F32)
    e = exp(x)
    np.testing.assert_array_equal(e[:7], np.array([inf, 0, nan, 1, 1, inf, 0], F32))
    assert e[7] == 1.0 and e[8] == 0.0 and e[9] == inf
    # subnormal results are rounded, not flushed: exp(-100) ~ 3.7e-44
    assert exp(np.array([-100.0], F32))[0] == F32(np.exp(-100.0))
    lg = log(np.array([0.0, -0.0, -1.0, inf, nan, 1.0, 1e-45, 1e-40], F32))
    np.testing.assert_array_equal(lg[:6], np.array([-inf, -inf, nan, inf, nan, 0.0], F32))
    assert ulp_error(lg[6:], np.log(np.array([1e-45, 1e-40], F32).astype(np.float64))).max() <= 1
    t = tanh(np.array([inf, -inf, nan, 50.0, -50.0, 1e30, -0.0, 1e-30], F32))
    np.testing.assert_array_equal(t[:6], np.array([1, -1, nan, 1, -1, 1], F32))
    assert np.signbit(t[6]) and t[7] == F32(1e-30)
    s = sigmoid(np.array([inf, -inf, nan, 100.0, -100.0, 1e30, -1e30, 0.0], F32))
    np.testing.assert_array_equal(s[[0, 1, 2, 3, 5, 6, 7]], np.array([1, 0, nan, 1, 1, 0, 0.5],
                                                                      F32))
    assert s[4] == F32(sigmoid64(-100.0))  # a subnormal, not 0
    assert not np.isnan(sigmoid(np.linspace(-1e4, 1e4, 1001, dtype=F32))).any()
    assert not np.isnan(tanh(np.linspace(-1e4, 1e4, 1001, dtype=F32))).any()
    r = relu(np.array([nan, -inf, inf, -1.0, 2.0], F32))
    np.testing.assert_array_equal(r, np.array([nan, 0, inf, 0, 2], F32))


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([0, 1, 7, 8, 9, 31, 4097, 100_003]), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**16), in_place=st.booleans())
def test_exact_unary_ops_match_numpy(n, threads, seed, in_place):
    x = random_array((n,), seed, specials=True)
    with np.errstate(invalid="ignore"):
        refs = {neg: -x, sqrt: np.sqrt(x), relu: np.where(x <= 0, F32(0), x)}
    with pyrt.num_threads(threads):
        for fn, ref in refs.items():
            src = x.copy()
            got = fn(src, out=src if in_place else None)
            assert (got is src) == in_place
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL) + ["sqrt", "relu"])
def test_unary_results_do_not_depend_on_thread_count(name):
    fn = TRANSCENDENTAL[name][0] if name in TRANSCENDENTAL else {"sqrt": sqrt, "relu": relu}[name]
    x = np.abs(random_array((1_000_003,), 5)) if name in ("log", "sqrt") else \
        random_array((1_000_003,), 5) * 10
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            results.append(fn(x))
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32))


def test_unary_shapes_and_errors():
    x = random_array((3, 0, 2))
    assert exp(x).shape == (3, 0, 2)
    assert tanh(np.array(0.5, F32)).shape == ()
    with pytest.raises(TypeError, match="x must have dtype float32"):
        exp(np.ones(3))
    with pytest.raises(TypeError, match="x must be a float32 numpy.ndarray"):
        exp(1.0)
    with pytest.raises(ValueError, match="out has shape"):
        exp(np.ones(3, F32), out=np.empty(4, F32))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.ones(3, F32)
        ro.flags.writeable = False
        exp(np.ones(3, F32), out=ro)


# ---- gradients --------------------------------------------------------------------------

# name: (forward, backward, float64 function, the derivative's sensitivity |d f'/d saved|);
# the saved value is the output y, or the input x for log and relu.
GRADIENTS = {
    "exp": (exp, exp_backward, np.exp, lambda y: np.ones_like(y)),
    "log": (log, log_backward, np.log, None),
    "sqrt": (sqrt, sqrt_backward, np.sqrt, lambda y: 0.5 / (y * y)),
    "tanh": (tanh, tanh_backward, np.tanh, lambda y: 2 * np.abs(y)),
    "sigmoid": (sigmoid, sigmoid_backward, sigmoid64, lambda y: np.abs(1 - 2 * y)),
    "relu": (relu, relu_backward, lambda v: np.maximum(v, 0.0), None),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
@pytest.mark.parametrize("threads", THREADS)
def test_gradients_match_finite_differences(name, threads):
    fwd, bwd, f64, sensitivity = GRADIENTS[name]
    rng = np.random.default_rng(7)
    n = 20_011
    x = rng.uniform(-4, 4, n).astype(F32)
    if name in ("log", "sqrt"):
        x = rng.uniform(0.1, 4, n).astype(F32)
    if name == "relu":
        x[np.abs(x) < 1e-3] = 0.5  # away from the kink
    grad = rng.standard_normal(n).astype(F32)
    x64 = x.astype(np.float64)
    h = 1e-6
    derivative = (f64(x64 + h) - f64(x64 - h)) / (2 * h)  # good to ~1e-9 relative here
    with pyrt.num_threads(threads):
        saved = x if sensitivity is None else fwd(x)
        got = bwd(grad, saved)
    # a few roundings of the formula, plus the error of a float32 y (up to 3 ULP) carried
    # through f'(y): 1 - y near y = 1 is where sigmoid and tanh lose digits, in any framework
    y_err = 0.0 if sensitivity is None else \
        sensitivity(saved.astype(np.float64)) * 4 * F32_EPS * np.abs(saved)
    bound = np.abs(grad) * (4 * F32_EPS * np.abs(derivative) + y_err + 1e-8)
    assert np.all(np.abs(got - derivative * grad) <= bound)


@pytest.mark.parametrize("threads", THREADS)
def test_backward_formulas_and_aliasing(threads):
    rng = np.random.default_rng(3)
    n = 100_003
    g = rng.standard_normal(n).astype(F32)
    y = rng.uniform(-1, 1, n).astype(F32)
    yp = np.abs(y) + F32(0.5)
    x = random_array((n,), 4, specials=True)
    g64, y64 = g.astype(np.float64), y.astype(np.float64)
    with pyrt.num_threads(threads):
        np.testing.assert_array_equal(relu_backward(g, x), np.where(x <= 0, F32(0), g))
        np.testing.assert_array_equal(exp_backward(g, y), g * y)
        np.testing.assert_array_equal(log_backward(g, yp), g / yp)
        np.testing.assert_array_equal(sqrt_backward(g, yp), g / (yp + yp))
        np.testing.assert_array_equal(sigmoid_backward(g, y), g * (F32(1) - y) * y)
        # 1 - y*y is computed with one rounding (FMA), then multiplied by grad
        ref = g64 * (1 - y64 * y64)
        got = tanh_backward(g, y)
        assert np.all(np.abs(got - ref) <= 1.5 * F32_EPS * np.abs(ref) + 1e-38)
        gc = g.copy()
        assert sigmoid_backward(gc, y, out=gc) is gc
        np.testing.assert_array_equal(gc, g * (F32(1) - y) * y)
        yc = y.copy()
        assert exp_backward(g, yc, out=yc) is yc
        np.testing.assert_array_equal(yc, g * y)


def test_backward_errors():
    g = np.ones((3, 4), F32)
    with pytest.raises(ValueError, match=r"y has shape \(4, 3\)"):
        tanh_backward(g, np.ones((4, 3), F32))
    with pytest.raises(ValueError, match=r"x has shape"):
        relu_backward(g, np.ones(12, F32))
    with pytest.raises(TypeError, match="grad must have dtype float32"):
        sigmoid_backward(np.ones((3, 4)), g)


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = rng.uniform(-5, 5, 10_007).astype(F32)
    g = rng.standard_normal(10_007).astype(F32)
    for name, tfn in [("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("exp", torch.exp),
                      ("relu", torch.relu)]:
        fwd, bwd, _, sensitivity = GRADIENTS[name]
        tx = torch.tensor(x, requires_grad=True)
        ty = tfn(tx)
        ty.backward(torch.tensor(g))
        y = fwd(x)
        np.testing.assert_allclose(y, ty.detach().numpy(), rtol=4 * F32_EPS, atol=1e-30)
        got = bwd(g, x if sensitivity is None else y)
        ref = tx.grad.numpy()
        # both compute grad * f'(y) from a y within a few ULP of each other
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6 * np.abs(g).max())


# ---- bias + activation --------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(shape=st.lists(st.sampled_from(DIMS), min_size=1, max_size=3).map(tuple),
       act=st.sampled_from([None, "relu", "sigmoid", "tanh"]), with_bias=st.booleans(),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16), in_place=st.booleans())
def test_bias_act_matches_unary_of_sum(shape, act, with_bias, threads, seed, in_place):
    assume(math.prod(shape) <= 200_000)
    x = random_array(shape, seed) * 3
    bias = random_array(shape[-1:], seed + 1) if with_bias else None
    pre = x + bias if with_bias else x
    fns = {None: lambda v: v.copy(), "relu": relu, "sigmoid": sigmoid, "tanh": tanh}
    expected = fns[act](pre)  # the same vector code on the same float32 sum: bitwise equal
    src = x.copy()
    with pyrt.num_threads(threads):
        got = bias_act(src, bias, act, out=src if in_place else None)
    assert (got is src) == in_place
    np.testing.assert_array_equal(got, expected)
    if act in ("sigmoid", "tanh"):
        ref = {"sigmoid": sigmoid64, "tanh": np.tanh}[act](pre.astype(np.float64))
        assert ulp_error(got, ref).max(initial=0) <= 3


def test_bias_act_large_and_narrow():
    for shape in [(250_001, 4), (2000, 515), (1, 1_000_003)]:
        x = random_array(shape, 1)
        b = random_array(shape[-1:], 2)
        ref = tanh(x + b)
        for threads in THREADS:
            with pyrt.num_threads(threads):
                np.testing.assert_array_equal(bias_act(x, b, "tanh"), ref)
                np.testing.assert_array_equal(bias_act(x, b, "relu"), np.maximum(x + b, 0))


def test_bias_act_errors():
    x = np.ones((3, 4), F32)
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        bias_act(x, np.ones(3, F32))
    with pytest.raises(ValueError, match="act must be"):
        bias_act(x, None, "gelu")
    with pytest.raises(ValueError, match="at least one dimension"):
        bias_act(np.array(1.0, F32), np.ones(1, F32))
    with pytest.raises(TypeError, match="bias must have dtype float32"):
        bias_act(x, np.ones(4))


# ---- bias gradient ------------------------------------------------------------------------


def assert_column_sum_close(got, grad):
    """Within 2 (rows_per_block + log2(blocks)) eps of the sum of |values|: each column is
    summed in order within 512 rows, then pairwise."""
    g64 = grad.reshape(math.prod(grad.shape[:-1]), grad.shape[-1]).astype(np.float64)
    ref = g64.sum(axis=0)
    rows = g64.shape[0]
    depth = min(rows, 512) + math.ceil(math.log2(max(1, -(-rows // 512)))) + 1
    bound = depth * F32_EPS * np.abs(g64).sum(axis=0) + 1e-30
    assert np.all(np.abs(got - ref) <= bound)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.sampled_from(DIMS), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16))
def test_bias_grad_matches_float64_and_is_bitwise_stable(shape, seed):
    assume(math.prod(shape) <= 300_000)
    grad = random_array(shape, seed)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            results.append(bias_grad(grad))
    assert results[0].shape == shape[-1:] and results[0].dtype == F32
    assert_column_sum_close(results[0], grad)
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32))


@pytest.mark.parametrize("shape", [(1_000_003, 1), (100_003, 7), (5000, 300), (600, 2049),
                                   (3, 4, 100_000)])
def test_bias_grad_large_bitwise_at_every_thread_count(shape):
    grad = random_array(shape, 9)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            results.append(bias_grad(grad))
    assert_column_sum_close(results[0], grad)
    for r in results[1:]:
        assert np.array_equal(r.view(np.uint32), results[0].view(np.uint32))


def test_bias_grad_edges_and_errors():
    np.testing.assert_array_equal(bias_grad(np.empty((0, 5), F32)), np.zeros(5, F32))
    assert bias_grad(np.empty((4, 0), F32)).shape == (0,)
    v = random_array((6,))
    np.testing.assert_array_equal(bias_grad(v), v)
    out = np.full(4, 9.0, F32)
    g = random_array((10, 4))
    assert bias_grad(g, out=out) is out
    with pytest.raises(ValueError, match="at least one dimension"):
        bias_grad(np.array(1.0, F32))
    with pytest.raises(ValueError, match=r"out has shape \(5,\)"):
        bias_grad(g, out=np.empty(5, F32))
    with pytest.raises(ValueError, match="partially overlaps"):
        bias_grad(g, out=g[1])


# ---- addcmul --------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from([0, 1, 7, 8, 9, 63, 16_385, 200_003]), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**16), value=st.sampled_from([1.0, -0.5, 3.0, 0.0]),
       alias=st.sampled_from([None, 0, 1, 2]))
def test_addcmul_matches_float64(n, threads, seed, value, alias):
    c, a, b = (random_array((n,), seed + k) for k in range(3))
    ref = c.astype(np.float64) + np.float64(F32(value) * a) * b
    # value * a rounds once, the multiply-add once more (or twice without FMA)
    bound = 2 * F32_EPS * (np.abs(c) + 2 * np.abs(F32(value) * a * b)) + 1e-38
    inputs = [c.copy(), a.copy(), b.copy()]
    out = inputs[alias] if alias is not None else None
    with pyrt.num_threads(threads):
        got = addcmul(*inputs, value=value, out=out)
    assert out is None or got is out
    assert np.all(np.abs(got - ref) <= bound)


def test_addcmul_matches_torch():
    torch = pytest.importorskip("torch")
    c, a, b = (random_array((3, 1001), k) for k in range(3))
    ref = torch.addcmul(torch.tensor(c), torch.tensor(a), torch.tensor(b), value=0.5).numpy()
    np.testing.assert_allclose(addcmul(c, a, b, value=0.5), ref, rtol=2 * F32_EPS, atol=1e-6)


def test_addcmul_errors():
    c, a, b = (random_array((3, 1001), k) for k in range(3))
    with pytest.raises(ValueError, match=r"tensor2 has shape \(3, 1000\)"):
        addcmul(c, a, b[:, :1000])
    with pytest.raises(TypeError, match="value must be a real number"):
        addcmul(c, a, b, value="2")
