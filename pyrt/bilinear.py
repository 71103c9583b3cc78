"""The bilinear form of torch.nn.functional.bilinear: for every output feature o,
y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o], with x1 [*, in1], x2 [*, in2] (the
same leading dims), weight [out, in1, in2] and bias [out].

It is computed as one matrix product and one reduction, so that the work goes to the matmul
kernel and the gradients come from the ops: the weight laid out as a matrix [in1, out * in2]
takes x1 [B, in1] to t [B, out, in2], and y[b, o] = sum_j t[b, o, j] x2[b, j].
"""

import math

from pyrt.functional import _tensor, matmul, reshape
from pyrt.shapes import permute, unsqueeze

__all__ = ["bilinear"]


def _check_operands(input1, input2, weight, bias):
    """PyTorch's errors for operands whose shapes do not fit together."""
    named = {"input1": input1, "input2": input2, "weight": weight, "bias": bias}
    for name, t in named.items():
        if not isinstance(t, _tensor()) and not (name == "bias" and t is None):
            raise TypeError(f"bilinear(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    if input1.ndim == 0:
        raise IndexError("bilinear(): Dimension specified as -1 but tensor has no dimensions")
    for d, (n1, n2) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if n1 != n2:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {n1} and {n2}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D [out_features, in1_features, "
                           f"in2_features], got shape {weight.shape}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and bias.shape != weight.shape[:1]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got shape "
                           f"{bias.shape} but expected ({weight.shape[0]},)")


def bilinear(input1, input2, weight, bias=None):
    """x1^T A_o x2 + b_o for each output feature o, over any leading dims: input1
    [*, in1_features], input2 [*, in2_features] -> [*, out_features]."""
    _check_operands(input1, input2, weight, bias)
    out_features, in1, in2 = weight.shape
    lead = input1.shape[:-1]
    rows = math.prod(lead)
    # weight [out, in1, in2] -> [in1, out * in2]: x1 @ it is t[b, o, j] = sum_i x1[b, i] A[o, i, j]
    w = reshape(permute(weight, (1, 0, 2)), (in1, out_features * in2))
    t = reshape(matmul(reshape(input1, (rows, in1)), w), (rows, out_features, in2))
    y = (t * unsqueeze(reshape(input2, (rows, in2)), 1)).sum(2)
    if bias is not None:
        y = y + bias
    return reshape(y, lead + (out_features,))
