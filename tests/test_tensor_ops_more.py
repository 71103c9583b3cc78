"""More of PyTorch's Tensor interface, each op run on pyrt and on torch and compared: values,
dtypes, shapes and the gradients of sum(out * w) for fixed random weights w, over many shapes
and dims (hypothesis); then PyTorch's errors for bad input."""

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.functional import maximum, minimum
from pyrt.tensor import (
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    ones_like,
    rand_like,
    randint,
    randn_like,
    zeros_like,
)

torch = pytest.importorskip("torch")

SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
EXAMPLES = settings(max_examples=40, deadline=None, derandomize=True)


def normal(shape, seed=0):
    """Seeded float32 normal numbers of `shape`."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def distinct(shape, seed=0):
    """float32 values of `shape`, all different: one answer for sort, topk and argmin."""
    n = math.prod(shape)
    return (np.random.default_rng(seed).permutation(n).reshape(shape) - n / 2).astype(
        np.float32)


def torch_dtype_name(t):
    return str(t.detach().numpy().dtype)


def assert_same(yp, yq, rtol=1e-5, atol=1e-6):
    """pyrt's result `yp` and torch's `yq` agree in shape, dtype and values."""
    assert tuple(yp.shape) == tuple(yq.shape)
    assert str(yp.dtype) == torch_dtype_name(yq)
    expected = yq.detach().numpy()
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(yp.detach().numpy(), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(yp.detach().numpy(), expected)


def grad_or_zeros(t, shape):
    # torch's zero gradients (sign's) are ZeroTensors, which .numpy() refuses without force
    if t.grad is None:
        return np.zeros(shape, np.float32)
    return t.grad.numpy(force=True) if isinstance(t, torch.Tensor) else t.grad.numpy()


def against_torch(fn, *arrays, seed=0, rtol=1e-5, atol=1e-6, fn_torch=None):
    """Run fn on pyrt leaves and (fn_torch, or fn) on torch leaves made of `arrays`; compare
    the results and the gradients of sum(out * w), w fixed random weights that tell every
    output element apart. fn may return a tensor or a sequence of them (all weighted)."""
    ps = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    qs = [torch.tensor(a, requires_grad=True) for a in arrays]
    yp, yq = fn(*ps), (fn_torch or fn)(*qs)
    single = not isinstance(yq, (tuple, list))
    yp, yq = ([yp], [yq]) if single else (list(yp), list(yq))
    assert len(yp) == len(yq)
    rng = np.random.default_rng(seed)
    loss_p, loss_q = 0, 0
    for a, b in zip(yp, yq):
        assert_same(a, b, rtol, atol)
        assert a.requires_grad == b.requires_grad
        w = rng.standard_normal(b.shape).astype(np.float32)
        loss_p = (a * pyrt.tensor(w)).sum() + loss_p
        loss_q = (b * torch.tensor(w)).sum() + loss_q
    if any(a.requires_grad for a in yp):
        loss_p.backward()
    if loss_q.requires_grad:
        loss_q.backward()
    for p, q in zip(ps, qs):
        np.testing.assert_allclose(grad_or_zeros(p, p.shape), grad_or_zeros(q, q.shape),
                                   rtol=rtol * 10, atol=atol * 10)
    return yp


def same_error(call_pyrt, call_torch, error):
    """Both calls raise `error` (an exception class), as PyTorch's type."""
    with pytest.raises(error):
        call_torch()
    with pytest.raises(error):
        call_pyrt()


# ---- elementwise functions -------------------------------------------------------------------

UNARY = ["log1p", "expm1", "sin", "cos", "round", "floor", "ceil", "sign", "sgn"]


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_unary_functions_and_their_gradients(shape, seed):
    x = normal(shape, seed) * 3
    for name in UNARY:
        values = np.maximum(x, np.float32(-0.99)) if name == "log1p" else x  # log1p: x > -1
        against_torch(lambda t, n=name: getattr(t, n)(), values, seed=seed)
    # halves round to even, both ways
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], np.float32)
    against_torch(lambda t: t.round(), halves)


def test_sign_of_zeros_nan_integers_and_bools_as_torch():
    special = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 2.0, -3.0], np.float32)
    against_torch(lambda t: t.sign(), special)
    against_torch(lambda t: t.sgn(), special)
    assert_same(pyrt.sign(pyrt.tensor([3, -2, 0])), torch.sign(torch.tensor([3, -2, 0])))
    assert_same(pyrt.sgn(pyrt.tensor([True, False])), torch.sgn(torch.tensor([True, False])))
    with pytest.raises(TypeError, match="'input' must be a Tensor"):
        pyrt.sign([1.0])


def test_abs_and_l1_loss_gradients_at_nan_and_zero_as_torch():
    """Their gradient is the sign: 0 where the value (or difference) is 0 or nan."""
    x = np.array([np.nan, 0.0, 1.5, -2.0], np.float32)
    target = np.array([0.0, 0.0, 1.5, 1.0], np.float32)
    against_torch(lambda t: t.abs(), x)
    against_torch(lambda a, b: pyrt.nn.functional.l1_loss(a, b),
                  x, target, fn_torch=lambda a, b: torch.nn.functional.l1_loss(a, b))


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_std_of_values_whose_variance_overflows_float32(dim):
    """Deviations past 1.8e19 square beyond float32; the root of their mean need not: std
    is finite as torch's (which accumulates in double), var inf, the gradient finite."""
    x = np.array([[1e20, -1e20, 3e19], [1.0, 2.0, 3.0]], np.float32)
    (got,) = against_torch(lambda t: t.std(dim, keepdim=True), x, rtol=1e-5, atol=0)
    assert np.isfinite(got.detach().numpy()).all()
    assert_same(pyrt.tensor(x).var(dim), torch.tensor(x).var(dim))


