"""pyrt's numeric utilities (index helpers, statistics, calculus on samples, window functions,
the *_scatter ops, creation functions, norms and products) against PyTorch where it is
installed and against NumPy or a definition written out in float64 where it is not; their
gradients against PyTorch and against central finite differences."""

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
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def _array(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _numeric_grad(f, arrays, k, eps=1e-3):
    """d sum(f(*arrays) * w) / d arrays[k] by central differences in float64 (w fixed)."""
    base = [a.astype(np.float64) for a in arrays]
    weights = np.random.default_rng(99).standard_normal(np.shape(f(*base)))
    grad = np.zeros_like(base[k])
    for i in np.ndindex(base[k].shape):
        plus = [a.copy() for a in base]
        minus = [a.copy() for a in base]
        plus[k][i] += eps
        minus[k][i] -= eps
        grad[i] = ((f(*plus) - f(*minus)) * weights).sum() / (2 * eps)
    return grad, weights


def _pyrt_grads(f, arrays, weights):
    leaves = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    (f(*leaves) * pyrt.tensor(weights.astype(np.float32))).sum().backward()
    return [_grad_of(leaf) for leaf in leaves]


def _grad_of(leaf):
    """leaf's gradient, zeros where the result does not depend on it (no gradient)."""
    return np.zeros(leaf.shape, np.float32) if leaf.grad is None else leaf.grad.numpy()


def check_gradient(pyrt_f, numpy_f, arrays, atol=2e-2):
    """pyrt's gradients of sum(f * w) against central differences of the NumPy definition."""
    for k in range(len(arrays)):
        expected, weights = _numeric_grad(numpy_f, arrays, k)
        got = _pyrt_grads(pyrt_f, arrays, weights)[k]
        np.testing.assert_allclose(got, expected, rtol=2e-2, atol=atol)


def check_against_torch(pyrt_f, torch_f, arrays, rtol=1e-4, atol=1e-5):
    """pyrt's values and gradients against PyTorch's on the same float32 inputs."""
    leaves = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    ours = pyrt_f(*leaves)
    theirs_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    theirs = torch_f(*theirs_leaves)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                               atol=atol)
    weights = np.random.default_rng(5).standard_normal(tuple(theirs.shape)).astype(np.float32)
    (ours * pyrt.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    for a, b in zip(leaves, theirs_leaves):
        np.testing.assert_allclose(_grad_of(a), b.grad.numpy(), rtol=rtol, atol=atol)


shapes_2d = st.tuples(st.integers(1, 4), st.integers(2, 6))


# ---- index helpers ---------------------------------------------------------------------------

@SETTINGS
@given(st.integers(0, 6), st.integers(0, 6), st.integers(-7, 7))
def test_triangle_indices_match_numpy(row, col, offset):
    lower = pyrt.tril_indices(row, col, offset).numpy()
    upper = pyrt.triu_indices(row, col, offset).numpy()
    np.testing.assert_array_equal(lower, np.stack(np.tril_indices(row, offset, col)))
    np.testing.assert_array_equal(upper, np.stack(np.triu_indices(row, offset, col)))
    assert lower.dtype == np.int64 and lower.shape[0] == 2
    if torch is not None:
        np.testing.assert_array_equal(lower, torch.tril_indices(row, col, offset).numpy())
        np.testing.assert_array_equal(upper, torch.triu_indices(row, col, offset).numpy())


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 100))
def test_unravel_index_matches_numpy(shape, seed):
    total = int(np.prod(shape))
    flat = np.random.default_rng(seed).integers(0, total, (2, 3))
    got = pyrt.unravel_index(pyrt.tensor(flat), tuple(shape))
    for ours, expected in zip(got, np.unravel_index(flat, shape)):
        np.testing.assert_array_equal(ours.numpy(), expected)
    if torch is not None:
        wrapped = flat - total  # negative indices count from the end, as in torch
        for ours, theirs in zip(pyrt.unravel_index(pyrt.tensor(wrapped), shape),
                                torch.unravel_index(torch.tensor(wrapped), shape)):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_unravel_index_errors():
    with pytest.raises(TypeError, match="integer dtype"):
        pyrt.unravel_index(pyrt.tensor([1.0]), (2, 3))
    with pytest.raises(ValueError, match="negative"):
        pyrt.unravel_index(pyrt.tensor([1]), (2, -3))
    with pytest.raises(RuntimeError, match="non-negative"):
        pyrt.tril_indices(-1, 3)


