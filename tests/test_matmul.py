"""torch.matmul's semantics for `@`, Tensor.matmul, pyrt.matmul and pyrt.linalg.matmul, and
bmm, on pyrt's batched GEMM: values against a float64 NumPy product, gradients against the
closed forms (g @ b^T and a^T @ g summed over broadcast dims) and PyTorch where installed,
results bitwise the same at 1, 2 and 3 threads, and PyTorch's errors."""

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


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def reference(a, b, w):
    """(a @ b, and the gradients of sum((a @ b) * w) in a and b), in float64."""
    a64, b64, w64 = (x.astype(np.float64) for x in (a, b, w))
    am = a64[None, :] if a.ndim == 1 else a64
    bm = b64[:, None] if b.ndim == 1 else b64
    out = np.matmul(am, bm)
    wm = w64.reshape(out.shape)
    da = np.matmul(wm, np.swapaxes(bm, -1, -2))
    db = np.matmul(np.swapaxes(am, -1, -2), wm)

    def back(g, shape):
        extra = g.ndim - len(shape)
        g = g.sum(axis=tuple(range(extra)))
        axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        return g.sum(axis=axes, keepdims=True).reshape(shape)

    return np.matmul(a64, b64), back(da, am.shape).reshape(a.shape), \
        back(db, bm.shape).reshape(b.shape)


def run(a, b, w, threads=1):
    with pyrt.num_threads(threads):
        x, y = pyrt.tensor(a, requires_grad=True), pyrt.tensor(b, requires_grad=True)
        out = x @ y
        (out * pyrt.tensor(w)).sum().backward()
        return out.detach().numpy(), x.grad.numpy(), y.grad.numpy()


def close(got, want, k):
    """float32 sums of k products of values of size ~1: a few units of sqrt(k) * 2^-23."""
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * (k + 1))


# (shape of a, shape of b): every path of pyrt.matmul
PATHS = [
    ((3, 4), (4, 5)),                # 2-D: the GEMM
    ((4,), (4, 5)),                  # vector @ matrix
    ((3, 4), (4,)),                  # matrix @ vector
    ((4,), (4,)),                    # dot: 0-d
    ((2, 3, 4), (4, 5)),             # batch folded into the rows
    ((2, 3, 7, 4), (4,)),            # batch folded, vector
    ((4,), (2, 4, 5)),               # vector @ batch
    ((6, 3, 4), (6, 4, 5)),          # batches
    ((1, 3, 4), (6, 4, 5)),          # one A for every product
    ((3, 4), (6, 4, 5)),             # one A for every product, no batch dim
    ((6, 3, 4), (1, 4, 5)),          # one B: its gradient one product over the batch
    ((2, 1, 3, 4), (1, 5, 4, 2)),    # both broadcast: copies
    ((2, 5, 3, 4), (5, 4, 2)),       # B broadcast over the leading dim
    ((0, 3, 4), (0, 4, 5)),          # empty batch
    ((2, 3, 0), (2, 0, 5)),          # k = 0
]


@pytest.mark.parametrize("sa,sb", PATHS)
def test_matmul_paths_against_float64(sa, sb):
    a, b = normal(sa, 1), normal(sb, 2)
    want, da, db = reference(a, b, normal(np.matmul(a, b).shape, 3))
    got = run(a, b, normal(want.shape, 3))
    k = sa[-1]
    assert got[0].shape == want.shape and got[0].dtype == np.float32
    close(got[0], want, k)
    close(got[1], da, max(want.size, 1))
    close(got[2], db, max(want.size, 1))


@pytest.mark.parametrize("sa,sb", PATHS)
def test_matmul_is_the_same_at_any_thread_count(sa, sb):
    a, b = normal(sa, 4), normal(sb, 5)
    w = normal(np.matmul(a, b).shape, 6)
    first = run(a, b, w, 1)
    for threads in (2, 3):
        for x, y in zip(first, run(a, b, w, threads)):
            assert x.tobytes() == y.tobytes()


BATCH = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(batch_a=BATCH, batch_b=BATCH, m=st.integers(1, 70), k=st.integers(1, 70),
       n=st.integers(1, 70), ones=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_matmul_broadcasts_as_numpy(batch_a, batch_b, m, k, n, ones, seed):
    """Random batch shapes, some dims set to 1 so that they broadcast."""
    length = max(len(batch_a), len(batch_b))
    pa = (1,) * (length - len(batch_a)) + batch_a
    pb = (1,) * (length - len(batch_b)) + batch_b
    full = tuple(max(x, y) for x, y in zip(pa, pb))
    # make the two batch shapes compatible: where they differ, one of them is 1
    ba = tuple(f if (ones >> i) & 1 else 1 for i, f in enumerate(full))[length - len(batch_a):]
    bb = tuple(full[length - len(batch_b):])
    a, b = normal(ba + (m, k), seed), normal(bb + (k, n), seed + 1)
    want, da, db = reference(a, b, normal(np.matmul(a, b).shape, seed + 2))
    got = run(a, b, normal(want.shape, seed + 2), 2)
    close(got[0], want, k)
    close(got[1], da, want.size)
    close(got[2], db, want.size)


def test_every_spelling_is_one_op():
    a, b = normal((2, 3, 4), 7), normal((2, 4, 5), 8)
    x, y = pyrt.tensor(a), pyrt.tensor(b)
    want = (x @ y).numpy()
    for got in (x.matmul(y), pyrt.matmul(x, y), pyrt.linalg.matmul(x, y), x.bmm(y),
                pyrt.bmm(x, y), a @ y, x @ b):
        assert got.numpy().tobytes() == want.tobytes()


def test_integer_products_are_exact():
    a = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    b = np.arange(20, dtype=np.int64).reshape(4, 5) - 7
    out = pyrt.tensor(a) @ pyrt.tensor(b)
    assert out.dtype == pyrt.int64 and np.array_equal(out.numpy(), a @ b)


@pytest.mark.parametrize("sa,sb,message", [
    ((3,), (), "at least 1D"),
    ((2, 3, 4), (5, 6), "cannot be multiplied"),
    ((2, 3, 4), (3, 4, 5), "do not broadcast"),
    ((3, 4), (5, 6), "cannot be multiplied"),
])
def test_matmul_errors(sa, sb, message):
    with pytest.raises(RuntimeError, match=message):
        pyrt.tensor(normal(sa, 0)) @ pyrt.tensor(normal(sb, 1))


def test_matmul_refuses_mixed_dtypes():
    with pytest.raises(RuntimeError, match="same dtype"):
        pyrt.ones(2, 3, 4) @ pyrt.ones(2, 4, 5, dtype=pyrt.int64)


@needs_torch
@pytest.mark.parametrize("sa,sb", PATHS)
def test_matmul_against_torch(sa, sb):
    a, b = normal(sa, 11), normal(sb, 12)
    w = normal(np.matmul(a, b).shape, 13)
    got = run(a, b, w)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    out = ta @ tb
    (out * torch.tensor(w)).sum().backward()
    for mine, theirs in zip(got, (out.detach().numpy(), ta.grad.numpy(), tb.grad.numpy())):
        assert mine.shape == theirs.shape
        close(mine, theirs, max(sa[-1], out.numel()))
