"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay, as
torch.optim.SGD; each parameter is updated by one fused kernel pass (pyrt.ops.sgd_step)."""

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.autograd import new_write, write_key
from pyrt.ops._checks import F32, check_rc
from pyrt.ops.optim import _grad, _in_place, sgd_hyperparameters
from pyrt.optim.optimizer import Optimizer

__all__ = ["SGD"]

_FLOATS = ffi.typeof("float[]")
_from_buffer = ffi.from_buffer
_ndarray = np.ndarray
_sgd_step = lib.pyrt_sgd_step  # unchecked: step() checks the arrays and hyper-parameters


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
        self._cache = {}  # id(param) -> (param, data, pointer, buffer, pointer, momentum?)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = None if closure is None else self._closure_loss(closure)
        if self._on_device():  # every parameter of a group in one fused launch
            from pyrt.cuda.optimizers import sgd_step

            sgd_step(self)
            self._stepped()
            return loss
        # only kernels run below, no tensor ops: nothing is recorded for autograd; each
        # parameter updated is marked written (Optimizer._stepped)
        state, cache, sgd = self.state, self._cache, _sgd_step
        count, marks = new_write()
        for group in self.param_groups:
            lr, momentum, dampening, weight_decay, nesterov = self._hyperparameters(group)
            has_momentum = momentum != 0
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                # (p, its array, that array's pointer, momentum buffer, its pointer, whether
                # made with momentum, the array's shape, size and write key), while all still hold
                cached = cache.get(id(p))
                if (cached is None or cached[0] is not p or cached[1] is not p._data
                        or cached[5] != has_momentum
                        or (has_momentum and cached[3] is not _momentum_buffer(state, p))):
                    cached = self._pointers(p, state, momentum)
                g = grad._data
                if not (type(g) is _ndarray and g.dtype is F32 and g.flags.c_contiguous
                        and g.shape == cached[6]):
                    g = _grad(g, cached[6])
                pbuf = cached[4]
                first = pbuf is None
                if first:  # the kernel fills the new buffer with g on this first step
                    state[p]["momentum_buffer"] = np.empty_like(cached[1])
                    cached = self._pointers(p, state, momentum)
                    pbuf = cached[4]
                # (the gradient's pointer is made afresh: keeping it, or the array, would hold
                # a reference that stops the fused linear chain reusing its gradient arrays)
                rc = sgd(cached[2], _from_buffer(_FLOATS, g), pbuf, cached[7], lr, momentum,
                         dampening, weight_decay, nesterov, first)
                if rc:
                    check_rc(rc, "sgd_step")
                marks[cached[8]] = count
        return loss

    _STATE_ARRAYS = ("momentum_buffer",)

    # the group's hyper-parameters, in the order sgd_hyperparameters checks them
    _HYPERPARAMETERS = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
    _checked_hyperparameters = staticmethod(sgd_hyperparameters)

    def _pointers(self, p, state, momentum):
        """The cache entry of parameter p: (p, its array, the array's pointer, momentum buffer,
        its pointer, whether made with momentum, shape, size, the array's key among the
        marks of in-place writes (autograd.write_key)). The pointers are made once and
        reused while p._data and the buffer stay the same arrays (the entry keeps them alive).
        The buffer pointer is ffi.NULL without momentum, None when the buffer is still to be
        created (and the entry is then not kept)."""
        param = p._data
        has_momentum = momentum != 0
        buf = _momentum_buffer(state, p) if has_momentum else None
        _in_place(param, "param")
        pp = _from_buffer(_FLOATS, param)
        if not has_momentum:
            pbuf = ffi.NULL
        elif buf is None:
            pbuf = None
        else:
            if not isinstance(buf, np.ndarray):
                buf = state[p]["momentum_buffer"] = np.array(buf, dtype=np.float32)
            _in_place(buf, "momentum_buffer", param.shape)
            pbuf = _from_buffer(_FLOATS, buf)
        cached = (p, param, pp, buf, pbuf, has_momentum, param.shape, param.size,
                  write_key(param))
        if pbuf is not None:
            self._cache[id(p)] = cached
        return cached


def _momentum_buffer(state, p):
    """p's momentum buffer in the optimizer's state, or None before its first step."""
    s = state.get(p)
    return None if s is None else s.get("momentum_buffer")
