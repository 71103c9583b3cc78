"""The XOR task: random binary pairs labelled with their exclusive or.

This is the setup of Arraymancer issue #485, the benchmark where switching OpenMP on made a
tiny network 10x slower: 3200 random pairs (100 batches of 32), a 2-3-1 network, sigmoid
cross-entropy and plain SGD.
"""

import numbers

import numpy as np

from pyrt.tensor import checked_seed

__all__ = ["XOR_TRUTH_TABLE", "make_xor"]

# the four distinct inputs and their labels: a complete test of a trained network
XOR_TRUTH_TABLE = (
    np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32),
    np.array([[0], [1], [1], [0]], dtype=np.float32),
)


def make_xor(n_samples=3200, *, seed=0):
    """`n_samples` random inputs in {0, 1}^2 and their labels ``x0 xor x1``.

    Returns ``(x, y)``: float32 arrays shaped [n_samples, 2] and [n_samples, 1] (the shape
    ``BCEWithLogitsLoss`` expects next to a one-output network). The same seed gives the same
    data on every machine.
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
            or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    seed = checked_seed(seed, none_allowed=True)
    bits = np.random.default_rng(seed).integers(0, 2, size=(int(n_samples), 2), dtype=np.int64)
    x = bits.astype(np.float32)
    y = (bits[:, :1] ^ bits[:, 1:]).astype(np.float32)
    return x, y