@pytest.mark.parametrize("correction", [math.nan, 2, 5.5])
def test_var_and_std_without_degrees_of_freedom_are_inf_with_a_warning(correction):
    x = np.array([1.0, 2.0], np.float32)
    for name in ("var", "std"):
        with pytest.warns(UserWarning, match=f"{name}\\(\\): degrees of freedom"):
            got = getattr(pyrt.tensor(x), name)(correction=correction)
        with warnings.catch_warnings():  # torch warns for a whole correction, not for nan
            warnings.simplefilter("ignore", UserWarning)
            want = getattr(torch.tensor(x), name)(correction=correction)
        assert_same(got, want)


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_to_decimals(decimals):
    x = normal((50,), 3) * 200
    against_torch(lambda t: t.round(decimals=decimals), x)


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_of_integers_and_bools(name):
    ints = np.array([[5, -3, 0], [7, 1, -1]])
    bools = np.array([True, False, True])
    for data in (ints, bools):
        p, q = pyrt.tensor(data), torch.tensor(data)
        if name in ("round", "floor", "ceil") and data.dtype == bool:
            same_error(getattr(p, name), getattr(q, name), NotImplementedError)
            continue
        if name == "log1p" and data.dtype != bool:  # nan below -1, in both
            np.testing.assert_array_equal(np.isnan(getattr(p, name)().numpy()),
                                          np.isnan(getattr(q, name)().numpy()))
            continue
        out = getattr(p, name)()
        assert_same(out, getattr(q, name)())
        assert not out.requires_grad


def test_special_values_of_unary_functions():
    x = np.array([-1.0, 0.0, np.inf, -np.inf, np.nan, 1e-10], np.float32)
    for name in ("log1p", "expm1", "sin", "cos", "floor", "ceil", "round"):
        p, q = getattr(pyrt.tensor(x), name)(), getattr(torch.tensor(x), name)()
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, equal_nan=True)
    # d/dx log1p at x = -1 is inf, as torch's
    against_torch(lambda t: t.log1p(), np.array([-1.0, 0.5], np.float32))


def test_unary_functions_refuse_what_is_not_a_tensor():
    from pyrt import functional as F

    for name in UNARY:
        with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
            getattr(F, name)(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="decimals must be an int"):
        pyrt.tensor([1.5]).round(decimals=1.5)
    same_error(lambda: pyrt.tensor([1, 2]).round(decimals=1),
               lambda: torch.tensor([1, 2]).round(decimals=1), NotImplementedError)


# ---- maximum and minimum ---------------------------------------------------------------------

BROADCAST_PAIRS = st.sampled_from([
    ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)), ((4,), (2, 3, 4)), ((2, 3), (2, 3)),
    ((), (3,)), ((1,), (2, 2)),
])


@EXAMPLES
@given(shapes=BROADCAST_PAIRS, seed=st.integers(0, 100))
def test_maximum_and_minimum_with_ties_and_broadcasting(shapes, seed):
    rng = np.random.default_rng(seed)
    # small integers as floats: many ties, where each side gets half the gradient
    a = rng.integers(-2, 3, shapes[0]).astype(np.float32)
    b = rng.integers(-2, 3, shapes[1]).astype(np.float32)
    against_torch(maximum, a, b, fn_torch=torch.maximum, seed=seed)
    against_torch(minimum, a, b, fn_torch=torch.minimum, seed=seed)


def test_maximum_promotes_and_propagates_nan():
    f = np.array([1.5, np.nan, -2.0], np.float32)
    g = np.array([np.nan, 1.0, -3.0], np.float32)
    for fp, ft in ((maximum, torch.maximum), (minimum, torch.minimum)):
        assert_same(fp(pyrt.tensor(f), pyrt.tensor(g)), ft(torch.tensor(f), torch.tensor(g)))
        for a, b in ((np.array([1, -5, 3]), f), (np.array([True, False, True]),
                                                 np.array([2, -1, 0])),
                     (np.array([True, False]), np.array([False, False]))):
            out = fp(pyrt.tensor(a), pyrt.tensor(b))
            assert_same(out, ft(torch.tensor(a), torch.tensor(b)))
            assert not out.requires_grad


def test_maximum_errors():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="argument 'other' must be a Tensor"):
        maximum(x, 1.0)
    with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
        minimum([1.0], x)
    same_error(lambda: maximum(x, pyrt.ones(3)), lambda: torch.maximum(torch.ones(2),
                                                                       torch.ones(3)),
               RuntimeError)


# ---- reductions: cumsum, prod, norm, argmin --------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_cumsum_along_each_dim(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    seed = data.draw(st.integers(0, 100))
    against_torch(lambda t: t.cumsum(dim), normal(shape, seed), seed=seed)
    against_torch(lambda t: t.cumsum(dim=dim), normal(shape, seed), seed=seed)
    ints = np.random.default_rng(seed).integers(-5, 6, shape)
    assert_same(pyrt.tensor(ints).cumsum(dim), torch.tensor(ints).cumsum(dim))
    bools = ints > 0
    assert_same(pyrt.tensor(bools).cumsum(dim), torch.tensor(bools).cumsum(dim))
    assert_same(pyrt.tensor(ints).cumsum(dim, dtype=pyrt.float32),
                torch.tensor(ints).cumsum(dim, dtype=torch.float32))


def test_cumsum_of_0d_and_empty_tensors_and_errors():
    against_torch(lambda t: t.cumsum(0), np.float32(2.5))
    against_torch(lambda t: t.cumsum(-1), np.float32(2.5))
    against_torch(lambda t: t.cumsum(1), np.zeros((2, 0), np.float32))
    same_error(lambda: pyrt.ones(2, 3).cumsum(2), lambda: torch.ones(2, 3).cumsum(2),
               IndexError)
    with pytest.raises(TypeError, match="dim must be an int"):
        pyrt.ones(3).cumsum(None)


def with_zeros(shape, seed, zeros):
    """Normal numbers with `zeros` of them set to 0 (at seeded places)."""
    x = normal(shape, seed).ravel()
    x[np.random.default_rng(seed + 1).permutation(x.size)[:zeros]] = 0
    return x.reshape(shape)


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_prod_and_its_gradient_with_zeros(shape, data):
    seed = data.draw(st.integers(0, 100))
    zeros = data.draw(st.integers(0, 3))
    x = with_zeros(shape, seed, zeros)
    against_torch(lambda t: t.prod(), x, seed=seed, rtol=1e-4)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    against_torch(lambda t: t.prod(dim, keepdim), x, seed=seed, rtol=1e-4)
    ints = np.random.default_rng(seed).integers(-3, 4, shape)
    assert_same(pyrt.tensor(ints).prod(dim, keepdim), torch.tensor(ints).prod(dim, keepdim))
    assert_same(pyrt.tensor(ints > 0).prod(), torch.tensor(ints > 0).prod())


