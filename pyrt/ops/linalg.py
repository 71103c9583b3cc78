"""Matrix products of float32 arrays: ``matmul`` over pyrt's GEMM (csrc/kernels/gemm/).

The kernel reads either operand transposed in place, so a transposed operand is never copied:
pass ``trans_a``/``trans_b``, or pass a transposed view (``x.T`` of a C-contiguous ``x``) and
it is recognised as its contiguous base with the flag flipped. Row-strided views (a slice of
columns, ``x[:, 2:7]``) are read in place too. Results are bitwise identical at any thread
count: every element sums over k in an order fixed by the shapes alone.
"""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import F32, check_f32, check_rc, out_f32
from pyrt.ops._memory import empty

__all__ = ["matmul", "sgemm_kernel"]

_ITEM = F32.itemsize
_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_sgemm = lib.pyrt_sgemm
_sgemm_batched = lib.pyrt_sgemm_batched
_ndarray = np.ndarray
_empty = empty


def matmul_raw(a, b, trans_a, trans_b):
    """``op(a) @ op(b)`` into a new array, without any checks: for internal callers (the
    autograd ops) that hold C-contiguous 2-D float32 arrays whose inner sizes match."""
    if trans_a:
        k, m = a.shape
    else:
        m, k = a.shape
    n = b.shape[0] if trans_b else b.shape[1]
    return matmul_ptr(trans_a, trans_b, m, n, k, _from_buffer(_FLOATS, a), a.shape[1] or 1,
                      _from_buffer(_FLOATS, b), b.shape[1] or 1)


def matmul_ptr(trans_a, trans_b, m, n, k, pa, lda, pb, ldb):
    """``op(A) @ op(B)`` of shape (m, n) into a new array, A and B given as cffi pointers with
    their row strides (lda, ldb, in elements), without any checks: for internal callers that
    reuse the pointers of arrays they keep alive."""
    res = _empty((m, n), F32)
    rc = _sgemm(trans_a, trans_b, m, n, k, 1.0, pa, lda, pb, ldb, 0.0,
                _from_buffer(_FLOATS, res), n or 1)
    if rc:
        check_rc(rc, "matmul")
    return res


def bmm_raw(a, b, trans_a, trans_b):
    """``op(a[i]) @ op(b[i])`` for every i, into a new [batch, m, n] array, without any checks:
    for internal callers that hold C-contiguous 3-D float32 arrays whose inner sizes match and
    whose batch sizes are equal or 1 (one matrix used for every product; the batch is the
    larger of the two)."""
    ba, ra, ca = a.shape
    bb, rb, cb = b.shape
    m, k = (ca, ra) if trans_a else (ra, ca)
    n = rb if trans_b else cb
    batch = max(ba, bb)
    res = _empty((batch, m, n), F32)
    rc = _sgemm_batched(batch, trans_a, trans_b, m, n, k, 1.0, _from_buffer(_FLOATS, a),
                        ra * ca if ba > 1 else 0, ca or 1, _from_buffer(_FLOATS, b),
                        rb * cb if bb > 1 else 0, cb or 1, 0.0, _from_buffer(_FLOATS, res),
                        m * n, n or 1)
    if rc:
        check_rc(rc, "matmul")
    return res


def check_matrix(x, name):
    """`x` if it is 2-D, else a ValueError naming `name`."""
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {x.ndim} dimensions")
    return x


def mismatch(a_shape, b_shape, trans_a, trans_b, op_a, op_b):
    """The error for operands whose op(a) and op(b) shapes have different inner sizes."""
    return ValueError(
        f"matmul: a of shape {a_shape} and b of shape {b_shape} do not match"
        f" (trans_a={trans_a}, trans_b={trans_b}): op(a) is {op_a} and op(b) is"
        f" {op_b}, so the inner sizes {op_a[1]} and {op_b[0]} differ"
    )


def _operand(x, name, trans):
    """`x` as (array, pointer, row stride in elements, trans) for the kernel.

    A C-contiguous array is used as it is. A transposed view of one (F-contiguous, such as
    ``W.T``) becomes its base with `trans` flipped, and a view whose rows are contiguous but
    spaced apart passes its row stride; anything else is copied.
    """
    if type(x) is not _ndarray or x.dtype is not F32 or x.ndim != 2:
        x = np.asarray(check_matrix(check_f32(x, name), name))
    flags = x.flags
    if flags.c_contiguous:
        return x, _from_buffer(_FLOATS, x), x.shape[1] or 1, trans
    if flags.f_contiguous:
        return x, _from_buffer(_FLOATS, x.T), x.shape[0], not trans
    s0, s1 = x.strides
    rows, cols = x.shape
    if s1 == _ITEM and s0 > 0 and s0 % _ITEM == 0 and s0 >= cols * _ITEM:
        return x, ffi.cast("float *", x.ctypes.data), s0 // _ITEM, trans
    if s0 == _ITEM and s1 > 0 and s1 % _ITEM == 0 and s1 >= rows * _ITEM:
        # a transposed view of a strided matrix: x.T has contiguous rows, each s1 bytes apart
        return x, ffi.cast("float *", x.ctypes.data), s1 // _ITEM, not trans
    x = np.ascontiguousarray(x)
    return x, _from_buffer(_FLOATS, x), x.shape[1] or 1, trans


