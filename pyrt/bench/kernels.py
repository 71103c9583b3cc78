"""The kernel workloads, pyrt.ops beside the peers a user would reach for, on the same data.

Each builder returns variants as ((label, threads), setup, run[, out]) tuples: setup() sets the
library's thread count (untimed), run() makes one call. The scripts under benchmarks/kernels/
time them all in one process; ``python -m pyrt bench scaling`` takes one variant at one
thread count into a fresh process (pyrt.bench.worker).
"""

import numpy as np

import pyrt
from pyrt.ops.conv import conv2d, conv2d_backward
from pyrt.ops.elementwise import addcmul
from pyrt.ops.linalg import matmul
from pyrt.ops.reduction import sum as pyrt_sum

__all__ = ["ADDCMUL_PYRT", "MLP_GEMMS", "SUM_PYRT", "addcmul_close", "addcmul_variants",
           "conv_variants", "gemm_close", "gemm_operands", "gemm_variants", "sum_values",
           "sum_variants"]

SUM_PYRT = "pyrt.ops.sum"
ADDCMUL_PYRT = "pyrt.ops.addcmul"

# The products of one training step of the MLP 784-128-10 at batch 64: (name, m, n, k,
# trans_a, trans_b), forward X W^T, input gradient dY W and weight gradient dY^T X per layer.
MLP_GEMMS = [
    ("fc1 forward X W1^T", 64, 128, 784, False, True),
    ("fc1 dX = dY W1", 64, 784, 128, False, False),
    ("fc1 dW = dY^T X", 128, 784, 64, True, False),
    ("fc2 forward H W2^T", 64, 10, 128, False, True),
    ("fc2 dH = dY W2", 64, 128, 10, False, False),
    ("fc2 dW = dY^T H", 10, 128, 64, True, False),
]


# ---- sum of float32 --------------------------------------------------------------------------


def sum_values(n, chunk=1 << 24):
    """x[i] = sum_value(i) of benchmarks/runtime/sum/sum_common.h, in chunks: multiples of
    1/512 in (-0.5, 0.5) from a hash of the index, so every float sum is exact in any order."""
    x = np.empty(n, np.float32)
    for start in range(0, n, chunk):
        h = np.arange(start, min(n, start + chunk), dtype=np.uint32)
        h *= np.uint32(0x9E3779B1)
        h ^= h >> np.uint32(15)
        h *= np.uint32(0x85EBCA77)
        h ^= h >> np.uint32(13)
        x[start:start + len(h)] = ((2 * (h & 255)).astype(np.float32) - 255.0) / 512.0
    return x


def sum_variants(x, threads_list, torch):
    """((label, threads), setup, run): run() does one sum and returns its value. np.sum always
    runs on one thread (NumPy's sum uses no BLAS)."""
    variants = []
    for t in threads_list:
        variants.append(((SUM_PYRT, t), lambda t=t: pyrt.set_num_threads(t),
                         lambda: pyrt_sum(x)))
    variants.append((("np.sum", 1), lambda: None, lambda: np.sum(x)))
    if torch is not None:
        tx = torch.from_numpy(x)
        for t in threads_list:
            variants.append((("torch.sum", t), lambda t=t: torch.set_num_threads(t),
                             lambda: torch.sum(tx).item()))
    return variants


# ---- a * b + c -------------------------------------------------------------------------------


def addcmul_variants(a, b, c, threads_list, numexpr, torch):
    """((label, threads), setup, run, out): run() computes a * b + c into out. NumPy takes two
    passes (multiply, then add) on one thread."""
    variants = []
    for t in threads_list:
        o = np.empty_like(a)
        variants.append(((ADDCMUL_PYRT, t), lambda t=t: pyrt.set_num_threads(t),
                         lambda o=o: addcmul(c, a, b, out=o), o))

    o_np = np.empty_like(a)

    def numpy_two_passes():
        np.multiply(a, b, out=o_np)
        np.add(o_np, c, out=o_np)

    variants.append((("NumPy multiply+add", 1), lambda: None, numpy_two_passes, o_np))
    if numexpr is not None:
        for t in threads_list:
            o = np.empty_like(a)
            variants.append((("numexpr", t), lambda t=t: numexpr.set_num_threads(t),
                             lambda o=o: numexpr.evaluate("a*b+c", local_dict={
                                 "a": a, "b": b, "c": c}, out=o), o))
    if torch is not None:
        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
        for t in threads_list:
            o = np.empty_like(a)
            to = torch.from_numpy(o)
            variants.append((("torch.addcmul", t), lambda t=t: torch.set_num_threads(t),
                             lambda to=to: torch.addcmul(tc, ta, tb, out=to), o))
    return variants


