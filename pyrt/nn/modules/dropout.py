"""torch.nn.modules.dropout's names in pyrt: the dropouts and their base."""

from pyrt.nn import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from pyrt.nn.module_bases import _DropoutNd

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
           "_DropoutNd"]
