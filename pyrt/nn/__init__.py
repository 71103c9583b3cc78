"""Neural-network building blocks with PyTorch's names: Module, Parameter, layers, losses and
``pyrt.nn.init``."""

from pyrt.nn import functional, init, utils
from pyrt.nn.batchnorm import BatchNorm1d, BatchNorm2d
from pyrt.nn.layers import (
    AvgPool2d,
    Conv2d,
    Dropout,
    Flatten,
    Identity,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ModuleList,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from pyrt.nn.losses import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = [
    "AvgPool2d", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d",
    "CrossEntropyLoss", "Dropout", "Flatten",
    "Identity", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module", "ModuleList", "NLLLoss",
    "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init",
    "utils",
]