def test_prod_gradient_at_zeros_exactly():
    # one zero: its gradient is the product of the others, the others' gradients are 0;
    # two zeros: every gradient is 0
    x = pyrt.tensor([[2.0, 0.0, 3.0], [0.0, 5.0, 0.0]], requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 6, 0], [0, 0, 0]])
    against_torch(lambda t: t.prod(), np.float32(3.0))
    against_torch(lambda t: t.prod(0, True), np.float32(3.0))
    against_torch(lambda t: t.prod(1), np.zeros((2, 0), np.float32))
    same_error(lambda: pyrt.ones(2).prod(1), lambda: torch.ones(2).prod(1), IndexError)


NORM_ORDERS = [1, 2, 3, 0.5, 1.5, 2.5, -1, math.inf, -math.inf, 0, "fro"]


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_norm_over_dims(shape, data):
    seed = data.draw(st.integers(0, 100))
    p = data.draw(st.sampled_from(NORM_ORDERS))
    keepdim = data.draw(st.booleans())
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    x = distinct(shape, seed) / 3  # distinct magnitudes but for the sign: one max per slice
    x[x == 0] = 0.25
    against_torch(lambda t: t.norm(p), x, seed=seed, rtol=1e-4)
    if p != "fro" or len(dims) <= 2:
        against_torch(lambda t: t.norm(p, dims, keepdim), x, seed=seed, rtol=1e-4)
    if dims:
        against_torch(lambda t: t.norm(p, dims[0], keepdim), x, seed=seed, rtol=1e-4)


@pytest.mark.parametrize("p", [1, 2, 3, 1.5, 0.5, math.inf, 0])
def test_norm_gradient_at_zero(p):
    # as torch: 0 where the norm is 0 (p >= 1), and where an element is 0 (p < 1)
    x = np.array([[0.0, 0.0, 0.0], [0.0, 2.0, -1.0]], np.float32)
    against_torch(lambda t: t.norm(p, 1), x)
    against_torch(lambda t: t.norm(p), np.zeros(3, np.float32))


def test_norm_ties_share_the_gradient_for_inf():
    x = np.array([3.0, -3.0, 1.0], np.float32)
    against_torch(lambda t: t.norm(math.inf), x)
    against_torch(lambda t: t.norm(-math.inf), np.array([1.0, -1.0, 2.0], np.float32))


def test_norm_errors():
    same_error(lambda: pyrt.tensor([1, 2]).norm(), lambda: torch.tensor([1, 2]).norm(),
               RuntimeError)
    same_error(lambda: pyrt.zeros(0).norm(math.inf), lambda: torch.zeros(0).norm(math.inf),
               RuntimeError)
    same_error(lambda: pyrt.zeros(2, 0).norm(math.inf, 1),
               lambda: torch.zeros(2, 0).norm(math.inf, 1), RuntimeError)
    assert pyrt.zeros(2, 0).norm(math.inf, 0).shape == (0,)
    for bad in ("nuc", "abc", [2], True):
        with pytest.raises(TypeError, match="p must be a real number"):
            pyrt.ones(2).norm(bad)
    with pytest.raises(ValueError, match="nan"):
        pyrt.ones(2).norm(math.nan)
    same_error(lambda: pyrt.ones(2).norm(2, 1), lambda: torch.ones(2).norm(2, 1), IndexError)


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_argmin(shape, data):
    seed = data.draw(st.integers(0, 100))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    x = distinct(shape, seed)
    ints = np.random.default_rng(seed).integers(-2, 3, shape)  # ties: the first minimum
    for data_ in (x, ints):
        p, q = pyrt.tensor(data_), torch.tensor(data_)
        assert_same(p.argmin(), q.argmin())
        assert_same(p.argmin(dim, keepdim), q.argmin(dim, keepdim))
        assert_same(p.argmin(keepdim=True), q.argmin(keepdim=True))


def test_argmin_special_cases():
    x = np.array([1.0, np.nan, 0.0, np.nan], np.float32)
    assert pyrt.tensor(x).argmin().item() == torch.tensor(x).argmin().item() == 1
    assert_same(pyrt.tensor(3.0).argmin(0), torch.tensor(3.0).argmin(0))
    assert_same(pyrt.tensor(3.0).argmin(0, True), torch.tensor(3.0).argmin(0, True))
    assert not pyrt.ones(3, requires_grad=True).argmin().requires_grad
    same_error(lambda: pyrt.tensor([True]).argmin(), lambda: torch.tensor([True]).argmin(),
               RuntimeError)
    same_error(lambda: pyrt.zeros(0).argmin(), lambda: torch.zeros(0).argmin(), IndexError)
    same_error(lambda: pyrt.zeros(2, 0).argmin(1), lambda: torch.zeros(2, 0).argmin(1),
               IndexError)
    same_error(lambda: pyrt.zeros(2).argmin(1), lambda: torch.zeros(2).argmin(1), IndexError)


# ---- sort and topk ---------------------------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_sort_values_indices_and_gradient(shape, data):
    seed = data.draw(st.integers(0, 100))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    descending = data.draw(st.booleans())
    x = distinct(shape, seed)
    out = against_torch(lambda t: tuple(t.sort(dim, descending)), x, seed=seed)
    assert out[1].dtype == np.int64 and not out[1].requires_grad
    # ties: stable in both directions, as torch's stable sort
    ints = np.random.default_rng(seed).integers(-2, 3, shape)
    for data_ in (ints, ints > 0):
        got = pyrt.tensor(data_).sort(dim, descending)
        want = torch.tensor(data_).sort(dim=dim, descending=descending, stable=True)
        assert_same(got.values, want.values)
        assert_same(got.indices, want.indices)


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_topk_values_indices_and_gradient(shape, data):
    seed = data.draw(st.integers(0, 100))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, shape[dim]))
    largest = data.draw(st.booleans())
    x = distinct(shape, seed)
    against_torch(lambda t: tuple(t.topk(k, dim, largest)), x, seed=seed)
    ints = np.random.default_rng(seed).permutation(math.prod(shape)).reshape(shape)
    got, want = pyrt.tensor(ints).topk(k, dim, largest), torch.tensor(ints).topk(k, dim,
                                                                                  largest)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)


