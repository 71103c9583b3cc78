"""pyrt.Generator, as torch.Generator: a random number generator of its own, which the draws
that take ``generator=`` (rand, randn, randint, randperm, DataLoader, random_split) use in
place of the one pyrt.manual_seed seeds, so that, say, a data augmentation's draws are
repeatable whatever else the program draws.

A Generator is a NumPy ``Generator`` over PCG64, like pyrt's own, so it draws the numbers
pyrt's would after the same seed (not torch's: its CPU generator is a Mersenne Twister).
manual_seed reseeds it in place, so a generator handed to a loader stays the one reseeded.
"""

import os

import numpy as np

from pyrt.tensor import checked_seed

__all__ = ["Generator", "default_generator"]

_DEFAULT_SEED = 67280421310721  # torch's seed for a new generator


class Generator(np.random.Generator):
    """A random number generator: ``pyrt.Generator().manual_seed(0)`` makes one seeded with
    0, to pass as ``generator=`` to the draws that take one. `device` is where the tensors
    it draws are made by default ("cpu" or "cuda"; the numbers are drawn on the host)."""

    def __init__(self, device="cpu"):
        from pyrt.devices import device as as_device

        super().__init__(np.random.PCG64(_DEFAULT_SEED))
        self.device = as_device(device)
        self._seed = _DEFAULT_SEED

    def manual_seed(self, seed):
        """Reseed with `seed` (a non-negative int) and return this generator."""
        seed = checked_seed(seed)
        self.bit_generator.state = np.random.PCG64(seed).state
        self._seed = seed
        return self

    def seed(self):
        """Reseed with a fresh nondeterministic 64-bit number, and return it."""
        value = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(value)
        return value

    def initial_seed(self):
        """The seed of the last manual_seed or seed (torch's default one before any)."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor, for set_state."""
        from pyrt.random import pack_state

        return pack_state(self.bit_generator.state, self._seed)

    def set_state(self, new_state):
        """Restore a state from get_state (or pyrt.get_rng_state); returns this generator."""
        from pyrt.random import unpack_state

        state, self._seed = unpack_state(new_state, "set_state")
        self.bit_generator.state = state
        return self

    def __repr__(self):
        return f"<pyrt.Generator object, device={self.device}>"


def source(generator, name):
    """The NumPy generator a draw named `name` takes its numbers from: pyrt's own (looked up
    now, as manual_seed replaces it) when `generator` is None or pyrt.default_generator,
    else `generator`, which must be a pyrt.Generator."""
    if generator is None or generator is default_generator:
        from pyrt.tensor import generator as pyrt_generator

        return pyrt_generator()
    if not isinstance(generator, Generator):
        raise TypeError(f"{name}(): argument 'generator' must be a pyrt.Generator or None, "
                        f"got {type(generator).__name__}")
    return generator


class _DefaultGenerator:
    """pyrt.default_generator: torch's name for the generator pyrt.manual_seed seeds."""

    def manual_seed(self, seed):
        from pyrt.tensor import manual_seed

        manual_seed(seed)
        return self

    def seed(self):
        from pyrt.random import seed

        return seed()

    def initial_seed(self):
        from pyrt.random import initial_seed

        return initial_seed()

    def get_state(self):
        from pyrt.random import get_rng_state

        return get_rng_state()

    def set_state(self, new_state):
        from pyrt.random import set_rng_state

        set_rng_state(new_state)
        return self


default_generator = _DefaultGenerator()
