"""The matrix products of the CUDA backend: cuBLAS's strided-batched SGEMM, called directly,
except while the current stream is being captured into a CUDA graph, where CuPy refuses
cuBLAS calls and pyrt's own tiled kernel (kernels/gemm.cu) runs instead.

``matmul(a, b, out=None, alpha=1, beta=0)`` is ``alpha * a @ b + beta * out`` with
``cupy.matmul``'s broadcasting, for float32 arrays of 2 to 4 dimensions whose leading (batch)
dimensions broadcast, as the linear layers and convolutions use it; other arguments go to
``cupy.matmul`` itself. ``gemm`` always runs the kernel. In both, a and b may be transposed
views: their transpose is handed over as a flag, without a copy.

Why not ``cupy.matmul`` itself: for arrays of more than two dimensions it builds arrays of
matrix pointers on the host and copies them to the device, about 100 us of host time a call
(a convolution's batched products, on an H200 host), against a few microseconds for one
``cublasSgemmStridedBatched`` call. An eager training step is issued from the host, so that
time was most of the CNN's step.
"""

import cupy
import numpy as np

from pyrt.cuda._module import BLOCK, kernel

try:  # CuPy >= 9; without these, every product goes to cupy.matmul
    from cupy_backends.cuda.libs import cublas

    _sgemm_strided_batched = cublas.sgemmStridedBatched
    _cublas_handle = cupy.cuda.device.get_cublas_handle
except (ImportError, AttributeError):  # pragma: no cover
    cublas = _sgemm_strided_batched = _cublas_handle = None

__all__ = ["gemm", "matmul"]

TILE = 64  # rows and columns of C per block: kernels/gemm.cu's GEMM_T
INT_MAX = 2 ** 31 - 1  # cuBLAS's sizes and leading dimensions are ints
F32 = np.dtype(np.float32)


def capturing():
    """Whether the current stream is being captured into a CUDA graph."""
    return cupy.cuda.get_current_stream().is_capturing()


def matmul(a, b, out=None, *, alpha=1.0, beta=0.0):
    """``alpha * a @ b + beta * out`` (beta only with `out`), with ``cupy.matmul``'s
    broadcasting: cuBLAS, or gemm() during a graph capture."""
    if capturing():
        return gemm(a, b, out=out, alpha=alpha, beta=beta)
    res = _cublas_matmul(a, b, out, alpha, beta)
    if res is not None:
        return res
    res = cupy.matmul(a, b, out=out if beta == 0.0 else None)
    if beta != 0.0 and out is not None:
        out *= F32.type(beta)
        out += F32.type(alpha) * res
        return out
    if alpha != 1.0:
        cupy.multiply(res, F32.type(alpha), out=res)
    return res


# host copies of alpha and beta, which cuBLAS reads when the call is made (pointer mode
# host): (array, its address), the array kept alive with the plans that use it
_SCALARS = {}


def _scalar(value):
    entry = _SCALARS.get(value)
    if entry is None:
        arr = np.array([value], F32)
        entry = (arr, arr.ctypes.data)
        if len(_SCALARS) < 64:
            _SCALARS[value] = entry
    return entry


def _batch2(x_lead, y_lead):
    """The two-dimensional broadcast batch shape of two leading shapes of at most two dims
    each, or None where they do not broadcast or have more."""
    if len(x_lead) > 2 or len(y_lead) > 2:
        return None
    x = (1,) * (2 - len(x_lead)) + tuple(x_lead)
    y = (1,) * (2 - len(y_lead)) + tuple(y_lead)
    shape = []
    for p, q in zip(x, y):
        if p == q or q == 1:
            shape.append(p)
        elif p == 1:
            shape.append(q)
        else:
            return None
    return shape


class _Plan:
    """What a product of given shapes and strides hands to cuBLAS, apart from the addresses.

    kind "call": `outer` calls of cublasSgemmStridedBatched with `args` (the addresses of b,
    a and the output, the jth of them moved on by i * jumps[j] elements in call i, go in
    between); "copy": first copy the operands (or the output) that cuBLAS cannot take as they
    are; "fill": nothing to multiply (k = 0, or an empty result)."""

    __slots__ = ("args", "jumps", "kind", "outer", "scalars", "shape")

    def __init__(self, kind, shape, args=(), jumps=(0, 0, 0), outer=1, scalars=()):
        self.kind, self.shape, self.args = kind, shape, args
        self.jumps, self.outer, self.scalars = jumps, outer, scalars


# Plans by (shapes, strides, dtypes, alpha, beta): a training step asks for the same
# products every step, so each is worked out once and then looked up, and its call costs a
# few microseconds of the host's time.
_PLANS = {}


