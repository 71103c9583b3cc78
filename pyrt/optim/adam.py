"""Adam and AdamW, as torch.optim.Adam (L2 weight decay) and torch.optim.AdamW (decoupled
weight decay); each parameter is updated by one fused kernel pass (pyrt.ops.adam_step), or
with amsgrad or maximize by array operations (pyrt.optim.adam_options)."""

from typing import ClassVar

import numpy as np

from pyrt import ops
from pyrt._pyrt_cffi import ffi
from pyrt.ops._checks import F32
from pyrt.ops.optim import (
    _grad,
    _in_place,
    adam_hyperparameters,
    adam_step_count,
    adam_step_raw,
)
from pyrt.optim.adam_options import adam_flags, array_step, uses_array_step
from pyrt.optim.optimizer import Optimizer

__all__ = ["Adam", "AdamW"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer


class Adam(Optimizer):
    """For each parameter p with gradient g, at its step t (counting from 1):

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        p = p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

    ``state[p]`` holds "step" (an int), "exp_avg" (m) and "exp_avg_sq" (v), float32 arrays.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        adam_hyperparameters(lr, betas, eps, weight_decay)  # ValueError as PyTorch's
        amsgrad, maximize = adam_flags(amsgrad, foreach, maximize, capturable, differentiable,
                                       fused)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize)
        self._cache = {}  # id(param) -> (param, data, exp_avg, exp_avg_sq, their pointers)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = None if closure is None else self._closure_loss(closure)
        on_device = self._on_device()
        if uses_array_step(self):  # amsgrad or maximize: not in the fused kernel
            array_step(self)
            return loss
        if on_device:  # every parameter of a group in one fused launch
            from pyrt.cuda.optimizers import adam_step

            adam_step(self)
            self._stepped()
            return loss
        # only kernels run below, no tensor ops: nothing is recorded for autograd
        states, cache = self.state, self._cache
        for group in self.param_groups:
            lr, beta1, beta2, eps, weight_decay = self._hyperparameters(group)
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = states[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(p._data)
                    state["exp_avg_sq"] = np.zeros_like(p._data)
                param, m, v = p._data, state["exp_avg"], state["exp_avg_sq"]
                cached = cache.get(id(p))
                if (cached is None or cached[1] is not param or cached[2] is not m
                        or cached[3] is not v or cached[0] is not p):
                    cached = self._pointers(p, param, m, v)
                g = grad._data
                if not (g.shape == param.shape and g.dtype is F32 and g.flags.c_contiguous):
                    g = _grad(g, param.shape)
                step = adam_step_count(state["step"] + 1)  # the state counts the steps done
                adam_step_raw(cached[4], _from_buffer(_FLOATS, g), cached[5], cached[6],
                              param.size, lr, beta1, beta2, eps, weight_decay, step)
                state["step"] = step
        self._stepped()
        return loss

    _STATE_ARRAYS = ("exp_avg", "exp_avg_sq")
    _STATE_NEEDED = ("step", "exp_avg", "exp_avg_sq")

    def _check_state(self, restored, key, param):
        super()._check_state(restored, key, param)
        if restored:
            try:
                adam_step_count(restored["step"])  # the steps done: one at least
            except (TypeError, ValueError) as exc:
                raise ValueError(f"loaded state 'step' of parameter {key}: {exc}") from None

    # the group's hyper-parameters, in the order adam_hyperparameters checks them
    _HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay")
    _checked_hyperparameters = staticmethod(adam_hyperparameters)

    def _pointers(self, p, param, exp_avg, exp_avg_sq):
        """Check p's arrays once and keep their pointers while they stay the same arrays
        (the cache keeps them alive)."""
        _in_place(param, "param")
        _in_place(exp_avg, "exp_avg", param.shape)
        _in_place(exp_avg_sq, "exp_avg_sq", param.shape)
        cached = (p, param, exp_avg, exp_avg_sq, _from_buffer(_FLOATS, param),
                  _from_buffer(_FLOATS, exp_avg), _from_buffer(_FLOATS, exp_avg_sq))
        self._cache[id(p)] = cached
        return cached


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as torch.optim.AdamW: each
    parameter with a gradient is first scaled by 1 - lr * weight_decay, then takes Adam's step
    without weight decay. ``weight_decay`` defaults to 1e-2."""

    # torch.optim.AdamW saves decoupled_weight_decay=True, which is what this one does
    _OFF: ClassVar[dict] = {**Adam._OFF, "decoupled_weight_decay": (True,)}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)

    def step(self, closure=None):
        loss = None if closure is None else self._closure_loss(closure)
        # every group's settings checked before any parameter is touched
        settings = [super(AdamW, self)._hyperparameters(group) for group in self.param_groups]
        for group, (lr, _, _, _, weight_decay) in zip(self.param_groups, settings):
            if weight_decay == 0:
                continue
            decay = 1.0 - lr * weight_decay  # rounded to float32 by the kernel, as in torch
            for p in group["params"]:
                if p.grad is not None:
                    # (checked as a parameter: ops.mul would name it out)
                    ops.mul(p._data, decay, out=_in_place(p._data, "param"))
        super().step()
        return loss

    def _hyperparameters(self, group):
        """Adam's hyper-parameters of the group, weight decay taken out: step() applies it."""
        lr, beta1, beta2, eps, _ = super()._hyperparameters(group)
        return lr, beta1, beta2, eps, 0.0
