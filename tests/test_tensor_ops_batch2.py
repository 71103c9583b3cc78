"""A second batch of PyTorch's Tensor and top-level interface, each op run on pyrt and on
torch and compared: values, dtypes, shapes and the gradients of sum(out * w) (the helpers of
test_tensor_ops_more), over many shapes and dims (hypothesis); special values where the
semantics differ (zeros, NaN, ties); then PyTorch's errors for bad input."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyrt
from tests.test_tensor_ops_more import (
    EXAMPLES,
    SHAPES,
    against_torch,
    assert_same,
    distinct,
    normal,
    same_error,
)

torch = pytest.importorskip("torch")


def dims_of(shape):
    """A strategy for a dim of `shape`, negative ones included."""
    return st.integers(-len(shape), len(shape) - 1)


# ---- method forms of the operators -----------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_operator_methods(shape, seed):
    a, b = normal(shape, seed), normal(shape, seed + 1) + 3
    against_torch(lambda x, y: x.sub(y, alpha=2), a, b)
    against_torch(lambda x, y: x.add(y, alpha=-0.5), a, b)
    against_torch(lambda x, y: x.mul(y), a, b)
    against_torch(lambda x, y: x.div(y), a, b)
    against_torch(lambda x, y: x.true_divide(y), a, b)
    against_torch(lambda x: x.neg(), a)
    against_torch(lambda x, y: x.div(y, rounding_mode="trunc"), a * 5, b)
    against_torch(lambda x, y: x.div(y, rounding_mode="floor"), a * 5, b)


def test_operator_methods_on_integers_and_their_errors():
    a, b = np.array([-7, 7, 5, -5]), np.array([2, -2, 3, 3])
    for mode in ("trunc", "floor"):
        assert_same(pyrt.tensor(a).div(pyrt.tensor(b), rounding_mode=mode),
                    torch.tensor(a).div(torch.tensor(b), rounding_mode=mode))
    assert_same(pyrt.tensor(a).sub(pyrt.tensor(b), alpha=3),
                torch.tensor(a).sub(torch.tensor(b), alpha=3))
    same_error(lambda: pyrt.tensor(a).sub(pyrt.tensor(b), alpha=2.5),
               lambda: torch.tensor(a).sub(torch.tensor(b), alpha=2.5), RuntimeError)
    same_error(lambda: pyrt.tensor(a).div(2, rounding_mode="up"),
               lambda: torch.tensor(a).div(2, rounding_mode="up"), RuntimeError)
    same_error(lambda: pyrt.tensor(a).div(0, rounding_mode="trunc"),
               lambda: torch.tensor(a).div(0, rounding_mode="trunc"), RuntimeError)


# ---- pointwise functions ---------------------------------------------------------------------

UNARY = ["square", "reciprocal", "erf", "tan", "trunc", "frac", "exp2"]
POSITIVE = ["rsqrt", "log2", "log10"]


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_unary_functions_and_their_gradients(shape, seed):
    x = normal(shape, seed) * 2
    for name in UNARY:
        against_torch(lambda t, n=name: getattr(t, n)(), x, seed=seed, rtol=1e-5, atol=1e-5)
        against_torch(lambda t, n=name: getattr(pyrt if isinstance(t, pyrt.Tensor) else torch,
                                                n)(t), x, seed=seed, rtol=1e-5, atol=1e-5)
    for name in POSITIVE:
        against_torch(lambda t, n=name: getattr(t, n)(), np.abs(x) + 0.1, seed=seed)


def test_unary_functions_on_special_values_and_integers():
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -2.5, 2.5], np.float32)
    for name in UNARY + POSITIVE:
        p, q = pyrt.tensor(special), torch.tensor(special)
        assert_same(getattr(p, name)(), getattr(q, name)(), rtol=1e-6, atol=0)
    ints = np.array([-3, 0, 2, 7])
    for name in ["square", "reciprocal", "erf", "exp2", "trunc", "rsqrt", "log2", "tan"]:
        assert_same(getattr(pyrt.tensor(ints), name)(), getattr(torch.tensor(ints), name)())
    assert_same(pyrt.tensor([True, False]).square(), torch.tensor([True, False]).square())
    same_error(lambda: pyrt.tensor(ints).frac(), lambda: torch.tensor(ints).frac(),
               NotImplementedError)


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_fmod_lerp_addcmul(shape, seed):
    a, b = normal(shape, seed) * 5, normal(shape, seed + 1) + np.float32(3)
    against_torch(lambda x, y: x.fmod(y), a, b)
    against_torch(lambda x: x.fmod(1.5), a)
    end, w = normal(shape, seed + 2), normal(shape, seed + 3)
    against_torch(lambda x, y, z: x.lerp(y, z), a, end, w)
    against_torch(lambda x, y: x.lerp(y, 0.75), a, end)
    against_torch(lambda x, y: pyrt.lerp(x, y, 0.25) if isinstance(x, pyrt.Tensor)
                  else torch.lerp(x, y, 0.25), a, end)
    row = normal(shape[-1:], seed + 4)
    against_torch(lambda x, y, z: x.addcmul(y, z, value=-1.5), a, row, w)
    against_torch(lambda x, y, z: pyrt.addcmul(x, y, z) if isinstance(x, pyrt.Tensor)
                  else torch.addcmul(x, y, z), row, a, w)


def test_fmod_lerp_addcmul_dtypes_and_errors():
    a, b = np.array([5, -5, 7]), np.array([3, 3, -2])
    assert_same(pyrt.tensor(a).fmod(pyrt.tensor(b)), torch.tensor(a).fmod(torch.tensor(b)))
    assert_same(pyrt.fmod(pyrt.tensor(a), 2), torch.fmod(torch.tensor(a), 2))
    same_error(lambda: pyrt.tensor(a).fmod(0), lambda: torch.tensor(a).fmod(0), RuntimeError)
    x = np.array([1.0, 2.0], np.float32)
    same_error(lambda: pyrt.tensor(x).lerp(pyrt.tensor([1, 2]), 0.5),
               lambda: torch.tensor(x).lerp(torch.tensor([1, 2]), 0.5), RuntimeError)
    same_error(lambda: pyrt.tensor([1]).lerp(pyrt.tensor([1]), 0.5),
               lambda: torch.tensor([1]).lerp(torch.tensor([1]), 0.5), NotImplementedError)
    same_error(lambda: pyrt.tensor(x).lerp(pyrt.tensor(x), pyrt.ones(3)),
               lambda: torch.tensor(x).lerp(torch.tensor(x), torch.ones(3)), RuntimeError)
    ints = [pyrt.tensor([1, 2]), pyrt.tensor([3, 4]), pyrt.tensor([5, 6])]
    assert_same(ints[0].addcmul(ints[1], ints[2], value=2),
                torch.tensor([1, 2]).addcmul(torch.tensor([3, 4]), torch.tensor([5, 6]),
                                             value=2))


def test_clamp_forms():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], np.float32)
    against_torch(lambda t: t.clamp_min(-0.5), x)
    against_torch(lambda t: t.clamp_max(0.5), x)
    against_torch(lambda t: t.clip(-1, 1), x)
    against_torch(lambda t: pyrt.clip(t, max=0) if isinstance(t, pyrt.Tensor)
                  else torch.clip(t, max=0), x)


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), bounds=st.sampled_from(["both", "min", "max"]),
       drop=st.integers(0, 3), ties=st.booleans())
def test_clamp_by_tensors(shape, seed, bounds, drop, ties):
    """Tensor bounds that broadcast to x (trailing dims kept, others 1 or dropped), min above
    max in places (max wins) and bounds tied with x: values and all three gradients."""
    r = np.random.default_rng(seed)
    bound_shape = tuple(n if r.random() < 0.5 else 1 for n in shape)[drop:]
    x = normal(shape, seed)
    lo = (r.standard_normal(bound_shape) * 0.7 - 0.2).astype(np.float32)
    hi = (r.standard_normal(bound_shape) * 0.7 + 0.2).astype(np.float32)
    if ties:  # x on a bound: its gradient passes (min <= x <= max), the bound's does not
        x.reshape(-1)[0] = (lo if bounds != "max" else hi).reshape(-1)[0]
    if bounds == "both":
        against_torch(lambda t, a, b: t.clamp(a, b), x, lo, hi)
        against_torch(lambda t, a, b: t.clamp(min=a, max=b) if isinstance(t, pyrt.Tensor)
                      else torch.clamp(t, min=a, max=b), x, lo, hi)
    elif bounds == "min":
        against_torch(lambda t, a: t.clamp(min=a), x, lo)
    else:
        against_torch(lambda t, b: t.clamp(max=b), x, hi)


def test_clamp_by_tensors_errors_and_arrays():
    x = pyrt.tensor([1.0, 2.0, 3.0])
    assert pyrt.clamp(x, max=np.array([2.5, 1.0, 0.0], np.float32)).tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"do not broadcast with the input's \(3,\)"):
        pyrt.clamp(x, min=pyrt.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="max must be a real number"):
        pyrt.clamp(x, pyrt.zeros(3), "1")


# ---- logical ops and isclose -----------------------------------------------------------------


def test_logical_ops_and_isclose():
    a = np.array([[0.0, 1.0, np.nan, -2.0]], np.float32)
    b = np.array([[0], [3]])
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert_same(getattr(pyrt.tensor(a), name)(pyrt.tensor(b)),
                    getattr(torch.tensor(a), name)(torch.tensor(b)))
        assert_same(getattr(pyrt, name)(pyrt.tensor(b), pyrt.tensor(a)),
                    getattr(torch, name)(torch.tensor(b), torch.tensor(a)))
        same_error(lambda n=name: getattr(pyrt.tensor(a), n)(1),
                   lambda n=name: getattr(torch.tensor(a), n)(1), TypeError)
        same_error(lambda n=name: getattr(pyrt.tensor(a), n)(pyrt.ones(3)),
                   lambda n=name: getattr(torch.tensor(a), n)(torch.ones(3)), RuntimeError)
    assert_same(pyrt.tensor(a).logical_not(), torch.tensor(a).logical_not())
    assert_same(pyrt.logical_not(pyrt.tensor(b)), torch.logical_not(torch.tensor(b)))
    x = np.array([1.0, np.inf, -np.inf, np.nan, 1e-9, 100.0], np.float32)
    y = np.array([1.0 + 1e-6, np.inf, np.inf, np.nan, 0.0, 100.01], np.float32)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 1e-3}, {"atol": 1e-8, "rtol": 0.0}):
        assert_same(pyrt.tensor(x).isclose(pyrt.tensor(y), **kwargs),
                    torch.tensor(x).isclose(torch.tensor(y), **kwargs))
    assert_same(pyrt.isclose(pyrt.tensor([1, 2]), pyrt.tensor([1, 3])),
                torch.isclose(torch.tensor([1, 2]), torch.tensor([1, 3])))
    same_error(lambda: pyrt.tensor(x).isclose(pyrt.tensor(x), rtol=-1),
               lambda: torch.tensor(x).isclose(torch.tensor(x), rtol=-1), RuntimeError)
    same_error(lambda: pyrt.tensor([1.0]).isclose(pyrt.tensor([1])),
               lambda: torch.tensor([1.0]).isclose(torch.tensor([1])), RuntimeError)


# ---- reductions ------------------------------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_logsumexp_amax_amin_nansum(shape, seed, data):
    dim = data.draw(dims_of(shape))
    keepdim = data.draw(st.booleans())
    x = normal(shape, seed) * 10
    against_torch(lambda t: t.logsumexp(dim, keepdim), x)
    against_torch(lambda t: t.logsumexp((0, dim) if dim % len(shape) else 0), x)
    # ties: rounded values repeat, so the gradients are shared
    ties = np.round(normal(shape, seed))
    for name in ("amax", "amin"):
        against_torch(lambda t, n=name: getattr(t, n)(dim, keepdim), ties)
        against_torch(lambda t, n=name: getattr(t, n)(), ties)
    with_nan = x.copy()
    with_nan.reshape(-1)[seed % x.size] = np.nan
    against_torch(lambda t: t.nansum(dim, keepdim), with_nan, rtol=1e-5, atol=1e-5)
    against_torch(lambda t: t.nansum(), with_nan, rtol=1e-5, atol=1e-5)


def test_reductions_on_special_values_integers_and_errors():
    inf = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 0.0]], np.float32)
    assert_same(pyrt.tensor(inf).logsumexp(1), torch.tensor(inf).logsumexp(1))
    assert_same(pyrt.tensor(inf).amax(1), torch.tensor(inf).amax(1))
    assert_same(pyrt.logsumexp(pyrt.zeros(0, 2), 0), torch.logsumexp(torch.zeros(0, 2), 0))
    ints = np.array([[3, -1, 4], [1, 5, 9]])
    for call in (lambda t: t.logsumexp(1), lambda t: t.amax(0), lambda t: t.amin(),
                 lambda t: t.nansum(1), lambda t: t.cumprod(1), lambda t: t.median(),
                 lambda t: t.median(1).values, lambda t: t.median(1).indices):
        assert_same(call(pyrt.tensor(ints)), call(torch.tensor(ints)))
    assert_same(pyrt.tensor([True, True]).nansum(), torch.tensor([True, True]).nansum())
    same_error(lambda: pyrt.zeros(0, 2).amax(0), lambda: torch.zeros(0, 2).amax(0), IndexError)
    assert_same(pyrt.zeros(0, 2).amax(1), torch.zeros(0, 2).amax(1))
    same_error(lambda: pyrt.ones(2).logsumexp(), lambda: torch.ones(2).logsumexp(), TypeError)
    same_error(lambda: pyrt.ones(2).amax(2), lambda: torch.ones(2).amax(2), IndexError)
    same_error(lambda: pyrt.ones(2, 2).amax((0, 0)), lambda: torch.ones(2, 2).amax((0, 0)),
               RuntimeError)


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_cumprod_with_zeros(shape, seed, data):
    dim = data.draw(dims_of(shape))
    x = normal(shape, seed)
    against_torch(lambda t: t.cumprod(dim), x, rtol=1e-4, atol=1e-5)
    # one zero, then two zeros, in a line: the gradients at and past them are exact
    zeros = x.copy()
    zeros.reshape(-1)[seed % x.size] = 0
    against_torch(lambda t: t.cumprod(dim), zeros, rtol=1e-4, atol=1e-5)
    zeros.reshape(-1)[(seed * 7 + 1) % x.size] = 0
    against_torch(lambda t: pyrt.cumprod(t, dim) if isinstance(t, pyrt.Tensor)
                  else torch.cumprod(t, dim), zeros, rtol=1e-4, atol=1e-5)


def test_cumprod_zero_gradients_by_hand():
    # d/dx_k of sum_i g_i prod_{j<=i} x_j for x = (0, 2, 0, 3), g = (1, 2, 3, 4): only the
    # first zero has a gradient, 1 + 2 * 2 + 3 * 2 * 0 + ... = 5
    x = pyrt.tensor([0.0, 2.0, 0.0, 3.0], requires_grad=True)
    x.cumprod(0).backward(pyrt.tensor([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 0.0, 0.0, 0.0])


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_median(shape, seed, data):
    dim = data.draw(dims_of(shape))
    keepdim = data.draw(st.booleans())
    x = distinct(shape, seed)
    against_torch(lambda t: t.median(), x)
    against_torch(lambda t: tuple(t.median(dim, keepdim)), x)
    against_torch(lambda t: tuple(pyrt.median(t, dim=dim) if isinstance(t, pyrt.Tensor)
                                  else torch.median(t, dim=dim)), x)
    # ties without a dim: the gradient is shared among the elements equal to the median
    against_torch(lambda t: t.median(), np.round(normal(shape, seed)))


def test_median_special_values_and_errors():
    x = np.array([[1.0, 3.0, np.nan, 0.0], [2.0, 4.0, 1.0, 3.0]], np.float32)
    against_torch(lambda t: t.median(), x)
    against_torch(lambda t: tuple(t.median(1)), x)
    against_torch(lambda t: tuple(t.median(0, keepdim=True)), np.float32(3.0))
    assert_same(pyrt.zeros(0).median(), torch.zeros(0).median())
    same_error(lambda: pyrt.zeros(1, 0).median(1), lambda: torch.zeros(1, 0).median(1),
               IndexError)
    values, indices = pyrt.tensor(x).median(1)
    assert type(values) is pyrt.Tensor and pyrt.tensor(x).median(dim=1).indices is not None
    assert indices.dtype == pyrt.int64


# ---- selection -------------------------------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_masked_select_nonzero_unique(shape, seed):
    x = np.round(normal(shape, seed))
    mask = normal(shape[-1:], seed + 1) > 0  # broadcast along the leading dims
    against_torch(lambda t: t.masked_select(pyrt.tensor(mask) if isinstance(t, pyrt.Tensor)
                                            else torch.tensor(mask)), x)
    assert_same(pyrt.tensor(x).nonzero(), torch.tensor(x).nonzero())
    for p, q in zip(pyrt.nonzero(pyrt.tensor(x), as_tuple=True),
                    torch.nonzero(torch.tensor(x), as_tuple=True), strict=True):
        assert_same(p, q)
    for inverse in (False, True):
        for counts in (False, True):
            got = pyrt.tensor(x).unique(return_inverse=inverse, return_counts=counts)
            want = torch.tensor(x).unique(return_inverse=inverse, return_counts=counts)
            for p, q in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,), strict=True):
                assert_same(p, q)


def test_selection_special_values_and_errors():
    x = np.array([1.0, np.nan, np.nan, 1.0, -0.0, 0.0], np.float32)
    assert_same(pyrt.unique(pyrt.tensor(x)), torch.unique(torch.tensor(x)))
    assert_same(pyrt.tensor(x).nonzero(), torch.tensor(x).nonzero())
    assert_same(pyrt.tensor(3.0).nonzero(), torch.tensor(3.0).nonzero())
    assert_same(pyrt.tensor(0.0).nonzero(), torch.tensor(0.0).nonzero())
    counts = np.array([1, 3, 3, 0, 7])
    assert_same(pyrt.bincount(pyrt.tensor(counts)), torch.bincount(torch.tensor(counts)))
    assert_same(pyrt.tensor(counts).bincount(minlength=10),
                torch.tensor(counts).bincount(minlength=10))
    w = np.arange(5, dtype=np.float32)
    assert_same(pyrt.tensor(counts).bincount(pyrt.tensor(w)),
                torch.tensor(counts).bincount(torch.tensor(w)))
    assert_same(pyrt.tensor(counts).bincount(pyrt.tensor(counts)),
                torch.tensor(counts).bincount(torch.tensor(counts)))
    assert_same(pyrt.tensor(np.zeros(0, np.int64)).bincount(),
                torch.tensor(np.zeros(0, np.int64)).bincount())
    for bad, error in (([-1, 2], RuntimeError), ([[1]], RuntimeError),
                       ([1.0], NotImplementedError)):
        same_error(lambda b=bad: pyrt.tensor(b).bincount(),
                   lambda b=bad: torch.tensor(b).bincount(), error)
    same_error(lambda: pyrt.tensor([1]).bincount(minlength=-1),
               lambda: torch.tensor([1]).bincount(minlength=-1), RuntimeError)
    same_error(lambda: pyrt.ones(2, 3).masked_select(pyrt.ones(3)),
               lambda: torch.ones(2, 3).masked_select(torch.ones(3)), RuntimeError)
    same_error(lambda: pyrt.ones(2, 3).masked_select(pyrt.ones(4, dtype=pyrt.bool)),
               lambda: torch.ones(2, 3).masked_select(torch.ones(4, dtype=torch.bool)),
               RuntimeError)


# ---- rearranging -----------------------------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_unbind_narrow_movedim_swapaxes_unflatten(shape, seed, data):
    x = normal(shape, seed)
    dim = data.draw(dims_of(shape))
    other = data.draw(dims_of(shape))
    n = shape[dim]
    start = data.draw(st.integers(-n, n))
    length = data.draw(st.integers(0, n - start % n if start != n else 0))
    against_torch(lambda t: t.unbind(dim), x)
    against_torch(lambda t: t.narrow(dim, start, length), x)
    against_torch(lambda t: t.movedim(dim, other), x)
    against_torch(lambda t: t.movedim((dim,), (other,)), x)
    against_torch(lambda t: t.swapaxes(dim, other), x)
    if len(shape) >= 2:
        against_torch(lambda t: t.movedim((0, 1), (-1, 0)), x)
    against_torch(lambda t: t.unflatten(dim, (1, n, 1)), x)
    against_torch(lambda t: t.unflatten(dim, (-1, 1)), x)


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_roll_repeat_interleave_tril_triu(shape, seed, data):
    x = normal(shape, seed)
    dim = data.draw(dims_of(shape))
    shift = data.draw(st.integers(-7, 7))
    repeats = data.draw(st.integers(0, 3))
    diagonal = data.draw(st.integers(-3, 3))
    against_torch(lambda t: t.roll(shift), x)
    against_torch(lambda t: t.roll(shift, dim), x)
    against_torch(lambda t: t.roll((shift, 1), (dim, 0)), x)
    against_torch(lambda t: t.repeat_interleave(repeats), x)
    against_torch(lambda t: t.repeat_interleave(repeats, dim), x)
    counts = np.arange(shape[dim]) % 3
    against_torch(lambda t: t.repeat_interleave(
        (pyrt.tensor if isinstance(t, pyrt.Tensor) else torch.tensor)(counts), dim), x)
    if len(shape) >= 2:
        against_torch(lambda t: t.tril(diagonal), x)
        against_torch(lambda t: t.triu(diagonal), x)
        against_torch(lambda t: t.triu(), x)


@EXAMPLES
@given(n=st.integers(1, 5), m=st.integers(1, 5), k=st.integers(-4, 4), seed=st.integers(0, 9))
def test_diag_outer_dot_mm_bmm(n, m, k, seed):
    v, w = normal((n,), seed), normal((m,), seed + 1)
    against_torch(lambda t: t.diag(k), v)
    against_torch(lambda t: t.diag(k), normal((n, m), seed))
    against_torch(lambda a, b: a.outer(b), v, w)
    against_torch(lambda a, b: a.dot(b), v, normal((n,), seed + 2), rtol=1e-5, atol=1e-5)
    against_torch(lambda a, b: a.mm(b), normal((n, m), seed), normal((m, 3), seed + 3),
                  rtol=1e-5, atol=1e-5)
    against_torch(lambda a, b: a.bmm(b), normal((2, n, m), seed), normal((2, m, 3), seed + 4),
                  rtol=1e-5, atol=1e-5)


def test_products_dtypes_and_errors():
    ints = np.array([[1, 2], [3, 4]])
    assert_same(pyrt.tensor(ints).mm(pyrt.tensor(ints)), torch.tensor(ints).mm(
        torch.tensor(ints)))
    assert_same(pyrt.bmm(pyrt.tensor(ints[None]), pyrt.tensor(ints[None])),
                torch.bmm(torch.tensor(ints[None]), torch.tensor(ints[None])))
    assert_same(pyrt.dot(pyrt.tensor([1, 2]), pyrt.tensor([3, 4])),
                torch.dot(torch.tensor([1, 2]), torch.tensor([3, 4])))
    assert_same(pyrt.outer(pyrt.tensor([1, 2]), pyrt.tensor([1.0, 2.0])),
                torch.outer(torch.tensor([1, 2]), torch.tensor([1.0, 2.0])))
    cases = [
        (lambda m: m.outer(m.ones(2, 2), m.ones(2)), RuntimeError),
        (lambda m: m.dot(m.tensor([1, 2]), m.tensor([1.0, 2.0])), RuntimeError),
        (lambda m: m.dot(m.ones(3), m.ones(2)), RuntimeError),
        (lambda m: m.dot(m.ones(1, 3), m.ones(3)), RuntimeError),
        (lambda m: m.mm(m.ones(3), m.ones(3, 2)), RuntimeError),
        (lambda m: m.mm(m.ones(2, 3), m.ones(2, 3)), RuntimeError),
        (lambda m: m.bmm(m.ones(2, 3), m.ones(2, 3)), RuntimeError),
        (lambda m: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 3)), RuntimeError),
        (lambda m: m.diag(m.ones(2, 2, 2)), RuntimeError),
        (lambda m: m.tril(m.ones(3)), RuntimeError),
        (lambda m: m.narrow(m.ones(2), 0, 1, 2), RuntimeError),
        (lambda m: m.narrow(m.ones(2), 0, 3, 0), IndexError),
        (lambda m: m.narrow(m.ones(2), 0, 0, -1), RuntimeError),
        (lambda m: m.unbind(m.tensor(2.0)), IndexError),
        (lambda m: m.movedim(m.ones(2, 2), (0, 1), (1,)), RuntimeError),
        (lambda m: m.movedim(m.ones(2, 2), (0, 0), (1, 0)), RuntimeError),
        (lambda m: m.unflatten(m.ones(1, 2), 1, (2, 2)), RuntimeError),
        (lambda m: m.unflatten(m.ones(1, 2), 1, ()), RuntimeError),
        (lambda m: m.roll(m.ones(1, 2), (1, 2), 0), RuntimeError),
        (lambda m: m.roll(m.ones(1, 2), 1, 5), IndexError),
        (lambda m: m.repeat_interleave(m.ones(2), -1), RuntimeError),
        (lambda m: m.randperm(-1), RuntimeError),
        (lambda m: m.diff(m.tensor(1.0)), RuntimeError),
        (lambda m: m.diff(m.ones(3), n=-1), RuntimeError),
        (lambda m: m.meshgrid(m.ones(2), indexing="ab"), RuntimeError),
        (lambda m: m.meshgrid(m.ones(1, 2), indexing="ij"), RuntimeError),
        (lambda m: m.meshgrid(m.ones(2), m.tensor([1, 2]), indexing="ij"), RuntimeError),
        (lambda m: m.broadcast_tensors(m.ones(2, 1), m.ones(3, 3, 3)), RuntimeError),
    ]
    for call, error in cases:
        same_error(lambda c=call: c(pyrt), lambda c=call: c(torch), error)


@EXAMPLES
@given(n=st.integers(0, 4), m=st.integers(1, 4), seed=st.integers(0, 9),
       indexing=st.sampled_from(["ij", "xy"]))
def test_meshgrid_broadcast_tensors_diff(n, m, seed, indexing):
    a, b, c = normal((n,), seed), normal((m,), seed + 1), normal((), seed + 2)
    against_torch(lambda x, y, z: (pyrt if isinstance(x, pyrt.Tensor) else torch).meshgrid(
        x, y, z, indexing=indexing), a, b, c)
    against_torch(lambda x, y: (pyrt if isinstance(x, pyrt.Tensor) else torch).meshgrid(
        [x, y], indexing=indexing), b, a)
    against_torch(lambda x, y: (pyrt if isinstance(x, pyrt.Tensor) else torch)
                  .broadcast_tensors(x, y), normal((m, 1), seed), normal((n,), seed))
    x = normal((3, m + 1), seed)
    for k in range(4):
        against_torch(lambda t, k=k: t.diff(k), x)
        against_torch(lambda t, k=k: (pyrt if isinstance(t, pyrt.Tensor) else torch).diff(
            t, k, 0), x)
    against_torch(lambda t, p: t.diff(dim=0, prepend=p, append=p), x, normal((1, m + 1), seed))
    ints = np.array([1, 4, 2, 8])
    bools = np.array([True, False, False, True])
    for arr in (ints, bools):
        assert_same(pyrt.tensor(arr).diff(), torch.tensor(arr).diff())


def test_meshgrid_warns_without_indexing():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grids = pyrt.meshgrid(pyrt.ones(2), pyrt.ones(3))
    assert caught and caught[0].category is UserWarning
    assert [g.shape for g in grids] == [(2, 3), (2, 3)]


# ---- conversions and descriptions ------------------------------------------------------------


def test_conversions_and_descriptions():
    x = np.array([[-1.5, 0.0], [2.7, np.nan]], np.float32)
    p, q = pyrt.tensor(x), torch.tensor(x)
    assert_same(p[:1].int(), q[:1].int())  # (NaN has no integer value)
    assert_same(p.bool(), q.bool())
    assert_same(p.double(), q.double())
    assert p.double().dtype == np.float64 and p[:1].int().dtype == np.int32
    with pytest.raises(RuntimeError, match="float32 only"):
        pyrt.ones(2, requires_grad=True).double()
    assert pyrt.ones(2, requires_grad=True).detach().double().dtype == np.float64
    assert p.is_floating_point() and not pyrt.tensor([1]).is_floating_point()
    assert p.is_contiguous() and not pyrt.Tensor(x.T).is_contiguous()
    assert p.stride() == q.stride() and p.stride(1) == q.stride(1)
    assert pyrt.Tensor(x.T).stride() == q.t().stride()
    assert p.element_size() == q.element_size() == 4
    assert pyrt.tensor([1]).element_size() == 8
    assert p.nelement() == q.nelement() == 4


# ---- in-place random fills -------------------------------------------------------------------


def test_normal_and_uniform_fill_in_place_from_the_seeded_generator():
    pyrt.manual_seed(3)
    a = pyrt.zeros(2000)
    assert a.normal_(2.0, 0.5) is a
    pyrt.manual_seed(3)
    b = pyrt.zeros(2000).normal_(2.0, 0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert abs(a.numpy().mean() - 2.0) < 0.05 and abs(a.numpy().std() - 0.5) < 0.05
    u = pyrt.empty(2000).uniform_(-3, -1)
    assert u.numpy().min() >= -3 and u.numpy().max() < -1 and u.dtype == pyrt.float32
    assert abs(u.numpy().mean() + 2) < 0.1
    assert pyrt.empty(3, dtype=np.float64).uniform_().dtype == np.float64
    same_error(lambda: pyrt.ones(2).normal_(0, -1), lambda: torch.ones(2).normal_(0, -1),
               RuntimeError)
    same_error(lambda: pyrt.ones(2).uniform_(1, 0), lambda: torch.ones(2).uniform_(1, 0),
               RuntimeError)
    same_error(lambda: pyrt.tensor([1, 2]).normal_(), lambda: torch.tensor([1, 2]).normal_(),
               NotImplementedError)
    same_error(lambda: pyrt.ones(2, requires_grad=True).normal_(),
               lambda: torch.ones(2, requires_grad=True).normal_(), RuntimeError)
    w = pyrt.ones(2, requires_grad=True)
    with pyrt.no_grad():
        w.uniform_(0, 1)
    assert w.requires_grad and w.detach().numpy().max() < 1


def test_randperm_is_seeded():
    pyrt.manual_seed(5)
    a = pyrt.randperm(10)
    pyrt.manual_seed(5)
    b = pyrt.randperm(10)
    assert a.dtype == pyrt.int64 and sorted(a.tolist()) == list(range(10))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert pyrt.randperm(0).shape == (0,)
    assert pyrt.randperm(4, dtype=pyrt.float32).dtype == pyrt.float32


# ---- retain_grad and hooks -------------------------------------------------------------------


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = normal((3, 4))
    for lib in (pyrt, torch):
        leaf = lib.tensor(x, requires_grad=True)
        y = leaf * 2
        y.retain_grad()
        y.retain_grad()  # twice: still one gradient
        z = y.exp() + y  # two consumers: their gradients summed
        (z * lib.tensor(x)).sum().backward()
        if lib is pyrt:
            got = y.grad.numpy()
        else:
            np.testing.assert_allclose(got, y.grad.numpy(), rtol=1e-6)
    leaf = pyrt.tensor(x, requires_grad=True)
    leaf.retain_grad()  # a leaf keeps its gradient anyway
    s = (leaf * 3).sum()
    s.retain_grad()
    s.backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.full((3, 4), 3, np.float32))
    assert s.grad.item() == 1.0
    same_error(lambda: pyrt.ones(2).retain_grad(), lambda: torch.ones(2).retain_grad(),
               RuntimeError)
    # retained across two backward passes of a retained graph: summed, as in torch
    t = pyrt.ones(2, requires_grad=True)
    u = t * 2
    u.retain_grad()
    v = (u * u).sum()
    v.backward(retain_graph=True)
    v.backward()
    np.testing.assert_array_equal(u.grad.numpy(), [8.0, 8.0])


def test_register_hook_sees_and_replaces_the_gradient():
    seen = []
    for lib in (pyrt, torch):
        leaf = lib.ones(3, requires_grad=True)
        y = leaf * 2
        y.retain_grad()
        handle = y.register_hook(lambda g: g * 10)
        y.register_hook(lambda g, lib=lib: seen.append(g.detach().numpy().copy()))
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        np.testing.assert_allclose(leaf.grad.numpy(), [20.0, 40.0, 60.0])
        np.testing.assert_allclose(y.grad.numpy(), [10.0, 20.0, 30.0])
        handle.remove()
    np.testing.assert_allclose(seen[0], seen[1])
    with pytest.raises(RuntimeError):
        pyrt.ones(2).register_hook(print)
    with pytest.raises(TypeError, match="callable"):
        pyrt.ones(2, requires_grad=True).register_hook(3)


# ---- the top-level functions -----------------------------------------------------------------

TOP_LEVEL = [("square", ()), ("rsqrt", ()), ("erf", ()), ("logsumexp", (0,)), ("clip", (0, 1)),
             ("tril", ()), ("triu", (1,)), ("roll", (1, 0)), ("trunc", ()), ("frac", ()),
             ("fmod", (0.7,)), ("amax", (1,)), ("amin", ()), ("nansum", ()), ("cumprod", (1,)),
             ("median", ()), ("unbind", (1,)), ("narrow", (0, 1, 1)), ("movedim", (0, 1)),
             ("swapaxes", (0, 1)), ("unflatten", (1, (2, 2))), ("repeat_interleave", (2,)),
             ("diff", ()), ("neg", ()), ("reciprocal", ()), ("log2", ()), ("tan", ())]


@pytest.mark.parametrize("name,args", TOP_LEVEL)
def test_top_level_functions_match_torch(name, args):
    x = np.abs(normal((3, 4), len(name))) + 0.5
    against_torch(lambda t: getattr(pyrt if isinstance(t, pyrt.Tensor) else torch, name)(
        t, *args), x)
    with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
        getattr(pyrt, name)(x.tolist(), *args)


def test_ops_mix_with_existing_ones_through_autograd():
    x = normal((4, 5), 1)
    against_torch(lambda t: (t.square().logsumexp(1) * t.amax(1)).cumprod(0), x,
                  rtol=1e-4, atol=1e-5)
    against_torch(lambda t: t.tril().roll(2, 1).narrow(0, 1, 2).movedim(0, 1).erf(), x)
    assert math.isfinite(pyrt.tensor(x).logsumexp((0, 1)).item())
