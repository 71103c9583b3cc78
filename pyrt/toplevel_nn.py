"""The functions torch keeps at its top level beside ``torch.nn.functional``, with their
top-level signatures, which are not always F's: ``torch.dropout(input, p, train)`` takes no
defaults, ``torch.batch_norm`` takes weight and bias before the running statistics and a
cudnn flag, the losses take `reduction` as an int (0 none, 1 mean, 2 sum), the max pools
return only the maxima. Each converts its arguments and calls pyrt.nn.functional's."""

import numbers

from pyrt.nn import functional as F

__all__ = [
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "batch_norm",
    "binary_cross_entropy_with_logits", "celu", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "ctc_loss", "dropout",
    "feature_alpha_dropout", "hardshrink", "hinge_embedding_loss", "instance_norm", "kl_div",
    "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "max_pool3d", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "rrelu", "selu", "threshold", "triplet_margin_loss",
]

_REDUCTIONS = ("none", "mean", "sum")  # torch's at::Reduction: 0, 1, 2


def _reduction(reduction, name):
    """torch's int `reduction` as F's string."""
    if isinstance(reduction, bool) or not isinstance(reduction, numbers.Integral):
        raise TypeError(f"{name}(): argument 'reduction' must be int (0 none, 1 mean, 2 sum), "
                        f"not {type(reduction).__name__}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{name}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTIONS[reduction]


def _stride(stride):
    """A pool's stride: torch's top-level default, an empty list, is the kernel size."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


# ---- convolutions and pools ------------------------------------------------------------------


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv1d."""
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv2d."""
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv3d."""
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """F.conv_transpose1d."""
    return F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """F.conv_transpose2d."""
    return F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """F.conv_transpose3d."""
    return F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    """F.avg_pool1d; an empty stride is the kernel size."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maxima of F.max_pool1d (no indices); an empty stride is the kernel size."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """(maxima, indices) of F.max_pool1d."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                        return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maxima of F.max_pool2d (no indices); an empty stride is the kernel size."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The maxima of F.max_pool3d (no indices); an empty stride is the kernel size."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def adaptive_avg_pool1d(input, output_size):
    """F.adaptive_avg_pool1d."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """(maxima, indices) of F.adaptive_max_pool1d: torch's top-level one returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# ---- normalization and dropout ---------------------------------------------------------------


def _flag(value, name, argument):
    if not isinstance(value, bool):
        raise TypeError(f"{name}(): argument '{argument}' must be bool, not "
                        f"{type(value).__name__}")
    return value


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """F.batch_norm, in torch's top-level order (cudnn_enabled, a bool, changes nothing)."""
    _flag(cudnn_enabled, "batch_norm", "cudnn_enabled")
    return F.batch_norm(input, running_mean, running_var, weight, bias,
                        _flag(training, "batch_norm", "training"), momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """F.instance_norm, in torch's top-level order (cudnn_enabled, a bool, changes
    nothing)."""
    _flag(cudnn_enabled, "instance_norm", "cudnn_enabled")
    return F.instance_norm(input, running_mean, running_var, weight, bias,
                           _flag(use_input_stats, "instance_norm", "use_input_stats"),
                           momentum, eps)


def dropout(input, p, train):
    """F.dropout(input, p, training=train)."""
    return F.dropout(input, p, _flag(train, "dropout", "train"))


def feature_alpha_dropout(input, p, train):
    """F.feature_alpha_dropout(input, p, training=train)."""
    return F.feature_alpha_dropout(input, p, _flag(train, "feature_alpha_dropout", "train"))


# ---- activations and rearrangements ----------------------------------------------------------


def celu(input, alpha=1.0):
    """F.celu."""
    return F.celu(input, alpha)


def selu(input):
    """F.selu."""
    return F.selu(input)


def _no_generator(generator, name):
    if generator is not None:
        raise TypeError(f"{name}(): pyrt draws from its one generator (pyrt.manual_seed): "
                        f"generator must be None, got {type(generator).__name__}")


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """F.rrelu (its slopes drawn from pyrt's generator)."""
    _no_generator(generator, "rrelu")
    return F.rrelu(input, lower, upper, training)


def hardshrink(input, lambd=0.5):
    """F.hardshrink."""
    return F.hardshrink(input, lambd)


def threshold(input, threshold, value):
    """F.threshold."""
    return F.threshold(input, threshold, value)


def prelu(input, weight):
    """F.prelu."""
    return F.prelu(input, weight)


def channel_shuffle(input, groups):
    """F.channel_shuffle."""
    return F.channel_shuffle(input, groups)


def pixel_shuffle(input, upscale_factor):
    """F.pixel_shuffle."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """F.pixel_unshuffle."""
    return F.pixel_unshuffle(input, downscale_factor)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """F.cosine_similarity."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """F.pairwise_distance."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


# ---- losses, reduction an int -------------------------------------------------------------------


def _reduced(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=1):
    """F.binary_cross_entropy_with_logits, with weight and pos_weight positional and an int
    reduction, as torch's top-level form."""
    reduction = _reduction(reduction, "binary_cross_entropy_with_logits")
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=reduction,
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """F.cosine_embedding_loss."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss"))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """F.hinge_embedding_loss."""
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction(reduction, "hinge_embedding_loss"))


def kl_div(input, target, reduction=1, *, log_target=False):
    """F.kl_div; reduction 1 is the mean over every element (without F's warning that
    "batchmean" may be meant: torch's top-level one gives none)."""
    reduction = _reduction(reduction, "kl_div")
    loss = F.kl_div(input, target, reduction="none" if reduction == "mean" else reduction,
                    log_target=log_target)
    return loss.mean() if reduction == "mean" else loss


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """F.margin_ranking_loss."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss"))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss (every argument required, as torch's top-level one)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=1):
    """F.triplet_margin_loss."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """F.ctc_loss; reduction 1 divides each loss by its target's length, then averages."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss"), zero_infinity)