def test_sort_and_topk_results_are_named_as_torch():
    x = pyrt.tensor([3.0, 1.0, 2.0])
    result = x.sort()
    assert type(result).__name__ == "sort" and result.values is result[0]
    assert result.indices is result[1]
    result = x.topk(2)
    assert type(result).__name__ == "topk" and result.values.tolist() == [3.0, 2.0]
    assert result.indices.tolist() == [0, 2]
    assert x.topk(2, sorted=False).values.tolist() == [3.0, 2.0]
    assert x.sort(stable=True).indices.tolist() == [1, 2, 0]


def test_sort_and_topk_special_cases():
    x = np.array([1.0, np.nan, 0.0, -np.inf, np.nan], np.float32)
    for descending in (False, True):  # nan counts as the largest value
        got = pyrt.tensor(x).sort(descending=descending)
        want = torch.tensor(x).sort(descending=descending, stable=True)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    for largest in (False, True):
        got = pyrt.tensor(x).topk(2, largest=largest)
        want = torch.tensor(x).topk(2, largest=largest)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    for k in (0, 1):  # a 0-d tensor gives itself
        got, want = pyrt.tensor(3.0).topk(k), torch.tensor(3.0).topk(k)
        assert_same(got.values, want.values)
        assert_same(got.indices, want.indices)
    against_torch(lambda t: tuple(t.sort()), np.float32(2.0))
    against_torch(lambda t: tuple(t.sort(1)), np.zeros((2, 0), np.float32))
    against_torch(lambda t: tuple(t.topk(0, 1)), np.zeros((2, 0), np.float32))


def test_topk_errors():
    x, q = pyrt.tensor([1.0, 2.0, 0.0]), torch.tensor([1.0, 2.0, 0.0])
    same_error(lambda: x.topk(4), lambda: q.topk(4), RuntimeError)
    same_error(lambda: x.topk(-1), lambda: q.topk(-1), RuntimeError)
    same_error(lambda: x.topk(1.5), lambda: q.topk(1.5), TypeError)
    same_error(lambda: x.topk(1, 1), lambda: q.topk(1, 1), IndexError)
    b = np.array([True, False])
    same_error(lambda: pyrt.tensor(b).topk(1), lambda: torch.tensor(b).topk(1), RuntimeError)
    same_error(lambda: x.sort(2), lambda: q.sort(2), IndexError)


# ---- expand, repeat, split, chunk ------------------------------------------------------------


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_expand_and_expand_as(shape, data):
    seed = data.draw(st.integers(0, 100))
    # some dims of size 1 to stretch
    ones = data.draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    shape = tuple(1 if one else n for one, n in zip(ones, shape))
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(data.draw(st.integers(1, 3)) if n == 1 else
                          data.draw(st.sampled_from([n, -1])) for n in shape)
    x = normal(shape, seed)
    out = against_torch(lambda t: t.expand(*target), x, seed=seed)
    assert out[0]._data.flags.c_contiguous and out[0]._data.flags.writeable
    against_torch(lambda t: t.expand(target), x, seed=seed)
    full_shape = tuple(torch.empty(shape).expand(*target).shape)
    against_torch(lambda t: t.expand_as(type_of(t).zeros(full_shape)), x, seed=seed)


def type_of(t):
    """The library of tensor t: pyrt or torch."""
    return pyrt if isinstance(t, pyrt.Tensor) else torch


def test_expand_errors():
    x, q = pyrt.ones(2, 3), torch.ones(2, 3)
    for sizes in ((2, 4), (3,), (-1, 2, 3)):
        same_error(lambda s=sizes: x.expand(*s), lambda s=sizes: q.expand(*s), RuntimeError)
    with pytest.raises(RuntimeError, match="sizes must be non-negative"):
        x.expand(2, -2)
    same_error(lambda: x.expand(2.0, 3), lambda: q.expand(2.0, 3), TypeError)
    same_error(lambda: x.expand_as([1]), lambda: q.expand_as([1]), TypeError)
    assert_same(pyrt.ones(2, 1).expand(2, 0), torch.ones(2, 1).expand(2, 0))
    assert_same(pyrt.tensor([1, 2]).expand(3, 2), torch.tensor([1, 2]).expand(3, 2))


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_repeat(shape, data):
    seed = data.draw(st.integers(0, 100))
    extra = data.draw(st.integers(0, 2))
    sizes = tuple(data.draw(st.lists(st.integers(0, 3), min_size=len(shape) + extra,
                                     max_size=len(shape) + extra)))
    x = normal(shape, seed)
    against_torch(lambda t: t.repeat(*sizes), x, seed=seed)
    against_torch(lambda t: t.repeat(sizes), x, seed=seed)
    ints = np.arange(math.prod(shape)).reshape(shape)
    assert_same(pyrt.tensor(ints).repeat(*sizes), torch.tensor(ints).repeat(*sizes))


def test_repeat_special_cases_and_errors():
    against_torch(lambda t: t.repeat(3), np.float32(1.5))
    against_torch(lambda t: t.repeat(()), np.float32(1.5))
    x, q = pyrt.ones(2, 3), torch.ones(2, 3)
    same_error(lambda: x.repeat(2), lambda: q.repeat(2), RuntimeError)
    same_error(lambda: x.repeat(2, -1), lambda: q.repeat(2, -1), RuntimeError)
    same_error(lambda: x.repeat(), lambda: q.repeat(), TypeError)
    with pytest.raises(TypeError, match="sizes must be ints"):
        x.repeat(2, 1.5)


