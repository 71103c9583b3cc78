"""Loss modules, as in torch.nn: each averages its per-element loss over the batch."""

from pyrt import functional as F
from pyrt.nn.module import Module

__all__ = ["CrossEntropyLoss", "BCEWithLogitsLoss", "MSELoss"]


class _Loss(Module):
    _tensor_input = True

    def __init__(self, *, reduction="mean"):
        super().__init__()
        if reduction != "mean":
            raise ValueError(f"reduction={reduction!r} is not supported: pyrt's losses "
                             "support only reduction='mean'")
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    """Mean over the batch of -log softmax(input)[i, target[i]]: input holds logits [N, C],
    target the class indices [N] (integers)."""

    def forward(self, input, target):
        return F.cross_entropy(input, target)


class BCEWithLogitsLoss(_Loss):
    """Mean of the binary cross-entropy between sigmoid(input) and target (floats in [0, 1]
    of input's shape), computed stably from the logits."""

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target)


class MSELoss(_Loss):
    """Mean of (input - target)^2 over all elements."""

    def forward(self, input, target):
        return F.mse_loss(input, target)
