"""Functions of the vectors along one dim of a tensor, as torch.nn.functional's: one_hot
(class labels to indicator vectors), normalize, cosine_similarity and pairwise_distance.

The last three are compositions of differentiable ops (norm, clamp, division, sum), so their
gradients are those of the composition, as in PyTorch, which composes them the same way:

- normalize(x) = x / max(||x||_p, eps), the clamp differentiable (no gradient flows through
  a norm below eps);
- cosine_similarity(a, b) = sum((a / max(||a||, eps)) * (b / max(||b||, eps))), each vector
  divided by its norm before the product, which keeps the result in [-1, 1]; PyTorch clamps
  those norms outside autograd, so the gradient flows through each norm as if unclamped;
- pairwise_distance(a, b) = ||a - b + eps||_p over the last dim.
"""

import numbers

import numpy as np

from pyrt.functional import _make, _tensor, _xp, dim_index
from pyrt.ops._checks import F32, I64
from pyrt.pointwise import broadcast_shape

__all__ = ["cosine_similarity", "normalize", "one_hot", "pairwise_distance"]


def _tensor_argument(x, name, argument):
    if not isinstance(x, _tensor()):
        raise TypeError(f"{name}(): argument '{argument}' must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def one_hot(tensor, num_classes=-1):
    """For each int64 class label of `tensor`, of any shape, a vector of num_classes int64
    zeros with a 1 at the label: shape tensor.shape + (num_classes,). num_classes -1 means
    the largest label plus one."""
    _tensor_argument(tensor, "one_hot", "input")
    if isinstance(num_classes, (bool, np.bool_)) or not isinstance(num_classes, numbers.Integral):
        raise TypeError(f"one_hot(): argument 'num_classes' must be int, not "
                        f"{type(num_classes).__name__}")
    labels = tensor._data
    if labels.dtype != I64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    num_classes = int(num_classes)
    xp = _xp(labels)
    if labels.size == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        if int(labels.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        largest = int(labels.max())
        if num_classes == -1:
            num_classes = largest + 1
        elif num_classes <= largest:
            raise RuntimeError("Class values must be smaller than num_classes.")
    hot = labels[..., None] == xp.arange(num_classes, dtype=I64)
    return _tensor()(hot.astype(I64))


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """`input` divided by the p-norm of its vectors along `dim`, a norm below eps taken as
    eps (so that a zero vector stays zero)."""
    _tensor_argument(input, "normalize", "input")
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def _at_least(t, eps):
    """t raised to eps where it is below, the gradient passed through unchanged: PyTorch's
    clamp of the norms in cosine_similarity, done outside autograd."""
    xp = _xp(t._data)
    return _make(xp.maximum(t._data, F32.type(eps)), (t,), lambda g: (g,), reads=False)


def _float_operands(x1, x2, name):
    """x1 and x2 with integer and bool tensors as float32 copies (constants, which PyTorch
    promotes likewise); RuntimeError when neither is floating point."""
    if x1._data.dtype.kind != "f" and x2._data.dtype.kind != "f":
        raise RuntimeError(f"{name}(): expected common dtype to be floating point, yet common "
                           f"dtype is {x1.dtype if x1._data.dtype == x2._data.dtype else I64}")
    Tensor = _tensor()
    return tuple(x if x._data.dtype.kind == "f" else Tensor(x._data.astype(F32))
                 for x in (x1, x2))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between the vectors of x1 and x2 along `dim`, the two tensors
    broadcast together; a norm below eps is taken as eps."""
    name = "cosine_similarity"
    _tensor_argument(x1, name, "x1")
    _tensor_argument(x2, name, "x2")
    x1, x2 = _float_operands(x1, x2, name)
    shape = broadcast_shape(x1.shape, x2.shape)
    x1, x2 = (x if x.shape == shape else x.expand(shape) for x in (x1, x2))
    dim = dim_index(dim, len(shape))
    n1 = _at_least(x1.norm(2, dim, keepdim=True), eps)
    n2 = _at_least(x2.norm(2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps (broadcast together) along their last dim."""
    _tensor_argument(x1, "pairwise_distance", "x1")
    _tensor_argument(x2, "pairwise_distance", "x2")
    last = len(broadcast_shape(x1.shape, x2.shape)) - 1
    return (x1 - x2 + eps).norm(p, last, keepdim)
