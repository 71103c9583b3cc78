"""diagonal, diag_embed, unfold, tensor_split (hsplit, vsplit, dsplit), split_with_sizes and
PyTorch's other names of pyrt's ops (absolute, multiply, greater, ...), inner, ger, logit,
erfc, fmax, fmin, isposinf, isneginf and retains_grad, each run on pyrt and on torch and
compared (values and the gradients of sum(out * w)) over many shapes (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyrt
from tests.test_tensor_ops_more import EXAMPLES, against_torch, assert_same, normal

torch = pytest.importorskip("torch")


def lib_of(t):
    return pyrt if isinstance(t, pyrt.Tensor) else torch


def shape_of(rank, seed):
    return tuple(int(n) for n in np.random.default_rng(seed).integers(1, 5, rank))


@EXAMPLES
@given(rank=st.integers(2, 4), seed=st.integers(0, 100), offset=st.integers(-3, 3))
def test_diagonal_and_diag_embed(rank, seed, offset):
    x = normal(shape_of(rank, seed), seed)
    for d1, d2 in ((0, 1), (-1, 0), (rank - 2, rank - 1)):
        against_torch(lambda t, a=d1, b=d2: t.diagonal(offset, a, b), x)
        against_torch(lambda t, a=d1, b=d2: lib_of(t).diagonal(t, offset, a, b), x)
    against_torch(lambda t: lib_of(t).diag_embed(t, offset), x)
    against_torch(lambda t: t.diag_embed(offset, 0, -1), x)


@EXAMPLES
@given(rank=st.integers(1, 3), seed=st.integers(0, 100), size=st.integers(0, 4),
       step=st.integers(1, 3))
def test_unfold(rank, seed, size, step):
    x = normal(shape_of(rank, seed), seed)
    for dim in range(-rank, rank):
        if size <= x.shape[dim]:
            against_torch(lambda t, d=dim: t.unfold(d, size, step), x)


@EXAMPLES
@given(rank=st.integers(1, 3), seed=st.integers(0, 100), sections=st.integers(1, 5),
       cuts=st.lists(st.integers(-6, 6), max_size=3))
def test_tensor_split(rank, seed, sections, cuts):
    x = normal(shape_of(rank, seed), seed)
    for dim in range(rank):
        against_torch(lambda t, d=dim: lib_of(t).tensor_split(t, sections, d), x)
        against_torch(lambda t, d=dim: t.tensor_split(cuts, d), x)
    sizes = [1] * x.shape[0]
    against_torch(lambda t: t.split_with_sizes(sizes), x)
    against_torch(lambda t: lib_of(t).hsplit(t, 1), x)
    if rank >= 2:
        against_torch(lambda t: t.vsplit([1]), x)
    if rank >= 3:
        against_torch(lambda t: lib_of(t).dsplit(t, [0, 1]), x)


@EXAMPLES
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 100))
def test_other_names(shape, seed):
    a, b = normal(shape, seed), normal(shape, seed + 1)
    for name in ("absolute", "negative", "positive", "fix", "ravel", "msort", "erfc"):
        against_torch(lambda t, n=name: getattr(t, n)(), a)
    for name in ("multiply", "divide", "subtract", "fmax", "fmin"):
        against_torch(lambda t, u, n=name: getattr(t, n)(u), a, b + 3.0)
        against_torch(lambda t, u, n=name: getattr(lib_of(t), n)(t, u), a, b + 3.0)
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
        assert_same(getattr(pyrt.tensor(a), name)(pyrt.tensor(b)),
                    getattr(torch.tensor(a), name)(torch.tensor(b)))
    against_torch(lambda t, u: t.reshape_as(u), a, b.reshape(-1))
    p = 1 / (1 + np.exp(-a))
    against_torch(lambda t: t.logit(), p, rtol=1e-4)
    against_torch(lambda t: lib_of(t).logit(t, 0.2), p, rtol=1e-4)
    against_torch(lambda t, u: t.inner(u), a, b)
    against_torch(lambda t, u: lib_of(t).inner(t, u[..., :1]), a[..., :1], b)
    v, w = a.reshape(-1), b.reshape(-1)[:3]
    against_torch(lambda t, u: t.ger(u), v, w)


def test_special_values_and_retains_grad():
    x = np.array([1.0, np.nan, -np.inf, np.inf, np.nan], np.float32)
    y = np.array([np.nan, 2.0, 0.0, 1.0, np.nan], np.float32)
    for name in ("fmax", "fmin"):
        assert_same(getattr(pyrt.tensor(x), name)(pyrt.tensor(y)),
                    getattr(torch.tensor(x), name)(torch.tensor(y)))
    for name in ("isposinf", "isneginf"):
        assert_same(getattr(pyrt.tensor(x), name)(), getattr(torch.tensor(x), name)())
    w = pyrt.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2
    assert not h.retains_grad
    h.retain_grad()
    assert h.retains_grad and not w.retains_grad
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        pyrt.ones(4).unfold(0, 2, 0)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 4"):
        pyrt.ones(4).unfold(0, 5, 1)
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        pyrt.ones(2, 2).diagonal(0, 1, 1)
    with pytest.raises(RuntimeError, match="not divisible by the split_size"):
        pyrt.hsplit(pyrt.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        pyrt.tensor_split(pyrt.ones(3), 0)