@EXAMPLES
@given(shape=st.lists(st.integers(0, 7), min_size=1, max_size=3).map(tuple), data=st.data())
def test_split_and_chunk(shape, data):
    seed = data.draw(st.integers(0, 100))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[dim]
    x = normal(shape, seed)
    size = data.draw(st.integers(1 if n else 0, 8))
    against_torch(lambda t: t.split(size, dim), x, seed=seed)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    sections = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
    against_torch(lambda t: t.split(sections, dim), x, seed=seed)
    chunks = data.draw(st.integers(1, 8))
    against_torch(lambda t: t.chunk(chunks, dim), x, seed=seed)
    against_torch(lambda t: t.chunk(chunks, dim=dim), x, seed=seed)


def test_split_and_chunk_errors():
    x, q = pyrt.zeros(3), torch.zeros(3)
    for bad in (0, -1, [1, 1], [-1, 4]):
        same_error(lambda b=bad: x.split(b), lambda b=bad: q.split(b), RuntimeError)
    same_error(lambda: x.chunk(0), lambda: q.chunk(0), RuntimeError)
    same_error(lambda: x.chunk(2.0), lambda: q.chunk(2.0), TypeError)
    same_error(lambda: x.split(1.0), lambda: q.split(1.0), TypeError)
    same_error(lambda: x.split(1, 1), lambda: q.split(1, 1), IndexError)
    same_error(lambda: pyrt.tensor(1.0).chunk(1), lambda: torch.tensor(1.0).chunk(1),
               RuntimeError)
    same_error(lambda: pyrt.tensor(1.0).split(1), lambda: torch.tensor(1.0).split(1),
               RuntimeError)
    assert len(pyrt.zeros(0).chunk(3)) == len(torch.zeros(0).chunk(3)) == 3


# ---- masked_fill and gather ------------------------------------------------------------------


@EXAMPLES
@given(shapes=BROADCAST_PAIRS, data=st.data())
def test_masked_fill(shapes, data):
    seed = data.draw(st.integers(0, 100))
    x_shape, mask_shape = shapes if data.draw(st.booleans()) else shapes[::-1]
    mask = np.random.default_rng(seed).random(mask_shape) < 0.5
    value = data.draw(st.sampled_from([0.0, -1.5, 3, True]))
    x = normal(x_shape, seed)
    against_torch(lambda t: t.masked_fill(type_of(t).tensor(mask), value), x, seed=seed)
    # a 0-d value tensor gets the gradient of the places it fills
    against_torch(lambda t, v: t.masked_fill(type_of(t).tensor(mask), v), x,
                  np.float32(value), seed=seed)
    ints = np.random.default_rng(seed).integers(-5, 5, x_shape)
    for fill in (2.7, -2.7, 4, True):  # converted toward zero, as torch converts
        assert_same(pyrt.tensor(ints).masked_fill(pyrt.tensor(mask), fill),
                    torch.tensor(ints).masked_fill(torch.tensor(mask), fill))
    assert_same(pyrt.tensor(ints > 0).masked_fill(pyrt.tensor(mask), 5),
                torch.tensor(ints > 0).masked_fill(torch.tensor(mask), 5))


def test_masked_fill_errors():
    x, q = pyrt.zeros(3), torch.zeros(3)
    m, mq = pyrt.tensor([True, False, True]), torch.tensor([True, False, True])
    same_error(lambda: x.masked_fill(pyrt.ones(3), 1), lambda: q.masked_fill(torch.ones(3), 1),
               RuntimeError)
    same_error(lambda: x.masked_fill(pyrt.tensor([1, 0, 1]), 1),
               lambda: q.masked_fill(torch.tensor([1, 0, 1]), 1), RuntimeError)
    same_error(lambda: x.masked_fill(m, pyrt.ones(1)), lambda: q.masked_fill(mq, torch.ones(1)),
               RuntimeError)
    same_error(lambda: x.masked_fill(m, "a"), lambda: q.masked_fill(mq, "a"), TypeError)
    same_error(lambda: x.masked_fill(m, None), lambda: q.masked_fill(mq, None), TypeError)
    same_error(lambda: pyrt.zeros(2, 3).masked_fill(pyrt.ones(4, 1, dtype=pyrt.bool_), 1),
               lambda: torch.zeros(2, 3).masked_fill(torch.ones(4, 1, dtype=torch.bool), 1),
               RuntimeError)
    ints, qints = pyrt.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    for fill in (1e40, math.nan):
        same_error(lambda v=fill: ints.masked_fill(m, v),
                   lambda v=fill: qints.masked_fill(mq, v), RuntimeError)
    same_error(lambda: x.masked_fill(m, 1e40), lambda: q.masked_fill(mq, 1e40), RuntimeError)
    with pytest.raises(TypeError, match="'mask' must be a bool Tensor"):
        x.masked_fill(np.array([True, False, True]), 1.0)


@EXAMPLES
@given(shape=SHAPES, data=st.data())
def test_gather(shape, data):
    seed = data.draw(st.integers(0, 100))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    at = dim % len(shape)
    # no larger than x but along dim, where it may be any length; indices repeat
    index_shape = tuple(data.draw(st.integers(0, 5)) if d == at else data.draw(
        st.integers(1, n)) for d, n in enumerate(shape))
    index = np.random.default_rng(seed).integers(0, shape[at], index_shape)
    x = normal(shape, seed)
    against_torch(lambda t: t.gather(dim, type_of(t).tensor(index)), x, seed=seed)
    ints = np.arange(math.prod(shape)).reshape(shape)
    assert_same(pyrt.tensor(ints).gather(dim, pyrt.tensor(index)),
                torch.tensor(ints).gather(dim, torch.tensor(index)))


def test_gather_special_cases_and_errors():
    against_torch(lambda t: t.gather(0, type_of(t).tensor(0)), np.float32(2.0))
    against_torch(lambda t: t.gather(0, type_of(t).tensor([0, 0])), np.float32(2.0))
    i32 = np.array([[0], [2]], np.int32)
    against_torch(lambda t: t.gather(1, type_of(t).tensor(i32)), normal((2, 3)))
    x, q = pyrt.ones(2, 3), torch.ones(2, 3)
    for index, error in (([[0], [3]], RuntimeError), ([[0], [-1]], RuntimeError),
                         ([0, 1], RuntimeError), (np.zeros((3, 1), np.int64), RuntimeError),
                         ([[0.0], [1.0]], RuntimeError)):
        same_error(lambda i=index: x.gather(1, pyrt.tensor(np.array(i))),
                   lambda i=index: q.gather(1, torch.tensor(np.array(i))), error)
    same_error(lambda: x.gather(1, [[0]]), lambda: q.gather(1, [[0]]), TypeError)
    same_error(lambda: x.gather(2, pyrt.tensor([[0]])), lambda: q.gather(2, torch.tensor([[0]])),
               IndexError)


