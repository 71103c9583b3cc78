"""ASGD, as torch.optim.ASGD: stochastic gradient descent with a decaying step size, which also
keeps the average of the iterates from step t0 on (Polyak and Juditsky 1992)."""

import numpy as np

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer
from pyrt.optim.torch_options import check_options

__all__ = ["ASGD"]


def asgd_hyperparameters(lr, lambd, alpha, t0, weight_decay, maximize, foreach, capturable,
                         differentiable):
    """ASGD's hyper-parameters checked as PyTorch checks them, as (lr, lambd, alpha, t0,
    weight_decay, maximize)."""
    lr = _real(lr, "lr")
    lambd = _real(lambd, "lambd")
    alpha = _real(alpha, "alpha")
    t0 = _real(t0, "t0")
    weight_decay = _real(weight_decay, "weight_decay")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    maximize = check_options(maximize, foreach, capturable, differentiable)
    return lr, lambd, alpha, t0, weight_decay, maximize


def _f32(x):
    """x rounded to float32, as torch keeps eta and mu (0-d float32 tensors)."""
    return float(np.float32(x))


class ASGD(ArrayOptimizer):
    """For each parameter p with gradient g (-g with maximize), at its step t:

        g = g + weight_decay * p
        p = p (1 - lambd eta) - eta g
        ax = ax + mu (p - ax)   (ax = p while mu is 1)
        eta = lr / (1 + lambd lr t)^alpha;  mu = 1 / max(1, t - t0)

    eta starts at lr and mu at 1; ax, the average of the iterates since step t0, is the
    parameter to evaluate with. ``state[p]`` holds "step", "eta" and "mu" (numbers, rounded
    to float32 as torch keeps them) and "ax" (a float32 array). ``foreach`` and
    ``capturable`` are accepted and change nothing."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        asgd_hyperparameters(lr, lambd, alpha, t0, weight_decay, maximize, foreach, capturable,
                             differentiable)
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize, "differentiable": differentiable,
                                  "capturable": capturable})

    def _new_state(self, state, param, xp, lr, *hyperparameters):
        state["eta"] = _f32(lr)
        state["mu"] = 1.0
        state["ax"] = xp.zeros_like(param)

    def _update(self, param, grad, state, xp, lr, lambd, alpha, t0, weight_decay, maximize):
        if maximize:
            grad = -grad
        if weight_decay != 0:
            grad = grad + weight_decay * param
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        param *= 1 - lambd * eta
        param += -eta * grad
        if mu != 1:
            ax += (param - ax) * mu
        else:
            ax[...] = param
        t = state["step"]
        state["eta"] = _f32(lr / ((1 + lambd * lr * t) ** alpha))
        state["mu"] = _f32(1 / max(1, t - t0))

    _STATE_ARRAYS = ("ax",)
    _STATE_NEEDED = ("step", "eta", "mu", "ax")

    def _check_state(self, restored, key, param):
        # eta and mu are numbers; torch saves them as 0-d tensors, which load_state_dict keeps
        # as arrays for a 0-d parameter
        for name in ("eta", "mu"):
            value = restored.get(name)
            if isinstance(value, np.ndarray) and value.ndim == 0:
                value = value.item()
            if name in restored:
                if isinstance(value, (bool, np.bool_)) or not isinstance(
                        value, (int, float, np.integer, np.floating)):
                    raise ValueError(f"loaded state {name!r} of parameter {key} must be a "
                                     f"number, got {type(value).__name__}")
                restored[name] = float(value)
        super()._check_state(restored, key, param)

    _HYPERPARAMETERS = ("lr", "lambd", "alpha", "t0", "weight_decay", "maximize", "foreach",
                        "capturable", "differentiable")
    _checked_hyperparameters = staticmethod(asgd_hyperparameters)
