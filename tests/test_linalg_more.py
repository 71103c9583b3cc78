"""The rest of torch.linalg (LU, LDL^T, triangular and _ex solvers, matrix_exp, tensorinv and
tensorsolve, vander, householder_product) and the top-level/Tensor forms (det, inverse,
logdet, cholesky_solve, cholesky_inverse, svd, lu, lu_unpack, triangular_solve, ...):
reconstruction identities and NumPy/SciPy float64 references, finite-difference gradients,
PyTorch's values, gradients and errors where torch is installed."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import linalg

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
batches = st.sampled_from([(), (2,), (2, 1)])
sizes = st.integers(1, 4)


def well_conditioned(shape, seed):
    """Q diag(s) R^T with Q, R orthogonal and s in [0.5, 2]."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    q = np.linalg.qr(rng.standard_normal(shape))[0]
    r = np.linalg.qr(rng.standard_normal(shape))[0]
    s = rng.uniform(0.5, 2, shape[:-2] + (n,))
    return ((q * s[..., None, :]) @ np.swapaxes(r, -1, -2)).astype(np.float32)


def spd(shape, seed):
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal(shape))[0]
    s = rng.uniform(0.5, 2, shape[:-1])
    return ((q * s[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(np.float32)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def grads(f, arrays, weights):
    """pyrt's gradients of sum(w * f(*tensors)) (f may return several tensors)."""
    tensors = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    outs = f(*tensors)
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = sum((o * pyrt.tensor(w)).sum() for o, w in zip(outs, weights))
    total.backward()
    return [t.grad.numpy() for t in tensors], [o.detach().numpy() for o in outs]


def torch_grads(f, arrays, weights):
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs = f(*tensors)
    outs = outs if isinstance(outs, tuple) else (outs,)
    sum((o * torch.tensor(w)).sum() for o, w in zip(outs, weights)).backward()
    return [t.grad.numpy() for t in tensors], [o.detach().numpy() for o in outs]


def numeric_grad(f64, a, w, eps=1e-6):
    """The central-difference gradient of sum(w * f64(a)), all in float64."""
    a = a.astype(np.float64)
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        g[i] = ((w * (f64(a + d) - f64(a - d))).sum()) / (2 * eps)
    return g


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- LU --------------------------------------------------------------------------------------


@SETTINGS
@given(batch=batches, m=sizes, n=sizes, seed=st.integers(0, 100))
def test_lu_reconstructs_and_matches_scipy(batch, m, n, seed):
    a = normal(batch + (m, n), seed)
    P, L, U = linalg.lu(pyrt.tensor(a))
    close(P.numpy() @ L.numpy() @ U.numpy(), a)
    for i in np.ndindex(batch):
        p, low, up = sl.lu(a[i].astype(np.float64))
        close(P.numpy()[i], p)
        close(L.numpy()[i], low)
        close(U.numpy()[i], up)
    LU, piv, info = linalg.lu_factor_ex(pyrt.tensor(a))
    assert piv.dtype == pyrt.int64 and info.shape == batch and not info.numpy().any()
    p2, l2, u2 = pyrt.lu_unpack(LU, piv)
    close(p2.numpy(), P.numpy())
    close(l2.numpy(), L.numpy())
    close(u2.numpy(), U.numpy())


@SETTINGS
@given(m=sizes, n=sizes, seed=st.integers(0, 100))
def test_lu_gradients_match_finite_differences(m, n, seed):
    a = normal((m, n), seed)
    k = min(m, n)
    wl, wu = normal((m, k), seed + 1), normal((k, n), seed + 2)
    (g,), _ = grads(lambda A: linalg.lu(A)[1:], [a], [wl, wu])

    def f64(x):
        _, low, up = sl.lu(x)
        return np.concatenate([(wl * low).ravel(), (wu * up).ravel()])

    want = numeric_grad(lambda x: f64(x), a, 1.0)
    close(g, want, 1e-3)


@needs_torch
@SETTINGS
@given(batch=batches, m=sizes, n=sizes, seed=st.integers(0, 100))
def test_lu_factor_values_and_gradients_match_torch(batch, m, n, seed):
    a = normal(batch + (m, n), seed)
    w = normal(batch + (m, n), seed + 1)
    got, (lu_,) = grads(lambda A: linalg.lu_factor(A).LU, [a], [w])
    want, (tlu,) = torch_grads(lambda A: torch.linalg.lu_factor(A).LU, [a], [w])
    close(lu_, tlu)
    close(got[0], want[0], 1e-3)


@needs_torch
@SETTINGS
@given(batch=batches, n=sizes, left=st.booleans(), adjoint=st.booleans(),
       seed=st.integers(0, 100))
def test_lu_solve_matches_torch(batch, n, left, adjoint, seed):
    a = well_conditioned(batch + (n, n), seed)
    b = normal(batch + ((n, 2) if left else (2, n)), seed + 1)
    LU, piv = torch.linalg.lu_factor(torch.tensor(a))
    lu_ = LU.numpy()
    w = normal(b.shape, seed + 2)
    got, (x,) = grads(lambda L, B: linalg.lu_solve(L, pyrt.tensor(piv.numpy().astype(np.int64)),
                                                    B, left=left, adjoint=adjoint), [lu_, b], [w])
    want, (tx,) = torch_grads(lambda L, B: torch.linalg.lu_solve(L, piv, B, left=left,
                                                                 adjoint=adjoint), [lu_, b], [w])
    close(x, tx)
    close(got[0], want[0], 1e-3)
    close(got[1], want[1], 1e-3)
    # and the definition: op(A) X = B
    op = np.swapaxes(a, -1, -2) if adjoint else a
    close(op @ x if left else x @ op, b, 1e-3)


def test_lu_errors_and_info():
    singular = pyrt.tensor([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        linalg.lu_factor(singular)
    assert linalg.lu_factor_ex(singular).info.item() == 2
    assert pyrt.lu(singular, get_infos=True)[2].item() == 2
    with pytest.raises(RuntimeError, match="2 or more dimensions"):
        linalg.lu_factor(pyrt.ones(3))
    with pytest.raises(NotImplementedError, match="Long"):
        linalg.lu(pyrt.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="without pivoting"):
        linalg.lu(pyrt.eye(2), pivot=False)
    LU, piv = linalg.lu_factor(pyrt.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        linalg.lu_solve(LU, piv, pyrt.ones(4, 2))
    with pytest.raises(RuntimeError, match="square matrices"):
        linalg.lu_solve(pyrt.ones(3, 4), piv, pyrt.ones(3, 1))
    with pytest.raises(RuntimeError, match="Number of pivots"):
        linalg.lu_solve(LU, piv[:2], pyrt.ones(3, 1))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        linalg.lu_solve(LU, piv, pyrt.ones(3))


# ---- triangular, _ex, LDL --------------------------------------------------------------------


@SETTINGS
@given(batch=batches, n=sizes, upper=st.booleans(), left=st.booleans(), unit=st.booleans(),
       seed=st.integers(0, 100))
def test_solve_triangular_against_scipy_and_torch(batch, n, upper, left, unit, seed):
    a = normal(batch + (n, n), seed) + 3 * np.eye(n, dtype=np.float32)
    b = normal(batch + ((n, 2) if left else (2, n)), seed + 1)
    w = normal(b.shape, seed + 2)
    got, (x,) = grads(lambda A, B: linalg.solve_triangular(A, B, upper=upper, left=left,
                                                           unitriangular=unit), [a, b], [w])
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t * (1 - np.eye(n)) + np.eye(n)
    close(t @ x if left else x @ t, b, 1e-3)
    ga = got[0]
    assert not (np.triu(ga, 1 - unit) if not upper else np.tril(ga, unit - 1)).any()
    if torch is not None:
        want, (tx,) = torch_grads(lambda A, B: torch.linalg.solve_triangular(
            A, B, upper=upper, left=left, unitriangular=unit), [a, b], [w])
        close(x, tx)
        close(got[0], want[0], 1e-3)
        close(got[1], want[1], 1e-3)


def test_solve_triangular_zero_diagonal_gives_infinities_and_checks_shapes():
    x = linalg.solve_triangular(pyrt.zeros(2, 2), pyrt.ones(2, 1), upper=True).numpy()
    assert not np.isfinite(x).any()
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        linalg.solve_triangular(pyrt.eye(3), pyrt.ones(4, 2), upper=True)
    with pytest.raises(RuntimeError, match="square matrices"):
        linalg.solve_triangular(pyrt.ones(3, 4), pyrt.ones(3, 2), upper=True)


def test_cholesky_ex_and_solve_ex_info():
    a = pyrt.tensor(np.diag([1.0, -1.0, 2.0]).astype(np.float32))
    L, info = linalg.cholesky_ex(a)
    assert info.item() == 2
    np.testing.assert_array_equal(L.numpy(), np.diag([1.0, -1.0, 2.0]))  # LAPACK's partial
    with pytest.raises(linalg.LinAlgError, match="order 2"):
        linalg.cholesky_ex(a, check_errors=True)
    s = spd((2, 3, 3), 0)
    L, info = linalg.cholesky_ex(pyrt.tensor(s))
    close(L.numpy() @ np.swapaxes(L.numpy(), -1, -2), s)
    assert info.numpy().tolist() == [0, 0]
    mixed = np.stack([np.eye(2), np.zeros((2, 2))]).astype(np.float32)
    x, info = linalg.solve_ex(pyrt.tensor(mixed), pyrt.ones(2, 2))
    assert info.numpy().tolist() == [0, 1]
    close(x.numpy()[0], [1.0, 1.0])
    assert np.isnan(x.numpy()[1]).all()
    with pytest.raises(linalg.LinAlgError, match=r"Batch element 1.*singular"):
        linalg.solve_ex(pyrt.tensor(mixed), pyrt.ones(2, 2), check_errors=True)


@SETTINGS
@given(batch=batches, n=sizes, seed=st.integers(0, 100))
def test_ldl_factor_and_solve(batch, n, seed):
    a = normal(batch + (n, n), seed)
    a = a + np.swapaxes(a, -1, -2) + np.eye(n, dtype=np.float32) * 0.1
    b = normal(batch + (n, 2), seed + 1)
    LD, piv, info = linalg.ldl_factor_ex(pyrt.tensor(a))
    if info.numpy().any():
        return
    x = linalg.ldl_solve(LD, piv, pyrt.tensor(b)).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), b), rtol=1e-2,
                               atol=1e-2 * max(1.0, np.abs(x).max()))
    if torch is not None:
        tld, tpiv = torch.linalg.ldl_factor(torch.tensor(a))
        close(LD.numpy(), tld.numpy(), 1e-3)
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())


def test_ldl_errors():
    assert linalg.ldl_factor_ex(pyrt.zeros(2, 2)).info.item() == 1
    with pytest.raises(linalg.LinAlgError, match="singular"):
        linalg.ldl_factor(pyrt.zeros(2, 2))
    with pytest.raises(RuntimeError, match="square matrices"):
        linalg.ldl_factor(pyrt.ones(2, 3))
    LD, piv = linalg.ldl_factor(pyrt.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes"):
        linalg.ldl_solve(LD, piv, pyrt.ones(4, 1))


# ---- matrix_exp, tensor systems, vander, householder, eig ------------------------------------


@SETTINGS
@given(batch=batches, n=sizes, seed=st.integers(0, 100))
def test_matrix_exp_values_and_gradient(batch, n, seed):
    a = normal(batch + (n, n), seed) * 0.5
    w = normal(a.shape, seed + 1)
    (g,), (e,) = grads(linalg.matrix_exp, [a], [w])
    close(e, sl.expm(a.astype(np.float64)), 1e-4)
    if batch == ():
        close(g, numeric_grad(sl.expm, a, w), 1e-3)
    if torch is not None:
        (tg,), (te,) = torch_grads(torch.linalg.matrix_exp, [a], [w])
        close(e, te)
        close(g, tg, 1e-3)


def test_tensorinv_and_tensorsolve():
    a = well_conditioned((6, 6), 3).reshape(2, 3, 6)
    inv = linalg.tensorinv(pyrt.tensor(a), ind=2).numpy()
    assert inv.shape == (6, 2, 3)
    close(np.tensordot(inv, a, 2), np.eye(6), 1e-3)
    b = normal((2, 3), 4)
    x = linalg.tensorsolve(pyrt.tensor(a.reshape(2, 3, 2, 3)), pyrt.tensor(b)).numpy()
    close(np.tensordot(a.reshape(2, 3, 2, 3), x, 2), b, 1e-3)
    with pytest.raises(RuntimeError, match="prod"):
        linalg.tensorinv(pyrt.ones(2, 3, 4), ind=1)
    with pytest.raises(RuntimeError, match="strictly positive"):
        linalg.tensorinv(pyrt.ones(2, 2), ind=0)
    with pytest.raises(RuntimeError, match="prod"):
        linalg.tensorsolve(pyrt.ones(2, 3, 6), pyrt.ones(5))


@SETTINGS
@given(batch=batches, n=sizes, N=st.integers(2, 5), seed=st.integers(0, 100))
def test_vander_values_and_gradient(batch, n, N, seed):
    x = normal(batch + (n,), seed)
    w = normal(batch + (n, N), seed + 1)
    (g,), (v,) = grads(lambda t: linalg.vander(t, N=N), [x], [w])
    close(v, x[..., None].astype(np.float64) ** np.arange(N), 1e-4)
    close(g, (w[..., 1:] * np.arange(1, N) * x[..., None] ** np.arange(N - 1)).sum(-1), 1e-3)
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        linalg.vander(pyrt.tensor(x), N=1)


@SETTINGS
@given(batch=batches, m=sizes, data=st.data(), seed=st.integers(0, 100))
def test_householder_product_of_geqrf_is_q(batch, m, data, seed):
    n = data.draw(st.integers(1, m))
    a = normal(batch + (m, n), seed)
    for i in np.ndindex(batch):
        (qr_, tau), _ = sl.qr(a[i].astype(np.float64), mode="raw")
        q = linalg.householder_product(pyrt.tensor(qr_.astype(np.float32)),
                                       pyrt.tensor(tau.astype(np.float32))).numpy()
        close(q, sl.qr(a[i].astype(np.float64), mode="economic")[0], 1e-3)
    if torch is not None:
        k = data.draw(st.integers(1, n))
        t = normal(batch + (k,), seed + 1)
        w = normal(batch + (m, n), seed + 2)
        got, (q,) = grads(linalg.householder_product, [a, t], [w])
        want, (tq,) = torch_grads(torch.linalg.householder_product, [a, t], [w])
        close(q, tq)
        close(got[0], want[0], 1e-3)
        close(got[1], want[1], 1e-3)


def test_householder_and_eig_errors():
    with pytest.raises(RuntimeError, match="greater than or equal to input.shape"):
        linalg.householder_product(pyrt.ones(2, 3), pyrt.ones(2))
    with pytest.raises(RuntimeError, match="tau.shape"):
        linalg.householder_product(pyrt.ones(3, 2), pyrt.ones(3))
    for f in (linalg.eig, linalg.eigvals):
        with pytest.raises(TypeError, match="no complex dtype.*eigh"):
            f(pyrt.eye(3))
        with pytest.raises(RuntimeError, match="square"):
            f(pyrt.ones(2, 3))


# ---- top-level and Tensor forms --------------------------------------------------------------


@needs_torch
@SETTINGS
@given(batch=batches, n=sizes, upper=st.booleans(), seed=st.integers(0, 100))
def test_cholesky_solve_and_inverse_match_torch(batch, n, upper, seed):
    s = spd(batch + (n, n), seed)
    f = np.linalg.cholesky(s.astype(np.float64)).astype(np.float32)
    if upper:
        f = np.ascontiguousarray(np.swapaxes(f, -1, -2))
    b = normal(batch + (n, 2), seed + 1)
    w = normal(b.shape, seed + 2)
    got, (x,) = grads(lambda B, F: pyrt.cholesky_solve(B, F, upper), [b, f], [w])
    want, (tx,) = torch_grads(lambda B, F: torch.cholesky_solve(B, F, upper), [b, f], [w])
    close(s @ x, b, 1e-3)
    close(x, tx, 1e-3)
    close(got[0], want[0], 1e-3)
    close(got[1], want[1], 1e-3)
    w = normal(s.shape, seed + 3)
    got, (r,) = grads(lambda F: F.cholesky_inverse(upper), [f], [w])
    want, (tr,) = torch_grads(lambda F: F.cholesky_inverse(upper), [f], [w])
    close(r, np.linalg.inv(s.astype(np.float64)), 1e-3)
    close(r, tr, 1e-3)
    close(got[0], want[0], 1e-3)


@needs_torch
@SETTINGS
@given(batch=batches, m=sizes, n=sizes, some=st.booleans(), seed=st.integers(0, 100))
def test_svd_gives_v_and_matches_torch(batch, m, n, some, seed):
    a = normal(batch + (m, n), seed)
    U, S, V = pyrt.svd(pyrt.tensor(a), some=some)
    tU, tS, tV = torch.svd(torch.tensor(a), some=some)
    assert U.shape == tuple(tU.shape) and V.shape == tuple(tV.shape)
    k = min(m, n)
    close((U.numpy()[..., :k] * S.numpy()[..., None, :]) @ np.swapaxes(V.numpy()[..., :k], -1,
                                                                       -2), a, 1e-4)
    close(S.numpy(), tS.numpy())
    u0, s0, v0 = pyrt.tensor(a).svd(compute_uv=False)
    assert not u0.numpy().any() and v0.shape == batch + (n, n)
    close(s0.numpy(), tS.numpy())


@needs_torch
@SETTINGS
@given(batch=batches, n=sizes, seed=st.integers(0, 100))
def test_determinants_and_inverses_match_torch(batch, n, seed):
    a = well_conditioned(batch + (n, n), seed)
    w = normal(batch, seed + 1)
    for name in ("det", "logdet"):
        x = np.abs(a) if name == "logdet" else a
        x = spd(batch + (n, n), seed) if name == "logdet" else x
        got, (v,) = grads(getattr(pyrt, name), [x], [w])
        want, (tv,) = torch_grads(getattr(torch, name), [x], [w])
        close(v, tv, 1e-4)
        close(got[0], want[0], 1e-3)
    close(pyrt.inverse(pyrt.tensor(a)).numpy(), torch.inverse(torch.tensor(a)).numpy(), 1e-4)
    close(pyrt.tensor(a).pinverse().numpy(), torch.tensor(a).pinverse().numpy(), 1e-4)
    close(pyrt.matrix_power(pyrt.tensor(a), 3).numpy(),
          torch.matrix_power(torch.tensor(a), 3).numpy(), 1e-3)
    close(pyrt.matrix_exp(pyrt.tensor(a)).numpy(), torch.matrix_exp(torch.tensor(a)).numpy(),
          1e-4)
    sign, lad = pyrt.slogdet(pyrt.tensor(a))
    tsign, tlad = torch.slogdet(torch.tensor(a))
    close(sign.numpy(), tsign.numpy())
    close(lad.numpy(), tlad.numpy())


@needs_torch
@SETTINGS
@given(batch=batches, n=sizes, upper=st.booleans(), transpose=st.booleans(),
       unit=st.booleans(), seed=st.integers(0, 100))
def test_triangular_solve_matches_torch(batch, n, upper, transpose, unit, seed):
    a = normal(batch + (n, n), seed) + 3 * np.eye(n, dtype=np.float32)
    b = normal(batch + (n, 2), seed + 1)
    w = normal(b.shape, seed + 2)
    got, (x, c) = grads(lambda B, A: pyrt.triangular_solve(B, A, upper, transpose, unit),
                        [b, a], [w, np.zeros_like(a)])
    want, (tx, _) = torch_grads(lambda B, A: torch.triangular_solve(B, A, upper, transpose,
                                                                    unit), [b, a],
                                [w, np.zeros_like(a)])
    close(x, tx)
    np.testing.assert_array_equal(c, a)
    close(got[0], want[0], 1e-3)
    close(got[1], want[1], 1e-3)


@needs_torch
def test_top_level_errors_match_torch():
    cases = [
        (lambda m: m.det(m.ones(2, 3)), RuntimeError, "square matrices"),
        (lambda m: m.cholesky_solve(m.ones(4, 2), m.eye(3)), RuntimeError,
         "Incompatible matrix sizes for cholesky_solve"),
        (lambda m: m.cholesky_solve(m.ones(3), m.eye(3)), RuntimeError,
         "b should have at least 2 dimensions"),
        (lambda m: m.cholesky_inverse(m.ones(2, 3)), RuntimeError, "square matrices"),
        (lambda m: m.triangular_solve(m.ones(4, 2), m.eye(3)), RuntimeError,
         "Incompatible matrix sizes for triangular_solve"),
        (lambda m: m.triangular_solve(m.ones(3), m.eye(3)), RuntimeError,
         "Expected b to have at least 2 dimensions"),
        (lambda m: m.matrix_power(m.ones(2, 3), 2), RuntimeError, "square matrices"),
        (lambda m: m.inverse(m.zeros(2, 2)), RuntimeError, "singular"),
    ]
    for call, error, message in cases:
        for module in (pyrt, torch):
            with pytest.raises(error, match=message):
                call(module)
    with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
        pyrt.det([[1.0]])
