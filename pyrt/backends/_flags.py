"""A module whose switches are checked when set, as torch.backends' modules are: the module
object's class is swapped for a subclass of ModuleType with one property per switch."""

import sys
import types

import numpy as np

__all__ = ["bool_switch", "install"]


def bool_switch(name, setter_name, default):
    """A property holding a bool, `default` at first; any other value raises torch's
    RuntimeError, naming torch's setter (`setter_name`)."""
    attribute = f"_{name}"

    def get(module):
        return getattr(module, attribute, default)

    def set_(module, value):
        if not isinstance(value, (bool, np.bool_)):
            raise RuntimeError(  # noqa: TRY004 (a RuntimeError, as torch's)
                f"{setter_name} expects a bool, but got {type(value).__name__}")
        module.__dict__[attribute] = bool(value)

    return property(get, set_, doc=f"torch.backends' {name} switch (default {default}).")


def install(module_name, **switches):
    """Give the module `module_name` the properties `switches` (name -> property)."""
    module = sys.modules[module_name]
    module.__class__ = type(f"{module_name.rsplit('.', 1)[-1]}Module", (types.ModuleType,),
                            switches)
