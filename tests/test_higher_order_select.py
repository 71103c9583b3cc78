"""Higher-order gradients through the ops of pyrt.double_backward_select (sort, topk, median,
nanmedian, the scatter family, index_* ops, masked_scatter, put, take, grid_sample with
respect to input): second derivatives against PyTorch (create_graph twice, float64) and
against central differences of the first gradient, on inputs without ties; gradgradcheck;
third derivatives; the cases still refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import autograd, double_backward
from pyrt.autograd import gradgradcheck

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def _i(L, values):
    return L.tensor(np.array(values, np.int64))


def _grid(L):
    points = np.array([[[[-0.7, -0.2], [0.3, 0.55]], [[0.9, -0.85], [-0.1, 0.4]]]], np.float32)
    return L.tensor(points.astype(np.float64) if L is torch else points)


def _mask(L):
    return L.tensor(np.array([[True, False, True, False], [False, True, True, False],
                              [False, False, False, True]]))


# name -> (input shapes, op written once for pyrt and torch)
OPS = {
    "sort": (((3, 4),), lambda L, x: x.sort(0)[0]),
    "sort_descending": (((3, 4),), lambda L, x: x.sort(1, descending=True)[0]),
    "msort": (((3, 4),), lambda L, x: x.msort()),
    "topk": (((3, 4),), lambda L, x: x.topk(2)[0]),
    "topk_smallest": (((3, 4),), lambda L, x: x.topk(2, 0, largest=False)[0]),
    "kthvalue": (((3, 4),), lambda L, x: x.kthvalue(2, 1)[0]),
    "median": (((3, 4),), lambda L, x: x.median().reshape(1)),
    "median_dim": (((3, 4),), lambda L, x: x.median(1)[0]),
    "nanmedian": (((3, 4),), lambda L, x: x.nanmedian().reshape(1)),
    "quantile": (((3, 4),), lambda L, x: L.quantile(x, 0.3, 1)),
    "scatter": (((3, 4), (2, 3)), lambda L, x, s: L.scatter(
        x, 0, _i(L, [[1, 0, 2], [2, 1, 0]]), s)),
    "scatter_value": (((3, 4),), lambda L, x: L.scatter(x, 1, _i(L, [[1], [3], [0]]), 0.5)),
    "scatter_add": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_add(
        x, 0, _i(L, [[1, 0, 1], [1, 1, 0]]), s)),
    "scatter_reduce_sum": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_reduce(
        x, 0, _i(L, [[1, 0, 1], [1, 1, 0]]), s, "sum", include_self=False)),
    "scatter_reduce_mean": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_reduce(
        x, 0, _i(L, [[1, 0, 1], [1, 1, 0]]), s, "mean")),
    "scatter_reduce_mean_alone": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_reduce(
        x, 0, _i(L, [[1, 0, 1], [1, 1, 0]]), s, "mean", include_self=False)),
    "scatter_reduce_amax": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_reduce(
        x, 1, _i(L, [[1, 0, 1], [3, 3, 0]]), s, "amax")),
    "scatter_reduce_amin": (((3, 4), (2, 3)), lambda L, x, s: L.scatter_reduce(
        x, 1, _i(L, [[1, 0, 1], [3, 3, 0]]), s, "amin", include_self=False)),
    "index_add": (((3, 4), (3, 2)), lambda L, x, s: L.index_add(
        x, 1, _i(L, [2, 2]), s, alpha=1.5)),
    "index_copy": (((3, 4), (2, 4)), lambda L, x, s: L.index_copy(x, 0, _i(L, [2, 0]), s)),
    "index_fill": (((3, 4),), lambda L, x: L.index_fill(x, 1, _i(L, [3, 0]), -0.5)),
    "index_fill_tensor": (((3, 4), ()), lambda L, x, v: L.index_fill(x, 1, _i(L, [3, 0]), v)),
    "index_put": (((3, 4), (4,)), lambda L, x, v: L.index_put(x, (_i(L, [2, 0]),), v)),
    "index_put_accumulate": (((3, 4), (3, 1)), lambda L, x, v: L.index_put(
        x, (_i(L, [2, 0, 2]), _i(L, [1, 1, 1])), v.reshape(3), accumulate=True)),
    "index_put_mask": (((3, 4), (5,)), lambda L, x, v: L.index_put(x, (_mask(L),), v)),
    "masked_scatter": (((3, 4), (7,)), lambda L, x, s: L.masked_scatter(x, _mask(L), s)),
    "masked_scatter_broadcast": (((1, 4), (14,)), lambda L, x, s: L.masked_scatter(
        x, _mask(L), s)),
    "put": (((3, 4), (3,)), lambda L, x, s: x.put(_i(L, [5, 0, -1]), s)),
    "put_accumulate": (((3, 4), (3,)), lambda L, x, s: x.put(_i(L, [5, 0, 5]), s, True)),
    "take": (((3, 4),), lambda L, x: L.take(x, _i(L, [[5, 0], [5, -1]]))),
    "grid_sample": (((1, 2, 3, 3),), lambda L, x: L.nn.functional.grid_sample(
        x, _grid(L), align_corners=False)),
    "grid_sample_border": (((1, 2, 3, 3),), lambda L, x: L.nn.functional.grid_sample(
        x, _grid(L) * 1.4, padding_mode="border", align_corners=True)),
    "grid_sample_nearest": (((1, 2, 3, 3),), lambda L, x: L.nn.functional.grid_sample(
        x, _grid(L), mode="nearest", align_corners=False)),
}


def _loss(L, op, xs):
    """A scalar whose Hessian through the op is not zero: sum of sin(op(xs)) * op(xs)."""
    y = op(L, *xs)
    return (y.sin() * y).sum()


def _values(shapes, seed):
    """Distinct values (no ties, so no order or maximum flips under small steps)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        n = int(np.prod(shape))
        out.append((rng.permutation(n) * (2.6 / max(n, 1)) - 1.3 + rng.uniform(0, 0.05, n))
                   .reshape(shape).astype(np.float32))
    return out


