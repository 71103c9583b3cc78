"""What a Tensor says about its memory and type, as torch.Tensor's methods: data_ptr,
storage_offset, nbytes, type() (the name torch gives the tensor's type, or a cast), the
legacy constructor new(), the casts to dtypes pyrt has not (byte, char, short, half,
bfloat16: a TypeError), and register_post_accumulate_grad_hook."""

import numbers

import numpy as np

from pyrt.autograd import register_post_accumulate_hook
from pyrt.dtype_info import TENSOR_TYPE_NAMES

_DTYPE_OF_TYPE_NAME = {name: dtype for dtype, name in TENSOR_TYPE_NAMES.items()}
# the types x.type(...) casts to: pyrt's dtypes, and int32 and float64, which x.int() and
# x.double() make
_CASTABLE = {np.dtype(t) for t in (np.float32, np.int64, np.bool_, np.int32, np.float64)}


def _tensor_class():
    from pyrt.tensor import Tensor

    return Tensor


def data_ptr(tensor):
    """The address of the tensor's first element."""
    data = tensor._data
    if isinstance(data, np.ndarray):
        return int(data.__array_interface__["data"][0])
    return int(data.data.ptr)  # a CuPy array


def _root(array):
    """The array that owns `array`'s memory (the end of its chain of bases)."""
    while isinstance(getattr(array, "base", None), type(array)):
        array = array.base
    return array


def storage_offset(tensor):
    """How many elements into the memory it shares the tensor's first element lies (0 for
    a tensor that owns its memory; 3 for x[1:] of a 2 x 3 x)."""
    data = tensor._data
    root = _root(data)
    if root is data:
        return 0
    return (data_ptr(tensor) - data_ptr(_tensor_class()(root))) // data.itemsize


def type_name(tensor):
    """torch's name of the tensor's type: "torch.FloatTensor", "torch.cuda.LongTensor", ..."""
    name = TENSOR_TYPE_NAMES.get(tensor.dtype)
    if name is None:
        raise TypeError(f"type(): torch has no tensor type for dtype {tensor.dtype}")
    return f"torch.{'cuda.' if tensor.is_cuda else ''}{name}"


def cast_to_type(tensor, dtype, non_blocking=False):
    """x.type(dtype): the tensor as `dtype` (itself if it has it already), a dtype or a name
    such as "torch.LongTensor" ("torch.cuda.FloatTensor" moves it to the GPU too)."""
    from pyrt.legacy_types import TensorType, cast

    if isinstance(dtype, TensorType):
        return cast(tensor, dtype)
    del non_blocking  # (copies are synchronous)
    device = None
    if isinstance(dtype, str):
        name = dtype
        if name.startswith("torch.cuda."):
            device, name = "cuda", name[len("torch.cuda."):]
        elif name.startswith("torch."):
            name = name[len("torch."):]
        if name not in _DTYPE_OF_TYPE_NAME:
            raise ValueError(f"type(): invalid type: {dtype!r}")
        dtype = _DTYPE_OF_TYPE_NAME[name]
    else:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"type(): dtype must be a dtype or a type name such as "
                            f"'torch.FloatTensor', got {dtype!r:.80}") from None
    if dtype not in _CASTABLE:
        _unsupported(dtype, "type")
    out = tensor.to(dtype)
    return out if device is None else out.to(device)


def _unsupported(dtype, name):
    raise TypeError(f"{name}(): pyrt has no {dtype} dtype: its tensors hold float32, int64 "
                    f"or bool (see .float(), .long(), .bool())")


def unsupported_cast(name, dtype):
    """The TypeError of byte(), char(), short(), half() and bfloat16()."""
    _unsupported(dtype, name)


def new(tensor, args):
    """torch's legacy constructor x.new(...): with no argument an empty 1-d tensor, with
    ints an uninitialised tensor of that size, with a list or tuple of numbers a tensor of
    them (as torch makes of a tuple; pyrt's shapes are plain tuples, so a size goes as
    ints: x.new(*shape)); x's dtype and device either way. A tensor of x's dtype and device
    is returned as a tensor sharing its memory."""
    Tensor = _tensor_class()
    from pyrt.tensor import empty
    from pyrt.tensor import tensor as make_tensor

    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != tensor.dtype or other.device != tensor.device:
            raise TypeError(f"new(): expected a tensor of dtype {tensor.dtype} on "
                            f"{tensor.device}, got {other.dtype} on {other.device}")
        return Tensor(other._data)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return make_tensor(list(args[0]), dtype=tensor.dtype, device=tensor.device)
    for size in args:
        if not _is_int(size):
            raise TypeError(f"new(): data must be a sequence (got {type(size).__name__})")
    return empty(*(args or (0,)), dtype=tensor.dtype, device=tensor.device)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def register_post_accumulate_grad_hook(tensor, hook):
    """Run hook(tensor) after backward() has added a gradient to the .grad of `tensor`, a
    leaf that requires grad (once per backward, after its other hooks). Returns a handle
    whose remove() takes it off."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not tensor.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook(): hook must be callable, got "
                        f"{type(hook).__name__}")
    return register_post_accumulate_hook(tensor, hook)
