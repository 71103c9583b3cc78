"""hstack, vstack, dstack, column_stack, concat, atleast_nd, broadcast_to, select, as_tensor,
isin, argwhere and the Tensor methods maximum, minimum, mv, addcdiv, fliplr and flipud, each
run on pyrt and on torch and compared (values, dtypes, and the gradients of sum(out * w))
over many shapes (hypothesis), then their errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyrt
from tests.test_tensor_ops_more import EXAMPLES, against_torch, assert_same, normal

torch = pytest.importorskip("torch")

RANKS = st.integers(0, 3)


def shape_of(rank, seed, first=None):
    r = np.random.default_rng(seed)
    shape = [int(n) for n in r.integers(1, 4, rank)]
    if first is not None and rank:
        shape[0] = first
    return tuple(shape)


def lib_of(t):
    return pyrt if isinstance(t, pyrt.Tensor) else torch


@EXAMPLES
@given(rank=RANKS, count=st.integers(1, 3), seed=st.integers(0, 100))
def test_stacks(rank, count, seed):
    """The tensors share every dim but the one they are joined along."""
    base = list(shape_of(rank, seed))
    for name, along in (("hstack", 1 if rank >= 2 else 0), ("vstack", 0), ("dstack", 2),
                        ("column_stack", 1)):
        arrays = []
        for i in range(count):
            shape = list(base)
            if name == "column_stack" and rank >= 2:
                shape[1] = i + 1
            elif name != "column_stack" and rank > along and (rank > 1 or name == "hstack"):
                shape[along] = i + 1  # (1-d tensors vstack and dstack as rows of one length)
            arrays.append(normal(tuple(shape), seed + i))
        against_torch(lambda *ts, n=name: getattr(lib_of(ts[0]), n)(list(ts)), *arrays)


@EXAMPLES
@given(rank=RANKS, seed=st.integers(0, 100))
def test_atleast_and_broadcast_to(rank, seed):
    x = normal(shape_of(rank, seed), seed)
    for n in ("atleast_1d", "atleast_2d", "atleast_3d"):
        against_torch(lambda t, n=n: getattr(lib_of(t), n)(t), x)
        against_torch(lambda t, u, n=n: getattr(lib_of(t), n)(t, u), x, x + 1)
    target = (2,) + x.shape
    against_torch(lambda t: lib_of(t).broadcast_to(t, target), x)
    against_torch(lambda t: t.broadcast_to(target), x)


@EXAMPLES
@given(rank=st.integers(1, 3), seed=st.integers(0, 100))
def test_select_flips_and_concat(rank, seed):
    x = normal(shape_of(rank, seed), seed)
    for dim in range(-rank, rank):
        for index in (0, -1):
            against_torch(lambda t, d=dim, i=index: t.select(d, i), x)
            against_torch(lambda t, d=dim, i=index: lib_of(t).select(t, d, i), x)
    against_torch(lambda t: t.flipud(), x)
    if rank >= 2:
        against_torch(lambda t: t.fliplr(), x)
        against_torch(lambda t: lib_of(t).fliplr(t), x)
    against_torch(lambda t, u: lib_of(t).concat([t, u], 0), x, x * 2)
    against_torch(lambda t, u: lib_of(t).concatenate([t, u], -1), x, x * 2)


@EXAMPLES
@given(n=st.integers(1, 4), m=st.integers(1, 4), seed=st.integers(0, 100))
def test_pointwise_and_matrix_methods(n, m, seed):
    a, b = normal((n, m), seed), normal((n, m), seed + 1)
    c = np.abs(normal((m,), seed + 2)) + 0.5
    against_torch(lambda x, y: x.maximum(y), a, b)
    against_torch(lambda x, y: x.minimum(y), a, b)
    against_torch(lambda x, v: x.mv(v), a, c)
    against_torch(lambda x, v: lib_of(x).mv(x, v), a, c)
    against_torch(lambda x, y, z: x.addcdiv(y, z, value=0.5), a, b, c)
    against_torch(lambda x, y, z: x.addcdiv(y, z), a, b, c)


def test_as_tensor_isin_argwhere():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    shared = pyrt.as_tensor(array)
    array[0, 0] = 9.0  # the same memory, as torch.as_tensor's
    assert shared.numpy()[0, 0] == 9.0
    t = pyrt.tensor([1.0, 2.0])
    assert pyrt.as_tensor(t) is t
    assert pyrt.as_tensor([1, 2]).dtype == pyrt.int64
    assert pyrt.as_tensor(np.arange(3.0)).dtype == pyrt.float32  # pyrt's float is float32
    assert pyrt.as_tensor(t, dtype=pyrt.int64).tolist() == [1, 2]
    x = np.array([[0, 3, 1], [4, 0, 3]])
    for invert in (False, True):
        assert_same(pyrt.isin(pyrt.tensor(x), pyrt.tensor([3, 4]), invert=invert),
                    torch.isin(torch.tensor(x), torch.tensor([3, 4]), invert=invert))
    assert_same(pyrt.isin(pyrt.tensor(x), 3), torch.isin(torch.tensor(x), 3))
    for values in (x, np.zeros((2, 2)), np.array(5.0), np.array([0.0, -1.5, 0.0])):
        assert_same(pyrt.argwhere(pyrt.tensor(values)), torch.argwhere(torch.tensor(values)))
        assert_same(pyrt.tensor(values).argwhere(), torch.tensor(values).argwhere())


def test_errors():
    with pytest.raises(TypeError, match="must be a tuple or list of Tensors"):
        pyrt.hstack(pyrt.ones(2))
    with pytest.raises(RuntimeError, match="non-empty"):
        pyrt.vstack([])
    with pytest.raises(TypeError, match="expected a Tensor at position 1"):
        pyrt.dstack([pyrt.ones(2), [1.0, 2.0]])
    with pytest.raises(IndexError, match="out of range"):
        pyrt.ones(2, 3).select(1, 3)
    with pytest.raises(TypeError, match="'index' must be an int"):
        pyrt.ones(2, 3).select(0, 1.0)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d"):
        pyrt.ones(3).fliplr()
    with pytest.raises(RuntimeError, match="expected a 2-D matrix and a 1-D vector"):
        pyrt.ones(3).mv(pyrt.ones(3))
    with pytest.raises(TypeError, match="argument 'tensor2' must be a Tensor"):
        pyrt.ones(3).addcdiv(pyrt.ones(3), 2.0)
    with pytest.raises(RuntimeError):
        pyrt.broadcast_to(pyrt.ones(3), (2, 4))
