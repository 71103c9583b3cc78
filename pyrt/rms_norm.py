"""Root-mean-square normalisation (torch.nn.functional.rms_norm): each slice of the input over
its trailing ``normalized_shape`` dimensions divided by its root mean square,
``x / sqrt(mean(x^2) + eps)``, then scaled by ``weight``. Unlike layer normalisation nothing
is subtracted, which is all that many transformer models (LLaMA's, T5's) keep of it. Composed
of Tensor ops, so its gradient is theirs, and it runs on either device.
"""

import numpy as np

from pyrt.ops.layer_norm import normalized_dims
from pyrt.spatial import _check_tensors

__all__ = ["rms_norm"]

# eps when none is given: float32's machine epsilon, as PyTorch takes the input's
_EPS = float(np.finfo(np.float32).eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``input / sqrt(mean(input^2) + eps) * weight`` over the trailing `normalized_shape`
    dimensions of input; eps None: float32's machine epsilon."""
    _check_tensors("rms_norm", input=input, weight=weight)
    dims = normalized_dims(normalized_shape)
    if not dims:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    shape = tuple(input.shape)
    if len(shape) < len(dims) or shape[len(shape) - len(dims):] != dims:
        raise RuntimeError(f"Given normalized_shape={list(dims)}, expected input with shape "
                           f"[*{', '.join(map(str, dims))}], but got input of size"
                           f"{list(shape)}")
    if weight is not None and tuple(weight.shape) != dims:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(dims)}")
    squares = (input * input).mean(tuple(range(-len(dims), 0)), keepdim=True)
    y = input * (squares + (_EPS if eps is None else eps)).rsqrt()
    return y if weight is None else y * weight
