"""Fused optimizer updates on float32 arrays: one pass over a parameter, its gradient and its
state, following PyTorch's SGD and Adam (torch/optim/sgd.py, adam.py) to float32 rounding.

The parameter and the optimizer state are updated in place, so they must be C-contiguous,
writable float32 arrays of the parameter's shape (a ValueError otherwise: a silent copy
would lose the update); they must not overlap one another. The gradient is only read and may
be any float32 array of that shape. Hyper-parameters are checked as PyTorch checks them.

One departure from PyTorch: state values smaller in magnitude than the smallest normal float32
(1.18e-38) are stored as zero, so that a state decaying under a zero gradient does not linger
among subnormal numbers, on which the CPU is many times slower (csrc/kernels/optim.c).
"""

import operator

import numpy as np

from pyrt._pyrt_cffi import ffi, lib
from pyrt.ops._checks import F32, check_rc, fptr
from pyrt.ops._checks import in_place as _in_place
from pyrt.ops._checks import param_grad as _grad

__all__ = ["adam_step", "sgd_step"]

_FLOATS = ffi.typeof("float[]")
_from_buffer, _NULL, _ndarray = ffi.from_buffer, ffi.NULL, np.ndarray
_c_sgd, _c_adam, _EOVERLAP = lib.pyrt_sgd_step, lib.pyrt_adam_step, lib.PYRT_EOVERLAP


def _real(x, name):
    if type(x) is float:
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                             np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"{name} is too large for a float") from None


def _start(a):
    return a.__array_interface__["data"][0]


def check_no_overlap(updated, grad=None):
    """`updated`, (array, name) pairs of the arrays a step writes, must not share memory with
    one another; `grad`, only read, may be one of them exactly (each element is read before it
    is written) but must not overlap one in part."""
    for i, (a, name) in enumerate(updated):
        for b, other in updated[i + 1:]:
            if np.may_share_memory(a, b):
                raise ValueError(f"{name} and {other} overlap: each is updated in place")
        if (grad is not None and np.may_share_memory(a, grad)
                and (_start(a), a.nbytes) != (_start(grad), grad.nbytes)):
            raise ValueError(f"grad partially overlaps {name}, which is updated in place")


def sgd_step(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0,
             weight_decay=0.0, nesterov=False, first_step=False):
    """One step of torch.optim.SGD on one parameter, in place:

        g = grad + weight_decay * param
        with momentum: buf = g on the first step, else buf = momentum * buf + (1 - dampening) * g
                       g = g + momentum * buf if nesterov else buf
        param -= lr * g

    momentum_buffer (param's shape) is required when momentum != 0; first_step=True
    initialises it from g, as PyTorch does when its buffer is still None.
    """
    lr, momentum, dampening, weight_decay, nesterov = sgd_hyperparameters(
        lr, momentum, dampening, weight_decay, nesterov)
    # the common call: float32 ndarrays of param's shape, C-contiguous (and param and the
    # buffer writable, as from_buffer checks); the kernel refuses overlapping arrays. Anything
    # else takes the checks below, which name the argument.
    has_buffer = momentum != 0.0
    if (type(param) is _ndarray and type(grad) is _ndarray and param.dtype is F32
            and grad.dtype is F32 and grad.shape == param.shape
            and (not has_buffer or (type(momentum_buffer) is _ndarray
                                    and momentum_buffer.dtype is F32
                                    and momentum_buffer.shape == param.shape))):
        try:
            pp = _from_buffer(_FLOATS, param, True)
            pg = _from_buffer(_FLOATS, grad)
            pb = _from_buffer(_FLOATS, momentum_buffer, True) if has_buffer else _NULL
        except ValueError:
            pass
        else:
            rc = _c_sgd(pp, pg, pb, param.size, lr, momentum, dampening, weight_decay,
                        nesterov, bool(first_step))
            if rc:
                if rc == _EOVERLAP:
                    check_no_overlap([(param, "param"), (momentum_buffer, "momentum_buffer")]
                                     if has_buffer else [(param, "param")], grad)
                check_rc(rc, "sgd_step")
            return
    param = _in_place(param, "param")
    grad = _grad(grad, param.shape)
    if momentum != 0.0:
        if momentum_buffer is None:
            raise ValueError("momentum_buffer is required when momentum != 0")
        momentum_buffer = _in_place(momentum_buffer, "momentum_buffer", param.shape)
        check_no_overlap([(param, "param"), (momentum_buffer, "momentum_buffer")], grad)
        buf = fptr(momentum_buffer)
    else:
        check_no_overlap([(param, "param")], grad)
        buf = ffi.NULL
    sgd_step_raw(fptr(param), fptr(grad), buf, param.size, lr, momentum, dampening,
                 weight_decay, nesterov, bool(first_step))


