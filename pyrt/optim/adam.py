"""Adam, as torch.optim.Adam (amsgrad=False, L2 weight decay); each parameter is updated by
one fused kernel pass (pyrt.ops.adam_step)."""

import numpy as np

from pyrt.autograd import no_grad
from pyrt.ops.optim import adam_step
from pyrt.optim.optimizer import Optimizer

__all__ = ["Adam"]


class Adam(Optimizer):
    """For each parameter p with gradient g, at its step t (counting from 1):

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        p = p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)

    ``state[p]`` holds "step" (an int), "exp_avg" (m) and "exp_avg_sq" (v), float32 arrays.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = np.zeros_like(p.data)
                        state["exp_avg_sq"] = np.zeros_like(p.data)
                    step = state["step"] + 1
                    adam_step(p.data, p.grad.data, state["exp_avg"], state["exp_avg_sq"],
                              step=step, lr=group["lr"], betas=group["betas"],
                              eps=group["eps"], weight_decay=group["weight_decay"])
                    state["step"] = step
        return loss
