"""A third batch of PyTorch's Tensor and top-level interface: trigonometric and two-operand
pointwise functions, the scatter and index ops, scans and order statistics, binning,
contractions and fused products, and in-place forms. Each op is checked against NumPy and
finite differences (so that the file is useful without PyTorch), then, where torch is
installed, against torch: values, dtypes, shapes and the gradients of sum(out * w) over many
shapes (hypothesis), special values, and PyTorch's errors for bad input."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
EXAMPLES = settings(max_examples=12, deadline=None, derandomize=True)


def normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def distinct(shape, seed=0):
    """float32 values of `shape`, all different (one answer for orders and indices)."""
    n = math.prod(shape)
    return (np.random.default_rng(seed).permutation(n).reshape(shape) - n / 2).astype(
        np.float32)


def leaf(a):
    return pyrt.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f")


def weighted_grads(fn, *arrays, seed=0):
    """(outputs, gradients of sum(out * w) for each float input) of fn on pyrt leaves."""
    xs = [leaf(a) for a in arrays]
    out = fn(*xs)
    outs = list(out) if isinstance(out, tuple) else [out]
    rng = np.random.default_rng(seed)
    loss = None
    for o in outs:
        if o.requires_grad:
            w = pyrt.tensor(rng.standard_normal(o.shape).astype(np.float32))
            loss = (o * w).sum() if loss is None else loss + (o * w).sum()
    if loss is not None:
        loss.backward()
    grads = [None if not x.requires_grad else
             (x.grad.numpy() if x.grad is not None else np.zeros(x.shape, np.float32))
             for x in xs]
    return outs, grads


def finite_differences(fn, *arrays, seed=0, eps=1e-2, rtol=2e-2, atol=2e-2):
    """fn's gradients of sum(out * w) agree with central differences of its float64-summed
    forward values (each float input perturbed element by element)."""
    _, grads = weighted_grads(fn, *arrays, seed=seed)

    def loss(values):
        with pyrt.no_grad():
            out = fn(*[pyrt.tensor(v) for v in values])
        outs = list(out) if isinstance(out, tuple) else [out]
        rng = np.random.default_rng(seed)
        total = 0.0
        for o in outs:
            if o.dtype.kind == "f":
                w = rng.standard_normal(o.shape).astype(np.float32)
                total += float((o.numpy().astype(np.float64) * w).sum())
        return total

    for k, a in enumerate(arrays):
        if np.asarray(a).dtype.kind != "f":
            continue
        expected = np.zeros(a.shape)
        for i in np.ndindex(a.shape):
            up, down = [np.array(v, copy=True) for v in arrays], \
                [np.array(v, copy=True) for v in arrays]
            up[k][i] += eps
            down[k][i] -= eps
            expected[i] = (loss(up) - loss(down)) / (2 * eps)
        np.testing.assert_allclose(grads[k], expected, rtol=rtol, atol=atol)


def assert_same(yp, yq, rtol=1e-5, atol=1e-6):
    """pyrt's `yp` and torch's `yq` agree in shape, dtype and values."""
    assert tuple(yp.shape) == tuple(yq.shape)
    expected = yq.detach().numpy()
    assert yp.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(yp.numpy() if not yp.requires_grad else
                                   yp.detach().numpy(), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(yp.numpy(), expected)


def against_torch(fn, *arrays, fn_torch=None, seed=0, rtol=1e-5, atol=1e-6):
    """fn on pyrt leaves and (fn_torch or fn) on torch leaves of `arrays`: the same results
    and the same gradients of sum(out * w)."""
    outs, grads = weighted_grads(fn, *arrays, seed=seed)
    qs = [torch.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in arrays]
    out = (fn_torch or fn)(*qs)
    touts = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == len(touts)
    rng = np.random.default_rng(seed)
    loss = None
    for o, q in zip(outs, touts):
        assert_same(o, q, rtol, atol)
        assert o.requires_grad == q.requires_grad
        if q.requires_grad:
            w = torch.tensor(rng.standard_normal(q.shape).astype(np.float32))
            loss = (q * w).sum() if loss is None else loss + (q * w).sum()
    if loss is not None:
        loss.backward()
    for g, q in zip(grads, qs):
        if g is not None:
            expected = np.zeros(q.shape, np.float32) if q.grad is None else q.grad.numpy()
            np.testing.assert_allclose(g, expected, rtol=rtol * 10, atol=atol * 10)


def same_error(call_pyrt, call_torch, error):
    """Both raise `error` (torch's only where it is installed)."""
    if torch is not None:
        with pytest.raises(error):
            call_torch()
    with pytest.raises(error):
        call_pyrt()


def both(name):
    """The op `name` of pyrt or of torch, by the type of its first argument."""
    return lambda t, *args, **kwargs: getattr(
        pyrt if isinstance(t, pyrt.Tensor) else torch, name)(t, *args, **kwargs)


# ---- pointwise functions ---------------------------------------------------------------------

# name: (NumPy's function, a map of normal numbers into the domain)
UNARY = {
    "atan": (np.arctan, lambda v: v * 2), "asin": (np.arcsin, lambda v: np.tanh(v) * 0.9),
    "acos": (np.arccos, lambda v: np.tanh(v) * 0.9), "sinh": (np.sinh, lambda v: v),
    "cosh": (np.cosh, lambda v: v), "asinh": (np.arcsinh, lambda v: v * 3),
    "acosh": (np.arccosh, lambda v: np.abs(v) + 1.2),
    "atanh": (np.arctanh, lambda v: np.tanh(v) * 0.9), "sinc": (np.sinc, lambda v: v * 2),
    "deg2rad": (np.deg2rad, lambda v: v * 90), "rad2deg": (np.rad2deg, lambda v: v),
}
ALIASES = {"arctan": "atan", "arcsin": "asin", "arccos": "acos", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_gradients_against_numpy(name):
    reference, domain = UNARY[name]
    x = domain(normal((3, 4), 1)).astype(np.float32)
    out = getattr(pyrt, name)(pyrt.tensor(x))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), reference(x.astype(np.float64)), rtol=2e-6,
                               atol=1e-6)
    np.testing.assert_array_equal(getattr(pyrt.tensor(x), name)().numpy(), out.numpy())
    finite_differences(lambda t: getattr(t, name)(), x[:2, :3])
    # integers and bools give float32, as PyTorch promotes them
    ints = getattr(pyrt, name)(pyrt.tensor([0, 1, 2]) if name not in ("asin", "acos", "atanh")
                               else pyrt.tensor([0, 0]))
    assert ints.dtype == np.float32


def test_aliases_are_the_same_functions():
    x = pyrt.tensor(np.tanh(normal((5,))) * 0.5)
    for alias, name in ALIASES.items():
        np.testing.assert_array_equal(getattr(pyrt, alias)(x).numpy(),
                                      getattr(x, name)().numpy())
    assert pyrt.Tensor.arctan2 is pyrt.Tensor.atan2


def test_sinc_at_zero_and_its_gradient_there():
    x = pyrt.tensor([0.0, 1.0, -0.5], requires_grad=True)
    y = pyrt.sinc(x)
    np.testing.assert_allclose(y.detach().numpy(), [1.0, 0.0, 2 / np.pi], atol=1e-7)
    y.sum().backward()
    assert x.grad.numpy()[0] == 0.0
    np.testing.assert_allclose(x.grad.numpy()[1], -1.0, rtol=1e-6)  # (cos(pi) - 0) / 1


