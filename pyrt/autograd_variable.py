"""Variable: torch.autograd.Variable, the deprecated wrapper from before tensors carried
their own gradients. As in PyTorch, ``Variable(tensor, requires_grad=...)`` returns a plain
Tensor (a new leaf sharing the tensor's data), and every Tensor is an instance of Variable.
"""

import warnings

from pyrt.autograd import _tensor_class

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _tensor_class())

    def __call__(cls, data=None, requires_grad=False, volatile=False):
        Tensor = _tensor_class()
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "pyrt.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a Tensor sharing `data`'s data, a leaf that
    requires grad if asked (Tensors do all a Variable did)."""
