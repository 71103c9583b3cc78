"""pyrt.linalg: values and gradients against torch.linalg where torch is installed, and
everywhere against NumPy's linalg in float64 with finite-difference gradients; over batches
and sizes (hypothesis). Singular vectors and eigenvectors are unique only up to sign, so the
losses that check their gradients use squares of their entries, which are not; then
PyTorch's errors, singular and indefinite matrices, and accuracy on ill-conditioned ones."""

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import linalg as PL

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
EXAMPLES = settings(max_examples=5, deadline=None, derandomize=True)


# ---- inputs ----------------------------------------------------------------------------------


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def orthogonal(batch, n, seed):
    """Random orthogonal matrices (the Q of a QR factorization of normal ones)."""
    return np.linalg.qr(normal(batch + (n, n), seed).astype(np.float64))[0]


def spectrum(n, seed):
    """n values at least 0.5 apart, between 1 and about n + 1, in random order."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(1, n + 1) + rng.uniform(0, 0.4, n))


def well_conditioned(batch, n, seed):
    """Square matrices U diag(s) V^T with singular values s well apart in [1, n + 1]."""
    s = spectrum(n, seed)
    return (orthogonal(batch, n, seed) * s) @ orthogonal(batch, n, seed + 1).swapaxes(-1, -2)


def separated(batch, m, n, seed):
    """m x n matrices with distinct singular values in [1, min(m, n) + 1]."""
    k = min(m, n)
    u = orthogonal(batch, m, seed)[..., :k]
    v = orthogonal(batch, n, seed + 1)[..., :k]
    return ((u * spectrum(k, seed)) @ v.swapaxes(-1, -2)).astype(np.float32)


def symmetric(batch, n, seed, definite=True):
    """Symmetric matrices Q diag(w) Q^T with eigenvalues w well apart, all positive
    (definite) or of both signs."""
    w = spectrum(n, seed) - (0 if definite else (n + 2) / 2)
    q = orthogonal(batch, n, seed)
    return ((q * w) @ q.swapaxes(-1, -2)).astype(np.float32)


# ---- the operations, as functions of a library: pyrt.linalg, torch.linalg or NUMPY --------


def _sym(a):
    return (a + a.swapaxes(-1, -2)) / 2


def _numpy_solve(a, b, left=True):
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if not left:
        a = a.swapaxes(-1, -2)
        b = b if vector else b.swapaxes(-1, -2)
    x = np.linalg.solve(a, b[..., None] if vector else b)
    return x[..., 0] if vector else (x if left else x.swapaxes(-1, -2))


# NumPy's linalg with torch.linalg's signatures, the reference in float64. Symmetric inputs
# are symmetrized first: NumPy reads one triangle, while PyTorch's gradients of cholesky and
# eigh are symmetric, the gradients of the functions of (A + A^T) / 2
NUMPY = types.SimpleNamespace(
    det=np.linalg.det,
    slogdet=np.linalg.slogdet,
    inv=np.linalg.inv,
    solve=_numpy_solve,
    cholesky=lambda a, upper=False: np.linalg.cholesky(_sym(a), upper=upper),
    qr=lambda a, mode="reduced": np.linalg.qr(a, mode=mode),
    eigh=lambda a: np.linalg.eigh(_sym(a)),
    eigvalsh=lambda a: np.linalg.eigvalsh(_sym(a)),
    svd=lambda a, full_matrices=True: np.linalg.svd(a, full_matrices=full_matrices),
    svdvals=np.linalg.svdvals,
    pinv=lambda a, hermitian=False: np.linalg.pinv(a),  # hermitian only picks the method
    matrix_power=np.linalg.matrix_power,
    multi_dot=np.linalg.multi_dot,
    cross=lambda a, b: np.cross(a, b),
    vecdot=lambda a, b: np.sum(a * b, axis=-1),
    diagonal=lambda a, offset=0: np.diagonal(a, offset, -2, -1),
    matmul=np.matmul,
    lstsq=lambda a, b: types.SimpleNamespace(solution=np.linalg.pinv(a) @ b),
    vector_norm=lambda x, ord=2, dim=None: np.linalg.vector_norm(x, ord=ord, axis=dim),
    matrix_norm=lambda a, ord="fro": np.linalg.matrix_norm(a, ord=ord),
    cond=lambda a, p=None: np.linalg.cond(a, p),
)


def _squares(*outs):
    """Each of `outs` times itself: the entries' squares, the same for either sign of a
    singular vector or eigenvector, and of a row of R and column of Q in QR."""
    return tuple(t * t for t in outs)


# name -> (function of a library and the inputs, the inputs for a batch shape, a size and a
# seed), the size n of square matrices, or the smaller dim of rectangular ones
CASES = {
    "det": (lambda L, a: L.det(a), lambda b, n, s: [well_conditioned(b, n, s)]),
    "slogdet": (lambda L, a: L.slogdet(a)[1], lambda b, n, s: [well_conditioned(b, n, s)]),
    "inv": (lambda L, a: L.inv(a), lambda b, n, s: [well_conditioned(b, n, s)]),
    "solve": (lambda L, a, x: L.solve(a, x),
              lambda b, n, s: [well_conditioned(b, n, s), normal(b + (n, 2), s)]),
    "solve_vector": (lambda L, a, x: L.solve(a, x),
                     lambda b, n, s: [well_conditioned(b, n, s), normal(b + (n,), s)]),
    "solve_right_broadcast": (lambda L, a, x: L.solve(a, x, left=False),
                              lambda b, n, s: [well_conditioned(b, n, s), normal((3, n), s)]),
    "cholesky": (lambda L, a: L.cholesky(a), lambda b, n, s: [symmetric(b, n, s)]),
    "cholesky_upper": (lambda L, a: L.cholesky(a, upper=True),
                       lambda b, n, s: [symmetric(b, n, s)]),
    "qr_tall": (lambda L, a: _squares(*L.qr(a)), lambda b, n, s: [separated(b, n + 2, n, s)]),
    "qr_wide": (lambda L, a: _squares(*L.qr(a)), lambda b, n, s: [separated(b, n, n + 1, s)]),
    "eigh": (lambda L, a: (lambda w, v: (w, v * v))(*L.eigh(a)),
             lambda b, n, s: [symmetric(b, n, s, definite=False)]),
    "eigvalsh": (lambda L, a: L.eigvalsh(a), lambda b, n, s: [symmetric(b, n, s, False)]),
    "svd_tall": (lambda L, a: _squares(*L.svd(a, full_matrices=False)),
                 lambda b, n, s: [separated(b, n + 2, n, s)]),
    "svd_wide": (lambda L, a: _squares(*L.svd(a, full_matrices=False)),
                 lambda b, n, s: [separated(b, n, n + 1, s)]),
    "svd_square_full": (lambda L, a: _squares(*L.svd(a)), lambda b, n, s: [separated(b, n, n, s)]),
    "svdvals": (lambda L, a: L.svdvals(a), lambda b, n, s: [separated(b, n + 1, n, s)]),
    "pinv_tall": (lambda L, a: L.pinv(a), lambda b, n, s: [separated(b, n + 2, n, s)]),
    "pinv_wide": (lambda L, a: L.pinv(a), lambda b, n, s: [separated(b, n, n + 2, s)]),
    "pinv_hermitian": (lambda L, a: L.pinv(a, hermitian=True),
                       lambda b, n, s: [symmetric(b, n, s, False)]),
    "matrix_power_3": (lambda L, a: L.matrix_power(a, 3),
                       lambda b, n, s: [well_conditioned(b, n, s) / n]),
    "matrix_power_-2": (lambda L, a: L.matrix_power(a, -2),
                        lambda b, n, s: [well_conditioned(b, n, s)]),
    "lstsq": (lambda L, a, x: L.lstsq(a, x).solution,
              lambda b, n, s: [separated(b, n + 2, n, s), normal(b + (n + 2, 2), s)]),
    "matmul_broadcast": (lambda L, a, x: L.matmul(a, x),
                         lambda b, n, s: [normal(b + (n, 3), s), normal((3, 2), s + 1)]),
    "matmul_vector": (lambda L, a, x: L.matmul(a, x),
                      lambda b, n, s: [normal(b + (2, n), s), normal((n,), s + 1)]),
    "multi_dot": (lambda L, a, x, y: L.multi_dot([a, x, y]),
                  lambda b, n, s: [normal((n,), s), normal((n, 5), s + 1), normal((5, 2), s)]),
    "cross": (lambda L, a, x: L.cross(a, x),
              lambda b, n, s: [normal(b + (n, 3), s), normal((1,) * len(b) + (1, 3), s + 1)]),
    "vecdot": (lambda L, a, x: L.vecdot(a, x),
               lambda b, n, s: [normal(b + (n,), s), normal((n,), s + 1)]),
    "diagonal": (lambda L, a: L.diagonal(a, offset=1), lambda b, n, s: [normal(b + (n, n + 1), s)]),
    "vector_norm_3": (lambda L, a: L.vector_norm(a, 3, dim=-1),
                      lambda b, n, s: [normal(b + (2, n), s)]),
    "matrix_norm_nuc": (lambda L, a: L.matrix_norm(a, "nuc"),
                        lambda b, n, s: [separated(b, n + 1, n, s)]),
    "matrix_norm_2": (lambda L, a: L.matrix_norm(a, 2), lambda b, n, s: [separated(b, n, n, s)]),
    "matrix_norm_-2": (lambda L, a: L.matrix_norm(a, -2), lambda b, n, s: [separated(b, n, n, s)]),
    "matrix_norm_1": (lambda L, a: L.matrix_norm(a, 1), lambda b, n, s: [normal(b + (n, n), s)]),
    "matrix_norm_-inf": (lambda L, a: L.matrix_norm(a, -np.inf),
                         lambda b, n, s: [normal(b + (n, n + 1), s)]),
    "cond": (lambda L, a: L.cond(a), lambda b, n, s: [separated(b, n + 1, n, s)]),
}

# PyTorch's cond differentiates p=1 through an inverse it then writes in place (an error)
TORCH_ONLY_VALUES = {"cond_1": (lambda L, a: L.cond(a, 1),
                                lambda b, n, s: [well_conditioned(b, n, s)])}


def _tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _weights(outs, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(o)) for o in outs]


def pyrt_run(fn, arrays, seed):
    """fn's outputs on pyrt leaves, and the leaves' gradients of sum_i sum(w_i * out_i)."""
    leaves = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    outs = _tuple(fn(PL, *leaves))
    loss = 0
    for out, w in zip(outs, _weights(outs, seed)):
        assert out.requires_grad
        loss = (out * pyrt.tensor(w.astype(np.float32))).sum() + loss
    loss.backward()
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t in leaves]


def torch_run(fn, arrays, seed):
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs = _tuple(fn(torch.linalg, *leaves))
    loss = sum((o * torch.tensor(w.astype(np.float32))).sum()
               for o, w in zip(outs, _weights(outs, seed)))
    loss.backward()
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t in leaves]


def numpy_run(fn, arrays, seed, h=1e-6):
    """fn's outputs with NumPy in float64, and the gradients of the same loss by central
    differences."""
    arrays = [a.astype(np.float64) for a in arrays]
    outs = [np.asarray(o) for o in _tuple(fn(NUMPY, *arrays))]
    weights = _weights(outs, seed)

    def loss(*xs):
        return sum(float((np.asarray(o) * w).sum())
                   for o, w in zip(_tuple(fn(NUMPY, *xs)), weights))

    grads = []
    for i, a in enumerate(arrays):
        grad = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            step = np.zeros_like(a)
            step[index] = h
            up, down = list(arrays), list(arrays)
            up[i], down[i] = a + step, a - step
            grad[index] = (loss(*up) - loss(*down)) / (2 * h)
        grads.append(grad)
    return outs, grads


def assert_close(got, expected, rtol):
    """Each array of `got` matches `expected` to rtol of the largest entry of each."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == np.shape(e)
        scale = max(float(np.max(np.abs(e), initial=0.0)), 1.0)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale)


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES) + sorted(TORCH_ONLY_VALUES))
@EXAMPLES
@given(batch=st.sampled_from([(), (2,), (2, 1)]), n=st.integers(1, 4), seed=st.integers(0, 99))
def test_values_and_gradients_against_torch(name, batch, n, seed):
    fn, inputs = CASES.get(name) or TORCH_ONLY_VALUES[name]
    arrays = [np.asarray(a, np.float32) for a in inputs(batch, n, seed)]
    if name in TORCH_ONLY_VALUES:
        outs = [fn(PL, *map(pyrt.tensor, arrays)).numpy()]
        assert_close(outs, [fn(torch.linalg, *map(torch.tensor, arrays)).numpy()], 1e-4)
        return
    outs, grads = pyrt_run(fn, arrays, seed)
    outs_t, grads_t = torch_run(fn, arrays, seed)
    assert_close(outs, outs_t, 1e-4)
    assert_close(grads, grads_t, 1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_numpy_and_gradients_against_finite_differences(name):
    fn, inputs = CASES[name]
    arrays = [np.asarray(a, np.float32) for a in inputs((2,), 3, 7)]
    outs, grads = pyrt_run(fn, arrays, 7)
    outs_n, grads_n = numpy_run(fn, arrays, 7)
    assert_close(outs, outs_n, 1e-4)
    assert_close(grads, grads_n, 1e-3)


# ---- results with conventions: full factors, modes, extras ----------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_full_svd_and_complete_qr_are_orthogonal_factorizations(shape):
    a = normal(shape, 3)
    m, n = shape[-2:]
    u, s, vh = (t.numpy().astype(np.float64) for t in PL.svd(pyrt.tensor(a)))
    assert u.shape == shape[:-2] + (m, m) and vh.shape == shape[:-2] + (n, n)
    k = min(m, n)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-5)
    for q in (u, vh):
        np.testing.assert_allclose(q @ q.swapaxes(-1, -2), np.broadcast_to(np.eye(q.shape[-1]),
                                                                          q.shape), atol=1e-5)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                               rtol=1e-5)
    q, r = (t.numpy().astype(np.float64) for t in PL.qr(pyrt.tensor(a), mode="complete"))
    assert q.shape == shape[:-2] + (m, m) and r.shape == a.shape
    np.testing.assert_allclose(q @ r, a, atol=1e-5)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    q_r, r_only = PL.qr(pyrt.tensor(a), mode="r")
    assert q_r.shape == (0,)
    np.testing.assert_allclose(r_only.numpy(), r[..., :k, :], atol=1e-5)


