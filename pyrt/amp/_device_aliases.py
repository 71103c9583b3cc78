"""torch's deprecated per-device AMP names (torch.cuda.amp.autocast, torch.cpu.amp.GradScaler,
...): subclasses of pyrt.amp's that fix the device and warn, with torch's FutureWarning, that
the pyrt.amp name is the one to use."""

import warnings

from pyrt.amp.autocast_mode import BFLOAT16, FLOAT16, autocast
from pyrt.amp.autocast_mode import custom_bwd as _custom_bwd
from pyrt.amp.autocast_mode import custom_fwd as _custom_fwd
from pyrt.amp.grad_scaler import GradScaler

__all__ = ["device_autocast", "device_custom_bwd", "device_custom_fwd", "device_grad_scaler"]

_DEFAULT_DTYPES = {"cuda": FLOAT16, "cpu": BFLOAT16}


def _deprecated(old, new):
    warnings.warn(f"`pyrt.{old}(args...)` is deprecated. Please use `pyrt.{new}` instead.",
                  FutureWarning, stacklevel=3)


def device_autocast(device_type):
    """pyrt.<device_type>.amp.autocast: autocast(device_type, ...) under its old name."""
    default_dtype = _DEFAULT_DTYPES[device_type]

    class DeviceAutocast(autocast):
        __doc__ = (f"See pyrt.autocast. ``pyrt.{device_type}.amp.autocast(args...)`` is "
                   f"deprecated: use ``pyrt.amp.autocast('{device_type}', args...)``.")

        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            _deprecated(f"{device_type}.amp.autocast",
                        f"amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype,
                             cache_enabled=cache_enabled)

    DeviceAutocast.__name__ = DeviceAutocast.__qualname__ = "autocast"
    DeviceAutocast.__module__ = f"pyrt.{device_type}.amp"
    return DeviceAutocast


def device_grad_scaler(device_type):
    """pyrt.<device_type>.amp.GradScaler: GradScaler(device_type, ...) under its old name."""

    class DeviceGradScaler(GradScaler):
        __doc__ = (f"See pyrt.amp.GradScaler. ``pyrt.{device_type}.amp.GradScaler(args...)`` "
                   f"is deprecated: use ``pyrt.amp.GradScaler('{device_type}', args...)``.")

        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            _deprecated(f"{device_type}.amp.GradScaler",
                        f"amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    DeviceGradScaler.__name__ = DeviceGradScaler.__qualname__ = "GradScaler"
    DeviceGradScaler.__module__ = f"pyrt.{device_type}.amp"
    return DeviceGradScaler


def device_custom_fwd(device_type):
    """pyrt.<device_type>.amp.custom_fwd: custom_fwd(..., device_type=...), deprecated."""

    def custom_fwd(fwd=None, *, cast_inputs=None):
        _deprecated(f"{device_type}.amp.custom_fwd",
                    f"amp.custom_fwd(args..., device_type='{device_type}')")
        return _custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)

    return custom_fwd


def device_custom_bwd(device_type):
    """pyrt.<device_type>.amp.custom_bwd: custom_bwd(..., device_type=...), deprecated."""

    def custom_bwd(bwd):
        _deprecated(f"{device_type}.amp.custom_bwd",
                    f"amp.custom_bwd(args..., device_type='{device_type}')")
        return _custom_bwd(bwd, device_type=device_type)

    return custom_bwd

