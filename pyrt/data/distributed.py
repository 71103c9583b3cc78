"""DistributedSampler, as torch.utils.data's: each of ``num_replicas`` processes (ranks)
visits its own share of a data set's indices, the shares together covering the data set.

The order is torch's, index for index, shuffled or not. An epoch's order is built in three
steps, the same in every rank:

1. the indices 0..n-1, or with ``shuffle`` a permutation of them seeded with
   ``seed + epoch`` (see ``torch_randperm``);
2. padded to a multiple of ``num_replicas`` by repeating the order from its start (or, with
   ``drop_last``, cut to the largest multiple);
3. rank r takes the positions r, r + num_replicas, r + 2 * num_replicas, ... of that list.
"""

import math
import numbers

import numpy as np

from pyrt.data.sampler import Sampler

__all__ = ["DistributedSampler", "torch_randperm"]


def torch_randperm(n, seed):
    """The permutation of 0..n-1 that ``torch.randperm(n, generator=g)`` returns on the CPU for
    ``g = torch.Generator().manual_seed(seed)``, as a list, computed without torch.

    torch's CPU generator is the 32-bit Mersenne Twister MT19937 seeded with the low 32 bits of
    the seed by the reference initialisation (init_genrand), which is also how NumPy's legacy
    RandomState seeds it; the state is copied from there into NumPy's MT19937, whose raw
    outputs are then the generator's 32-bit draws. randperm is a Fisher-Yates shuffle that
    swaps position i with i + (draw_i mod (n - i)). torch switches to 64-bit draws for n of
    2**32 / 20 and more, far beyond what this loop is meant for.
    """
    legacy = np.random.RandomState(seed & 0xFFFFFFFF)
    _, key, pos = legacy.get_state()[:3]
    twister = np.random.MT19937()
    twister.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    draws = twister.random_raw(max(n - 1, 0)).tolist()
    order = list(range(n))
    for i, draw in enumerate(draws):
        j = i + draw % (n - i)
        order[i], order[j] = order[j], order[i]
    return order


def _integer(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


class DistributedSampler(Sampler):
    """The indices of `dataset` that rank `rank` of `num_replicas` visits: every
    num_replicas-th index of the epoch's (padded) order, from position `rank` on.

    Each rank gets ``num_samples`` indices: ``ceil(n / num_replicas)``, the order being padded
    by repeating its start so that every rank gets as many; with ``drop_last`` the tail that
    does not divide evenly is dropped instead (``ceil((n - num_replicas) / num_replicas)``
    each). ``shuffle=True`` (the default) permutes the indices first with a permutation seeded
    with ``seed + epoch``, the same in every rank and equal to torch's; call ``set_epoch`` at
    the start of each epoch, before iterating, for a new order.

    pyrt runs as one process with no process group, so `num_replicas` and `rank` default to
    a world of one process (1 and 0), where torch would ask the default process group.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        num_replicas = 1 if num_replicas is None else _integer(num_replicas, "num_replicas")
        rank = 0 if rank is None else _integer(rank, "rank")
        if num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive integer, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = bool(drop_last)
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = max(math.ceil((n - num_replicas) / num_replicas), 0)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = bool(shuffle)
        self.seed = _integer(seed, "seed")

    def __iter__(self):
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        elif indices:
            # repeat the whole order as often as the padding needs (more than once only when
            # there are fewer samples than replicas), then cut
            rounds = math.ceil(self.total_size / len(indices))
            indices = (indices * rounds)[:self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(f"the data set changed length: {n} samples, where "
                               f"DistributedSampler was built for {self.total_size} indices")
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Make the next iterations use epoch `epoch`'s order (with shuffle, the permutation
        seeded with ``seed + epoch``)."""
        self.epoch = _integer(epoch, "epoch")
