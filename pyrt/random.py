"""The state of pyrt's random numbers, as ``torch.random``: seeding (manual_seed, seed,
initial_seed), saving and restoring the generator (get_rng_state, set_rng_state) and
fork_rng, a block whose draws leave the generator as it found it.

pyrt draws every random number, on either device, from one NumPy PCG64 generator
(``pyrt.tensor.generator()``), which manual_seed replaces. Its state is 128 bits of state,
an odd 128-bit increment and a buffered 32-bit half-draw; get_rng_state packs those, with
the seed the generator was made from, into a uint8 tensor, as torch's is a ByteTensor:

    bytes  0..15  state        (little-endian)
    bytes 16..31  increment    (little-endian)
    bytes 32..35  the buffered 32-bit value
    byte  36      whether that value is pending (0 or 1)
    bytes 37..    the seed     (little-endian, at least 8 bytes)
"""

import contextlib
import importlib
import os

import numpy as np

from pyrt.tensor import Tensor, generator, manual_seed

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]

# the module, not pyrt.tensor (the function pyrt exports under that name)
_tensor_module = importlib.import_module("pyrt.tensor")
_FIXED = 37  # the bytes before the seed
_SEED_BYTES = 8


def initial_seed():
    """The seed pyrt's generator was made from: the last manual_seed's, seed's, or the one
    a set_rng_state restored (0 when none was ever given)."""
    return int(generator().bit_generator.seed_seq.entropy)


def seed():
    """Seed pyrt's generator with a fresh nondeterministic 64-bit number (from the
    operating system), and return it."""
    value = int.from_bytes(os.urandom(8), "little")
    manual_seed(value)
    return value


def pack_state(state, seed_value):
    """A PCG64 bit generator's `state` (its dict) and its seed as a uint8 tensor, laid out as
    this module's docstring says."""
    if state["bit_generator"] != "PCG64":  # (pyrt makes only PCG64 generators)
        raise RuntimeError(f"get_rng_state(): pyrt's generator is {state['bit_generator']}, "
                           f"expected PCG64")
    seed_length = max(_SEED_BYTES, (seed_value.bit_length() + 7) // 8)
    packed = (state["state"]["state"].to_bytes(16, "little")
              + state["state"]["inc"].to_bytes(16, "little")
              + int(state["uinteger"]).to_bytes(4, "little")
              + bytes([int(state["has_uint32"])])
              + seed_value.to_bytes(seed_length, "little"))
    return Tensor(np.frombuffer(packed, np.uint8).copy())


def unpack_state(new_state, name="set_rng_state"):
    """The PCG64 state dict and the seed that pack_state packed into `new_state`; `name` is
    the function named in errors."""
    if not isinstance(new_state, Tensor) or new_state.dtype != np.uint8:
        what = (f"a tensor of dtype {new_state.dtype}" if isinstance(new_state, Tensor)
                else type(new_state).__name__)
        raise TypeError(f"{name}(): new_state must be a uint8 tensor from "
                        f"get_rng_state(), got {what}")
    data = new_state._data if isinstance(new_state._data, np.ndarray) else new_state._data.get()
    packed = bytes(np.ascontiguousarray(data).reshape(-1))
    if new_state.ndim != 1 or len(packed) < _FIXED + _SEED_BYTES:
        raise RuntimeError(f"{name}(): RNG state is wrong size: expected a 1-d tensor "
                           f"of at least {_FIXED + _SEED_BYTES} bytes, got shape "
                           f"{tuple(new_state.shape)}")
    increment = int.from_bytes(packed[16:32], "little")
    pending = packed[36]
    if increment % 2 == 0 or pending > 1:  # PCG64's increment is odd
        raise RuntimeError(f"{name}(): new_state is not a state of pyrt's generator "
                           "(from get_rng_state())")
    state = {
        "bit_generator": "PCG64",
        "state": {"state": int.from_bytes(packed[:16], "little"), "inc": increment},
        "has_uint32": int(pending),
        "uinteger": int.from_bytes(packed[32:36], "little"),
    }
    return state, int.from_bytes(packed[_FIXED:], "little")


def get_rng_state():
    """The state of pyrt's generator as a uint8 tensor (the layout is in this module's
    docstring): set_rng_state(it) later makes the same draws come again."""
    bits = generator().bit_generator
    return pack_state(bits.state, int(bits.seed_seq.entropy))


def set_rng_state(new_state):
    """Restore pyrt's generator to `new_state`, a uint8 tensor from get_rng_state: the
    draws that followed it then come again, and initial_seed() is its seed again."""
    state, seed_value = unpack_state(new_state)
    restored = np.random.Generator(np.random.PCG64(seed_value))
    restored.bit_generator.state = state
    # replaced, as manual_seed replaces it: every draw looks the generator up anew
    _tensor_module._generator = restored


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """A block after which pyrt's generator is as it was before it, whatever the block drew
    (unless `enabled` is False). pyrt has one generator for all devices, so `devices` and
    `device_type` (torch's, naming the accelerators whose generators to fork) change
    nothing: it is always saved and restored."""
    del _caller, _devices_kw  # (torch's internal arguments, taken for its signature)
    if devices is not None:
        devices = list(devices)
    if not isinstance(enabled, bool):
        raise TypeError(f"fork_rng(): enabled must be a bool, got {type(enabled).__name__}")
    if not enabled:
        yield
        return
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)