@SETTINGS
@given(st.integers(1, 5), st.integers(0, 4), st.booleans())
def test_combinations_values_and_gradient(n, r, with_replacement):
    import itertools

    x = _array(n, n)
    got = pyrt.combinations(pyrt.tensor(x), r, with_replacement).numpy()
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    expected = np.array([[x[i] for i in c] for c in pick(range(n), r)], np.float32)
    if r == 0:
        assert got.shape == (0,)
    else:
        np.testing.assert_array_equal(got, expected.reshape(-1, r))
    if torch is not None:
        theirs = torch.combinations(torch.tensor(x), r, with_replacement).numpy()
        np.testing.assert_array_equal(got, theirs)
    if r and expected.size:
        check_gradient(lambda t: pyrt.combinations(t, r, with_replacement),
                       lambda a: np.array([[a[i] for i in c] for c in pick(range(n), r)]),
                       [x])
    with pytest.raises(RuntimeError, match="1D vector"):
        pyrt.combinations(pyrt.ones(2, 2))


# ---- products and matrices -------------------------------------------------------------------

@SETTINGS
@given(st.integers(1, 6), st.integers(0, 100))
def test_vdot_and_dist(n, seed):
    a, b = _array(seed, n), _array(seed + 1, n)
    np.testing.assert_allclose(pyrt.vdot(pyrt.tensor(a), pyrt.tensor(b)).item(),
                               np.vdot(a.astype(np.float64), b), rtol=1e-5, atol=1e-5)
    check_gradient(lambda x, y: pyrt.vdot(x, y), lambda x, y: np.vdot(x, y), [a, b])
    for p in (1, 2, 3.5):
        check_gradient(lambda x, y, p=p: pyrt.dist(x, y, p),
                       lambda x, y, p=p: (np.abs(x - y) ** p).sum() ** (1 / p), [a, b])
    for p in (0, 1, 2, float("inf"), -float("inf")):
        expected = np.linalg.norm((a - b).astype(np.float64), ord=p)
        np.testing.assert_allclose(pyrt.dist(pyrt.tensor(a), pyrt.tensor(b), p).item(),
                                   expected, rtol=1e-5)
        if torch is not None and p != 0:  # (torch's backward of the 0-norm fails)
            check_against_torch(lambda x, y, p=p: x.dist(y, p),
                                lambda x, y, p=p: x.dist(y, p), [a, b])


def test_vdot_and_dist_errors():
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        pyrt.vdot(pyrt.ones(2, 2), pyrt.ones(2))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        pyrt.vdot(pyrt.ones(3), pyrt.ones(2))
    with pytest.raises(RuntimeError, match="same dtype"):
        pyrt.vdot(pyrt.ones(3), pyrt.tensor([1, 1, 1]))
    with pytest.raises((RuntimeError, ValueError), match="broadcast"):
        pyrt.dist(pyrt.ones(2, 3), pyrt.ones(4))
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.dist(pyrt.tensor([1, 2]), pyrt.tensor([1, 2]))


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from([0, 1, 0.5]),
       st.sampled_from([1, -2, 0.25]))
