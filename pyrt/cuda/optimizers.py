"""The step() of pyrt.optim.SGD and Adam for parameters on the GPU: all parameters of a group
in one fused launch (pyrt.cuda.ops.optim), hyper-parameters by value, step counts on the host.
Nothing here reads device memory, so a step never waits for the GPU."""

import cupy

from pyrt.cuda.ops._checks import as_f32, in_place
from pyrt.cuda.ops.optim import adam_step_all, sgd_step_all

__all__ = ["adam_step", "sgd_step"]


def _with_grads(group):
    """(parameter tensors, their data, their gradients) of a group's parameters that have a
    gradient."""
    tensors, params, grads = [], [], []
    for p in group["params"]:
        if p.grad is not None:
            tensors.append(p)
            # the fused kernel updates memory in order: a parameter must be C-contiguous
            # float32, as the CPU step requires (an F-ordered one would be updated wrongly)
            params.append(in_place(p._data, "param"))
            grads.append(as_f32(p.grad._data, "grad"))
    return tensors, params, grads


def sgd_step(optimizer):
    state = optimizer.state
    for group in optimizer.param_groups:
        lr, momentum, dampening, weight_decay, nesterov = optimizer._hyperparameters(group)
        tensors, params, grads = _with_grads(group)
        if not momentum:
            sgd_step_all(params, grads, None, lr, 0.0, dampening, weight_decay, nesterov, False,
                         optimizer._device_tables)
            continue
        # parameters whose momentum buffer exists step together; those stepping for the first
        # time get a buffer that the kernel fills with their gradient
        for first in (False, True):
            chosen = [i for i, p in enumerate(tensors)
                      if ("momentum_buffer" not in state.get(p, {})) is first]
            if not chosen:
                continue
            if first:
                for i in chosen:
                    state[tensors[i]]["momentum_buffer"] = cupy.empty_like(params[i])
            sgd_step_all([params[i] for i in chosen], [grads[i] for i in chosen],
                         [state[tensors[i]]["momentum_buffer"] for i in chosen], lr, momentum,
                         dampening, weight_decay, nesterov, first, optimizer._device_tables)


def adam_step(optimizer):
    states = optimizer.state
    for group in optimizer.param_groups:
        lr, beta1, beta2, eps, weight_decay = optimizer._hyperparameters(group)
        tensors, params, grads = _with_grads(group)
        by_step = {}  # parameters at the same step count share one launch
        for i, p in enumerate(tensors):
            state = states[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = cupy.zeros_like(params[i])
                state["exp_avg_sq"] = cupy.zeros_like(params[i])
            state["step"] += 1
            by_step.setdefault(state["step"], []).append(i)
        for step, chosen in by_step.items():
            adam_step_all([params[i] for i in chosen], [grads[i] for i in chosen],
                          [states[tensors[i]]["exp_avg"] for i in chosen],
                          [states[tensors[i]]["exp_avg_sq"] for i in chosen], step, lr, beta1,
                          beta2, eps, weight_decay, optimizer._device_tables)
