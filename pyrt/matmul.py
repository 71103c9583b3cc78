"""The matrix product of torch.matmul, on pyrt's GEMM: ``a @ b`` for tensors of any number of
dims.

A 1-D operand is a row vector (first) or a column vector (second), its dim dropped from the
result; the dims before the last two broadcast. float32 products on the CPU run on the
parallel GEMM kernel (csrc/kernels/gemm/), so that they are bitwise the same at any thread
count and share pyrt's threads with everything else:

- a batch times one matrix, x [*, m, k] @ w [k, n] (a layer applied to every position of a
  sequence), is one product of [B * m, k] by [k, n], the batch folded into the rows, and so
  is w's gradient, x^T g summed over the batch: [k, B * m] by [B * m, n];
- other batches are pyrt_sgemm_batched calls over the broadcast batch, an operand whose
  batch is all ones read as one matrix for every product (stride 0), and one whose batch
  dims broadcast partly copied out to the full batch (its gradient summed back).

Integer products are exact int64 (no gradient), and CuPy arrays go to CuPy's matmul.
"""

import math

import numpy as np

from pyrt.functional import _as_tensor, _contiguous, _make, _tensor, _unbroadcast, _xp
from pyrt.functional import matmul as _matmul_2d
from pyrt.ops._checks import F32
from pyrt.ops.linalg import bmm_raw, matmul_raw

__all__ = ["matmul"]

_DTYPE_NAMES = {np.dtype(np.float32): "Float", np.dtype(np.int64): "Long",
                np.dtype(np.bool_): "Bool", np.dtype(np.float64): "Double"}


def _mT(a):
    return a.swapaxes(-1, -2)


def _as_batch(x, batch, size):
    """x [*b, r, c], its batch dims b broadcasting to `batch` (of `size` matrices), as a
    C-contiguous [size, r, c] array, or [1, r, c] when b holds one matrix (read for every
    product)."""
    tail = x.shape[-2:]
    if x.shape[:-2] == batch:
        return _contiguous(x).reshape((size,) + tail)
    if math.prod(x.shape[:-2]) == 1:
        return _contiguous(x).reshape((1,) + tail)
    return np.ascontiguousarray(np.broadcast_to(x, batch + tail)).reshape((size,) + tail)


def _product(a, b, batch):
    """(out [*batch, m, n], backward) for float32 arrays a [*ba, m, k] and b [*bb, k, n]
    whose batch dims broadcast to `batch`; backward(g, need_a, need_b) gives the gradients
    of a and b (of their shapes), each None where not needed."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    size = math.prod(batch)
    if b.ndim == 2:  # the batch folded into the rows of a
        a2 = _contiguous(a).reshape(size * m, k)
        b2 = _contiguous(b)
        out = matmul_raw(a2, b2, False, False).reshape(batch + (m, n))

        def backward(g, need_a, need_b):
            g2 = _contiguous(g).reshape(size * m, n)
            return (matmul_raw(g2, b2, False, True).reshape(a.shape) if need_a else None,
                    matmul_raw(a2, g2, True, False) if need_b else None)

        return out, backward

    a3, b3 = _as_batch(a, batch, size), _as_batch(b, batch, size)
    out = bmm_raw(a3, b3, False, False).reshape(batch + (m, n))

    def gradient(x, x3, product):
        """The gradient of operand x from the batch of products [size, r, c]."""
        if x3.shape[0] == 1 and size > 1:  # one matrix read for every product
            return product.sum(axis=0).reshape(x.shape)
        return _unbroadcast(product.reshape(batch + x.shape[-2:]), tuple(x.shape))

    def backward(g, need_a, need_b):
        g3 = _contiguous(g).reshape(size, m, n)
        da = gradient(a, a3, bmm_raw(g3, b3, False, True)) if need_a else None
        if not need_b:
            db = None
        elif b3.shape[0] == 1 and a3.shape[0] == size:  # sum over the batch in one product
            db = matmul_raw(a3.reshape(size * m, k), g3.reshape(size * m, n), True,
                            False).reshape(b.shape)
        else:
            db = gradient(b, b3, bmm_raw(a3, g3, True, False))
        return da, db

    return out, backward


def matmul(input, other):
    """torch.matmul: the product of `input` and `other`, tensors of one or more dims."""
    Tensor = _tensor()
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        # an array operand (`array @ t`) is a constant tensor, as in the other operators
        input, other = _as_tensor(input), _as_tensor(other)
    a, b = input._data, other._data
    if a.ndim == 2 and b.ndim == 2 and a.dtype is F32 and b.dtype is F32:
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                               f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
        return _matmul_2d(input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if _xp(a) is not _xp(b):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {input.device} and {other.device}!")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_DTYPE_NAMES.get(a.dtype, a.dtype)} != "
                           f"{_DTYPE_NAMES.get(b.dtype, b.dtype)}")
    if a.dtype.kind == "b":
        raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    # a vector is a 1-row (first) or 1-column (second) matrix, its dim removed at the end
    am = a[None, :] if a.ndim == 1 else a
    bm = b[:, None] if b.ndim == 1 else b
    if am.shape[-1] != bm.shape[-2]:
        raise RuntimeError(f"matmul: the operands' shapes {list(a.shape)} and "
                           f"{list(b.shape)} cannot be multiplied ({am.shape[-2]}x"
                           f"{am.shape[-1]} and {bm.shape[-2]}x{bm.shape[-1]} matrices)")
    try:
        batch = np.broadcast_shapes(am.shape[:-2], bm.shape[:-2])
    except ValueError:
        raise RuntimeError(f"matmul: the batch dims of {list(a.shape)} and {list(b.shape)} "
                           f"do not broadcast") from None
    shape = batch + am.shape[-2:-1] * (a.ndim > 1) + bm.shape[-1:] * (b.ndim > 1)
    xp = _xp(a)
    if xp is not np or a.dtype != F32:
        full = xp.matmul(am, bm)
        out = _contiguous(full.reshape(shape))
        if a.dtype.kind != "f":
            return _make(out, (input, other), None)

        def xp_backward(g):
            gm = g.reshape(full.shape)
            return (_contiguous(_unbroadcast(xp.matmul(gm, _mT(bm)), am.shape).reshape(a.shape))
                    if input._requires_grad else None,
                    _contiguous(_unbroadcast(xp.matmul(_mT(am), gm), bm.shape).reshape(b.shape))
                    if other._requires_grad else None)

        return _make(out, (input, other), xp_backward)

    full, product_backward = _product(am, bm, batch)

    def backward(g):
        da, db = product_backward(g.reshape(full.shape), input._requires_grad,
                                  other._requires_grad)
        return (None if da is None else da.reshape(a.shape),
                None if db is None else db.reshape(b.shape))

    return _make(full.reshape(shape), (input, other), backward)
