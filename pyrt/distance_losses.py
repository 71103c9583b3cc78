"""torch.nn.functional.triplet_margin_with_distance_loss: the triplet margin loss under any
distance. For anchors a, positives p and negatives n (tensors of one rank),

    loss = max(0, margin + d(a, p) - d(a, n)),

which is zero once each anchor lies nearer its positive than its negative by the margin.
d is `distance_function` (any callable of two tensors giving a tensor of distances, composed
from differentiable ops), pairwise_distance by default, which makes this triplet_margin_loss
with p = 2. swap replaces d(a, n) by d(p, n) where that is smaller (the negative nearer the
positive is the harder one). The gradient is that of the composition.
"""

from pyrt.functional import _check_reduction, _real_number
from pyrt.loss_functions import _reduce, _tensors
from pyrt.pointwise import minimum
from pyrt.vector_functions import pairwise_distance

__all__ = ["triplet_margin_with_distance_loss"]


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) for each triple, reduced (see the module's doc);
    margin > 0."""
    _check_reduction(reduction)
    if _real_number(margin, "triplet_margin_with_distance_loss(): margin") <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    anchor, positive, negative = _tensors("triplet_margin_with_distance_loss", anchor=anchor,
                                          positive=positive, negative=negative)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, "
                           f"positive {positive.ndim}D, and negative {negative.ndim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    near = distance(anchor, positive)
    far = distance(anchor, negative)
    if swap:
        far = minimum(far, distance(positive, negative))
    return _reduce((near + margin - far).clamp(min=0), reduction)