def test_gather_keeps_its_index_for_backward():
    x = pyrt.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    index = pyrt.tensor([[2, 2]])
    y = x.gather(1, index)
    index[0, 0] = 0  # a later write to the index does not move the gradient
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 2]])


# ---- operators: // % & | ^ ~ and number ** tensor ---------------------------------------------

OPERANDS = [
    np.array([[7.5, -7.5, 2.0], [-0.5, 3.25, -9.0]], np.float32),
    np.array([[7, -7, 0], [-1, 12, -9]]),
    np.array([[True, False, True], [False, False, True]]),
]
DIVISORS = [np.array([2.5, -1.5, 4.0], np.float32), np.array([3, -4, 2]), 2, -3, 1.5, -0.75]


@pytest.mark.parametrize("op", [operator.floordiv, operator.mod])
def test_floor_division_and_remainder_as_torch(op):
    for a in OPERANDS:
        for b in DIVISORS:
            if a.dtype == bool and isinstance(b, np.ndarray) and b.dtype == bool:
                continue
            wrap_p = pyrt.tensor if isinstance(b, np.ndarray) else (lambda v: v)
            wrap_q = torch.tensor if isinstance(b, np.ndarray) else (lambda v: v)
            got = op(pyrt.tensor(a), wrap_p(b))
            assert_same(got, op(torch.tensor(a), wrap_q(b)))
            assert not got.requires_grad
            if isinstance(b, np.ndarray) and 0 not in a:  # the other way round
                assert_same(op(pyrt.tensor(b), pyrt.tensor(a)),
                            op(torch.tensor(b), torch.tensor(a)))
    for number in (7, -7.5, 3):  # a number on the left: the reflected operator
        for b in DIVISORS[:2]:
            assert_same(op(number, pyrt.tensor(b)), op(number, torch.tensor(b)))


@EXAMPLES
@given(shapes=BROADCAST_PAIRS, seed=st.integers(0, 100))
def test_remainder_gradient_and_floor_divide_values(shapes, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shapes[0]) * 5).astype(np.float32)
    b = rng.uniform(0.5, 3, shapes[1]).astype(np.float32) * rng.choice([-1, 1], shapes[1])
    b = b.astype(np.float32)
    against_torch(lambda s, t: s % t, a, b, seed=seed)
    against_torch(lambda s: s % 1.25, a, seed=seed)
    # number % tensor: torch has no derivative of that form; its tensor % tensor twin has one
    against_torch(lambda t: 3.5 % t, b, seed=seed,
                  fn_torch=lambda t: torch.full_like(t, 3.5) % t)
    p, q = pyrt.tensor(a) // pyrt.tensor(b), torch.tensor(a) // torch.tensor(b)
    assert_same(p, q)


def test_floor_division_and_remainder_errors():
    a, q = pyrt.tensor([5, 0]), torch.tensor([5, 0])
    for op in (operator.floordiv, operator.mod):  # integer division by zero
        same_error(lambda o=op: o(pyrt.tensor([1, 2]), a),
                   lambda o=op: o(torch.tensor([1, 2]), q), RuntimeError)
        same_error(lambda o=op: o(7, a), lambda o=op: o(7, q), RuntimeError)
        same_error(lambda o=op: o(a, 0), lambda o=op: o(q, 0), RuntimeError)
        assert_same(op(a, 2), op(q, 2))
    b, bq = pyrt.tensor([True, False]), torch.tensor([True, False])
    same_error(lambda: b // b, lambda: bq // bq, NotImplementedError)
    same_error(lambda: b % b, lambda: bq % bq, NotImplementedError)
    same_error(lambda: pyrt.ones(2) // pyrt.ones(3), lambda: torch.ones(2) // torch.ones(3),
               RuntimeError)
    with pytest.raises(TypeError):
        pyrt.ones(2) // "a"
    # float division by zero: inf and nan, as torch gives
    x = np.array([-2.5, 3.5, 0.0], np.float32)
    assert_same(pyrt.tensor(x) // 0, torch.tensor(x) // 0)
    assert_same(pyrt.tensor(x) % 0, torch.tensor(x) % 0)  # nan, compared as equal
    # floor_divide has no derivative in torch, nor in pyrt
    x = pyrt.tensor([1.5, 2.5], requires_grad=True)
    y = x // 2
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative for floor_divide is not implemented"):
        y.sum().backward()


@pytest.mark.parametrize("op", ["__and__", "__or__", "__xor__"])
def test_bitwise_operators_as_torch(op):
    ints = np.array([[6, -3, 0], [5, 12, -1]])
    bools = np.array([[True, False, True], [False, True, True]])
    operands = [ints, bools, np.array([3, 0, -2]), np.array([True, False, False])]
    for a in operands:
        for b in operands:
            assert_same(getattr(pyrt.tensor(a), op)(pyrt.tensor(b)),
                        getattr(torch.tensor(a), op)(torch.tensor(b)))
        for number in (5, -2, True, False):
            assert_same(getattr(pyrt.tensor(a), op)(number), getattr(torch.tensor(a), op)(number))
            reflected = "__r" + op[2:]
            assert_same(getattr(pyrt.tensor(a), reflected)(number),
                        getattr(torch.tensor(a), reflected)(number))
    f, fq = pyrt.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    same_error(lambda: getattr(f, op)(f), lambda: getattr(fq, op)(fq), NotImplementedError)
    same_error(lambda: getattr(pyrt.tensor([1, 2]), op)(1.5),
               lambda: getattr(torch.tensor([1, 2]), op)(1.5), NotImplementedError)
    with pytest.raises(TypeError):
        getattr(pyrt.tensor([1, 2]), op)("a")


def test_invert():
    for data in (np.array([[6, -3, 0]]), np.array([True, False])):
        assert_same(~pyrt.tensor(data), ~torch.tensor(data))
    same_error(lambda: ~pyrt.tensor([1.0]), lambda: ~torch.tensor([1.0]), TypeError)
    mask = pyrt.tensor([1.0, -2.0, 3.0]) > 0
    assert (~mask).tolist() == [False, True, False]
    assert (mask & ~mask).tolist() == [False] * 3 and (mask | ~mask).tolist() == [True] * 3


@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), base=st.sampled_from([2, 0.5, 3.0, 10, 1]))
def test_number_to_the_power_of_a_tensor(shape, seed, base):
    x = normal(shape, seed) * 2
    against_torch(lambda t: base ** t, x, seed=seed, rtol=1e-4)


