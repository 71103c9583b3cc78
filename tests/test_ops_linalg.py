"""matmul (pyrt's SGEMM) against float64 NumPy, at several thread counts and kernels."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.linalg import matmul, sgemm_kernel

EPS = np.finfo(np.float32).eps
THREADS = [1, 2, 4]
PRIMES = [2, 3, 5, 7, 13, 17, 31, 61, 97, 127, 131, 257]
DIM = st.one_of(st.sampled_from([0, 1] + PRIMES), st.integers(0, 300))

# (m, n, k, trans_a, trans_b) of the MLP 784-128-10 at batch 64: forward, input gradient and
# weight gradient of each layer
MLP_SHAPES = [
    (64, 128, 784, False, True),
    (64, 784, 128, False, False),
    (128, 784, 64, True, False),
    (64, 10, 128, False, True),
    (64, 128, 10, False, False),
    (10, 128, 64, True, False),
]


def operands(rng, m, n, k, trans_a, trans_b, scale=1.0):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32) * scale
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32) * scale
    return a, b


def op(x, trans):
    return x.T if trans else x


def check_close(got, a, b, trans_a, trans_b, alpha=1.0, beta=0.0, c0=None):
    """got == alpha * op(a) @ op(b) + beta * c0 up to float32 rounding: each element may be off
    by a few ulps of the sum of |terms| per step of k."""
    a64, b64 = op(a, trans_a).astype(np.float64), op(b, trans_b).astype(np.float64)
    ref = alpha * (a64 @ b64)
    bound = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if c0 is not None and beta != 0:
        ref += beta * c0.astype(np.float64)
        bound += abs(beta) * np.abs(c0.astype(np.float64))
    k = a64.shape[1]
    tol = 2 * (k + 2) * EPS * bound + 1e-30
    assert got.shape == ref.shape
    assert got.dtype == np.float32
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol), f"max error {err.max()} (tolerance there {tol.flat[err.argmax()]})"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=DIM, n=DIM, k=DIM, trans_a=st.booleans(), trans_b=st.booleans(),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**32 - 1))
def test_matches_numpy(m, n, k, trans_a, trans_b, threads, seed):
    rng = np.random.default_rng(seed)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    with pyrt.num_threads(threads):
        got = matmul(a, b, trans_a=trans_a, trans_b=trans_b)
    check_close(got, a, b, trans_a, trans_b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=DIM, n=DIM, k=DIM, trans_a=st.booleans(), trans_b=st.booleans(),
       alpha=st.sampled_from([1.0, -1.0, 0.5, 3.0, 0.0]),
       beta=st.sampled_from([0.0, 1.0, -2.0, 0.25]),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**32 - 1))
def test_alpha_beta_out(m, n, k, trans_a, trans_b, alpha, beta, threads, seed):
    rng = np.random.default_rng(seed)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    out = c0.copy()
    with pyrt.num_threads(threads):
        got = matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta, out=out)
    assert got is out
    check_close(got, a, b, trans_a, trans_b, alpha, beta, c0)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(side=st.integers(1, 20), other=st.integers(1, 200), k=st.integers(1, 300),
       rows_small=st.booleans(), trans_a=st.booleans(), trans_b=st.booleans(),
       alpha=st.sampled_from([1.0, 0.5, -2.0]), beta=st.sampled_from([0.0, 1.0, -0.5]),
       width=st.sampled_from([0, 3, 1024]), seed=st.integers(0, 2**32 - 1))
def test_skinny_products(side, other, k, rows_small, trans_a, trans_b, alpha, beta, width, seed):
    # one side of 1 to 20: the small path's tiles and the dot products' blocks are cut at the
    # right and bottom edges; the operands are contiguous, or column slices of arrays 3 columns
    # wider or 1024 wide (rows that crowd L1 are packed, others read in place); bitwise the
    # same at 1 and 2 threads
    m, n = (side, other) if rows_small else (other, side)
    rng = np.random.default_rng(seed)

    def matrix(rows, cols):
        stride = {0: cols, 3: cols + 3, 1024: 1024}[width]
        return rng.standard_normal((rows, stride)).astype(np.float32)[:, :cols]

    a = matrix(*((k, m) if trans_a else (m, k)))
    b = matrix(*((n, k) if trans_b else (k, n)))
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    start = np.full((m, n), np.nan, np.float32) if beta == 0.0 else c0
    results = []
    for threads in (1, 2):
        with pyrt.num_threads(threads):
            results.append(matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha,
                                  beta=beta, out=start.copy()))
    check_close(results[0], a, b, trans_a, trans_b, alpha, beta, c0)
    assert np.array_equal(results[0], results[1])


@pytest.mark.parametrize("path,m,n,k,trans_a", [
    ("small", 64, 128, 10, False), ("small", 10, 128, 64, True), ("small", 13, 40, 200, False),
    ("small", 13, 41, 200, True), ("few rows", 8, 300, 700, True),
    ("few rows", 5, 60, 700, False), ("few rows", 6, 50, 900, True),
    ("sweep", 5, 1000, 600, False), ("sweep", 4, 2048, 512, False), ("sweep", 3, 97, 300, False),
    ("sweep", 5, 700, 389, True), ("sweep", 3, 2100, 800, False), ("few rows", 6, 700, 389, False),
])
def test_in_place_paths_sum_as_the_blocked_path(path, m, n, k, trans_a):
    # small products (up to 2^17 multiply-adds, k <= 256: on the calling thread), a few rows
    # in spans of columns spread over the threads (AVX2: up to 5 rows swept across spans of
    # more than 64 columns, a few rows of B at a time; the tiles of a few rows otherwise)
    # are computed from A and B in place; with 200 rows more the product is packed, and its
    # first m rows must come out bitwise the same (the same blocks of k, each summed in the
    # same order by the same kernel and added to C in order), at 1, 2 and 3 threads
    if path == "small":
        assert m * n * k <= 2**17 < (m + 200) * n * k and k <= 256
    else:
        assert m <= 8 and (m * n * k > 2**17 or k > 256)
        assert (path == "sweep") == (m <= 5 and n > 64)
    rng = np.random.default_rng(m + n + k)
    a, b = operands(rng, m, n, k, trans_a, False)
    more = rng.standard_normal((k, 200) if trans_a else (200, k)).astype(np.float32)
    big_a = np.hstack([a, more]) if trans_a else np.vstack([a, more])
    c0 = rng.standard_normal((m + 200, n)).astype(np.float32)
    for alpha, beta in [(1.0, 0.0), (0.5, 1.5)]:
        big = matmul(big_a, b, trans_a=trans_a, alpha=alpha, beta=beta, out=c0.copy())
        for threads in (1, 2, 3):
            with pyrt.num_threads(threads):
                got = matmul(a, b, trans_a=trans_a, alpha=alpha, beta=beta, out=c0[:m].copy())
            assert np.array_equal(got, big[:m]), (alpha, beta, threads)
        check_close(got, a, b, trans_a, False, alpha, beta, c0[:m])


# the widest side up to which each kernel's dot-product path takes A B^T (gemm_kernel.dot_side)
DOT_SIDE = {"avx512": 32, "avx2": 64}


@pytest.mark.parametrize("n", [33, 40, 47, 48, 57, 64, 96, 100, 128, 130, 145])
@pytest.mark.parametrize("k", [1, 7, 16, 17, 196, 300, 500])
def test_transposed_b_packs_the_same_values(n, k):
    # B transposed is packed by register transposes (16 x 16 with AVX-512, 8 x 8 with AVX2;
    # a panel's last columns in groups of 16 and 8 and zeros; k's last steps under a mask);
    # B given untransposed is copied by rows. The panels must hold the same values: with both
    # sides too wide for the dot-product path and too large for the small one, the two
    # products are bitwise equal, at 1 and 2 threads. (From three blocks of k on, a transposed
    # B packed tile by tile sums its blocks in two groups, which orders the sums otherwise.)
    if n <= DOT_SIDE.get(sgemm_kernel(), 0):
        pytest.skip("the dot-product path takes A B^T with this few columns, unpacked")
    m = 70
    rng = np.random.default_rng(n * 1000 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    bt = rng.standard_normal((n, k)).astype(np.float32)
    b = np.ascontiguousarray(bt.T)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    for threads in (1, 2):
        with pyrt.num_threads(threads):
            got = matmul(a, bt, trans_b=True, beta=0.5, out=c0.copy())
            want = matmul(a, b, beta=0.5, out=c0.copy())
        assert np.array_equal(got, want), threads
    check_close(got, a, bt, False, True, 1.0, 0.5, c0)


@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("n,k", [(1, 1), (7, 300), (64, 256), (65, 257), (65, 385),
                                 (130, 784), (1000, 33), (2100, 512), (9000, 43)])
@pytest.mark.parametrize("trans_a", [False, True])
def test_one_or_two_rows_sum_as_the_blocked_path(m, n, k, trans_a):
    # a vector (or two) times a matrix runs its own kernel, B read in place (one row across
    # spans of more than 64 columns sweeps B a few rows at a time, in pieces of up to 2048
    # columns: 9000 columns on one thread are spans of 2304); with 200 rows
    # more the product is blocked and packed, and its first m rows must come out bitwise the
    # same (the same blocks of k, each summed in order from zero); the same at any thread count
    rng = np.random.default_rng(m * n + k)
    a, b = operands(rng, m, n, k, trans_a, False)
    more = rng.standard_normal((k, 200) if trans_a else (200, k)).astype(np.float32)
    big_a = np.hstack([a, more]) if trans_a else np.vstack([a, more])
    c0 = rng.standard_normal((m + 200, n)).astype(np.float32)
    for alpha, beta in [(1.0, 0.0), (0.5, 1.5), (-2.0, 1.0)]:
        start = c0[:m].copy() if beta else np.full((m, n), np.nan, np.float32)
        rows = []
        for threads in (1, 2, 4):
            with pyrt.num_threads(threads):
                rows.append(matmul(a, b, trans_a=trans_a, alpha=alpha, beta=beta,
                                   out=start.copy()))
        check_close(rows[0], a, b, trans_a, False, alpha, beta, c0[:m])
        assert all(np.array_equal(r, rows[0]) for r in rows[1:])
        big = matmul(big_a, b, trans_a=trans_a, alpha=alpha, beta=beta, out=c0.copy())
        assert np.array_equal(rows[0], big[:m])


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (4, 4, 4), (16, 16, 16), (6, 16, 300),
                                   (301, 299, 257), (450, 470, 300), (97, 1100, 61)])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_fixed_shapes(m, n, k, trans_a, trans_b):
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    for threads in THREADS:
        with pyrt.num_threads(threads):
            check_close(matmul(a, b, trans_a=trans_a, trans_b=trans_b), a, b, trans_a, trans_b)


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", MLP_SHAPES)
def test_mlp_shapes(m, n, k, trans_a, trans_b):
    rng = np.random.default_rng(0)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    for alpha, beta in [(1.0, 0.0), (0.5, 1.0)]:
        c0 = rng.standard_normal((m, n)).astype(np.float32)
        got = matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
                     out=c0.copy())
        check_close(got, a, b, trans_a, trans_b, alpha, beta, c0)


@pytest.mark.parametrize("m,n,k", [(8, 9, 50176), (16, 72, 12544), (72, 12544, 16),
                                   (8, 50176, 9), (3, 5, 70001)])
def test_long_k_and_conv_shapes(m, n, k):
    # tiny C with a long k is summed in groups of k added in a fixed order
    rng = np.random.default_rng(1)
    for trans_a, trans_b in [(False, True), (True, False)]:
        a, b = operands(rng, m, n, k, trans_a, trans_b)
        check_close(matmul(a, b, trans_a=trans_a, trans_b=trans_b), a, b, trans_a, trans_b)


@pytest.mark.parametrize("m,n,k", [(4100, 20, 20), (20, 4100, 20), (5, 7, 200003)])
def test_several_passes(m, n, k):
    # more rows or columns than one pass holds, or more of k than the workspace does
    rng = np.random.default_rng(2)
    a, b = operands(rng, m, n, k, False, False)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    got = matmul(a, b, beta=0.5, out=c0.copy())
    check_close(got, a, b, False, False, 1.0, 0.5, c0)


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", MLP_SHAPES + [
    (1024, 1024, 64, False, False),
    (1024, 1024, 64, True, True),
    (300, 200, 1000, False, True),
    (100, 70, 1000, False, True),  # B packed in each tile, k in two groups, ragged edges
    (8, 9, 50176, False, True),
    (16, 72, 12544, True, False),
    (33, 47, 29, True, True),
])
def test_bitwise_identical_across_thread_counts(m, n, k, trans_a, trans_b):
    rng = np.random.default_rng(3)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    results = []
    for threads in [1, 2, 3, 4]:
        with pyrt.num_threads(threads):
            for _ in range(2):
                results.append(matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=0.75,
                                      beta=-1.5, out=c0.copy()))
    for r in results[1:]:
        assert np.array_equal(r, results[0])


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [
    (9, 50176, 8, True, False),   # B packed a micro-panel at a time inside each tile
    (16, 12544, 72, False, False),
    (140, 300, 40, True, True),
    (8, 5000, 800, False, True),  # ... with several blocks of k (3 or 4 by the kernel)
    (150, 9000, 8, False, True),  # short k: one pass wider than 4096 columns of packed B
    (200, 5000, 20, True, False),
])
def test_short_k_and_few_rows_match_and_are_bitwise_stable(m, n, k, trans_a, trans_b):
    rng = np.random.default_rng(4)
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    results = []
    for threads in [1, 2, 4]:
        with pyrt.num_threads(threads):
            results.append(matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=1.0,
                                  beta=0.5, out=c0.copy()))
    check_close(results[0], a, b, trans_a, trans_b, 1.0, 0.5, c0)
    for r in results[1:]:
        assert np.array_equal(r, results[0])


@pytest.mark.parametrize("ld", [1024, 2048, 128, 784, 50])
@pytest.mark.parametrize("m,n,k", [(40, 70, 300), (5, 70, 64), (200, 9, 40)])
def test_row_strides(ld, m, n, k):
    # operands that are column slices of wider arrays: row strides that crowd the L1 sets
    # (multiples of 1024 floats) are packed, others read in place
    rng = np.random.default_rng(ld + m)
    for trans_a, trans_b in [(False, False), (True, False), (False, True), (True, True)]:
        ra, ca = (k, m) if trans_a else (m, k)
        rb, cb = (n, k) if trans_b else (k, n)
        wa = rng.standard_normal((ra, max(ld, ca))).astype(np.float32)
        wb = rng.standard_normal((rb, max(ld, cb))).astype(np.float32)
        a, b = wa[:, :ca], wb[:, :cb]
        for alpha in (1.0, 2.0):
            got = matmul(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha)
            check_close(got, a, b, trans_a, trans_b, alpha)


def test_concurrent_callers_and_nested_calls():
    # each calling thread has its own packing buffer; a product started inside a pool task
    # while another is in flight on the same thread gets its own
    import threading

    rng = np.random.default_rng(8)
    shapes = [(300, 200, 150), (64, 784, 128), (33, 47, 29), (1000, 40, 300)]
    ops = [operands(rng, m, n, k, False, False) for m, n, k in shapes]
    want = [matmul(a, b) for a, b in ops]
    errors = []

    def caller(seed):
        order = np.random.default_rng(seed).permutation(len(ops) * 5) % len(ops)
        for i in order:
            if not np.array_equal(matmul(*ops[i]), want[i]):
                errors.append(i)

    with pyrt.num_threads(2):
        threads = [threading.Thread(target=caller, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = [None] * 8

        def body(start, stop):
            for i in range(start, stop):
                got[i] = matmul(*ops[i % len(ops)])

        pyrt.parallel_for(8, body, grain=1)
    assert errors == []
    assert all(np.array_equal(got[i], want[i % len(ops)]) for i in range(8))


def test_beta_zero_ignores_nan_in_out():
    rng = np.random.default_rng(4)
    for m, n, k in [(4, 4, 4), (64, 128, 784), (7, 33, 5)]:
        a, b = operands(rng, m, n, k, False, False)
        out = np.full((m, n), np.nan, np.float32)
        got = matmul(a, b, beta=0.0, out=out)
        check_close(got, a, b, False, False)


def test_alpha_zero_or_k_zero_scales_out():
    rng = np.random.default_rng(5)
    a = np.full((5, 3), np.nan, np.float32)
    b = np.full((3, 4), np.nan, np.float32)
    c0 = rng.standard_normal((5, 4)).astype(np.float32)
    assert np.array_equal(matmul(a, b, alpha=0.0, beta=2.0, out=c0.copy()), 2.0 * c0)
    assert np.array_equal(matmul(a, b, alpha=0.0, out=c0.copy()), np.zeros((5, 4), np.float32))
    empty_a, empty_b = np.zeros((5, 0), np.float32), np.zeros((0, 4), np.float32)
    assert np.array_equal(matmul(empty_a, empty_b), np.zeros((5, 4), np.float32))
    assert np.array_equal(matmul(empty_a, empty_b, beta=-1.0, out=c0.copy()), -c0)
    assert matmul(np.zeros((0, 3), np.float32), b).shape == (0, 4)


def test_views_are_read_in_place_or_copied():
    rng = np.random.default_rng(6)
    base = rng.standard_normal((40, 50)).astype(np.float32)
    b = rng.standard_normal((50, 30)).astype(np.float32)
    views = {
        "transposed": base.T[:, :40],            # (50, 40) F-contiguous slice of a transpose
        "column slice": base[:, 5:45],           # rows 50 floats apart
        "every other row": base[::2, :30],       # row stride 100 floats
        "reversed": base[::-1, ::-1][:, :30],    # negative strides: copied
        "fortran": np.asfortranarray(base[:30, :30]),
    }
    for v in views.values():
        rhs = rng.standard_normal((v.shape[1], 7)).astype(np.float32)
        check_close(matmul(v, rhs), v, rhs, False, False)
        lhs = rng.standard_normal((7, v.shape[0])).astype(np.float32)
        check_close(matmul(lhs, v), lhs, v, False, False)
        check_close(matmul(v, v, trans_a=True), v, v, True, False)
        check_close(matmul(v, v, trans_b=True), v, v, False, True)
    check_close(matmul(base.T, base.T, trans_a=True), base.T, base.T, True, False)
    check_close(matmul(b.T, base.T), b.T, base.T, False, False)


def test_transposed_view_is_not_copied(monkeypatch):
    # a.T of a C-contiguous array goes to the kernel as its base with the flag flipped
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    calls = []
    real = np.ascontiguousarray
    monkeypatch.setattr(np, "ascontiguousarray", lambda *args, **kw: calls.append(1) or real(
        *args, **kw))
    got = matmul(a.T.T.T.T, b)
    got_t = matmul(a.T, b.T, trans_a=True, trans_b=True)
    assert calls == []
    assert np.array_equal(got, a @ b) and np.array_equal(got_t, a @ b)


def test_errors():
    a = np.ones((3, 4), np.float32)
    b = np.ones((5, 6), np.float32)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        matmul(a, b)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        matmul(a, b, trans_a=True, trans_b=True)
    with pytest.raises(TypeError, match="a must have dtype float32"):
        matmul(a.astype(np.float64), a.T)
    with pytest.raises(TypeError, match="b must be a float32 numpy.ndarray"):
        matmul(a, [[1.0]])
    with pytest.raises(ValueError, match="a must be a 2-D"):
        matmul(np.ones(4, np.float32), a)
    with pytest.raises(ValueError, match="b must be a 2-D"):
        matmul(a, np.ones((4, 2, 2), np.float32))
    with pytest.raises(ValueError, match="out has shape"):
        matmul(a, a.T.copy(), out=np.empty((4, 4), np.float32))
    with pytest.raises(TypeError, match="out must have dtype float32"):
        matmul(a, a.T.copy(), out=np.empty((3, 3), np.float64))
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        matmul(a, a.T.copy(), out=np.empty((3, 6), np.float32)[:, ::2])
    read_only = np.empty((3, 3), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        matmul(a, a.T.copy(), out=read_only)
    square = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="out overlaps a"):
        matmul(square, np.ones((4, 4), np.float32), out=square)
    big = np.ones((8, 4), np.float32)
    with pytest.raises(ValueError, match="out overlaps b"):
        matmul(np.ones((4, 4), np.float32), big[2:6], out=big[:4])
    # out lying in the gaps between the rows of a strided b shares no memory with it: the
    # kernel refuses the meeting address ranges, and the product is computed from copies
    big = np.arange(64, dtype=np.float32).reshape(4, 16)
    a_row, b_view, out_view = big[0:1, 8:12], big[:, :4], big[1:2, 4:8]
    want = a_row @ b_view
    assert np.array_equal(matmul(a_row, b_view, out=out_view), want)
    assert np.array_equal(big[1:2, 4:8], want)
    # interleaved views share no memory: allowed
    buf = np.zeros((4, 8), np.float32)
    left = buf[:, :4]
    left[:] = 1.0
    out = np.empty((4, 4), np.float32)
    matmul(left, left, out=out)
    assert np.array_equal(out, np.full((4, 4), 4.0, np.float32))


def test_c_entry_point_rejects_bad_arguments():
    a = np.ones((4, 4), np.float32)
    p = ffi.from_buffer("float[]", a)
    assert lib.pyrt_sgemm(0, 0, -1, 4, 4, 1.0, p, 4, p, 4, 0.0, p, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(0, 0, 4, 4, 4, 1.0, p, 3, p, 4, 0.0, p, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(1, 0, 4, 2, 4, 1.0, p, 3, p, 4, 0.0, p, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(0, 1, 4, 4, 4, 1.0, p, 4, p, 3, 0.0, p, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(0, 0, 4, 4, 4, 1.0, p, 4, p, 4, 0.0, p, 3) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(0, 0, 4, 4, 4, 1.0, ffi.NULL, 4, p, 4, 0.0, p, 4) == lib.PYRT_EINVAL
    assert lib.pyrt_sgemm(0, 0, 0, 4, 4, 1.0, ffi.NULL, 4, ffi.NULL, 4, 0.0, ffi.NULL, 4) == 0


def test_kernel_is_reported():
    assert sgemm_kernel() in ("avx512", "avx2", "generic")


KERNEL_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import pyrt
    from pyrt.ops.linalg import matmul, sgemm_kernel
    rng = np.random.default_rng(7)
    shapes = [(4, 4, 4), (64, 128, 784), (128, 784, 64), (301, 299, 257), (33, 47, 29),
              (8, 9, 50176), (1, 1, 1), (700, 300, 20), (64, 10, 128), (10, 128, 64),
              (64, 8, 2), (2, 3, 4), (19, 37, 250)]
    results = {}
    for m, n, k in shapes:
        for ta in (False, True):
            for tb in (False, True):
                a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
                b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
                c = rng.standard_normal((m, n)).astype(np.float32)
                runs = []
                for threads in (1, 2, 3):
                    with pyrt.num_threads(threads):
                        runs.append(matmul(a, b, trans_a=ta, trans_b=tb, alpha=0.5, beta=2.0,
                                           out=c.copy()))
                assert all(np.array_equal(r, runs[0]) for r in runs), (m, n, k, ta, tb)
                name = f"{m}_{n}_{k}_{int(ta)}_{int(tb)}"
                results[name] = runs[0]
                # what float32 rounding may move each element by
                a64 = np.abs(a.T if ta else a).astype(np.float64)
                b64 = np.abs(b.T if tb else b).astype(np.float64)
                bound = 0.5 * (a64 @ b64) + 2.0 * np.abs(c.astype(np.float64))
                results["tol_" + name] = 2 * (k + 2) * np.finfo(np.float32).eps * bound
    np.savez(sys.argv[1], kernel=sgemm_kernel(), **results)
""")