def test_eigh_reads_one_triangle_and_cholesky_upper_the_other():
    a = symmetric((), 4, 5)
    lower_only = np.tril(a) + np.triu(np.full((4, 4), 9.0, np.float32), 1)
    upper_only = np.triu(a) + np.tril(np.full((4, 4), 9.0, np.float32), -1)
    w = np.linalg.eigvalsh(a.astype(np.float64))
    np.testing.assert_allclose(PL.eigvalsh(pyrt.tensor(lower_only)).numpy(), w, rtol=1e-5)
    np.testing.assert_allclose(PL.eigh(pyrt.tensor(upper_only), UPLO="U")[0].numpy(), w,
                               rtol=1e-5)
    low = PL.cholesky(pyrt.tensor(lower_only)).numpy()
    up = PL.cholesky(pyrt.tensor(upper_only), upper=True).numpy()
    np.testing.assert_allclose(low @ low.T, a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(up, low.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.triu(low, 1), 0)


def test_det_gradient_of_singular_matrices_is_the_cofactor_matrix():
    """det's gradient is the cofactor matrix, nonzero for a matrix of rank n - 1 (where
    det A * A^-T is undefined) and zero for rank n - 2."""
    rank2 = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32)
    rank1 = np.array([[1, 2, 3], [2, 4, 6], [3, 6, 9]], np.float32)
    for a in (rank2, rank1):
        cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                         for j in range(3)] for i in range(3)])
        out, grad = pyrt_run(lambda L, x: L.det(x), [a], 0)
        w = _weights(out, 0)[0]
        assert out[0] == 0
        np.testing.assert_allclose(grad[0], w * cof, atol=1e-5)