def test_rpow_special_cases():
    # base 0: the gradient is 0 where the exponent is >= 0, as torch's (formula: 0 * -inf)
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    against_torch(lambda t: 0 ** t, x)
    against_torch(lambda t: 0.0 ** t, x)
    y = np.array([1.5, 2.0], np.float32)
    p, q = pyrt.tensor(y, requires_grad=True), torch.tensor(y, requires_grad=True)
    ((-2) ** p).sum().backward()
    ((-2) ** q).sum().backward()
    np.testing.assert_array_equal(np.isnan(p.grad.numpy()), np.isnan(q.grad.numpy()))
    ints = np.array([0, 3, 5])
    for base in (2, True, 2.5, -3):
        assert_same(base ** pyrt.tensor(ints), base ** torch.tensor(ints))
    assert_same(2 ** pyrt.tensor([True, False]), 2 ** torch.tensor([True, False]))
    exponents = np.array([-3, -2, -1, 0, 1, 2])  # negative: 1 / base ** -x toward zero
    for base in (0, 1, -1, 2, -2, 3, True, False):
        assert_same(base ** pyrt.tensor(exponents), base ** torch.tensor(exponents))
    same_error(lambda: "a" ** pyrt.tensor([1.0]), lambda: "a" ** torch.tensor([1.0]),
               TypeError)


def test_what_records_a_gradient():
    x = pyrt.tensor([1.5, -2.0], requires_grad=True)
    for out in (x.argmin(), x.sort().indices, x.topk(1).indices, (x > 0) & (x < 1), ~(x > 0)):
        assert not out.requires_grad
    # a float value tensor filling an integer tensor: the int64 result has no gradient
    value = pyrt.tensor(2.5, requires_grad=True)
    out = pyrt.tensor([1, 2, 3]).masked_fill(pyrt.tensor([True, False, True]), value)
    assert out.dtype == np.int64 and out.tolist() == [2, 2, 2] and not out.requires_grad
    with pyrt.no_grad():
        for out in (x.cumsum(0), x.prod(), x.norm(), x.sort().values, x.expand(2, 2),
                    x.repeat(2), x.split(1)[0], x.gather(0, pyrt.tensor([1])), 2 ** x, x % 1,
                    maximum(x, x), x.sin(), x.masked_fill(x > 0, 0.0)):
            assert not out.requires_grad and out.is_leaf


# ---- factories -------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, torch_fn", [(zeros_like, torch.zeros_like),
                                          (ones_like, torch.ones_like),
                                          (empty_like, torch.empty_like)])
def test_zeros_ones_empty_like(fn, torch_fn):
    for data in (np.ones((2, 3), np.float32), np.array([1, 2]), np.array(True),
                 np.zeros((0, 4), np.float32)):
        p, q = fn(pyrt.tensor(data)), torch_fn(torch.tensor(data))
        assert p.shape == tuple(q.shape) and str(p.dtype) == torch_dtype_name(q)
        if fn is not empty_like:
            assert_same(p, q)
        assert p.device == "cpu" and not p.requires_grad
    p = fn(pyrt.tensor([1, 2]), dtype=pyrt.float32, requires_grad=True)
    assert p.dtype == np.float32 and p.requires_grad and p.is_leaf
    assert fn(pyrt.tensor([1.0]), device="cpu").device == "cpu"
    same_error(lambda: fn([1.0]), lambda: torch_fn([1.0]), TypeError)
    same_error(lambda: fn(pyrt.tensor([1]), requires_grad=True),
               lambda: torch_fn(torch.tensor([1]), requires_grad=True), RuntimeError)


