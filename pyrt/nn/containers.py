"""Parameter containers, as torch.nn's: ParameterList and ParameterDict hold Parameters
under the names "0", "1", ... or under string keys, registered on the container itself, so
that a module holding one sees them in parameters(), state_dict() and to() (a plain list or
dict would hide them). A Tensor put in is wrapped as a Parameter sharing its memory; other
objects are kept as plain attributes, as in PyTorch. Neither container can be called."""

import numbers
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.tensor import Tensor

__all__ = ["ParameterDict", "ParameterList"]


def _as_parameter(value):
    """`value`, with a Tensor that is not a Parameter wrapped as one."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _entry_repr(key, value):
    """One line of a container's repr: "(key): Parameter containing: [float32 of size 2x3]",
    with the device on the GPU."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(n) for n in value.shape)
    device = f" ({value.device})" if value.device != "cpu" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"  ({key}): {kind} containing: [pyrt.{value.dtype} of size {size}{device}]"


class _Uncallable(Module):
    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} should not be called.")


class ParameterList(_Uncallable):
    """A list of Parameters (len, iteration, indexing from either end and by slices,
    assignment, append, extend, +=)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _index(self, index):
        """`index` (an int, negative counting from the end) as the name of its entry."""
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"ParameterList indices must be integers or slices, not "
                            f"{type(index).__name__}")
        index = int(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(len(self))[index]])
        return getattr(self, self._index(index))

    def __setitem__(self, index, value):
        setattr(self, self._index(index), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        """Add `value` at the end; returns the list."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append each element of the iterable `values` (not a Tensor); returns the list."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(i, value) for i, value in enumerate(self))


class ParameterDict(_Uncallable):
    """Parameters under string keys, in the order they were put in; a dict's interface:
    indexing, ``in``, len, iteration over the keys, keys(), values(), items(), get(),
    setdefault(), update(), pop(), popitem(), copy(), fromkeys(), clear() and |."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}  # the keys in insertion order (the values live on the module)
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _check_key(key):
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        self._check_key(key)
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._check_key(key)
        if key not in self._keys:
            # a new key may not be empty, hold a ".", or shadow an attribute or a method
            self._check_name(key, "parameter", self._parameters)
        setattr(self, key, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key):
        self._check_key(key)
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def values(self):
        return (self[key] for key in self._keys)

    def items(self):
        return ((key, self[key]) for key in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        """The value under `key`, first set to `default` if there is none."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        """Remove the value under `key` and return it (KeyError if there is none)."""
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        """Remove the last (key, value) put in and return it."""
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def copy(self):
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with each of `keys` set to `default`."""
        return ParameterDict((key, default) for key in keys)

    def update(self, parameters):
        """Add or replace entries from an OrderedDict or a ParameterDict (in its order), from
        another mapping (in sorted key order, as PyTorch), or from an iterable of (key,
        value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParametersDict.update should be called with an iterable of "
                            f"key/value pairs, but got {type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for i, pair in enumerate(parameters):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{i} should be "
                                    f"Iterable; is {type(pair).__name__}")
                pair = tuple(pair)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{i} has length "
                                     f"{len(pair)}; 2 is required")
                pairs.append(pair)
        for key, value in pairs:
            self[key] = value

    def __or__(self, other):
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other):
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(_entry_repr(key, value) for key, value in self.items())
