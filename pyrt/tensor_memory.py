"""What a tensor says and does about its memory beyond its values, as torch's Tensor methods:
``set_`` (point the tensor at another tensor's or storage's memory), ``is_set_to``,
``dim_order``, the deprecated out-of-place ``resize``/``resize_as``, ``as_subclass``,
``module_load``, ``record_stream``; and torch's ``empty_permuted`` and ``from_file``."""

import numbers
import warnings

import numpy as np

from pyrt.functional import _make, _xp
from pyrt.strided_views import _address, _storage

__all__ = ["as_subclass", "dim_order", "empty_permuted", "from_file", "is_set_to",
           "module_load", "record_stream", "resize", "resize_as", "set_"]


def _ints(values, name, fn):
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        values = (values,)
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but got "
                        f"{values!r:.60}")
    return tuple(int(v) for v in values)


def set_(tensor, source=None, storage_offset=0, size=None, stride=None):
    """`tensor` pointed at `source`'s memory in place: with a tensor source alone, its
    array (shape, strides and all); with a storage or a tensor plus `size` (and `stride`,
    C order if None), the view of that memory at `storage_offset` elements; with nothing,
    an empty tensor. The two then share memory; no gradient passes between them."""
    from pyrt.storage import TypedStorage, UntypedStorage
    from pyrt.tensor import Tensor

    if tensor._requires_grad and tensor._backward is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if tensor._backward is not None:
        raise RuntimeError("set_(): pyrt cannot re-point a tensor recorded in a graph; use "
                           "its detach()")
    xp = _xp(tensor._data)
    if source is None:
        tensor._data = xp.empty((0,), tensor.dtype)
        return tensor
    if isinstance(source, Tensor):
        if source.dtype != tensor.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of "
                               f"type {tensor.dtype}")
        if size is None:
            tensor._data = source._data
            return tensor
        flat = _storage(source._data)[0]
    elif isinstance(source, (TypedStorage, UntypedStorage)):
        flat = source._array.view(np.uint8).view(tensor.dtype)
        if size is None:
            size = (flat.size,)
    else:
        raise TypeError(f"set_(): argument 'source' must be a Tensor or a storage, got "
                        f"{type(source).__name__}")
    if _xp(flat) is not xp:
        raise RuntimeError(f"set_(): source is on another device than the tensor "
                           f"({tensor.device})")
    tensor._data = _view(flat, storage_offset, _ints(size, "size", "set_"), stride)
    return tensor


def _view(flat, offset, size, stride):
    """The view of the 1-D `flat` with `size`, `stride` (elements; C order if None) from
    element `offset`, refused past flat's end as torch refuses it."""
    if isinstance(offset, bool) or not isinstance(offset, numbers.Integral) or offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if stride is None:
        stride, step = [], 1
        for n in reversed(size):
            stride.insert(0, step)
            step *= max(n, 1)
    stride = _ints(stride, "stride", "set_")
    if len(stride) != len(size):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} and "
                           f"{len(size)}")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"set_(): size {size} and stride {stride} must be non-negative")
    end = offset + (sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0)
    if end > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {flat.itemsize} requiring a storage "
                           f"size of {end * flat.itemsize} are out of bounds for storage of "
                           f"size {flat.nbytes}")
    strides = tuple(s * flat.itemsize for s in stride)
    return _xp(flat).lib.stride_tricks.as_strided(flat[offset:] if offset < flat.size
                                                  else flat[:0], size, strides)


def is_set_to(tensor, other):
    """Whether the two tensors view the same memory the same way: same first element, shape
    and strides."""
    a, b = tensor._data, other._data
    return (type(a) is type(b) and _address(a) == _address(b) and a.shape == b.shape
            and a.strides == b.strides and a.dtype == b.dtype)


def dim_order(tensor, ambiguity_check=False):
    """The dims from outermost to innermost in memory: sorted by stride, largest first (ties
    in their logical order). With `ambiguity_check` True, a RuntimeError where the order is
    not unique (a size-1 dim, or two equal strides)."""
    if not isinstance(ambiguity_check, bool):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
    strides = tensor.stride()
    order = tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))
    if ambiguity_check and (1 in tensor.shape or len(set(strides)) < len(strides)):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    return order


