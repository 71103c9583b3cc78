"""Tensor.apply_, map_ and map2_: a Python function applied to each element in place, as
torch's: CPU tensors only, outside autograd (refused for a tensor that requires grad), slow by
nature (one Python call per element)."""

import numbers

import numpy as np

__all__ = ["apply_", "map2_", "map_"]

_is_callable = callable


def _checked_target(self, name, function):
    if not _is_callable(function):
        raise TypeError(f"{name}(): callable must be callable, got {type(function).__name__}")
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    if not isinstance(self._data, np.ndarray):
        raise TypeError(f"{name}() only works on CPU tensors")


def _write(self, name, values):
    """values (Python numbers, in C order) written into self, converted to its dtype."""
    from pyrt.autograd import mark_modified

    for v in values:
        if not isinstance(v, (numbers.Real, np.bool_)):
            raise TypeError(f"{name}(): the function must return a real number, got "
                            f"{type(v).__name__}")
    self._data[...] = np.array(values, dtype=self._data.dtype).reshape(self._data.shape)
    mark_modified(self._data)
    return self


def _operand(self, other, name, position):
    """`other` broadcast to self's shape, as torch expands it (self's shape never changes)."""
    from pyrt.tensor import Tensor

    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument '{position}' must be Tensor, not "
                        f"{type(other).__name__}")
    if not isinstance(other._data, np.ndarray):
        raise TypeError(f"{name}() only works on CPU tensors")
    try:
        return np.broadcast_to(other._data, self._data.shape)
    except ValueError:
        raise RuntimeError(f"{name}(): the size of {position} {list(other.shape)} cannot be "
                           f"expanded to the size of self {list(self.shape)}") from None


def apply_(self, callable):
    """Each element x replaced by callable(x)."""
    _checked_target(self, "apply_", callable)
    return _write(self, "apply_", [callable(x) for x in self._data.ravel().tolist()])


def map_(self, other, callable):
    """Each element x replaced by callable(x, y), y the element of `other` (broadcast to
    self's shape) at its position."""
    _checked_target(self, "map_", callable)
    y = _operand(self, other, "map_", "other")
    pairs = zip(self._data.ravel().tolist(), y.ravel().tolist())
    return _write(self, "map_", [callable(a, b) for a, b in pairs])


def map2_(self, x, y, callable):
    """Each element a replaced by callable(a, b, c), b and c the elements of `x` and `y`
    (broadcast to self's shape) at its position."""
    _checked_target(self, "map2_", callable)
    xs = _operand(self, x, "map2_", "x").ravel().tolist()
    ys = _operand(self, y, "map2_", "y").ravel().tolist()
    triples = zip(self._data.ravel().tolist(), xs, ys)
    return _write(self, "map2_", [callable(a, b, c) for a, b, c in triples])

