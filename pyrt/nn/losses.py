"""Loss modules, as in torch.nn: each averages its per-element loss over the batch
(reduction="mean"), sums it ("sum") or returns it as it is ("none"). Their settings are
checked when they are made (beta, delta: ValueError out of range)."""

from pyrt import functional as F
from pyrt import loss_functions as LF
from pyrt.functional import _check_reduction, _real_number
from pyrt.nn.module import Module

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss",
           "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss"]


class _Loss(Module):
    _tensor_input = True

    def __init__(self, *, reduction="mean"):
        super().__init__()
        _check_reduction(reduction)
        self.reduction = reduction

    def extra_repr(self):
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """Cross-entropy of softmax(input) against target: input holds logits [N, C], target the
    class indices [N] (integers); the loss of each row, reduced over the batch."""

    def forward(self, input, target):
        return F.cross_entropy(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood: input holds log-probabilities [N, C] (LogSoftmax's output),
    target the class indices [N] (integers); -input[i, target[i]] for each row, reduced over
    the batch. LogSoftmax then NLLLoss is CrossEntropyLoss."""

    def forward(self, input, target):
        return F.nll_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy between sigmoid(input) and target (floats in [0, 1] of input's
    shape), computed stably from the logits; the loss of each element, reduced."""

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction)


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


class BCELoss(_Loss):
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
