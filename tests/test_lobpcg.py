"""pyrt.lobpcg against NumPy's eigh (and scipy.linalg.eigh for the generalized problem), and
against torch.lobpcg where installed: eigenvalues, eigenvectors up to sign, the gradient of
the eigenvalues, and torch's errors."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None


def _spd(rng, m, batch=()):
    a = rng.standard_normal(batch + (m, m))
    return (a @ np.swapaxes(a, -1, -2) + m * np.eye(m)).astype(np.float32)


def _same_columns_up_to_sign(x, y, tol):
    signs = np.sign(np.sum(x * y, axis=-2, keepdims=True))
    np.testing.assert_allclose(x * signs, y, atol=tol)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(1, 3), extra=st.integers(0, 4),
       largest=st.booleans(), batch=st.sampled_from([(), (2,)]))
def test_eigenpairs_equal_numpys(seed, k, extra, largest, batch):
    rng = np.random.default_rng(seed)
    m = 3 * k + extra
    a = _spd(rng, m, batch)
    values, vectors = pyrt.lobpcg(pyrt.tensor(a), k=k, largest=largest)
    w, v = np.linalg.eigh(a.astype(np.float64))
    order = np.arange(m - 1, m - 1 - k, -1) if largest else np.arange(k)
    np.testing.assert_allclose(values.numpy(), w[..., order], rtol=1e-5)
    _same_columns_up_to_sign(vectors.numpy(), v[..., order], 1e-3)
    assert values.shape == batch + (k,) and vectors.shape == batch + (m, k)


def test_generalized_problem_equals_scipys_and_is_b_orthonormal():
    rng = np.random.default_rng(1)
    a, b = _spd(rng, 9), _spd(rng, 9)
    values, vectors = pyrt.lobpcg(pyrt.tensor(a), k=2, B=pyrt.tensor(b))
    w = scipy.linalg.eigh(a.astype(np.float64), b.astype(np.float64), eigvals_only=True)
    np.testing.assert_allclose(values.numpy(), w[[8, 7]], rtol=1e-4)
    x = vectors.numpy().astype(np.float64)
    np.testing.assert_allclose(x.T @ b @ x, np.eye(2), atol=1e-4)
    np.testing.assert_allclose(a @ x, b @ x * values.numpy(), rtol=1e-3, atol=1e-3)


def test_gradient_of_the_largest_eigenvalue_is_its_vectors_outer_product():
    # d lambda / dA = v v^T for a simple eigenvalue of a symmetric A
    rng = np.random.default_rng(2)
    a = pyrt.tensor(_spd(rng, 6), requires_grad=True)
    values, vectors = pyrt.lobpcg(a, k=1)
    values.sum().backward()
    v = vectors.detach().numpy()[:, 0]
    np.testing.assert_allclose(a.grad.numpy(), np.outer(v, v), atol=1e-5)


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("largest", [True, False])
def test_matches_torch(largest):
    rng = np.random.default_rng(3)
    a, b = _spd(rng, 12), _spd(rng, 12)
    for kwargs in ({}, {"B": b}):
        ours = pyrt.lobpcg(pyrt.tensor(a), k=3, largest=largest,
                           **{n: pyrt.tensor(t) for n, t in kwargs.items()})
        theirs = torch.lobpcg(torch.tensor(a), k=3, largest=largest,
                              **{n: torch.tensor(t) for n, t in kwargs.items()})
        np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-4)
        _same_columns_up_to_sign(ours[1].numpy(), theirs[1].numpy(), 2e-3)


def test_errors():
    a = pyrt.tensor(_spd(np.random.default_rng(4), 9))
    with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number "
                                         r"of A rows \(=9\) is smaller than 3 x the number of "
                                         r"requested eigenpairs \(=4\)"):
        pyrt.lobpcg(a, k=4)
    with pytest.raises(TypeError, match="argument 'A' must be a Tensor, not list"):
        pyrt.lobpcg([[1.0]])
    with pytest.raises(ValueError, match="A and B must have the same shapes"):
        pyrt.lobpcg(a, k=1, B=pyrt.eye(3))
    with pytest.raises(ValueError, match="k must be a positive int, got 0"):
        pyrt.lobpcg(a, k=0)
    with pytest.raises(ValueError, match="method must be 'basic' or 'ortho'"):
        pyrt.lobpcg(a, k=1, method="fast")
    with pytest.raises(ValueError, match="square matrix"):
        pyrt.lobpcg(pyrt.ones(3, 4), k=1)
