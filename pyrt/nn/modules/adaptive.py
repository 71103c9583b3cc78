"""torch.nn.modules.adaptive's names in pyrt: AdaptiveLogSoftmaxWithLoss."""

from pyrt.nn import AdaptiveLogSoftmaxWithLoss

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
