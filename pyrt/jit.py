"""torch.jit's decorators and queries, as identities: pyrt runs Python as it is, so a model
that is scripted or traced for torch runs unchanged (``pyrt.jit.script(model)`` is
``model``). ``is_scripting()`` and ``is_tracing()`` are False."""

__all__ = ["export", "ignore", "is_scripting", "is_tracing", "script", "trace", "unused"]


def _callable(obj, name, what):
    if not callable(obj):
        raise TypeError(f"{name}(): {what} must be a function or a Module, got "
                        f"{type(obj).__name__}")
    return obj


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """`obj` (a function, a Module or a class) itself."""
    return _callable(obj, "script", "obj")


def trace(func, example_inputs=None, *args, **kwargs):
    """`func` (a function or a Module) itself: nothing is recorded, so it goes on taking
    every branch as Python takes it (torch's trace would keep the branches its example took).
    """
    return _callable(func, "trace", "func")


def ignore(drop=False, **kwargs):
    """``@ignore`` or ``@ignore(drop=True)``: the function itself."""
    if callable(drop):
        return drop
    return lambda fn: _callable(fn, "ignore", "the decorated object")


def unused(fn):
    """The function itself."""
    return _callable(fn, "unused", "fn")


def export(fn):
    """The function itself."""
    return _callable(fn, "export", "fn")


def is_scripting():
    """False: pyrt code always runs as Python."""
    return False


def is_tracing():
    """False: nothing is traced."""
    return False
