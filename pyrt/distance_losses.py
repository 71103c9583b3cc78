"""torch.nn.functional.triplet_margin_with_distance_loss: the triplet margin loss under any
distance. For anchors a, positives p and negatives n (tensors of one rank),

    loss = max(0, margin + d(a, p) - d(a, n)),

which is zero once each anchor lies nearer its positive than its negative by the margin.
d is `distance_function` (any callable of two tensors giving a tensor of distances, composed
from differentiable ops), pairwise_distance by default, which makes this triplet_margin_loss
with p = 2. swap replaces d(a, n) by d(p, n) where that is smaller (the negative nearer the
positive is the harder one). The gradient is that of the composition.
"""

from pyrt.loss_functions import triplet_loss
from pyrt.vector_functions import pairwise_distance

__all__ = ["triplet_margin_with_distance_loss"]


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) for each triple, reduced (see the module's doc);
    margin > 0."""
    distance = pairwise_distance if distance_function is None else distance_function
    return triplet_loss("triplet_margin_with_distance_loss",
                        "triplet_margin_with_distance_loss(): margin", anchor, positive,
                        negative, distance, margin, swap, reduction)