BINARY = {
    "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2, "copysign": np.copysign,
    "xlogy": lambda a, b: np.where(a == 0, 0, a * np.log(b)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_broadcasting_and_gradients_against_numpy(name):
    a, b = normal((3, 1), 2), normal((4,), 3)
    if name == "xlogy":
        b = np.abs(b) + 0.5
    out = getattr(pyrt, name)(pyrt.tensor(a), pyrt.tensor(b))
    assert out.shape == (3, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), BINARY[name](a.astype(np.float64), b),
                               rtol=2e-6, atol=1e-6)
    finite_differences(lambda s, t: getattr(s, name)(t), a[:2], b[:3], eps=1e-3)


def test_binary_special_values():
    zero = pyrt.tensor([0.0, 0.0, 2.0, 0.0])
    y = pyrt.tensor([0.0, np.nan, 3.0, -1.0])
    np.testing.assert_array_equal(pyrt.xlogy(zero, y).numpy(),
                                  [0.0, np.nan, 2 * np.log(3.0, dtype=np.float32), 0.0])
    assert pyrt.xlogy(2, pyrt.tensor([1.0])).dtype == np.float32  # a number first
    np.testing.assert_array_equal(pyrt.copysign(pyrt.tensor([1.0, 2.0]), -0.0).numpy(),
                                  [-1.0, -2.0])
    inf = pyrt.tensor([-np.inf, np.inf])
    np.testing.assert_array_equal(pyrt.logaddexp(inf, inf).numpy(), [-np.inf, np.inf])
    x = pyrt.tensor([-1.5, 0.0, 2.0, np.nan])
    np.testing.assert_array_equal(pyrt.heaviside(x, pyrt.tensor(0.5)).numpy(),
                                  [0.0, 0.5, 1.0, 0.0])
    assert pyrt.heaviside(pyrt.tensor([-2, 0, 3]), pyrt.tensor([7])).tolist() == [0, 7, 1]
    signs = pyrt.signbit(pyrt.tensor([-0.0, 0.0, -2.0, np.inf, -np.nan]))
    assert signs.dtype == np.bool_ and signs.tolist() == [True, False, True, False, True]
    assert pyrt.signbit(pyrt.tensor([-1, 0, 1])).tolist() == [True, False, False]


def test_nan_to_num_values_defaults_and_gradient():
    x = np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)
    np.testing.assert_array_equal(pyrt.nan_to_num(pyrt.tensor(x)).numpy(), np.nan_to_num(x))
    np.testing.assert_array_equal(
        pyrt.tensor(x).nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0).numpy(),
        [1.0, 2.0, -3.0, 1.5])
    t = pyrt.tensor(x, requires_grad=True)
    t.nan_to_num().sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0.0, 0.0, 0.0, 1.0])
    ints = pyrt.tensor([1, 2])
    assert pyrt.nan_to_num(ints).dtype == np.int64
    with pytest.raises(RuntimeError):
        pyrt.nan_to_num(pyrt.tensor(x), posinf=1e40)  # beyond float32


@needs_torch
@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100))
def test_pointwise_against_torch(shape, seed):
    x = normal(shape, seed)
    for name, (_, domain) in UNARY.items():
        against_torch(lambda t, n=name: getattr(t, n)(), domain(x).astype(np.float32),
                      seed=seed, rtol=1e-5, atol=1e-5)
    for alias in ALIASES:
        against_torch(both(alias), np.tanh(x) * 0.5, seed=seed, rtol=1e-5, atol=1e-5)
    y = normal(shape[-1:], seed + 1)
    for name in BINARY:
        second = np.abs(y) + 0.5 if name == "xlogy" else y
        against_torch(lambda s, t, n=name: getattr(s, n)(t), x, second, seed=seed,
                      rtol=1e-5, atol=1e-5)
    against_torch(lambda t: t.nan_to_num(posinf=5.0), np.where(x > 1, np.inf, x))
    against_torch(lambda t: t.copysign(-1.0), x)
    against_torch(lambda t: both("xlogy")(t, 2.5), x)


@needs_torch
def test_pointwise_special_values_and_integers_against_torch():
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30], np.float32)
    for name in list(UNARY) + ["signbit", "nan_to_num"]:
        assert_same(getattr(pyrt.tensor(special), name)(),
                    getattr(torch.tensor(special), name)(), rtol=1e-6)
    pairs = np.array(list(itertools.product(special, special)), np.float32)
    for name in BINARY:
        assert_same(getattr(pyrt, name)(pyrt.tensor(pairs[:, 0]), pyrt.tensor(pairs[:, 1])),
                    getattr(torch, name)(torch.tensor(pairs[:, 0]), torch.tensor(pairs[:, 1])),
                    rtol=1e-6)
    assert_same(pyrt.heaviside(pyrt.tensor(special), pyrt.tensor([0.25])),
                torch.heaviside(torch.tensor(special), torch.tensor([0.25])))
    ints = np.array([-3, 0, 2])
    for name in ["atan", "sinh", "deg2rad", "rad2deg", "sinc", "signbit", "nan_to_num"]:
        assert_same(getattr(pyrt.tensor(ints), name)(), getattr(torch.tensor(ints), name)())
    for name in ["atan2", "xlogy", "copysign"]:
        assert_same(getattr(pyrt, name)(pyrt.tensor(ints), pyrt.tensor(ints)),
                    getattr(torch, name)(torch.tensor(ints), torch.tensor(ints)))


def test_pointwise_errors():
    x, i = np.ones(3, np.float32), np.arange(3)
    same_error(lambda: pyrt.atan2(pyrt.tensor(x), 2.0), lambda: torch.atan2(torch.tensor(x), 2.0),
               TypeError)
    same_error(lambda: pyrt.hypot(pyrt.tensor(i), pyrt.tensor(i)),
               lambda: torch.hypot(torch.tensor(i), torch.tensor(i)), NotImplementedError)
    same_error(lambda: pyrt.logaddexp(pyrt.tensor(i), pyrt.tensor(i)),
               lambda: torch.logaddexp(torch.tensor(i), torch.tensor(i)), NotImplementedError)
    same_error(lambda: pyrt.heaviside(pyrt.tensor(x), pyrt.tensor(i)),
               lambda: torch.heaviside(torch.tensor(x), torch.tensor(i)), RuntimeError)
    same_error(lambda: pyrt.atan2(pyrt.tensor(x), pyrt.tensor(np.ones(2, np.float32))),
               lambda: torch.atan2(torch.tensor(x), torch.tensor(np.ones(2, np.float32))),
               RuntimeError)
    step = pyrt.heaviside(pyrt.tensor(x, requires_grad=True), pyrt.tensor([0.5]))
    with pytest.raises(RuntimeError, match="heaviside"):
        step.sum().backward()
    with pytest.raises(TypeError):
        pyrt.atan([1.0])


# ---- scatter, index and take -----------------------------------------------------------------


def scatter_reference(x, dim, index, src, reduce=None, include_self=True):
    """torch's scatter semantics by explicit loops, in float64."""
    out = x.astype(np.float64).copy()
    groups = {}
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[dim] = index[pos]
        groups.setdefault(tuple(target), []).append(float(src[pos]))
    for target, values in groups.items():
        own = [out[target]] if include_self else []
        if reduce is None:
            out[target] = values[-1]
        elif reduce == "sum":
            out[target] = sum(own + values)
        elif reduce == "prod":
            out[target] = math.prod(own + values)
        elif reduce == "mean":
            out[target] = sum(own + values) / len(own + values)
        elif reduce == "amax":
            out[target] = max(own + values)
        else:
            out[target] = min(own + values)
    return out


def scatter_case(seed, unique):
    """(x, index, src) for a scatter along dim 1: index smaller than src, its rows a
    permutation's first columns when `unique` (one element per place)."""
    rng = np.random.default_rng(seed)
    x, src = normal((3, 5), seed), normal((4, 4), seed + 1)
    if unique:
        index = np.stack([rng.permutation(5)[:3] for _ in range(2)])
    else:
        index = rng.integers(0, 5, (2, 3))
    return x, index.astype(np.int64), src


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_against_loops_and_finite_differences(reduce, include_self):
    x, index, src = scatter_case(4, unique=False)
    out = pyrt.tensor(x).scatter_reduce(1, pyrt.tensor(index), pyrt.tensor(src), reduce,
                                        include_self=include_self)
    np.testing.assert_allclose(out.numpy(), scatter_reference(x, 1, index, src, reduce,
                                                              include_self), rtol=1e-5,
                               atol=1e-6)
    finite_differences(lambda a, b: a.scatter_reduce(1, pyrt.tensor(index), b, reduce,
                                                     include_self=include_self), x, src,
                       eps=1e-3)


