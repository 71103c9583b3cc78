"""Transposed copies (pyrt.ops.layout, csrc/kernels/transpose.c) against NumPy: every element
where it belongs over many shapes and thread counts, the fallbacks for other dtypes, strided
views and small arrays, argument errors; and the Tensor transposes that use them, forward and
backward."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.layout import copy_blocks, swap_last_axes

THREADS = [1, 2, 3]
# around the 8 x 8 register blocks and the 32 x 32 tiles, and several rows of tiles
DIMS = [1, 2, 7, 8, 9, 16, 31, 32, 33, 64, 100, 257]


@settings(max_examples=120, deadline=None)
@given(lead=st.sampled_from([(), (1,), (3,), (2, 3)]), m=st.sampled_from(DIMS),
       n=st.sampled_from(DIMS), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**31))
def test_swap_last_axes_matches_numpy(lead, m, n, threads, seed):
    a = np.random.default_rng(seed).standard_normal((*lead, m, n)).astype(np.float32)
    with pyrt.num_threads(threads):
        out = swap_last_axes(a)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.swapaxes(a, -1, -2))


def test_swap_last_axes_keeps_special_values():
    a = np.arange(40 * 50, dtype=np.float32).reshape(40, 50)
    a[3, 4], a[5, 6], a[7, 8] = np.nan, np.inf, -0.0
    out = swap_last_axes(a)
    assert np.isnan(out[4, 3]) and out[6, 5] == np.inf
    assert out[8, 7] == 0 and np.signbit(out[8, 7])


@pytest.mark.parametrize("make", [
    lambda a: a.astype(np.int64),                    # another dtype
    lambda a: a[:, ::2],                             # a strided view
    lambda a: np.asfortranarray(a),                  # not C-contiguous
    lambda a: a[:3, :4],                             # below the kernel's size
], ids=["int64", "strided", "fortran", "small"])
def test_swap_last_axes_falls_back_to_numpy(make):
    a = make(np.random.default_rng(0).standard_normal((40, 60)).astype(np.float32))
    out = swap_last_axes(a)
    assert out.dtype == a.dtype and out.flags.c_contiguous
    np.testing.assert_array_equal(out, a.T)


def test_the_kernel_refuses_bad_arguments():
    a = np.zeros((4, 8), np.float32)
    out = np.zeros((8, 4), np.float32)
    pa, po = ffi.from_buffer("float[]", a), ffi.from_buffer("float[]", out)
    assert lib.pyrt_transpose(pa, po, 1, -1, 8) == lib.PYRT_EINVAL
    assert lib.pyrt_transpose(ffi.NULL, po, 1, 4, 8) == lib.PYRT_EINVAL
    assert lib.pyrt_transpose(pa, pa, 1, 4, 8) == lib.PYRT_EOVERLAP
    assert lib.pyrt_transpose(pa, po, 0, 4, 8) == lib.PYRT_OK


@pytest.mark.parametrize("shape", [(300, 70), (3, 40, 90)])
def test_tensor_transposes_forward_and_backward(shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape[:-2] + shape[:-3:-1]).astype(np.float32)
    ways = [lambda t: t.transpose(-1, -2), lambda t: t.mT,
            lambda t: t.permute(*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)]
    if len(shape) == 2:
        ways += [lambda t: t.T, lambda t: t.t()]
    for way in ways:
        x = pyrt.tensor(a, requires_grad=True)
        y = way(x)
        np.testing.assert_array_equal(y.detach().numpy(), np.swapaxes(a, -1, -2))
        (y * pyrt.tensor(g)).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.swapaxes(g, -1, -2))


@pytest.mark.parametrize("name, shape, message", [
    ("mT", (3,), "tensor.mT is only supported on matrices or batches of matrices. Got 1-D"),
    ("mH", (), "tensor.mH is only supported on matrices or batches of matrices. Got 0-D"),
    ("H", (2, 3, 4), "tensor.H is only supported on matrices (2-D tensors). Got 3-D"),
])
def test_matrix_transposes_refuse_other_ranks(name, shape, message):
    with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        getattr(pyrt.zeros(shape), name)
    if name != "H":
        batch = pyrt.arange(24.0).reshape(2, 3, 4)
        np.testing.assert_array_equal(getattr(batch, name).numpy(),
                                      np.swapaxes(batch.numpy(), -1, -2))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4000), st.integers(0, 30), st.integers(1, 50), st.integers(0, 2**31 - 1),
       st.sampled_from([1, 2, 3]))
def test_copy_blocks(src_len, count, length, seed, threads):
    """Each block from its offset, or zeros for a negative one, at any thread count."""
    r = np.random.default_rng(seed)
    length = min(length, src_len)
    src = r.standard_normal(src_len).astype(np.float32)
    at = r.integers(0, src_len - length + 1, count)
    at[r.random(count) < 0.2] = -1
    with pyrt.num_threads(threads):
        out = copy_blocks(src, at, length, (count, length))
    want = np.zeros((count, length), np.float32)
    for b, a in enumerate(at):
        if a >= 0:
            want[b] = src[a:a + length]
    np.testing.assert_array_equal(out, want)


def test_copy_blocks_errors():
    src = np.zeros(10, np.float32)
    with pytest.raises(ValueError, match="runs past src.s 10"):
        copy_blocks(src, [8], 4, (1, 4))  # past the end: 8 + 4 > 10
    with pytest.raises(ValueError, match="do not fill"):
        copy_blocks(src, [0, 1], 4, (3, 4))