def test_addr_values_and_gradients(n, m, beta, alpha):
    base, v1, v2 = _array(n, (n, m)), _array(m + 7, n), _array(3, m)
    expected = beta * base.astype(np.float64) + alpha * np.outer(v1, v2)
    got = pyrt.addr(pyrt.tensor(base), pyrt.tensor(v1), pyrt.tensor(v2), beta=beta,
                    alpha=alpha)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
    check_gradient(lambda b, x, y: b.addr(x, y, beta=beta, alpha=alpha),
                   lambda b, x, y: beta * b + alpha * np.outer(x, y), [base, v1, v2])
    if torch is not None:
        check_against_torch(lambda b, x, y: b.addr(x, y, beta=beta, alpha=alpha),
                            lambda b, x, y: b.addr(x, y, beta=beta, alpha=alpha),
                            [base, v1, v2])
    inplace = pyrt.tensor(base)
    assert inplace.addr_(pyrt.tensor(v1), pyrt.tensor(v2), beta=beta, alpha=alpha) is inplace
    np.testing.assert_allclose(inplace.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_addr_errors_and_nan_with_beta_zero():
    out = pyrt.addr(pyrt.full((2, 3), float("nan")), pyrt.ones(2), pyrt.ones(3), beta=0)
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1"):
        pyrt.addr(pyrt.ones(2, 3), pyrt.ones(2, 1), pyrt.ones(3))
    with pytest.raises(RuntimeError, match="expanded size"):
        pyrt.addr(pyrt.ones(2, 3), pyrt.ones(2), pyrt.ones(4))
    with pytest.raises(RuntimeError, match="alpha must not be a floating"):
        pyrt.addr(pyrt.tensor([[1]]), pyrt.tensor([1]), pyrt.tensor([1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="2D tensor expected"):
        pyrt.ones(3).addr_(pyrt.ones(2), pyrt.ones(3))


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=2, max_size=5), st.integers(0, 50))
def test_chain_matmul(dims, seed):
    mats = [_array(seed + k, (dims[k], dims[k + 1])) for k in range(len(dims) - 1)]
    with pytest.warns(UserWarning, match="deprecated"):
        got = pyrt.chain_matmul(*[pyrt.tensor(m) for m in mats])
    np.testing.assert_allclose(got.numpy(), np.linalg.multi_dot(
        [m.astype(np.float64) for m in mats]) if len(mats) > 1 else mats[0], rtol=1e-4,
        atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_gradient(lambda *ms: pyrt.chain_matmul(*ms),
                       lambda *ms: ms[0] if len(ms) == 1 else np.linalg.multi_dot(ms), mats)


def test_chain_matmul_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="one or more matrices"):
            pyrt.chain_matmul()
        with pytest.raises(RuntimeError, match="expected 2 instead"):
            pyrt.chain_matmul(pyrt.ones(2))
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            pyrt.chain_matmul(pyrt.ones(2, 3), pyrt.ones(2, 3))


@SETTINGS
@given(st.integers(0, 5), st.one_of(st.none(), st.integers(0, 5)), st.booleans())
def test_vander_and_diagflat(n, columns, increasing):
    x = _array(n, n)
    got = pyrt.vander(pyrt.tensor(x), columns, increasing).numpy()
    expected = np.vander(x.astype(np.float64), columns, increasing)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if n and (n if columns is None else columns) > 1:  # (one column of ones: no gradient)
        check_gradient(lambda t: pyrt.vander(t, columns, increasing),
                       lambda a: np.vander(a, columns, increasing), [x])
    ints = pyrt.vander(pyrt.tensor(np.arange(n)), columns, increasing)
    assert ints.dtype == pyrt.int64
    np.testing.assert_array_equal(ints.numpy(), np.vander(np.arange(n), columns, increasing))
    m = _array(n + 1, (2, n))
    for offset in (-1, 0, 2):
        np.testing.assert_array_equal(pyrt.diagflat(pyrt.tensor(m), offset).numpy(),
                                      np.diagflat(m, offset))
        if n:
            check_gradient(lambda t, o=offset: t.diagflat(o),
                           lambda a, o=offset: np.diagflat(a, o), [m])


def test_vander_errors():
    with pytest.raises(RuntimeError, match="one-dimensional"):
        pyrt.vander(pyrt.ones(2, 2))
    with pytest.raises(RuntimeError, match="non-negative"):
        pyrt.vander(pyrt.ones(2), N=-1)


def test_vander_gradient_at_zero():
    check_gradient(lambda x: pyrt.vander(x, 4), lambda x: np.vander(x, 4),
                   [np.array([0.0, 1.5, -2.0], np.float32)])


def test_rsub():
    x = _array(0, (2, 3))
    np.testing.assert_allclose(pyrt.rsub(pyrt.tensor(x), 3, alpha=2).numpy(), 3 - 2 * x,
                               rtol=1e-6)
    other = _array(1, 3)
    check_gradient(lambda a, b: pyrt.rsub(a, b, alpha=-1.5), lambda a, b: b + 1.5 * a,
                   [x, other])
    ints = pyrt.rsub(pyrt.tensor([1, 2]), 3.5)
    np.testing.assert_array_equal(ints.numpy(), [2.5, 1.5])
    with pytest.raises(RuntimeError, match="alpha must not be a floating"):
        pyrt.rsub(pyrt.tensor([1, 2]), 3, alpha=0.5)


# ---- calculus on samples ---------------------------------------------------------------------

def _np_trapezoid(y, x=None, dx=1.0, axis=-1):
    f = getattr(np, "trapezoid", None) or np.trapz
    return f(y, x=x, dx=dx, axis=axis)


@SETTINGS
@given(shapes_2d, st.sampled_from([0, 1, -1]), st.sampled_from([None, 0.5, 2]),
       st.booleans())
def test_trapezoid_values_and_gradients(shape, dim, dx, with_x):
    y = _array(shape[0], shape)
    n = shape[dim]
    x = np.cumsum(np.random.default_rng(n).random(n) + 0.1).astype(np.float32)
    axis_x = x if with_x else None
    expected = _np_trapezoid(y.astype(np.float64), axis_x, dx or 1.0, dim)
    cumulative = np.stack([_np_trapezoid(np.take(y.astype(np.float64), range(k + 2), dim),
                                         None if axis_x is None else axis_x[:k + 2],
                                         dx or 1.0, dim) for k in range(n - 1)], dim) \
        if n > 1 else None
    kwargs = {"dim": dim} if with_x else {"dx": dx, "dim": dim}
    xs = (pyrt.tensor(x),) if with_x else ()
    np.testing.assert_allclose(pyrt.trapezoid(pyrt.tensor(y), *xs, **kwargs).numpy(), expected,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pyrt.trapz(pyrt.tensor(y), *xs, **kwargs).numpy(), expected,
                               rtol=1e-5, atol=1e-5)
    if cumulative is not None:
        got = pyrt.cumulative_trapezoid(pyrt.tensor(y), *xs, **kwargs).numpy()
        np.testing.assert_allclose(got, cumulative, rtol=1e-5, atol=1e-5)
    if with_x:
        check_gradient(lambda a, b: pyrt.trapezoid(a, b, dim=dim),
                       lambda a, b: _np_trapezoid(a, b, axis=dim), [y, x])
        check_gradient(lambda a, b: pyrt.cumulative_trapezoid(a, b, dim=dim),
                       lambda a, b: np.cumsum(np.diff(b).reshape((-1,) + (1,) * (
                           (dim % 2 == 0) * (y.ndim - 1))) * (
                           np.take(a, range(1, n), dim) + np.take(a, range(n - 1), dim)) / 2,
                           axis=dim), [y, x])
    if torch is not None:
        tx = (lambda t, u: torch.trapezoid(t, u, dim=dim)) if with_x else (
            lambda t: torch.trapezoid(t, dx=dx or 1, dim=dim))
        px = (lambda t, u: pyrt.trapezoid(t, u, dim=dim)) if with_x else (
            lambda t: pyrt.trapezoid(t, dx=dx, dim=dim))
        check_against_torch(px, tx, [y, x] if with_x else [y])
        tc = (lambda t, u: torch.cumulative_trapezoid(t, u, dim=dim)) if with_x else (
            lambda t: torch.cumulative_trapezoid(t, dx=dx or 1, dim=dim))
        pc = (lambda t, u: pyrt.cumulative_trapezoid(t, u, dim=dim)) if with_x else (
            lambda t: pyrt.cumulative_trapezoid(t, dx=dx, dim=dim))
        check_against_torch(pc, tc, [y, x] if with_x else [y])


def test_trapezoid_edge_cases_and_errors():
    assert pyrt.trapezoid(pyrt.ones(3, 0)).shape == (3,)
    assert pyrt.cumulative_trapezoid(pyrt.ones(3, 0)).shape == (3, 0)
    assert pyrt.trapezoid(pyrt.arange(4)).item() == 4.5
    with pytest.raises(TypeError):
        pyrt.trapezoid(pyrt.ones(3), pyrt.ones(3), dx=2)
    with pytest.raises(RuntimeError, match="one `x` value for each sample"):
        pyrt.trapezoid(pyrt.ones(3, 4), pyrt.ones(3))
    with pytest.raises(IndexError):
        pyrt.trapezoid(pyrt.ones(()), dim=0)


@SETTINGS
@given(st.tuples(st.integers(3, 5), st.integers(3, 6)), st.sampled_from([1, 2]),
       st.sampled_from(["unit", "scalar", "list", "coordinates"]))
def test_gradient_matches_numpy(shape, edge_order, spacing_kind):
    f = _array(shape[1], shape)
    coords = [np.cumsum(np.random.default_rng(k).random(n) + 0.2) for k, n in enumerate(shape)]
    spacing, np_spacing = {
        "unit": (1, ()),
        "scalar": (0.5, (0.5,)),
        "list": ([2.0, 0.25], (2.0, 0.25)),
        "coordinates": ([pyrt.tensor(c.astype(np.float32)) for c in coords],
                        tuple(c.astype(np.float32).astype(np.float64) for c in coords)),
    }[spacing_kind]
    if spacing_kind == "scalar":
        np_spacing = (0.5, 0.5)
    got = pyrt.gradient(pyrt.tensor(f), spacing=spacing, edge_order=edge_order)
    expected = np.gradient(f.astype(np.float64), *np_spacing, edge_order=edge_order)
    assert isinstance(got, tuple) and len(got) == 2
    for ours, theirs in zip(got, expected):
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-4, atol=1e-4)
    one = pyrt.gradient(pyrt.tensor(f), spacing=spacing[:1] if isinstance(spacing, list)
                        else spacing, dim=0, edge_order=edge_order)
    assert len(one) == 1
    np.testing.assert_allclose(one[0].numpy(), got[0].numpy())
    check_gradient(lambda t: pyrt.gradient(t, spacing=spacing, edge_order=edge_order)[1],
                   lambda a: np.gradient(a, *np_spacing, edge_order=edge_order)[1], [f])
    if torch is not None:
        t_spacing = spacing if spacing_kind != "coordinates" else [
            torch.tensor(c.astype(np.float32)) for c in coords]
        for ours, theirs in zip(got, torch.gradient(torch.tensor(f), spacing=t_spacing,
                                                   edge_order=edge_order)):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)


