"""Rprop, as torch.optim.Rprop (Riedmiller and Braun 1993): each element of a parameter moves
by its own step size in the direction opposite its gradient's sign; the step size grows while
the sign holds and shrinks when it flips."""

import numpy as np

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer
from pyrt.optim.torch_options import check_options

__all__ = ["Rprop"]


def _pair(value, name):
    try:
        first, second = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair of real numbers, got {value!r}") from None
    return _real(first, f"{name}[0]"), _real(second, f"{name}[1]")


def rprop_hyperparameters(lr, etas, step_sizes, maximize, foreach, capturable, differentiable):
    """Rprop's hyper-parameters checked as PyTorch checks them, as (lr, etaminus, etaplus,
    step_size_min, step_size_max, maximize)."""
    lr = _real(lr, "lr")
    etaminus, etaplus = _pair(etas, "etas")
    step_size_min, step_size_max = _pair(step_sizes, "step_sizes")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 < etaminus < 1.0 < etaplus:
        raise ValueError(f"Invalid eta values: {etaminus}, {etaplus}")
    maximize = check_options(maximize, foreach, capturable, differentiable)
    return lr, etaminus, etaplus, step_size_min, step_size_max, maximize


class Rprop(ArrayOptimizer):
    """For each element of parameter p with gradient g (-g with maximize), given the
    gradient g_prev kept from its last step (zero at first) and its step size s (lr at first):

        g g_prev > 0:  s = min(s * etaplus, step_size_max)
        g g_prev < 0:  s = max(s * etaminus, step_size_min);  g = 0 (no move this step)
        p = p - s sign(g);  g_prev = g

    ``state[p]`` holds "step", "prev" (g_prev) and "step_size" (s), float32 arrays.
    ``foreach`` and ``capturable`` are accepted and change nothing."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        rprop_hyperparameters(lr, etas, step_sizes, maximize, foreach, capturable,
                              differentiable)
        super().__init__(params, {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes),
                                  "foreach": foreach, "maximize": maximize,
                                  "differentiable": differentiable, "capturable": capturable})

    def _new_state(self, state, param, xp, lr, *hyperparameters):
        state["prev"] = xp.zeros_like(param)
        state["step_size"] = xp.full_like(param, lr)

    def _update(self, param, grad, state, xp, lr, etaminus, etaplus, step_size_min,
                step_size_max, maximize):
        if maximize:
            grad = -grad
        prev, step_size = state["prev"], state["step_size"]
        direction = grad * prev
        flipped = direction < 0
        # the factor of each step size: etaplus where the sign held, etaminus where it
        # flipped, 1 where either gradient is zero (as float32 numbers, as torch keeps them)
        factor = xp.where(direction > 0, np.float32(etaplus), np.float32(1.0))
        factor[flipped] = np.float32(etaminus)
        step_size *= factor
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        grad = xp.where(flipped, np.float32(0.0), grad)
        param -= xp.sign(grad) * step_size
        prev[...] = grad

    _STATE_ARRAYS = ("prev", "step_size")
    _STATE_NEEDED = ("step", "prev", "step_size")
    _HYPERPARAMETERS = ("lr", "etas", "step_sizes", "maximize", "foreach", "capturable",
                        "differentiable")
    _checked_hyperparameters = staticmethod(rprop_hyperparameters)
