"""Optimizers with torch.optim's names: SGD and Adam on fused update kernels."""

from pyrt.optim.adam import Adam
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.sgd import SGD

__all__ = ["Adam", "Optimizer", "SGD"]
