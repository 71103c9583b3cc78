"""torch.nn.modules.distance's names in pyrt: the distances."""

from pyrt.nn import CosineSimilarity, PairwiseDistance

__all__ = ["CosineSimilarity", "PairwiseDistance"]
