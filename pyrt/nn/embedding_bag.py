"""EmbeddingBag: a table of num_embeddings vectors of size embedding_dim, read by bags of
indices and reduced to one vector per bag by their sum, mean or maximum
(pyrt.embedding_bag), as torch.nn.EmbeddingBag."""

import numpy as np

from pyrt import embedding as E
from pyrt.embedding_bag import check_freq_mode, check_mode, embedding_bag
from pyrt.nn import init
from pyrt.nn.embedding import _size
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.tensor import Tensor

__all__ = ["EmbeddingBag"]


class EmbeddingBag(Module):
    """weight [num_embeddings, embedding_dim], drawn from N(0, 1) as nn.Embedding draws it
    (pyrt's seeded generator), or `_weight` itself, shared, if given. forward(input,
    offsets=None, per_sample_weights=None) gives [B, embedding_dim], one row per bag: the
    rows of a 2-D input [B, N], or the runs of a 1-D input starting at `offsets` [B] (B + 1
    boundaries with include_last_offset). The row padding_idx (negative: counted from the
    end) starts at zeros unless `_weight` is given, and its entries are left out of their
    bags. With max_norm, each forward first scales the rows its input names, in the weight
    itself, to a norm_type-norm of at most max_norm (as torch: see pyrt.embedding_bag). With
    scale_grad_by_freq (modes "sum" and "mean"), each row's gradient is divided by the count
    of its index in the input."""
    _tensor_input = True

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None):
        super().__init__()
        E.check_supported("EmbeddingBag", max_norm, norm_type, sparse=sparse)
        check_mode(mode)
        check_freq_mode(scale_grad_by_freq, mode)
        self.num_embeddings = _size(num_embeddings, "num_embeddings")
        self.embedding_dim = _size(embedding_dim, "embedding_dim")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = E.padding_index(padding_idx, self.num_embeddings)
        if _weight is None:
            self.weight = Parameter(np.empty((self.num_embeddings, self.embedding_dim),
                                             np.float32))
            self.reset_parameters()
        else:
            weight = Parameter(_weight)
            if weight.shape != (self.num_embeddings, self.embedding_dim):
                raise AssertionError(f"Shape of weight does not match num_embeddings and "
                                     f"embedding_dim: got {weight.shape}, expected "
                                     f"{(self.num_embeddings, self.embedding_dim)}")
            self.weight = weight
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(input, self._parameters["weight"], offsets, self.max_norm,
                             self.norm_type, self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` [num_embeddings, embedding_dim] (a
        Tensor's memory is shared, its padding row kept as it is), trained unless
        `freeze`."""
        shape = np.shape(embeddings._data if isinstance(embeddings, Tensor) else embeddings)
        if len(shape) != 2:
            raise AssertionError(f"Embeddings parameter is expected to be 2-dimensional, got "
                                 f"shape {shape}")
        bag = cls(shape[0], shape[1], max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
