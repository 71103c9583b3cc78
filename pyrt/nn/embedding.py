"""Embedding: a table of num_embeddings vectors of size embedding_dim, looked up by integer
index (pyrt.embedding), as torch.nn.Embedding."""

import numbers

import numpy as np

from pyrt import embedding as E
from pyrt.nn import init
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter
from pyrt.tensor import Tensor

__all__ = ["Embedding"]


def _size(value, name):
    """A table size: an int >= 0 (0 is allowed, as in PyTorch)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


class Embedding(Module):
    """weight [num_embeddings, embedding_dim], drawn from N(0, 1) (pyrt's seeded generator, as
    pyrt.nn.init draws); an integer input of any shape gives input.shape + (embedding_dim,).
    The row padding_idx (negative: counted from the end) starts at zeros and gets no
    gradient. With max_norm, each forward first scales the rows it looks up, in the weight
    itself, to a norm_type-norm of at most max_norm (as torch: see pyrt.embedding). With
    scale_grad_by_freq, each row's gradient is divided by the count of its index in the
    input.
    `_weight` (a table of that shape, shared, padding row kept as it is) replaces the drawn
    one; `_freeze` turns its gradient off (see from_pretrained)."""
    _tensor_input = True

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False):
        super().__init__()
        E.check_supported("Embedding", max_norm, norm_type, sparse=sparse)
        self.num_embeddings = _size(num_embeddings, "num_embeddings")
        self.embedding_dim = _size(embedding_dim, "embedding_dim")
        self.padding_idx = E.padding_index(padding_idx, self.num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(np.empty((self.num_embeddings, self.embedding_dim),
                                             np.float32), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            weight = Parameter(_weight, requires_grad=not _freeze)
            if weight.shape != (self.num_embeddings, self.embedding_dim):
                raise AssertionError(f"Shape of weight does not match num_embeddings and "
                                     f"embedding_dim: got {weight.shape}, expected "
                                     f"{(self.num_embeddings, self.embedding_dim)}")
            self.weight = weight

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` [num_embeddings, embedding_dim] (a
        float32 Tensor's memory is shared, its padding row kept as it is), trained unless
        `freeze`."""
        shape = np.shape(embeddings._data if isinstance(embeddings, Tensor) else embeddings)
        if len(shape) != 2:
            raise AssertionError(f"Embeddings parameter is expected to be 2-dimensional, got "
                                 f"shape {shape}")
        return cls(shape[0], shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq,
                   sparse, _weight=embeddings, _freeze=freeze)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input):
        return E.embedding(input, self._parameters["weight"], self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s