def _hvp(op, xvs, vs):
    """pyrt's gradients and Hessian-vector products of _loss along vs: grad of <grads, vs>."""
    xs = [pyrt.tensor(x, requires_grad=True) for x in xvs]
    gs = autograd.grad(_loss(pyrt, op, xs), xs, create_graph=True)
    dot = sum((g * pyrt.tensor(v)).sum() for g, v in zip(gs, vs))
    hs = autograd.grad(dot, xs)
    return [g.detach().numpy() for g in gs], [h.numpy() for h in hs]


def _first_gradients(op, xvs):
    xs = [pyrt.tensor(x, requires_grad=True) for x in xvs]
    _loss(pyrt, op, xs).backward()
    return [x.grad.numpy().astype(np.float64) for x in xs]


def _central(op, xvs, vs, eps=1e-3):
    plus = _first_gradients(op, [x + eps * v for x, v in zip(xvs, vs)])
    minus = _first_gradients(op, [x - eps * v for x, v in zip(xvs, vs)])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


@needs_torch
@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivatives_match_torch(name):
    shapes, op = OPS[name]
    xvs, vs = _values(shapes, 1), _values(shapes, 2)
    gs, hs = _hvp(op, xvs, vs)
    xt = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xvs]
    gt = torch.autograd.grad(_loss(torch, op, xt), xt, create_graph=True)
    dot = sum((g * torch.tensor(v, dtype=torch.float64)).sum() for g, v in zip(gt, vs))
    ht = torch.autograd.grad(dot, xt)
    for g, h, a, b in zip(gs, hs, gt, ht):
        np.testing.assert_allclose(g, a.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(h, b.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivatives_match_central_differences(name):
    shapes, op = OPS[name]
    xvs, vs = _values(shapes, 3), _values(shapes, 4)
    _, hs = _hvp(op, xvs, vs)
    for h, fd in zip(hs, _central(op, xvs, vs)):
        np.testing.assert_allclose(h, fd, rtol=2e-2, atol=2e-2)


@SETTINGS
@given(n=st.integers(1, 4), m=st.integers(1, 5), seed=st.integers(0, 2 ** 16),
       name=st.sampled_from(["sort", "topk", "median_dim", "scatter_add", "take"]))
def test_second_derivatives_over_shapes(n, m, seed, name):
    rng = np.random.default_rng(seed)
    places, flat = rng.integers(0, m, (n, m)), rng.integers(-n * m, n * m, 7)
    ops = {"sort": lambda L, x: x.sort(seed % 2)[0],
           "topk": lambda L, x: x.topk(1 + seed % m, 1)[0],
           "median_dim": lambda L, x: x.median(seed % 2)[0],
           "scatter_add": lambda L, x: L.scatter_add(
               x, 1, L.tensor(places), x * 2.0),
           "take": lambda L, x: L.take(x, L.tensor(flat))}
    op = ops[name]
    xvs, vs = _values([(n, m)], seed), _values([(n, m)], seed + 1)
    _, hs = _hvp(op, xvs, vs)
    for h, fd in zip(hs, _central(op, xvs, vs)):
        np.testing.assert_allclose(h, fd, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["sort", "median", "median_dim", "scatter", "scatter_add",
                                  "scatter_reduce_mean", "scatter_reduce_amax", "index_add",
                                  "index_copy", "index_fill_tensor", "index_put",
                                  "masked_scatter", "put", "take", "grid_sample"])
def test_gradgradcheck(name):
    shapes, op = OPS[name]
    xs = [pyrt.tensor(x, requires_grad=True) for x in _values(shapes, 5)]
    assert gradgradcheck(lambda *t: _loss(pyrt, op, t), tuple(xs), eps=1e-3, atol=3e-2,
                         rtol=3e-2)


@needs_torch
@pytest.mark.parametrize("name", ["sort", "topk", "median", "scatter", "scatter_reduce_mean",
                                  "index_add", "masked_scatter", "put", "take", "grid_sample"])
def test_third_derivatives_match_torch(name):
    """Gradients of every order pass through: each linear map and its adjoint alternate."""
    shapes, op = OPS[name]
    xvs, vs = _values(shapes, 6), _values(shapes, 7)

    def third(L, xs, vs):
        gs = L.autograd.grad(_loss(L, op, xs), xs, create_graph=True)
        hs = L.autograd.grad(sum((g * v).sum() for g, v in zip(gs, vs)), xs, create_graph=True)
        return L.autograd.grad(sum((h * h).sum() for h in hs), xs)

    ts = third(pyrt, [pyrt.tensor(x, requires_grad=True) for x in xvs],
               [pyrt.tensor(v) for v in vs])
    tt = third(torch, [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xvs],
               [torch.tensor(v, dtype=torch.float64) for v in vs])
    for t, u in zip(ts, tt):
        np.testing.assert_allclose(t.numpy(), u.numpy(), rtol=1e-3, atol=1e-3)


def test_median_shares_its_second_derivative_among_ties():
    """Of all elements, the median's gradient is shared evenly among the elements equal to
    it; the recorded gradient keeps that share."""
    x = pyrt.tensor([1.0, 2.0, 2.0, 3.0, 0.0], requires_grad=True)
    (g,) = autograd.grad(x.median() ** 3, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [0, 6, 6, 0, 0])
    (h,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [0, 6, 6, 0, 0])  # d(3 m^2)/dm = 12, shared


@pytest.mark.parametrize("make, name, detail", [
    (lambda t: pyrt.scatter_reduce(t, 0, pyrt.tensor([[1, 0]]), t[:1], "prod"),
     "ScatterReduceBackward0", "with reduce='prod'"),
    (lambda t: pyrt.nn.functional.grid_sample(t.reshape(1, 1, 2, 2), t.reshape(1, 1, 2, 2)),
     "GridSampleBackward0", "with respect to grid"),
])
def test_cases_still_without_a_formula_are_named(make, name, detail):
    x = pyrt.tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  f"implemented for create_graph=True: .*"
                                                  f"{detail}"):
        autograd.grad((make(x) ** 2).sum(), x, create_graph=True)


def test_grid_sample_with_a_grid_that_needs_no_grad_passes():
    x = pyrt.tensor(_values([(1, 1, 3, 3)], 9)[0], requires_grad=True)
    y = pyrt.nn.functional.grid_sample(x, _grid(pyrt), align_corners=False)
    (g,) = autograd.grad((y ** 2).sum(), x, create_graph=True)
    (h,) = autograd.grad(g.sum(), x)
    assert h.shape == x.shape


def test_every_select_formula_is_in_the_table():
    from pyrt import double_backward_select as select

    formulas = set(double_backward._table().values())
    for name in ("_taken", "_median_all", "_median_along", "_scatter", "_index_add",
                 "_index_copy", "_index_fill", "_index_put", "_masked_scatter", "_put",
                 "_take", "_grid_sample"):
        assert getattr(select, name) in formulas
