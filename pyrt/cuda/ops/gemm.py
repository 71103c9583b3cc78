"""The matrix products of the CUDA backend: ``cupy.matmul`` (cuBLAS), except while the current
stream is being captured into a CUDA graph, where CuPy refuses cuBLAS calls and pyrt's own
tiled kernel (kernels/gemm.cu) runs instead.

``matmul(a, b, out=None)`` follows ``cupy.matmul`` for float32 arrays of 2 to 4 dimensions
whose leading (batch) dimensions broadcast, as the linear layers and convolutions use it.
``gemm`` always runs the kernel: ``alpha * a @ b + beta * out``, where a and b may be
transposed views (their transpose is handed to the kernel as a flag, without a copy).
"""

import cupy
import numpy as np

from pyrt.cuda._module import BLOCK, kernel

__all__ = ["gemm", "matmul"]

TILE = 64  # rows and columns of C per block: kernels/gemm.cu's GEMM_T


def capturing():
    """Whether the current stream is being captured into a CUDA graph."""
    return cupy.cuda.get_current_stream().is_capturing()


def matmul(a, b, out=None):
    """``cupy.matmul(a, b, out=out)``, by cuBLAS, or by gemm() during a graph capture."""
    if capturing():
        return gemm(a, b, out=out)
    return cupy.matmul(a, b, out=out)


def _layout(x):
    """(x, trans, ld): x's last two dims read as row-major with leading dimension ld, or as
    the transpose of a row-major matrix (trans); a contiguous copy when they are neither."""
    rows, cols = x.shape[-2:]
    s_row, s_col = x.strides[-2:]
    item = x.itemsize
    if s_row >= 0 and s_row % item == 0 and (s_col == item or cols == 1):
        return x, 0, s_row // item if rows > 1 else max(cols, 1)
    if s_col >= 0 and s_col % item == 0 and (s_row == item or rows == 1):
        return x, 1, s_col // item if cols > 1 else max(rows, 1)
    x = cupy.ascontiguousarray(x)
    return x, 0, max(cols, 1)


def _batch_strides(x):
    """x's element strides over the result's two batch dimensions (x's own leading dims,
    padded in front to two), 0 where x has size 1 there (broadcast)."""
    lead = x.shape[:-2]
    strides = tuple(s // x.itemsize for s in x.strides[:-2])
    pad = 2 - len(lead)
    return tuple(0 if size == 1 else st
                 for size, st in zip((1,) * pad + lead, (0,) * pad + strides))


def gemm(a, b, *, out=None, alpha=1.0, beta=0.0):
    """``alpha * a @ b + beta * out`` by pyrt's kernel, for float32 CuPy arrays of 2 to 4
    dimensions whose batch dimensions broadcast (at most two of them in the result)."""
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"gemm expects arrays of at least 2 dimensions, got shapes {a.shape} "
                         f"and {b.shape}")
    m, k = a.shape[-2:]
    kb, n = b.shape[-2:]
    if k != kb:
        raise ValueError(f"gemm: shapes {a.shape} and {b.shape} do not match in k "
                         f"({k} != {kb})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if len(batch) > 2:
        raise ValueError(f"gemm: at most two batch dimensions, got shapes {a.shape} and "
                         f"{b.shape}")
    shape = tuple(batch) + (m, n)
    if out is None:
        out = cupy.empty(shape, np.float32)
        beta = 0.0
    elif out.shape != shape or out.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of shape {shape}, got {out.dtype} "
                         f"{out.shape}")
    if out.size == 0:
        return out
    target = out
    if out.strides[-1] != out.itemsize and n > 1 or any(s < 0 for s in out.strides):
        target = cupy.ascontiguousarray(out) if beta != 0.0 else cupy.empty(shape, np.float32)
    a, trans_a, lda = _layout(a)
    b, trans_b, ldb = _layout(b)
    b2 = (1,) * (2 - len(batch)) + tuple(batch)
    sa, sb, sc = (_batch_strides(x) for x in (a, b, target))
    ldc = target.strides[-2] // target.itemsize if m > 1 else n
    blocks = -(-n // TILE) * -(-m // TILE) * b2[0] * b2[1]
    kernel("gemm", "pyrt_gemm")(
        (blocks,), (BLOCK,),
        (a, b, target, m, n, k, trans_a, trans_b, lda, ldb, ldc, b2[1], sa[0], sa[1], sb[0],
         sb[1], sc[0], sc[1], np.float32(alpha), np.float32(beta)))
    if target is not out:
        out[...] = target
    return out

