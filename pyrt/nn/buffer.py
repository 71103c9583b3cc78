"""Buffer and the uninitialized tensors of lazy modules, as torch.nn's.

- Buffer(data, persistent=True): a tensor that, assigned as a Module attribute, is registered
  as a buffer (``module.running = Buffer(t)`` does ``register_buffer("running", t,
  persistent)``), where assigning a plain Tensor only sets an attribute.
- UninitializedParameter / UninitializedBuffer: placeholders of no known shape; any shape
  query raises until ``materialize(shape)`` gives them storage of that shape and turns them
  into a Parameter / a plain Tensor in place (the same object, as PyTorch's do).
"""

import numpy as np

from pyrt.nn.parameter import Parameter
from pyrt.tensor import Tensor

__all__ = ["Buffer", "UninitializedBuffer", "UninitializedParameter"]


class Buffer(Tensor):
    """A tensor sharing `data`'s memory (a Tensor, or anything NumPy turns into an array; an
    empty float32 tensor for None) that registers as a buffer when assigned to a Module
    attribute, saved in ``state_dict()`` unless `persistent` is False."""

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            data = np.empty((0,), np.float32)
        requires_grad = False
        if isinstance(data, Tensor):
            requires_grad = data.requires_grad
            data = data._data
        super().__init__(data, requires_grad=requires_grad)
        self.persistent = bool(persistent)


class _Uninitialized:
    """Shared behaviour of the uninitialized placeholders: no shape until materialized."""
    __slots__ = ()
    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None):
        """Give this placeholder empty storage of `shape` (on `device`, default the CPU) and
        make it a `cls_to_become` in place."""
        if dtype is None:
            dtype = self._data.dtype
        elif np.dtype(dtype) not in (np.float32, np.int64, np.bool_):
            raise TypeError(f"materialize: pyrt's dtypes are float32, int64 and bool, got "
                            f"dtype={dtype!r}")
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._data = np.empty(shape, dtype)
        self.__class__ = self.cls_to_become
        if device is not None and device != "cpu":
            self._data = self.to(device)._data

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self):
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape is not known yet (requires grad by default)."""
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(None, requires_grad=requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet."""
    __slots__ = ()  # the layout of Tensor, so that materialize can make it one
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        super().__init__(np.empty((0,), np.float32 if dtype is None else dtype),
                         requires_grad=requires_grad)