def test_scatter_prod_gradient_with_zeros():
    x = np.array([0.0, 2.0, 0.0, 3.0], np.float32)
    src = np.array([0.0, 5.0, 4.0, 7.0], np.float32)
    index = pyrt.tensor([0, 1, 2, 2])  # one zero at 0 and 1 places, two at 2 (x and src)
    finite_differences(lambda a, b: a.scatter_reduce(0, index, b, "prod"), x, src, eps=1e-3)


def test_scatter_amax_and_amin_share_the_gradient_among_ties():
    x = pyrt.tensor([5.0, 0.0, 2.0], requires_grad=True)
    src = pyrt.tensor([5.0, 5.0, 2.0], requires_grad=True)
    index = pyrt.tensor([0, 0, 2])
    x.scatter_reduce(0, index, src, "amax").backward(pyrt.tensor([3.0, 1.0, 6.0]))
    assert x.grad.tolist() == [1.0, 1.0, 3.0] and src.grad.tolist() == [1.0, 1.0, 3.0]
    x.grad = src.grad = None
    x.scatter_reduce(0, index, src, "amin", include_self=False).backward(
        pyrt.tensor([3.0, 1.0, 6.0]))
    # without include_self, input's own value takes no part in the places written, nor in
    # sharing their gradient (PyTorch counts it there when it equals the result, so that its
    # shares, [1, 1, 3], do not add up to the gradient)
    assert x.grad.tolist() == [0.0, 1.0, 0.0] and src.grad.tolist() == [1.5, 1.5, 6.0]


def test_scatter_scatter_add_and_values():
    x, index, src = scatter_case(5, unique=True)
    t = pyrt.tensor(x)
    np.testing.assert_allclose(t.scatter(1, pyrt.tensor(index), pyrt.tensor(src)).numpy(),
                               scatter_reference(x, 1, index, src), rtol=1e-6)
    np.testing.assert_allclose(pyrt.scatter(t, 1, pyrt.tensor(index), 2.5).numpy(),
                               scatter_reference(x, 1, index, np.full((4, 4), 2.5)))
    np.testing.assert_allclose(t.scatter(1, pyrt.tensor(index), value=-1).numpy(),
                               scatter_reference(x, 1, index, np.full((4, 4), -1.0)))
    finite_differences(lambda a, b: a.scatter(1, pyrt.tensor(index), b), x, src)
    _, index, _ = scatter_case(6, unique=False)
    np.testing.assert_allclose(pyrt.scatter_add(t, 1, pyrt.tensor(index), pyrt.tensor(src)),
                               scatter_reference(x, 1, index, src, "sum"), rtol=1e-6,
                               atol=1e-6)
    added = t.scatter(1, pyrt.tensor(index), pyrt.tensor(src), reduce="add")
    np.testing.assert_allclose(added.numpy(), scatter_reference(x, 1, index, src, "sum"),
                               rtol=1e-6, atol=1e-6)
    ints = pyrt.tensor([-5, 7, 9]).scatter_reduce(0, pyrt.tensor([0, 0, 1]),
                                                 pyrt.tensor([-2, 3, 4]), "mean")
    assert ints.dtype == np.int64 and ints.tolist() == [-2, 5, 9]  # floor division


def test_index_ops_against_numpy_and_finite_differences():
    x, source = normal((4, 3), 7), normal((4, 2), 8)
    index = np.array([2, 0])
    t = pyrt.tensor(x)
    expected = x.copy()
    expected[:, index] += 2 * source
    np.testing.assert_allclose(t.index_add(1, pyrt.tensor(index), pyrt.tensor(source),
                                           alpha=2).numpy(), expected, rtol=1e-6)
    repeated = pyrt.tensor(x).index_add(0, pyrt.tensor([1, 1]), pyrt.tensor(x[:2]))
    np.testing.assert_allclose(repeated.numpy()[1], x[1] + x[0] + x[1], rtol=1e-6)
    expected = x.copy()
    expected[:, index] = source
    np.testing.assert_array_equal(t.index_copy(1, pyrt.tensor(index),
                                               pyrt.tensor(source)).numpy(), expected)
    expected = x.copy()
    expected[:, [2, 0]] = 9.0
    np.testing.assert_array_equal(t.index_fill(1, pyrt.tensor([-1, 0]), 9.0).numpy(), expected)
    expected = x.copy()
    expected[[0, 3], [1, 1]] = [5.0, 6.0]
    put = t.index_put((pyrt.tensor([0, 3]), pyrt.tensor([1, 1])), pyrt.tensor([5.0, 6.0]))
    np.testing.assert_array_equal(put.numpy(), expected)
    acc = t.index_put((pyrt.tensor([0, 0]),), pyrt.tensor(np.ones(3, np.float32)),
                      accumulate=True)
    np.testing.assert_allclose(acc.numpy()[0], x[0] + 2, rtol=1e-6)
    rows = pyrt.tensor([3, 1])
    for fn in (lambda a, b: a.index_add(1, pyrt.tensor(index), b, alpha=-1.5),
               lambda a, b: a.index_copy(1, pyrt.tensor(index), b),
               lambda a, b: a.index_put((rows,), b[:3, 0]),
               lambda a, b: a.index_put((rows,), b[:3, 0], accumulate=True)):
        finite_differences(fn, x, source)
    finite_differences(lambda a, v: a.index_fill(0, pyrt.tensor([1]), v), x,
                       np.float32(0.5).reshape(()))


def test_take_and_take_along_dim_against_numpy():
    x = normal((3, 4), 9)
    index = np.array([[0, -1], [11, 5]])
    np.testing.assert_array_equal(pyrt.take(pyrt.tensor(x), pyrt.tensor(index)).numpy(),
                                  np.take(x, index))
    finite_differences(lambda a: a.take(pyrt.tensor([[0, 0], [11, -2]])), x)
    order = np.argsort(x, axis=1)
    np.testing.assert_array_equal(
        pyrt.take_along_dim(pyrt.tensor(x), pyrt.tensor(order), 1).numpy(), np.sort(x, 1))
    np.testing.assert_array_equal(
        pyrt.tensor(x).take_along_dim(pyrt.tensor(np.array([[1], [0], [3]]))).numpy(),
        x.reshape(-1)[[1, 0, 3]])
    # broadcast together but along dim
    wide = pyrt.tensor(x).take_along_dim(pyrt.tensor(np.array([[0, 2]])), 1)
    np.testing.assert_array_equal(wide.numpy(), x[:, [0, 2]])
    finite_differences(lambda a: a.take_along_dim(pyrt.tensor(np.array([[0, 2, 2]])), 1), x)


@needs_torch
@EXAMPLES
@given(seed=st.integers(0, 100), rows=st.integers(1, 4), cols=st.integers(1, 5),
       dim=st.integers(-2, 1))
