"""The bases of the loss modules, as torch.nn.modules.loss's ``_Loss`` and ``_WeightedLoss``:
they keep ``reduction`` and (``_WeightedLoss``) a ``weight`` buffer. Their constructors take
torch's deprecated ``size_average`` and ``reduce`` before ``reduction``, so that a ported
``class MyLoss(_Loss)`` passing them on works; either given, they decide the reduction as
torch's ``_Reduction.legacy_get_string`` does, with its warning. (pyrt's own losses take
``reduction`` only.)"""

import warnings

from pyrt.functional import _check_reduction
from pyrt.nn.module import Module

__all__ = ["_Loss", "_WeightedLoss", "legacy_get_string"]


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The reduction that the deprecated flags stand for: "mean" when both are true (None
    counts as true), "sum" when only `reduce` is, else "none"."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        reduction = "mean"
    elif reduce:
        reduction = "sum"
    else:
        reduction = "none"
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    return reduction


class _Loss(Module):
    _tensor_input = True

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = legacy_get_string(size_average, reduce)
        _check_reduction(reduction)
        self.reduction = reduction

    def extra_repr(self):
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    """A loss that weighs its terms by `weight` (a buffer, None for even weights)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
