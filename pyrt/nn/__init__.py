"""Neural-network building blocks with PyTorch's names: Module, Parameter, layers, losses and
``pyrt.nn.init``."""

from pyrt.nn import functional, init, utils
from pyrt.nn.activations import ELU, GELU, Hardtanh, LeakyReLU, SiLU, Softplus
from pyrt.nn.adaptive_pool import AdaptiveAvgPool2d, AdaptiveMaxPool2d
from pyrt.nn.batchnorm import BatchNorm1d, BatchNorm2d
from pyrt.nn.embedding import Embedding
from pyrt.nn.layer_norm import LayerNorm
from pyrt.nn.layers import (
    AvgPool2d,
    Conv2d,
    Dropout,
    Flatten,
    Identity,
    Linear,
    LogSoftmax,
    MaxPool2d,
    ModuleDict,
    ModuleList,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
    Unflatten,
)
from pyrt.nn.losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = [
    "ELU", "GELU", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool2d", "BCELoss",
    "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LayerNorm",
    "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool2d", "Module", "ModuleDict",
    "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid",
    "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Unflatten", "functional", "init", "utils",
]
