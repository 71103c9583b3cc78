"""torch's legacy tensor types: pyrt.FloatTensor, LongTensor, BoolTensor, ... and
pyrt.cuda.FloatTensor, ...: classes whose instances are the tensors of one dtype on one
device, as torch.FloatTensor is.

A legacy type is not a subclass of Tensor: its metaclass, TensorType (torch.tensortype),
makes ``isinstance(t, pyrt.FloatTensor)`` true for a float32 tensor on the CPU (a Parameter
included) and calling the type a legacy constructor:

- ``FloatTensor()``: an empty 1-d tensor;
- ``FloatTensor(2, 3)`` or ``FloatTensor(size=(2, 3))``: a tensor of that size, which torch
  leaves uninitialised and pyrt fills with zeros;
- ``FloatTensor([1, 2])`` (a list, a tuple or a NumPy array): a tensor of that data, cast to
  the type's dtype (``LongTensor([1.5])`` truncates, as torch does); pyrt's shapes are plain
  tuples, so a shape goes as ints or as ``size=``, never as one tuple;
- ``FloatTensor(t)``: a tensor sharing the memory of `t`, which must have the type's dtype
  and device (detached from the graph, as ``t.new(t)``).

``device=`` names the device, which must be the type's. ``t.type(pyrt.LongTensor)`` casts to
a type. pyrt holds float32, int64 and bool tensors, and float64 and int32 ones for storage
(x.double(), x.int()); the types of the dtypes it lacks (Half, BFloat16, Byte, Char, Short)
exist, match no tensor and refuse to construct with a TypeError.
"""

import numbers

import numpy as np

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor", "ShortTensor", "TensorType", "cast",
]

# torch's types, by name: their dtype (NumPy has no bfloat16: the name stands for it)
DTYPES = {
    "FloatTensor": np.dtype(np.float32), "DoubleTensor": np.dtype(np.float64),
    "HalfTensor": np.dtype(np.float16), "BFloat16Tensor": "bfloat16",
    "LongTensor": np.dtype(np.int64), "IntTensor": np.dtype(np.int32),
    "ShortTensor": np.dtype(np.int16), "CharTensor": np.dtype(np.int8),
    "ByteTensor": np.dtype(np.uint8), "BoolTensor": np.dtype(np.bool_),
}
# the dtypes of tensors pyrt makes (the others of DTYPES it lacks)
HELD = {np.dtype(t) for t in (np.float32, np.float64, np.int64, np.int32, np.bool_)}


class TensorType(type):
    """The metaclass of the legacy types (torch.tensortype): instance checks by dtype and
    device, and the legacy constructor (see the module's text)."""

    def __instancecheck__(cls, obj):
        from pyrt.tensor import Tensor

        return (isinstance(obj, Tensor) and obj.dtype == cls.dtype
                and obj.is_cuda == cls.is_cuda)

    def __call__(cls, *args, device=None, size=None):
        from pyrt.tensor import Tensor, _check_device, tensor, zeros

        cls._check_held(cls.__name__)
        where = "cuda" if cls.is_cuda else "cpu"
        if device is not None and _check_device(device).split(":")[0] != where:
            raise RuntimeError(f"legacy constructor expects device type: {where} but device "
                               f"type: {_check_device(device)} was passed")
        data = len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray))
        if size is not None:
            if args:
                raise TypeError(f"{cls.__name__}(): takes a size either as ints or as size=, "
                                f"not both")
            if not isinstance(size, (tuple, list)):
                raise TypeError(f"{cls.__name__}(): argument 'size' must be a tuple of ints, "
                                f"got {type(size).__name__}")
            args, data = tuple(size), False
        if len(args) == 1 and isinstance(args[0], Tensor):
            other = args[0]
            if other.dtype != cls.dtype or other.is_cuda != cls.is_cuda:
                raise TypeError(f"{cls.__name__}(): expected a tensor of dtype {cls.dtype} on "
                                f"{where}, got {other.dtype} on {other.device}")
            return Tensor(other._data)
        if data:
            return tensor(args[0], dtype=cls.dtype, device=where)
        for n in args:
            if not _is_int(n):
                if len(args) == 1:
                    raise TypeError(f"{cls.__name__}(): data must be a sequence (got "
                                    f"{type(n).__name__})")
                raise TypeError(f"{cls.__name__}(): argument 'size' must be a tuple of ints, "
                                f"but found an element of type {type(n).__name__}")
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                                   f"{list(args)}")
        return zeros(*(args or (0,)), dtype=cls.dtype, device=where)

    def _check_held(cls, op):
        """TypeError, naming `op`, for a type of a dtype pyrt does not hold."""
        if cls.dtype not in HELD:
            raise TypeError(f"{op}(): pyrt has no {cls.dtype} dtype: its tensors hold "
                            f"float32, int64 or bool (and float64 or int32, for storage)")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _make_type(name, is_cuda):
    from pyrt.layouts import strided

    return TensorType(name, (), {
        "__module__": "pyrt.cuda" if is_cuda else "pyrt",
        "__doc__": f"The {'CUDA' if is_cuda else 'CPU'} tensors of dtype {DTYPES[name]} "
                   f"(torch's legacy type; see pyrt.legacy_types).",
        "dtype": DTYPES[name], "is_cuda": is_cuda, "is_sparse": False, "layout": strided,
    })


def cast(tensor, tensor_type, non_blocking=False):
    """t.type(tensor_type): `tensor` as the dtype and on the device of a legacy type (itself
    if it is one already)."""
    del non_blocking  # (copies are synchronous)
    tensor_type._check_held("type")
    out = tensor.to(tensor_type.dtype)
    return out.to("cuda") if tensor_type.is_cuda else out.to("cpu")


CPU_TYPES = {name: _make_type(name, False) for name in DTYPES}
CUDA_TYPES = {name: _make_type(name, True) for name in DTYPES}  # pyrt.cuda's
FloatTensor = CPU_TYPES["FloatTensor"]
DoubleTensor = CPU_TYPES["DoubleTensor"]
HalfTensor = CPU_TYPES["HalfTensor"]
BFloat16Tensor = CPU_TYPES["BFloat16Tensor"]
LongTensor = CPU_TYPES["LongTensor"]
IntTensor = CPU_TYPES["IntTensor"]
ShortTensor = CPU_TYPES["ShortTensor"]
CharTensor = CPU_TYPES["CharTensor"]
ByteTensor = CPU_TYPES["ByteTensor"]
BoolTensor = CPU_TYPES["BoolTensor"]
