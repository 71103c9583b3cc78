"""Deprecated torch.nn names kept for old code: NLLLoss2d (NLLLoss, which takes [N, C, H, W]
inputs itself) and Container (a Module whose keyword arguments become its children)."""

import warnings

from pyrt.nn.losses import NLLLoss
from pyrt.nn.module import Module

__all__ = ["Container", "NLLLoss2d"]


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name for image inputs, with PyTorch's FutureWarning."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more "
                      "details.", FutureWarning, stacklevel=2)
        if size_average is not None or reduce is not None:
            # PyTorch's legacy pair of flags, which override `reduction`
            if reduce is False:
                reduction = "none"
            else:
                reduction = "sum" if size_average is False else "mean"
        super().__init__(weight, ignore_index=ignore_index, reduction=reduction)


class Container(Module):
    """A Module holding the modules given as keyword arguments, under those names."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
