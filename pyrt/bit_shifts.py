"""bitwise_left_shift and bitwise_right_shift (<< and >>) of integer tensors, as PyTorch
defines them for every shift count: a count below 0 or of 64 and more shifts every bit out,
leaving 0 (left) or the sign, 0 or -1 (right, an arithmetic shift). Bits shifted past the top
of an int64 are lost (the result wraps). The dtype is int64; bool with bool and floating-point
operands are refused, as in PyTorch. Outside autograd: integer tensors carry no gradient."""

import numpy as np

from pyrt.functional import _describe, _kind
from pyrt.pointwise import _binary_setup

__all__ = ["bitwise_left_shift", "bitwise_right_shift"]

_I64 = np.dtype(np.int64)
_BITS = 64


def _shift(name, a, b):
    from pyrt.tensor import Tensor

    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}(): input or other must be a Tensor, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    kinds = []
    for x, arg in ((a, "input"), (b, "other")):
        kind = _kind(x)
        if kind is None:
            raise TypeError(f"{name}(): {arg} must be a Tensor, an int or a bool, got "
                            f"{_describe(x)}")
        kinds.append(kind)
    if "f" in kinds or kinds == ["b", "b"]:
        what = "Float" if "f" in kinds else "Bool"
        raise NotImplementedError(f'"{name}" not implemented for \'{what}\': it takes integer '
                                  f'tensors')
    xp, ad, bd = _binary_setup(name, a, b, _I64)
    inside = (bd >= 0) & (bd < _BITS)
    counts = xp.where(inside, bd, 0)  # a count out of range is undefined to C's shift
    if name == "bitwise_left_shift":
        out = xp.where(inside, xp.left_shift(ad, counts), 0)
    else:
        out = xp.where(inside, xp.right_shift(ad, counts), xp.where(ad < 0, -1, 0))
    return Tensor(xp.asarray(out, dtype=_I64))


def bitwise_left_shift(input, other):
    """input << other, elementwise (0 where other < 0 or other >= 64)."""
    return _shift("bitwise_left_shift", input, other)


def bitwise_right_shift(input, other):
    """input >> other, elementwise, arithmetic (the sign where other < 0 or other >= 64)."""
    return _shift("bitwise_right_shift", input, other)