def test_gradient_errors():
    x = pyrt.ones(3, 4)
    with pytest.raises(RuntimeError, match="edge_order=1 and edge_order=2"):
        pyrt.gradient(x, edge_order=3)
    with pytest.raises(RuntimeError, match="list of length equal to"):
        pyrt.gradient(x, spacing=[2.0])
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        pyrt.gradient(pyrt.ones(2, 3), edge_order=2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        pyrt.gradient(x, dim=(0, 0))
    with pytest.raises(IndexError):
        pyrt.gradient(x, dim=3)
    with pytest.raises(RuntimeError, match="one dimension"):
        pyrt.gradient(x, spacing=[pyrt.ones(1, 3)], dim=0)
    assert pyrt.gradient(pyrt.ones(())) == ()


# ---- statistics ------------------------------------------------------------------------------

@SETTINGS
@given(st.tuples(st.integers(1, 4), st.integers(3, 7)), st.integers(0, 2), st.booleans(),
       st.booleans())
def test_cov_and_corrcoef_match_numpy(shape, correction, use_fw, use_aw):
    x = _array(shape[0] * 10 + shape[1], shape)
    rng = np.random.default_rng(shape[1])
    fw = rng.integers(1, 4, shape[1]) if use_fw else None
    aw = (rng.random(shape[1]) + 0.5).astype(np.float32) if use_aw else None
    got = pyrt.cov(pyrt.tensor(x), correction=correction,
                   fweights=None if fw is None else pyrt.tensor(fw),
                   aweights=None if aw is None else pyrt.tensor(aw))
    expected = np.cov(x.astype(np.float64), ddof=correction, fweights=fw, aweights=aw)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pyrt.corrcoef(pyrt.tensor(x)).numpy(), np.corrcoef(x),
                               rtol=1e-4, atol=1e-5)

    def np_cov(a):
        return np.cov(a, ddof=correction, fweights=fw, aweights=aw)

    def our_cov(t):
        return t.cov(correction=correction, fweights=None if fw is None else pyrt.tensor(fw),
                     aweights=None if aw is None else pyrt.tensor(aw))

    check_gradient(our_cov, np_cov, [x])
    if shape[0] > 1:
        check_gradient(lambda t: t.corrcoef(), np.corrcoef, [x])
    if torch is not None:
        def torch_cov(t):
            return t.cov(correction=correction,
                         fweights=None if fw is None else torch.tensor(fw),
                         aweights=None if aw is None else torch.tensor(aw))
        check_against_torch(our_cov, torch_cov, [x], rtol=1e-4, atol=1e-4)
        check_against_torch(lambda t: t.corrcoef(), lambda t: t.corrcoef(), [x], rtol=1e-4,
                            atol=1e-4)


