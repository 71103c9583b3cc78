"""torch.backends.mkl: pyrt does not use Intel MKL."""

__all__ = ["is_available"]


def is_available():
    """False: pyrt's BLAS kernels are its own, not MKL's."""
    return False
