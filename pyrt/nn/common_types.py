"""torch.nn.common_types's type aliases, for the annotations of ported layers: ``_size_2_t``
is an int or a pair of ints, ``_ratio_2_t`` a float or a pair of floats, and so on."""

from typing import TypeVar, Union

from pyrt.tensor import Tensor

T = TypeVar("T")
_scalar_or_tuple_any_t = Union[T, tuple[T, ...]]
_scalar_or_tuple_1_t = Union[T, tuple[T]]
_scalar_or_tuple_2_t = Union[T, tuple[T, T]]
_scalar_or_tuple_3_t = Union[T, tuple[T, T, T]]
_scalar_or_tuple_4_t = Union[T, tuple[T, T, T, T]]
_scalar_or_tuple_5_t = Union[T, tuple[T, T, T, T, T]]
_scalar_or_tuple_6_t = Union[T, tuple[T, T, T, T, T, T]]

_size_any_t = _scalar_or_tuple_any_t[int]
_size_1_t = _scalar_or_tuple_1_t[int]
_size_2_t = _scalar_or_tuple_2_t[int]
_size_3_t = _scalar_or_tuple_3_t[int]
_size_4_t = _scalar_or_tuple_4_t[int]
_size_5_t = _scalar_or_tuple_5_t[int]
_size_6_t = _scalar_or_tuple_6_t[int]

_size_any_opt_t = _scalar_or_tuple_any_t[Union[int, None]]
_size_2_opt_t = _scalar_or_tuple_2_t[Union[int, None]]
_size_3_opt_t = _scalar_or_tuple_3_t[Union[int, None]]

_ratio_2_t = _scalar_or_tuple_2_t[float]
_ratio_3_t = _scalar_or_tuple_3_t[float]
_ratio_any_t = _scalar_or_tuple_any_t[float]

_tensor_list_t = _scalar_or_tuple_any_t[Tensor]
_maybe_indices_t = _scalar_or_tuple_2_t[Tensor]
