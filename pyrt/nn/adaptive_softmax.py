"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. ("Efficient softmax
approximation for GPUs", 2016), PyTorch's layer of the same name.

The classes, sorted by frequency, are split by `cutoffs` into a shortlist [0, cutoffs[0])
and clusters [cutoffs[i], cutoffs[i + 1]). The head, a Linear layer onto the shortlist plus
one logit per cluster, gives log p(class) for shortlist classes and log p(cluster) for the
rest; cluster i's tail, a low-rank projection in_features -> in_features // div_value ** (i+1)
-> cluster size, gives log p(class | cluster), so that

    log p(class) = log p(cluster) + log p(class | cluster)

for a class outside the shortlist. The forward pass evaluates each tail only on the rows whose
target lies in its cluster.
"""

import numbers
from collections import namedtuple

import numpy as np

from pyrt.functional import _tensor, _xp, log_softmax
from pyrt.joining import cat
from pyrt.nn.layers import Linear, ModuleList, Sequential
from pyrt.nn.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over `n_classes` classes of `in_features`-long inputs; `cutoffs` are
    the sorted, unique class indices in [1, n_classes - 1] where the clusters begin.

    ``forward(input [N, in_features], target [N])`` returns (output, loss): output [N] is the
    log-probability of each target, loss the mean of its negation (a 1-d input and a 0-d
    target are one example). ``log_prob(input)`` is the full [N, n_classes] log-probability
    table, ``predict(input)`` its argmax per row."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs)
                or any(not isinstance(c, numbers.Real) or int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            if hidden <= 0:
                raise ValueError(f"cluster {i}'s projection in_features // div_value ** {i + 1} "
                                 f"= {hidden} is empty: pyrt's Linear needs positive sizes")
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False),
                                        Linear(hidden, size, bias=False)))
        if dtype not in (None, np.float32, "float32"):
            raise TypeError(f"AdaptiveLogSoftmaxWithLoss: pyrt's parameters are float32, got "
                            f"dtype={dtype!r}")
        if device is not None:
            self.to(device)

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        Tensor = _tensor()
        if not isinstance(input_, Tensor) or not isinstance(target_, Tensor):
            raise TypeError("AdaptiveLogSoftmaxWithLoss: input and target must be Tensors")
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target_.dtype != np.int64:
            raise TypeError(f"AdaptiveLogSoftmaxWithLoss: target must be int64 class "
                            f"indices, got {target_.dtype}")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        labels = np.asarray(target_.detach().cpu().numpy()).reshape(-1)
        bounds = [0] + self.cutoffs
        inside = (labels >= 0) & (labels < self.n_classes)
        if not inside.all():
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{labels.min()}, {labels.max()}] were found. ")
        # which head logit each row reads: its class in the shortlist, else its cluster's
        head_column = labels.copy()
        pieces, rows = [], []
        for i in range(1, len(bounds) - 1):
            members = np.nonzero((labels >= bounds[i]) & (labels < bounds[i + 1]))[0]
            if members.size == 0:
                continue
            head_column[members] = self.shortlist_size + i - 1
            index = self._index(members, input)
            logprob = log_softmax(self.tail[i - 1](input.index_select(0, index)), dim=1)
            relative = self._index((labels[members] - bounds[i]).reshape(-1, 1), input)
            pieces.append(logprob.gather(1, relative).reshape(-1))
            rows.append(members)
        head_logprob = log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, self._index(head_column.reshape(-1, 1), input))
        output = output.reshape(-1)
        if pieces:
            # each cluster row's log p(class | cluster), put back in row order; 0 elsewhere
            shortlist = np.nonzero(labels < self.shortlist_size)[0]
            order = np.concatenate([shortlist] + rows)
            inverse = np.empty_like(order)
            inverse[order] = np.arange(order.size)
            xp = _xp(output._data)
            local = cat([_tensor()(xp.zeros(shortlist.size, np.float32))] + pieces)
            output = output + local.index_select(0, self._index(inverse, input))
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    @staticmethod
    def _index(array, like):
        """An int64 index tensor holding `array`, on the device of `like`."""
        Tensor = _tensor()
        index = Tensor(np.ascontiguousarray(array, dtype=np.int64))
        return index if like.device == index.device else index.to(like.device)

    def _full_log_prob(self, input, head_output):
        """The [N, n_classes] log-probabilities from the head's output."""
        head_logprob = log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = log_softmax(self.tail[i](input), dim=1)
            column = self.shortlist_size + i
            parts.append(cluster + head_logprob[:, column:column + 1])
        return cat(parts, dim=1)

    def log_prob(self, input):
        """log p(class) for every class: [N, n_classes] for input [N, in_features]."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row of input [N, in_features]: [N] int64 (as
        ``log_prob(input).argmax(dim=1)``)."""
        return self.log_prob(input).argmax(dim=1)

