"""Parameter: a tensor that a Module registers as one of its learnable weights; and, as in
torch.nn.parameter, UninitializedParameter and UninitializedBuffer (pyrt.nn.buffer's)."""

import numpy as np

from pyrt.tensor import Tensor

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf tensor that requires grad by default. Assigned as an attribute of a Module, it
    appears in ``parameters()`` and ``state_dict()``.

    `data` is a Tensor or anything NumPy turns into an array; the parameter shares a Tensor's
    or a float32 C-contiguous array's memory and otherwise holds a float32 copy.
    """

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = np.empty((0,), np.float32)
        elif isinstance(data, Tensor):
            data = data._data
        array = np.asarray(data, dtype=np.float32, order="C")  # 0-d kept 0-d
        super().__init__(array, requires_grad=bool(requires_grad))

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()



def __getattr__(name):
    # pyrt.nn.buffer builds its placeholders on Parameter, so they are looked up on first use
    if name in ("UninitializedBuffer", "UninitializedParameter"):
        from pyrt.nn import buffer

        return getattr(buffer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
