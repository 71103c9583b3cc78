"""torch.nn.attention's kernel choice: ``SDPBackend`` and the ``sdpa_kernel(backends)``
context manager. pyrt has one implementation of scaled_dot_product_attention, so the
context manager checks its argument and changes nothing; ported code that picks a backend
runs unchanged."""

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """torch's attention backends, by torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Accepts an SDPBackend or a list of them, as torch's does; pyrt's one attention
    kernel runs whatever they are."""
    listed = backends if isinstance(backends, (list, tuple, set)) else [backends]
    for backend in listed:
        if not isinstance(backend, SDPBackend):
            raise TypeError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                            f"instances, got {type(backend).__name__}")
    yield
