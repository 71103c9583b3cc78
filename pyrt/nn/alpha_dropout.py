"""Dropout for self-normalising (SELU) networks, as torch.nn's AlphaDropout and
FeatureAlphaDropout: in training mode, units (or whole channels) are dropped with probability p
and the result mapped so that an input of zero mean and unit variance keeps them
(F.alpha_dropout, F.feature_alpha_dropout); in evaluation mode the input passes through."""

from pyrt.alpha_dropout import alpha_dropout, feature_alpha_dropout
from pyrt.nn.layers import Dropout

__all__ = ["AlphaDropout", "FeatureAlphaDropout"]


class AlphaDropout(Dropout):
    """Each element dropped with probability p to SELU's saturation value, then every element
    mapped by the affine a * x + b that keeps mean 0 and variance 1."""

    def forward(self, x):
        return alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """Whole channels of [N, C, *] dropped with probability p, as AlphaDropout drops
    elements."""

    def forward(self, x):
        return feature_alpha_dropout(x, self.p, self.training, self.inplace)