def _scalar_error(alpha, beta):
    """The error for an alpha or beta the kernel cannot take as a double."""
    for value, name in ((alpha, "alpha"), (beta, "beta")):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            return TypeError(f"{name} must be a real number, got {type(value).__name__}")
        try:
            float(value)
        except OverflowError:
            return ValueError(f"{name} is too large for a float")
    return TypeError(f"alpha and beta must be real numbers, got {alpha!r} and {beta!r}")


def _failed(rc, a, b, out, args):
    """Turn an error code into an exception; the kernel also refuses an `out` whose address
    range meets a or b's. Views that interleave without sharing memory are recomputed from
    copies of the operands (the only case where the range test is too strict)."""
    if rc == lib.PYRT_EINVAL and out is not None:
        for x, name in ((a, "a"), (b, "b")):
            if np.shares_memory(out, x):
                raise ValueError(f"out overlaps {name}: the product cannot be written over "
                                 "its input")
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            return matmul(np.array(a), np.array(b), out=out, **args)
    check_rc(rc, "matmul")


def matmul(a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None):
    """``alpha * op(a) @ op(b)``, plus ``beta * out`` when `out` is given and beta != 0.

    op(x) is x, or x.T when the matching ``trans_*`` flag is set. `a` and `b` are 2-D float32
    arrays with op(a) of shape (m, k) and op(b) of shape (k, n); the result has shape (m, n).
    With ``beta == 0`` the old contents of `out` are ignored (NaN included). `out` must be a
    C-contiguous float32 array of shape (m, n) that shares no memory with `a` or `b`
    (ValueError otherwise).
    """
    # The common case inline, each check as cheap as it can be (on a product of 10^5
    # multiply-adds this wrapper is about a third of the time): float32 matrices used as they
    # are. from_buffer refuses any layout but C-contiguous, and unpacking the shape any number
    # of dimensions but 2; that ValueError, like a wrong type or dtype, sends the operand to
    # _operand, which takes a transposed or strided view as it is, copies, or raises.
    ta, tb = trans_a, trans_b
    try:
        if type(a) is not _ndarray or a.dtype is not F32:
            raise ValueError
        pa, (rows_a, cols_a) = _from_buffer(_FLOATS, a), a.shape
        lda = cols_a or 1
    except ValueError:
        a, pa, lda, ta = _operand(a, "a", trans_a)
        rows_a, cols_a = a.shape
    try:
        if type(b) is not _ndarray or b.dtype is not F32:
            raise ValueError
        pb, (rows_b, cols_b) = _from_buffer(_FLOATS, b), b.shape
        ldb = cols_b or 1
    except ValueError:
        b, pb, ldb, tb = _operand(b, "b", trans_b)
        rows_b, cols_b = b.shape
    if trans_a:
        k, m = rows_a, cols_a
    else:
        m, k = rows_a, cols_a
    if trans_b:
        n, kb = rows_b, cols_b
    else:
        kb, n = rows_b, cols_b
    if k != kb:
        raise mismatch(a.shape, b.shape, trans_a, trans_b, (m, k), (kb, n))
    if out is None:
        res = _empty((m, n), F32)
        beta = 0.0
    elif type(out) is _ndarray and out.dtype is F32 and out.shape == (m, n):
        res = out
    else:
        res = out_f32(out, (m, n))
    try:
        # refuses any layout but C-contiguous, and read-only arrays
        pc = _from_buffer(_FLOATS, res, True)
    except ValueError:
        out_f32(res, (m, n))  # raises the error that says which
        raise
    try:
        rc = _sgemm(1 if ta else 0, 1 if tb else 0, m, n, k, alpha, pa, lda, pb, ldb, beta, pc,
                    n or 1)
    except (TypeError, OverflowError):
        raise _scalar_error(alpha, beta) from None
    if rc:
        return _failed(rc, a, b, out, {"trans_a": trans_a, "trans_b": trans_b,
                                       "alpha": alpha, "beta": beta})
    return res


def sgemm_kernel():
    """The instruction set of the GEMM micro-kernel in use: "avx512", "avx2" or "generic"."""
    return ffi.string(lib.pyrt_sgemm_kernel()).decode()
