"""Optimizers with torch.optim's names: SGD, Adam and AdamW on fused update kernels; RMSprop,
Adagrad, Adadelta, Adamax, NAdam and RAdam on array operations; LBFGS; and the learning-rate
schedules of ``pyrt.optim.lr_scheduler``."""

from pyrt.optim import lr_scheduler
from pyrt.optim.adadelta import Adadelta
from pyrt.optim.adagrad import Adagrad
from pyrt.optim.adam import Adam, AdamW
from pyrt.optim.adaptive_moments import Adamax, NAdam, RAdam
from pyrt.optim.lbfgs import LBFGS
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.rmsprop import RMSprop
from pyrt.optim.sgd import SGD

__all__ = ["LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "lr_scheduler"]