def test_float32_inputs_are_factored_in_float64():
    """The 7 x 7 Hilbert matrix (condition number 5e8): det, slogdet, inv and solve of its
    float32 entries agree with float64 to a few float32 ulps, which float32 elimination
    could not give (it loses nearly all digits at this condition number)."""
    h = (1 / (np.arange(7)[:, None] + np.arange(7)[None, :] + 1)).astype(np.float32)
    h64 = h.astype(np.float64)
    t = pyrt.tensor(h)
    assert PL.det(t).dtype == pyrt.float32
    np.testing.assert_allclose(PL.det(t).numpy(), np.linalg.det(h64), rtol=1e-5)
    np.testing.assert_allclose(PL.slogdet(t)[1].numpy(), np.linalg.slogdet(h64)[1], rtol=1e-6)
    np.testing.assert_allclose(PL.inv(t).numpy(), np.linalg.inv(h64), rtol=1e-5)
    b = np.ones(7, np.float32)
    np.testing.assert_allclose(PL.solve(t, pyrt.tensor(b)).numpy(), np.linalg.solve(h64, b),
                               rtol=1e-5)


def test_matrix_rank_pinv_tolerances_and_lstsq_extras():
    rank2 = np.array([[1, 2, 3], [2, 4, 6.001], [1, 0, 1], [0, 1, 1]], np.float32)
    a = pyrt.tensor(rank2)
    assert PL.matrix_rank(a).item() == 3 and PL.matrix_rank(a).dtype == pyrt.int64
    assert PL.matrix_rank(a, atol=0.01).item() == 2
    assert PL.matrix_rank(a, rtol=0.001).item() == 2
    assert PL.matrix_rank(pyrt.tensor(symmetric((2,), 3, 1, False)), hermitian=True).tolist() \
        == [3, 3]
    s = np.linalg.svd(rank2.astype(np.float64), compute_uv=False)
    expected = np.linalg.pinv(rank2.astype(np.float64), rtol=0.01 / s[0])
    np.testing.assert_allclose(PL.pinv(a, atol=0.01).numpy(), expected, rtol=1e-4, atol=1e-4)
    b = normal((4, 2), 2)
    x = np.linalg.lstsq(rank2.astype(np.float64), b, rcond=None)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        out = PL.lstsq(a, pyrt.tensor(b), driver=driver)
        np.testing.assert_allclose(out.solution.numpy(), x[0], rtol=1e-3, atol=1e-3)
        assert out.rank.shape == ((0,) if driver == "gels" else ())
        assert out.singular_values.shape == ((3,) if driver in ("gelsd", "gelss") else (0,))
        if driver != "gelsy":
            np.testing.assert_allclose(out.residuals.numpy(), x[1], rtol=1e-3)
        else:
            assert out.residuals.shape == (0,)
    vector = PL.lstsq(a, pyrt.tensor(b[:, 0]), driver="gelsd")
    np.testing.assert_allclose(vector.solution.numpy(), x[0][:, 0], rtol=1e-3, atol=1e-3)
    assert vector.residuals.shape == (1,)


