"""Linear and bilinear combinations of tensors with PyTorch's names, written with autograd's
ops so that their gradients come with them: vdot (the dot product of two vectors), addr
(beta * input + alpha * outer(vec1, vec2)), chain_matmul (a product of matrices, multiplied
in the cheapest order) and rsub (other - alpha * input).
"""

import numbers
import warnings

from pyrt.functional import _kind, _tensor
from pyrt.linalg.products import multi_dot

__all__ = ["addr", "chain_matmul", "rsub", "vdot"]

_DTYPE_NAMES = {"float32": "Float", "int64": "Long", "bool": "Bool"}


def _check_tensor(value, name, arg):
    if not isinstance(value, _tensor()):
        raise TypeError(f"{name}(): argument '{arg}' must be a Tensor, got "
                        f"{type(value).__name__}")


def vdot(input, other):
    """The dot product sum_i input_i * other_i of two 1-D tensors of one size and dtype
    (torch.vdot; pyrt has no complex numbers to conjugate)."""
    _check_tensor(input, "vdot", "input")
    _check_tensor(other, "vdot", "other")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and "
                           f"src [{other.shape[0]}] to have the same number of elements, but "
                           f"got {input.shape[0]} and {other.shape[0]} elements respectively")
    if input.dtype != other.dtype:
        names = [_DTYPE_NAMES.get(str(t.dtype), str(t.dtype)) for t in (input, other)]
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{names[0]} and {names[1]}")
    return input.dot(other)


def _check_factor(value, name, integral):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"argument '{name}' must be a number, got {type(value).__name__}")
    if integral and not isinstance(value, numbers.Integral):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           f"floating point number.")


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * the outer product of the 1-D vec1 and vec2, input broadcast to
    (len(vec1), len(vec2)); with beta = 0 input's values (nan and inf too) are ignored."""
    for value, arg in ((input, "input"), (vec1, "vec1"), (vec2, "vec2")):
        _check_tensor(value, "addr", arg)
    for value, arg in ((vec1, "vec1"), (vec2, "vec2")):
        if value.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {arg}, but got {value.ndim}-D")
    integral = "f" not in (_kind(input), _kind(vec1), _kind(vec2))
    _check_factor(beta, "beta", integral)
    _check_factor(alpha, "alpha", integral)
    shape = (vec1.shape[0], vec2.shape[0])
    base = input.expand(*shape)
    product = vec1.outer(vec2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (base if beta == 1 else base * beta)


def chain_matmul(*matrices):
    """The product of the 2-D `matrices`, multiplied in the order that takes the fewest
    multiplications (torch.chain_matmul, deprecated there for torch.linalg.multi_dot)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for k, m in enumerate(matrices):
        _check_tensor(m, "chain_matmul", f"matrices[{k}]")
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    for k in range(len(matrices) - 1):
        a, b = matrices[k], matrices[k + 1]
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {k} and {k + 1} with shapes "
                               f"{list(a.shape)} and {list(b.shape)} cannot be multiplied")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


def rsub(input, other, *, alpha=1):
    """other - alpha * input, input a tensor and other a tensor or a number (torch.rsub)."""
    _check_tensor(input, "rsub", "input")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"rsub(): argument 'alpha' must be a number, got "
                        f"{type(alpha).__name__}")
    if not isinstance(alpha, numbers.Integral) and "f" not in (_kind(input), _kind(other)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    scaled = input if alpha == 1 else input * alpha
    return other - scaled