def test_scatter_family_against_torch(seed, rows, cols, dim):
    rng = np.random.default_rng(seed)
    x, src = normal((rows, cols), seed), normal((rows + 1, cols + 1), seed + 1)
    size = x.shape[dim]
    index = rng.integers(0, size, (rng.integers(1, rows + 1), rng.integers(1, cols + 1)))
    ti = torch.tensor(index)
    # (torch's backward refuses a src larger than index here; pyrt's is checked against
    # finite differences above)
    fitted = src[:index.shape[0], :index.shape[1]]
    for reduce in ["sum", "mean", "amax", "amin", "prod"]:
        for include_self in (True, False):
            against_torch(lambda a, b, r=reduce, s=include_self: a.scatter_reduce(
                dim, pyrt.tensor(index), b, r, include_self=s), x, fitted, seed=seed,
                fn_torch=lambda a, b, r=reduce, s=include_self: a.scatter_reduce(
                    dim, ti, b, r, include_self=s), rtol=1e-5, atol=1e-5)
    against_torch(lambda a, b: pyrt.scatter_add(a, dim, pyrt.tensor(index), b), x, fitted,
                  fn_torch=lambda a, b: torch.scatter_add(a, dim, ti, b), seed=seed)
    # a permutation's leading part along dim: every place written once
    perm = np.argsort(rng.random((rows, cols)), axis=dim)
    perm = perm[:max(1, rows - 1)] if dim % 2 == 1 else perm[:, :max(1, cols - 1)]
    tp = torch.tensor(perm)
    against_torch(lambda a, b: a.scatter(dim, pyrt.tensor(perm), b), x,
                  src[:perm.shape[0], :perm.shape[1]],
                  fn_torch=lambda a, b: a.scatter(dim, tp, b), seed=seed)
    against_torch(lambda a: a.scatter(dim, pyrt.tensor(perm), 1.5), x,
                  fn_torch=lambda a: a.scatter(dim, tp, 1.5), seed=seed)
    positions = rng.integers(0, size, 3)
    source = normal(x.shape[:dim % 2] + (3,) + x.shape[dim % 2 + 1:], seed + 2)
    tpos = torch.tensor(positions)
    against_torch(lambda a, b: a.index_add(dim, pyrt.tensor(positions), b, alpha=0.5),
                  x, source, fn_torch=lambda a, b: a.index_add(dim, tpos, b, alpha=0.5))
    against_torch(lambda a: a.index_fill(dim, pyrt.tensor(positions), -2.0), x,
                  fn_torch=lambda a: a.index_fill(dim, tpos, -2.0))
    unique = rng.permutation(size)[:1]
    against_torch(lambda a, b: a.index_copy(dim, pyrt.tensor(unique), b), x,
                  source.take([0], axis=dim % 2),
                  fn_torch=lambda a, b: a.index_copy(dim, torch.tensor(unique), b))
    flat = rng.integers(-x.size, x.size, (2, 3))
    against_torch(lambda a: a.take(pyrt.tensor(flat)), x,
                  fn_torch=lambda a: a.take(torch.tensor(flat)))
    along = rng.integers(0, size, (1, 3) if dim % 2 == 1 else (3, 1))
    against_torch(lambda a: pyrt.take_along_dim(a, pyrt.tensor(along), dim), x,
                  fn_torch=lambda a: torch.take_along_dim(a, torch.tensor(along), dim))
    keys = (torch.tensor(rng.integers(0, rows, 4)), torch.tensor(rng.integers(0, cols, 4)))
    pkeys = tuple(pyrt.tensor(k.numpy()) for k in keys)
    values = normal((1,), seed + 3)
    against_torch(lambda a, v: a.index_put(pkeys, v, accumulate=True), x, values,
                  fn_torch=lambda a, v: a.index_put(keys, v, accumulate=True))


def test_scatter_and_index_errors():
    x, s = np.zeros((3, 4), np.float32), np.ones((2, 4), np.float32)
    i = np.array([[0, 1, 2, 0]])
    cases = [
        (lambda m: m.tensor(x).scatter(0, m.tensor(i), m.tensor(s).double()), RuntimeError),
        (lambda m: m.tensor(x).scatter(0, m.tensor([[5]]), m.tensor(s)), RuntimeError),
        (lambda m: m.tensor(x).scatter(0, m.tensor([[-1]]), m.tensor(s)), RuntimeError),
        (lambda m: m.tensor(x).scatter(2, m.tensor(i), m.tensor(s)), IndexError),
        (lambda m: m.tensor(x).scatter(0, m.tensor(np.zeros((4, 4), np.int64)), m.tensor(s)),
         RuntimeError),
        (lambda m: m.tensor(x).scatter(0, m.tensor(i.astype(np.float32)), m.tensor(s)),
         RuntimeError),
        (lambda m: m.tensor(x).scatter(0, m.tensor(i), m.tensor(s), reduce="mean"),
         RuntimeError),
        (lambda m: m.tensor(x).scatter_reduce(0, m.tensor(i), m.tensor(s), "foo"),
         RuntimeError),
        (lambda m: m.tensor(x).scatter_reduce(0, m.tensor(i), m.tensor(s), "sum",
                                              include_self=0), TypeError),
        (lambda m: m.tensor(x).index_add(0, m.tensor([0, 5]), m.tensor(s)), RuntimeError),
        (lambda m: m.tensor(x).index_add(0, m.tensor([0.0, 1.0]), m.tensor(s)), RuntimeError),
        (lambda m: m.tensor(x).index_add(0, m.tensor([[0, 1]]), m.tensor(s)), IndexError),
        (lambda m: m.tensor(x).index_add(0, m.tensor([0, 1]), m.tensor(s[:, :3])),
         RuntimeError),
        (lambda m: m.tensor(x).index_add(0, m.tensor([0, 1, 2]), m.tensor(s)), RuntimeError),
        (lambda m: m.tensor(x).index_copy(0, m.tensor([0, 5]), m.tensor(s)), IndexError),
        (lambda m: m.tensor(x).index_fill(0, m.tensor([0, 5]), 1.0), IndexError),
        (lambda m: m.tensor(x).index_fill(0, m.tensor([0]), m.tensor([1.0, 2.0])),
         RuntimeError),
        (lambda m: m.tensor(x).take(m.tensor([0, 20])), IndexError),
        (lambda m: m.tensor(x).take(m.tensor([0, -13])), IndexError),
        (lambda m: m.tensor(x).take(m.tensor([0.0])), RuntimeError),
        (lambda m: m.take_along_dim(m.tensor(x), m.tensor([0, 1]), 0), RuntimeError),
        (lambda m: m.take_along_dim(m.tensor(x), m.tensor([[0], [1]]), 1), RuntimeError),
        (lambda m: m.tensor(x).index_put((m.tensor([0, 5]),), m.tensor(1.0)), IndexError),
        (lambda m: m.tensor(x).index_put((m.tensor([0, 1]),), 1.0), TypeError),
        (lambda m: m.tensor(x).index_put((m.tensor([0.0]),), m.tensor(1.0)), IndexError),
        (lambda m: m.tensor(x).index_put((m.tensor([0, 1]),), m.tensor([1.0, 2.0])),
         RuntimeError),
    ]
    for call, error in cases:
        same_error(lambda c=call: c(pyrt), lambda c=call: c(torch), error)
    scattered = pyrt.tensor(x, requires_grad=True).scatter(
        0, pyrt.tensor(i), pyrt.tensor(s), reduce="multiply")
    with pytest.raises(RuntimeError, match="derivative"):
        scattered.sum().backward()


# ---- scans and order statistics --------------------------------------------------------------


def test_scans_against_numpy():
    x = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [np.nan, 0.0, -1.0, np.nan, 4.0]], np.float32)
    values, indices = pyrt.cummax(pyrt.tensor(x), 1)
    np.testing.assert_array_equal(values.numpy(), np.maximum.accumulate(x, 1))
    assert indices.tolist() == [[0, 1, 2, 2, 4], [0, 0, 0, 3, 3]]  # ties: the later one
    values, indices = pyrt.tensor(x).cummin(-1)
    np.testing.assert_array_equal(values.numpy(), np.minimum.accumulate(x, 1))
    assert indices.tolist() == [[0, 0, 0, 0, 0], [0, 0, 0, 3, 3]]
    finite_differences(lambda t: t.cummax(0), distinct((3, 4), 1))
    y = normal((3, 4), 2) * 30
    np.testing.assert_allclose(pyrt.logcumsumexp(pyrt.tensor(y), 1).numpy(),
                               np.logaddexp.accumulate(y.astype(np.float64), 1), rtol=1e-6)
    finite_differences(lambda t: t.logcumsumexp(0), normal((3, 2), 3), eps=1e-3)
    with pytest.raises(NotImplementedError):
        pyrt.logcumsumexp(pyrt.tensor([1, 2]), 0)


