"""Automatic mixed precision, as torch.amp: ``autocast`` regions and the ``GradScaler``.

pyrt computes in float32 only: ops run in float32 and autocast changes no dtype, and the
scaler's arithmetic is torch's, so a mixed-precision training script runs unchanged and
trains as it would in float32 under torch's AMP (see autocast_mode.py and grad_scaler.py).
"""

from pyrt.amp.autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    is_autocast_available,
)
from pyrt.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
