"""torch.cpu's interface over the CPU, the device pyrt computes on: ``pyrt.cpu.amp`` (the
deprecated per-device AMP names) and the device queries a script asks of any device."""

from pyrt.cpu import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available():
    """Always True: the CPU is always there."""
    return True


def device_count():
    """1: the CPU is one device (its cores are pyrt's thread pool, pyrt.get_num_threads())."""
    return 1


def current_device():
    """'cpu', as torch.cpu.current_device() names it."""
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: pyrt's CPU ops have finished when they return."""
