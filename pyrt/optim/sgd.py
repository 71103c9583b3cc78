"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay, as
torch.optim.SGD; each parameter is updated by one fused kernel pass (pyrt.ops.sgd_step)."""

import numpy as np

from pyrt.autograd import no_grad
from pyrt.ops.optim import sgd_step
from pyrt.optim.optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """For each parameter p with gradient g:

        g = g + weight_decay * p
        with momentum: buf = g on the first step, else momentum * buf + (1 - dampening) * g
                       g = g + momentum * buf if nesterov else buf
        p = p - lr * g

    The momentum buffer lives in ``state[p]["momentum_buffer"]`` as a float32 array.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                momentum = group["momentum"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    buf, first = None, False
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:  # the kernel fills it with g on this first step
                            buf = state["momentum_buffer"] = np.empty_like(p.data)
                            first = True
                    sgd_step(p.data, p.grad.data, buf, lr=group["lr"], momentum=momentum,
                             dampening=group["dampening"], weight_decay=group["weight_decay"],
                             nesterov=group["nesterov"], first_step=first)
        return loss