@needs_torch
def test_lstsq_extras_and_slogdet_sign_as_torch():
    a, b = normal((2, 5, 3), 4), normal((2, 5, 2), 5)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        ours = PL.lstsq(pyrt.tensor(a), pyrt.tensor(b), driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for x, y in zip(ours, theirs):
            assert tuple(x.shape) == tuple(y.shape) and str(x.dtype) == str(y.numpy().dtype)
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-4, atol=1e-5)
    m = normal((3, 4, 4), 6)
    sign = PL.slogdet(pyrt.tensor(m, requires_grad=True)).sign
    np.testing.assert_array_equal(sign.detach().numpy(), torch.linalg.slogdet(torch.tensor(m)).sign)
    assert sign.requires_grad


def test_matrix_power_of_integers_is_exact_and_of_zero_is_the_identity():
    a = np.array([[1, 1], [1, 0]])
    out = PL.matrix_power(pyrt.tensor(a), 40)
    assert out.dtype == pyrt.int64 and out.tolist() == [[165580141, 102334155],
                                                        [102334155, 63245986]]
    eye = PL.matrix_power(pyrt.tensor(normal((3, 2, 2), 0)), 0)
    np.testing.assert_array_equal(eye.numpy(), np.broadcast_to(np.eye(2), (3, 2, 2)))
    x = pyrt.tensor(normal((2, 2), 1), requires_grad=True)
    one = PL.matrix_power(x, 1)
    assert one is not x
    np.testing.assert_array_equal(one.detach().numpy(), x.detach().numpy())


