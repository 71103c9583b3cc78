"""Loss modules, as in torch.nn: each averages its per-element loss over the batch
(reduction="mean"), sums it ("sum") or returns it as it is ("none")."""

from pyrt import functional as F
from pyrt.functional import _check_reduction
from pyrt.nn.module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "MSELoss"]


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