def resize(tensor, sizes):
    """torch's deprecated out-of-place resize: `tensor` reshaped to `sizes` (same number of
    elements) in a copy; the gradient is reshaped back."""
    from pyrt.tensor import _shape

    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=3)
    sizes = _shape(sizes)
    numel = int(np.prod(sizes, dtype=np.int64))
    if numel != tensor.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), "
            f"but the given tensor has a size of {'x'.join(map(str, tensor.shape))} "
            f"({tensor.numel()} elements). autograd's resize can only change the shape of a "
            f"given tensor, while preserving the number of elements. ")
    shape = tensor.shape
    out = _xp(tensor._data).array(tensor._data, order="C", copy=True).reshape(sizes)
    return _make(out, (tensor,), lambda g: (g.reshape(shape),), reads=False)


def resize_as(tensor, other):
    """resize to other's shape (deprecated, as torch's)."""
    from pyrt.tensor import _other_tensor

    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(tensor, _other_tensor(other, "resize_as").shape)


def as_subclass(tensor, cls):
    """A `cls` instance (a subclass of Tensor) sharing tensor's memory and standing for it in
    the graph: its gradient passes back to `tensor`."""
    from pyrt.tensor import Tensor

    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = object.__new__(cls)
    alias = _make(tensor._data, (tensor,), lambda g: (g,), reads=False)
    for slot in ("_data", "_grad", "_requires_grad", "_parents", "_backward"):
        setattr(out, slot, getattr(alias, slot))
    if alias._backward is not None:
        out._epoch = alias._epoch
    return out


def module_load(tensor, other, assign=False):
    """What Module.load_state_dict sets a parameter to (torch's default): `other` detached if
    `assign`, else `other` copied into `tensor`, detached."""
    if assign:
        return other.detach()
    from pyrt.grad_mode import no_grad

    with no_grad():
        tensor.copy_(other)
    return tensor.detach()


def record_stream(tensor, stream):
    """A no-op: pyrt frees GPU memory only when no tensor holds it, whatever stream used it;
    the tensor must be a CUDA one, as in torch."""
    if tensor.is_cpu:
        raise RuntimeError("record_stream(): expected a CUDA tensor, got a CPU one")


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` laid out in memory in the dim order
    `physical_layout` (outermost first): torch.empty(size[physical_layout]) permuted back."""
    from pyrt.tensor import Tensor, empty

    size = _ints(size, "size", "empty_permuted")
    physical_layout = _ints(physical_layout, "physical_layout", "empty_permuted")
    if len(size) != len(physical_layout):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(physical_layout)}")
    for i, d in enumerate(physical_layout):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative "
                               f"dims not currently supported; file an issue if you want it.")
    if len(set(physical_layout)) != len(physical_layout):
        raise RuntimeError("Duplicate dim not allowed")
    physical = empty([size[d] for d in physical_layout], dtype=dtype, device=device)
    inverse = [physical_layout.index(d) for d in range(len(size))]
    return Tensor(physical._data.transpose(inverse), requires_grad)  # a view: strides kept


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """A 1-D tensor of `size` elements of `dtype` (float32 by default) read from the file:
    with `shared`, mapped onto it (writes reach the file); else a copy of its first bytes."""
    from pyrt.tensor import Tensor, _checked_dtype, _move

    dtype = np.dtype(np.float32) if dtype is None else _checked_dtype(dtype)
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise ValueError(f"from_file(): argument 'size' must be a non-negative int, got "
                         f"{size!r}")
    import os

    available = os.path.getsize(filename)
    if size * dtype.itemsize > available:
        raise RuntimeError(f"unable to mmap {size * dtype.itemsize} bytes from file "
                           f"<{filename}>: file too short ({available} bytes)")
    if shared:
        data = np.memmap(filename, dtype=dtype, mode="r+", shape=(size,))
        data = data.view(np.ndarray)
    else:
        data = np.fromfile(filename, dtype=dtype, count=size)
    out = Tensor(data)
    return out if device is None or str(device) == "cpu" else Tensor(_move(data, device))
