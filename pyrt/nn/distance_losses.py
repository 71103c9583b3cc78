"""TripletMarginWithDistanceLoss, as torch.nn's: max(0, margin + d(a, p) - d(a, n)) for each
triple of anchor, positive and negative, reduced, under any distance d
(F.triplet_margin_with_distance_loss)."""

from pyrt.distance_losses import triplet_margin_with_distance_loss
from pyrt.functional import _real_number
from pyrt.nn.distance import PairwiseDistance
from pyrt.nn.losses import _Loss

__all__ = ["TripletMarginWithDistanceLoss"]


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet margin loss under `distance_function`, a callable of two tensors
    (PairwiseDistance() by default; a Module is registered as a submodule, as in PyTorch).
    swap takes d(p, n) for d(a, n) where it is smaller. margin > 0."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if _real_number(margin, "margin") <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (PairwiseDistance() if distance_function is None
                                  else distance_function)
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)
