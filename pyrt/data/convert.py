"""default_convert, as torch.utils.data's: NumPy arrays in a sample made Tensors, the rest left
as it is. DataLoader applies it to each sample when it does not batch (``batch_size=None``)
and no collate_fn is given."""

import copy
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence

import numpy as np

from pyrt.data.dataset import batch_dtype
from pyrt.tensor import Tensor

__all__ = ["default_convert"]


def _converted_array(data):
    """A NumPy array or scalar as a Tensor (floats float32, integers and bools int64, as
    DataLoader batches them); string and object arrays are left as they are, as in torch."""
    if data.dtype.kind in "OSUV":
        return data
    dtype = batch_dtype(data.dtype)
    if dtype is None:
        raise TypeError(f"default_convert: pyrt tensors hold float32, int64 and bool values; a "
                        f"NumPy value of dtype {data.dtype} cannot be made one")
    return Tensor(np.asarray(data, dtype=dtype))


def default_convert(data):
    """`data` with each NumPy array (or NumPy scalar) in it made a Tensor, looking into
    mappings and sequences; Tensors, Python numbers and strings are returned as they are.

    As in torch, a mutable mapping or sequence is copied and its elements replaced, so its type
    is kept; an immutable one is rebuilt with its type where that works, and made a dict or
    list where it does not. A tuple stays a tuple (torch makes it a list), as it does in pyrt's
    default_collate; a namedtuple keeps its type.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)) and not isinstance(data, (np.str_,
                                                                            np.bytes_)):
        return _converted_array(data)
    if isinstance(data, Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, MutableMapping):
                clone = copy.copy(data)
                clone.update(converted)
                return clone
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple):
        parts = [default_convert(d) for d in data]
        return type(data)(*parts) if hasattr(data, "_fields") else tuple(parts)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        parts = [default_convert(d) for d in data]
        try:
            if isinstance(data, MutableSequence):
                clone = copy.copy(data)
                for i, part in enumerate(parts):
                    clone[i] = part
                return clone
            return type(data)(parts)
        except TypeError:
            return parts
    return data
