"""as_strided, as_strided_, as_strided_scatter, svd_lowrank, pca_lowrank and the deprecated
norms (nuclear_norm, frobenius_norm, norm_except_dim) against definitions and torch."""

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

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def close(a, b, tol=1e-5):
    a = a._data if isinstance(a, pyrt.Tensor) else a
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def positions(size, stride, offset):
    """The storage position of each element of a strided view (the definition)."""
    pos = np.full(size, offset, np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        pos = pos + (np.arange(n) * s).reshape(shape)
    return pos


@st.composite
def geometries(draw):
    ndim = draw(st.integers(0, 3))
    size = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    stride = tuple(draw(st.integers(0, 3)) for _ in range(ndim))
    offset = draw(st.integers(0, 3))
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    return size, stride, offset, extent + draw(st.integers(0, 3))


@SETTINGS
@given(geometries(), st.integers(0, 2**16))
def test_as_strided_values_and_gradients(geometry, seed):
    size, stride, offset, length = geometry
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(length).astype(np.float32)
    x = pyrt.tensor(base, requires_grad=True)
    y = pyrt.as_strided(x, size, stride, offset)
    pos = positions(size, stride, offset)
    np.testing.assert_array_equal(y._data, base[pos])
    g = rng.standard_normal(size).astype(np.float32)
    y.backward(pyrt.tensor(g))
    want = np.zeros(length)
    np.add.at(want, pos, g)  # overlapping windows: the gradients add up
    close(x.grad, want)
    if torch is not None:
        tx = torch.tensor(base, requires_grad=True)
        ty = torch.as_strided(tx, size, stride, offset)
        close(y, ty)
        ty.backward(torch.tensor(g))
        close(x.grad, tx.grad)


def test_as_strided_is_a_view_and_uses_the_storage_offset():
    base = pyrt.arange(10.0)
    view = base.as_strided((3, 3), (2, 1))
    base._data[2] = 100.0
    assert view._data[1, 0] == 100.0 and view._data[0, 2] == 100.0
    tail = base[2:]
    close(tail.as_strided((2,), (1,)), [100.0, 3.0])  # starts at tail's own offset
    close(tail.as_strided((2,), (1,), 0), [0.0, 1.0])  # the storage's start
    if torch is not None:
        tb = torch.arange(10.0)
        close(tb[2:].as_strided((2,), (1,), 0), [0.0, 1.0])
    matrix = pyrt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    close(matrix.as_strided((2, 2), (4, 1), 5), [[5, 6], [9, 10]])


def test_as_strided_gradient_of_a_self_overlapping_input_matches_torch():
    x = pyrt.tensor(np.arange(10, dtype=np.float32), requires_grad=True)
    g = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = x.as_strided((3, 10), (0, 1))  # three views of the same ten elements
    rows.as_strided((4, 3), (2, 1)).backward(pyrt.tensor(g))
    want = np.zeros(10)
    np.add.at(want, positions((4, 3), (2, 1), 0), g)
    close(x.grad, want)
    if torch is not None:
        tx = torch.arange(10.0, requires_grad=True)
        tx.as_strided((3, 10), (0, 1)).as_strided((4, 3), (2, 1)).backward(torch.tensor(g))
        close(x.grad, tx.grad)


def test_as_strided_in_place():
    x = pyrt.zeros(10)
    out = x.as_strided_((2, 2), (3, 1), 1)
    assert out is x and x.shape == (2, 2) and x.stride() == (3, 1) and x.storage_offset() == 1
    w = pyrt.arange(6.0, requires_grad=True)
    y = w * 1
    y.as_strided_((2, 2), (1, 1))
    y.sum().backward()
    close(w.grad, [1, 2, 1, 0, 0, 0])


def test_as_strided_scatter_values_and_gradients():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(10).astype(np.float32)
    src = rng.standard_normal((3, 2)).astype(np.float32)
    x = pyrt.tensor(base, requires_grad=True)
    s = pyrt.tensor(src, requires_grad=True)
    out = pyrt.as_strided_scatter(x, s, (3, 2), (3, 1), 1)
    want = base.copy()
    want[positions((3, 2), (3, 1), 1)] = src
    close(out, want)
    assert out._data.base is not None and not np.shares_memory(out._data, x._data)
    g = rng.standard_normal(10).astype(np.float32)
    out.backward(pyrt.tensor(g))
    mask = np.ones(10)
    mask[positions((3, 2), (3, 1), 1)] = 0
    close(x.grad, g * mask)  # the written positions take no gradient to input
    close(s.grad, g[positions((3, 2), (3, 1), 1)])
    if torch is not None:
        ts = torch.tensor(src, requires_grad=True)
        to = torch.as_strided_scatter(torch.tensor(base), ts, (3, 2), (3, 1), 1)
        close(out, to)
        to.backward(torch.tensor(g))
        close(s.grad, ts.grad)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.as_strided((3, 3), (2, 1), 5), RuntimeError, "out of bounds for storage"),
    (lambda x: x.as_strided((3,), (-1,)), RuntimeError, "Negative strides"),
    (lambda x: x.as_strided((3,), (1,), -1), RuntimeError, "invalid storage offset"),
    (lambda x: x.as_strided((3, 3), (1,)), RuntimeError, "mismatch in length"),
    (lambda x: x.as_strided((2.5,), (1,)), TypeError, "tuple of ints"),
    (lambda x: pyrt.as_strided_scatter(x, pyrt.ones(3, 2), (3, 3), (2, 1)), RuntimeError,
     "expected src to have a size equal"),
    (lambda x: pyrt.as_strided([1.0], (1,), (1,)), TypeError, "must be a Tensor"),
])
def test_as_strided_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(pyrt.arange(10.0))
    if torch is not None and error is RuntimeError and "src" not in match:
        with pytest.raises(RuntimeError):
            call(torch.arange(10.0))