def test_order_statistics_against_numpy():
    x = distinct((4, 5), 4)
    values, indices = pyrt.kthvalue(pyrt.tensor(x), 2, 1)
    np.testing.assert_array_equal(values.numpy(), np.sort(x, 1)[:, 1])
    np.testing.assert_array_equal(indices.numpy(), np.argsort(x, 1)[:, 1])
    finite_differences(lambda t: t.kthvalue(3, 0, keepdim=True), x)
    for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
        for q in (0.0, 0.3, 0.5, 1.0):
            np.testing.assert_allclose(
                pyrt.quantile(pyrt.tensor(x), q, dim=1, interpolation=method).numpy(),
                np.quantile(x.astype(np.float64), q, axis=1, method=method), rtol=1e-6)
    # nearest: halfway ranks round to even, as PyTorch rounds them
    nearest = [float(pyrt.quantile(pyrt.arange(5.0), q, interpolation="nearest"))
               for q in (0.125, 0.375, 0.625, 0.875)]
    assert nearest == [0.0, 2.0, 2.0, 4.0]
    qs = pyrt.tensor([0.25, 0.75])
    np.testing.assert_allclose(pyrt.tensor(x).quantile(qs, 0, keepdim=True).numpy(),
                               np.quantile(x, [0.25, 0.75], axis=0, keepdims=True), rtol=1e-6)
    finite_differences(lambda t: t.quantile(pyrt.tensor([0.2, 0.9]), 1), x)
    holes = x.copy()
    holes[0, 1] = holes[2, :] = np.nan
    with warnings.catch_warnings():  # (NumPy's about the all-NaN row)
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanquantile(holes, 0.4, axis=1)
    np.testing.assert_allclose(pyrt.nanquantile(pyrt.tensor(holes), 0.4, 1).numpy(), expected,
                               rtol=1e-6)
    assert np.isnan(pyrt.quantile(pyrt.tensor(holes), 0.4, 1).numpy()[[0, 2]]).all()
    np.testing.assert_allclose(pyrt.nanmean(pyrt.tensor(holes[:2]), 1).numpy(),
                               np.nanmean(holes[:2], 1), rtol=1e-6)
    finite_differences(lambda t: t.nanmean(0), holes[:2])
    assert pyrt.count_nonzero(pyrt.tensor(np.array([[0, 1], [2, 0]])), 0).tolist() == [1, 1]
    values, indices = pyrt.mode(pyrt.tensor(np.array([[1, 2, 2, 3, 3], [4, 4, 1, 1, 0]])))
    assert values.tolist() == [2, 1] and indices.tolist() == [2, 3]
    values, indices = pyrt.nanmedian(pyrt.tensor(holes), 1)
    assert np.isnan(values.numpy()[2])
    np.testing.assert_array_equal(values.numpy()[:2], [np.sort(holes[0][~np.isnan(holes[0])])[1],
                                                       np.sort(holes[1])[2]])
    assert float(pyrt.nanmedian(pyrt.tensor([1.0, np.nan, 3.0, 2.0]))) == 2.0
    low, high = pyrt.aminmax(pyrt.tensor(x), dim=0)
    np.testing.assert_array_equal(low.numpy(), x.min(0))
    np.testing.assert_array_equal(high.numpy(), x.max(0))
    var, mean = pyrt.var_mean(pyrt.tensor(x), 1, keepdim=True)
    np.testing.assert_allclose(var.numpy(), x.var(1, ddof=1, keepdims=True), rtol=1e-5)
    std, mean = pyrt.std_mean(pyrt.tensor(x), dim=1, correction=0)
    np.testing.assert_allclose(std.numpy(), x.std(1), rtol=1e-5)
    np.testing.assert_allclose(mean.numpy(), x.mean(1), rtol=1e-6)


@needs_torch
@EXAMPLES
@given(shape=SHAPES, seed=st.integers(0, 100), data=st.data())
def test_scans_and_order_statistics_against_torch(shape, seed, data):
    x = distinct(shape, seed)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    ties = np.round(normal(shape, seed)).astype(np.float32)  # repeated values
    for name in ("cummax", "cummin"):
        against_torch(lambda t, n=name: getattr(t, n)(dim), ties, seed=seed)
    against_torch(lambda t: t.logcumsumexp(dim), x, seed=seed, rtol=1e-5, atol=1e-5)
    k = data.draw(st.integers(1, shape[dim]))
    against_torch(lambda t: t.kthvalue(k, dim, keepdim), x, seed=seed)
    for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
        q = data.draw(st.sampled_from([0.0, 0.1, 0.5, 0.75, 1.0]))
        against_torch(lambda t, m=method, q=q: t.quantile(q, dim, keepdim, interpolation=m), x,
                      seed=seed, rtol=1e-5, atol=1e-5)
        qs = np.array([0.2, q], np.float32)
        against_torch(lambda t, m=method, qs=qs: both("nanquantile")(
            t, t.new_tensor(qs), None, keepdim, interpolation=m),
                      x, seed=seed, rtol=1e-5, atol=1e-5)
    against_torch(lambda t: t.aminmax(dim=dim, keepdim=keepdim), ties, seed=seed)
    against_torch(lambda t: t.aminmax(), ties, seed=seed)
    holes = np.where(x > x.mean(), np.nan, x).astype(np.float32)
    # (values only: where a slice is all NaN, torch's gradient is NaN at its elements,
    # pyrt's 0, as they do not change the result)
    assert_same(pyrt.tensor(holes).nanmean(dim, keepdim),
                torch.tensor(holes).nanmean(dim, keepdim))
    against_torch(lambda t: t.nanmean(dim, keepdim), x, seed=seed)
    against_torch(lambda t: t.nanmedian(), holes, seed=seed)
    against_torch(lambda t: t.nanmedian(dim, keepdim).values, x, seed=seed)
    with warnings.catch_warnings():  # (both warn of no degrees of freedom in a dim of 1)
        warnings.simplefilter("ignore", UserWarning)
        against_torch(lambda t: both("var_mean")(t, dim, keepdim=keepdim), x, seed=seed,
                      rtol=1e-5, atol=1e-5)
    against_torch(lambda t: both("std_mean")(t, dim, correction=0), x, seed=seed,
                  rtol=1e-5, atol=1e-5)
    assert_same(pyrt.tensor(ties).count_nonzero(dim), torch.tensor(ties).count_nonzero(dim))
    assert_same(pyrt.count_nonzero(pyrt.tensor(ties)), torch.count_nonzero(torch.tensor(ties)))


@needs_torch
def test_mode_and_nan_orders_against_torch():
    for values in ([1.0, 2, 2, 3, 3], [3.0, 1, 1, 3], [1.0, np.nan, np.nan], [5.0, 4, 4, 5, 1]):
        against_torch(lambda t: t.mode(), np.array(values, np.float32))
    against_torch(lambda t: t.mode(1), np.array([[1, 2, 2], [3, 3, 1]], np.float32))
    nan = np.array([[1.0, np.nan, 0.0, 5.0, np.nan], [2.0, 2.0, 1.0, 3.0, 3.0]], np.float32)
    against_torch(lambda t: t.cummax(1), nan)
    against_torch(lambda t: t.cummin(1), nan)
    against_torch(lambda t: t.kthvalue(5, 1).values, nan)
    against_torch(lambda t: t.nanmedian(1), np.array([[1.0, np.nan, 3.0],
                                                      [np.nan, np.nan, np.nan]], np.float32))