def sgd_hyperparameters(lr, momentum, dampening, weight_decay, nesterov):
    """SGD's hyper-parameters checked as PyTorch checks them, as (lr, momentum, dampening,
    weight_decay) floats and nesterov a bool."""
    lr = _real(lr, "lr")
    momentum = _real(momentum, "momentum")
    dampening = _real(dampening, "dampening")
    weight_decay = _real(weight_decay, "weight_decay")
    if lr < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if momentum < 0.0:
        raise ValueError(f"Invalid momentum value: {momentum}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("Nesterov momentum requires a momentum and zero dampening")
    return lr, momentum, dampening, weight_decay, bool(nesterov)


def sgd_step_raw(param, grad, buf, n, lr, momentum, dampening, weight_decay, nesterov,
                 first_step):
    """The SGD kernel on cffi pointers (buf may be ffi.NULL when momentum is 0), without any
    checks: for callers that checked the arrays and sgd_hyperparameters() already."""
    rc = lib.pyrt_sgd_step(param, grad, buf, n, lr, momentum, dampening, weight_decay,
                           nesterov, first_step)
    if rc:
        check_rc(rc, "sgd_step")


def adam_step(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, betas=(0.9, 0.999),
              eps=1e-8, weight_decay=0.0):
    """One step of torch.optim.Adam (amsgrad=False, L2 weight decay) on one parameter, in
    place; `step` counts from 1 and exp_avg, exp_avg_sq start at zero:

        g = grad + weight_decay * param
        exp_avg = lerp(exp_avg, g, 1 - beta1);  exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) g^2
        param -= lr / (1 - beta1**step) * exp_avg / (sqrt(exp_avg_sq / (1 - beta2**step)) + eps)
    """
    lr, beta1, beta2, eps, weight_decay = adam_hyperparameters(lr, betas, eps, weight_decay)
    step = adam_step_count(step)
    # the common call, as in sgd_step
    if (type(param) is _ndarray and type(grad) is _ndarray and type(exp_avg) is _ndarray
            and type(exp_avg_sq) is _ndarray and param.dtype is F32 and grad.dtype is F32
            and exp_avg.dtype is F32 and exp_avg_sq.dtype is F32
            and param.shape == grad.shape == exp_avg.shape == exp_avg_sq.shape):
        try:
            pp = _from_buffer(_FLOATS, param, True)
            pg = _from_buffer(_FLOATS, grad)
            pm = _from_buffer(_FLOATS, exp_avg, True)
            pv = _from_buffer(_FLOATS, exp_avg_sq, True)
        except ValueError:
            pass
        else:
            rc = _c_adam(pp, pg, pm, pv, param.size, lr, beta1, beta2, eps, weight_decay, step)
            if rc:
                if rc == _EOVERLAP:
                    check_no_overlap([(param, "param"), (exp_avg, "exp_avg"),
                                      (exp_avg_sq, "exp_avg_sq")], grad)
                check_rc(rc, "adam_step")
            return
    param = _in_place(param, "param")
    grad = _grad(grad, param.shape)
    m = _in_place(exp_avg, "exp_avg", param.shape)
    v = _in_place(exp_avg_sq, "exp_avg_sq", param.shape)
    check_no_overlap([(param, "param"), (m, "exp_avg"), (v, "exp_avg_sq")], grad)
    adam_step_raw(fptr(param), fptr(grad), fptr(m), fptr(v), param.size, lr, beta1, beta2, eps,
                  weight_decay, step)


def adam_hyperparameters(lr, betas, eps, weight_decay):
    """Adam's hyper-parameters checked as PyTorch checks them, as floats (lr, beta1, beta2,
    eps, weight_decay)."""
    lr = _real(lr, "lr")
    eps = _real(eps, "eps")
    weight_decay = _real(weight_decay, "weight_decay")
    try:
        beta1, beta2 = betas
    except (TypeError, ValueError):
        raise TypeError(f"betas must be a pair of real numbers, got {betas!r}") from None
    beta1 = _real(beta1, "betas[0]")
    beta2 = _real(beta2, "betas[1]")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= beta1 < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {beta1}")
    if not 0.0 <= beta2 < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {beta2}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    return lr, beta1, beta2, eps, weight_decay


def adam_step_count(step):
    """Adam's step number checked: an integer counting from 1."""
    try:
        if isinstance(step, (bool, np.bool_)):
            raise TypeError
        step = operator.index(step)
    except TypeError:
        raise TypeError(f"step must be an integer, got {type(step).__name__}") from None
    if not 1 <= step < 2**63:
        raise ValueError(f"Invalid step: {step} (steps count from 1, below 2**63)")
    return step


def adam_step_raw(param, grad, exp_avg, exp_avg_sq, n, lr, beta1, beta2, eps, weight_decay,
                  step):
    """The Adam kernel on cffi pointers, without any checks: for callers that checked the
    arrays, adam_hyperparameters() and step >= 1 already."""
    rc = lib.pyrt_adam_step(param, grad, exp_avg, exp_avg_sq, n, lr, beta1, beta2, eps,
                            weight_decay, step)
    if rc:
        check_rc(rc, "adam_step")
