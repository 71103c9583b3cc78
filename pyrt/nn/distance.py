"""Distance layers over pyrt.vector_functions, as torch.nn's: CosineSimilarity and
PairwiseDistance. Their reprs show no settings, as PyTorch's."""

from pyrt.functional import _real_number
from pyrt.nn.module import Module
from pyrt.vector_functions import cosine_similarity, pairwise_distance

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """The cosine of the angle between the vectors of x1 and x2 along `dim`, each norm taken
    as at least eps."""
    _tensor_input = True

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = _real_number(eps, "eps")

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim (kept with keepdim)."""
    _tensor_input = True

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = _real_number(p, "p")
        self.eps = _real_number(eps, "eps")
        self.keepdim = bool(keepdim)

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
