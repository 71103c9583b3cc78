"""A tensor's storage, as torch shows it: ``t.untyped_storage()`` is an UntypedStorage, the
bytes of the memory the tensor shares with its views; ``t.storage()`` is a TypedStorage, the
same memory read as elements of the tensor's dtype (torch's deprecated form; it warns as
torch does). Both are views: writing through them writes the tensor, and the reverse.

The memory is the flat array strided_views finds under the tensor (its owner's whole block),
so ``x[1:].untyped_storage().size()`` is the size of x's memory, as in torch."""

import numbers
import warnings

import numpy as np

from pyrt.functional import _xp
from pyrt.strided_views import _address, _storage

__all__ = ["TypedStorage", "UntypedStorage", "is_storage", "typed_storage", "untyped_storage"]

_TYPED_WARNING = ("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()")


class _Storage:
    """What both storages share: a flat array over the memory (`_array`)."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    @property
    def device(self):
        from pyrt.tensor import Tensor

        return Tensor(self._array[:0]).device

    @property
    def is_cuda(self):
        return not isinstance(self._array, np.ndarray)

    def data_ptr(self):
        """The address of the memory's first byte."""
        return _address(self._array)

    def size(self):
        return self._array.size

    def __len__(self):
        return self._array.size

    def nbytes(self):
        return self._array.nbytes

    def element_size(self):
        return self._array.itemsize

    def tolist(self):
        return self._array.tolist()

    def __iter__(self):
        return iter(self.tolist())

    def _index(self, idx):
        if isinstance(idx, bool) or not isinstance(idx, numbers.Integral):
            raise TypeError(f"can't index a {type(self).__name__} with "
                            f"{type(idx).__name__}")
        n = self._array.size
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return int(idx) % n if n else 0

    def __getitem__(self, idx):
        return self._array[self._index(idx)].item()

    def __setitem__(self, idx, value):
        if isinstance(idx, slice):
            self._array[idx] = value
        else:
            self._array[self._index(idx)] = value

    def fill_(self, value):
        """Every element (byte) set to `value`; returns the storage."""
        self._array[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        """source's bytes (a storage of the same byte size) written over this one's."""
        if not isinstance(source, _Storage):
            raise TypeError(f"copy_(): argument 'source' must be a storage, got "
                            f"{type(source).__name__}")
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {source.nbytes()} bytes")
        src = source._array.view(np.uint8)
        dst = self._array.view(np.uint8)
        if _xp(src) is not _xp(dst):
            src = src.get() if _xp(dst) is np else _xp(dst).asarray(src)
        dst[...] = src
        return self

    def cpu(self):
        """Itself on the CPU; a copy in host memory for a GPU storage."""
        if isinstance(self._array, np.ndarray):
            return self
        return type(self)._wrap(self._array.get())

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[{self._kind()} of size {len(self)}]"


class UntypedStorage(_Storage):
    """The bytes of a tensor's memory, as uint8 (``t.untyped_storage()``)."""

    __slots__ = ()

    @classmethod
    def _wrap(cls, array):
        return cls(array.view(np.uint8))

    @property
    def dtype(self):
        return np.dtype(np.uint8)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return UntypedStorage(self._array[idx])
        return super().__getitem__(idx)

    def _kind(self):
        return f"pyrt.storage.UntypedStorage(device={self.device})"


class TypedStorage(_Storage):
    """A tensor's memory read as elements of its dtype (``t.storage()``, deprecated in
    torch for untyped_storage)."""

    __slots__ = ()

    @classmethod
    def _wrap(cls, array):
        return cls(array)

    @property
    def dtype(self):
        return self._array.dtype

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            # torch's error type for this
            raise RuntimeError(  # noqa: TRY004
                "slices are only supported in UntypedStorage.__getitem__")
        return super().__getitem__(idx)

    def untyped(self):
        """The same memory as bytes."""
        return UntypedStorage._wrap(self._array)

    def _kind(self):
        return f"pyrt.storage.TypedStorage(dtype={self.dtype}, device={self.device})"


def untyped_storage(tensor):
    """The bytes of the memory `tensor` shares with its views."""
    return UntypedStorage._wrap(_storage(tensor._data)[0])


def typed_storage(tensor):
    """The memory `tensor` shares with its views, as elements of its dtype (warns, as torch's
    Tensor.storage does: TypedStorage is deprecated)."""
    warnings.warn(_TYPED_WARNING, UserWarning, stacklevel=3)
    return TypedStorage._wrap(_storage(tensor._data)[0])


def is_storage(obj):
    """Whether `obj` is a storage (torch.is_storage)."""
    return isinstance(obj, _Storage)
