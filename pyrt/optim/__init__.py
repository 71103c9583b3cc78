"""Optimizers with torch.optim's names: SGD, Adam and AdamW on fused update kernels, RMSprop
and Adagrad on array operations, and the learning-rate schedules of
``pyrt.optim.lr_scheduler``."""

from pyrt.optim import lr_scheduler
from pyrt.optim.adagrad import Adagrad
from pyrt.optim.adam import Adam, AdamW
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.rmsprop import RMSprop
from pyrt.optim.sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
