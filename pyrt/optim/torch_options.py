"""The options of torch.optim's optimizers that choose how a step is computed rather than what
it computes, and ``maximize``. pyrt takes them as torch does: ``foreach`` (one kernel launch
per list of tensors) and ``capturable`` (CUDA graph capture) change nothing here, as pyrt
updates each parameter with its own array operations; ``differentiable`` (autograd through
the step) is not implemented, so True is refused rather than ignored."""

import numpy as np

__all__ = ["check_options", "flag"]


def flag(value, name):
    """`value` as a bool; TypeError unless it is one."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def check_options(maximize=False, foreach=None, capturable=False, differentiable=False):
    """Check torch's step options; returns maximize as a bool (the one that changes the
    step: it follows the gradient up instead of down)."""
    if foreach is not None:
        flag(foreach, "foreach")
    flag(capturable, "capturable")
    if flag(differentiable, "differentiable"):
        raise ValueError("differentiable=True is not supported: pyrt's optimizer steps are not "
                         "recorded for autograd")
    return flag(maximize, "maximize")
