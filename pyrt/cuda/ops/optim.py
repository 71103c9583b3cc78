"""Fused SGD and Adam updates on CuPy arrays: every parameter of a model in one launch
(kernels/optim.cu), hyper-parameters passed by value.

``sgd_step_all``/``adam_step_all`` take lists of parameters, gradients and state arrays. The
device tables of parameter and state addresses, sizes and the chunk map are built the first
time a list of arrays is seen and kept in the caller's `tables` dict under those arrays'
addresses (with the arrays, so they stay alive), so a training loop uploads nothing after
its first step. The optimizer owns that dict (pyrt/cuda/optimizers.py): its tables, and the
parameters they hold, go when it goes, not when some global cache fills up. Gradients are
passed by address as kernel arguments, PYRT_MAX_TENSORS a launch. ``sgd_step`` and
``adam_step`` are the one-parameter forms of pyrt.ops, with the same checks; they build
their small tables per call.
"""

import cupy
import numpy as np

from pyrt.cuda._module import BLOCK, CHUNK, MAX_TENSORS, kernel
from pyrt.cuda.ops._checks import in_place, param_grad
from pyrt.ops.optim import adam_hyperparameters, adam_step_count, sgd_hyperparameters

__all__ = ["adam_step", "adam_step_all", "sgd_step", "sgd_step_all"]

TABLES_LIMIT = 16  # tables one optimizer keeps (lists of arrays it has stepped)


class _Tables:
    """Device tables for one list of parameters and their state arrays, cut into launches of
    at most MAX_TENSORS tensors."""

    def __init__(self, arrays_by_role):
        self.arrays = arrays_by_role  # kept alive: the tables hold their addresses
        params = arrays_by_role[0]
        self.launches = []
        for lo in range(0, len(params), MAX_TENSORS):
            part = [role[lo:lo + MAX_TENSORS] for role in arrays_by_role]
            sizes = [p.size for p in part[0]]
            tensor, start = [], []
            for t, size in enumerate(sizes):
                for s in range(0, size, CHUNK):
                    tensor.append(t)
                    start.append(s)
            if not tensor:  # only empty parameters: a grid of 0 blocks is a launch error
                continue
            pointers = [cupy.asarray(np.array([a.data.ptr for a in role], np.uint64))
                        for role in part]
            self.launches.append((lo, len(tensor), pointers,
                                  cupy.asarray(np.array(sizes, np.int64)),
                                  cupy.asarray(np.array(tensor, np.int32)),
                                  cupy.asarray(np.array(start, np.int64))))


def _tables(arrays_by_role, cache):
    """The tables of these arrays, from `cache` (a dict, or None for tables used once)."""
    if cache is None:
        return _Tables(arrays_by_role)
    key = tuple(tuple((a.data.ptr, a.size) for a in role) for role in arrays_by_role)
    tables = cache.get(key)
    if tables is None:
        if len(cache) >= TABLES_LIMIT:  # the parameters changed many times: start afresh
            cache.clear()
        tables = cache[key] = _Tables(arrays_by_role)
    return tables


def _grad_args(grads, lo):
    """The gradient addresses of one launch as MAX_TENSORS uint64 kernel arguments."""
    ptrs = [np.uint64(g.data.ptr) for g in grads[lo:lo + MAX_TENSORS]]
    return tuple(ptrs) + (np.uint64(0),) * (MAX_TENSORS - len(ptrs))


def sgd_step_all(params, grads, buffers, lr, momentum, dampening, weight_decay, nesterov,
                 first_step, tables=None):
    """torch.optim.SGD's update of every (param, grad, momentum buffer) in one launch per
    MAX_TENSORS parameters. Arrays are C-contiguous float32 on the device; buffers is None
    without momentum. Hyper-parameters must be checked already (sgd_hyperparameters).
    `tables` is the caller's cache of device tables (a dict), or None."""
    if not params:
        return
    roles = (params,) if buffers is None else (params, buffers)
    f = np.float32
    for lo, blocks, pointers, sizes, tensor, start in _tables(roles, tables).launches:
        table = pointers + [pointers[0]] * (2 - len(pointers))  # no buffers: never read
        kernel("optim", "pyrt_sgd_multi")((blocks,), (BLOCK,), (
            table[0], table[1], sizes, tensor, start, *_grad_args(grads, lo), f(lr),
            f(momentum if buffers is not None else 0.0), f(1.0 - dampening), f(weight_decay),
            int(nesterov), int(first_step)))


def adam_step_all(params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps,
                  weight_decay, tables=None):
    """torch.optim.Adam's update at step `step` (a host int, counting from 1) of every
    parameter in one launch per MAX_TENSORS parameters; the bias corrections are computed
    here, on the host, in double (as the CPU kernel does), and passed by value."""
    if not params:
        return
    f = np.float32
    neg_step_size = -(lr / (1.0 - beta1 ** step))
    bc2_sqrt = (1.0 - beta2 ** step) ** 0.5
    for lo, blocks, pointers, sizes, tensor, start in _tables(
            (params, exp_avgs, exp_avg_sqs), tables).launches:
        kernel("optim", "pyrt_adam_multi")((blocks,), (BLOCK,), (
            *pointers, sizes, tensor, start, *_grad_args(grads, lo), f(1.0 - beta1),
            f(beta2), f(1.0 - beta2), f(eps), f(weight_decay), f(neg_step_size),
            f(bc2_sqrt)))


# ---- the one-parameter ops of pyrt.ops ---------------------------------------------------------

def sgd_step(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0,
             weight_decay=0.0, nesterov=False, first_step=False):
    """One step of torch.optim.SGD on one parameter, in place (pyrt.ops.sgd_step)."""
    lr, momentum, dampening, weight_decay, nesterov = sgd_hyperparameters(
        lr, momentum, dampening, weight_decay, nesterov)
    param = in_place(param, "param")
    grad = param_grad(grad, param.shape)
    buffers = None
    if momentum != 0.0:
        if momentum_buffer is None:
            raise ValueError("momentum_buffer is required when momentum != 0")
        buffers = [in_place(momentum_buffer, "momentum_buffer", param.shape)]
    sgd_step_all([param], [grad], buffers, lr, momentum, dampening, weight_decay, nesterov,
                 bool(first_step))


def adam_step(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, betas=(0.9, 0.999),
              eps=1e-8, weight_decay=0.0):
    """One step of torch.optim.Adam on one parameter, in place (pyrt.ops.adam_step)."""
    lr, beta1, beta2, eps, weight_decay = adam_hyperparameters(lr, betas, eps, weight_decay)
    step = adam_step_count(step)
    param = in_place(param, "param")
    grad = param_grad(grad, param.shape)
    m = in_place(exp_avg, "exp_avg", param.shape)
    v = in_place(exp_avg_sq, "exp_avg_sq", param.shape)
    adam_step_all([param], [grad], [m], [v], step, lr, beta1, beta2, eps, weight_decay)
