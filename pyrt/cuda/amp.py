"""torch.cuda.amp's names: autocast and GradScaler fixed to 'cuda', deprecated in favour of
pyrt.amp's (each warns a FutureWarning, as torch's do). Without CUDA both warn and disable
themselves, as torch's do on a machine without a GPU."""

from pyrt.amp._device_aliases import (
    device_autocast,
    device_custom_bwd,
    device_custom_fwd,
    device_grad_scaler,
)

__all__ = ["GradScaler", "amp_definitely_not_available", "autocast", "custom_bwd",
           "custom_fwd"]

autocast = device_autocast("cuda")
GradScaler = device_grad_scaler("cuda")
custom_fwd = device_custom_fwd("cuda")
custom_bwd = device_custom_bwd("cuda")


def amp_definitely_not_available():
    """Whether CUDA is not available, so that 'cuda' autocast and scaling turn themselves
    off."""
    from pyrt import cuda

    return not cuda.is_available()
