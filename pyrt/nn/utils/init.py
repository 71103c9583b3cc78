"""skip_init, as torch.nn.utils.skip_init: a module made without drawing its initial weights."""

import inspect

from pyrt.nn.module import Module
from pyrt.random import get_rng_state, set_rng_state

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters and buffers hold arbitrary values, to
    be set by the caller (from a checkpoint, say): pyrt's generator is left as it was, as if
    the module had drawn nothing. `device` (a keyword) is where the module's tensors go."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")  # noqa: TRY004 (torch's)
    device = kwargs.pop("device", "cpu")
    if "device" in inspect.signature(module_cls).parameters:
        kwargs["device"] = device
    # the initial draws are made and then forgotten: pyrt's layers draw their weights in
    # their constructors, which offer no way to leave the arrays empty
    state = get_rng_state()
    try:
        module = module_cls(*args, **kwargs)
    finally:
        set_rng_state(state)
    return module.to(device)
