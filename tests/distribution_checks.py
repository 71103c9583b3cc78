"""Helpers shared by the pyrt.distributions tests: float32 tensors from arrays, comparison
with a float64 reference, central differences, seeded reparameterized draws, the hypothesis
settings and batch-shape strategy, and the marker for tests that need torch as a
reference."""

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as hs

import pyrt
import pyrt.distributions as D

try:
    import torch
except ImportError:
    torch = None

__all__ = ["F32", "FEW", "assert_close", "central_difference", "needs_torch",
           "reparameterized_draws", "shapes", "tensor32"]

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch as a reference")
F32 = np.float32
FEW = settings(max_examples=20, deadline=None, derandomize=True)

# batch shapes of up to three dims of sizes 1 to 4
shapes = hs.lists(hs.integers(1, 4), min_size=0, max_size=3).map(tuple)


def tensor32(a, requires_grad=False):
    """`a` as a float32 pyrt tensor."""
    return pyrt.tensor(np.asarray(a, F32), requires_grad=requires_grad)


def assert_close(actual, expected, rtol=2e-4, atol=2e-4):
    """`actual` (a tensor or an array) equals the float64 reference `expected` to rtol/atol."""
    actual = actual.detach().numpy() if hasattr(actual, "numpy") else np.asarray(actual)
    np.testing.assert_allclose(actual, np.asarray(expected, np.float64), rtol=rtol, atol=atol)


def central_difference(f, params, i, h):
    """The derivative of f(*params) in params[i] (a number, or an array whose entries each
    move f's matching entries alone) by central differences of step h."""
    up, down = list(params), list(params)
    up[i] = up[i] + h
    down[i] = down[i] - h
    return (f(*up) - f(*down)) / (2 * h)


def reparameterized_draws(family, params, seed, n=100_000):
    """n seeded rsample draws of pyrt.distributions.<family>(*params), the parameters given
    as scalar tensors that require grad; returns (those tensors, the draws)."""
    tensors = [pyrt.tensor(p, requires_grad=True) for p in params]
    d = getattr(D, family)(*tensors)
    assert d.has_rsample
    pyrt.manual_seed(seed)
    x = d.rsample((n,))
    assert x.shape == (n,)
    return tensors, x
