"""Optimizers with torch.optim's names: SGD, Adam and AdamW on fused update kernels; RMSprop,
Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor, Muon and SparseAdam on array
operations; LBFGS; the learning-rate schedules of ``pyrt.optim.lr_scheduler``; and weight
averaging (SWA, EMA) in ``pyrt.optim.swa_utils``."""

from pyrt.optim import lr_scheduler, swa_utils
from pyrt.optim.adadelta import Adadelta
from pyrt.optim.adafactor import Adafactor
from pyrt.optim.adagrad import Adagrad
from pyrt.optim.adam import Adam, AdamW
from pyrt.optim.adaptive_moments import Adamax, NAdam, RAdam
from pyrt.optim.asgd import ASGD
from pyrt.optim.lbfgs import LBFGS
from pyrt.optim.muon import Muon
from pyrt.optim.optimizer import Optimizer
from pyrt.optim.rmsprop import RMSprop
from pyrt.optim.rprop import Rprop
from pyrt.optim.sgd import SGD
from pyrt.optim.sparse_adam import SparseAdam

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax",
           "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SparseAdam", "lr_scheduler",
           "swa_utils"]