def addcmul_close(out, ref, a, b, c):
    """Within two float32 roundings of the float64 value `ref` (fused or not)."""
    eps = float(np.finfo(np.float32).eps)
    bound = 2 * eps * (np.abs(a * b).astype(np.float64) + np.abs(c)) + 1e-38
    return bool(np.all(np.abs(out.astype(np.float64) - ref) <= bound))


# ---- GEMM ------------------------------------------------------------------------------------


def gemm_operands(rng, m, n, k, trans_a, trans_b):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    return a, b


def gemm_close(c, a, b, trans_a, trans_b):
    """c == op(a) @ op(b) within float32 rounding (a bound on the sum of |products|)."""
    a64 = (a.T if trans_a else a).astype(np.float64)
    b64 = (b.T if trans_b else b).astype(np.float64)
    k = a64.shape[1]
    err = np.abs(c - a64 @ b64)
    return bool(np.all(err <= 2 * (k + 2) * np.finfo(np.float32).eps
                       * (np.abs(a64) @ np.abs(b64)) + 1e-30))


def gemm_variants(a, b, c, trans_a, trans_b, threads, blas, torch):
    """((label, threads), setup, run): run() does one product into c. `blas` is a
    threadpoolctl controller that limits NumPy's BLAS, or None to leave NumPy out."""
    A, B = (a.T if trans_a else a), (b.T if trans_b else b)
    out = [(("pyrt", threads), lambda: pyrt.set_num_threads(threads),
            lambda: matmul(a, b, trans_a=trans_a, trans_b=trans_b, out=c))]
    if blas is not None:
        out.append((("numpy", threads), lambda: blas.limit(limits=threads, user_api="blas"),
                    lambda: np.matmul(A, B, out=c)))
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        ta, tb = (ta.T if trans_a else ta), (tb.T if trans_b else tb)
        out.append((("torch", threads), lambda: torch.set_num_threads(threads),
                    lambda: torch.matmul(ta, tb, out=tc)))
    return out


# ---- conv2d ----------------------------------------------------------------------------------


def conv_variants(rng, shape, filters, torch, dilation=1, groups=1):
    """{variant: (forward, backward, results)} for a 3x3 convolution of an input of `shape`,
    padded by `dilation` (the output keeps the input's size), of `groups` groups: pyrt.ops, and
    torch's aten kernels (those autograd runs, without a graph)."""
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((filters, shape[1] // groups, 3, 3)) / 3).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32)
    y = np.empty((shape[0], filters, shape[2], shape[3]), np.float32)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    opts = {"padding": dilation, "dilation": dilation, "groups": groups}
    out = {"pyrt": (lambda: conv2d(x, w, b, out=y, **opts),
                    lambda: conv2d_backward(x, w, dy, **opts),
                    lambda: (conv2d(x, w, b, **opts), *conv2d_backward(x, w, dy, **opts)))}
    if torch is not None:
        aten = torch.ops.aten
        xt, wt, bt, dyt = (torch.from_numpy(a) for a in (x, w, b, dy))
        args = ([1, 1], [dilation] * 2, [dilation] * 2, False, [0, 0], groups)

        def t_fwd():
            return aten.convolution(xt, wt, bt, *args)

        def t_bwd():
            return aten.convolution_backward(dyt, xt, wt, [filters], *args, [True, True, True])

        out["torch"] = (t_fwd, t_bwd, lambda: tuple(t.numpy() for t in (t_fwd(), *t_bwd())))
    return out
