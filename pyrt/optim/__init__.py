"""Optimizers with torch.optim's names: SGD, Adam and AdamW on fused update kernels, and the
learning-rate schedules of ``pyrt.optim.lr_scheduler``."""

from pyrt.optim.adam import Adam, AdamW
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.sgd import SGD
from pyrt.optim import lr_scheduler

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "lr_scheduler"]
