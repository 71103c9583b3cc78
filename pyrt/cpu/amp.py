"""torch.cpu.amp's names: autocast and GradScaler fixed to 'cpu', deprecated in favour of
pyrt.amp's (each warns a FutureWarning, as torch's do)."""

from pyrt.amp._device_aliases import device_autocast, device_grad_scaler

__all__ = ["GradScaler", "autocast"]

autocast = device_autocast("cpu")
GradScaler = device_grad_scaler("cpu")