def test_norm_dispatch():
    x = normal((2, 3, 4), 9)
    x64 = x.astype(np.float64)
    t = pyrt.tensor(x)
    np.testing.assert_allclose(PL.norm(t).numpy(), np.sqrt((x64 ** 2).sum()), rtol=1e-6)
    np.testing.assert_allclose(PL.norm(t, 1, dim=1).numpy(), np.abs(x64).sum(1), rtol=1e-6)
    np.testing.assert_allclose(PL.norm(t, np.inf, dim=(2, 0)).numpy(),
                               np.abs(x64).sum(0).max(1), rtol=1e-6)
    np.testing.assert_allclose(PL.norm(t[0], "nuc").numpy(),
                               np.linalg.norm(x64[0], "nuc"), rtol=1e-5)
    kept = PL.matrix_norm(t, -1, dim=(0, 2), keepdim=True)
    assert kept.shape == (1, 3, 1)
    np.testing.assert_allclose(kept.numpy()[0, :, 0], np.abs(x64).sum(0).min(-1), rtol=1e-6)
    np.testing.assert_allclose(PL.vector_norm(t, 0).numpy(), x.size)
    np.testing.assert_allclose(PL.vector_norm(t, -np.inf, dim=(0, 1), keepdim=True).numpy(),
                               np.abs(x64).min((0, 1), keepdims=True), rtol=1e-6)


