"""Loss modules, as in torch.nn: each averages its per-element loss over the batch
(reduction="mean"), sums it ("sum") or returns it as it is ("none"). Their settings are
checked when they are made (beta, delta, margin, p: ValueError out of range). PyTorch's
deprecated size_average and reduce arguments are left out: reduction is keyword-only where
they would come before it (their bases, pyrt.nn.loss_base's, take them for ported
subclasses)."""

import math
import numbers

from pyrt import functional as F
from pyrt import loss_functions as LF
from pyrt.class_losses import _check_smoothing
from pyrt.ctc import ctc_loss
from pyrt.functional import _real_number
from pyrt.linear_cross_entropy import linear_cross_entropy
from pyrt.nn.layers import Linear
from pyrt.nn.loss_base import _Loss, _WeightedLoss

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss", "CrossEntropyLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
           "LinearCrossEntropyLoss", "MSELoss", "MarginRankingLoss", "MultiLabelMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss",
           "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss"]


class _ClassLoss(_WeightedLoss):
    """A loss of class scores: `weight` (C floats, kept as a buffer as in PyTorch) weighs each
    class, and the positions whose class is `ignore_index` do not count."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(reduction=reduction)
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
            raise TypeError(f"ignore_index must be an integer, got {type(ignore_index).__name__}")
        self.ignore_index = int(ignore_index)
        self.register_buffer("weight", weight)

    def extra_repr(self):
        settings = [super().extra_repr()]
        if self.ignore_index != -100:
            settings.append(f"ignore_index={self.ignore_index}")
        return ", ".join(s for s in settings if s)


class CrossEntropyLoss(_ClassLoss):
    """Cross-entropy of softmax(input) against target: input holds logits [N, C] ([C], or
    [N, C, d1, ...]), target the class indices [N] ([], [N, d1, ...]) or class probabilities
    of input's shape; `label_smoothing` in [0, 1] mixes the target with the uniform
    distribution. The loss of each row, reduced over the batch (F.cross_entropy)."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, ignore_index=ignore_index, reduction=reduction)
        self.label_smoothing = _check_smoothing(label_smoothing)

    def forward(self, input, target):
        # (the buffer read from its dict: self.weight would go through Module.__getattr__)
        return F.cross_entropy(input, target, self._buffers["weight"],
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)

    def extra_repr(self):
        settings = [super().extra_repr()]
        if self.label_smoothing:
            settings.append(f"label_smoothing={self.label_smoothing}")
        return ", ".join(s for s in settings if s)


class NLLLoss(_ClassLoss):
    """Negative log-likelihood: input holds log-probabilities [N, C] (LogSoftmax's output;
    [C], or [N, C, d1, ...]), target the class indices [N] ([], [N, d1, ...]);
    -weight[y] input[n, y] for each row n of class y, reduced over the batch (F.nll_loss).
    LogSoftmax then NLLLoss is CrossEntropyLoss."""

    def forward(self, input, target):
        return F.nll_loss(input, target, self._buffers["weight"], ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy between sigmoid(input) and target (floats in [0, 1] of input's
    shape), computed stably from the logits; the loss of each element, reduced. `weight`
    rescales each element's loss and `pos_weight` the positive term of each class (the last
    dim), both broadcast and kept as buffers as in PyTorch."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        buffers = self._buffers
        return F.binary_cross_entropy_with_logits(input, target, buffers["weight"],
                                                  reduction=self.reduction,
                                                  pos_weight=buffers["pos_weight"])


