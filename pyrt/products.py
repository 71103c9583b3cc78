"""Vector and matrix products beside matmul, with PyTorch's shape checks and errors: outer,
dot, mm (2-D, through matmul's kernel), bmm (batches of matrices), and the fused forms
beta * input + alpha * product: addmm, addmv, baddbmm and addbmm. float32 products carry
gradients; integer ones are exact int64 (no gradient), as in PyTorch."""

import numbers

import numpy as np

from pyrt.functional import _contiguous, _make, _tensor, _xp, matmul
from pyrt.functional import reshape as _reshape
from pyrt.ops._checks import F32
from pyrt.ops.linalg import bmm_raw

__all__ = ["addbmm", "addmm", "addmv", "baddbmm", "bmm", "dot", "mm", "outer"]

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
    if _xp(a._data) is not _xp(b._data):
        raise RuntimeError(f"{name}(): expected both tensors on the same device, got "
                           f"{a.device} and {b.device}")
    if a.dtype != b.dtype:
        da, db = (_DTYPE_NAMES.get(t.dtype, t.dtype) for t in (a, b))
        raise RuntimeError(f"{name}(): expected both tensors to have the same dtype, but found "
                           f"{da} and {db}")
    if a.dtype.kind == "b":
        raise RuntimeError(f'"{name}" is not implemented for bool tensors')
    return a._data, b._data


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
    if xp is np and a.dtype == F32:  # pyrt's batched GEMM: parallel, the same at any threads
        a, b = _contiguous(a), _contiguous(b)
        return _make(bmm_raw(a, b, False, False), (input, mat2), lambda g: (
            bmm_raw(_contiguous(g), b, False, True) if input._requires_grad else None,
            bmm_raw(a, _contiguous(g), True, False) if mat2._requires_grad else None))
    out = _contiguous(xp.matmul(a, b))
    if a.dtype != F32:
        return _tensor()(out)
    return _make(out, (input, mat2), lambda g: (
        _contiguous(xp.matmul(g, b.transpose(0, 2, 1))) if input._requires_grad else None,
        _contiguous(xp.matmul(a.transpose(0, 2, 1), g)) if mat2._requires_grad else None))


# ---- beta * input + alpha * product ----------------------------------------------------------


def _scaled_sum(name, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcast to the product's shape (checked as
    PyTorch expands it). With beta 0 input is left out, so that its nan and inf do not
    spread, as PyTorch documents; integer products take integer beta and alpha only."""
    Tensor = _tensor()
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    for value, arg in ((beta, "beta"), (alpha, "alpha")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}(): argument '{arg}' must be a number, got "
                            f"{type(value).__name__}")
        if product.dtype.kind != "f" and not isinstance(value, numbers.Integral):
            raise RuntimeError(f"For integral input tensors, argument {arg} must not be a "
                               f"floating point number.")
    if input.dtype != product.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_DTYPE_NAMES.get(input.dtype, input.dtype)} and "
                           f"{_DTYPE_NAMES.get(product.dtype, product.dtype)}")
    shape, given = product.shape, input.shape
    padded = (1,) * (len(shape) - len(given)) + tuple(given)
    if len(given) > len(shape) or any(m not in (1, n) for m, n in zip(padded, shape)):
        raise RuntimeError(f"The expanded size of the tensor must match the existing size: "
                           f"target sizes {list(shape)}, tensor sizes {list(given)}")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), as torch.addmm."""
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec) for a matrix and a vector, as torch.addmv."""
    Tensor = _tensor()
    for t, arg in ((mat, "mat"), (vec, "vec")):
        if not isinstance(t, Tensor):
            raise TypeError(f"addmv(): argument '{arg}' must be Tensor, not "
                            f"{type(t).__name__}")
    if mat.ndim != 2 or vec.ndim != 1 or (isinstance(input, Tensor) and input.ndim > 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got "
                           f"{getattr(input, 'ndim', '?')}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({mat.shape[0]}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    product = _reshape(mm(mat, _reshape(vec, (-1, 1))), (-1,))
    return _scaled_sum("addmv", input, product, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2), as torch.baddbmm."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i], as
    torch.addbmm."""
    Tensor = _tensor()
    for t, arg in ((batch1, "batch1"), (batch2, "batch2")):
        if isinstance(t, Tensor) and t.ndim != 3:
            raise RuntimeError(f"{arg} must be a 3D tensor")
    if isinstance(batch1, Tensor) and isinstance(batch2, Tensor) and \
            batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)
