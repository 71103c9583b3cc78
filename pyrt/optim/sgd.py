"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay, as
torch.optim.SGD; each parameter is updated by one fused kernel pass (pyrt.ops.sgd_step)."""

import numpy as np

from pyrt._pyrt_cffi import ffi
from pyrt.ops._checks import F32
from pyrt.ops.optim import _grad, _in_place, sgd_hyperparameters, sgd_step_raw
from pyrt.optim.optimizer import Optimizer

__all__ = ["SGD"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer


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
        sgd_hyperparameters(lr, momentum, dampening, weight_decay, nesterov)  # as PyTorch
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov)
        self._checked = {}  # id(group) -> (group, hyper-parameters, checked values)
        self._cache = {}  # id(param) -> (param, data, pointer, buffer, pointer, momentum?)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = None if closure is None else self._closure_loss(closure)
        if self._on_device():  # every parameter of a group in one fused launch
            from pyrt.cuda.optimizers import sgd_step

            sgd_step(self)
            return loss
        # only kernels run below, no tensor ops: nothing is recorded for autograd
        state, cache = self.state, self._cache
        for group in self.param_groups:
            lr, momentum, dampening, weight_decay, nesterov = self._hyperparameters(group)
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                param = p.data
                if momentum:
                    s = state.get(p)
                    buf = None if s is None else s.get("momentum_buffer")
                else:
                    buf = None
                cached = cache.get(id(p))
                if (cached is not None and cached[1] is param and cached[3] is buf
                        and cached[0] is p and cached[5] == (momentum != 0)):
                    pp, pbuf = cached[2], cached[4]
                else:
                    param, pp, buf, pbuf = self._pointers(p, state, momentum)
                g = grad.data
                if not (g.shape == param.shape and g.dtype is F32 and g.flags.c_contiguous):
                    g = _grad(g, param.shape)
                first = pbuf is None
                if first:  # the kernel fills the new buffer with g on this first step
                    state[p]["momentum_buffer"] = np.empty_like(param)
                    param, pp, buf, pbuf = self._pointers(p, state, momentum)
                sgd_step_raw(pp, _from_buffer(_FLOATS, g), pbuf, param.size, lr, momentum,
                             dampening, weight_decay, nesterov, first)
        return loss

    def _hyperparameters(self, group):
        """The group's hyper-parameters, checked when they differ from the last checked
        ones (a scheduler may change lr between steps)."""
        values = (group["lr"], group["momentum"], group["dampening"], group["weight_decay"],
                  group["nesterov"])
        cached = self._checked.get(id(group))
        if cached is None or cached[0] is not group or cached[1] != values:
            cached = (group, values, sgd_hyperparameters(*values))
            self._checked[id(group)] = cached
        return cached[2]

    def _pointers(self, p, state, momentum):
        """(param array, its pointer, momentum buffer, its pointer) for parameter p: the
        pointers are made once and reused while p.data and the buffer stay the same arrays
        (the cache keeps them alive). The buffer pointer is ffi.NULL without momentum, None
        when the buffer is still to be created."""
        param = p.data
        buf = None
        if momentum != 0:
            s = state.get(p)
            if s is not None:
                buf = s.get("momentum_buffer")
        cached = self._cache.get(id(p))
        if (cached is not None and cached[0] is p and cached[1] is param and cached[3] is buf
                and cached[5] == (momentum != 0)):
            return cached[1:5]
        _in_place(param, "param")
        pp = _from_buffer(_FLOATS, param)
        if momentum == 0:
            pbuf = ffi.NULL
        elif buf is None:
            pbuf = None
        else:
            if not isinstance(buf, np.ndarray):
                buf = s["momentum_buffer"] = np.array(buf, dtype=np.float32)
            _in_place(buf, "momentum_buffer", param.shape)
            pbuf = _from_buffer(_FLOATS, buf)
        cached = (p, param, pp, buf, pbuf, momentum != 0)
        if pbuf is not None:
            self._cache[id(p)] = cached
        return cached[1:5]
