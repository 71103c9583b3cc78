"""torch.utils.data.sampler's names: the samplers (pyrt.data.sampler)."""

from pyrt.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]