def test_full_infers_the_dtype_as_torch():
    for value in (True, 3, -2, 3.5, np.float32(1.25), np.int64(7)):
        for size in ((2, 3), [2], ()):
            assert_same(full(size, value), torch.full(size, value))
    for value, dtype, tdtype in ((2.7, pyrt.int64, torch.int64), (-2, pyrt.bool_, torch.bool),
                                 (3, pyrt.float32, torch.float32)):
        assert_same(full((2,), value, dtype=dtype), torch.full((2,), value, dtype=tdtype))
    assert_same(full((2,), pyrt.tensor(2.0)), torch.full((2,), torch.tensor(2.0)))
    assert_same(full((2,), math.inf), torch.full((2,), math.inf))
    t = full((2,), 1.5, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_full_errors():
    same_error(lambda: full(3, 1.0), lambda: torch.full(3, 1.0), TypeError)
    same_error(lambda: full((2,), "a"), lambda: torch.full((2,), "a"), TypeError)
    same_error(lambda: full((2,), 1, requires_grad=True),
               lambda: torch.full((2,), 1, requires_grad=True), RuntimeError)
    for value, dtype, tdtype in ((1e30, pyrt.int64, torch.int64),
                                 (math.nan, pyrt.int64, torch.int64),
                                 (1e40, pyrt.float32, torch.float32)):
        same_error(lambda v=value, d=dtype: full((2,), v, dtype=d),
                   lambda v=value, d=tdtype: torch.full((2,), v, dtype=d), RuntimeError)
    with pytest.raises(ValueError, match="non-negative"):
        full((-1,), 1.0)


def test_full_like():
    ints, floats = np.array([[1, 2, 3]]), np.zeros((2, 2), np.float32)
    for data in (ints, floats, ints > 1):
        for value in (2.7, -2.7, 5, True):
            assert_same(full_like(pyrt.tensor(data), value),
                        torch.full_like(torch.tensor(data), value))
    assert_same(full_like(pyrt.tensor(ints), 2.5, dtype=pyrt.float32),
                torch.full_like(torch.tensor(ints), 2.5, dtype=torch.float32))
    same_error(lambda: full_like(pyrt.tensor(ints), 1e30),
               lambda: torch.full_like(torch.tensor(ints), 1e30), RuntimeError)
    same_error(lambda: full_like(ints, 1), lambda: torch.full_like(ints, 1), TypeError)


@pytest.mark.parametrize("fn, torch_fn", [(rand_like, torch.rand_like),
                                          (randn_like, torch.randn_like)])
def test_rand_like_and_randn_like(fn, torch_fn):
    x = pyrt.zeros(40, 50)
    pyrt.manual_seed(3)
    a = fn(x)
    pyrt.manual_seed(3)
    b = fn(x)
    assert a.shape == (40, 50) and a.dtype == np.float32 and a.device == "cpu"
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # seeded: reproducible
    assert not np.array_equal(fn(x).numpy(), a.numpy())  # the generator moved on
    if fn is rand_like:
        assert 0 <= a.numpy().min() and a.numpy().max() < 1
        assert abs(a.numpy().mean() - 0.5) < 0.05
    else:
        assert abs(a.numpy().mean()) < 0.1 and abs(a.numpy().std() - 1) < 0.1
    assert fn(pyrt.tensor([1, 2]), dtype=pyrt.float32).dtype == np.float32
    assert fn(x.to(np.float64)).dtype == np.float64
    assert fn(x, requires_grad=True).requires_grad
    same_error(lambda: fn(pyrt.tensor([1, 2])), lambda: torch_fn(torch.tensor([1, 2])),
               NotImplementedError)
    same_error(lambda: fn([1.0]), lambda: torch_fn([1.0]), TypeError)


def test_randint_signatures_range_and_seed():
    pyrt.manual_seed(5)
    a = randint(10, (1000,))
    pyrt.manual_seed(5)
    b = randint(0, 10, (1000,))
    assert a.dtype == np.int64 and a.shape == (1000,) and not a.requires_grad
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(a.tolist()) == set(range(10))
    c = randint(-3, 2, [4, 5])
    assert c.shape == (4, 5) and c.numpy().min() >= -3 and c.numpy().max() < 2
    assert randint(low=2, high=5, size=(3,)).numpy().min() >= 2
    assert randint(high=5, size=(3,)).shape == (3,)
    f = randint(0, 5, (3,), dtype=pyrt.float32, requires_grad=True)
    assert f.dtype == np.float32 and f.requires_grad
    assert randint(0, 2, (8,), dtype=pyrt.bool_).dtype == np.bool_
    assert randint(5, ()).shape == ()


def test_randint_errors():
    same_error(lambda: randint(5, 5, (3,)), lambda: torch.randint(5, 5, (3,)), RuntimeError)
    same_error(lambda: randint(5, 3), lambda: torch.randint(5, 3), TypeError)
    same_error(lambda: randint(5), lambda: torch.randint(5), TypeError)
    same_error(lambda: randint(2.5, (2,)), lambda: torch.randint(2.5, (2,)), TypeError)
    same_error(lambda: randint(0, 5, (2,), requires_grad=True),
               lambda: torch.randint(0, 5, (2,), requires_grad=True), RuntimeError)
    same_error(lambda: randint(0, 5, (2,), dtype=pyrt.bool_),
               lambda: torch.randint(0, 5, (2,), dtype=torch.bool), RuntimeError)


def test_eye():
    for args in ((3,), (2, 3), (3, 2), (0,), (2, 0)):
        assert_same(eye(*args), torch.eye(*args))
    assert_same(eye(2, dtype=pyrt.int64), torch.eye(2, dtype=torch.int64))
    assert eye(2, None).shape == (2, 2)
    assert eye(2, requires_grad=True).requires_grad
    same_error(lambda: eye(-1), lambda: torch.eye(-1), RuntimeError)
    same_error(lambda: eye(2, -1), lambda: torch.eye(2, -1), RuntimeError)
    same_error(lambda: eye(2.0), lambda: torch.eye(2.0), TypeError)


@pytest.mark.parametrize("start, end, steps", [
    (0, 1, 5), (-3.5, 7.25, 11), (10, -10, 7), (0, 1, 1), (0, 1, 0), (1e-3, 1e3, 100),
    (-7, 3, 4), (3, -7, 6), (0.5, 9.9, 13), (5, 5, 3),
])
def test_linspace_as_torch(start, end, steps):
    got, want = linspace(start, end, steps), torch.linspace(start, end, steps)
    assert_same(got, want, rtol=1e-6, atol=1e-6 * max(abs(start), abs(end)))
    assert got.numpy()[:1].tolist() == want.numpy()[:1].tolist()  # the first end exactly
    assert got.numpy()[-1:].tolist() == want.numpy()[-1:].tolist()  # the last end exactly
    assert_same(linspace(start, end, steps, dtype=pyrt.int64),
                torch.linspace(start, end, steps, dtype=torch.int64))


def test_linspace_errors_and_options():
    assert linspace(0, 1, 3, requires_grad=True).requires_grad
    assert_same(linspace(pyrt.tensor(0.0), pyrt.tensor(2.0), 3), torch.linspace(0, 2, 3))
    same_error(lambda: linspace(0, 1, -1), lambda: torch.linspace(0, 1, -1), RuntimeError)
    same_error(lambda: linspace(0, 1, 2.0), lambda: torch.linspace(0, 1, 2.0), TypeError)
    same_error(lambda: linspace(0, 1), lambda: torch.linspace(0, 1), TypeError)
    same_error(lambda: linspace(0, 1, 3, dtype=pyrt.bool_),
               lambda: torch.linspace(0, 1, 3, dtype=torch.bool), NotImplementedError)
    with pytest.raises(TypeError, match="'start' must be a real number"):
        linspace("0", 1, 3)
    with pytest.raises(RuntimeError, match="overflow"):
        linspace(0, math.inf, 3, dtype=pyrt.int64)