def test_cov_edge_cases_and_errors():
    assert pyrt.cov(pyrt.tensor([1.0, 2, 4])).shape == ()
    np.testing.assert_allclose(pyrt.cov(pyrt.tensor([1.0, 2, 4])).item(), np.cov([1, 2, 4]))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert np.isnan(pyrt.cov(pyrt.ones(3, 1)).numpy()).all()
    with pytest.raises(RuntimeError, match="two or fewer dimensions"):
        pyrt.cov(pyrt.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="integral dtype"):
        pyrt.cov(pyrt.ones(2, 3), fweights=pyrt.ones(3))
    with pytest.raises(RuntimeError, match="same numel"):
        pyrt.cov(pyrt.ones(2, 3), fweights=pyrt.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="cannot be negative"):
        pyrt.cov(pyrt.ones(2, 3), aweights=-pyrt.ones(3))
    with pytest.raises(RuntimeError, match="floating point dtype"):
        pyrt.cov(pyrt.ones(2, 3), aweights=pyrt.tensor([1, 1, 1]))
    with pytest.raises(TypeError, match="correction"):
        pyrt.cov(pyrt.ones(2, 3), correction=1.5)


@SETTINGS
@given(st.integers(0, 40), st.integers(1, 8), st.booleans(), st.booleans(), st.booleans())
def test_histogram_matches_numpy(n, bins, weighted, density, ranged):
    v = _array(n, n)
    w = np.abs(_array(n + 1, n)) if weighted else None
    rng = (-1.0, 1.5) if ranged else None
    hist, edges = pyrt.histogram(pyrt.tensor(v), bins, range=rng,
                                 weight=None if w is None else pyrt.tensor(w), density=density)
    np_range = rng if rng or n == 0 else (float(v.min()), float(v.max()))
    if n and not ranged and v.min() == v.max():
        np_range = None
    expected, np_edges = np.histogram(v, bins, range=np_range, weights=w, density=density)
    np.testing.assert_allclose(edges.numpy(), np_edges, rtol=1e-5, atol=1e-6)
    if n == 0 and density:
        assert np.isnan(hist.numpy()).all()
    else:
        np.testing.assert_allclose(hist.numpy(), expected, rtol=1e-5, atol=1e-5)
    if torch is not None:
        theirs = torch.histogram(torch.tensor(v), bins, range=rng,
                                 weight=None if w is None else torch.tensor(w),
                                 density=density)
        np.testing.assert_allclose(hist.numpy(), theirs.hist.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(edges.numpy(), theirs.bin_edges.numpy(), rtol=1e-6,
                                   atol=1e-6)


def test_histogram_with_edges_and_errors():
    hist, edges = pyrt.tensor([1.0, 2, 3, 3, 7]).histogram(pyrt.tensor([0.0, 1, 2.5, 3]))
    np.testing.assert_array_equal(hist.numpy(), [0, 2, 2])
    np.testing.assert_array_equal(edges.numpy(), [0, 1, 2.5, 3])
    x = pyrt.tensor([1.0, 2, 1])
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        pyrt.histogram(x, bins=0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        pyrt.histogram(x, 4, range=(2.0, 1.0))
    with pytest.raises(RuntimeError, match="is not finite"):
        pyrt.histogram(x, 4, range=(0.0, float("inf")))
    with pytest.raises(RuntimeError, match="one dimension"):
        pyrt.histogram(x, pyrt.tensor([[0.0, 1.0]]))
    with pytest.raises(RuntimeError, match="at least 1 element"):
        pyrt.histogram(x, pyrt.tensor([]))
    with pytest.raises(RuntimeError, match="same shape as the input"):
        pyrt.histogram(x, 3, weight=pyrt.ones(4))
    with pytest.raises(NotImplementedError):
        pyrt.histogram(pyrt.tensor([1, 2]), 3)


@SETTINGS
@given(st.integers(1, 30), st.integers(1, 3), st.integers(1, 4))
def test_histogramdd_matches_numpy(n, d, bins):
    points = _array(n * d, (n, d))
    hist, edges = pyrt.histogramdd(pyrt.tensor(points), bins)
    ranges = [(float(c.min()), float(c.max())) if c.min() < c.max() else
              (float(c.min()) - 0.5, float(c.max()) + 0.5) for c in points.T]
    expected, np_edges = np.histogramdd(points, bins, range=ranges)
    np.testing.assert_allclose(hist.numpy(), expected)
    assert len(edges) == d
    for ours, theirs in zip(edges, np_edges):
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-5, atol=1e-6)
    if torch is not None:
        theirs = torch.histogramdd(torch.tensor(points), [bins] * d)
        np.testing.assert_allclose(hist.numpy(), theirs.hist.numpy())
    with pytest.raises(RuntimeError, match="innermost dimension"):
        pyrt.histogramdd(pyrt.tensor(points), [bins] * (d + 1))


# ---- window functions ------------------------------------------------------------------------

_NUMPY_WINDOWS = {
    "hann_window": np.hanning,
    "hamming_window": np.hamming,
    "blackman_window": np.blackman,
    "bartlett_window": np.bartlett,
    "kaiser_window": lambda n: np.kaiser(n, 12.0),
}


@SETTINGS
@given(st.integers(0, 12), st.booleans(), st.sampled_from(sorted(_NUMPY_WINDOWS)))
def test_windows_match_numpy(n, periodic, name):
    got = getattr(pyrt, name)(n, periodic)
    assert got.dtype == pyrt.float32 and got.shape == (n,)
    reference = _NUMPY_WINDOWS[name]
    expected = reference(n + 1)[:-1] if periodic and n > 1 else reference(n)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
    if torch is not None:
        np.testing.assert_allclose(got.numpy(), getattr(torch, name)(n, periodic).numpy(),
                                   rtol=1e-5, atol=1e-6)


@needs_torch
def test_window_parameters_match_torch():
    np.testing.assert_allclose(pyrt.hamming_window(9, False, 0.5, 0.3).numpy(),
                               torch.hamming_window(9, False, 0.5, 0.3).numpy(), atol=1e-6)
    np.testing.assert_allclose(pyrt.kaiser_window(9, True, 3.5).numpy(),
                               torch.kaiser_window(9, True, 3.5).numpy(), atol=1e-6)


def test_window_errors():
    with pytest.raises(RuntimeError, match="non-negative window_length"):
        pyrt.hann_window(-1)
    with pytest.raises(RuntimeError, match="floating point dtypes"):
        pyrt.hann_window(3, dtype=pyrt.int64)
    assert pyrt.hann_window(3, requires_grad=True).requires_grad


# ---- writes into views -----------------------------------------------------------------------

@SETTINGS
@given(st.tuples(st.integers(1, 4), st.integers(1, 5)), st.integers(-2, 2), st.integers(0, 9))
def test_scatter_into_views(shape, offset, seed):
    x = _array(seed, shape)

    def np_diagonal_scatter(a, s):
        out = a.copy()
        rows, cols = np.nonzero(np.eye(*shape, k=offset))
        out[rows, cols] = s
        return out

    diag = np.diagonal(x, offset)
    if diag.size:
        src = _array(seed + 1, diag.shape)
        got = pyrt.diagonal_scatter(pyrt.tensor(x), pyrt.tensor(src), offset)
        np.testing.assert_array_equal(got.numpy(), np_diagonal_scatter(x, src))
        check_gradient(lambda a, s: a.diagonal_scatter(s, offset), np_diagonal_scatter,
                       [x, src])
        if torch is not None:
            check_against_torch(lambda a, s: a.diagonal_scatter(s, offset),
                                lambda a, s: a.diagonal_scatter(s, offset), [x, src])
    index = seed % shape[1] - shape[1] * (seed % 2)
    src = _array(seed + 2, shape[0])

    def np_select_scatter(a, s):
        out = a.copy()
        out[:, index] = s
        return out

    got = pyrt.select_scatter(pyrt.tensor(x), pyrt.tensor(src), 1, index)
    np.testing.assert_array_equal(got.numpy(), np_select_scatter(x, src))
    check_gradient(lambda a, s: a.select_scatter(s, 1, index), np_select_scatter, [x, src])
    start, step = offset, 1 + seed % 2
    part = x[:, start::step]
    if part.size:
        src = _array(seed + 3, part.shape)

        def np_slice_scatter(a, s):
            out = a.copy()
            out[:, start::step] = s
            return out

        got = pyrt.slice_scatter(pyrt.tensor(x), pyrt.tensor(src), 1, start, None, step)
        np.testing.assert_array_equal(got.numpy(), np_slice_scatter(x, src))
        check_gradient(lambda a, s: a.slice_scatter(s, 1, start, None, step),
                       np_slice_scatter, [x, src])
        if torch is not None:
            check_against_torch(lambda a, s: a.slice_scatter(s, 1, start, None, step),
                                lambda a, s: a.slice_scatter(s, 1, start, None, step),
                                [x, src])


def test_scatter_into_views_errors():
    with pytest.raises(RuntimeError, match="src size = \\[3\\], slice size = \\[2\\]"):
        pyrt.select_scatter(pyrt.zeros(2, 3), pyrt.ones(3), 1, 0)
    with pytest.raises(IndexError, match="out of range"):
        pyrt.select_scatter(pyrt.zeros(2, 3), pyrt.ones(2), 1, 5)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        pyrt.slice_scatter(pyrt.zeros(2, 6), pyrt.ones(2, 2), 1, 1, 5, 0)
    with pytest.raises(RuntimeError, match="cannot be identical"):
        pyrt.diagonal_scatter(pyrt.zeros(3, 3), pyrt.ones(3), 0, 1, 1)


# ---- unique runs, sizes, norms ---------------------------------------------------------------

def _np_unique_consecutive(a):
    starts = np.concatenate([[True], a[1:] != a[:-1]]) if a.size else np.zeros(0, bool)
    first = np.nonzero(starts)[0]
    return a[first], np.cumsum(starts) - 1, np.diff(np.append(first, a.size))


@SETTINGS
@given(st.lists(st.integers(0, 2), max_size=12), st.integers(1, 3))
def test_unique_consecutive(values, rows):
    a = np.array(values, np.int64)
    values_, inverse, counts = pyrt.unique_consecutive(pyrt.tensor(a), return_inverse=True,
                                                       return_counts=True)
    for ours, expected in zip((values_, inverse, counts), _np_unique_consecutive(a)):
        np.testing.assert_array_equal(ours.numpy(), expected)
    m = np.repeat(np.array(values or [0], np.int64)[:, None] * np.arange(1, rows + 1), 2,
                  axis=0)  # each row twice in a row
    got = pyrt.tensor(m).unique_consecutive(return_counts=True, dim=0)
    if torch is not None:
        theirs = torch.tensor(m).unique_consecutive(return_counts=True, dim=0)
        for ours, t in zip(got, theirs):
            np.testing.assert_array_equal(ours.numpy(), t.numpy())
        theirs = torch.tensor(a).unique_consecutive(return_inverse=True, return_counts=True)
        for ours, t in zip((values_, inverse, counts), theirs):
            np.testing.assert_array_equal(ours.numpy(), t.numpy())
    assert np.all(got[1].numpy() % 2 == 0)  # each row of m appears twice in a row


def test_unique_consecutive_dims_and_errors():
    x = pyrt.tensor([[1, 1], [1, 1], [2, 3]])
    out, inverse = x.unique_consecutive(return_inverse=True, dim=1)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    np.testing.assert_array_equal(inverse.numpy(), [0, 1])
    assert isinstance(pyrt.unique_consecutive(x), pyrt.Tensor)
    with pytest.raises(IndexError):
        x.unique_consecutive(dim=2)


@SETTINGS
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 20))
def test_sum_to_size(shape, seed):
    x = _array(seed, shape)
    rng = np.random.default_rng(seed)
    keep = len(shape) - int(rng.integers(0, len(shape) + 1))
    size = tuple(1 if rng.random() < 0.5 else n for n in shape[len(shape) - keep:])
    got = pyrt.tensor(x).sum_to_size(size)
    expected = x.sum(tuple(range(len(shape) - keep)))
    axes = tuple(k for k, (n, m) in enumerate(zip(size, expected.shape)) if n != m)
    expected = expected.sum(axes, keepdims=True)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert got.shape == size
    check_gradient(lambda t: t.sum_to_size(*size),
                   lambda a: a.sum(tuple(range(len(shape) - keep))).sum(axes, keepdims=True),
                   [x])
    with pytest.raises(RuntimeError, match="not expandable"):
        pyrt.tensor(x).sum_to_size(4, *shape)


