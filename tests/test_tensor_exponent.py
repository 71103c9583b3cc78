"""pow with a tensor exponent (x ** y, x.pow(y), pyrt.pow(x, y), pyrt.pow(2, y), x.pow_(y)):
values and gradients against a float64 definition and PyTorch; and erf of a 0-d tensor."""

import math

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

shapes = st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)), ((), (2, 2)),
                          ((4,), ())])


def positive(shape, seed):
    return np.random.default_rng(seed).uniform(0.2, 2.0, shape).astype(np.float32)


def exponents(shape, seed):
    return np.random.default_rng(seed + 100).uniform(-2.0, 3.0, shape).astype(np.float32)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(shapes, st.integers(0, 50))
def test_values_and_gradients_equal_the_definition(pair, seed):
    xs, es = pair
    x, e = positive(xs, seed), exponents(es, seed)
    a = pyrt.tensor(x, requires_grad=True)
    b = pyrt.tensor(e, requires_grad=True)
    y = a ** b
    want = np.power(x.astype(np.float64), e.astype(np.float64))
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=2e-6)
    y.sum().backward()
    out = np.broadcast_to(want, np.broadcast_shapes(xs, es))
    da = (e * np.power(x.astype(np.float64), e - 1.0)) * np.ones_like(out)
    db = out * np.log(x.astype(np.float64))
    axes_a = tuple(range(out.ndim - len(xs))) + tuple(
        i + out.ndim - len(xs) for i, n in enumerate(xs) if n == 1 and out.shape[i + out.ndim
                                                                              - len(xs)] != 1)
    np.testing.assert_allclose(a.grad.numpy(), da.sum(axis=axes_a).reshape(xs), rtol=2e-5)
    axes_b = tuple(range(out.ndim - len(es))) + tuple(
        i + out.ndim - len(es) for i, n in enumerate(es) if n == 1 and out.shape[i + out.ndim
                                                                              - len(es)] != 1)
    np.testing.assert_allclose(b.grad.numpy(), db.sum(axis=axes_b).reshape(es), rtol=2e-5,
                               atol=1e-6)


@needs_torch
def test_gradients_at_zero_base_and_zero_exponent_are_torch_s():
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.5, 3.0], np.float32)
    e = np.array([0.0, 2.0, -1.0, 0.0, 2.0, 0.5], np.float32)
    a, b = pyrt.tensor(x, requires_grad=True), pyrt.tensor(e, requires_grad=True)
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(e, requires_grad=True)
    y, ty = a.pow(b), ta.pow(tb)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), equal_nan=True)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), equal_nan=True)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), equal_nan=True)


@needs_torch
def test_integer_powers_are_exact_int64_and_refuse_negative_exponents():
    x = np.array([[2, -3, 5], [7, 0, 1]], np.int64)
    e = np.array([10, 3, 0], np.int64)
    got = pyrt.tensor(x) ** pyrt.tensor(e)
    assert got.dtype == pyrt.int64
    np.testing.assert_array_equal(got.numpy(), (torch.tensor(x) ** torch.tensor(e)).numpy())
    with pytest.raises(RuntimeError, match="negative integer powers"):
        pyrt.tensor(x) ** pyrt.tensor(np.array([1, -1, 2]))
    # an integer base with a float exponent is float32, as torch's
    mixed = pyrt.tensor(x).pow(pyrt.tensor(np.array([0.5, 2.0, 1.0], np.float32)))
    assert mixed.dtype == pyrt.float32


def test_top_level_pow_takes_a_number_base_and_pow_takes_a_tensor_in_place():
    e = pyrt.tensor([0.0, 1.0, 2.5])
    np.testing.assert_allclose(pyrt.pow(2.0, e).numpy(), 2.0 ** np.array([0, 1, 2.5]),
                               rtol=1e-6)
    np.testing.assert_allclose(pyrt.pow(pyrt.tensor([3.0]), e).numpy(), 3.0 ** e.numpy(),
                               rtol=1e-6)
    x = pyrt.tensor([1.5, 2.0, 4.0])
    x.pow_(pyrt.tensor([2.0, 0.5, -1.0]))
    np.testing.assert_allclose(x.numpy(), [2.25, math.sqrt(2.0), 0.25], rtol=1e-6)
    with pytest.raises(TypeError, match="input"):
        pyrt.pow("2", e)
    with pytest.raises(RuntimeError, match="must match the size"):
        pyrt.tensor([1.0, 2.0]) ** pyrt.tensor([1.0, 2.0, 3.0])


def test_erf_and_erfc_of_a_0d_tensor():
    for value in (-1.5, 0.0, 0.3):
        x = pyrt.tensor(value, requires_grad=True)
        y = x.erf()
        assert y.shape == ()
        assert y.item() == pytest.approx(math.erf(value), rel=1e-6, abs=1e-7)
        assert x.erfc().item() == pytest.approx(math.erfc(value), rel=1e-6, abs=1e-7)
        y.backward()
        assert x.grad.item() == pytest.approx(2 / math.sqrt(math.pi) * math.exp(-value ** 2),
                                              rel=1e-6)
