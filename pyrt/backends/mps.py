"""torch.backends.mps: pyrt has no Metal backend."""

__all__ = ["is_available", "is_built"]


def is_available():
    """False: pyrt has no MPS (Apple Metal) backend."""
    return False


def is_built():
    """False: pyrt is built without MPS."""
    return False