class MSELoss(_Loss):
    """(input - target)^2 of each element, reduced."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """|input - target| of each element, reduced."""

    def forward(self, input, target):
        return LF.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target, reduced;
    beta >= 0 (0: L1Loss)."""

    def __init__(self, *, reduction="mean", beta=1.0):
        super().__init__(reduction=reduction)
        if not _real_number(beta, "beta") >= 0:
            raise ValueError(f"SmoothL1Loss: beta must be >= 0, got {beta}")
        self.beta = beta

    def forward(self, input, target):
        return LF.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), for d = input - target,
    reduced; delta > 0. reduction comes first, as in PyTorch."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        if not _real_number(delta, "delta") > 0:
            raise ValueError(f"HuberLoss: delta must be > 0, got {delta}")
        self.delta = delta

    def forward(self, input, target):
        return LF.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy between probabilities: input and target in [0, 1] of one shape;
    `weight` (a tensor that broadcasts to the input's shape, kept as a buffer as in PyTorch)
    rescales each element's loss."""

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(reduction=reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return LF.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence of input, log-probabilities, from target, probabilities
    (log-probabilities with log_target). reduction="batchmean" divides the sum by the batch
    size: the divergence that the mathematics defines; "mean" (the default, as in PyTorch)
    divides it by the number of elements, with PyTorch's warning."""

    def __init__(self, *, reduction="mean", log_target=False):
        super().__init__()
        LF.check_kl_reduction(reduction)
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input, target):
        return LF.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """max(0, -y (x1 - x2) + margin) for targets y in {1, -1}: whether x1 should rank above
    x2 or below."""

    def __init__(self, margin=0.0, *, reduction="mean"):
        super().__init__(reduction=reduction)
        self.margin = _real_number(margin, "margin")

    def forward(self, input1, input2, target):
        return LF.margin_ranking_loss(input1, input2, target, self.margin,
                                      reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x where the target is 1, max(0, margin - x) where it is -1, for distances x."""

    def __init__(self, margin=1.0, *, reduction="mean"):
        super().__init__(reduction=reduction)
        self.margin = _real_number(margin, "margin")

    def forward(self, input, target):
        return LF.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y x)) for targets y in {1, -1}: the two-class logistic loss."""

    def forward(self, input, target):
        return LF.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """The binary logistic loss of each of C independent classes (targets in {0, 1}), times
    `weight` (C values, a buffer), averaged over the classes for each sample."""

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(reduction=reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return LF.multilabel_soft_margin_loss(input, target, self.weight,
                                              reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) where the target is 1, max(0, cos(x1, x2) - margin) where it is -1."""

    def __init__(self, margin=0.0, *, reduction="mean"):
        super().__init__(reduction=reduction)
        self.margin = _real_number(margin, "margin")

    def forward(self, input1, input2, target):
        return LF.cosine_embedding_loss(input1, input2, target, self.margin,
                                        reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm distance; swap takes d(p, n) for
    d(a, n) where it is smaller. margin > 0."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, *, reduction="mean"):
        super().__init__(reduction=reduction)
        if _real_number(margin, "margin") <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = _real_number(p, "p")
        self.eps = _real_number(eps, "eps")
        self.swap = bool(swap)

    def forward(self, anchor, positive, negative):
        return LF.triplet_margin_loss(anchor, positive, negative, self.margin, self.p,
                                      self.eps, self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """The Poisson negative log-likelihood of counts: exp(x) - t x with log_input (x the log
    rate), else x - t log(x + eps); full adds Stirling's term for targets above 1."""

    def __init__(self, log_input=True, full=False, *, eps=1e-8, reduction="mean"):
        super().__init__(reduction=reduction)
        self.log_input = bool(log_input)
        self.full = bool(full)
        self.eps = _real_number(eps, "eps")

    def forward(self, log_input, target):
        return LF.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                   reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """The Gaussian negative log-likelihood (log v + (x - t)^2 / v) / 2 of targets t under
    means x and variances v (the third argument, raised to eps); full adds log(2 pi) / 2."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full = bool(full)
        self.eps = _real_number(eps, "eps")

    def forward(self, input, target, var):
        return LF.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """The multi-class hinge loss: for each class j other than the target y,
    max(0, margin - x[y] + x[j])^p (p 1 or 2), times weight[y] (C values, a buffer), divided
    by the number of classes."""

    def __init__(self, p=1, margin=1.0, weight=None, *, reduction="mean"):
        super().__init__(reduction=reduction)
        if isinstance(p, bool) or p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: weight must be one-dimensional, got "
                             f"{weight.ndim} dims")
        self.p = p
        self.margin = _real_number(margin, "margin")
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return LF.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                    reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss: each target row lists the sample's classes, ended by -1;
    max(0, 1 - (x[j] - x[i])) for each listed j and unlisted i, divided by the number of
    classes."""

    def forward(self, input, target):
        return LF.multilabel_margin_loss(input, target, reduction=self.reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (F.ctc_loss): log_probs [T, N, C]
    (log_softmax over the classes) against label sequences, with `blank` the blank class;
    zero_infinity turns the infinite loss of an impossible alignment, and its gradient, into
    0."""

    def __init__(self, blank=0, *, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of the logits of a linear layer it holds, ``self.linear`` (in_features
    to num_classes * prod(out_features), no bias unless `bias`), against target
    (F.linear_cross_entropy): input [in_features] or [N, in_features]; target class indices
    ([], [N] or [N, *out_features]) or class probabilities ([C] or [N, C, *out_features]).
    `weight` (C floats), `ignore_index` (None: -100 for class indices), `reduction` and
    `label_smoothing` are CrossEntropyLoss's; `options` is accepted and the reference path
    computed (pyrt/linear_cross_entropy.py)."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.options = options
        # the weight [C, *out_features, in] is kept flat, as Linear's [C * prod, in], and
        # reshaped in forward (as PyTorch keeps it)
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias)
        if dtype is not None:
            self.linear.type(dtype)
        if device is not None:
            self.to(device)

    def forward(self, input, target):
        linear = self.linear
        weight = linear.weight.reshape(self.num_classes, *self.out_features,
                                       linear.in_features)
        bias = (None if linear.bias is None
                else linear.bias.reshape(self.num_classes, *self.out_features))
        return linear_cross_entropy(input, weight, target, linear_bias=bias,
                                    weight=self._buffers["weight"], reduction=self.reduction,
                                    ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
