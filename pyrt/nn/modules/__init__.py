"""torch.nn.modules in pyrt: one module per torch submodule (``pyrt.nn.modules.loss``,
``.conv``, ``.batchnorm``, ...), each re-exporting pyrt.nn's layers under torch's path, with
torch's private bases (``_Loss``, ``_ConvNd``, ``_BatchNorm``, ...) that ported code subclasses or
checks with isinstance; and ``utils`` (``_pair``, ``_ntuple``, ...)."""

from pyrt import nn as _nn
from pyrt.nn.module import Module as _Module
from pyrt.nn.modules import (  # noqa: F401  (the submodules, as torch.nn.modules has them)
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)

# every layer class of pyrt.nn, as torch.nn.modules holds every one of torch.nn's (but
# DataParallel, which torch keeps in torch.nn.parallel)
__all__ = sorted(name for name, value in vars(_nn).items()
                 if isinstance(value, type) and issubclass(value, _Module)
                 and not name.startswith("_") and name != "DataParallel")
__all__ += ["LinearCrossEntropyOptions"]  # (not a Module: torch lists it beside its loss)
globals().update({name: getattr(_nn, name) for name in __all__})
