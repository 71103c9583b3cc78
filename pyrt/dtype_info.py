"""What PyTorch says about dtypes and tensors' kinds: finfo and iinfo (the limits of a
floating point or integer dtype), promote_types, result_type and can_cast (torch's
promotion rules, which differ from NumPy's: int64 with float32 is float32, not float64),
broadcast_shapes, typename, and the predicates is_floating_point, is_complex, is_signed,
is_nonzero and is_same_size.

pyrt's dtypes are NumPy's dtype objects (pyrt.float32, pyrt.int64, pyrt.bool); these
functions take any NumPy real or bool dtype, as a tensor may hold one (x.double())."""

import numbers

import numpy as np

from pyrt.tensor import Tensor, _checked_dtype

__all__ = [
    "broadcast_shapes",
    "can_cast",
    "finfo",
    "iinfo",
    "is_complex",
    "is_floating_point",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "promote_types",
    "result_type",
    "typename",
]

_FLOAT32 = np.dtype(np.float32)
# torch's names of the tensor types, by dtype: x.type() is "torch.FloatTensor"
TENSOR_TYPE_NAMES = {
    np.dtype(np.float32): "FloatTensor",
    np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.float16): "HalfTensor",
    np.dtype(np.int64): "LongTensor",
    np.dtype(np.int32): "IntTensor",
    np.dtype(np.int16): "ShortTensor",
    np.dtype(np.int8): "CharTensor",
    np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.bool_): "BoolTensor",
}


def _dtype(value, name, argument):
    try:
        return np.dtype(value)
    except TypeError:
        raise TypeError(f"{name}(): argument '{argument}' must be a dtype such as "
                        f"pyrt.float32, got {value!r:.80}") from None


def _format(value):
    """A limit as torch's finfo and iinfo reprs print it (six significant digits)."""
    return f"{value:g}"


