"""torch.backends.openmp: pyrt runs its parallel work on its own work-stealing pool, not on
OpenMP."""

__all__ = ["is_available"]


def is_available():
    """False: pyrt is built without OpenMP (pyrt.get_num_threads() sizes its own pool)."""
    return False
