"""Tensors over memory that other code owns: frombuffer (a Python buffer) and DLPack
(from_dlpack, to_dlpack, and the ``__dlpack__`` protocol), as torch's. The tensor shares the
memory, not a copy: a write through either side shows in the other. CPU memory becomes a
NumPy array, CUDA memory a CuPy one (which loads pyrt's CUDA backend)."""

import ctypes
import warnings

import numpy as np

__all__ = ["from_dlpack", "frombuffer", "to_dlpack"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_))
_CPU, _CUDA = 1, 2  # DLPack's device types (kDLCPU, kDLCUDA)


def _checked(array, name):
    from pyrt.tensor import Tensor

    if array.dtype not in _DTYPES:
        raise TypeError(f"{name}(): pyrt tensors hold float32, int64 or bool, got "
                        f"{array.dtype}: convert it first")
    return Tensor(array)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor of `count` elements of `dtype` (all that fit when -1) read from `buffer`
    (an object with the buffer protocol) from byte `offset` on, sharing its memory. A
    read-only buffer gives a tensor that cannot be written (with torch's warning)."""
    from pyrt.tensor import _check_can_require_grad, _checked_dtype

    dtype = _checked_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise TypeError(f"frombuffer(): argument 'buffer' must implement the buffer protocol, "
                        f"got {type(buffer).__name__}") from None
    length = view.nbytes
    if not 0 <= offset < max(length, 1) and not (offset == 0 and length == 0):
        raise ValueError(f"both buffer length ({length}) and offset ({offset}) must be "
                         f"non-negative, offset less than the length")
    available = (length - offset) // dtype.itemsize
    if count == -1:
        if (length - offset) % dtype.itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes after offset) must be a "
                             f"multiple of element size ({dtype.itemsize})")
        count = available
    elif count <= 0 or count > available:
        raise ValueError(f"requested buffer length ({count} * {dtype.itemsize} bytes) after "
                         f"offset ({offset}) must not be greater than actual buffer length "
                         f"({length})")
    if view.readonly:
        warnings.warn("The given buffer is not writable: writing to the tensor is an error.",
                      UserWarning, stacklevel=2)
    tensor = _checked(np.frombuffer(view, dtype, count, offset), "frombuffer")
    if requires_grad:
        _check_can_require_grad(dtype)
        tensor.requires_grad_()
    return tensor


class _Capsule:
    """A DLPack capsule (to_dlpack's) as an object with the ``__dlpack__`` protocol, which
    NumPy's and CuPy's from_dlpack take."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        # DLManagedTensor begins with DLTensor {void *data; DLDevice {int32 type, int32 id}}
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        try:
            address = get(self.capsule, b"dltensor")
        except ValueError:
            raise RuntimeError("from_dlpack(): the DLPack capsule was used already (each "
                               "can be consumed once)") from None
        device = (ctypes.c_int32 * 2).from_address(address + ctypes.sizeof(ctypes.c_void_p))
        return int(device[0]), int(device[1])


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of `ext_tensor`: an object with ``__dlpack__`` (a torch
    tensor, a NumPy or CuPy array) or a DLPack capsule."""
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__") or not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack "
                        f"capsule, got {type(ext_tensor).__name__}")
    device_type = ext_tensor.__dlpack_device__()[0]
    if device_type == _CPU:
        return _checked(np.from_dlpack(ext_tensor), "from_dlpack")
    if device_type == _CUDA:
        from pyrt import cuda

        return _checked(cuda.require().from_dlpack(ext_tensor), "from_dlpack")
    raise RuntimeError(f"from_dlpack(): pyrt takes CPU and CUDA memory, got DLPack device "
                       f"type {device_type}")


def to_dlpack(tensor):
    """A DLPack capsule of `tensor`'s memory, for another library's from_dlpack."""
    from pyrt.tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be a Tensor, got "
                        f"{type(tensor).__name__}")
    return dlpack(tensor)


def dlpack(tensor, **kwargs):
    """Tensor.__dlpack__: refused for a tensor that requires grad, as in torch."""
    if tensor._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use "
                           "tensor.detach()")
    return tensor._data.__dlpack__(**kwargs)
