"""The differentiable ops of pyrt.functional and of the modules of each family of ops
(pyrt.activations, pyrt.loss_functions, pyrt.embedding, pyrt.volumes, pyrt.unpool, ...) under
torch.nn.functional's names, so that ``import pyrt.nn.functional as F`` reads as it does with
PyTorch."""

from pyrt.activations import (
    celu,
    elu,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    logsigmoid,
    mish,
    prelu,
    relu6,
    rrelu,
    selu,
    silu,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
)
from pyrt.adaptive_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
)
from pyrt.alpha_dropout import alpha_dropout, feature_alpha_dropout
from pyrt.attention import multi_head_attention_forward, scaled_dot_product_attention
from pyrt.bilinear import bilinear
from pyrt.channel_ops import channel_shuffle, local_response_norm
from pyrt.conv_tbc import conv_tbc
from pyrt.conv_transpose import conv_transpose1d, conv_transpose2d
from pyrt.ctc import ctc_loss
from pyrt.distance_losses import triplet_margin_with_distance_loss
from pyrt.embedding import embedding
from pyrt.embedding_bag import embedding_bag
from pyrt.feature_dropout import dropout1d, dropout2d, dropout3d
from pyrt.fractional_pool import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from pyrt.functional import (
    avg_pool2d,
    batch_norm,
    binary_cross_entropy_with_logits,
    celu_,
    conv2d,
    cross_entropy,
    dropout,
    elu_,
    hardtanh_,
    leaky_relu_,
    linear,
    log_softmax,
    max_pool2d,
    mse_loss,
    nll_loss,
    pad,
    relu,
    relu_,
    rrelu_,
    selu_,
    sigmoid,
    softmax,
    tanh,
    threshold_,
)
from pyrt.grid_sample import affine_grid, grid_sample
from pyrt.group_norm import group_norm, instance_norm
from pyrt.gumbel import gumbel_softmax
from pyrt.interpolate import interpolate
from pyrt.layer_norm import layer_norm
from pyrt.linear_cross_entropy import linear_cross_entropy
from pyrt.loss_functions import (
    binary_cross_entropy,
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from pyrt.nn import grad  # noqa: F401 (torch.nn.functional.grad is torch.nn.grad)
from pyrt.pdist import pdist
from pyrt.resampling_aliases import (
    native_channel_shuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from pyrt.rms_norm import rms_norm
from pyrt.spatial_more import (
    avg_pool1d,
    conv1d,
    fold,
    max_pool1d,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from pyrt.unpool import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from pyrt.vector_functions import cosine_similarity, normalize, one_hot, pairwise_distance
from pyrt.volumes import (
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    conv3d,
    conv_transpose3d,
    max_pool3d,
    max_pool3d_with_indices,
)

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "elu_", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "gaussian_nll_loss", "gelu", "glu", "grid_sample",
    "group_norm", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div",
    "l1_loss", "layer_norm", "leaky_relu", "leaky_relu_", "linear", "linear_cross_entropy",
    "local_response_norm",
    "log_softmax", "logsigmoid", "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss",
    "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices",
    "max_pool3d", "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "mish", "mse_loss", "multi_head_attention_forward", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "native_channel_shuffle",
    "nll_loss", "normalize", "one_hot", "pad", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu", "relu6", "relu_", "rms_norm",
    "rrelu", "rrelu_", "scaled_dot_product_attention", "selu", "selu_", "sigmoid", "silu",
    "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin", "softplus", "softshrink",
    "softsign", "tanh", "tanhshrink", "threshold", "threshold_", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "unfold", "upsample", "upsample_bilinear",
    "upsample_nearest",
]
