"""Vector and matrix products beside matmul, with PyTorch's shape checks and errors: outer,
dot, mm (2-D, through matmul's kernel) and bmm (batches of matrices). float32 products carry
gradients; integer ones are exact int64 (no gradient), as in PyTorch."""

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp, matmul
from pyrt.functional import reshape as _reshape
from pyrt.ops._checks import F32

__all__ = ["bmm", "dot", "mm", "outer"]

_DTYPE_NAMES = {np.dtype(np.float32): "Float", np.dtype(np.int64): "Long",
                np.dtype(np.bool_): "Bool", np.dtype(np.float64): "Double"}


def _operands(name, a, b, ndim, names):
    """The arrays of `a` and `b`, tensors of `ndim` dims, one dtype, one device."""
    Tensor = _tensor()
    for t, arg in ((a, "input"), (b, "other")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                            f"{type(t).__name__}")
    for t, what in zip((a, b), names):
        if t.ndim != ndim:
            raise RuntimeError(what.format(t.ndim))
    if _xp(a.data) is not _xp(b.data):
        raise RuntimeError(f"{name}(): expected both tensors on the same device, got "
                           f"{a.device} and {b.device}")
    if a.dtype != b.dtype:
        da, db = (_DTYPE_NAMES.get(t.dtype, t.dtype) for t in (a, b))
        raise RuntimeError(f"{name}(): expected both tensors to have the same dtype, but found "
                           f"{da} and {db}")
    if a.dtype.kind == "b":
        raise RuntimeError(f'"{name}" is not implemented for bool tensors')
    return a.data, b.data


def outer(input, vec2):
    """The outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j] (broadcast
    multiplication, so dtypes promote as in arithmetic, with its gradients)."""
    for t, arg in ((input, "self"), (vec2, "vec2")):
        if not isinstance(t, _tensor()):
            raise TypeError(f"outer(): argument '{arg}' must be a Tensor, got "
                            f"{type(t).__name__}")
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {arg}, but got {t.ndim}-D")
    return _reshape(input, (-1, 1)) * _reshape(vec2, (1, -1))


def dot(input, other):
    """The inner product of two 1-D tensors of one size and dtype: a 0-d tensor; gradients
    g * other and g * input."""
    a, b = _operands("dot", input, other, 1,
                     ("1D tensors expected, but got {}D and 1D tensors",) * 2)
    if a.shape != b.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.size}] and src "
                           f"[{b.size}] to have the same number of elements, but got "
                           f"{a.size} and {b.size} elements")
    xp = _xp(a)
    out = xp.asarray(xp.dot(a, b))
    if a.dtype != F32:
        return _make(out, (input, other), None)
    return _make(out, (input, other), lambda g: (
        g * b if input._requires_grad else None,
        g * a if other._requires_grad else None))


def mm(input, mat2):
    """The product of two matrices, as torch.mm (matmul for 2-D only, PyTorch's errors)."""
    a, b = _operands("mm", input, mat2, 2, ("self must be a matrix", "mat2 must be a matrix"))
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    if a.dtype != F32:
        return _tensor()(_contiguous(_xp(a).matmul(a, b)))
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched matrix products: out[i] = input[i] @ mat2[i] for input (B, n, k) and mat2
    (B, k, m); gradients g @ mat2[i]^T and input[i]^T @ g per batch."""
    a, b = _operands("bmm", input, mat2, 3,
                     ("batch1 must be a 3D tensor", "batch2 must be a 3D tensor"))
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, "
                           f"{b.shape[1]}].")
    xp = _xp(a)
    out = _contiguous(xp.matmul(a, b))
    if a.dtype != F32:
        return _tensor()(out)
    return _make(out, (input, mat2), lambda g: (
        _contiguous(xp.matmul(g, b.transpose(0, 2, 1))) if input._requires_grad else None,
        _contiguous(xp.matmul(a.transpose(0, 2, 1), g)) if mat2._requires_grad else None))
