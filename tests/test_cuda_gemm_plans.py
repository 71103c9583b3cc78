"""pyrt/cuda/ops/gemm.py's cuBLAS calls checked without a GPU: NumPy arrays stand in for CuPy
arrays and a column-major strided-batched SGEMM written in NumPy, reading and writing
memory at the addresses it is given as cuBLAS would, stands in for cuBLAS. So the mapping
of row-major operands, transposed views, broadcast batches, alpha and beta onto cuBLAS's
arguments (and the plans that cache it) is checked against np.matmul on every machine; the
GPU tests (test_cuda.py) check the same products on the device."""

import ctypes
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

GEMM_PY = Path(__file__).resolve().parents[1] / "pyrt" / "cuda" / "ops" / "gemm.py"


class FakeArray(np.ndarray):
    """A NumPy array with CuPy's `.data.ptr`."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


def fake(x):
    return np.asarray(x).view(FakeArray)


def floats_at(address, count):
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(address))


def sgemm_strided_batched(handle, op_a, op_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                          stride_b, beta, c, ldc, stride_c, count):
    """cublasSgemmStridedBatched: C_i = alpha op(A_i) op(B_i) + beta C_i, column-major, at
    raw addresses (alpha and beta by host pointer)."""
    alpha, beta = floats_at(alpha, 1)[0], floats_at(beta, 1)[0]
    assert lda >= max(1, m if op_a == 0 else k) and ldb >= max(1, k if op_b == 0 else n)
    assert ldc >= max(1, m) and count >= 1

    def matrix(address, ld, rows, cols, op):
        # the stored matrix is rows x cols (op N) or cols x rows (op T), column-major
        stored_rows, stored_cols = (rows, cols) if op == 0 else (cols, rows)
        flat = floats_at(address, ld * (stored_cols - 1) + stored_rows)
        stored = np.lib.stride_tricks.as_strided(flat, (stored_rows, stored_cols), (4, 4 * ld))
        return stored if op == 0 else stored.T

    for i in range(count):
        op_a_i = matrix(a + 4 * i * stride_a, lda, m, k, op_a).astype(np.float64)
        op_b_i = matrix(b + 4 * i * stride_b, ldb, k, n, op_b).astype(np.float64)
        c_i = matrix(c + 4 * i * stride_c, ldc, m, n, 0)
        product = alpha * (op_a_i @ op_b_i)
        c_i[...] = product if beta == 0 else product + beta * c_i


@pytest.fixture
def gemm(monkeypatch):
    """pyrt/cuda/ops/gemm.py loaded on its own, over stand-ins for CuPy and cuBLAS."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray = FakeArray
    cupy.empty = lambda shape, dtype: np.empty(shape, dtype).view(FakeArray)
    cupy.ascontiguousarray = lambda x: np.ascontiguousarray(x).view(FakeArray)
    cupy.matmul = lambda a, b, out=None: fake(np.matmul(np.asarray(a), np.asarray(b)))
    cupy.multiply = np.multiply
    cupy.cuda = types.SimpleNamespace(
        device=types.SimpleNamespace(get_cublas_handle=lambda: 0),
        get_current_stream=lambda: types.SimpleNamespace(is_capturing=lambda: False))
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.cublas = types.SimpleNamespace(CUBLAS_OP_N=0, CUBLAS_OP_T=1,
                                        sgemmStridedBatched=sgemm_strided_batched)
    module = types.ModuleType("pyrt.cuda._module")
    module.BLOCK, module.kernel = 256, None
    for name, value in (("cupy", cupy), ("cupy_backends", types.ModuleType("cupy_backends")),
                        ("cupy_backends.cuda", types.ModuleType("cupy_backends.cuda")),
                        ("cupy_backends.cuda.libs", libs), ("pyrt.cuda._module", module)):
        monkeypatch.setitem(sys.modules, name, value)
    spec = importlib.util.spec_from_file_location("gemm_under_test", GEMM_PY)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (6, 5, 7), (3, 9, 1), (1, 4, 3), (5, 7, 0)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_two_dimensional_products(gemm, m, n, k, ta, tb):
    a, b, c = f32(m, k), f32(k, n, seed=1), f32(m, n, seed=2)
    da = fake(np.ascontiguousarray(a.T)).T if ta else fake(a)
    db = fake(np.ascontiguousarray(b.T)).T if tb else fake(b)
    for _ in range(2):  # the second time through the cached plan
        close(gemm.matmul(da, db), a @ b)
        out = fake(c.copy())
        assert gemm.matmul(da, db, out=out, alpha=0.5, beta=-2.0) is out
        close(out, 0.5 * (a @ b) - 2.0 * c)
        wide = fake(np.zeros((m, 2 * n), np.float32))  # rows of the output strided
        gemm.matmul(da, db, out=wide[:, ::2])
        close(wide[:, ::2], a @ b)
        assert not wide[:, 1::2].any()


def test_an_operand_with_neither_layout_is_copied_first(gemm):
    big, b = f32(6, 15), f32(8, 5, seed=1)
    a = big[:, ::2]  # neither rows nor columns contiguous
    for _ in range(2):
        close(gemm.matmul(fake(big)[:, ::2], fake(b)), a @ b)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 1, 5, 7), (2, 7, 4)),
    ((2, 4, 6), (3, 2, 6, 9)),     # grouped filters over a batch: a call per group
    ((1, 4, 6), (5, 1, 6, 9)),     # one group: one call over the batch, a's stride 0
    ((4, 6, 8), (8, 3)),
    ((6, 8), (2, 3, 8, 5)),
    ((3, 2, 4, 6), (2, 6, 5)),
])
def test_batched_products_broadcast_like_numpy(gemm, a_shape, b_shape):
    a, b = f32(*a_shape), f32(*b_shape, seed=1)
    at = fake(np.ascontiguousarray(np.swapaxes(a, -1, -2))).swapaxes(-1, -2)
    bt = fake(np.ascontiguousarray(np.swapaxes(b, -1, -2))).swapaxes(-1, -2)
    for _ in range(2):
        close(gemm.matmul(fake(a), fake(b)), np.matmul(a, b))
        close(gemm.matmul(at, bt, alpha=-1.5), -1.5 * np.matmul(a, b))


def test_the_convolution_products(gemm):
    # conv2d's forward, weight-gradient and input-gradient products (pyrt/cuda/ops/conv.py)
    w, cols, gy = f32(1, 4, 6), f32(3, 1, 6, 9, seed=1), f32(3, 1, 4, 9, seed=2)
    out = fake(np.zeros((3, 1, 4, 9), np.float32))
    assert gemm.matmul(fake(w), fake(cols), out=out) is out
    close(out, np.matmul(w, cols))
    close(gemm.matmul(fake(gy), fake(cols).transpose(0, 1, 3, 2)),
          np.matmul(gy, cols.transpose(0, 1, 3, 2)))
    close(gemm.matmul(fake(w).transpose(0, 2, 1), fake(gy)), np.matmul(w.transpose(0, 2, 1), gy))


def test_what_cublas_does_not_take_goes_to_cupy_matmul(gemm):
    a, v = f32(4, 6), f32(6, seed=1)
    close(gemm.matmul(fake(a), fake(v)), a @ v)  # a vector
    close(gemm.matmul(fake(a.astype(np.float64)), fake(a.T.astype(np.float64))), a @ a.T)
    with pytest.raises(ValueError):
        gemm.matmul(fake(a), fake(a))  # k does not match: cupy.matmul's error
    assert gemm.matmul(fake(f32(0, 3)), fake(f32(3, 4))).shape == (0, 4)