def test_cond_of_singular_matrices_is_inf():
    a = np.stack([np.eye(3), [[1, 2, 3], [2, 4, 6], [0, 0, 1]]]).astype(np.float32)
    for p in (1, "fro"):
        out = PL.cond(pyrt.tensor(a), p).numpy()
        assert out[0] == pytest.approx(1 if p == 1 else 3) and out[1] == np.inf
    assert PL.cond(pyrt.tensor(a)).numpy()[1] > 1e7  # the ratio of singular values


# ---- errors ----------------------------------------------------------------------------------

SINGULAR = np.array([[1, 2, 3], [2, 4, 6], [1, 1, 1]], np.float32)  # U[2, 2] = 0 exactly
INDEFINITE = np.array([[1, 2], [2, 1]], np.float32)


def _batch(a):
    return np.stack([np.eye(a.shape[0], dtype=np.float32), a])


SQUARE = "{}: A must be batches of square matrices, but they are 3 by 4 matrices"
ERRORS = [  # (call on a library, the inputs, pyrt's message (a literal), its type)
    (lambda L, a: L.det(a), [normal((3, 4), 0)], SQUARE.format("linalg.det"), RuntimeError),
    (lambda L, a: L.inv(a), [normal((3, 4), 0)], SQUARE.format("linalg.inv"), RuntimeError),
    (lambda L, a: L.cholesky(a), [normal((2, 3, 4), 0)], SQUARE.format("linalg.cholesky"),
     RuntimeError),
    (lambda L, a: L.slogdet(a), [np.eye(3, dtype=np.int64)],
     "linalg.slogdet: Expected a floating point or complex tensor as input. Got Long",
     RuntimeError),
    (lambda L, a: L.svd(a), [np.eye(3, dtype=np.int64)],
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long",
     RuntimeError),
    (lambda L, a: L.eigh(a), [np.eye(3, dtype=np.int64)],
     "\"linalg_eigh_cpu\" not implemented for 'Long'", NotImplementedError),
    (lambda L, a: L.det(a), [normal((3,), 0)],
     "linalg.det: The input tensor A must have at least 2 dimensions.", RuntimeError),
    (lambda L, a: L.inv(a), [SINGULAR],
     "linalg.inv: The diagonal element 3 is zero, the inversion could not be completed "
     "because the input matrix is singular.", RuntimeError),
    (lambda L, a: L.inv(a), [_batch(SINGULAR)],
     "linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion could not "
     "be completed because the input matrix is singular.", RuntimeError),
    (lambda L, a: L.matrix_power(a, -1), [np.zeros((2, 2), np.float32)],
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed "
     "because the input matrix is singular.", RuntimeError),
    (lambda L, a: L.solve(a, a), [_batch(SINGULAR)],
     "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is "
     "singular.", RuntimeError),
    (lambda L, a: L.cholesky(a), [INDEFINITE],
     "linalg.cholesky: The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 2 is not positive-definite).",
     RuntimeError),
    (lambda L, a: L.cholesky(a, upper=True), [_batch(np.diag([1, 1, -1]).astype(np.float32))],
     "linalg.cholesky: (Batch element 1): The factorization could not be completed because "
     "the input is not positive-definite (the leading minor of order 3 is not "
     "positive-definite).", RuntimeError),
    (lambda L, a: L.solve(a, a[:2]), [np.eye(3, dtype=np.float32)],
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x3)",
     RuntimeError),
    (lambda L, a: L.solve(a, a[:, :2], left=False), [np.eye(3, dtype=np.float32)],
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and 3x2)",
     RuntimeError),
    (lambda L, a: L.qr(a, mode="full"), [normal((3, 3), 0)],
     "qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or "
     "'complete'", RuntimeError),
    (lambda L, a: L.eigh(a, UPLO="X"), [normal((3, 3), 0)],
     "Expected UPLO argument to be 'L' or 'U', but got X", RuntimeError),
    (lambda L, a: L.matrix_norm(a, 3), [normal((3, 3), 0)],
     "linalg.matrix_norm: Order 3 not supported.", RuntimeError),
    (lambda L, a: L.matrix_norm(a, dim=(0, 0)), [normal((3, 3), 0)],
     "linalg.matrix_norm: dims must be different. Got (0, 0)", RuntimeError),
    (lambda L, a: L.norm(a, 2), [normal((2, 2, 2), 0)],
     "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.",
     RuntimeError),
    (lambda L, a: L.vector_norm(a, "fro"), [normal((3,), 0)],
     "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str", TypeError),
    (lambda L, a: L.cross(a, a), [normal((2, 4), 0)],
     "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4", RuntimeError),
    (lambda L, a: L.matrix_power(a, 2.0), [normal((3, 3), 0)],
     "linalg_matrix_power(): argument 'n' (position 2) must be int, not float", TypeError),
    (lambda L, a: L.multi_dot([a]), [normal((3, 3), 0)],
     "multi_dot(): expected at least 2 tensors but got 1", RuntimeError),
    (lambda L, a: L.multi_dot([a, a[:2]]), [normal((3, 3), 0)],
     "multi_dot(): tensors 0 and 1 with shapes [3, 3] and [2, 3] cannot be multiplied",
     RuntimeError),
    (lambda L, a: L.lstsq(a, a, driver="qr"), [normal((3, 3), 0)],
     "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)",
     RuntimeError),
    (lambda L, a: L.pinv(a), [np.eye(3, dtype=np.int64)],
     "linalg.pinv(Long{[3, 3]}): expected a tensor with 2 or more dimensions of float, double, "
     "cfloat or cdouble types", RuntimeError),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_as_torch(index):
    call, arrays, message, error = ERRORS[index]
    with pytest.raises(error) as raised:
        call(PL, *(pyrt.tensor(a) for a in arrays))
    assert str(raised.value) == message
    if torch is not None:
        with pytest.raises(error) as raised:
            call(torch.linalg, *(torch.tensor(a) for a in arrays))
        assert str(raised.value).splitlines()[0] == message


def test_linalg_errors_are_runtime_errors_and_inv_ex_reports_instead():
    assert issubclass(PL.LinAlgError, RuntimeError)
    inverse, info = PL.inv_ex(pyrt.tensor(_batch(SINGULAR)))
    assert info.tolist() == [0, 3] and str(info.dtype) == "int32"
    np.testing.assert_array_equal(inverse.numpy()[0], np.eye(3))
    assert np.isnan(inverse.numpy()[1]).all()
    with pytest.raises(PL.LinAlgError, match=r"linalg.inv_ex: \(Batch element 1\)"):
        PL.inv_ex(pyrt.tensor(_batch(SINGULAR)), check_errors=True)
    sign, logabsdet = PL.slogdet(pyrt.tensor(SINGULAR))
    assert sign.item() == 0 and logabsdet.item() == -np.inf
    assert PL.det(pyrt.tensor(SINGULAR)).item() == 0


def test_gradients_refused_where_torch_refuses_them():
    x = pyrt.tensor(normal((4, 3), 0), requires_grad=True)
    _, r = PL.qr(x, mode="r")
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed"):
        r.sum().backward()
    q, _ = PL.qr(x, mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows"):
        q.sum().backward()