def _plan(a, b, out, alpha, beta):
    """The _Plan of a @ b into out, or None where cuBLAS does not take the arguments: not
    float32 arrays of 2 to 4 dimensions whose batches broadcast (cupy.matmul then takes them,
    and its errors stand)."""
    if not (a.dtype == F32 and b.dtype == F32 and 2 <= a.ndim <= 4 and 2 <= b.ndim <= 4):
        return None
    m, k = a.shape[-2:]
    kb, n = b.shape[-2:]
    lead = _batch2(a.shape[:-2], b.shape[:-2])
    if k != kb or lead is None or max(m, n, k) > INT_MAX:
        return None
    shape = (*lead[4 - max(a.ndim, b.ndim):], m, n)
    if out is not None and (out.dtype != F32 or out.shape != shape):
        return None
    if k == 0 or 0 in shape:
        return _Plan("fill", shape)
    layout_a, layout_b = _layout_of(a), _layout_of(b)
    if (layout_a is None or layout_b is None
            or (out is not None and ((out.strides[-1] != 4 and n > 1) or min(out.strides) < 0))):
        return _Plan("copy", shape)
    (trans_a, lda), (trans_b, ldb) = layout_a, layout_b
    target = out if out is not None else _Contiguous(shape)
    ldc = target.strides[-2] // 4 if m > 1 else n
    if max(lda, ldb, ldc) > INT_MAX:
        return None
    b0, b1 = lead
    strides = [_batch_strides(x) for x in (b, a, target)]
    # one batch dimension where every operand steps evenly through both (or one has size 1),
    # else a call per index of the shorter one, batched over the other
    if b0 == 1 or b1 == 1 or all(s0 == b1 * s1 for s0, s1 in strides):
        outer, count = 1, b0 * b1
        steps = [s1 if b1 > 1 else s0 for s0, s1 in strides]
        jumps = (0, 0, 0)
    elif b0 <= b1:
        outer, count = b0, b1
        steps = [s1 for _, s1 in strides]
        jumps = tuple(s0 for s0, _ in strides)
    else:
        outer, count = b1, b0
        steps = [s0 for s0, _ in strides]
        jumps = tuple(s1 for _, s1 in strides)
    # row-major C = A @ B is column-major C^T = B^T @ A^T: b's memory goes first, and a
    # row-major matrix (no transpose flag) is, read column-major, its own transpose
    op_b = cublas.CUBLAS_OP_T if trans_b else cublas.CUBLAS_OP_N
    op_a = cublas.CUBLAS_OP_T if trans_a else cublas.CUBLAS_OP_N
    scalars = (_scalar(float(alpha)), _scalar(float(beta) if out is not None else 0.0))
    args = (op_b, op_a, n, m, k, ldb, steps[0], lda, steps[1], ldc, steps[2], count)
    return _Plan("call", shape, args, jumps, outer, scalars)


class _Contiguous:
    """The shape and strides of a new C-contiguous float32 array (a result not yet made)."""

    def __init__(self, shape):
        self.shape = shape
        strides, step = [], 4
        for size in reversed(shape):
            strides.append(step)
            step *= size
        self.strides = tuple(reversed(strides))


def _cublas_matmul(a, b, out, alpha, beta):
    """The product by cublasSgemmStridedBatched, or None where cuBLAS does not take the
    arguments (see _plan)."""
    if not (_sgemm_strided_batched and isinstance(a, cupy.ndarray)
            and isinstance(b, cupy.ndarray) and (out is None or isinstance(out, cupy.ndarray))):
        return None
    key = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype,
           None if out is None else (out.shape, out.strides, out.dtype), alpha, beta)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(a, b, out, alpha, beta)
        if plan is None:
            return None
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        _PLANS[key] = plan
    if plan.kind == "copy":
        return _through_copies(a, b, out, alpha, beta, plan.shape)
    if out is None:
        out = cupy.empty(plan.shape, F32)
        beta = 0.0
    if plan.kind == "fill":
        if out.size:
            if beta == 0.0:
                out.fill(0)
            else:
                out *= F32.type(beta)
        return out
    op_b, op_a, n, m, k, ldb, step_b, lda, step_a, ldc, step_c, count = plan.args
    jb, ja, jc = plan.jumps
    pa, pb, pc = a.data.ptr, b.data.ptr, out.data.ptr
    al, be = plan.scalars[0][1], plan.scalars[1][1]
    handle = _cublas_handle()
    for i in range(plan.outer):
        _sgemm_strided_batched(handle, op_b, op_a, n, m, k, al,
                               pb + 4 * i * jb, ldb, step_b,
                               pa + 4 * i * ja, lda, step_a, be,
                               pc + 4 * i * jc, ldc, step_c, count)
    return out


def _through_copies(a, b, out, alpha, beta, shape):
    """The product where an operand is in a layout cuBLAS does not take (neither its rows nor
    its columns contiguous), or the output's rows are strided: contiguous copies first."""
    if _layout_of(a) is None:
        a = cupy.ascontiguousarray(a)
    if _layout_of(b) is None:
        b = cupy.ascontiguousarray(b)
    target = out
    if out is not None and ((out.strides[-1] != 4 and shape[-1] > 1) or min(out.strides) < 0):
        target = cupy.ascontiguousarray(out) if beta != 0.0 else cupy.empty(shape, F32)
    res = _cublas_matmul(a, b, target, alpha, beta)
    if out is None:
        return res
    if target is not out:
        out[...] = target
    return out


def _layout_of(x):
    """(trans, ld): x's last two dims read as row-major with leading dimension ld, or as the
    transpose of a row-major matrix (trans); None when they are neither."""
    rows, cols = x.shape[-2:]
    s_row, s_col = x.strides[-2:]
    item = x.itemsize
    if s_row >= 0 and s_row % item == 0 and (s_col == item or cols == 1):
        return 0, s_row // item if rows > 1 else max(cols, 1)
    if s_col >= 0 and s_col % item == 0 and (s_row == item or rows == 1):
        return 1, s_col // item if cols > 1 else max(rows, 1)
    return None


def _layout(x):
    """(x, trans, ld) as _layout_of gives them, x a contiguous copy when it has neither
    layout."""
    layout = _layout_of(x)
    if layout is None:
        x = cupy.ascontiguousarray(x)
        layout = (0, max(x.shape[-1], 1))
    return (x, *layout)


def _batch_strides(x):
    """x's element strides over the result's two batch dimensions (x's own leading dims,
    padded in front to two), 0 where x has size 1 there (broadcast)."""
    lead = x.shape[:-2]
    strides = tuple(s // 4 for s in x.strides[:-2])  # float32
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
    if (out.strides[-1] != out.itemsize and n > 1) or any(s < 0 for s in out.strides):
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