# ---- low-rank factorizations -----------------------------------------------------------------


def low_rank(rng, batch, m, n, rank):
    a = rng.standard_normal(batch + (m, rank)) @ rng.standard_normal(batch + (rank, n))
    return a.astype(np.float32)


def reconstruct(U, S, V):
    return (U._data * S._data[..., None, :]) @ np.swapaxes(V._data, -1, -2)


@SETTINGS
@given(st.sampled_from([(), (2,)]), st.integers(3, 7), st.integers(3, 7), st.integers(1, 3),
       st.integers(0, 2**16))
def test_svd_lowrank_reconstructs_low_rank_matrices(batch, m, n, rank, seed):
    rng = np.random.default_rng(seed)
    a = low_rank(rng, batch, m, n, rank)
    pyrt.manual_seed(seed)
    q = rank + 1
    U, S, V = pyrt.svd_lowrank(pyrt.tensor(a), q=q)
    k = min(q, m, n)
    assert U.shape == batch + (m, k) and S.shape == batch + (k,) and V.shape == batch + (n, k)
    scale = np.abs(a).max() + 1
    close(reconstruct(U, S, V) / scale, a / scale, 1e-4)
    close(S._data[..., :rank] / scale,
          np.linalg.svd(a.astype(np.float64), compute_uv=False)[..., :rank] / scale, 1e-4)
    close(np.swapaxes(U._data, -1, -2) @ U._data, np.broadcast_to(np.eye(k), batch + (k, k)),
          1e-4)
    if torch is not None:
        _tU, tS, _tV = torch.svd_lowrank(torch.tensor(a), q=q)
        close(S._data[..., :rank] / scale, tS.numpy()[..., :rank] / scale, 1e-4)


def test_svd_lowrank_with_M_and_gradient():
    rng = np.random.default_rng(1)
    a = low_rank(rng, (), 6, 5, 2)
    mean = rng.standard_normal(5).astype(np.float32)
    pyrt.manual_seed(0)
    U, S, V = pyrt.svd_lowrank(pyrt.tensor(a + mean), q=3, M=pyrt.tensor(mean))
    close(reconstruct(U, S, V), a, 1e-4)
    # the sum of the singular values of a matrix of rank <= q: its gradient is U V^T
    x = pyrt.tensor(a, requires_grad=True)
    U, S, V = pyrt.svd_lowrank(x, q=2)
    S.sum().backward()
    u, _s, vh = np.linalg.svd(a.astype(np.float64))
    close(x.grad, u[:, :2] @ vh[:2], 1e-4)


