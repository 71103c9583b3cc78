"""torch.types's type aliases, for the annotations of ported code: ``Number``, ``_size``,
``Device``, ``_TensorOrTensors`` and the like, spelled with pyrt's classes."""

from collections.abc import Sequence
from typing import Union

from pyrt.devices import device as _device
from pyrt.tensor import Tensor

__all__ = ["Device", "Number", "Storage"]

_bool, _int, _float, _complex, _str, _bytes = bool, int, float, complex, str, bytes
_dtype = object  # a NumPy dtype (pyrt.float32) or pyrt's names of the others
_layout = object
_size = Union[tuple[int, ...], list[int]]
_symsize = _size

Number = Union[int, float, bool]
_Number = (int, float, bool)  # for isinstance, as torch's
Device = Union[_device, str, int, None]
Storage = object
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, Sequence[Union[Tensor, None]]]
