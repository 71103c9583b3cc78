"""Layers across the channels of [N, C, *] inputs, as torch.nn's: ChannelShuffle
(F.channel_shuffle) and LocalResponseNorm (F.local_response_norm). Like PyTorch's, they keep
their settings as given and check them when they run."""

from pyrt.channel_ops import channel_shuffle, local_response_norm
from pyrt.nn.module import Module

__all__ = ["ChannelShuffle", "LocalResponseNorm"]


class ChannelShuffle(Module):
    """The channels of [N, C, *], seen as a groups x (C / groups) grid, read out by columns:
    [N, groups, C / groups, *] transposed to [N, C / groups, groups, *]."""
    _tensor_input = True

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class LocalResponseNorm(Module):
    """Each element of [N, C, *] divided by (k + alpha * mean of the squares over `size`
    neighbouring channels) ** beta, the channels zero-padded at both ends."""
    _tensor_input = True

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