def test_scan_and_order_errors():
    x = np.ones((2, 3), np.float32)
    cases = [
        (lambda m: m.kthvalue(m.tensor(x), 4), RuntimeError),
        (lambda m: m.kthvalue(m.tensor(x), 0), RuntimeError),
        (lambda m: m.quantile(m.tensor(x), 1.5), RuntimeError),
        (lambda m: m.quantile(m.tensor(np.ones(3, np.int64)), 0.5), RuntimeError),
        (lambda m: m.quantile(m.tensor(x), 0.5, interpolation="foo"), RuntimeError),
        (lambda m: m.quantile(m.tensor(x), m.tensor([[0.5]])), RuntimeError),
        (lambda m: m.quantile(m.tensor(np.zeros(0, np.float32)), 0.5), RuntimeError),
        (lambda m: m.nanmean(m.tensor([1, 2])), RuntimeError),
        (lambda m: m.aminmax(m.tensor(np.zeros(0, np.float32))), RuntimeError),
        (lambda m: m.cummax(m.tensor(x), 2), IndexError),
        (lambda m: m.logcumsumexp(m.tensor([1, 2]), 0), NotImplementedError),
    ]
    for call, error in cases:
        same_error(lambda c=call: c(pyrt), lambda c=call: c(torch), error)


# ---- binning ---------------------------------------------------------------------------------


def test_binning_against_numpy():
    bounds = np.array([1.0, 3.0, 5.0, 7.0], np.float32)
    values = np.array([[0.0, 3.0, 6.0], [7.0, 9.0, 1.0]], np.float32)
    for right in (False, True):
        side = "right" if right else "left"
        found = pyrt.searchsorted(pyrt.tensor(bounds), pyrt.tensor(values), right=right)
        assert found.dtype == np.int64
        np.testing.assert_array_equal(found.numpy(), np.searchsorted(bounds, values, side))
        np.testing.assert_array_equal(
            pyrt.bucketize(pyrt.tensor(values), pyrt.tensor(bounds), right=right).numpy(),
            np.searchsorted(bounds, values, side))
    rows = np.sort(normal((2, 5), 3), axis=1)
    found = pyrt.searchsorted(pyrt.tensor(rows), pyrt.tensor(values), side="right",
                              out_int32=True)
    assert found.dtype == np.int32
    np.testing.assert_array_equal(found.numpy(), [np.searchsorted(r, v, "right")
                                                  for r, v in zip(rows, values)])
    assert pyrt.searchsorted(pyrt.tensor(bounds), 3.0).tolist() == 1
    shuffled = np.array([7.0, 1.0, 3.0], np.float32)
    assert pyrt.searchsorted(pyrt.tensor(shuffled), pyrt.tensor([3.0]),
                             sorter=pyrt.tensor([1, 2, 0])).tolist() == [1]
    data = normal((50,), 4)
    np.testing.assert_array_equal(pyrt.histc(pyrt.tensor(data), bins=7).numpy(),
                                  np.histogram(data, 7, (data.min(), data.max()))[0])
    np.testing.assert_array_equal(pyrt.tensor(data).histc(4, min=-1, max=1).numpy(),
                                  np.histogram(data, 4, (-1, 1))[0])
    assert pyrt.histc(pyrt.tensor([1.0, 1.0]), bins=4).tolist() == [0.0, 0.0, 2.0, 0.0]


def test_binning_errors():
    b = np.array([1.0, 3.0], np.float32)
    cases = [
        (lambda m: m.searchsorted(m.tensor(np.ones((2, 2), np.float32)), m.tensor([3.0])),
         RuntimeError),
        (lambda m: m.searchsorted(m.tensor(b), m.tensor([3.0]), side="left", right=True),
         RuntimeError),
        (lambda m: m.bucketize(m.tensor([3.0]), m.tensor(np.ones((1, 2), np.float32))),
         RuntimeError),
        (lambda m: m.histc(m.tensor([1, 2]), bins=4), NotImplementedError),
        (lambda m: m.histc(m.tensor(b), bins=0), RuntimeError),
        (lambda m: m.histc(m.tensor(b), bins=4, min=3, max=1), RuntimeError),
        (lambda m: m.histc(m.tensor([1.0, np.nan]), bins=4), RuntimeError),
    ]
    for call, error in cases:
        same_error(lambda c=call: c(pyrt), lambda c=call: c(torch), error)