def test_pca_lowrank_matches_centred_svd_and_torch():
    rng = np.random.default_rng(2)
    a = low_rank(rng, (), 8, 5, 2) + rng.standard_normal(5).astype(np.float32)
    pyrt.manual_seed(0)
    U, S, V = pyrt.pca_lowrank(pyrt.tensor(a), q=3)
    centred = a - a.mean(0)
    close(reconstruct(U, S, V), centred, 1e-4)
    s = np.linalg.svd(centred.astype(np.float64), compute_uv=False)
    close(S._data[:2], s[:2], 1e-4)
    projector = V._data[:, :2] @ V._data[:, :2].T  # the principal subspace
    _, _, vh = np.linalg.svd(centred.astype(np.float64))
    close(projector, vh[:2].T @ vh[:2], 1e-4)
    if torch is not None:
        _, tS, tV = torch.pca_lowrank(torch.tensor(a), q=3)
        close(S._data[:2], tS.numpy()[:2], 1e-4)
        close(projector, (tV[:, :2] @ tV[:, :2].T).numpy(), 1e-4)
    assert pyrt.pca_lowrank(pyrt.tensor(a), center=False)[1].shape == (5,)


@pytest.mark.parametrize("call, error, match", [
    (lambda: pyrt.pca_lowrank(pyrt.randn(3, 4), q=5), ValueError, "not greater than min"),
    (lambda: pyrt.pca_lowrank(pyrt.randn(3, 4), niter=-1), ValueError, "niter"),
    (lambda: pyrt.svd_lowrank(pyrt.randn(4)), ValueError, "at least 2 dimensions"),
    (lambda: pyrt.svd_lowrank(pyrt.ones(3, 4).long()), RuntimeError, "floating point"),
    (lambda: pyrt.svd_lowrank([[1.0]]), TypeError, "must be a Tensor"),
    (lambda: pyrt.svd_lowrank(pyrt.randn(3, 4), q=2.5), TypeError, "q must be an int"),
])
def test_low_rank_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- deprecated norms ------------------------------------------------------------------------


def test_nuclear_and_frobenius_norms():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.warns(UserWarning, match="deprecated"):
            nuc = pyrt.nuclear_norm(pyrt.tensor(a))
        close(nuc, np.linalg.svd(a.astype(np.float64), compute_uv=False).sum(-1), 1e-4)
        nuc_dim = pyrt.nuclear_norm(pyrt.tensor(a), (0, 2), True)
        assert nuc_dim.shape == (1, 3, 1)
        fro = pyrt.frobenius_norm(pyrt.tensor(a), (0, 2), True)
        close(fro, np.sqrt((a.astype(np.float64) ** 2).sum((0, 2), keepdims=True)))
        close(pyrt.frobenius_norm(pyrt.tensor(a), ()), np.sqrt((a ** 2).sum()))
        with pytest.raises(RuntimeError, match="at most 2 dimensions"):
            pyrt.frobenius_norm(pyrt.tensor(a), (0, 1, 2))
        if torch is not None:
            close(nuc, torch.nuclear_norm(torch.tensor(a)), 1e-4)
            close(nuc_dim, torch.nuclear_norm(torch.tensor(a), (0, 2), True), 1e-4)
            close(fro, torch.frobenius_norm(torch.tensor(a), (0, 2), True))


@pytest.mark.parametrize("pow, dim", [(2, 0), (2, 1), (2, 2), (2, -1), (2, -2), (3, 1),
                                      (1, 0)])
def test_norm_except_dim(pow, dim):
    a = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    got = pyrt.norm_except_dim(pyrt.tensor(a), pow, dim)
    a64 = np.abs(a.astype(np.float64))
    if dim == -1:
        want = (a64 ** pow).sum() ** (1 / pow)
    else:
        others = tuple(d for d in range(3) if d != dim % 3)
        want = (a64 ** pow).sum(others, keepdims=True) ** (1 / pow)
    close(got, want, 1e-5)
    if torch is not None:
        close(got, torch.norm_except_dim(torch.tensor(a), pow, dim))


def test_norm_except_dim_errors():
    with pytest.raises(TypeError, match="must be int"):
        pyrt.norm_except_dim(pyrt.ones(2, 3), 0.5, 1)
    with pytest.raises(IndexError):
        pyrt.norm_except_dim(pyrt.ones(2, 3), 2, 5)
