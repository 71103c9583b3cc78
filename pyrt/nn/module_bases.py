"""torch.nn's private base classes that pyrt's layers share no implementation class for:
``_ConvNd``, ``_NormBase``, ``_LazyNormBase``, ``_MaxPoolNd``, ``_AvgPoolNd``,
``_AdaptiveAvgPoolNd``, ``_AdaptiveMaxPoolNd``, ``_DropoutNd`` and the padding families.

Ported code checks them (``isinstance(m, _ConvNd)`` to find every convolution, a weight
init that skips ``_BatchNorm``) or subclasses them. pyrt's layers derive from them as torch's
do, so those checks answer as torch's; they carry no behaviour of their own (a subclass
inherits Module's), but for ``_DropoutNd``, which keeps torch's ``p`` and ``inplace``. The
bases pyrt does implement (``_BatchNorm``, ``_InstanceNorm``, ``_ConvTransposeNd``,
``_ConstantPadNd``, ``_LPPoolNd``, ``_MaxUnpoolNd``, ``RNNBase``) are pyrt's own classes,
and ``_Loss`` and ``_WeightedLoss`` are pyrt.nn.loss_base's.
"""

from pyrt import functional as F
from pyrt.activations import inplace_flag
from pyrt.nn.module import Module

__all__ = ["_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd", "_AvgPoolNd", "_CircularPadNd",
           "_ConvNd", "_DropoutNd", "_LazyNormBase", "_MaxPoolNd", "_NormBase",
           "_ReflectionPadNd", "_ReplicationPadNd"]


class _ConvNd(Module):
    """Every convolution, transposed ones included (Conv1d/2d/3d, ConvTranspose1d/2d/3d)."""


class _NormBase(Module):
    """The batch and instance norms (not GroupNorm or LayerNorm, as in torch)."""


class _LazyNormBase(_NormBase):
    """torch's base of the lazy batch and instance norms (pyrt's lazy layers take their
    layer's class at their first call: see pyrt.nn.lazy)."""


class _MaxPoolNd(Module):
    """MaxPool1d, MaxPool2d and MaxPool3d."""


class _AvgPoolNd(Module):
    """AvgPool1d, AvgPool2d and AvgPool3d."""


class _AdaptiveAvgPoolNd(Module):
    """AdaptiveAvgPool1d, AdaptiveAvgPool2d and AdaptiveAvgPool3d."""


class _AdaptiveMaxPoolNd(Module):
    """AdaptiveMaxPool1d, AdaptiveMaxPool2d and AdaptiveMaxPool3d."""


class _ReflectionPadNd(Module):
    """ReflectionPad1d, ReflectionPad2d and ReflectionPad3d."""


class _ReplicationPadNd(Module):
    """ReplicationPad1d, ReplicationPad2d and ReplicationPad3d."""


class _CircularPadNd(Module):
    """CircularPad1d, CircularPad2d and CircularPad3d."""


class _DropoutNd(Module):
    """The dropouts (Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout): the
    probability `p` in [0, 1] and the `inplace` flag, as torch's base keeps them, so that a
    subclass need only define forward()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F.dropout_probability(p)
        self.p = p
        self.inplace = inplace_flag(inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