# ---- contractions and products ---------------------------------------------------------------

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->j", [(2, 3)]), ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...ij,...jk", [(5, 1, 2, 3), (4, 3, 2)]), ("ij...->ij", [(2, 3, 4)]),
    ("ij...", [(2, 3, 4)]), ("ij,j->i", [(2, 1), (3,)]), ("Ba,ab", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]), ("iij->j", [(2, 2, 3)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
]


@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_against_numpy_and_finite_differences(equation, shapes):
    arrays = [normal(s, i) for i, s in enumerate(shapes)]
    out = pyrt.einsum(equation, *[pyrt.tensor(a) for a in arrays])
    # (NumPy refuses to sum an ellipsis away: the same with a letter)
    numpy_form = equation.replace("ij...->ij", "ijk->ij")
    np.testing.assert_allclose(out.numpy(), np.einsum(numpy_form, *arrays), rtol=1e-5,
                               atol=1e-6)
    finite_differences(lambda *ts: pyrt.einsum(equation, list(ts)), *arrays, eps=1e-3)


@needs_torch
@pytest.mark.parametrize("equation, shapes", EQUATIONS)
def test_einsum_against_torch(equation, shapes):
    arrays = [normal(s, i) for i, s in enumerate(shapes)]
    against_torch(lambda *ts: (pyrt if isinstance(ts[0], pyrt.Tensor) else torch).einsum(
        equation, *ts), *arrays, rtol=1e-5, atol=1e-5)


def test_products_against_numpy():
    a, b = normal((2, 3), 1), normal((3, 4), 2)
    np.testing.assert_allclose(pyrt.tensordot(pyrt.tensor(a), pyrt.tensor(b), 1).numpy(),
                               np.tensordot(a, b, 1), rtol=1e-6)
    c = normal((3, 2, 4), 3)
    np.testing.assert_allclose(
        pyrt.tensordot(pyrt.tensor(c), pyrt.tensor(c), ([0, 2], [0, 2])).numpy(),
        np.tensordot(c, c, ([0, 2], [0, 2])), rtol=1e-5)
    np.testing.assert_allclose(pyrt.kron(pyrt.tensor(a), pyrt.tensor(b)).numpy(),
                               np.kron(a, b), rtol=1e-6)
    finite_differences(lambda s, t: s.kron(t), a, b[:2])
    assert pyrt.trace(pyrt.tensor(np.arange(6).reshape(2, 3))).tolist() == 4
    u, v = normal((4, 3), 4), normal((4, 3), 5)
    np.testing.assert_allclose(pyrt.cross(pyrt.tensor(u), pyrt.tensor(v), dim=1).numpy(),
                               np.cross(u, v), rtol=1e-5, atol=1e-6)
    finite_differences(lambda s, t: s.cross(t, dim=-1), u[:2], v[:2])
    x1, x2 = normal((3, 4), 6), normal((5, 4), 7)
    for p in (0.0, 1.0, 1.5, 2.0, 3.0, np.inf):
        diff = np.abs(x1[:, None] - x2[None])
        expected = ((diff != 0).sum(-1) if p == 0 else diff.max(-1) if p == np.inf
                    else (diff ** p).sum(-1) ** (1 / p))
        np.testing.assert_allclose(pyrt.cdist(pyrt.tensor(x1), pyrt.tensor(x2), p).numpy(),
                                   expected, rtol=1e-5)
    finite_differences(lambda s, t: pyrt.cdist(s, t), x1[:2], x2[:2], eps=1e-3)
    blocks = pyrt.block_diag(pyrt.tensor(a), pyrt.tensor([1, 2]), pyrt.tensor(5.0))
    expected = np.zeros((4, 6), np.float32)
    expected[:2, :3], expected[2, 3:5], expected[3, 5] = a, [1, 2], 5
    np.testing.assert_array_equal(blocks.numpy(), expected)
    finite_differences(lambda s, t: pyrt.block_diag(s, t), a, b)
    pairs = pyrt.cartesian_prod(pyrt.tensor([1, 2]), pyrt.tensor([3, 4, 5]))
    assert pairs.tolist() == [list(p) for p in itertools.product([1, 2], [3, 4, 5])]
    m, vec = normal((2,), 8), normal((3,), 9)
    np.testing.assert_allclose(
        pyrt.addmm(pyrt.tensor(m), pyrt.tensor(a), pyrt.tensor(b[:, :2]), beta=0.5,
                   alpha=2).numpy(), 0.5 * m + 2 * a @ b[:, :2], rtol=1e-5)
    np.testing.assert_allclose(pyrt.addmv(pyrt.tensor(m), pyrt.tensor(a),
                                          pyrt.tensor(vec)).numpy(), m + a @ vec, rtol=1e-5)
    nan = np.full((2, 2), np.nan, np.float32)
    assert not np.isnan(pyrt.addmm(pyrt.tensor(nan), pyrt.tensor(a), pyrt.tensor(b[:, :2]),
                                   beta=0).numpy()).any()
    b1, b2 = normal((3, 2, 4), 10), normal((3, 4, 2), 11)
    np.testing.assert_allclose(pyrt.baddbmm(pyrt.tensor(m), pyrt.tensor(b1),
                                            pyrt.tensor(b2)).numpy(), m + b1 @ b2, rtol=1e-5)
    np.testing.assert_allclose(pyrt.addbmm(pyrt.tensor(m), pyrt.tensor(b1), pyrt.tensor(b2),
                                           alpha=-1).numpy(), m - (b1 @ b2).sum(0), rtol=1e-5)
    finite_differences(lambda s, t, u: s.addmm(t, u, beta=2, alpha=0.5), m, a, b[:, :2],
                       eps=1e-3)
    np.testing.assert_array_equal(pyrt.tensor(a).tile(2, 1, 2).numpy(), np.tile(a, (2, 1, 2)))
    np.testing.assert_array_equal(pyrt.tile(pyrt.tensor(a), (2,)).numpy(), np.tile(a, 2))
    for k in range(-2, 5):
        np.testing.assert_array_equal(pyrt.rot90(pyrt.tensor(c), k, (2, 0)).numpy(),
                                      np.rot90(c, k, (2, 0)))
    finite_differences(lambda t: t.rot90(), a)


@needs_torch
@EXAMPLES
@given(seed=st.integers(0, 100), n=st.integers(1, 4), m=st.integers(1, 4),
       k=st.integers(1, 4), p=st.sampled_from([0.0, 1.0, 1.5, 2.0, 3.0, math.inf]))
def test_products_against_torch(seed, n, m, k, p):
    a, b = normal((n, k), seed), normal((k, m), seed + 1)
    bias, rows = normal((m,), seed + 2), normal((n, 1), seed + 3)
    against_torch(lambda s, t: both("tensordot")(s, t, 1), a, b, seed=seed, rtol=1e-5,
                  atol=1e-5)
    against_torch(lambda s, t: both("tensordot")(s, t, ([0], [1])), a, normal((m, n), seed),
                  seed=seed, rtol=1e-5, atol=1e-5)
    against_torch(lambda s, t: s.kron(t), a, b, seed=seed)
    against_torch(lambda s: s.trace(), a, seed=seed)
    for inp in (bias, rows):
        against_torch(lambda i, s, t: i.addmm(s, t, beta=0.5, alpha=-2), inp, a, b,
                      seed=seed, rtol=1e-5, atol=1e-5)
    against_torch(lambda i, s, t: both("addmv")(i, s, t, alpha=3), normal((n,), seed), a,
                  normal((k,), seed), seed=seed, rtol=1e-5, atol=1e-5)
    b1, b2 = normal((2, n, k), seed), normal((2, k, m), seed + 1)
    against_torch(lambda i, s, t: i.baddbmm(s, t, beta=2), bias, b1, b2, seed=seed,
                  rtol=1e-5, atol=1e-5)
    against_torch(lambda i, s, t: i.addbmm(s, t), bias, b1, b2, seed=seed, rtol=1e-5,
                  atol=1e-5)
    against_torch(lambda s, t: both("cdist")(s, t, p), a, normal((m, k), seed + 4),
                  seed=seed, rtol=1e-4, atol=1e-5)
    u, v = normal((n, 3), seed), normal((1, 3), seed + 5)
    against_torch(lambda s, t: s.cross(t, dim=1), u, v, seed=seed, rtol=1e-5, atol=1e-5)
    against_torch(lambda s, t: both("block_diag")(s, t, t[0]), a, b, seed=seed)
    against_torch(lambda s, t: both("cartesian_prod")(s, t), a[0], b[0], seed=seed)
    against_torch(lambda s: s.tile((2, 1, m)), a, seed=seed)
    against_torch(lambda s: s.rot90(seed % 7 - 3, [1, 0]), a, seed=seed)


def test_cross_default_dim_warns_as_torch():
    u = pyrt.tensor(normal((2, 3)))
    with pytest.warns(UserWarning, match="without specifying the dim"):
        out = pyrt.cross(u, u)
    assert out.shape == (2, 3)
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = torch.cross(torch.tensor(normal((2, 3))), torch.tensor(normal((2, 3))))
        assert_same(pyrt.cross(pyrt.tensor(normal((2, 3))), pyrt.tensor(normal((2, 3))), 1),
                    expected)


def test_product_errors():
    a, b, v = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones(3, np.float32)
    cases = [
        (lambda m: m.einsum("ij,ik", m.tensor(a), m.tensor(b)), RuntimeError),
        (lambda m: m.einsum("ij,jk", m.tensor(a)), RuntimeError),
        (lambda m: m.einsum("ij", m.tensor(a), m.tensor(b)), RuntimeError),
        (lambda m: m.einsum("ijk", m.tensor(a)), RuntimeError),
        (lambda m: m.einsum("i->ii", m.tensor(v)), RuntimeError),
        (lambda m: m.einsum("ij,j->i", m.tensor(a), m.tensor(v.astype(np.int64))),
         RuntimeError),
        (lambda m: m.tensordot(m.tensor(a), m.tensor(b), -1), RuntimeError),
        (lambda m: m.tensordot(m.tensor(a), m.tensor(b), ([0], [0])), RuntimeError),
        (lambda m: m.tensordot(m.tensor(a), m.tensor(b), ([1], [0, 1])), RuntimeError),
        (lambda m: m.tensordot(m.tensor(a), m.tensor(b.astype(np.int64)), 1), RuntimeError),
        (lambda m: m.trace(m.tensor(v)), RuntimeError),
        (lambda m: m.cdist(m.tensor(a), m.tensor(np.ones((4, 2), np.float32))), RuntimeError),
        (lambda m: m.cdist(m.tensor(v), m.tensor(v)), RuntimeError),
        (lambda m: m.cdist(m.tensor(a), m.tensor(a), p=-1), RuntimeError),
        (lambda m: m.cdist(m.tensor(a.astype(np.int64)), m.tensor(a.astype(np.int64))),
         RuntimeError),
        (lambda m: m.block_diag(m.tensor(np.ones((2, 2, 2), np.float32))), RuntimeError),
        (lambda m: m.cartesian_prod(m.tensor(a)), RuntimeError),
        (lambda m: m.cross(m.tensor(a), m.tensor(a), dim=0), RuntimeError),
        (lambda m: m.cross(m.tensor(np.ones((3, 1, 3), np.float32)),
                           m.tensor(np.ones((4, 3), np.float32)), dim=-1), RuntimeError),
        (lambda m: m.addmm(m.tensor(np.ones(3, np.float32)), m.tensor(a), m.tensor(b)),
         RuntimeError),
        (lambda m: m.addmm(m.tensor(b), m.tensor(a), m.tensor(a)), RuntimeError),
        (lambda m: m.addmm(m.tensor(np.ones(4, np.float32)), m.tensor(a),
                           m.tensor(b.astype(np.int64))), RuntimeError),
        (lambda m: m.addmv(m.tensor(np.ones(2, np.float32)), m.tensor(a),
                           m.tensor(np.ones(2, np.float32))), RuntimeError),
        (lambda m: m.addmv(m.tensor(np.ones(2, np.float32)), m.tensor(v), m.tensor(v)),
         RuntimeError),
        (lambda m: m.addbmm(m.tensor(np.ones(4, np.float32)),
                            m.tensor(np.ones((2, 2, 3), np.float32)),
                            m.tensor(np.ones((3, 3, 4), np.float32))), RuntimeError),
        (lambda m: m.rot90(m.tensor(a), 1, (0, 0)), RuntimeError),
        (lambda m: m.rot90(m.tensor(v)), RuntimeError),
        (lambda m: m.rot90(m.tensor(a), 1, (0, 1, 2)), RuntimeError),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call, error in cases:
            same_error(lambda c=call: c(pyrt), lambda c=call: c(torch), error)
        same_error(lambda: pyrt.cross(pyrt.tensor(np.ones((2, 4), np.float32)),
                                      pyrt.tensor(np.ones((2, 4), np.float32))),
                   lambda: torch.cross(torch.ones(2, 4), torch.ones(2, 4)), RuntimeError)


# ---- in-place forms --------------------------------------------------------------------------

IN_PLACE = [
    ("exp_", ()), ("log_", ()), ("sqrt_", ()), ("abs_", ()), ("neg_", ()), ("relu_", ()),
    ("sigmoid_", ()), ("tanh_", ()), ("floor_", ()), ("ceil_", ()), ("round_", ()),
    ("trunc_", ()), ("reciprocal_", ()), ("sign_", ()), ("clamp_", (-0.5, 0.5)),
    ("clip_", (None, 0.2)), ("clamp_min_", (0.1,)), ("clamp_max_", (0.1,)), ("pow_", (2,)),
    ("nan_to_num_", ()),
]


@pytest.mark.parametrize("name, args", IN_PLACE)
def test_in_place_forms_write_the_out_of_place_result(name, args):
    x = np.abs(normal((3, 4), 11)) + 0.1 if name in ("log_", "sqrt_") else normal((3, 4), 11)
    t = pyrt.tensor(x)
    expected = getattr(pyrt.tensor(x), name[:-1])(*args)
    data = t._data
    assert getattr(t, name)(*args) is t
    assert t._data is data  # the same memory, written
    np.testing.assert_allclose(t.numpy(), expected.numpy(), rtol=1e-6)
    if torch is not None:
        q = torch.tensor(x)
        getattr(q, name)(*args)
        assert_same(t, q, rtol=1e-6)
    # refused on a leaf that requires grad, as add_ is; allowed under no_grad
    leaf_tensor = pyrt.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(leaf_tensor, name)(*args)
    # on a tensor with history: recorded, with the out-of-place op's values and gradient
    hidden, reference = leaf_tensor * 2, getattr(leaf_tensor * 2, name[:-1])(*args)
    assert getattr(hidden, name)(*args) is hidden
    np.testing.assert_array_equal(hidden.detach().numpy(), reference.detach().numpy())
    assert hidden.requires_grad == reference.requires_grad
    if reference.requires_grad:
        weights = pyrt.tensor(normal((3, 4), 12))
        (reference * weights).sum().backward()
        want, leaf_tensor.grad = leaf_tensor.grad.numpy(), None
        (hidden * weights).sum().backward()
        np.testing.assert_array_equal(leaf_tensor.grad.numpy(), want)
        if torch is not None:  # PyTorch's own in-place op
            q = torch.tensor(x, requires_grad=True)
            r = q * 2
            getattr(r, name)(*args)
            (r * torch.tensor(weights.numpy())).sum().backward()
            np.testing.assert_allclose(want, q.grad.numpy(), rtol=1e-5, atol=1e-6)
        leaf_tensor.grad = None
    # on one a recorded op has read: refused
    read = leaf_tensor * 2
    read.sum()
    with pytest.raises(RuntimeError, match="already read"):
        getattr(read, name)(*args)
    with pyrt.no_grad():
        getattr(leaf_tensor, name)(*args)
    np.testing.assert_allclose(leaf_tensor.detach().numpy(), expected.numpy(), rtol=1e-6)


def test_in_place_indexing_forms():
    x, index = normal((3, 4), 12), np.array([[0, 2, 1, 0]])
    src = normal((1, 4), 13)
    for name, args in [
            ("scatter_", (0, pyrt.tensor(index), pyrt.tensor(src))),
            ("scatter_", (0, pyrt.tensor(index), 1.5)),
            ("scatter_add_", (0, pyrt.tensor(index), pyrt.tensor(src))),
            ("scatter_reduce_", (0, pyrt.tensor(index), pyrt.tensor(src), "amax")),
            ("index_add_", (1, pyrt.tensor([3, 0]), pyrt.tensor(x[:, :2]))),
            ("index_copy_", (1, pyrt.tensor([3, 0]), pyrt.tensor(x[:, :2]))),
            ("index_fill_", (0, pyrt.tensor([2]), -1.0)),
            ("index_put_", ((pyrt.tensor([1, 1]),), pyrt.tensor(src[0]), True)),
            ("masked_fill_", (pyrt.tensor(x > 0), 0.0))]:
        t = pyrt.tensor(x)
        expected = getattr(pyrt.tensor(x), name[:-1])(*args)
        assert getattr(t, name)(*args) is t
        np.testing.assert_allclose(t.numpy(), expected.numpy(), rtol=1e-6)
    # an operand that requires grad: recorded, the tensor joining the graph, as in PyTorch
    source = pyrt.tensor(src, requires_grad=True)
    t = pyrt.tensor(x).scatter_add_(0, pyrt.tensor(index), source)
    assert t.requires_grad
    (t * pyrt.tensor(x)).sum().backward()
    np.testing.assert_array_equal(source.grad.numpy(),
                                  np.take_along_axis(x, index, 0))
    with pytest.raises(RuntimeError):  # a mask that broadcasts self to a larger shape
        pyrt.tensor(x[0]).masked_fill_(pyrt.tensor(np.ones((2, 4), bool)), 1.0)


def test_in_place_dtype_rules_and_modified_inputs():
    ints = np.array([1, -2, 3])
    for name in ("exp_", "sqrt_", "reciprocal_", "sigmoid_"):
        same_error(lambda n=name: getattr(pyrt.tensor(ints), n)(),
                   lambda n=name: getattr(torch.tensor(ints), n)(), RuntimeError)
    same_error(lambda: pyrt.tensor(ints).clamp_(0.5), lambda: torch.tensor(ints).clamp_(0.5),
               RuntimeError)
    same_error(lambda: pyrt.tensor(ints).pow_(0.5), lambda: torch.tensor(ints).pow_(0.5),
               RuntimeError)
    for name, args in [("abs_", ()), ("neg_", ()), ("relu_", ()), ("floor_", ()),
                       ("sign_", ()), ("pow_", (2,)), ("clamp_", (0, 2))]:
        t = pyrt.tensor(ints)
        getattr(t, name)(*args)
        assert t.dtype == np.int64
        if torch is not None:
            q = torch.tensor(ints)
            getattr(q, name)(*args)
            assert t.tolist() == q.tolist()
    # a constant that a graph's backward reads, written in place: backward refuses
    w = pyrt.tensor([1.0, 2.0], requires_grad=True)
    c = pyrt.tensor([3.0, 4.0])
    y = (w * c).sum()
    c.exp_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
