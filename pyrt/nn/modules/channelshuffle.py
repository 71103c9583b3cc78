"""torch.nn.modules.channelshuffle's names in pyrt: ChannelShuffle."""

from pyrt.nn import ChannelShuffle

__all__ = ["ChannelShuffle"]