@SETTINGS
@given(st.tuples(st.integers(2, 4), st.integers(1, 4)), st.sampled_from([1, 2, 3.0]),
       st.sampled_from([0, 1, -1]), st.sampled_from([0.0, 0.5, 2.0, 100.0]))
def test_renorm(shape, p, dim, maxnorm):
    x = _array(shape[0] + shape[1], shape)

    def np_renorm(a):
        others = tuple(k for k in range(a.ndim) if k != dim % a.ndim)
        norms = (np.abs(a) ** p).sum(others, keepdims=True) ** (1 / p)
        return a * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1)

    np.testing.assert_allclose(pyrt.renorm(pyrt.tensor(x), p, dim, maxnorm).numpy(),
                               np_renorm(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    check_gradient(lambda t: t.renorm(p, dim, maxnorm), np_renorm, [x])
    if torch is not None:
        check_against_torch(lambda t: t.renorm(p, dim, maxnorm),
                            lambda t: t.renorm(p, dim, maxnorm), [x])
    inplace = pyrt.tensor(x)
    assert inplace.renorm_(p, dim, maxnorm) is inplace
    np.testing.assert_allclose(inplace.numpy(), np_renorm(x), rtol=1e-5, atol=1e-6)


def test_renorm_errors():
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        pyrt.renorm(pyrt.ones(2, 3), 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0"):
        pyrt.renorm(pyrt.ones(2, 3), 2, 0, -1.0)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        pyrt.renorm(pyrt.ones(()), 2, 0, 1.0)
    with pytest.raises(IndexError):
        pyrt.renorm(pyrt.ones(2, 3), 2, 5, 1.0)
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.renorm(pyrt.tensor([[1, 2]]), 2, 0, 1.0)


# ---- creation --------------------------------------------------------------------------------

def test_scalar_tensor_asarray():
    s = pyrt.scalar_tensor(2)
    assert s.shape == () and s.dtype == pyrt.float32 and s.item() == 2.0
    assert pyrt.scalar_tensor(2, dtype=pyrt.int64).dtype == pyrt.int64
    with pytest.raises(TypeError, match="must be Number"):
        pyrt.scalar_tensor("a")
    array = np.ones(3, np.float32)
    shared = pyrt.asarray(array)
    array[0] = 5
    assert shared.numpy()[0] == 5  # shares the memory
    copied = pyrt.asarray(array, copy=True)
    array[1] = 7
    assert copied.numpy()[1] == 1
    t = pyrt.ones(2, requires_grad=True)
    assert pyrt.asarray(t) is t
    assert not pyrt.asarray(t, requires_grad=False).requires_grad
    assert pyrt.asarray([1, 2]).dtype == pyrt.int64
    assert pyrt.asarray([1.5], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="alias"):
        pyrt.asarray(t, dtype=pyrt.int64, copy=False)
    with pytest.raises(ValueError, match="alias"):
        pyrt.asarray([1, 2], copy=False)
    with pytest.raises(TypeError, match="float64"):
        pyrt.asarray([1.0], dtype=np.float64)


@SETTINGS
@given(st.integers(-5, 5), st.integers(0, 10), st.sampled_from([1, 0.5, 3, 0.3]))
def test_range_and_logspace(start, length, step):
    end = start + length
    with pytest.warns(UserWarning, match="deprecated"):
        got = pyrt.range(start, end, step)
    count = int(np.floor((end - start) / step)) + 1
    np.testing.assert_allclose(got.numpy(), start + np.arange(count) * step, rtol=1e-6,
                               atol=1e-6)
    assert got.dtype == pyrt.float32
    for base in (10.0, 2):
        np.testing.assert_allclose(pyrt.logspace(start / 4, end / 4, length, base).numpy(),
                                   np.logspace(start / 4, end / 4, length, base=base),
                                   rtol=1e-5)
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(got.numpy(), torch.range(start, end, step).numpy(),
                                       rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(pyrt.logspace(start, end, length, 2).numpy(),
                                   torch.logspace(start, end, length, 2).numpy(), rtol=1e-5)


def test_range_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            pyrt.range(1, 4, -1)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            pyrt.range(1, 4, 0)
    with pytest.raises(TypeError, match="end"):
        pyrt.range(4)
    with pytest.raises(RuntimeError, match="non-negative"):
        pyrt.logspace(0, 2, -1)


def test_aliases_and_methods_at_top_level():
    x = pyrt.ones(2, 3, 4)
    assert pyrt.moveaxis(x, 0, -1).shape == (3, 4, 2)
    assert pyrt.swapdims(x, 0, 2).shape == (4, 3, 2)
    assert pyrt.is_same_size(x, pyrt.zeros(2, 3, 4)) and not x.is_same_size(pyrt.ones(2))
