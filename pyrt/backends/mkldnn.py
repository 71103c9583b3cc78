"""torch.backends.mkldnn: pyrt does not use oneDNN (its CPU kernels are its own), so
is_available() is False; ``enabled`` is remembered and changes nothing."""

from pyrt.backends._flags import bool_switch, install

__all__ = ["is_available"]


def is_available():
    """False: pyrt is built without oneDNN (MKL-DNN)."""
    return False


install(__name__, enabled=bool_switch("enabled", "set_enabled_mkldnn", True))
