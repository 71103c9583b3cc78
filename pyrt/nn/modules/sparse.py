"""torch.nn.modules.sparse's names in pyrt: the embeddings."""

from pyrt.nn import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
