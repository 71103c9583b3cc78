"""The differentiable ops of pyrt.functional under torch.nn.functional's names, so that
``import pyrt.nn.functional as F`` reads as it does with PyTorch."""

from pyrt.functional import (
    avg_pool2d,
    batch_norm,
    binary_cross_entropy_with_logits,
    conv2d,
    cross_entropy,
    dropout,
    linear,
    log_softmax,
    max_pool2d,
    mse_loss,
    nll_loss,
    pad,
    relu,
    sigmoid,
    softmax,
    tanh,
)

__all__ = [
    "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits", "conv2d", "cross_entropy",
    "dropout", "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "pad", "relu",
    "sigmoid", "softmax", "tanh",
]
