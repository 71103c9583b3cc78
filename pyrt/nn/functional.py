"""The differentiable ops of pyrt.functional (and of pyrt.activations, pyrt.loss_functions,
pyrt.embedding, pyrt.adaptive_pool, pyrt.layer_norm and pyrt.vector_functions) under
torch.nn.functional's names, so that ``import pyrt.nn.functional as F`` reads as it does with
PyTorch."""

from pyrt.activations import elu, gelu, hardtanh, leaky_relu, silu, softplus
from pyrt.adaptive_pool import adaptive_avg_pool2d, adaptive_max_pool2d
from pyrt.embedding import embedding
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
from pyrt.layer_norm import layer_norm
from pyrt.loss_functions import binary_cross_entropy, huber_loss, kl_div, l1_loss, smooth_l1_loss
from pyrt.vector_functions import cosine_similarity, normalize, one_hot, pairwise_distance

__all__ = [
    "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "batch_norm",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "conv2d", "cosine_similarity",
    "cross_entropy", "dropout", "elu", "embedding", "gelu", "hardtanh", "huber_loss", "kl_div",
    "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss",
    "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance", "relu", "sigmoid", "silu",
    "smooth_l1_loss", "softmax", "softplus", "tanh",
]