def run_with_kernel(kernel, path):
    env = dict(os.environ, PYRT_SGEMM_KERNEL=kernel)
    proc = subprocess.run([sys.executable, "-c", KERNEL_SCRIPT, str(path)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return np.load(path)


def assert_agree(x, y):
    for name in x.files:
        if name == "kernel" or name.startswith("tol_"):
            continue
        # each is within tol of the exact value, so they are within 2 tol of each other
        err = np.abs(x[name].astype(np.float64) - y[name])
        assert np.all(err <= 2 * x["tol_" + name] + 1e-30), name


def test_forced_kernels_agree(tmp_path):
    # PYRT_SGEMM_KERNEL forces a kernel at first use; all kernels compute the same sums
    generic = run_with_kernel("generic", tmp_path / "generic.npz")
    assert str(generic["kernel"]) == "generic"
    best = run_with_kernel("", tmp_path / "best.npz")
    # the best kernel the CPU runs (this process may have been started with one forced)
    auto = str(best["kernel"])
    if not os.environ.get("PYRT_SGEMM_KERNEL"):
        assert auto == sgemm_kernel()
    assert_agree(generic, best)
    if auto == "avx512":
        avx2 = run_with_kernel("avx2", tmp_path / "avx2.npz")
        assert str(avx2["kernel"]) == "avx2"
        assert_agree(avx2, best)
    elif auto == "avx2":
        # a kernel the CPU cannot run is ignored: the best one it can is used
        forced = run_with_kernel("avx512", tmp_path / "avx512.npz")
        assert str(forced["kernel"]) == "avx2"


ROOT = Path(__file__).resolve().parents[1]


def _cpu_has_avx512f():
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the check")
@pytest.mark.parametrize("build", [
    "portable",
    pytest.param("native", marks=pytest.mark.skipif(not _cpu_has_avx512f(),
                                                    reason="this CPU has no AVX-512")),
])
def test_avx512_tile_logic(tmp_path, build):
    # the AVX-512 tile and its edge versions against a double reference in every layout the
    # driver uses: portable (the generic vectors for the baseline instruction set, so that it
    # runs where no AVX-512 CPU is at hand) and native (the assembly pyrt runs)
    exe = tmp_path / "avx512_logic"
    src = ROOT / "csrc" / "kernels" / "gemm" / "tests" / "avx512_logic.c"
    flags = ["-DGEMM_AVX512_PORTABLE"] if build == "portable" else []
    build = subprocess.run(["gcc", "-O2", "-std=gnu11", *flags,
                            f"-I{ROOT / 'csrc'}", str(src), "-lm", "-o", str(exe)],
                           capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
