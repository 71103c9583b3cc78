"""torch.amp.GradScaler under pyrt: dynamic loss scaling, with torch's state machine,
arithmetic and errors.

Scaling keeps small float16 gradients from flushing to zero. pyrt's gradients are float32, so
a script gains nothing from it here, but it runs unchanged: the loss is multiplied by the
scale, ``unscale_`` divides the gradients by it and looks for inf/nan, ``step`` skips the
optimizer's step when it found one, and ``update`` shrinks the scale after such a step and
grows it after ``growth_interval`` clean ones in a row. The scale is a float32 number and
every product is rounded as torch's CPU kernels round it, so the scales, the skipped steps
and the parameters equal torch's step for step.
"""

import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the scaler's iteration: nothing done yet, gradients
    unscaled, or stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    # found_inf: whether a gradient was inf or nan; None until unscale_ saw one
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Scale the loss, and unscale and check the gradients, for mixed-precision training::

        scaler = pyrt.amp.GradScaler()
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # skipped when a gradient is inf or nan
        scaler.update()

    `device` is the device type the scale lives on: as torch does, a 'cuda' scaler warns and
    disables itself when CUDA is not available. A disabled scaler passes everything through:
    ``scale`` returns its input, ``step`` calls ``optimizer.step``, the scale is 1.0.
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled:
            from pyrt import cuda

            if not cuda.is_available():
                warnings.warn("pyrt.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # a float32 number once scale() first ran
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None  # clean steps in a row since the scale last changed
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script "
                f"did not use scaler.scale(loss or outputs) earlier in the iteration.")

    def _lazy_init_scale_growth_tracker(self):
        self._scale = np.float32(self._init_scale)
        self._growth_tracker = int(self._init_growth_tracker)

    def scale(self, outputs):
        """`outputs` (a tensor, or lists and tuples of them, nested) multiplied by the
        scale; other iterables come back as a lazy map, as torch returns them."""
        if not self._enabled:
            return outputs
        from pyrt.tensor import Tensor

        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        scale = float(self._scale)

        def apply_scale(value):
            if isinstance(value, Tensor):
                return value * scale
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale):
        """Multiply every gradient of `optimizer` by `inv_scale` in place (as float32, as
        torch's kernel does; a factor of 1 leaves them as they are), and say whether any
        held an inf or a nan before: None when no parameter has a gradient."""
        found_inf = None
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param._grad
                if grad is None:
                    continue
                values = grad._data
                xp = np if type(values) is np.ndarray else _array_module(values)
                found_inf = bool(found_inf) or not bool(xp.isfinite(values).all())
                if inv_scale == 1.0:
                    continue
                if xp is np and not values.flags.writeable:  # a read-only view: replace it
                    grad._data = values * inv_scale
                else:
                    values *= inv_scale
        return found_inf

    def unscale_(self, optimizer):
        """Divide the gradients of `optimizer` by the scale, in place, and note whether one
        is inf or nan. Once per optimizer between update()s; step() calls it if not done, so
        call it only to see or clip the true gradients before step()."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, rounded to float32, as torch computes it
        inv_scale = np.float32(1.0 / np.float64(self._scale))
        optimizer_state["found_inf"] = self._unscale_grads_(optimizer, inv_scale)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless unscale_ did), then ``optimizer.step(*args,
        **kwargs)`` unless one was inf or nan. Returns what step returned, or None when it
        was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if optimizer_state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not optimizer_state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Set the scale for the next iteration: `new_scale` if given (a float, or a
        one-element tensor that needs no grad); else the scale times backoff_factor if any
        optimizer found an inf or nan this iteration, times growth_factor after
        growth_interval clean iterations in a row, as it was otherwise."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._scale = np.float32(self._checked_new_scale(new_scale))
        else:
            found_infs = [state["found_inf"] for state in self._per_optimizer_states.values()
                          if state["found_inf"] is not None]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(found_infs))
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _checked_new_scale(self, new_scale):
        if isinstance(new_scale, float):
            return new_scale
        from pyrt.tensor import Tensor

        if (not isinstance(new_scale, Tensor) or new_scale.device.type != self._device
                or new_scale.numel() != 1 or new_scale.requires_grad):
            raise AssertionError(
                "new_scale should be a float or a 1-element pyrt.cuda.FloatTensor or "
                "pyrt.FloatTensor with requires_grad=False.")
        return new_scale.item()

    def _update_scale(self, found_inf):
        """torch's _amp_update_scale_: products of the float32 scale and a float64 factor,
        rounded to float32; a grown scale that overflows is not taken."""
        if found_inf:
            self._scale = np.float32(float(self._scale) * self._backoff_factor)
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            with np.errstate(over="ignore"):
                grown = np.float32(float(self._scale) * self._growth_factor)
            if np.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    def get_scale(self):
        """The scale as a Python float (1.0 when disabled; init_scale before the first
        scale())."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self):
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by after an inf or nan."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the factor the scale shrinks by after an inf or nan."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """How many clean iterations in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set how many clean iterations in a row grow the scale."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker

    def is_enabled(self):
        """Whether this scaler scales (False after enabled=False, or 'cuda' without CUDA)."""
        return self._enabled

    def state_dict(self):
        """The scale, the factors, the interval and the count of clean iterations, as a
        dict (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        """Take the state state_dict() returned (a disabled scaler ignores it)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was "
                               "saved from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)


def _array_module(values):
    """CuPy, for a gradient on the GPU (imported only then)."""
    import cupy

    return cupy
