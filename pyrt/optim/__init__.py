"""Optimizers with torch.optim's names: SGD, Adam and AdamW on fused update kernels."""

from pyrt.optim.adam import Adam, AdamW
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]