class finfo:
    """The limits of a floating point dtype (pyrt.float32 when none is given), as
    torch.finfo: bits, eps (the step from 1 to the next float), max, min (the lowest
    finite value), tiny and smallest_normal (the smallest positive normal number),
    resolution (10 ** -precision, precision the decimal digits the dtype holds) and dtype
    (its name)."""

    def __init__(self, type=None):
        dtype = _FLOAT32 if type is None else _dtype(type, "finfo", "type")
        if dtype.kind != "f":
            raise TypeError(f"finfo() requires a floating point input type, got {dtype}: "
                            f"use pyrt.iinfo for integer types")
        info = np.finfo(dtype)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dtype.name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={_format(self.resolution)}, min={_format(self.min)}, "
                f"max={_format(self.max)}, eps={_format(self.eps)}, smallest_normal="
                f"{_format(self.smallest_normal)}, tiny={_format(self.tiny)}, "
                f"dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype, as torch.iinfo: bits, max, min and dtype (its name).
    bool is not an integer type here, as in torch."""

    def __init__(self, type):
        dtype = _dtype(type, "iinfo", "type")
        if dtype.kind == "b":
            raise TypeError("bool is not supported by iinfo")
        if dtype.kind not in "iu":
            raise TypeError(f"iinfo() requires an integer input type, got {dtype}: use "
                            f"pyrt.finfo for floating point types")
        info = np.iinfo(dtype)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dtype.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={_format(float(self.min))}, max={_format(float(self.max))}, " \
               f"dtype={self.dtype})"


# ---- promotion -------------------------------------------------------------------------------

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}  # bool < integer < floating point


def promote_types(type1, type2):
    """The smallest dtype both `type1` and `type2` convert to without losing their kind, as
    torch promotes: the higher kind (bool < integer < floating point) wins, and within a
    kind the wider dtype (uint8 with int8 is int16). int64 with float32 is float32, where
    NumPy would widen to float64."""
    a = _checked_dtype(_dtype(type1, "promote_types", "type1"))
    b = _checked_dtype(_dtype(type2, "promote_types", "type2"))
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if ca != cb:
        return a if ca > cb else b
    if np.dtype(np.uint64) in (a, b) and a != b:
        raise TypeError(f"Promotion for uint64 types is not supported, got {a} and {b}")
    return np.promote_types(a, b)


def _operand_dtype(operand, argument):
    """(dtype, rank) of an operand of result_type: rank 2 for a tensor with dimensions, 1
    for a 0-d tensor, 0 for a number (torch's priority between them)."""
    if isinstance(operand, Tensor):
        return operand.dtype, 2 if operand.ndim else 1
    if isinstance(operand, (bool, np.bool_)):
        return np.dtype(np.bool_), 0
    if isinstance(operand, numbers.Integral):
        return np.dtype(np.int64), 0
    if isinstance(operand, numbers.Real):
        return _FLOAT32, 0  # a Python float is of the default dtype
    raise TypeError(f"result_type(): argument '{argument}' must be a Tensor or a real number, "
                    f"got {type(operand).__name__}")


def _combine(higher, lower):
    """torch's combine_categories: `higher` (a dtype of higher priority, or None) keeps its
    dtype unless `lower` is of a higher kind, which promotes them."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def result_type(tensor, other):
    """The dtype of an arithmetic op on `tensor` and `other` (tensors or numbers), as torch
    computes it: tensors with dimensions first, then 0-d tensors, then numbers, and an
    operand of lower priority counts only when it is of a higher kind (a float number with
    an int64 tensor gives float32; a 0-d int64 tensor with an int32 tensor, int32)."""
    ranked = [None, None, None]
    for operand, argument in ((tensor, "tensor"), (other, "other")):
        dtype, rank = _operand_dtype(operand, argument)
        ranked[rank] = dtype if ranked[rank] is None else promote_types(ranked[rank], dtype)
    numbers_, zero_dim, dimensioned = ranked
    return _combine(dimensioned, _combine(zero_dim, numbers_))


def can_cast(from_, to):
    """Whether torch's casting rules allow `from_` to `to` in an op's output: not floating
    point to integer, and nothing but bool to bool."""
    a = _checked_dtype(_dtype(from_, "can_cast", "from_"))
    b = _checked_dtype(_dtype(to, "can_cast", "to"))
    if a.kind == "f" and b.kind in "iu":
        return False
    return not (a.kind != "b" and b.kind == "b")


def broadcast_shapes(*shapes):
    """The shape tensors of `shapes` (tuples, or ints for 1-d shapes) broadcast to."""
    checked = []
    for i, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, numbers.Integral) else shape
        if not isinstance(shape, (tuple, list)) or not all(
                isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in shape):
            raise TypeError(f"broadcast_shapes(): shapes[{i}] must be an int or a tuple of "
                            f"ints, got {shape!r:.80}")
        if any(n < 0 for n in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {shape}")
        checked.append(tuple(int(n) for n in shape))
    try:
        return np.broadcast_shapes(*checked)
    except ValueError:
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{', '.join(str(s) for s in checked)}") from None


def typename(obj):
    """The name of obj's type as torch writes it: "torch.FloatTensor" for a float32 tensor
    (x.type()), else module.qualname (a builtin's bare name)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


# ---- predicates --------------------------------------------------------------------------------


def _checked_tensor(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return input


def is_floating_point(input):
    """Whether `input` holds floating point numbers."""
    return _checked_tensor(input, "is_floating_point").dtype.kind == "f"


def is_complex(input):
    """Whether `input` holds complex numbers: never, as pyrt has no complex dtype."""
    return _checked_tensor(input, "is_complex").dtype.kind == "c"


def is_signed(input):
    """Whether `input`'s dtype holds negative numbers (not bool or unsigned integers)."""
    return _checked_tensor(input, "is_signed").dtype.kind in "if"


def is_nonzero(input):
    """Whether the single value of `input` is nonzero (a RuntimeError for any other number
    of values)."""
    data = _checked_tensor(input, "is_nonzero")._data
    if data.size != 1:
        what = "no values" if data.size == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return bool(data.reshape(()).item() != 0)


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    _checked_tensor(input, "is_same_size")
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' must be a Tensor, got "
                        f"{type(other).__name__}")
    return input.shape == other.shape
