"""torch.set_warn_always and is_warn_always_enabled: whether a warning that is given once
per process should be given every time. pyrt's warnings go through Python's ``warnings``
module, whose filters decide how often each shows; this flag is kept for programs that set
and read it."""

__all__ = ["is_warn_always_enabled", "set_warn_always"]

_enabled = False


def set_warn_always(b):
    """Set the flag (a bool)."""
    global _enabled
    if not isinstance(b, bool):
        raise TypeError(f"set_warn_always(): argument 'b' must be bool, got "
                        f"{type(b).__name__}")
    _enabled = b


def is_warn_always_enabled():
    """The flag set_warn_always set (False at first)."""
    return _enabled
