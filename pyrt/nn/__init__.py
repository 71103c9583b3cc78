"""Neural-network building blocks with PyTorch's names: Module, Parameter, layers, losses and
``pyrt.nn.init``."""

from pyrt.nn import functional, init
from pyrt.nn.layers import (
    AvgPool2d,
    Conv2d,
    Flatten,
    Linear,
    MaxPool2d,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from pyrt.nn.losses import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = [
    "AvgPool2d", "BCEWithLogitsLoss", "Conv2d", "CrossEntropyLoss", "Flatten", "Linear",
    "MSELoss", "MaxPool2d", "Module", "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh",
    "functional", "init",
]
