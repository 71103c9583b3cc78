"""Cross-entropy of a linear layer's output (torch.nn.functional.linear_cross_entropy): the
loss of the logits ``input @ linear_weight.T + linear_bias`` against target, with every
option of cross_entropy, as a language model's head computes it.

The logits are pyrt's linear (one GEMM) and the loss is pyrt's cross_entropy, so that the mean
loss of [N, C] logits against N labels (no class weights, no smoothing) takes the fused
kernel: softmax, loss and gradient in one pass. A linear_weight [C, d1, ..., dK, in] gives
a K-dimensional loss: the logits [N, C * d1 * ... * dK] are read as [N, C, d1, ..., dK].

PyTorch's ``options`` (LinearCrossEntropyOptions) choose a chunked path that never holds all
the logits at once, to save memory for large vocabularies. pyrt accepts and checks them and
computes the reference path, whose numbers the chunks reproduce.
"""

import dataclasses
import math

from pyrt.class_losses import cross_entropy
from pyrt.functional import linear
from pyrt.spatial import _check_tensors

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's options of the chunked linear_cross_entropy, checked as PyTorch checks them
    (ValueError): allow_retain_graph, batch_chunk_size (a positive int or None),
    chunking_method ("auto", "aspect_ratio", "aspect_ratio:N" or None), acc_policy ("auto",
    "accurate", "balanced" or "compact") and acc_dtype. pyrt computes the reference path
    whatever they say (see the module's text)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = str(self.chunking_method).partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (type(size) is int and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): input [in] or
    [N, in], linear_weight [C, in] (or [C, d1, ..., dK, in] with a batched input: a
    K-dimensional loss), linear_bias [C] ([C, d1, ..., dK]); target holds class indices
    ([], [N] or [N, d1, ..., dK]) or class probabilities of the logits' shape. ignore_index
    None means -100 for class indices and may not be given with probabilities. `weight`,
    `reduction` and `label_smoothing` are cross_entropy's; `options` (a
    LinearCrossEntropyOptions) is accepted and the reference path computed."""
    _check_tensors("linear_cross_entropy", input=input, linear_weight=linear_weight,
                   target=target, linear_bias=linear_bias, weight=weight)
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"linear_cross_entropy: options must be a LinearCrossEntropyOptions "
                        f"or None, got {type(options).__name__}")
    if not 1 <= input.ndim <= 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    # probabilities are told from class indices by shape, as cross_entropy tells them
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    if out_features:
        width = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(width, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(width)
    logits = linear(input, linear_weight, linear_bias)
    if out_features:
        logits = logits.reshape(logits_shape)
    return cross_entropy(logits, target, weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
