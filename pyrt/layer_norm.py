"""Layer normalisation on Tensors (torch.nn.functional.layer_norm), its gradient beside it.

Each slice of the input over its trailing ``normalized_shape`` dimensions is normalised by its
own mean and biased variance, then scaled by ``weight`` and shifted by ``bias`` (tensors of
normalized_shape, each optional). The gradient flows to the input (through the statistics
too), the weight and the bias. Arrays on the GPU run the CUDA backend's op
(pyrt/cuda/ops/layer_norm.py), the others the C kernel (pyrt/ops/layer_norm.py).
"""

import numpy as np

from pyrt.functional import _make, _xp
from pyrt.ops.layer_norm import layer_norm as cpu_forward
from pyrt.ops.layer_norm import layer_norm_backward as cpu_backward
from pyrt.spatial import _check_tensors

__all__ = ["layer_norm"]


def _backend(*arrays):
    """(forward, backward) ops of `arrays`' device: the CUDA ones when any of them is on the
    GPU (their checks then refuse the others, as PyTorch refuses mixed devices)."""
    if any(a is not None and _xp(a) is not np for a in arrays):
        from pyrt.cuda.ops.layer_norm import layer_norm, layer_norm_backward

        return layer_norm, layer_norm_backward
    return cpu_forward, cpu_backward


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(input - mean) / sqrt(var + eps) * weight + bias`` over the trailing
    `normalized_shape` dimensions of input."""
    _check_tensors("layer_norm", input=input, weight=weight, bias=bias)
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    forward_op, backward_op = _backend(input._data, w, b)
    y, mean, invstd = forward_op(input._data, normalized_shape, w, b, eps)
    parents = tuple(t for t in (input, weight, bias) if t is not None)

    def backward(g):
        dx, dw, db = backward_op(
            g, input._data, normalized_shape, w, mean, invstd,
            needs_input_grad=input._requires_grad,
            needs_weight_grad=weight is not None and weight._requires_grad,
            needs_bias_grad=bias is not None and bias._requires_grad)
        return (dx,) + ((dw,) if weight is not None else ()) + ((db,) if bias is not None else ())

    return _make(y, parents, backward)
