"""torch.utils.data.distributed's name: DistributedSampler."""

from pyrt.data.distributed import DistributedSampler

__all__ = ["DistributedSampler"]
