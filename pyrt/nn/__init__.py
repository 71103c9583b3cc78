"""Neural-network building blocks with PyTorch's names: Module, Parameter, layers, losses and
``pyrt.nn.init``."""

from pyrt.nn import functional, init, utils
from pyrt.nn.activations import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    SiLU,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from pyrt.nn.adaptive_pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
)
from pyrt.nn.alpha_dropout import AlphaDropout, FeatureAlphaDropout
from pyrt.nn.attention import MultiheadAttention
from pyrt.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from pyrt.nn.bilinear import Bilinear
from pyrt.nn.channel_ops import ChannelShuffle, LocalResponseNorm
from pyrt.nn.containers import ParameterDict, ParameterList
from pyrt.nn.conv import Conv1d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from pyrt.nn.distance import CosineSimilarity, PairwiseDistance
from pyrt.nn.distance_losses import TripletMarginWithDistanceLoss
from pyrt.nn.embedding import Embedding
from pyrt.nn.embedding_bag import EmbeddingBag
from pyrt.nn.layer_norm import LayerNorm, RMSNorm
from pyrt.nn.layers import (
    AvgPool2d,
    Conv2d,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
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
from pyrt.nn.lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from pyrt.nn.losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from pyrt.nn.module import Module
from pyrt.nn.norms import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from pyrt.nn.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from pyrt.nn.parameter import Parameter
from pyrt.nn.pooling1d import AvgPool1d, Fold, MaxPool1d, Unfold
from pyrt.nn.pooling3d import AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d
from pyrt.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from pyrt.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from pyrt.nn.unpool import (
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from pyrt.nn.upsample import (
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "GRU", "LSTM", "RNN", "SELU", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BCELoss",
    "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear",
    "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "CosineEmbeddingLoss", "CosineSimilarity",
    "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding",
    "EmbeddingBag", "FeatureAlphaDropout", "Flatten", "Fold", "GRUCell", "GaussianNLLLoss",
    "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "KLDivLoss",
    "L1Loss", "LPPool1d", "LPPool2d", "LPPool3d", "LSTMCell", "LayerNorm", "LazyBatchNorm1d",
    "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LeakyReLU", "Linear",
    "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MSELoss", "MarginRankingLoss",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Mish",
    "Module", "ModuleDict", "ModuleList", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiheadAttention", "NLLLoss", "PReLU", "PairwiseDistance",
    "Parameter", "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle",
    "PoissonNLLLoss", "RMSNorm", "RNNBase", "RNNCell", "RNNCellBase", "RReLU", "ReLU", "ReLU6",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss",
    "SoftMarginLoss", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign",
    "Tanh", "Tanhshrink", "Threshold", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "Unflatten", "Unfold", "Upsample",
    "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "functional", "init", "utils",
]
